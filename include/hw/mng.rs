// SPDX-License-Identifier: GPL-2.0
//! Management access registers: MCAM (which management registers and features the device
//! implements), MCQS (the firmware components) and MCQI (a component's information, e.g. the
//! running firmware version that `devlink dev info` prints).
//!
//! mlx5_core reads MCAM feature group 0, access register groups 0, 2 and 3 at every load
//! (fw.c `mlx5_query_hca_caps`) when `cmd_hca_cap.mcam_reg` is set, then MCQS and MCQI for
//! `devlink dev info` (fw.c `mlx5_fw_version_query`).

use crate::bits::{ifc_layouts, nested, nested_mut};

/// `MLX5_MCAM_FEATURE_ENHANCED_FEATURES` (device.h): the only MCAM `feature_group`.
pub const MCAM_FEATURE_ENHANCED_FEATURES: u8 = 0x0;
/// `MLX5_MCAM_REGS_NUM` (device.h): MCAM `access_reg_group`s 0..4, each covering 128 register
/// ids from 0x9000.
pub const MCAM_REGS_NUM: u8 = 0x4;

ifc_layouts! {
    /// MCAM, management capabilities mask (register [`crate::regs::id::MCAM`]); the driver sets
    /// `feature_group` and `access_reg_group`, the device answers the masks of that group
    /// (views: [`McamReg::access_regs`], [`McamReg::access_regs2`], [`McamReg::access_regs3`],
    /// [`McamReg::enhanced_features`]).
    pub struct McamReg: Ifc "mcam_reg", 0x48 {
        /// [`MCAM_FEATURE_ENHANCED_FEATURES`].
        feature_group, set_feature_group: u32 @ 0x008, 0x8;
        /// One of [`mcam_group`].
        access_reg_group, set_access_reg_group: u32 @ 0x018, 0x8;
        /// The register mask of `access_reg_group` (an anonymous union in mlx5_ifc.h).
        mng_access_reg_cap_mask, mng_access_reg_cap_mask_mut: bytes @ 0x040, 0x80;
        /// The feature mask of `feature_group` (an anonymous union in mlx5_ifc.h).
        mng_feature_cap_mask, mng_feature_cap_mask_mut: bytes @ 0x140, 0x80;
    }

    /// MCAM register mask of group [`mcam_group::FIRST_128`] (ids 0x9000..0x907f): register
    /// 0x9000 + n is bit 127 - n.
    pub struct McamAccessReg: Ifc "mcam_access_reg", 0x10 {
        /// MCDA (0x9063), component data access (flashing).
        mcda, set_mcda: u32 @ 0x01c, 0x1;
        /// MCC (0x9062), component control (flashing).
        mcc, set_mcc: u32 @ 0x01d, 0x1;
        /// MCQI (0x9061), component information ([`McqiReg`]).
        mcqi, set_mcqi: u32 @ 0x01e, 0x1;
        /// MCQS (0x9060), component query ([`McqsReg`]).
        mcqs, set_mcqs: u32 @ 0x01f, 0x1;
        /// MPIR (0x9059), PCIe information (socket direct).
        mpir, set_mpir: u32 @ 0x026, 0x1;
        /// MPEGC (0x9056), PCIe general configuration.
        mpegc, set_mpegc: u32 @ 0x029, 0x1;
        /// MTUTC (0x9055), UTC clock adjustment (PTP).
        mtutc, set_mtutc: u32 @ 0x02a, 0x1;
        /// MTRC_* (0x9040..0x9043), the firmware tracer.
        tracer_registers, set_tracer_registers: u32 @ 0x03c, 0x4;
        /// MRTC (0x902d), real-time clock sync (health poll).
        mrtc, set_mrtc: u32 @ 0x052, 0x1;
        /// MFRL (0x9028), firmware reset level (devlink reload fw_activate).
        mfrl, set_mfrl: u32 @ 0x057, 0x1;
        /// MTMP (0x900a), temperature (hwmon).
        mtmp, set_mtmp: u32 @ 0x075, 0x1;
    }

    /// MCAM register mask of group [`mcam_group::REGS_9100_917F`].
    pub struct McamAccessReg2: Ifc "mcam_access_reg_bits2", 0x10 {
        /// MIRC (0x9162), image reactivation.
        mirc, set_mirc: u32 @ 0x01d, 0x1;
        /// MSECQ/MSEES (SyncE).
        synce_registers, set_synce_registers: u32 @ 0x029, 0x2;
    }

    /// MCAM register mask of group [`mcam_group::REGS_9180_91FF`].
    pub struct McamAccessReg3: Ifc "mcam_access_reg_bits3", 0x10 {
        /// MRTCQ, real-time clock query.
        mrtcq, set_mrtcq: u32 @ 0x07d, 0x1;
        /// MTCTR, cross-timestamping.
        mtctr, set_mtctr: u32 @ 0x07e, 0x1;
        /// MTPTM, PTM.
        mtptm, set_mtptm: u32 @ 0x07f, 0x1;
    }

    /// MCAM feature mask of [`MCAM_FEATURE_ENHANCED_FEATURES`].
    pub struct McamEnhancedFeatures: Ifc "mcam_enhanced_features", 0x10 {
        mtutc_freq_adj_units, set_mtutc_freq_adj_units: u32 @ 0x050, 0x1;
        mtutc_time_adjustment_extended_range, set_mtutc_time_adjustment_extended_range:
            u32 @ 0x051, 0x1;
        mcia_32dwords, set_mcia_32dwords: u32 @ 0x05d, 0x1;
        out_pulse_duration_ns, set_out_pulse_duration_ns: u32 @ 0x05e, 0x1;
        npps_period, set_npps_period: u32 @ 0x05f, 0x1;
        reset_state, set_reset_state: u32 @ 0x06a, 0x1;
        ptpcyc2realtime_modify, set_ptpcyc2realtime_modify: u32 @ 0x06b, 0x1;
        pci_status_and_power, set_pci_status_and_power: u32 @ 0x06e, 0x1;
        mark_tx_action_cnp, set_mark_tx_action_cnp: u32 @ 0x074, 0x1;
        mark_tx_action_cqe, set_mark_tx_action_cqe: u32 @ 0x075, 0x1;
        dynamic_tx_overflow, set_dynamic_tx_overflow: u32 @ 0x076, 0x1;
        pcie_outbound_stalled, set_pcie_outbound_stalled: u32 @ 0x07b, 0x1;
        tx_overflow_buffer_pkt, set_tx_overflow_buffer_pkt: u32 @ 0x07c, 0x1;
        mtpps_enh_out_per_adj, set_mtpps_enh_out_per_adj: u32 @ 0x07d, 0x1;
        mtpps_fs, set_mtpps_fs: u32 @ 0x07e, 0x1;
        pcie_performance_group, set_pcie_performance_group: u32 @ 0x07f, 0x1;
    }

    /// MCQS, management component query status (register [`crate::regs::id::MCQS`]): the
    /// driver sets `component_index` and scans up to `last_index_flag`.
    pub struct McqsReg: Ifc "mcqs_reg", 0x10 {
        /// Set on the last (highest-index) component.
        last_index_flag, set_last_index_flag: u32 @ 0x000, 0x1;
        fw_device, set_fw_device: u32 @ 0x008, 0x8;
        component_index, set_component_index: u32 @ 0x010, 0x10;
        /// One of [`mcqs_identifier`].
        identifier, set_identifier: u32 @ 0x030, 0x10;
        component_status, set_component_status: u32 @ 0x057, 0x5;
        /// One of [`mcqs_update_state`].
        component_update_state, set_component_update_state: u32 @ 0x05c, 0x4;
        last_update_state_changer_type, set_last_update_state_changer_type: u32 @ 0x060, 0x4;
        last_update_state_changer_host_id, set_last_update_state_changer_host_id:
            u32 @ 0x064, 0x4;
    }

    /// MCQI, management component query information (register [`crate::regs::id::MCQI`]):
    /// `data_size` bytes of the `info_type` information from byte `offset` follow in `data[]`.
    pub struct McqiReg: Ifc "mcqi_reg", 0x18 {
        /// Set: the pending (stored, not yet running) component ([`mcqi_fw::STORED_VERSION`]).
        read_pending_component, set_read_pending_component: u32 @ 0x000, 0x1;
        component_index, set_component_index: u32 @ 0x010, 0x10;
        /// One of [`mcqi_info_type`].
        info_type, set_info_type: u32 @ 0x05b, 0x5;
        /// Size in bytes of the whole information of `info_type`.
        info_size, set_info_size: u32 @ 0x060, 0x20;
        /// Byte offset of `data[]` in the information (dword aligned).
        offset, set_offset: u32 @ 0x080, 0x20;
        /// Bytes requested / returned in `data[]`.
        data_size, set_data_size: u32 @ 0x0b0, 0x10;
        /// The information (a [`McqiRegData`]).
        data, data_mut: tail McqiRegData @ 0x0c0, 0x3e0;
    }

    /// MCQI information (`union mlx5_ifc_mcqi_reg_data_bits`); the member is chosen by
    /// `info_type`.
    pub struct McqiRegData: Ifc "mcqi_reg_data", 0x7c {
        mcqi_caps, mcqi_caps_mut: McqiCap @ 0x000, 0xa0;
        mcqi_version, mcqi_version_mut: McqiVersion @ 0x000, 0x3e0;
    }

    /// MCQI information [`mcqi_info_type::CAPABILITIES`].
    pub struct McqiCap: Ifc "mcqi_cap", 0x14 {
        /// Bit per supported [`mcqi_info_type`] (CAPABILITIES is always supported).
        supported_info_bitmask, set_supported_info_bitmask: u32 @ 0x000, 0x20;
        /// Size of the component in bytes, 0 if unknown.
        component_size, set_component_size: u32 @ 0x020, 0x20;
        max_component_size, set_max_component_size: u32 @ 0x040, 0x20;
        log_mcda_word_size, set_log_mcda_word_size: u32 @ 0x060, 0x4;
        mcda_max_write_size, set_mcda_max_write_size: u32 @ 0x070, 0x10;
        rd_en, set_rd_en: u32 @ 0x080, 0x1;
        match_chip_id, set_match_chip_id: u32 @ 0x082, 0x1;
        match_psid, set_match_psid: u32 @ 0x083, 0x1;
        check_user_timestamp, set_check_user_timestamp: u32 @ 0x084, 0x1;
        match_base_guid_mac, set_match_base_guid_mac: u32 @ 0x085, 0x1;
    }

    /// MCQI information [`mcqi_info_type::VERSION`].
    pub struct McqiVersion: Ifc "mcqi_version", 0x7c {
        build_time_valid, set_build_time_valid: u32 @ 0x002, 0x1;
        user_defined_time_valid, set_user_defined_time_valid: u32 @ 0x003, 0x1;
        /// Length of `version_string`.
        version_string_length, set_version_string_length: u32 @ 0x018, 0x8;
        /// `major << 24 | minor << 16 | subminor` (see [`fw_version`]).
        version, set_version: u32 @ 0x020, 0x20;
        build_time, set_build_time: u64 @ 0x040, 0x40;
        user_defined_time, set_user_defined_time: u64 @ 0x080, 0x40;
        build_tool_version, set_build_tool_version: u32 @ 0x0c0, 0x20;
        /// The version as a NUL-terminated string, e.g. `12.28.2006`.
        version_string, version_string_mut: bytes @ 0x100, 0x2e0;
    }
}

impl McamReg {
    /// `mng_access_reg_cap_mask` as group [`mcam_group::FIRST_128`]'s mask.
    pub fn access_regs(&self) -> &McamAccessReg {
        nested(self.mng_access_reg_cap_mask())
    }

    /// Mutable twin of [`McamReg::access_regs`].
    pub fn access_regs_mut(&mut self) -> &mut McamAccessReg {
        nested_mut(self.mng_access_reg_cap_mask_mut())
    }

    /// `mng_access_reg_cap_mask` as group [`mcam_group::REGS_9100_917F`]'s mask.
    pub fn access_regs2(&self) -> &McamAccessReg2 {
        nested(self.mng_access_reg_cap_mask())
    }

    /// Mutable twin of [`McamReg::access_regs2`].
    pub fn access_regs2_mut(&mut self) -> &mut McamAccessReg2 {
        nested_mut(self.mng_access_reg_cap_mask_mut())
    }

    /// `mng_access_reg_cap_mask` as group [`mcam_group::REGS_9180_91FF`]'s mask.
    pub fn access_regs3(&self) -> &McamAccessReg3 {
        nested(self.mng_access_reg_cap_mask())
    }

    /// Mutable twin of [`McamReg::access_regs3`].
    pub fn access_regs3_mut(&mut self) -> &mut McamAccessReg3 {
        nested_mut(self.mng_access_reg_cap_mask_mut())
    }

    /// `mng_feature_cap_mask` as the [`MCAM_FEATURE_ENHANCED_FEATURES`] mask.
    pub fn enhanced_features(&self) -> &McamEnhancedFeatures {
        nested(self.mng_feature_cap_mask())
    }

    /// Mutable twin of [`McamReg::enhanced_features`].
    pub fn enhanced_features_mut(&mut self) -> &mut McamEnhancedFeatures {
        nested_mut(self.mng_feature_cap_mask_mut())
    }
}

/// MCAM `access_reg_group`s mlx5 reads (`enum mlx5_mcam_reg_groups`, device.h).
pub mod mcam_group {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_MCAM_REGS_", mcam_group_name;
        FIRST_128 = 0x0, "FIRST_128";
        REGS_9100_917F = 0x2, "0x9100_0x917F";
        REGS_9180_91FF = 0x3, "0x9180_0x91FF";
    }
}

/// MCQS `identifier`s (fw.c).
pub mod mcqs_identifier {
    use crate::bits::code_table;

    code_table! { u16, "MCQS_IDENTIFIER_", mcqs_identifier_name;
        BOOT_IMG = 0x1, "BOOT_IMG";
        OEM_NVCONFIG = 0x4, "OEM_NVCONFIG";
        MLNX_NVCONFIG = 0x5, "MLNX_NVCONFIG";
        CS_TOKEN = 0x6, "CS_TOKEN";
        DBG_TOKEN = 0x7, "DBG_TOKEN";
        GEARBOX = 0xa, "GEARBOX";
    }
}

/// MCQS `component_update_state`s (fw.c): IDLE means no update in progress and no pending
/// image; ACTIVE_PENDING_RESET means a stored image waits for a reset.
pub mod mcqs_update_state {
    use crate::bits::code_table;

    code_table! { u8, "MCQS_UPDATE_STATE_", mcqs_update_state_name;
        IDLE = 0x0, "IDLE";
        IN_PROGRESS = 0x1, "IN_PROGRESS";
        APPLIED = 0x2, "APPLIED";
        ACTIVE = 0x3, "ACTIVE";
        ACTIVE_PENDING_RESET = 0x4, "ACTIVE_PENDING_RESET";
        FAILED = 0x5, "FAILED";
        CANCELED = 0x6, "CANCELED";
        BUSY = 0x7, "BUSY";
    }
}

/// MCQI `info_type`s (fw.c).
pub mod mcqi_info_type {
    use crate::bits::code_table;

    code_table! { u8, "MCQI_INFO_TYPE_", mcqi_info_type_name;
        CAPABILITIES = 0x0, "CAPABILITIES";
        VERSION = 0x1, "VERSION";
        ACTIVATION_METHOD = 0x5, "ACTIVATION_METHOD";
    }
}

/// MCQI `read_pending_component` values of a VERSION query (fw.c).
pub mod mcqi_fw {
    use crate::bits::code_table;

    code_table! { u8, "MCQI_FW_", mcqi_fw_name;
        RUNNING_VERSION = 0x0, "RUNNING_VERSION";
        STORED_VERSION = 0x1, "STORED_VERSION";
    }
}

/// The MCQI `version` word of a firmware `major.minor.subminor` (devlink.c decodes it as
/// `version >> 24`, `(version >> 16) & 0xff`, `version & 0xffff`), or `None` if major or
/// minor do not fit in 8 bits.
pub fn fw_version(major: u16, minor: u16, subminor: u16) -> Option<u32> {
    (major <= 0xff && minor <= 0xff)
        .then(|| (u32::from(major) << 24) | (u32::from(minor) << 16) | u32::from(subminor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    // mcam_reg: the register mask union at bit 0x40 (byte 8), the feature mask at bit 0x140.
    #[test]
    fn mcam_views_share_the_union_bytes() {
        let mut r = McamReg::new();
        r.set_access_reg_group(mcam_group::REGS_9180_91FF.into());
        r.access_regs_mut().set_mcqs(1);
        r.access_regs_mut().set_mcqi(1);
        // mcqs/mcqi: bits 0x1f/0x1e of the first mask dword (registers 0x9060/0x9061).
        assert_eq!(&r.0[..12], &[0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(r.access_regs2().mirc(), 0);
        r.access_regs3_mut().set_mtptm(1);
        assert_eq!(r.0[8 + 15], 1);
        r.enhanced_features_mut().set_pcie_performance_group(1);
        assert_eq!(r.0[0x28 + 15], 1);
        assert_eq!(r.as_bytes().iter().filter(|b| **b != 0).count(), 4);
    }

    // mcqi_reg: 24-byte header, data[] (the union) from byte 0x18.
    #[test]
    fn mcqi_data_follows_the_header() {
        let mut msg = [0u8; McqiReg::SIZE + McqiRegData::SIZE];
        let d = McqiReg::data_mut(&mut msg, 0).expect("room for one element");
        d.mcqi_version_mut().set_version(0x0c1c_07d6);
        d.mcqi_version_mut().version_string_mut()[..2].copy_from_slice(b"12");
        assert_eq!(&msg[0x1c..0x20], &[0x0c, 0x1c, 0x07, 0xd6]);
        assert_eq!(&msg[0x38..0x3a], b"12");
        let d = McqiReg::data(&msg, 0).unwrap();
        assert_eq!(d.mcqi_caps().component_size(), 0x0c1c_07d6);
        assert!(McqiReg::data(&msg[..McqiReg::SIZE], 0).is_none());
    }

    #[test]
    fn fw_version_packs_like_devlink_unpacks() {
        assert_eq!(fw_version(12, 28, 2006), Some(0x0c1c_07d6));
        assert_eq!(fw_version(14, 32, 0xffff), Some(0x0e20_ffff));
        assert_eq!(fw_version(256, 0, 0), None);
        assert_eq!(fw_version(1, 256, 0), None);
    }
}
