// SPDX-License-Identifier: GPL-2.0
//! XRC domains (mlx5_ib qp.c `mlx5_ib_alloc_xrcd`, `ALLOC_XRCD`): the card's domain number,
//! which the domain's XRC SRQs and XRC target QPs carry in their contexts; the card delivers
//! a message to a target QP only into an XRC SRQ of the same domain.
//!
//! A target QP has no PD of its own (the core creates it without one; receive buffers are
//! checked in the XRC SRQ's PD), but the card's QP context names one: mlx5_ib gives every
//! target QP its device-wide internal PD (`devr->p0`); here the domain allocates one for its
//! target QPs.

use cx4_hw::command;
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev,
    pd::Pd, //
};

/// An XRC domain. Dropping it deallocates it (the core does so only when no QP or SRQ uses
/// it), then its target QPs' PD.
pub(crate) struct IbXrcd {
    mdev: Arc<Mdev>,
    xrcdn: u32,
    pd: Pd,
}

impl IbXrcd {
    /// `ALLOC_XRCD`, and the PD its target QPs name.
    pub(crate) fn alloc(mdev: &Arc<Mdev>) -> Result<Self> {
        let pd = Pd::alloc(mdev)?;
        let m = input::<command::AllocXrcd>(0)?;
        let out = mdev.cmdq.exec::<command::AllocXrcd>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            xrcdn: out.xrcd(),
            pd,
        })
    }

    /// The domain number.
    pub(crate) fn xrcdn(&self) -> u32 {
        self.xrcdn
    }

    /// The PD number the domain's target QPs name.
    pub(crate) fn tgt_pdn(&self) -> u32 {
        self.pd.pdn()
    }
}

impl Drop for IbXrcd {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DeallocXrcd>(0) {
            m.set_xrcd(self.xrcdn);
            if let Err(e) = self.mdev.cmdq.exec::<command::DeallocXrcd>(&m, 0) {
                dev_warn!(
                    self.mdev.dev.dev(),
                    "DEALLOC_XRCD {:#x}: {:?}\n",
                    self.xrcdn,
                    e
                );
            }
        }
    }
}
