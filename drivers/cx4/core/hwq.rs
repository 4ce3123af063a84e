// SPDX-License-Identifier: GPL-2.0
//! SQ and RQ objects of the card, whoever owns their rings (upstream core/transobj.c
//! `mlx5_core_create_sq`/`_rq`, `mlx5_core_modify_sq`/`_rq`, `mlx5_core_query_sq`/`_rq`,
//! `mlx5_core_destroy_sq`/`_rq`): the netdev's rings in kernel memory (en/sq.rs, en/rq.rs),
//! and a process's raw packet QPs and WQs (ib/rawqp.rs, ib/wq.rs). The owner fills the
//! CREATE input (its ring, doorbell record, CQ); the handle made from it changes the queue's
//! state, queries it, and destroys it when dropped, so no path can leave one on the card.

use cx4_hw::{
    command,
    wq::{
        MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID,
        MODIFY_RQ_BITMASK_VSD, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev,
    msg::Msg, //
};

/// An SQ of the card. Dropping it destroys it.
pub(crate) struct HwSq {
    mdev: Arc<Mdev>,
    sqn: u32,
}

impl HwSq {
    /// Creates the SQ that `m` describes (`CREATE_SQ`).
    pub(crate) fn create(mdev: &Arc<Mdev>, m: &Msg<cx4_hw::wq::CreateSqIn>) -> Result<Self> {
        let out = mdev.cmdq.exec::<command::CreateSq>(m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            sqn: out.sqn(),
        })
    }

    /// The SQ number.
    pub(crate) fn sqn(&self) -> u32 {
        self.sqn
    }

    /// Moves the SQ from state `from` to `to` (`sqc_state`, `MODIFY_SQ`).
    pub(crate) fn modify(&self, from: u8, to: u8) -> Result {
        let mut m = input::<command::ModifySq>(0)?;
        m.set_sq_state(from.into());
        m.set_sqn(self.sqn);
        m.ctx_mut().set_state(to.into());
        self.mdev.cmdq.exec::<command::ModifySq>(&m, 0).map(|_| ())
    }

    /// The SQ's state as the device sees it (`sqc_state`, `QUERY_SQ`).
    pub(crate) fn query_state(&self) -> Result<u8> {
        let mut m = input::<command::QuerySq>(0)?;
        m.set_sqn(self.sqn);
        let out = self.mdev.cmdq.exec::<command::QuerySq>(&m, 0)?;
        Ok(out.sq_context().state() as u8)
    }
}

impl Drop for HwSq {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroySq>(0) {
            m.set_sqn(self.sqn);
            let _ = self.mdev.cmdq.exec::<command::DestroySq>(&m, 0);
        }
    }
}

/// What a `MODIFY_RQ` changes besides the state (its `modify_bitmask`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RqChange {
    /// VLAN stripping off (`vsd`) or on.
    pub(crate) vsd: Option<bool>,
    /// The queue counter the RQ counts in.
    pub(crate) counter: Option<u8>,
}

/// An RQ of the card. Dropping it destroys it.
pub(crate) struct HwRq {
    mdev: Arc<Mdev>,
    rqn: u32,
}

impl HwRq {
    /// Creates the RQ that `m` describes (`CREATE_RQ`).
    pub(crate) fn create(mdev: &Arc<Mdev>, m: &Msg<cx4_hw::wq::CreateRqIn>) -> Result<Self> {
        let out = mdev.cmdq.exec::<command::CreateRq>(m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            rqn: out.rqn(),
        })
    }

    /// The RQ number.
    pub(crate) fn rqn(&self) -> u32 {
        self.rqn
    }

    /// Moves the RQ from state `from` to `to` (`rqc_state`, `MODIFY_RQ`), changing what
    /// `ch` names on the way.
    pub(crate) fn modify(&self, from: u8, to: u8, ch: RqChange) -> Result {
        let mut m = input::<command::ModifyRq>(0)?;
        m.set_rq_state(from.into());
        m.set_rqn(self.rqn);
        let mut bitmask = 0;
        if let Some(vsd) = ch.vsd {
            bitmask |= MODIFY_RQ_BITMASK_VSD;
            m.ctx_mut().set_vsd(vsd.into());
        }
        if let Some(c) = ch.counter {
            bitmask |= MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID;
            m.ctx_mut().set_counter_set_id(c.into());
        }
        if bitmask != 0 {
            m.set_modify_bitmask(bitmask);
        }
        m.ctx_mut().set_state(to.into());
        self.mdev.cmdq.exec::<command::ModifyRq>(&m, 0).map(|_| ())
    }

    /// The RQ's state as the device sees it (`rqc_state`, `QUERY_RQ`).
    pub(crate) fn query_state(&self) -> Result<u8> {
        let mut m = input::<command::QueryRq>(0)?;
        m.set_rqn(self.rqn);
        let out = self.mdev.cmdq.exec::<command::QueryRq>(&m, 0)?;
        Ok(out.rq_context().state() as u8)
    }
}

impl Drop for HwRq {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyRq>(0) {
            m.set_rqn(self.rqn);
            let _ = self.mdev.cmdq.exec::<command::DestroyRq>(&m, 0);
        }
    }
}
