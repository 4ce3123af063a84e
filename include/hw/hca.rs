// SPDX-License-Identifier: GPL-2.0
//! HCA life cycle commands: enable/disable, ISSI negotiation, init/teardown, adapter identity
//! and driver version.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Input of `ENABLE_HCA`: brings the function up (first command after the queue).
    pub struct EnableHcaIn: Ifc "enable_hca_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        embedded_cpu_function, set_embedded_cpu_function: u32 @ 0x040, 0x1;
        function_id_type, set_function_id_type: u32 @ 0x043, 0x1;
        function_id, set_function_id: u32 @ 0x050, 0x10;
    }

    /// Output of `ENABLE_HCA`.
    pub struct EnableHcaOut: Ifc "enable_hca_out", 0xc {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `DISABLE_HCA`: the last command of a teardown.
    pub struct DisableHcaIn: Ifc "disable_hca_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        embedded_cpu_function, set_embedded_cpu_function: u32 @ 0x040, 0x1;
        function_id_type, set_function_id_type: u32 @ 0x043, 0x1;
        function_id, set_function_id: u32 @ 0x050, 0x10;
    }

    /// Output of `DISABLE_HCA`.
    pub struct DisableHcaOut: Ifc "disable_hca_out", 0xc {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `QUERY_ISSI`: which interface step sequence ids the device supports.
    pub struct QueryIssiIn: Ifc "query_issi_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `QUERY_ISSI`; bit *n* of `supported_issi_dw0` means ISSI *n* is supported.
    pub struct QueryIssiOut: Ifc "query_issi_out", 0x70 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        current_issi, set_current_issi: u32 @ 0x050, 0x10;
        supported_issi_dw0, set_supported_issi_dw0: u32 @ 0x360, 0x20;
    }

    /// Input of `SET_ISSI`.
    pub struct SetIssiIn: Ifc "set_issi_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        current_issi, set_current_issi: u32 @ 0x050, 0x10;
    }

    /// Output of `SET_ISSI`.
    pub struct SetIssiOut: Ifc "set_issi_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `INIT_HCA`.
    pub struct InitHcaIn: Ifc "init_hca_in", 0x20 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        sw_vhca_id, set_sw_vhca_id: u32 @ 0x062, 0xe;
        sw_owner_id, set_sw_owner_id: array u32 @ 0x080, 0x80;
    }

    /// Output of `INIT_HCA`.
    pub struct InitHcaOut: Ifc "init_hca_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `TEARDOWN_HCA`; `profile` is one of [`teardown_profile`].
    pub struct TeardownHcaIn: Ifc "teardown_hca_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        profile, set_profile: u32 @ 0x050, 0x10;
    }

    /// Output of `TEARDOWN_HCA`.
    pub struct TeardownHcaOut: Ifc "teardown_hca_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        state, set_state: u32 @ 0x07f, 0x1;
    }

    /// Input of `QUERY_ADAPTER`.
    pub struct QueryAdapterIn: Ifc "query_adapter_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `QUERY_ADAPTER`.
    pub struct QueryAdapterOut: Ifc "query_adapter_out", 0x110 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        query_adapter_struct, query_adapter_struct_mut: QueryAdapterParamBlock @ 0x080, 0x800;
    }

    /// Adapter identity returned by `QUERY_ADAPTER` (vendor ids, VSD, PSID).
    pub struct QueryAdapterParamBlock: Ifc "query_adapter_param_block", 0x100 {
        ieee_vendor_id, set_ieee_vendor_id: u32 @ 0x0c8, 0x18;
        vsd_vendor_id, set_vsd_vendor_id: u32 @ 0x0f0, 0x10;
        vsd, vsd_mut: bytes @ 0x100, 0x680;
        vsd_contd_psid, vsd_contd_psid_mut: bytes @ 0x780, 0x80;
    }

    /// Input of `SET_DRIVER_VERSION`; `driver_version` is a NUL-padded string.
    pub struct SetDriverVersionIn: Ifc "set_driver_version_in", 0x50 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        driver_version, driver_version_mut: bytes @ 0x080, 0x200;
    }

    /// Output of `SET_DRIVER_VERSION`.
    pub struct SetDriverVersionOut: Ifc "set_driver_version_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

/// `profile` values of [`TeardownHcaIn`] (`MLX5_TEARDOWN_HCA_IN_PROFILE_*`, mlx5_ifc.h).
pub mod teardown_profile {
    use crate::bits::code_table;

    code_table! { u16, "MLX5_TEARDOWN_HCA_IN_PROFILE_", teardown_profile_name;
        GRACEFUL_CLOSE = 0x0, "GRACEFUL_CLOSE";
        FORCE_CLOSE = 0x1, "FORCE_CLOSE";
        PREPARE_FAST_TEARDOWN = 0x2, "PREPARE_FAST_TEARDOWN";
    }
}

/// Bit of [`QueryIssiOut::supported_issi_dw0`] that says ISSI `issi` (0..=31) is supported.
pub fn issi_supported(supported_issi_dw0: u32, issi: u32) -> bool {
    issi < 32 && supported_issi_dw0 & (1 << issi) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    // main.c: ENABLE_HCA sets function_id in bits 15:0 of dword 2 (byte 0xa).
    #[test]
    fn enable_hca_places_opcode_and_function_id() {
        let mut i = EnableHcaIn::new();
        i.set_opcode(crate::opcode::ENABLE_HCA.into());
        i.set_function_id(0x1234);
        assert_eq!(&i.0[..4], &[0x01, 0x04, 0, 0]);
        assert_eq!(&i.0[8..12], &[0, 0, 0x12, 0x34]);
    }

    // The map, §1.3 step 2: ISSI 1 is used when bit 1 of supported_issi_dw0 is set.
    #[test]
    fn query_issi_reports_supported_bitmap() {
        let mut o = QueryIssiOut::new();
        o.set_supported_issi_dw0(0x3);
        assert_eq!(&o.0[0x6c..0x70], &[0, 0, 0, 3]);
        assert!(issi_supported(o.supported_issi_dw0(), 1));
        assert!(!issi_supported(0x1, 1));
        assert!(!issi_supported(u32::MAX, 32));
    }

    #[test]
    fn adapter_param_block_is_nested_at_byte_0x10() {
        let mut o = QueryAdapterOut::new();
        o.query_adapter_struct_mut().set_ieee_vendor_id(0x0002c9);
        o.query_adapter_struct_mut().vsd_contd_psid_mut()[..3].copy_from_slice(b"MT_");
        assert_eq!(&o.0[0x10 + 0x18..0x10 + 0x1c], &[0, 0x00, 0x02, 0xc9]);
        assert_eq!(&o.0[0x10 + 0xf0..0x10 + 0xf3], b"MT_");
    }
}
