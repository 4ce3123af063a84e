// SPDX-License-Identifier: GPL-2.0
//! Transport interface send objects (en_common.c `mlx5e_create_tis`, en_main.c
//! `mlx5e_create_tises`): every SQ sends through one; mlx5e makes one per traffic class
//! (priority `tc << 1`) in the function's transport domain. One for priority 0 serves a
//! single traffic class.

use cx4_hw::command;
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// A TIS. Dropping it destroys it (no SQ may still use it).
pub(crate) struct Tis {
    mdev: Arc<Mdev>,
    tisn: u32,
}

impl Tis {
    /// Creates a TIS for traffic class `tc` in transport domain `tdn`.
    pub(crate) fn create(mdev: &Arc<Mdev>, tdn: u32, tc: u8) -> Result<Self> {
        let mut m = input::<command::CreateTis>(0)?;
        {
            let c = m.ctx_mut();
            c.set_prio(u32::from(tc) << 1);
            c.set_transport_domain(tdn);
        }
        let out = mdev.cmdq.exec::<command::CreateTis>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            tisn: out.tisn(),
        })
    }

    /// The TIS number.
    pub(crate) fn tisn(&self) -> u32 {
        self.tisn
    }
}

impl Drop for Tis {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyTis>(0) {
            m.set_tisn(self.tisn);
            let _ = self.mdev.cmdq.exec::<command::DestroyTis>(&m, 0);
        }
    }
}
