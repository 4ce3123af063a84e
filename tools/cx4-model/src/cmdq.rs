//! The command queue transport as the PRM defines it: a 4 KiB page of command entries the driver
//! programs through the initialization segment, inline 16-byte input and output, and chains of
//! 1 KiB-aligned mailbox blocks for the rest, all read and written through guest DMA.
//!
//! This module moves bytes and checks the envelope (type, ownership, lengths, pointers, block
//! numbers, tokens); what a command *does* is the firmware's business ([`Firmware`]).

use crate::guest_mem::GuestMem;

/// Size of a command entry (`struct mlx5_cmd_layout`).
pub const ENTRY_SIZE: usize = 0x40;
/// Bytes of input and output carried inline in the entry.
pub const INLINE: usize = 16;
/// Data bytes per mailbox block.
pub const BLOCK_DATA: usize = 512;
/// Size of a mailbox block (`struct mlx5_cmd_prot_block`).
pub const BLOCK_SIZE: usize = 0x240;
/// The only transport type the PRM defines (`MLX5_PCI_CMD_XPORT`).
pub const PCI_CMD_XPORT: u8 = 7;
/// Longest command input or output the model accepts (mlx5 never exceeds a few hundred KiB).
pub const MAX_MSG: usize = 1 << 20;

// Offsets in the entry (device.h, struct mlx5_cmd_layout).
const E_TYPE: usize = 0x00;
const E_INLEN: usize = 0x04;
const E_IN_PTR: usize = 0x08;
const E_IN: usize = 0x10;
const E_OUT: usize = 0x20;
const E_OUT_PTR: usize = 0x30;
const E_OUTLEN: usize = 0x38;
const E_TOKEN: usize = 0x3c;
const E_STATUS_OWN: usize = 0x3f;
// Offsets in a mailbox block (device.h, struct mlx5_cmd_prot_block).
const B_NEXT: usize = 0x230;
const B_BLOCK_NUM: usize = 0x238;
const B_TOKEN: usize = 0x23d;

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

fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn be64(b: &[u8], off: usize) -> u64 {
    (u64::from(be32(b, off)) << 32) | u64::from(be32(b, off + 4))
}

/// Number of mailbox blocks a message of `len` bytes needs.
pub fn blocks_for(len: usize) -> usize {
    len.saturating_sub(INLINE).div_ceil(BLOCK_DATA)
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
        let mut e = [0u8; ENTRY_SIZE];
        if mem.read(entry, &mut e).is_err() {
            log::warn!("command slot {slot}: entry at {entry:#x} is not in guest memory");
            return Ok(None);
        }
        if e[E_STATUS_OWN] & 1 == 0 {
            log::warn!("command slot {slot}: doorbell for an entry owned by software, ignored");
            return Ok(None);
        }
        if e[E_TYPE] != PCI_CMD_XPORT {
            return Err((entry, Delivery::CmdDescr));
        }
        let inlen = be32(&e, E_INLEN) as usize;
        let out_len = be32(&e, E_OUTLEN) as usize;
        if !(8..=MAX_MSG).contains(&inlen) {
            return Err((entry, Delivery::InLength));
        }
        if !(8..=MAX_MSG).contains(&out_len) {
            return Err((entry, Delivery::OutLength));
        }
        let token = e[E_TOKEN];
        let mut input = vec![0u8; inlen];
        let n = inlen.min(INLINE);
        input[..n].copy_from_slice(&e[E_IN..E_IN + n]);
        let in_ptr = be64(&e, E_IN_PTR);
        let out_ptr = be64(&e, E_OUT_PTR);
        if inlen > INLINE {
            walk_chain(mem, in_ptr, blocks_for(inlen), token, |i, data| {
                let off = INLINE + i * BLOCK_DATA;
                let n = (inlen - off).min(BLOCK_DATA);
                input[off..off + n].copy_from_slice(&data[..n]);
            })
            .map_err(|d| {
                (
                    entry,
                    if d == Delivery::OutPtrAlign {
                        Delivery::InPtrAlign
                    } else {
                        d
                    },
                )
            })?;
        }
        if out_len > INLINE {
            // Validate the output chain before executing, so a broken chain fails cleanly.
            walk_chain(mem, out_ptr, blocks_for(out_len), None, |_, _| {}).map_err(|d| {
                (
                    entry,
                    if d == Delivery::InPtrAlign {
                        Delivery::OutPtrAlign
                    } else {
                        d
                    },
                )
            })?;
        }
        Ok(Some(Fetched {
            slot,
            entry,
            input,
            out_len,
            out_ptr,
            token,
        }))
    }

    /// Writes the reply and hands the entry back to software.
    pub fn complete(&self, mem: &GuestMem, f: &Fetched, out: &[u8]) -> Result<(), Delivery> {
        let mut out = out.to_vec();
        out.resize(f.out_len, 0);
        if f.out_len > INLINE {
            let mut ptr = f.out_ptr;
            for i in 0..blocks_for(f.out_len) {
                let off = INLINE + i * BLOCK_DATA;
                let n = (f.out_len - off).min(BLOCK_DATA);
                mem.write(ptr, &out[off..off + n])
                    .map_err(|_| Delivery::OutPtrAlign)?;
                mem.write(ptr + B_TOKEN as u64, &[f.token])
                    .map_err(|_| Delivery::OutPtrAlign)?;
                let mut next = [0u8; 8];
                mem.read(ptr + B_NEXT as u64, &mut next)
                    .map_err(|_| Delivery::OutPtrAlign)?;
                ptr = u64::from_be_bytes(next);
            }
        }
        let n = f.out_len.min(INLINE);
        mem.write(f.entry + E_OUT as u64, &out[..n])
            .map_err(|_| Delivery::OutPtrAlign)?;
        finish(mem, f.entry, Delivery::Ok);
        Ok(())
    }
}

/// Sets the delivery status and clears the ownership bit of the entry at `entry`.
pub fn finish(mem: &GuestMem, entry: u64, d: Delivery) {
    if mem
        .write(entry + E_STATUS_OWN as u64, &[(d as u8) << 1])
        .is_err()
    {
        log::warn!("command entry {entry:#x} vanished before completion");
    }
}

/// Walks a mailbox chain of `count` blocks from `ptr`, checking alignment, reachability, block
/// numbers and (for input chains) tokens, calling `f(index, block_bytes)` for each.
fn walk_chain(
    mem: &GuestMem,
    mut ptr: u64,
    count: usize,
    token: impl Into<Option<u8>>,
    mut f: impl FnMut(usize, &[u8]),
) -> Result<(), Delivery> {
    let token = token.into();
    let mut block = vec![0u8; BLOCK_SIZE];
    for i in 0..count {
        if ptr & 0x3ff != 0 || ptr == 0 {
            return Err(Delivery::InPtrAlign);
        }
        mem.read(ptr, &mut block)
            .map_err(|_| Delivery::InPtrAlign)?;
        if be32(&block, B_BLOCK_NUM) as usize != i {
            return Err(Delivery::BadBlockNum);
        }
        if let Some(t) = token {
            if block[B_TOKEN] != t {
                return Err(Delivery::TokenErr);
            }
        }
        f(i, &block);
        ptr = be64(&block, B_NEXT);
    }
    Ok(())
}
