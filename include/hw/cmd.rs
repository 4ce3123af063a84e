// SPDX-License-Identifier: GPL-2.0
//! The command queue: queue entries, mailbox blocks and the generic command headers.
//!
//! A command is a queue entry ([`CmdLayout`], one per slot in the 4 KiB command page) whose
//! first 16 input and output bytes are inline; the rest of the input and output messages live in
//! chains of [`CmdProtBlock`] mailboxes (`in_ptr` / `out_ptr`, then `next`). Every input starts
//! with [`MboxIn`] and every output with [`MboxOut`].

use crate::bits::ifc_layouts;

/// `MLX5_PCI_CMD_XPORT`: the only queue entry `type`, PCI command transport.
pub const PCI_CMD_XPORT: u8 = 7;
/// `MLX5_CMD_DATA_BLOCK_SIZE`: data bytes per mailbox block.
pub const DATA_BLOCK_SIZE: usize = 512;
/// Input and output bytes carried inline in the queue entry.
pub const INLINE_LEN: usize = 16;
/// `CMD_OWNER_HW`: ownership bit value while the device owns the entry.
pub const OWNER_HW: u8 = 1;
/// `CMD_OWNER_SW`: ownership bit value once software owns the entry again.
pub const OWNER_SW: u8 = 0;

ifc_layouts! {
    /// A command queue entry (`struct mlx5_cmd_layout`, device.h), 64 bytes.
    pub struct CmdLayout: CStruct "mlx5_cmd_layout", 0x40 {
        /// Always [`PCI_CMD_XPORT`].
        xport_type, set_xport_type: u32 @ 0x000, 0x8;
        /// Length of the whole input message in bytes.
        inlen, set_inlen: u32 @ 0x020, 0x20;
        /// DMA address of the first input mailbox block (when `inlen` > 16).
        in_ptr, set_in_ptr: u64 @ 0x040, 0x40;
        /// The first 16 input bytes (`in[4]` in device.h).
        inline_in, inline_in_mut: bytes @ 0x080, 0x80;
        /// The first 16 output bytes (`out[4]` in device.h).
        inline_out, inline_out_mut: bytes @ 0x100, 0x80;
        /// DMA address of the first output mailbox block (when `outlen` > 16).
        out_ptr, set_out_ptr: u64 @ 0x180, 0x40;
        /// Length of the whole output message in bytes.
        outlen, set_outlen: u32 @ 0x1c0, 0x20;
        /// Token, repeated in every mailbox block of this command.
        token, set_token: u32 @ 0x1e0, 0x8;
        /// Signature (unused: checksums are disabled).
        sig, set_sig: u32 @ 0x1e8, 0x8;
        /// Delivery status in bits 7:1, ownership in bit 0.
        status_own, set_status_own: u32 @ 0x1f8, 0x8;
        /// Bits 7:1 of `status_own`: the delivery status (see [`delivery`]).
        delivery_status, set_delivery_status: u32 @ 0x1f8, 0x7;
        /// Bit 0 of `status_own`: [`OWNER_HW`] while the device owns the entry.
        ownership, set_ownership: u32 @ 0x1ff, 0x1;
    }

    /// A command mailbox block (`struct mlx5_cmd_prot_block`, device.h), 576 bytes.
    pub struct CmdProtBlock: CStruct "mlx5_cmd_prot_block", 0x240 {
        /// The message bytes carried by this block.
        data, data_mut: bytes @ 0x0000, 0x1000;
        /// DMA address of the next block, 0 in the last one.
        next, set_next: u64 @ 0x1180, 0x40;
        /// Index of this block in its chain.
        block_num, set_block_num: u32 @ 0x11c0, 0x20;
        /// The command's token.
        token, set_token: u32 @ 0x11e8, 0x8;
        /// Control signature (unused: checksums are disabled).
        ctrl_sig, set_ctrl_sig: u32 @ 0x11f0, 0x8;
        /// Signature (unused: checksums are disabled).
        sig, set_sig: u32 @ 0x11f8, 0x8;
    }

    /// The header every command input starts with (`mlx5_ifc_mbox_in_bits`, core/cmd.c).
    pub struct MboxIn: Ifc "mbox_in", 0x10 {
        /// The command opcode (see [`crate::opcode`]).
        opcode, set_opcode: u32 @ 0x000, 0x10;
        /// User context id (0 for the kernel).
        uid, set_uid: u32 @ 0x010, 0x10;
        /// Opcode modifier.
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// The header every command output starts with (`mlx5_ifc_mbox_out_bits`, core/cmd.c).
    pub struct MboxOut: Ifc "mbox_out", 0x10 {
        /// Command status (see [`crate::status`]).
        status, set_status: u32 @ 0x000, 0x8;
        /// Firmware syndrome for a failed command.
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// Delivery status codes of [`CmdLayout::delivery_status`] (`MLX5_CMD_DELIVERY_STAT_*`,
/// core/cmd.c): whether the device could read the command at all.
pub mod delivery {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_CMD_DELIVERY_STAT_", delivery_status_name;
        OK = 0x0, "OK";
        SIGNAT_ERR = 0x1, "SIGNAT_ERR";
        TOK_ERR = 0x2, "TOK_ERR";
        BAD_BLK_NUM_ERR = 0x3, "BAD_BLK_NUM_ERR";
        OUT_PTR_ALIGN_ERR = 0x4, "OUT_PTR_ALIGN_ERR";
        IN_PTR_ALIGN_ERR = 0x5, "IN_PTR_ALIGN_ERR";
        FW_ERR = 0x6, "FW_ERR";
        IN_LENGTH_ERR = 0x7, "IN_LENGTH_ERR";
        OUT_LENGTH_ERR = 0x8, "OUT_LENGTH_ERR";
        RES_FLD_NOT_CLR_ERR = 0x9, "RES_FLD_NOT_CLR_ERR";
        CMD_DESCR_ERR = 0x10, "CMD_DESCR_ERR";
    }
}

/// Encodes `status_own` from a delivery status and the ownership bit.
pub fn status_own(delivery_status: u8, owner: u8) -> u8 {
    (delivery_status << 1) | (owner & 1)
}

/// Number of mailbox blocks needed for a message of `len` bytes (16 of which are inline).
pub fn mailbox_blocks(len: usize) -> usize {
    len.saturating_sub(INLINE_LEN).div_ceil(DATA_BLOCK_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte offset and byte length of a declared field.
    fn at(fields: &[crate::bits::Field], name: &str) -> (u32, u32) {
        let f = fields.iter().find(|f| f.0 == name).expect(name);
        (f.1 / 8, f.2 / 8)
    }

    // struct mlx5_cmd_layout (device.h): u8 type; u8 rsvd0[3]; __be32 inlen; __be64 in_ptr;
    // __be32 in[4]; __be32 out[4]; __be64 out_ptr; __be32 outlen; u8 token; u8 sig; u8 rsvd1;
    // u8 status_own. The map (§1.2) gives the same offsets: 0x00 type, 0x04 inlen, 0x08
    // in_ptr, 0x10 in, 0x20 out, 0x30 out_ptr, 0x38 outlen, 0x3c token, 0x3d sig, 0x3f
    // status_own.
    #[test]
    fn cmd_layout_matches_device_h() {
        let f = CmdLayout::FIELDS;
        assert_eq!(CmdLayout::SIZE, 64);
        assert_eq!(at(f, "xport_type"), (0x00, 1));
        assert_eq!(at(f, "inlen"), (0x04, 4));
        assert_eq!(at(f, "in_ptr"), (0x08, 8));
        assert_eq!(at(f, "inline_in"), (0x10, 16));
        assert_eq!(at(f, "inline_out"), (0x20, 16));
        assert_eq!(at(f, "out_ptr"), (0x30, 8));
        assert_eq!(at(f, "outlen"), (0x38, 4));
        assert_eq!(at(f, "token"), (0x3c, 1));
        assert_eq!(at(f, "sig"), (0x3d, 1));
        assert_eq!(at(f, "status_own"), (0x3f, 1));
    }

    // cmd.c: `lay->status_own = CMD_OWNER_HW` and `status = lay->status_own >> 1`.
    #[test]
    fn status_own_splits_into_delivery_status_and_owner() {
        let mut l = CmdLayout::new();
        l.set_status_own(status_own(delivery::IN_LENGTH_ERR, OWNER_HW).into());
        assert_eq!(l.0[0x3f], (7 << 1) | 1);
        assert_eq!(l.delivery_status(), 7);
        assert_eq!(l.ownership(), 1);
        l.set_ownership(OWNER_SW.into());
        assert_eq!(l.0[0x3f], 7 << 1);
        assert_eq!(delivery::delivery_status_name(0x10), "CMD_DESCR_ERR");
    }

    #[test]
    fn cmd_layout_accessors_place_big_endian_bytes() {
        let mut l = CmdLayout::new();
        l.set_xport_type(PCI_CMD_XPORT.into());
        l.set_inlen(0x0102_0304);
        l.set_in_ptr(0x1122_3344_5566_7788);
        l.inline_in_mut()[0] = 0xab;
        l.set_token(0x5a);
        assert_eq!(l.0[0], 7);
        assert_eq!(&l.0[4..8], &[1, 2, 3, 4]);
        assert_eq!(
            &l.0[8..16],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(l.0[0x10], 0xab);
        assert_eq!(l.0[0x3c], 0x5a);
    }

    // struct mlx5_cmd_prot_block (device.h): u8 data[512]; u8 rsvd0[48]; __be64 next;
    // __be32 block_num; u8 rsvd1; u8 token; u8 ctrl_sig; u8 sig — so next @0x230,
    // block_num @0x238, token @0x23d, ctrl_sig @0x23e, sig @0x23f, 576 bytes in all.
    #[test]
    fn mailbox_block_matches_device_h() {
        let f = CmdProtBlock::FIELDS;
        assert_eq!(CmdProtBlock::SIZE, 576);
        assert_eq!(at(f, "data"), (0x000, 512));
        assert_eq!(at(f, "next"), (0x230, 8));
        assert_eq!(at(f, "block_num"), (0x238, 4));
        assert_eq!(at(f, "token"), (0x23d, 1));
        assert_eq!(at(f, "ctrl_sig"), (0x23e, 1));
        assert_eq!(at(f, "sig"), (0x23f, 1));
        let mut b = CmdProtBlock::new();
        b.set_next(0xdead_beef_0000_0400);
        b.set_block_num(3);
        b.set_token(0x77);
        assert_eq!(&b.0[0x230..0x238], &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0x04, 0]);
        assert_eq!(&b.0[0x238..0x23c], &[0, 0, 0, 3]);
        assert_eq!(b.0[0x23d], 0x77);
    }

    #[test]
    fn mailbox_block_count_excludes_inline_bytes() {
        assert_eq!(mailbox_blocks(16), 0);
        assert_eq!(mailbox_blocks(17), 1);
        assert_eq!(mailbox_blocks(16 + 512), 1);
        assert_eq!(mailbox_blocks(0x1010), 8);
    }

    // The generic headers of core/cmd.c: opcode in bits 31:16 of dword 0, uid below it,
    // op_mod in bits 15:0 of dword 1; status in byte 0 of the output, syndrome in dword 1.
    #[test]
    fn generic_headers_place_opcode_and_status() {
        let mut i = MboxIn::new();
        i.set_opcode(0x104);
        i.set_uid(0xffff);
        i.set_op_mod(1);
        assert_eq!(&i.0[..8], &[0x01, 0x04, 0xff, 0xff, 0, 0, 0, 1]);
        let mut o = MboxOut::new();
        o.set_status(0x03);
        o.set_syndrome(0x1234_5678);
        assert_eq!(&o.0[..8], &[0x03, 0, 0, 0, 0x12, 0x34, 0x56, 0x78]);
    }
}
