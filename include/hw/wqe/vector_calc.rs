// SPDX-License-Identifier: GPL-2.0
//! The vector-calc (erasure-coding) WQE segment of MLNX_OFED's libmlx5.
//!
//! libmlx5's EC offload (`src/ec.c`, `post_ec_vec_calc`; MLNX_OFED 4.x libmlx5-41mlnx1) posts
//! on an RC QP connected to itself a `SEND` whose control segment has opmod
//! [`OPMOD_VEC_CALC`] (0xff) and `ds` 4: the 16-byte control segment, then this 48-byte
//! segment, no data segments. The device reads `vec_count` input vectors of `vec_size` bytes
//! (vector i at `vec_addr + i·vec_size` through `vec_lkey`), multiplies them by the
//! coefficient matrix at `cm_addr` (`cm_lkey`; `vec_count` rows × N columns, one byte per
//! entry) and sends the N outputs, interleaved per chunk, as the SEND's payload.
//!
//! Neither the segment nor its constants are in any upstream header: they come from
//! libmlx5's `src/wqe.h` (`struct mlx5_vec_calc_seg`, `MLX5_CALC_OP_XOR`, `MLX5_CALC_MATRIX`,
//! `MLX5_CALC_MATRIX_8BIT`) and `src/ec.h` (`MLX5_CHUNK_SIZE`), hence
//! [`crate::bits::Source::Ofed`] and the offset test below. The capability page is
//! [`crate::caps::vector_calc`].

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// The vector-calc segment (`struct mlx5_vec_calc_seg`, libmlx5 wqe.h: `u8 calc_op[4];
    /// u32 rsvd1[2]; u8 op_tags; u8 mat_le_tag_cs; u8 rsvd2; u8 vec_count; u32 rsvd3;
    /// u32 cm_lkey; u64 cm_addr; u32 vec_size; u32 vec_lkey; u64 vec_addr;`).
    pub struct VecCalcSeg: Ofed "mlx5_vec_calc_seg", 0x30 {
        /// Operation of output slot 0 ([`calc_op`]).
        calc_op0, set_calc_op0: u32 @ 0x000, 0x8;
        /// Operation of output slot 1.
        calc_op1, set_calc_op1: u32 @ 0x008, 0x8;
        /// Operation of output slot 2.
        calc_op2, set_calc_op2: u32 @ 0x010, 0x8;
        /// Operation of output slot 3.
        calc_op3, set_calc_op3: u32 @ 0x018, 0x8;
        /// Operation tags (libmlx5 writes 0; meaning unknown).
        op_tags, set_op_tags: u32 @ 0x060, 0x8;
        /// [`CALC_MATRIX`] | [`CALC_MATRIX_8BIT`] | log_chunk_size ([`LOG_CHUNK_SIZE_MASK`]);
        /// bits 6 and 5 are named "le" and "tag" by the field's name, unused by libmlx5.
        mat_le_tag_cs, set_mat_le_tag_cs: u32 @ 0x068, 0x8;
        /// Number of input vectors (libmlx5 writes k as a `u8`: k = 256 wraps to 0).
        vec_count, set_vec_count: u32 @ 0x078, 0x8;
        /// Local key of the coefficient matrix.
        cm_lkey, set_cm_lkey: u32 @ 0x0a0, 0x20;
        /// Address of the coefficient matrix.
        cm_addr, set_cm_addr: u64 @ 0x0c0, 0x40;
        /// Bytes per vector (libmlx5: the block size with the low two bits cleared).
        vec_size, set_vec_size: u32 @ 0x100, 0x20;
        /// Local key of the input vectors (a plain MR when they are one contiguous range,
        /// else an indirect KLM mkey built by a UMR WQE just before).
        vec_lkey, set_vec_lkey: u32 @ 0x120, 0x20;
        /// Address of input vector 0; vector i is at `vec_addr + i·vec_size`.
        vec_addr, set_vec_addr: u64 @ 0x140, 0x40;
    }
}

/// The control segment opmod of a `SEND` that carries a [`VecCalcSeg`] (libmlx5
/// `post_ec_vec_calc`: `set_ctrl_seg(..., MLX5_OPCODE_SEND, ..., 0xff, ...)`).
pub const OPMOD_VEC_CALC: u8 = 0xff;

/// `ds` of a vector-calc WQE: control (16 B) + [`VecCalcSeg`] (48 B) = one basic block.
pub const VEC_CALC_DS: u8 = 4;

/// Values of `calc_op[i]` (libmlx5 wqe.h). Only XOR is named there; 0 leaves the slot unused.
pub mod calc_op {
    /// The slot produces no output (libmlx5 leaves slots ≥ m at 0).
    pub const NONE: u8 = 0x0;
    /// `MLX5_CALC_OP_XOR`: the output is the XOR (GF sum) of the matrix-weighted inputs.
    /// Its capability is `calc_op.op_xor`, bit 4 of the slot word: the model reads op code c
    /// as capability bit c − 1 (add 1, max 2, and 3, or 4, xor 5, min 6, swap endianness 7),
    /// an inference that fits the one value published.
    pub const XOR: u8 = 0x5;
}

/// `MLX5_CALC_MATRIX` (libmlx5 wqe.h): `mat_le_tag_cs` bit 7, a matrix calculation.
pub const CALC_MATRIX: u8 = 1 << 7;
/// `MLX5_CALC_MATRIX_8BIT` (libmlx5 wqe.h): `mat_le_tag_cs` bit 4, 8-bit coefficients
/// (w = 8); without it each coefficient is the entry's low nibble (w ∈ {1, 2, 4}).
pub const CALC_MATRIX_8BIT: u8 = 1 << 4;
/// `mat_le_tag_cs` bit 6 ("le" in the field name; never set by libmlx5).
pub const CALC_LE: u8 = 1 << 6;
/// `mat_le_tag_cs` bit 5 ("tag" in the field name; never set by libmlx5).
pub const CALC_TAG: u8 = 1 << 5;
/// The log_chunk_size bits of `mat_le_tag_cs`: three, the width of the capability's
/// `max_chunk_size` (libmlx5 always writes 0).
pub const LOG_CHUNK_SIZE_MASK: u8 = 0x7;

/// `MLX5_CHUNK_SIZE` (libmlx5 ec.h): the interleaving chunk, 64 bytes << log_chunk_size.
pub const fn chunk_size(log_chunk_size: u8) -> u32 {
    64 << log_chunk_size
}

/// `MLX5_EC_NOUTPUTS` (libmlx5 ec.h): the outputs of a calculation with `m` used slots — 3 is
/// rounded up to 4 (the fourth column of the matrix is zero and its output goes to a dump
/// buffer).
pub const fn noutputs(m: u8) -> u8 {
    if m == 3 {
        4
    } else {
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(fields: &[crate::bits::Field], name: &str) -> (u32, u32) {
        let f = fields.iter().find(|f| f.0 == name).unwrap();
        (f.1 / 8, f.2)
    }

    // struct mlx5_vec_calc_seg (libmlx5 wqe.h): calc_op[4] at 0..4, rsvd1[2] at 4..12,
    // op_tags 12, mat_le_tag_cs 13, rsvd2 14, vec_count 15, rsvd3 16..20, cm_lkey 20,
    // cm_addr 24, vec_size 32, vec_lkey 36, vec_addr 40; 48 bytes.
    #[test]
    fn vec_calc_seg_matches_libmlx5_wqe_h() {
        let f = VecCalcSeg::FIELDS;
        assert_eq!(VecCalcSeg::SIZE, 48);
        for (i, n) in ["calc_op0", "calc_op1", "calc_op2", "calc_op3"]
            .iter()
            .enumerate()
        {
            assert_eq!(at(f, n), (i as u32, 8));
        }
        assert_eq!(at(f, "op_tags"), (12, 8));
        assert_eq!(at(f, "mat_le_tag_cs"), (13, 8));
        assert_eq!(at(f, "vec_count"), (15, 8));
        assert_eq!(at(f, "cm_lkey"), (20, 32));
        assert_eq!(at(f, "cm_addr"), (24, 64));
        assert_eq!(at(f, "vec_size"), (32, 32));
        assert_eq!(at(f, "vec_lkey"), (36, 32));
        assert_eq!(at(f, "vec_addr"), (40, 64));
        // What post_ec_vec_calc writes for k = 10, m = 3, w = 4, 4 KiB blocks.
        let mut s = VecCalcSeg::new();
        s.set_calc_op0(calc_op::XOR.into());
        s.set_calc_op1(calc_op::XOR.into());
        s.set_calc_op2(calc_op::XOR.into());
        s.set_mat_le_tag_cs(CALC_MATRIX.into());
        s.set_vec_count(10);
        s.set_cm_lkey(0x1234);
        s.set_cm_addr(0x1122_3344_5566_7788);
        s.set_vec_size(4096);
        s.set_vec_lkey(0x5678);
        s.set_vec_addr(0x7000_0000);
        assert_eq!(&s.0[..4], &[5, 5, 5, 0]);
        assert_eq!(&s.0[12..16], &[0, 0x80, 0, 10]);
        assert_eq!(&s.0[20..24], &[0, 0, 0x12, 0x34]);
        assert_eq!(&s.0[32..36], &[0, 0, 0x10, 0]);
        assert_eq!(&s.0[40..48], &[0, 0, 0, 0, 0x70, 0, 0, 0]);
    }

    #[test]
    fn chunk_and_output_counts_follow_ec_h() {
        assert_eq!(chunk_size(0), 64);
        assert_eq!(chunk_size(3), 512);
        assert_eq!([1, 2, 3, 4].map(noutputs), [1, 2, 4, 4]);
    }
}
