// SPDX-License-Identifier: GPL-2.0
//! RDMA capability pages: RoCE (`MLX5_CAP_ROCE`) and atomics (`MLX5_CAP_ATOMIC`).
//!
//! The atomic page's header field names spell the operand size `8B`; the accessors keep the
//! header names (the conformance tests match them by name), hence the `non_snake_case`
//! allowance of this module.
#![allow(non_snake_case)]

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// The RoCE capabilities (`MLX5_CAP_ROCE`).
    pub struct RoceCap: Ifc "roce_cap", 0x100 {
        roce_apm, set_roce_apm: u32 @ 0x000, 0x1;
        sw_r_roce_src_udp_port, set_sw_r_roce_src_udp_port: u32 @ 0x004, 0x1;
        fl_rc_qp_when_roce_disabled, set_fl_rc_qp_when_roce_disabled: u32 @ 0x005, 0x1;
        fl_rc_qp_when_roce_enabled, set_fl_rc_qp_when_roce_enabled: u32 @ 0x006, 0x1;
        roce_cc_general, set_roce_cc_general: u32 @ 0x007, 0x1;
        qp_ooo_transmit_default, set_qp_ooo_transmit_default: u32 @ 0x008, 0x1;
        qp_ts_format, set_qp_ts_format: u32 @ 0x01e, 0x2;
        l3_type, set_l3_type: u32 @ 0x08c, 0x4;
        roce_version, set_roce_version: u32 @ 0x098, 0x8;
        r_roce_dest_udp_port, set_r_roce_dest_udp_port: u32 @ 0x0b0, 0x10;
        r_roce_max_src_udp_port, set_r_roce_max_src_udp_port: u32 @ 0x0c0, 0x10;
        r_roce_min_src_udp_port, set_r_roce_min_src_udp_port: u32 @ 0x0d0, 0x10;
        roce_address_table_size, set_roce_address_table_size: u32 @ 0x0f0, 0x10;
    }

    /// The atomic capabilities (`MLX5_CAP_ATOMIC`), read by mlx5_core when `cmd_hca_cap.atomic` is
    /// set: the supported operations ([`AtomicOps`]), operand sizes ([`atomic_size_qp`],
    /// [`atomic_size_dc`]) and the endianness of 8-byte atomic responses.
    pub struct AtomicCaps: Ifc "atomic_caps", 0x100 {
        atomic_req_8B_endianness_mode, set_atomic_req_8B_endianness_mode: u32 @ 0x040, 0x2;
        supported_atomic_req_8B_endianness_mode_1, set_supported_atomic_req_8B_endianness_mode_1: u32 @ 0x046, 0x1;
        atomic_operations, set_atomic_operations: u32 @ 0x090, 0x10;
        atomic_size_qp, set_atomic_size_qp: u32 @ 0x0b0, 0x10;
        atomic_size_dc, set_atomic_size_dc: u32 @ 0x0d0, 0x10;
    }
}

/// `atomic_caps.atomic_size_qp` bits: operand sizes of atomics on RC QPs
/// (`MLX5_ATOMIC_CAPS_ATOMIC_SIZE_QP_*`). The 1-byte code is 0 in the header, so it cannot be
/// tested as a bit.
pub mod atomic_size_qp {
    use crate::bits::code_table;

    code_table! { u16, "MLX5_ATOMIC_CAPS_ATOMIC_SIZE_QP_", atomic_size_qp_name;
        B1 = 0x0, "1_BYTE";
        B2 = 0x2, "2_BYTES";
        B4 = 0x4, "4_BYTES";
        B8 = 0x8, "8_BYTES";
        B16 = 0x10, "16_BYTES";
        B32 = 0x20, "32_BYTES";
        B64 = 0x40, "64_BYTES";
        B128 = 0x80, "128_BYTES";
        B256 = 0x100, "256_BYTES";
    }
}

/// `atomic_caps.atomic_size_dc` bits: operand sizes of atomics on DC transport
/// (`MLX5_ATOMIC_CAPS_ATOMIC_SIZE_DC_*`).
pub mod atomic_size_dc {
    use crate::bits::code_table;

    code_table! { u16, "MLX5_ATOMIC_CAPS_ATOMIC_SIZE_DC_", atomic_size_dc_name;
        B1 = 0x1, "1_BYTE";
        B2 = 0x2, "2_BYTES";
        B4 = 0x4, "4_BYTES";
        B8 = 0x8, "8_BYTES";
        B16 = 0x10, "16_BYTES";
        B32 = 0x20, "32_BYTES";
        B64 = 0x40, "64_BYTES";
        B128 = 0x80, "128_BYTES";
        B256 = 0x100, "256_BYTES";
    }
}

bitflags::bitflags! {
    /// `atomic_caps.atomic_operations` (`MLX5_ATOMIC_OPS_*`, driver.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct AtomicOps: u16 {
        /// Compare and swap.
        const CMP_SWAP = 1 << 0;
        /// Fetch and add.
        const FETCH_ADD = 1 << 1;
        /// Masked compare and swap.
        const EXTENDED_CMP_SWAP = 1 << 2;
        /// Masked fetch and add.
        const EXTENDED_FETCH_ADD = 1 << 3;
    }
}

/// `atomic_req_8B_endianness_mode`: 8-byte atomic responses in big endian
/// (`MLX5_ATOMIC_REQ_MODE_BE`, mlx5 core main.c).
pub const ATOMIC_REQ_MODE_BE: u8 = 0x0;
/// `atomic_req_8B_endianness_mode`: 8-byte atomic responses in host endianness, which
/// mlx5_core sets when `supported_atomic_req_8B_endianness_mode_1` allows it
/// (`MLX5_ATOMIC_REQ_MODE_HOST_ENDIANNESS`).
pub const ATOMIC_REQ_MODE_HOST_ENDIANNESS: u8 = 0x1;

#[cfg(test)]
mod tests {
    use super::*;

    // roce_version 8 bits at 0x98, r_roce_min_src_udp_port 16 bits at 0xd0.
    #[test]
    fn roce_caps_place_big_endian_bits() {
        let mut c = RoceCap::new();
        c.set_roce_version(0x4);
        c.set_r_roce_min_src_udp_port(0xc000);
        assert_eq!(c.0[0x13], 0x04);
        assert_eq!(&c.0[0x1a..0x1c], &[0xc0, 0x00]);
    }

    // atomic_caps: atomic_req_8B_endianness_mode 2 bits at 0x40, the supported bit at 0x46,
    // atomic_operations at 0x90, atomic_size_qp at 0xb0, atomic_size_dc at 0xd0.
    #[test]
    fn atomic_caps_place_big_endian_bits() {
        let mut c = AtomicCaps::new();
        c.set_atomic_req_8B_endianness_mode(ATOMIC_REQ_MODE_HOST_ENDIANNESS.into());
        c.set_supported_atomic_req_8B_endianness_mode_1(1);
        c.set_atomic_operations((AtomicOps::CMP_SWAP | AtomicOps::FETCH_ADD).bits().into());
        c.set_atomic_size_qp((atomic_size_qp::B8 | atomic_size_qp::B4).into());
        c.set_atomic_size_dc(atomic_size_dc::B8.into());
        assert_eq!(c.0[8], 0x42);
        assert_eq!(&c.0[0x12..0x14], &[0, 3]);
        assert_eq!(&c.0[0x16..0x18], &[0, 0x0c]);
        assert_eq!(&c.0[0x1a..0x1c], &[0, 0x08]);
    }
}
