// SPDX-License-Identifier: GPL-2.0
//! The composition root of one load of the function: the core, then its debugfs directory,
//! then the Ethernet, RDMA and erasure-coding layers, each on the core and handed by this file
//! what it needs of the others as plain values (upstream: main.c `mlx5_load_one` followed by
//! the auxiliary devices' probes, mlx5e then mlx5_ib).
//!
//! This is the only file that names every layer: the core (core/) imports none of them, and
//! en/, ib/ and ec/ import the core but never each other. The netdev (a [`DeviceRef`]) and its
//! SQs' minimum inline mode go from en to ib; the RDMA port's kernel UAR page, queue counter
//! and loopback address ([`KernelPort`]) go from ib to ec. [`Layers`] is dropped in reverse:
//! ec, ib, en, the layers' debugfs files, the debugfs directory, the core.

use kernel::{
    device::Bound,
    pci,
    prelude::*,
    str::CString,
    sync::Arc,
    time::Delta, //
};
use netdev::DeviceRef;

use crate::{
    caps::Caps,
    clock::Clock,
    debugfs::FunctionDir,
    ec::{
        self,
        EcOwner,
        EcSetup,
        EcSlot,
        LoopAddr, //
    },
    en::{
        health::EnHealth,
        netdev::En, //
    },
    hca::{
        Fault,
        FwInfo,
        Hca, //
    },
    ib::{
        Ib,
        KernelPort, //
    },
    mdev::Mdev, //
};

/// One load of the function: the core and the layers brought up on it.
pub(crate) struct Layers {
    // Field order is drop order: the layers in the reverse of the bring-up, then their debugfs
    // files (a request in progress on one ends when its layer is gone — the EC engine's
    // calculations fail with `ENODEV` at its shutdown — instead of holding the teardown), then
    // the core's.
    /// The erasure-coding engine's slot, emptied (the engine shut down) on drop: its QP uses
    /// the RDMA port's GID table, kernel UAR page and RoCE.
    _ec: EcOwner,
    /// The RDMA device on the netdev's port (when the device has RoCE).
    _ib: Option<Ib>,
    /// The Ethernet netdev (when the device has Ethernet offloads).
    _en: Option<En>,
    /// The EC engine's debugfs file `ec` (requests too with test hooks).
    _ec_file: ec::EcFile,
    /// The Ethernet layer's debugfs file `selftest` (test hooks).
    #[cfg(cx4_test_hooks)]
    _selftest: crate::en::selftest::SelfTestFile,
    /// The function's debugfs directory and the core's files in it.
    _debugfs: FunctionDir,
    hca: Hca,
}

impl Layers {
    /// Brings the core up, then the layers. On failure everything done so far is undone
    /// before returning. Called from probe and again by each recovery (function.rs). The
    /// netdev's SQ and RQ errors go to `health` (the function's `tx` and `rx` reporters).
    pub(crate) fn load(
        pdev: &pci::Device<Bound>,
        chip: &str,
        timeout: Delta,
        health: &EnHealth,
    ) -> Result<Self> {
        let hca = Hca::load(pdev, chip, timeout)?;
        let m = hca.mdev().clone();
        let caps = hca.caps()?.clone();
        let eqs = hca.eqs()?;
        let comp_eqns = eqs.comp_eqns()?;
        let debugfs = FunctionDir::new(
            pdev.as_ref().name(),
            m.clone(),
            caps.clone(),
            eqs.snapshot()?,
        )?;
        // Where the erasure-coding engine goes once the RDMA port exists.
        let slot = EcSlot::new()?;

        // The Ethernet function (mlx5e's auxiliary device), if the card offers it.
        let en = if caps.eth().is_some() {
            let fw = m.bar.fw_version()?;
            let ver = CString::try_from_fmt(fmt!("{}.{}.{}", fw.major, fw.minor, fw.subminor))?;
            Some(En::probe(
                &m,
                &caps,
                eqs.comp_vectors()?,
                ver,
                health,
                hca.clock(),
            )?)
        } else {
            None
        };
        #[cfg(cx4_test_hooks)]
        let selftest = crate::en::selftest::SelfTestFile::new(
            debugfs.dir(),
            m.clone(),
            caps.clone(),
            hca.uar(),
            comp_eqns.first().copied(),
        )?;

        // The RDMA function (mlx5_ib's auxiliary device) on the netdev's port. Not fatal:
        // without it the Ethernet function still works.
        let netdev = en
            .as_ref()
            .and_then(|en| Some((en.device_ref()?, en.min_inline())));
        let ib = match netdev {
            Some(nd) if caps.gen().roce() != 0 && caps.roce().is_some() => {
                probe_ib(pdev, &m, &caps, nd, eqs.comp_eqns()?, hca.clock())
            }
            _ => None,
        };

        // The erasure-coding engine (ec/) on the RDMA port's loopback, when the card has one.
        // Declared after `ib`: on an error below it goes first.
        let ec = EcOwner(slot);
        if let (Some(ib), Some(&eqn)) = (ib.as_ref(), comp_eqns.first()) {
            start_ec(&ec.0, &m, &caps, eqn, ib.kernel_port());
        }
        let ec_file = ec::EcFile::new(debugfs.dir(), m.clone(), ec.0.clone())?;

        let this = Self {
            _ec: ec,
            _ib: ib,
            _en: en,
            _ec_file: ec_file,
            #[cfg(cx4_test_hooks)]
            _selftest: selftest,
            _debugfs: debugfs,
            hca,
        };
        this.hca.log_up(pdev);
        Ok(this)
    }

    /// The firmware's version and the board's PSID, as read at bring-up.
    pub(crate) fn fw_info(&self) -> FwInfo {
        self.hca.fw_info()
    }

    /// Why the function no longer works, if it does not.
    pub(crate) fn fault(&self) -> Option<Fault> {
        self.hca.fault()
    }
}

/// The RDMA device on the netdev `nd` (with its SQs' minimum inline mode); `None` (logged) if
/// it cannot be registered.
fn probe_ib(
    pdev: &pci::Device<Bound>,
    m: &Arc<Mdev>,
    caps: &Arc<Caps>,
    (netdev, min_inline): (DeviceRef, u8),
    comp_eqns: KVec<u8>,
    clock: Option<&Clock>,
) -> Option<Ib> {
    let timer = clock.map(|c| c.timer().clone());
    match Ib::probe(pdev, m, caps, netdev, min_inline, comp_eqns, timer) {
        Ok(ib) => Some(ib),
        Err(e) => {
            dev_warn!(pdev, "no RDMA device: {:?}\n", e);
            None
        }
    }
}

/// Creates the EC engine on the RDMA port `port` with its CQ on completion EQ `eqn`, and
/// installs it in `slot` with its DMA channel. Not fatal (logged).
fn start_ec(slot: &EcSlot, m: &Arc<Mdev>, caps: &Caps, eqn: u8, port: KernelPort) {
    let setup = EcSetup {
        eqn,
        uar: port.uar,
        counter: port.counter,
        addr: LoopAddr {
            mac: port.mac,
            gid: port.gid,
            sgid_index: 0,
        },
    };
    if let Some(e) = ec::probe(m, caps, setup) {
        slot.install(e);
        slot.start_dma(m.dev.get());
    }
}
