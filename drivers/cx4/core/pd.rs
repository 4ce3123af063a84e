// SPDX-License-Identifier: GPL-2.0
//! Protection and transport domains (core/pd.c `mlx5_core_alloc_pd`, core/transobj.c
//! `mlx5_core_alloc_transport_domain`): the per-function objects the Ethernet, RDMA and EC
//! layers create their queues and keys in.

use cx4_hw::command;
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// A protection domain (`ALLOC_PD`).
pub(crate) struct Pd {
    mdev: Arc<Mdev>,
    pdn: u32,
}

impl Pd {
    /// Allocates a PD.
    pub(crate) fn alloc(mdev: &Arc<Mdev>) -> Result<Self> {
        let m = input::<command::AllocPd>(0)?;
        let out = mdev.cmdq.exec::<command::AllocPd>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            pdn: out.pd(),
        })
    }

    /// The PD number.
    pub(crate) fn pdn(&self) -> u32 {
        self.pdn
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DeallocPd>(0) {
            m.set_pd(self.pdn);
            let _ = self.mdev.cmdq.exec::<command::DeallocPd>(&m, 0);
        }
    }
}

/// A transport domain (`ALLOC_TRANSPORT_DOMAIN`): TISes and TIRs of one domain see each
/// other's traffic for self-loopback blocking.
pub(crate) struct TransportDomain {
    mdev: Arc<Mdev>,
    tdn: u32,
}

impl TransportDomain {
    /// Allocates a transport domain.
    pub(crate) fn alloc(mdev: &Arc<Mdev>) -> Result<Self> {
        let m = input::<command::AllocTransportDomain>(0)?;
        let out = mdev.cmdq.exec::<command::AllocTransportDomain>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            tdn: out.transport_domain(),
        })
    }

    /// The transport domain number.
    pub(crate) fn tdn(&self) -> u32 {
        self.tdn
    }
}

impl Drop for TransportDomain {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DeallocTransportDomain>(0) {
            m.set_transport_domain(self.tdn);
            let _ = self
                .mdev
                .cmdq
                .exec::<command::DeallocTransportDomain>(&m, 0);
        }
    }
}
