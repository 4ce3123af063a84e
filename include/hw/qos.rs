// SPDX-License-Identifier: GPL-2.0
//! QoS access registers (DCB): QTCT (priority → traffic class), QETCR (ETS: per-TC group,
//! bandwidth share and rate limit), QPTS (trust state: PCP or DSCP), QPDPM (DSCP → priority)
//! and QCAM (which QoS registers and features the device implements).
//!
//! mlx5_core reads QCAM at load when `cmd_hca_cap.qcam_reg` is set (fw.c `mlx5_get_qcam_reg`);
//! mlx5e's DCB code (en_dcbnl.c, through port.c) writes and reads the others. PFC itself is
//! [`crate::counters::PfccReg`].

use crate::bits::{ifc_layouts, nested, nested_mut};

/// Number of priorities (and of QTCT / QETCR entries), `MLX5_MAX_NUM_TC` (driver.h).
pub const MAX_NUM_TC: usize = 8;
/// Number of DSCP values in QPDPM (`MLX5E_MAX_DSCP`).
pub const NUM_DSCP: usize = 64;
/// `MLX5_QCAM_REGS_FIRST_128` (device.h): the only QCAM `access_reg_group`, register ids
/// 0x4000..0x407f.
pub const QCAM_REGS_FIRST_128: u8 = 0x0;
/// `MLX5_QCAM_FEATURE_ENHANCED_FEATURES` (device.h): the only QCAM `feature_group`.
pub const QCAM_FEATURE_ENHANCED_FEATURES: u8 = 0x0;

ifc_layouts! {
    /// QTCT, priority to traffic class mapping of one priority (register
    /// [`crate::regs::id::QTCT`]). mlx5 writes it once per priority with `port_number` 0 and
    /// reads it with `port_number` 1 (port.c).
    pub struct QtctReg: Ifc "qtct_reg", 0x8 {
        port_number, set_port_number: u32 @ 0x008, 0x8;
        /// The priority (0..7) this access is about.
        prio, set_prio: u32 @ 0x01d, 0x3;
        /// Its traffic class, below `cmd_hca_cap.max_tc`.
        tclass, set_tclass: u32 @ 0x03d, 0x3;
    }

    /// QETCR, ETS configuration of every traffic class (register [`crate::regs::id::QETCR`]);
    /// per TC one [`EtsTcnConfigReg`] ([`QetcReg::tc`]) whose `g`/`b`/`r` bits say which part
    /// a write sets.
    pub struct QetcReg: Ifc "qetc_reg", 0x50 {
        port_number, set_port_number: u32 @ 0x008, 0x8;
        /// [`MAX_NUM_TC`] × [`EtsTcnConfigReg`] (see [`QetcReg::tc`]).
        tc_configuration, tc_configuration_mut: bytes @ 0x040, 0x200;
        global_configuration, global_configuration_mut: EtsGlobalConfigReg @ 0x240, 0x40;
    }

    /// ETS configuration of one traffic class (an element of `qetc_reg.tc_configuration`).
    pub struct EtsTcnConfigReg: Ifc "ets_tcn_config_reg", 0x8 {
        /// Write: set `group`.
        g, set_g: u32 @ 0x000, 0x1;
        /// Write: set `bw_allocation`.
        b, set_b: u32 @ 0x001, 0x1;
        /// Write: set `max_bw_units` / `max_bw_value`.
        r, set_r: u32 @ 0x002, 0x1;
        /// The TC's ETS group (mlx5e: 0 strict/vendor, higher = higher strict priority).
        group, set_group: u32 @ 0x00c, 0x4;
        /// Bandwidth share in percent (0..100) within its group.
        bw_allocation, set_bw_allocation: u32 @ 0x019, 0x7;
        /// One of [`max_bw_units`].
        max_bw_units, set_max_bw_units: u32 @ 0x02c, 0x4;
        /// Rate limit in `max_bw_units`, 0 with [`max_bw_units::BW_NO_LIMIT`].
        max_bw_value, set_max_bw_value: u32 @ 0x030, 0x10;
    }

    /// ETS configuration of the whole port (`qetc_reg.global_configuration`).
    pub struct EtsGlobalConfigReg: Ifc "ets_global_config_reg", 0x8 {
        r, set_r: u32 @ 0x002, 0x1;
        max_bw_units, set_max_bw_units: u32 @ 0x02c, 0x4;
        max_bw_value, set_max_bw_value: u32 @ 0x038, 0x8;
    }

    /// QPTS, port trust state (register [`crate::regs::id::QPTS`]).
    pub struct QptsReg: Ifc "qpts_reg", 0x8 {
        local_port, set_local_port: u32 @ 0x008, 0x8;
        /// One of [`trust_state`].
        trust_state, set_trust_state: u32 @ 0x03d, 0x3;
    }

    /// QPDPM, DSCP to priority mapping (register [`crate::regs::id::QPDPM`]); element `d` of
    /// `dscp` ([`QpdpmReg::dscp_entry`]) maps DSCP `d`, written only where its `e` is set.
    pub struct QpdpmReg: Ifc "qpdpm_reg", 0x84 {
        local_port, set_local_port: u32 @ 0x008, 0x8;
        /// [`NUM_DSCP`] × [`QpdpmDscpReg`] (see [`QpdpmReg::dscp_entry`]).
        dscp, dscp_mut: bytes @ 0x020, 0x400;
    }

    /// One DSCP's entry of QPDPM.
    pub struct QpdpmDscpReg: Ifc "qpdpm_dscp_reg", 0x2 {
        /// Write enable: a write sets `prio` of this DSCP only if `e` is set.
        e, set_e: u32 @ 0x000, 0x1;
        prio, set_prio: u32 @ 0x00c, 0x4;
    }

    /// QCAM, QoS capabilities mask (register [`crate::regs::id::QCAM`]); the driver sets
    /// `feature_group` and `access_reg_group`, the device answers the masks (views:
    /// [`QcamReg::access_regs`], [`QcamReg::features`]).
    pub struct QcamReg: Ifc "qcam_reg", 0x48 {
        /// [`QCAM_FEATURE_ENHANCED_FEATURES`].
        feature_group, set_feature_group: u32 @ 0x008, 0x8;
        /// [`QCAM_REGS_FIRST_128`].
        access_reg_group, set_access_reg_group: u32 @ 0x018, 0x8;
        /// The register mask of `access_reg_group` (a union in mlx5_ifc.h).
        qos_access_reg_cap_mask, qos_access_reg_cap_mask_mut: bytes @ 0x040, 0x80;
        /// The feature mask of `feature_group` (a union in mlx5_ifc.h).
        qos_feature_cap_mask, qos_feature_cap_mask_mut: bytes @ 0x140, 0x80;
    }

    /// QCAM register mask of group [`QCAM_REGS_FIRST_128`]: register 0x4000 + n is bit
    /// 127 - n.
    pub struct QcamAccessRegCapMask: Ifc "qcam_access_reg_cap_mask", 0x10 {
        /// QPDPM (0x4013), DSCP → priority.
        qpdpm, set_qpdpm: u32 @ 0x06c, 0x1;
        /// QDPM (0x4003), DSCP → priority (the older register).
        qdpm, set_qdpm: u32 @ 0x07c, 0x1;
        /// QPTS (0x4002), trust state.
        qpts, set_qpts: u32 @ 0x07d, 0x1;
        /// QCAP (0x4001).
        qcap, set_qcap: u32 @ 0x07e, 0x1;
    }

    /// QCAM feature mask of [`QCAM_FEATURE_ENHANCED_FEATURES`].
    pub struct QcamQosFeatureCapMask: Ifc "qcam_qos_feature_cap_mask", 0x10 {
        qetcr_qshr_max_bw_val_msb, set_qetcr_qshr_max_bw_val_msb: u32 @ 0x07b, 0x1;
        qpts_trust_both, set_qpts_trust_both: u32 @ 0x07f, 0x1;
    }
}

impl QetcReg {
    /// The configuration of traffic class `i`, `None` past [`MAX_NUM_TC`].
    pub fn tc(&self, i: usize) -> Option<&EtsTcnConfigReg> {
        let n = EtsTcnConfigReg::SIZE;
        (i < MAX_NUM_TC).then(|| nested(&self.tc_configuration()[i * n..(i + 1) * n]))
    }

    /// Mutable twin of [`QetcReg::tc`].
    pub fn tc_mut(&mut self, i: usize) -> Option<&mut EtsTcnConfigReg> {
        let n = EtsTcnConfigReg::SIZE;
        (i < MAX_NUM_TC).then(|| nested_mut(&mut self.tc_configuration_mut()[i * n..(i + 1) * n]))
    }
}

impl QpdpmReg {
    /// The entry of DSCP `d`, `None` past [`NUM_DSCP`].
    pub fn dscp_entry(&self, d: usize) -> Option<&QpdpmDscpReg> {
        let n = QpdpmDscpReg::SIZE;
        (d < NUM_DSCP).then(|| nested(&self.dscp()[d * n..(d + 1) * n]))
    }

    /// Mutable twin of [`QpdpmReg::dscp_entry`].
    pub fn dscp_entry_mut(&mut self, d: usize) -> Option<&mut QpdpmDscpReg> {
        let n = QpdpmDscpReg::SIZE;
        (d < NUM_DSCP).then(|| nested_mut(&mut self.dscp_mut()[d * n..(d + 1) * n]))
    }
}

impl QcamReg {
    /// `qos_access_reg_cap_mask` as group [`QCAM_REGS_FIRST_128`]'s mask.
    pub fn access_regs(&self) -> &QcamAccessRegCapMask {
        nested(self.qos_access_reg_cap_mask())
    }

    /// Mutable twin of [`QcamReg::access_regs`].
    pub fn access_regs_mut(&mut self) -> &mut QcamAccessRegCapMask {
        nested_mut(self.qos_access_reg_cap_mask_mut())
    }

    /// `qos_feature_cap_mask` as the [`QCAM_FEATURE_ENHANCED_FEATURES`] mask.
    pub fn features(&self) -> &QcamQosFeatureCapMask {
        nested(self.qos_feature_cap_mask())
    }

    /// Mutable twin of [`QcamReg::features`].
    pub fn features_mut(&mut self) -> &mut QcamQosFeatureCapMask {
        nested_mut(self.qos_feature_cap_mask_mut())
    }
}

/// QPTS `trust_state`s (`MLX5_QPTS_TRUST_*`, driver.h).
pub mod trust_state {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_QPTS_TRUST_", trust_state_name;
        /// Classify by the VLAN PCP (untagged: priority 0).
        PCP = 1, "PCP";
        /// Classify IP packets by DSCP through QPDPM.
        DSCP = 2, "DSCP";
    }
}

/// `max_bw_units` of [`EtsTcnConfigReg`] / [`EtsGlobalConfigReg`] (device.h).
pub mod max_bw_units {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_", max_bw_units_name;
        /// No rate limit.
        BW_NO_LIMIT = 0, "BW_NO_LIMIT";
        /// `max_bw_value` in units of 100 Mb/s.
        MBPS_100 = 3, "100_MBPS_UNIT";
        /// `max_bw_value` in Gb/s.
        GBPS = 4, "GBPS_UNIT";
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    // qtct_reg: port_number byte 1, prio the low 3 bits of dword 0, tclass of dword 1.
    #[test]
    fn qtct_places_prio_and_tclass() {
        let mut r = QtctReg::new();
        r.set_port_number(1);
        r.set_prio(5);
        r.set_tclass(3);
        assert_eq!(r.as_bytes(), &[0, 1, 0, 5, 0, 0, 0, 3]);
    }

    // qetc_reg: tc_configuration[i] at byte 8 + 8 i, global configuration at byte 0x48.
    #[test]
    fn qetc_tc_elements_are_eight_bytes_from_byte_8() {
        let mut r = QetcReg::new();
        let t = r.tc_mut(2).expect("tc 2 exists");
        t.set_g(1);
        t.set_b(1);
        t.set_group(7);
        t.set_bw_allocation(100);
        t.set_max_bw_units(max_bw_units::GBPS.into());
        t.set_max_bw_value(0x1234);
        assert_eq!(&r.0[0x18..0x20], &[0xc0, 0x07, 0x00, 100, 0, 4, 0x12, 0x34]);
        assert!(r.tc(MAX_NUM_TC).is_none());
        assert_eq!(r.tc(2).unwrap().bw_allocation(), 100);
        r.global_configuration_mut().set_max_bw_value(9);
        assert_eq!(r.0[0x4f], 9);
        assert_eq!(r.as_bytes().iter().filter(|b| **b != 0).count(), 7);
    }

    // qpdpm_reg: dscp[d] is 16 bits from byte 4 + 2 d; e is its top bit, prio its low nibble.
    #[test]
    fn qpdpm_dscp_entries_are_two_bytes_from_byte_4() {
        let mut r = QpdpmReg::new();
        let e = r.dscp_entry_mut(63).expect("dscp 63 exists");
        e.set_e(1);
        e.set_prio(6);
        assert_eq!(&r.0[0x82..0x84], &[0x80, 0x06]);
        assert!(r.dscp_entry(NUM_DSCP).is_none());
        assert_eq!(r.dscp_entry(63).unwrap().prio(), 6);
    }

    // qcam_reg: the register mask at byte 8, the feature mask at byte 0x28.
    #[test]
    fn qcam_views_share_the_union_bytes() {
        let mut r = QcamReg::new();
        r.access_regs_mut().set_qpts(1);
        r.access_regs_mut().set_qpdpm(1);
        r.features_mut().set_qpts_trust_both(1);
        // qpts: register 0x4002, bit 127 - 2; qpdpm: 0x4013, bit 127 - 19.
        assert_eq!(r.0[8 + 15], 0x04);
        assert_eq!(r.0[8 + 13], 0x08);
        assert_eq!(r.0[0x28 + 15], 0x01);
        assert_eq!(r.as_bytes().iter().filter(|b| **b != 0).count(), 3);
    }
}
