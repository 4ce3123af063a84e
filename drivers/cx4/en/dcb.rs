// SPDX-License-Identifier: GPL-2.0
//! Data center bridging (en_dcbnl.c): iproute2's `dcb ets/maxrate/pfc/app/dcbx` on the
//! port's QoS registers ([`qos`]), the IEEE 802.1Qaz operations only, host managed (no
//! firmware DCBX agent).
//!
//! - ETS: priorities to traffic classes (QTCT), and per class an algorithm expressed, as
//!   mlx5e does, through QETCR groups: ETS classes share group 0 (or 1, when some ETS class
//!   has 0 %: those go to group 0 and split it), strict classes get the groups above, in
//!   class order, the vendor algorithm group 7 with 100 %. The device keeps groups, not
//!   algorithms, so the algorithms last set are kept here and reconciled on read.
//! - PFC: PFCC's per-priority masks (send and honour alike); a change bounces the link so
//!   the partner sees it; the per-priority PFC frame counters come from PPCNT.
//! - APP: DSCP entries only. The first one switches the port to trust DSCP (QPTS), each maps
//!   its DSCP to its priority (QPDPM), removing the last one goes back to trust PCP. While
//!   the port trusts DSCP, send WQEs carry the IP header inline (the minimum inline mode is
//!   raised from L2 to IP), so the channels are rebuilt when that changes.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        ArcBorrow,
        Mutex, //
    },
};
use netdev::{
    dcbnl::{
        dcbx,
        App,
        DcbnlOps,
        Ets,
        MaxRate,
        Pfc,
        Selector,
        Tsa, //
    },
    Device,
};

use cx4_hw::{
    qos::NUM_DSCP,
    wq::inline_mode, //
};

use crate::{
    en::{
        ethtool::eopnotsupp,
        netdev::EnPriv,
        port,
        pport, //
        qos::{
            self,
            PfcMasks,
            QosCaps,
            Trust,
            NUM_PRIO, //
        },
    },
    mdev::Mdev,
};

/// Bandwidth shares are percent (en_dcbnl.c `MLX5E_MAX_BW_ALLOC`).
const MAX_BW: u8 = 100;
/// The ETS group of ETS classes (`MLX5E_LOWEST_PRIO_GROUP`).
const LOWEST_GROUP: u8 = 0;
/// The ETS group of vendor classes (`MLX5E_VENDOR_TC_GROUP_NUM`).
const VENDOR_GROUP: u8 = 7;
/// What `dcb dcbx show` reports: host managed, IEEE.
const DCBX_MODE: u8 = dcbx::HOST | dcbx::VER_IEEE;

/// The DCB state of the netdev the device does not keep, under [`EnPriv::dcb`].
pub(crate) struct DcbState {
    /// The algorithm each traffic class was last given.
    tc_tsa: [Tsa; NUM_PRIO],
    /// DSCP APP entries in the core's table.
    dscp_apps: u32,
    /// The device's DSCP to priority map, as last read or written.
    dscp2prio: [u8; NUM_DSCP],
    /// The port's trust state.
    trust: Trust,
}

impl DcbState {
    /// Reads the trust state and the DSCP map from the device, as mlx5e's
    /// `mlx5e_trust_initialize` does; a device without DSCP trust (or that does not answer)
    /// trusts PCP.
    pub(crate) fn query(mdev: &Mdev, caps: &QosCaps) -> Self {
        let mut s = Self {
            tc_tsa: [Tsa::Strict; NUM_PRIO],
            dscp_apps: 0,
            dscp2prio: [0; NUM_DSCP],
            trust: Trust::Pcp,
        };
        if caps.dscp {
            if let (Ok(t), Ok(m)) = (qos::query_trust(mdev), qos::query_dscp2prio(mdev)) {
                s.trust = t;
                s.dscp2prio = m;
            }
        }
        s
    }

    /// The port's trust state.
    pub(crate) fn trust(&self) -> Trust {
        self.trust
    }

    /// A lock around a state.
    pub(crate) fn new_lock(self) -> impl PinInit<Mutex<Self>> {
        new_mutex!(self, "cx4::en_dcb")
    }
}

/// The minimum inline mode of SQs under trust state `t`, for a device minimum of `dev`
/// (en_dcbnl.c `mlx5e_params_calc_trust_tx_min_inline_mode`).
pub(crate) fn min_inline_for(t: Trust, dev: u8) -> u8 {
    if t == Trust::Dscp && dev == inline_mode::L2 {
        inline_mode::IP
    } else {
        dev
    }
}

/// The ETS groups of an ETS configuration's first `n` classes (`mlx5e_build_tc_group`).
fn build_tc_group(ets: &Ets, n: usize) -> [u8; NUM_PRIO] {
    let classes = || ets.tc_tsa.iter().zip(ets.tc_tx_bw.iter()).take(n);
    let any_ets = classes().any(|(t, _)| *t == Tsa::Ets);
    let zero_bw = classes().any(|(t, bw)| *t == Tsa::Ets && *bw == 0);
    // Strict classes rank above the ETS group(s).
    let mut strict = LOWEST_GROUP + u8::from(any_ets) + u8::from(zero_bw);
    let mut g = [LOWEST_GROUP; NUM_PRIO];
    for (g, (t, bw)) in g.iter_mut().zip(classes()) {
        *g = match t {
            Tsa::Vendor => VENDOR_GROUP,
            Tsa::Strict | Tsa::Cbs => {
                let g = strict;
                strict = strict.saturating_add(1);
                g
            }
            Tsa::Ets if *bw != 0 && zero_bw => LOWEST_GROUP + 1,
            Tsa::Ets => LOWEST_GROUP,
        };
    }
    g
}

/// The bandwidth shares of an ETS configuration's first `n` classes
/// (`mlx5e_build_tc_tx_bw`): strict and vendor classes 100 %, ETS classes theirs, the
/// 0 % ETS classes an equal split of their group (the remainder to the last).
fn build_tc_bw(ets: &Ets, n: usize) -> [u8; NUM_PRIO] {
    let classes = || ets.tc_tsa.iter().zip(ets.tc_tx_bw.iter()).take(n);
    let zero: u8 = classes()
        .filter(|(t, bw)| **t == Tsa::Ets && **bw == 0)
        .count() as u8;
    let last_zero = classes()
        .enumerate()
        .filter(|(_, (t, bw))| **t == Tsa::Ets && **bw == 0)
        .map(|(i, _)| i)
        .next_back();
    let share = MAX_BW.checked_div(zero).unwrap_or(0);
    let mut out = [0u8; NUM_PRIO];
    for (o, (t, bw)) in out.iter_mut().zip(classes()) {
        *o = match t {
            Tsa::Ets if *bw != 0 => *bw,
            Tsa::Ets => share,
            _ => MAX_BW,
        };
    }
    if let Some(o) = last_zero.and_then(|i| out.get_mut(i)) {
        *o = o.saturating_add(MAX_BW.checked_rem(zero).unwrap_or(0));
    }
    out
}

/// Checks an ETS request as mlx5e does (`mlx5e_dbcnl_validate_ets`): priorities map to one
/// of the 8 classes, no credit-based shaper, the ETS classes' shares add up to 100 %.
fn validate_ets(ets: &Ets) -> Result {
    if ets.prio_tc.iter().any(|&tc| usize::from(tc) >= NUM_PRIO) {
        return Err(EINVAL);
    }
    if ets.tc_tsa.contains(&Tsa::Cbs) {
        return Err(eopnotsupp());
    }
    let mut ets_classes = ets
        .tc_tsa
        .iter()
        .zip(ets.tc_tx_bw.iter())
        .filter(|(t, _)| **t == Tsa::Ets)
        .peekable();
    if ets_classes.peek().is_some() {
        let sum: u32 = ets_classes.map(|(_, bw)| u32::from(*bw)).sum();
        if sum != u32::from(MAX_BW) {
            return Err(EINVAL);
        }
    }
    Ok(())
}

/// Programs an ETS configuration (`mlx5e_dcbnl_ieee_setets_core`) and records its
/// algorithms.
fn set_ets(mdev: &Mdev, caps: &QosCaps, st: &mut DcbState, ets: &Ets) -> Result {
    let n = usize::from(caps.num_tc);
    qos::set_prio_tc(mdev, caps, &ets.prio_tc)?;
    qos::set_tc_group(mdev, caps, &build_tc_group(ets, n))?;
    qos::set_tc_bw(mdev, caps, &build_tc_bw(ets, n))?;
    st.tc_tsa = ets.tc_tsa;
    Ok(())
}

/// The ETS configuration the netdev starts with (`mlx5e_ets_init`): every class vendor at
/// 100 %, priority `i` in class `i` but priorities 0 and 1 swapped (class 0 is the lowest).
pub(crate) fn init_ets(mdev: &Mdev, caps: &QosCaps, st: &mut DcbState) -> Result {
    if !caps.ets {
        return Ok(());
    }
    let n = usize::from(caps.num_tc);
    let mut ets = Ets {
        ets_cap: caps.num_tc,
        ..Ets::default()
    };
    for (i, ((bw, tsa), prio_tc)) in ets
        .tc_tx_bw
        .iter_mut()
        .zip(ets.tc_tsa.iter_mut())
        .zip(ets.prio_tc.iter_mut())
        .enumerate()
        .take(n)
    {
        *bw = MAX_BW;
        *tsa = Tsa::Vendor;
        *prio_tc = i as u8;
    }
    if n > 1 {
        ets.prio_tc.swap(0, 1);
    }
    set_ets(mdev, caps, st, &ets)
}

/// The dcbnl operations of the netdev.
pub(crate) struct EnDcb;

impl EnDcb {
    /// Switches the port's trust state, and the SQs' minimum inline mode with it (rebuilding
    /// the channels if that changes; en_dcbnl.c `mlx5e_set_trust_state`).
    fn set_trust(data: ArcBorrow<'_, EnPriv>, dev: &Device, st: &mut DcbState, t: Trust) -> Result {
        let mdev = data.mdev();
        qos::set_trust(mdev, t)?;
        st.trust = t;
        let want = min_inline_for(t, data.device_min_inline());
        if data.params()?.min_inline != want {
            EnPriv::reconfigure(data, dev, |p| {
                p.min_inline = want;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// The DSCP of a DSCP APP entry; `EOPNOTSUPP` without DSCP trust, `EINVAL` for another
    /// selector (en_dcbnl.c: only DSCP entries reach the device).
    fn dscp_of(data: &EnPriv, app: &App) -> Result<usize> {
        if !data.qos().dscp {
            return Err(eopnotsupp());
        }
        let d = usize::from(app.protocol);
        if app.selector != Selector::Dscp || d >= NUM_DSCP || usize::from(app.priority) >= NUM_PRIO
        {
            return Err(EINVAL);
        }
        Ok(d)
    }
}

#[vtable]
impl DcbnlOps for EnDcb {
    type Data = kernel::sync::Arc<EnPriv>;

    fn ieee_getets(_dev: &Device, data: ArcBorrow<'_, EnPriv>, ets: &mut Ets) -> Result {
        let caps = data.qos();
        if !caps.ets {
            return Err(eopnotsupp());
        }
        let mdev = data.mdev();
        let mut st = data.dcb().lock();
        ets.prio_tc = qos::query_prio_tc(mdev)?;
        ets.ets_cap = caps.num_tc;
        let n = usize::from(caps.num_tc);
        let hw = qos::query_ets(mdev)?;
        let group = |i: usize| hw.get(i).map_or(LOWEST_GROUP, |t| t.group);
        let mut zero_bw_ets = false;
        let mut group6 = false;
        for (i, (bw, t)) in ets.tc_tx_bw.iter_mut().zip(hw.iter()).enumerate().take(n) {
            *bw = t.bw;
            if st.tc_tsa.get(i) == Some(&Tsa::Ets) && t.group == LOWEST_GROUP + 1 {
                zero_bw_ets = true;
            }
            group6 |= t.group == VENDOR_GROUP - 1;
        }
        // The ETS classes of group 0 were given 0 %.
        if zero_bw_ets {
            for (i, bw) in ets.tc_tx_bw.iter_mut().enumerate().take(n) {
                if group(i) == LOWEST_GROUP {
                    *bw = 0;
                }
            }
        }
        // What the device has decides where it can tell.
        for (i, (bw, tsa)) in ets
            .tc_tx_bw
            .iter()
            .zip(st.tc_tsa.iter_mut())
            .enumerate()
            .take(n)
        {
            if *bw < MAX_BW {
                *tsa = Tsa::Ets;
            } else if group(i) == VENDOR_GROUP && !group6 {
                *tsa = Tsa::Vendor;
            }
        }
        ets.tc_tsa = st.tc_tsa;
        // Only ETS classes have a share.
        for (bw, tsa) in ets.tc_tx_bw.iter_mut().zip(st.tc_tsa.iter()).take(n) {
            if *bw == MAX_BW && *tsa != Tsa::Ets {
                *bw = 0;
            }
        }
        Ok(())
    }

    fn ieee_setets(_dev: &Device, data: ArcBorrow<'_, EnPriv>, ets: &Ets) -> Result {
        let caps = data.qos();
        if !caps.ets {
            return Err(eopnotsupp());
        }
        validate_ets(ets)?;
        let mut st = data.dcb().lock();
        set_ets(data.mdev(), caps, &mut st, ets)
    }

    fn ieee_getmaxrate(_dev: &Device, data: ArcBorrow<'_, EnPriv>, rate: &mut MaxRate) -> Result {
        let caps = data.qos();
        let hw = qos::query_ets(data.mdev())?;
        for (r, t) in rate
            .tc_maxrate
            .iter_mut()
            .zip(hw.iter())
            .take(caps.num_tc.into())
        {
            *r = qos::units_to_rate(t.max_bw_units, t.max_bw_value);
        }
        Ok(())
    }

    fn ieee_setmaxrate(_dev: &Device, data: ArcBorrow<'_, EnPriv>, rate: &MaxRate) -> Result {
        let caps = data.qos();
        let mut r = [(0u8, 0u16); NUM_PRIO];
        for (r, &kbps) in r
            .iter_mut()
            .zip(rate.tc_maxrate.iter())
            .take(caps.num_tc.into())
        {
            *r = qos::rate_to_units(caps, kbps)?;
        }
        qos::set_rate_limit(data.mdev(), caps, &r)
    }

    fn ieee_getpfc(_dev: &Device, data: ArcBorrow<'_, EnPriv>, pfc: &mut Pfc) -> Result {
        let mdev = data.mdev();
        pfc.pfc_cap = data.qos().num_tc;
        // Counters the device does not answer read as 0; the configuration must be there.
        if let Ok((tx, rx)) = pport::prio_pause(mdev) {
            pfc.requests = tx;
            pfc.indications = rx;
        }
        pfc.pfc_en = qos::query_pfc(mdev)?.tx;
        Ok(())
    }

    fn ieee_setpfc(_dev: &Device, data: ArcBorrow<'_, EnPriv>, pfc: &Pfc) -> Result {
        let mdev = data.mdev();
        let _st = data.dcb().lock();
        if qos::query_pfc(mdev)?.tx != pfc.pfc_en {
            qos::set_pfc(
                mdev,
                PfcMasks {
                    tx: pfc.pfc_en,
                    rx: pfc.pfc_en,
                },
            )?;
            port::toggle_link(mdev)?;
        }
        Ok(())
    }

    fn ieee_setapp(dev: &Device, data: ArcBorrow<'_, EnPriv>, app: &App) -> Result {
        let d = EnDcb::dscp_of(&data, app)?;
        let mut st = data.dcb().lock();
        let old = App::dscp(d as u8, st.dscp2prio.get(d).copied().unwrap_or(0));
        let first = st.dscp_apps == 0;
        if first {
            EnDcb::set_trust(data, dev, &mut st, Trust::Dscp)?;
        }
        if old.priority != app.priority {
            if let Err(e) = qos::set_dscp2prio(data.mdev(), d as u8, app.priority) {
                if first {
                    let _ = EnDcb::set_trust(data, dev, &mut st, Trust::Pcp);
                }
                return Err(e);
            }
            if let Some(p) = st.dscp2prio.get_mut(d) {
                *p = app.priority;
            }
        }
        // The core keeps one entry per DSCP: replace the one this overrides.
        let is_new = dev.dcb_ieee_delapp(&old).is_err();
        dev.dcb_ieee_setapp(app)?;
        if is_new {
            st.dscp_apps = st.dscp_apps.saturating_add(1);
        }
        Ok(())
    }

    fn ieee_delapp(dev: &Device, data: ArcBorrow<'_, EnPriv>, app: &App) -> Result {
        let d = EnDcb::dscp_of(&data, app)?;
        let mut st = data.dcb().lock();
        if st.dscp_apps == 0 || st.dscp2prio.get(d) != Some(&app.priority) {
            return Err(ENOENT);
        }
        dev.dcb_ieee_delapp(app)?;
        if let Err(e) = qos::set_dscp2prio(data.mdev(), d as u8, 0) {
            let _ = EnDcb::set_trust(data, dev, &mut st, Trust::Pcp);
            return Err(e);
        }
        if let Some(p) = st.dscp2prio.get_mut(d) {
            *p = 0;
        }
        st.dscp_apps = st.dscp_apps.saturating_sub(1);
        if st.dscp_apps == 0 {
            EnDcb::set_trust(data, dev, &mut st, Trust::Pcp)?;
        }
        Ok(())
    }

    fn getdcbx(_dev: &Device, _data: ArcBorrow<'_, EnPriv>) -> u8 {
        DCBX_MODE
    }

    fn setdcbx(_dev: &Device, _data: ArcBorrow<'_, EnPriv>, mode: u8) -> u8 {
        // Host managed IEEE is all there is: no firmware agent (LLD managed, or 0), no CEE.
        u8::from(mode != DCBX_MODE)
    }
}
