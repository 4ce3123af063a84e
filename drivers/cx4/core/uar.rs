// SPDX-License-Identifier: GPL-2.0
//! User access regions (core/uar.c): the driver's UAR page and the EQ / CQ doorbells written
//! into it.

use cx4_hw::{
    command,
    uar::{
        CqArmDoorbell,
        EqDoorbell,
        CQ_DOORBELL,
        EQ_DOORBELL_UPDATE,
        EQ_DOORBELL_UPDATE_ARM, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::{
        input,
        Cmdq, //
    },
    iseg::Bar0,
    mdev::Mdev, //
};

/// A UAR page allocated with `ALLOC_UAR`. Free it with [`Uar::free`] (the destructor cannot
/// issue commands).
pub(crate) struct Uar {
    index: u32,
}

impl Uar {
    /// Allocates a UAR page.
    pub(crate) fn alloc(cmdq: &Cmdq) -> Result<Self> {
        let m = input::<command::AllocUar>(0)?;
        let out = cmdq.exec::<command::AllocUar>(&m, 0)?;
        Ok(Self { index: out.uar() })
    }

    /// Returns the page to the device.
    pub(crate) fn free(self, cmdq: &Cmdq) -> Result {
        let mut m = input::<command::DeallocUar>(0)?;
        m.set_uar(self.index);
        cmdq.exec::<command::DeallocUar>(&m, 0).map(|_| ())
    }

    /// The page index (BAR0 offset / 4 KiB).
    pub(crate) fn index(&self) -> u32 {
        self.index
    }
}

/// Rings an EQ doorbell on UAR page `uar`: updates the consumer index and, with `arm`, asks
/// for an interrupt on the next event.
///
/// No barrier: the write is an ordered `writel`, after every earlier store to memory
/// (lib/eq.h `eq_update_ci` pairs its raw `__raw_writel` with a `wmb`).
pub(crate) fn eq_doorbell(bar: &Bar0, uar: u32, eqn: u8, ci: u32, arm: bool) -> Result {
    let off = if arm {
        EQ_DOORBELL_UPDATE_ARM
    } else {
        EQ_DOORBELL_UPDATE
    };
    bar.write_bytes32(
        Bar0::uar_offset(uar, off)?,
        EqDoorbell { eqn, ci }.to_bytes(),
    )
}

/// Rings a CQ arm doorbell on UAR page `uar`.
pub(crate) fn cq_doorbell(bar: &Bar0, uar: u32, db: CqArmDoorbell) -> Result {
    bar.write_bytes64(Bar0::uar_offset(uar, CQ_DOORBELL)?, db.to_bytes())
}

/// A UAR page owned by a layer (the Ethernet SQs' doorbells, an RDMA user context, the EC
/// engine's QP), returned to the device on drop.
pub(crate) struct UarPage {
    mdev: Arc<Mdev>,
    uar: Option<Uar>,
}

impl UarPage {
    /// Allocates a UAR page.
    pub(crate) fn alloc(mdev: &Arc<Mdev>) -> Result<Self> {
        Ok(Self {
            mdev: mdev.clone(),
            uar: Some(Uar::alloc(&mdev.cmdq)?),
        })
    }

    /// The page index.
    pub(crate) fn index(&self) -> u32 {
        self.uar.as_ref().map_or(0, Uar::index)
    }
}

impl Drop for UarPage {
    fn drop(&mut self) {
        if let Some(u) = self.uar.take() {
            if let Err(e) = u.free(&self.mdev.cmdq) {
                dev_warn!(self.mdev.dev.dev(), "DEALLOC_UAR: {:?}\n", e);
            }
        }
    }
}
