// SPDX-License-Identifier: GPL-2.0
//! The "repeat block" translation of a UMR WQE: an indirect mkey whose range is a pattern of
//! pieces of other mkeys, repeated with a stride — what MLNX_OFED's libmlx5 builds to spread
//! the vector-calc engine's chunk-interleaved result over the m code blocks (`ec.c`
//! `set_ec_umr_pattern_ds`; `wqe.h` `struct mlx5_seg_repeat_block`, `struct
//! mlx5_seg_repeat_ent`), and rdma-core's `mlx5dv_wr_mr_interleaved` (`qp.c`
//! `umr_strided_seg_create`, `mlx5dv.h` `struct mlx5_wqe_umr_repeat_block_seg`).
//!
//! In place of the KLM list of an indirect (KLMS) mkey's UMR: a 16-byte [`RepeatBlock`]
//! header, then `num_ent` 16-byte [`RepeatEnt`] entries, zero-padded so that header and
//! entries are a multiple of four (64 bytes). The header's second word is the constant
//! [`REPEAT_BLOCK_OP`] where a KLM has its key. The range of the mkey is `repeat_count`
//! repetitions of `byte_count` bytes; repetition r is entry 0's `byte_count` bytes at
//! `va + r·stride` of its key, then entry 1's, and so on (libmlx5: entry j = code block j,
//! `byte_count` = `stride` = the 64-byte chunk; a stride of 0 dumps every repetition on the
//! same bytes). Not in any upstream kernel header, hence [`crate::bits::Source::Ofed`].

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// The repeat-block header (`struct mlx5_seg_repeat_block`, libmlx5 wqe.h: `__be32
    /// byte_count; __be32 const_0x400; __be32 repeat_count; __be16 reserved; __be16 num_ent;`).
    pub struct RepeatBlock: Ofed "mlx5_seg_repeat_block", 0x10 {
        /// Bytes of one repetition: the sum of the entries' `byte_count`.
        byte_count, set_byte_count: u32 @ 0x000, 0x20;
        /// [`REPEAT_BLOCK_OP`].
        op, set_op: u32 @ 0x020, 0x20;
        /// How many repetitions the range has.
        repeat_count, set_repeat_count: u32 @ 0x040, 0x20;
        /// Entries after the header.
        num_ent, set_num_ent: u32 @ 0x070, 0x10;
    }

    /// One entry of a repeat block (`struct mlx5_seg_repeat_ent`, libmlx5 wqe.h: `__be16
    /// stride; __be16 byte_count; __be32 memkey; __be64 va;`).
    pub struct RepeatEnt: Ofed "mlx5_seg_repeat_ent", 0x10 {
        /// Bytes between the starts of this entry's pieces of two successive repetitions.
        stride, set_stride: u32 @ 0x000, 0x10;
        /// Bytes of this entry in each repetition.
        byte_count, set_byte_count: u32 @ 0x010, 0x10;
        /// The mkey the pieces are in.
        memkey, set_memkey: u32 @ 0x020, 0x20;
        /// Address of the first piece in that mkey.
        va, set_va: u64 @ 0x040, 0x40;
    }
}

/// The header's constant second word (libmlx5 `const_0x400`, rdma-core `rb->op`): a repeat
/// block, where a KLM entry has its key.
pub const REPEAT_BLOCK_OP: u32 = 0x400;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(fields: &[crate::bits::Field], name: &str) -> (u32, u32) {
        let f = fields.iter().find(|f| f.0 == name).unwrap();
        (f.1 / 8, f.2)
    }

    // libmlx5 wqe.h: byte_count 0..4, const_0x400 4..8, repeat_count 8..12, reserved 12..14,
    // num_ent 14..16; entry: stride 0..2, byte_count 2..4, memkey 4..8, va 8..16.
    #[test]
    fn repeat_block_matches_libmlx5_wqe_h() {
        assert_eq!(RepeatBlock::SIZE, 16);
        assert_eq!(RepeatEnt::SIZE, 16);
        let f = RepeatBlock::FIELDS;
        assert_eq!(at(f, "byte_count"), (0, 32));
        assert_eq!(at(f, "op"), (4, 32));
        assert_eq!(at(f, "repeat_count"), (8, 32));
        assert_eq!(at(f, "num_ent"), (14, 16));
        let e = RepeatEnt::FIELDS;
        assert_eq!(at(e, "stride"), (0, 16));
        assert_eq!(at(e, "byte_count"), (2, 16));
        assert_eq!(at(e, "memkey"), (4, 32));
        assert_eq!(at(e, "va"), (8, 64));
        // What set_ec_umr_pattern_ds writes for m = 2, 4 KiB blocks.
        let mut h = RepeatBlock::new();
        h.set_byte_count(128);
        h.set_op(REPEAT_BLOCK_OP);
        h.set_repeat_count(64);
        h.set_num_ent(2);
        assert_eq!(h.0, [0, 0, 0, 128, 0, 0, 4, 0, 0, 0, 0, 64, 0, 0, 0, 2]);
        let mut r = RepeatEnt::new();
        r.set_stride(64);
        r.set_byte_count(64);
        r.set_memkey(0x1234);
        r.set_va(0x8000);
        assert_eq!(&r.0[..8], &[0, 64, 0, 64, 0, 0, 0x12, 0x34]);
        assert_eq!(&r.0[8..], &[0, 0, 0, 0, 0, 0, 0x80, 0]);
    }
}
