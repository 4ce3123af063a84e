// SPDX-License-Identifier: GPL-2.0
//! The port's QoS registers (port.c): priority to traffic class (QTCT), ETS groups, shares
//! and rate limits per traffic class (QETCR), trust state (QPTS), DSCP to priority (QPDPM),
//! priority flow control (PFCC per priority), and what of it the device implements
//! (`cmd_hca_cap.qos`/`ets`/`max_tc`, QCAM).

use cx4_hw::{
    counters::PfccReg,
    qos::{
        max_bw_units,
        trust_state,
        QcamReg,
        QetcReg,
        QpdpmReg,
        QptsReg,
        QtctReg,
        MAX_NUM_TC,
        NUM_DSCP,
        QCAM_FEATURE_ENHANCED_FEATURES,
        QCAM_REGS_FIRST_128, //
    },
    regs::id,
};
use kernel::prelude::*;

use crate::{
    caps::Caps,
    en::port::{
        access_reg,
        LOCAL_PORT, //
    },
    mdev::Mdev,
};

/// Priorities (802.1p) and, at most, traffic classes.
pub(crate) const NUM_PRIO: usize = MAX_NUM_TC;

/// What of QoS the device implements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct QosCaps {
    /// `cmd_hca_cap.qos` and `vport_group_manager`: the function may configure the port's
    /// QoS (en_dcbnl.c `mlx5e_dcbnl_build_netdev`).
    pub(crate) qos: bool,
    /// `cmd_hca_cap.ets`: QTCT and QETCR.
    pub(crate) ets: bool,
    /// Traffic classes (`mlx5_max_tc() + 1`: `max_tc`, 8 when 0).
    pub(crate) num_tc: u8,
    /// QPTS and QPDPM (QCAM): DSCP trust (`MLX5_DSCP_SUPPORTED`).
    pub(crate) dscp: bool,
    /// QETCR rate limits take 16-bit values (QCAM `qetcr_qshr_max_bw_val_msb`), else 8.
    pub(crate) max_bw_16: bool,
}

impl QosCaps {
    /// Reads the capabilities, QCAM included when the device has it (fw.c
    /// `mlx5_get_qcam_reg`); a QCAM the device does not answer means no DSCP trust.
    pub(crate) fn query(mdev: &Mdev, caps: &Caps) -> Self {
        let gen = caps.gen();
        let max_tc = gen.max_tc() as u8;
        let mut c = Self {
            qos: gen.qos() != 0 && gen.vport_group_manager() != 0,
            ets: gen.ets() != 0,
            num_tc: if max_tc == 0 {
                NUM_PRIO as u8
            } else {
                max_tc.min(NUM_PRIO as u8)
            },
            dscp: false,
            max_bw_16: false,
        };
        if gen.qcam_reg() != 0 {
            let mut q = QcamReg::new();
            q.set_feature_group(QCAM_FEATURE_ENHANCED_FEATURES.into());
            q.set_access_reg_group(QCAM_REGS_FIRST_128.into());
            if let Ok(r) = access_reg(mdev, id::QCAM, &q, false) {
                c.dscp = r.access_regs().qpts() != 0 && r.access_regs().qpdpm() != 0;
                c.max_bw_16 = r.features().qetcr_qshr_max_bw_val_msb() != 0;
            }
        }
        c
    }
}

/// The traffic class of each priority (QTCT, port.c `mlx5_query_port_prio_tc`).
pub(crate) fn query_prio_tc(mdev: &Mdev) -> Result<[u8; NUM_PRIO]> {
    let mut out = [0u8; NUM_PRIO];
    for (prio, tc) in (0u32..).zip(out.iter_mut()) {
        let mut q = QtctReg::new();
        q.set_port_number(LOCAL_PORT);
        q.set_prio(prio);
        *tc = access_reg(mdev, id::QTCT, &q, false)?.tclass() as u8;
    }
    Ok(out)
}

/// Maps each priority to a traffic class (QTCT, `mlx5_set_port_prio_tc`); `EINVAL` for a
/// class the device does not have.
pub(crate) fn set_prio_tc(mdev: &Mdev, caps: &QosCaps, prio_tc: &[u8; NUM_PRIO]) -> Result {
    if prio_tc.iter().any(|&tc| tc >= caps.num_tc) {
        return Err(EINVAL);
    }
    for (prio, &tc) in (0u32..).zip(prio_tc.iter()) {
        let mut q = QtctReg::new();
        q.set_port_number(LOCAL_PORT);
        q.set_prio(prio);
        q.set_tclass(tc.into());
        access_reg(mdev, id::QTCT, &q, true)?;
    }
    Ok(())
}

/// The ETS configuration of one traffic class (an entry of QETCR).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TcEts {
    /// ETS group: 0 the lowest priority group (mlx5e: ETS), 7 vendor.
    pub(crate) group: u8,
    /// Share of the bandwidth within the group, percent.
    pub(crate) bw: u8,
    /// Rate limit unit ([`max_bw_units`]).
    pub(crate) max_bw_units: u8,
    /// Rate limit in `max_bw_units`.
    pub(crate) max_bw_value: u16,
}

/// Reads QETCR (port.c `mlx5_query_port_qetcr_reg`).
pub(crate) fn query_ets(mdev: &Mdev) -> Result<[TcEts; NUM_PRIO]> {
    let mut q = QetcReg::new();
    q.set_port_number(LOCAL_PORT);
    let r = access_reg(mdev, id::QETCR, &q, false)?;
    let mut out = [TcEts::default(); NUM_PRIO];
    for (i, o) in out.iter_mut().enumerate() {
        let t = r.tc(i).ok_or(EIO)?;
        *o = TcEts {
            group: t.group() as u8,
            bw: t.bw_allocation() as u8,
            max_bw_units: t.max_bw_units() as u8,
            max_bw_value: t.max_bw_value() as u16,
        };
    }
    Ok(out)
}

/// Which part of each traffic class's entry a QETCR write sets.
enum EtsPart<'a> {
    /// `g`: the groups.
    Group(&'a [u8; NUM_PRIO]),
    /// `b`: the bandwidth shares.
    Bw(&'a [u8; NUM_PRIO]),
    /// `r`: the rate limits (unit, value).
    Rate(&'a [(u8, u16); NUM_PRIO]),
}

/// Writes one part of QETCR for the device's traffic classes (`mlx5_set_port_tc_group`,
/// `mlx5_set_port_tc_bw_alloc`, `mlx5_modify_port_ets_rate_limit`).
fn set_ets(mdev: &Mdev, caps: &QosCaps, part: EtsPart<'_>) -> Result {
    let mut q = QetcReg::new();
    q.set_port_number(LOCAL_PORT);
    for i in 0..usize::from(caps.num_tc) {
        let t = q.tc_mut(i).ok_or(EINVAL)?;
        match &part {
            EtsPart::Group(g) => {
                t.set_g(1);
                t.set_group((*g.get(i).ok_or(EINVAL)?).into());
            }
            EtsPart::Bw(b) => {
                t.set_b(1);
                t.set_bw_allocation((*b.get(i).ok_or(EINVAL)?).into());
            }
            EtsPart::Rate(r) => {
                let (units, value) = *r.get(i).ok_or(EINVAL)?;
                t.set_r(1);
                t.set_max_bw_units(units.into());
                t.set_max_bw_value(value.into());
            }
        }
    }
    access_reg(mdev, id::QETCR, &q, true).map(|_| ())
}

/// Sets each traffic class's ETS group.
pub(crate) fn set_tc_group(mdev: &Mdev, caps: &QosCaps, group: &[u8; NUM_PRIO]) -> Result {
    set_ets(mdev, caps, EtsPart::Group(group))
}

/// Sets each traffic class's bandwidth share (percent).
pub(crate) fn set_tc_bw(mdev: &Mdev, caps: &QosCaps, bw: &[u8; NUM_PRIO]) -> Result {
    set_ets(mdev, caps, EtsPart::Bw(bw))
}

/// Sets each traffic class's rate limit (`(unit, value)`, [`max_bw_units`]).
pub(crate) fn set_rate_limit(mdev: &Mdev, caps: &QosCaps, r: &[(u8, u16); NUM_PRIO]) -> Result {
    set_ets(mdev, caps, EtsPart::Rate(r))
}

/// kb/s per unit of [`max_bw_units::MBPS_100`] and [`max_bw_units::GBPS`] (en_dcbnl.c
/// `MLX5E_100MB_TO_KB`, `MLX5E_1GB_TO_KB`).
pub(crate) const KBPS_100MB: u64 = 100_000;
/// See [`KBPS_100MB`].
pub(crate) const KBPS_1GB: u64 = 1_000_000;

/// A rate limit in kb/s as QETCR's `(unit, value)` (en_dcbnl.c
/// `mlx5e_dcbnl_ieee_setmaxrate`): 0 is no limit, up to the 100 Mb/s range's top in 100 Mb/s
/// units (rounded down, at least 1), else in Gb/s (rounded down); `EINVAL` past the Gb/s
/// range.
pub(crate) fn rate_to_units(caps: &QosCaps, kbps: u64) -> Result<(u8, u16)> {
    let top = if caps.max_bw_16 {
        u64::from(u16::MAX)
    } else {
        u64::from(u8::MAX)
    };
    if kbps == 0 {
        return Ok((max_bw_units::BW_NO_LIMIT, 0));
    }
    if kbps <= top * KBPS_100MB {
        let v = (kbps / KBPS_100MB).max(1);
        return Ok((max_bw_units::MBPS_100, v as u16));
    }
    if kbps <= top * KBPS_1GB {
        return Ok((max_bw_units::GBPS, (kbps / KBPS_1GB) as u16));
    }
    Err(EINVAL)
}

/// A QETCR rate limit in kb/s (0: none).
pub(crate) fn units_to_rate(units: u8, value: u16) -> u64 {
    match units {
        max_bw_units::MBPS_100 => u64::from(value) * KBPS_100MB,
        max_bw_units::GBPS => u64::from(value) * KBPS_1GB,
        _ => 0,
    }
}

/// Priority flow control of the port: which priorities it pauses and honours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PfcMasks {
    /// Priorities for which the port sends PFC frames (`pfctx`).
    pub(crate) tx: u8,
    /// Priorities whose PFC frames the port honours (`pfcrx`).
    pub(crate) rx: u8,
}

/// Reads PFCC's per-priority flow control (port.c `mlx5_query_port_pfc`).
pub(crate) fn query_pfc(mdev: &Mdev) -> Result<PfcMasks> {
    let mut q = PfccReg::new();
    q.set_local_port(LOCAL_PORT);
    let r = access_reg(mdev, id::PFCC, &q, false)?;
    Ok(PfcMasks {
        tx: r.pfctx() as u8,
        rx: r.pfcrx() as u8,
    })
}

/// Sets PFCC's per-priority flow control for every priority (`mlx5_set_port_pfc`: both
/// priority masks all ones). As there, global pause is written off: the two exclude each
/// other.
pub(crate) fn set_pfc(mdev: &Mdev, m: PfcMasks) -> Result {
    let mut q = PfccReg::new();
    q.set_local_port(LOCAL_PORT);
    q.set_pfctx(m.tx.into());
    q.set_pfcrx(m.rx.into());
    q.set_prio_mask_tx(0xff);
    q.set_prio_mask_rx(0xff);
    access_reg(mdev, id::PFCC, &q, true).map(|_| ())
}

/// How the port classifies received packets into priorities (QPTS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trust {
    /// By the VLAN tag's PCP.
    Pcp,
    /// By the IP header's DSCP, through the DSCP to priority map.
    Dscp,
}

impl Trust {
    fn raw(self) -> u8 {
        match self {
            Self::Pcp => trust_state::PCP,
            Self::Dscp => trust_state::DSCP,
        }
    }
}

/// Reads the trust state (port.c `mlx5_query_trust_state`); `EIO` for a state cx4 does not
/// know.
pub(crate) fn query_trust(mdev: &Mdev) -> Result<Trust> {
    let mut q = QptsReg::new();
    q.set_local_port(LOCAL_PORT);
    match access_reg(mdev, id::QPTS, &q, false)?.trust_state() as u8 {
        trust_state::PCP => Ok(Trust::Pcp),
        trust_state::DSCP => Ok(Trust::Dscp),
        _ => Err(EIO),
    }
}

/// Sets the trust state (`mlx5_set_trust_state`).
pub(crate) fn set_trust(mdev: &Mdev, t: Trust) -> Result {
    let mut q = QptsReg::new();
    q.set_local_port(LOCAL_PORT);
    q.set_trust_state(t.raw().into());
    access_reg(mdev, id::QPTS, &q, true).map(|_| ())
}

/// Reads the priority of every DSCP (port.c `mlx5_query_dscp2prio`).
pub(crate) fn query_dscp2prio(mdev: &Mdev) -> Result<[u8; NUM_DSCP]> {
    let mut q = QpdpmReg::new();
    q.set_local_port(LOCAL_PORT);
    let r = access_reg(mdev, id::QPDPM, &q, false)?;
    let mut out = [0u8; NUM_DSCP];
    for (d, o) in out.iter_mut().enumerate() {
        *o = r.dscp_entry(d).ok_or(EIO)?.prio() as u8;
    }
    Ok(out)
}

/// Maps DSCP `dscp` to priority `prio` (`mlx5_set_dscp2prio`: read, change the one entry
/// with its write enable, write back).
pub(crate) fn set_dscp2prio(mdev: &Mdev, dscp: u8, prio: u8) -> Result {
    if usize::from(dscp) >= NUM_DSCP || usize::from(prio) >= NUM_PRIO {
        return Err(EINVAL);
    }
    let mut q = QpdpmReg::new();
    q.set_local_port(LOCAL_PORT);
    let e = q.dscp_entry_mut(dscp.into()).ok_or(EINVAL)?;
    e.set_e(1);
    e.set_prio(prio.into());
    access_reg(mdev, id::QPDPM, &q, true).map(|_| ())
}
