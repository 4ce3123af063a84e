//! The command queue transport as the PRM defines it: a 4 KiB page of command entries the driver
//! programs through the initialization segment, inline 16-byte input and output, and chains of
//! 1 KiB-aligned mailbox blocks for the rest, all read and written through guest DMA.
//!
//! This module moves bytes and checks the envelope (type, ownership, lengths, pointers, block
//! numbers, tokens); what a command *does* is the firmware's business ([`Firmware`]).

use crate::guest_mem::GuestMem;

use cx4_hw::cmd::{
    mailbox_blocks, CmdLayout, CmdProtBlock, DATA_BLOCK_SIZE, INLINE_LEN, OWNER_HW, PCI_CMD_XPORT,
};
use zerocopy::IntoBytes;

/// Size of a command entry (`struct mlx5_cmd_layout`).
pub const ENTRY_SIZE: usize = CmdLayout::SIZE;
/// Bytes of input and output carried inline in the entry.
pub const INLINE: usize = INLINE_LEN;
/// Data bytes per mailbox block.
pub const BLOCK_DATA: usize = DATA_BLOCK_SIZE;
/// Size of a mailbox block (`struct mlx5_cmd_prot_block`).
pub const BLOCK_SIZE: usize = CmdProtBlock::SIZE;
/// Longest command input or output the model accepts (mlx5 never exceeds a few hundred KiB).
pub const MAX_MSG: usize = 1 << 20;
/// Offset of the ownership byte in an entry.
const STATUS_OWN: u64 = ENTRY_SIZE as u64 - 1;

/// Delivery status (bits 7:1 of `status_own`), `MLX5_CMD_DELIVERY_STAT_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Delivery {
    /// Delivered; the command's own status is in the output.
    Ok = 0x0,
    /// A mailbox token did not match the entry's.
    TokenErr = 0x2,
    /// Mailbox blocks out of sequence.
    BadBlockNum = 0x3,
    /// Output mailbox pointer misaligned or unreachable.
    OutPtrAlign = 0x4,
    /// Input mailbox pointer misaligned or unreachable.
    InPtrAlign = 0x5,
    /// Firmware could not process the entry.
    FwErr = 0x6,
    /// Input length invalid.
    InLength = 0x7,
    /// Output length invalid.
    OutLength = 0x8,
    /// Entry type is not PCI_CMD_XPORT.
    CmdDescr = 0x10,
}

impl Delivery {
    /// The delivery status of PRM code `code` (`FwErr` for a code the PRM does not define).
    pub fn from_code(code: u8) -> Delivery {
        [
            Delivery::Ok,
            Delivery::TokenErr,
            Delivery::BadBlockNum,
            Delivery::OutPtrAlign,
            Delivery::InPtrAlign,
            Delivery::FwErr,
            Delivery::InLength,
            Delivery::OutLength,
            Delivery::CmdDescr,
        ]
        .into_iter()
        .find(|d| *d as u8 == code)
        .unwrap_or(Delivery::FwErr)
    }
}

/// What a command produced.
pub struct Reply {
    /// Output bytes, `outlen` long, starting with the status/syndrome header.
    pub out: Vec<u8>,
}

/// The side that executes commands.
pub trait Firmware {
    /// Executes one command. `input` is exactly `inlen` bytes; the reply must be `out_len`
    /// bytes (the engine pads or truncates otherwise).
    fn execute(&mut self, input: &[u8], out_len: usize) -> Reply;
}

/// One command as read from the queue.
#[derive(Debug)]
pub struct Fetched {
    /// Slot index.
    pub slot: u32,
    /// Entry address.
    pub entry: u64,
    /// Input bytes.
    pub input: Vec<u8>,
    /// Requested output length.
    pub out_len: usize,
    out_ptr: u64,
    token: u8,
}

/// The queue as programmed by the driver.
#[derive(Clone, Copy, Debug)]
pub struct CmdQueue {
    /// Page address.
    pub base: u64,
    /// log2 of the entry count.
    pub log_size: u8,
    /// log2 of the entry stride.
    pub log_stride: u8,
}

impl CmdQueue {
    /// Address of slot `i`.
    pub fn entry_addr(&self, slot: u32) -> u64 {
        self.base + (u64::from(slot) << self.log_stride)
    }

    /// Reads slot `slot`: `Ok(None)` when the entry is not owned by hardware (a doorbell for an
    /// idle slot is ignored, as by real firmware), `Err` with the delivery status to report.
    pub fn fetch(&self, mem: &GuestMem, slot: u32) -> Result<Option<Fetched>, (u64, Delivery)> {
        let entry = self.entry_addr(slot);
        let mut e = CmdLayout::new();
        if mem.read(entry, e.as_mut_bytes()).is_err() {
            log::warn!("command slot {slot}: entry at {entry:#x} is not in guest memory");
            return Ok(None);
        }
        if e.ownership() != u32::from(OWNER_HW) {
            log::warn!("command slot {slot}: doorbell for an entry owned by software, ignored");
            return Ok(None);
        }
        if e.xport_type() != u32::from(PCI_CMD_XPORT) {
            return Err((entry, Delivery::CmdDescr));
        }
        let inlen = e.inlen() as usize;
        let out_len = e.outlen() as usize;
        if !(8..=MAX_MSG).contains(&inlen) {
            return Err((entry, Delivery::InLength));
        }
        if !(8..=MAX_MSG).contains(&out_len) {
            return Err((entry, Delivery::OutLength));
        }
        let token = e.token() as u8;
        let mut input = vec![0u8; inlen];
        let n = inlen.min(INLINE);
        input[..n].copy_from_slice(&e.inline_in()[..n]);
        let swap = |from: Delivery, to: Delivery| {
            move |d: Delivery| (entry, if d == from { to } else { d })
        };
        if inlen > INLINE {
            walk_chain(
                mem,
                e.in_ptr(),
                mailbox_blocks(inlen),
                Some(token),
                |i, data| {
                    let off = INLINE + i * BLOCK_DATA;
                    let n = (inlen - off).min(BLOCK_DATA);
                    input[off..off + n].copy_from_slice(&data[..n]);
                },
            )
            .map_err(swap(Delivery::OutPtrAlign, Delivery::InPtrAlign))?;
        }
        if out_len > INLINE {
            // Validate the output chain before executing, so a broken chain fails cleanly.
            walk_chain(mem, e.out_ptr(), mailbox_blocks(out_len), None, |_, _| {})
                .map_err(swap(Delivery::InPtrAlign, Delivery::OutPtrAlign))?;
        }
        Ok(Some(Fetched {
            slot,
            entry,
            input,
            out_len,
            out_ptr: e.out_ptr(),
            token,
        }))
    }

    /// Writes the reply and hands the entry back to software; `wrong_token` writes the output
    /// mailboxes with a token that is not the entry's (the hostile card's `cmd-token`).
    pub fn complete(
        &self,
        mem: &GuestMem,
        f: &Fetched,
        out: &[u8],
        wrong_token: bool,
    ) -> Result<(), Delivery> {
        let mut out = out.to_vec();
        out.resize(f.out_len, 0);
        let bad = |_| Delivery::OutPtrAlign;
        if f.out_len > INLINE {
            let mut ptr = f.out_ptr;
            let mut blk = CmdProtBlock::new();
            for i in 0..mailbox_blocks(f.out_len) {
                let off = INLINE + i * BLOCK_DATA;
                let n = (f.out_len - off).min(BLOCK_DATA);
                mem.read(ptr, blk.as_mut_bytes()).map_err(bad)?;
                blk.data_mut()[..n].copy_from_slice(&out[off..off + n]);
                blk.set_token((f.token ^ if wrong_token { 0x5a } else { 0 }).into());
                mem.write(ptr, blk.as_bytes()).map_err(bad)?;
                ptr = blk.next();
            }
        }
        let mut e = CmdLayout::new();
        mem.read(f.entry, e.as_mut_bytes()).map_err(bad)?;
        let n = f.out_len.min(INLINE);
        e.inline_out_mut()[..n].copy_from_slice(&out[..n]);
        // Everything but the ownership byte first; `finish` hands the entry back last.
        mem.write(f.entry, &e.as_bytes()[..ENTRY_SIZE - 1])
            .map_err(bad)?;
        finish(mem, f.entry, Delivery::Ok);
        Ok(())
    }
}

/// Sets the delivery status and clears the ownership bit of the entry at `entry`.
pub fn finish(mem: &GuestMem, entry: u64, d: Delivery) {
    let byte = cx4_hw::cmd::status_own(d as u8, cx4_hw::cmd::OWNER_SW);
    if mem.write(entry + STATUS_OWN, &[byte]).is_err() {
        log::warn!("command entry {entry:#x} vanished before completion");
    }
}

/// Walks a mailbox chain of `count` blocks from `ptr`, checking alignment, reachability, block
/// numbers and (for input chains) tokens, calling `f(index, block_data)` for each.
fn walk_chain(
    mem: &GuestMem,
    mut ptr: u64,
    count: usize,
    token: Option<u8>,
    mut f: impl FnMut(usize, &[u8]),
) -> Result<(), Delivery> {
    let mut blk = CmdProtBlock::new();
    for i in 0..count {
        if ptr & 0x3ff != 0 || ptr == 0 {
            return Err(Delivery::InPtrAlign);
        }
        mem.read(ptr, blk.as_mut_bytes())
            .map_err(|_| Delivery::InPtrAlign)?;
        if blk.block_num() as usize != i {
            return Err(Delivery::BadBlockNum);
        }
        if token.is_some_and(|t| blk.token() != u32::from(t)) {
            return Err(Delivery::TokenErr);
        }
        f(i, blk.data());
        ptr = blk.next();
    }
    Ok(())
}
