// SPDX-License-Identifier: GPL-2.0
//! The vector-calc capability page (`MLX5_CAP_VECTOR_CALC`, type 0xb): the erasure-coding
//! engine that MLNX_OFED's libmlx5 drives with a `SEND` of opmod 0xff carrying a
//! [`crate::wqe::vector_calc::VecCalcSeg`].
//!
//! Upstream Linux never used the page and removed it ("net/mlx5: Remove unused CAPs",
//! net-next, August 2023; 7.2's `enum mlx5_cap_type` jumps from ESWITCH 0x9 to QOS 0xc); only
//! the general capability bit `cmd_hca_cap.vector_calc` (bit 0x22f) survives upstream. The
//! layouts here are therefore copied from MLNX_OFED's `include/linux/mlx5/mlx5_ifc.h`
//! (`mlx5_ifc_vector_calc_cap_bits`, `mlx5_ifc_calc_op`, mlnx-ofa_kernel 4.9; the upstream
//! version of the page lacked `calc_matrix_type_8bit`) and checked by the offset tests below
//! ([`crate::bits::Source::Ofed`]). The page type comes from MLNX `enum mlx5_cap_type`
//! (`MLX5_CAP_VECTOR_CALC = 0xb`, after `MLX5_CAP_RESERVED = 0xa`); mlx5_core (MLNX) reads it
//! only when `vector_calc` is set, with `QUERY_HCA_CAP` op_mod 0x16 (max) / 0x17 (current).

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// The vector-calc capabilities (`mlx5_ifc_vector_calc_cap_bits`, MLNX_OFED mlx5_ifc.h;
    /// 0x7e0 bits as declared there, inside the 4 KiB capability page).
    ///
    /// MLNX mlx5_ib (`main_exp.c`) reports `IBV_EXP_DEVICE_EC_OFFLOAD` when `calc_matrix` and
    /// `op_xor` of all four slots are set, `max_ec_data_vector_count` = `max_vec_count`, and the
    /// supported symbol widths w ∈ {1, 2, 4}, plus w = 8 with `calc_matrix_type_8bit`.
    pub struct VectorCalcCap: Ofed "vector_calc_cap", 0xfc {
        /// Matrix calculations (output = matrix × input vectors) are supported.
        calc_matrix, set_calc_matrix: u32 @ 0x000, 0x1;
        /// Matrices of 8-bit coefficients (GF(2^8)) are supported; MLNX_OFED only.
        calc_matrix_type_8bit, set_calc_matrix_type_8bit: u32 @ 0x001, 0x1;
        /// Most input vectors of one calculation (`vec_count`).
        max_vec_count, set_max_vec_count: u32 @ 0x028, 0x8;
        /// Largest `log_chunk_size` of the WQE's `mat_le_tag_cs` (read by no driver; the model's
        /// reading: chunk = 64 B << log_chunk_size).
        max_chunk_size, set_max_chunk_size: u32 @ 0x03d, 0x3;
        /// Operations of output slot 0.
        calc0, calc0_mut: CalcOp @ 0x040, 0x20;
        /// Operations of output slot 1.
        calc1, calc1_mut: CalcOp @ 0x060, 0x20;
        /// Operations of output slot 2.
        calc2, calc2_mut: CalcOp @ 0x080, 0x20;
        /// Operations of output slot 3.
        calc3, calc3_mut: CalcOp @ 0x0a0, 0x20;
    }

    /// The operations one output slot supports (`mlx5_ifc_calc_op`, MLNX_OFED mlx5_ifc.h).
    pub struct CalcOp: Ofed "calc_op", 0x4 {
        op_swap_endianness, set_op_swap_endianness: u32 @ 0x019, 0x1;
        op_min, set_op_min: u32 @ 0x01a, 0x1;
        op_xor, set_op_xor: u32 @ 0x01b, 0x1;
        op_or, set_op_or: u32 @ 0x01c, 0x1;
        op_and, set_op_and: u32 @ 0x01d, 0x1;
        op_max, set_op_max: u32 @ 0x01e, 0x1;
        op_add, set_op_add: u32 @ 0x01f, 0x1;
    }
}

/// `MLX5_CAP_VECTOR_CALC` (MLNX_OFED `enum mlx5_cap_type`, device.h): not in upstream's enum,
/// hence not in [`super::cap_type`] (whose entries are checked against it).
pub const CAP_TYPE_VECTOR_CALC: u16 = 0xb;

#[cfg(test)]
mod tests {
    use super::*;

    fn at(fields: &[crate::bits::Field], name: &str) -> (u32, u32) {
        let f = fields.iter().find(|f| f.0 == name).unwrap();
        (f.1, f.2)
    }

    // MLNX_OFED mlx5_ifc.h: calc_matrix[0x1], calc_matrix_type_8bit[0x1], reserved_at_2[0x1e],
    // reserved_at_20[0x8], max_vec_count[0x8], reserved_at_30[0xd], max_chunk_size[0x3],
    // calc0..calc3 (struct mlx5_ifc_calc_op, 0x20 bits each), reserved_at_c0[0x720].
    #[test]
    fn vector_calc_cap_matches_mlnx_ofed() {
        let f = VectorCalcCap::FIELDS;
        // 0x7e0 bits: the MLNX struct ends with reserved_at_c0[0x720], 4 bytes short of a page.
        assert_eq!(VectorCalcCap::SIZE * 8, 0xc0 + 0x720);
        assert_eq!(at(f, "calc_matrix"), (0x0, 1));
        assert_eq!(at(f, "calc_matrix_type_8bit"), (0x1, 1));
        assert_eq!(at(f, "max_vec_count"), (0x28, 8));
        assert_eq!(at(f, "max_chunk_size"), (0x3d, 3));
        for (i, n) in ["calc0", "calc1", "calc2", "calc3"].iter().enumerate() {
            assert_eq!(at(f, n), (0x40 + 0x20 * i as u32, 0x20));
        }
        let mut c = VectorCalcCap::new();
        c.set_calc_matrix(1);
        c.set_max_vec_count(16);
        c.set_max_chunk_size(5);
        c.calc3_mut().set_op_xor(1);
        assert_eq!(c.0[0], 0x80);
        assert_eq!(c.0[5], 16);
        assert_eq!(c.0[7], 5);
        // op_xor is bit 4 of the slot's big-endian word (the word's LSB is op_add).
        assert_eq!(&c.0[0x14..0x18], &[0, 0, 0, 0x10]);
        assert_eq!(c.calc3().op_xor(), 1);
    }

    // struct mlx5_ifc_calc_op: reserved_at_0[0x10], reserved_at_10[0x9],
    // op_swap_endianness, op_min, op_xor, op_or, op_and, op_max, op_add (one bit each).
    #[test]
    fn calc_op_matches_mlnx_ofed() {
        let f = CalcOp::FIELDS;
        let names = [
            "op_swap_endianness",
            "op_min",
            "op_xor",
            "op_or",
            "op_and",
            "op_max",
            "op_add",
        ];
        for (i, n) in names.iter().enumerate() {
            assert_eq!(at(f, n), (0x19 + i as u32, 1), "{n}");
        }
        let mut o = CalcOp::new();
        o.set_op_add(1);
        o.set_op_swap_endianness(1);
        assert_eq!(o.0, [0, 0, 0, 0x41]);
    }
}
