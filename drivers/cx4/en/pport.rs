// SPDX-License-Identifier: GPL-2.0
//! The port's counters in `ethtool -S` (en_stats.c, the `pport` groups): the IEEE 802.3,
//! RFC 2863 and RFC 2819 groups and the per-priority group of PPCNT, read from the device at
//! each query. Names and fields are the schema's ([`cx4_hw::counters::pport`]).

use cx4_hw::{
    counters::{
        counter64,
        pport,
        Eth8023CntrsGrpDataLayout, //
    },
    regs::{
        id,
        ppcnt_grp,
        PpcntReg, //
    },
};
use kernel::{
    prelude::*,
    str::CString, //
};

use crate::{
    en::port::{
        access_reg,
        LOCAL_PORT, //
    },
    mdev::Mdev,
};

/// How many port counters there are.
pub(crate) fn count() -> usize {
    pport::count()
}

/// Calls `f` with each counter's name, in [`read`] order.
pub(crate) fn for_each_name(mut f: impl FnMut(&CStr)) {
    for g in pport::GROUPS {
        for &(name, _) in g.counters {
            if let Ok(c) = CString::try_from_fmt(fmt!("{}", name)) {
                f(&c);
            }
        }
    }
    for prio in 0..pport::PRIOS {
        for &(dir, suffix, _) in pport::PER_PRIO {
            if let Ok(c) = CString::try_from_fmt(fmt!("{}_prio{}_{}", dir, prio, suffix)) {
                f(&c);
            }
        }
    }
}

/// Reads one PPCNT group (`prio` for the per-priority group).
fn query(mdev: &Mdev, grp: u8, prio: u8) -> Result<PpcntReg> {
    let mut r = PpcntReg::new();
    r.set_local_port(LOCAL_PORT);
    r.set_grp(grp.into());
    r.set_prio_tc(prio.into());
    access_reg(mdev, id::PPCNT, &r, false)
}

/// Fills `out` (at most [`count`] values, in [`for_each_name`] order) from the device. A
/// group the device does not answer leaves its counters at 0 and the error is returned after
/// the other groups were read.
pub(crate) fn read(mdev: &Mdev, out: &mut [u64]) -> Result {
    let mut w = out.iter_mut();
    let mut res = Ok(());
    for g in pport::GROUPS {
        let reg = query(mdev, g.grp, 0);
        if let Err(e) = &reg {
            res = Err(*e);
        }
        for &(_, field) in g.counters {
            let v = reg
                .as_ref()
                .ok()
                .and_then(|r| counter64(r.counter_set(), g.fields, field));
            if let Some(o) = w.next() {
                *o = v.unwrap_or(0);
            }
        }
    }
    for prio in 0..pport::PRIOS {
        let reg = query(mdev, pport::PER_PRIO_GRP, prio);
        if let Err(e) = &reg {
            res = Err(*e);
        }
        for &(_, _, field) in pport::PER_PRIO {
            let v = reg
                .as_ref()
                .ok()
                .and_then(|r| counter64(r.counter_set(), pport::PER_PRIO_FIELDS, field));
            if let Some(o) = w.next() {
                *o = v.unwrap_or(0);
            }
        }
    }
    res
}

/// 802.3x pause frames sent and received, from the IEEE 802.3 group (en_stats.c
/// `mlx5e_stats_pause_get`).
pub(crate) fn global_pause(mdev: &Mdev) -> Result<(u64, u64)> {
    let reg = query(mdev, ppcnt_grp::IEEE_802_3, 0)?;
    let get = |f| counter64(reg.counter_set(), Eth8023CntrsGrpDataLayout::FIELDS, f).ok_or(EIO);
    Ok((
        get("a_pause_mac_ctrl_frames_transmitted")?,
        get("a_pause_mac_ctrl_frames_received")?,
    ))
}

/// PFC frames per priority: sent (`tx_pause`, the ieee_pfc `requests`) and received
/// (`rx_pause`, `indications`), from the per-priority group (en_dcbnl.c
/// `mlx5e_dcbnl_ieee_getpfc`).
pub(crate) fn prio_pause(mdev: &Mdev) -> Result<([u64; 8], [u64; 8])> {
    let (mut tx, mut rx) = ([0u64; 8], [0u64; 8]);
    for ((prio, t), r) in (0..pport::PRIOS).zip(tx.iter_mut()).zip(rx.iter_mut()) {
        let reg = query(mdev, pport::PER_PRIO_GRP, prio)?;
        let get = |f| counter64(reg.counter_set(), pport::PER_PRIO_FIELDS, f).unwrap_or(0);
        *t = get("tx_pause");
        *r = get("rx_pause");
    }
    Ok((tx, rx))
}
