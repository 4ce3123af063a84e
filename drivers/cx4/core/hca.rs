// SPDX-License-Identifier: GPL-2.0
//! HCA bring-up and teardown, in the PRM's order (core/main.c `mlx5_function_enable`,
//! `mlx5_function_open`, `mlx5_load` and their reverses).
//!
//! [`Hca`] records how far the bring-up got; dropping it undoes exactly that, in reverse, so
//! a probe failure at any step and a remove take the same path. This is the core's part of a
//! load: the layers on top (debugfs, Ethernet, RDMA, EC) are brought up after it and taken
//! down before it by the composition root (layers.rs).

use cx4_hw::{
    command,
    hca::{
        issi_supported,
        teardown_profile, //
    },
    iseg,
    regs::{
        self,
        HostEndiannessReg, //
    },
};
use kernel::{
    device::Bound,
    pci,
    prelude::*,
    sync::Arc,
    time::Delta, //
};
use zerocopy::FromBytes;

use crate::{
    caps::{
        self,
        Caps, //
    },
    clock::Clock,
    cmd::input,
    eq::EqTable,
    health,
    iseg::Bar0,
    mdev::Mdev,
    pages::Stage,
    uar::Uar, //
};

/// How long the firmware may stay in its initializing state.
const FW_INIT_TIMEOUT: Delta = Delta::from_secs(10);
/// The ISSI this driver speaks when the device supports it.
const ISSI: u32 = 1;

/// Why a brought-up HCA no longer works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The health buffer or counter reported a fatal condition.
    Health(health::Fatal),
    /// Commands timed out twice in a row: the command interface is unresponsive.
    CommandsUnresponsive,
}

impl kernel::fmt::Display for Fault {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        match self {
            Fault::Health(h) => kernel::fmt::Display::fmt(h, f),
            Fault::CommandsUnresponsive => f.write_str("command interface unresponsive"),
        }
    }
}

/// What the firmware says about itself, for `devlink dev info` (the root's devlink.rs).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FwInfo {
    /// The running firmware version (init segment).
    pub(crate) version: iseg::FwVersion,
    /// The board's parameter set ID (QUERY_ADAPTER `vsd_contd_psid`), NUL-padded; all zero
    /// when the query failed.
    pub(crate) psid: [u8; PSID_LEN],
}

/// The length of the PSID field of QUERY_ADAPTER.
pub(crate) const PSID_LEN: usize = 16;

impl FwInfo {
    /// The PSID as text (up to its first NUL), if the device gave one.
    pub(crate) fn psid(&self) -> Option<&str> {
        let end = self.psid.iter().position(|&b| b == 0).unwrap_or(PSID_LEN);
        core::str::from_utf8(&self.psid[..end])
            .ok()
            .filter(|s| !s.is_empty())
    }
}

/// The brought-up (or partly brought-up) HCA of one function.
pub(crate) struct Hca {
    mdev: Arc<Mdev>,
    fw: FwInfo,
    enabled: bool,
    inited: bool,
    caps: Option<Arc<Caps>>,
    uar: Option<Uar>,
    eqs: Option<EqTable>,
    clock: Option<Clock>,
    health: bool,
}

impl Hca {
    /// Maps BAR0, checks the firmware and brings the HCA up. On failure everything done so far
    /// is undone before returning. Called by the composition root (layers.rs) at probe and
    /// again at each recovery.
    pub(crate) fn load(pdev: &pci::Device<Bound>, chip: &str, timeout: Delta) -> Result<Self> {
        let bar = Arc::new(Bar0::new(pdev)?, GFP_KERNEL)?;
        // The PRM asks the driver to wait for the initializing bit both before and after it
        // programs the command queue; the first wait is the one that can time out.
        if let Err(e) = bar.wait_ready(FW_INIT_TIMEOUT) {
            dev_err!(
                pdev,
                "firmware stuck in initializing state ({} ms), giving up\n",
                FW_INIT_TIMEOUT.as_millis()
            );
            return Err(e);
        }
        let cmdif = bar.cmdif_rev()?;
        if cmdif != iseg::CMDIF_REV {
            dev_err!(
                pdev,
                "unsupported command interface revision {} (driver supports {})\n",
                cmdif,
                iseg::CMDIF_REV
            );
            return Err(ENODEV);
        }
        let fw = bar.fw_version()?;
        let q = bar.cmdq_size()?;
        dev_info!(
            pdev,
            "{}: firmware version {}.{}.{}, cmdif rev {}, {} command slots\n",
            chip,
            fw.major,
            fw.minor,
            fw.subminor,
            cmdif,
            1u32 << q.log_size
        );
        let mdev = Arc::pin_init(Mdev::new(pdev, bar, timeout)?, GFP_KERNEL)?;
        let mut hca = Hca {
            mdev,
            fw: FwInfo {
                version: fw,
                psid: [0; PSID_LEN],
            },
            enabled: false,
            inited: false,
            caps: None,
            uar: None,
            eqs: None,
            clock: None,
            health: false,
        };
        // On error `hca` is dropped here, which tears down what was brought up.
        hca.bring_up(pdev)?;
        Ok(hca)
    }

    /// The state shared with interrupt handlers and work items.
    pub(crate) fn mdev(&self) -> &Arc<Mdev> {
        &self.mdev
    }

    /// The capabilities (set once the bring-up succeeded).
    pub(crate) fn caps(&self) -> Result<&Arc<Caps>> {
        self.caps.as_ref().ok_or(ENODEV)
    }

    /// The index of the core's UAR page (EQ and kernel CQ doorbells).
    pub(crate) fn uar(&self) -> u32 {
        self.uar.as_ref().map_or(0, Uar::index)
    }

    /// The EQs and their interrupt vectors.
    pub(crate) fn eqs(&self) -> Result<&EqTable> {
        self.eqs.as_ref().ok_or(ENODEV)
    }

    /// The function's PTP hardware clock, if it has one (the Ethernet layer timestamps with
    /// it).
    pub(crate) fn clock(&self) -> Option<&Clock> {
        self.clock.as_ref()
    }

    /// Logs the loaded function's summary, once the layers are up too (the firmware pages
    /// count includes theirs).
    pub(crate) fn log_up(&self, pdev: &pci::Device<Bound>) {
        let m = &self.mdev;
        dev_info!(
            pdev,
            "HCA up: {} firmware pages, UAR {}, {} MSI-X vectors, command queue in {} mode\n",
            m.pages.held(),
            self.uar(),
            self.eqs.as_ref().map_or(0, EqTable::vectors),
            if m.cmdq.events() { "event" } else { "polling" }
        );
    }

    /// The firmware's version and the board's PSID, as read at bring-up.
    pub(crate) fn fw_info(&self) -> FwInfo {
        self.fw
    }

    /// Why the HCA no longer works, if it does not.
    pub(crate) fn fault(&self) -> Option<Fault> {
        let m = &self.mdev;
        if let Some(f) = m.health.fatal() {
            Some(Fault::Health(f))
        } else if m.cmdq.in_error() {
            Some(Fault::CommandsUnresponsive)
        } else {
            None
        }
    }

    fn bring_up(&mut self, pdev: &pci::Device<Bound>) -> Result {
        let m = self.mdev.clone();
        let cmdq = &m.cmdq;
        // A device that is already in a fatal state does not execute commands.
        if let Err(why) = health::check(&m) {
            health::mark_failed(&m, why);
            return Err(EIO);
        }
        // Command queue init, then wait for the firmware to accept it.
        m.bar.set_cmdq_addr(cmdq.dma())?;
        m.bar.wait_ready(FW_INIT_TIMEOUT)?;

        let mut en = input::<command::EnableHca>(0)?;
        en.set_function_id(0);
        cmdq.exec::<command::EnableHca>(&en, 0)?;
        self.enabled = true;
        health::start(&m);
        self.health = true;

        self.set_issi()?;
        m.pages.satisfy(m.dev.get(), cmdq, Stage::Boot)?;
        self.set_host_endianness()?;
        let atomic = caps::set_general(cmdq)?;
        caps::set_atomic(cmdq, atomic)?;
        m.pages.satisfy(m.dev.get(), cmdq, Stage::Init)?;

        let init = input::<command::InitHca>(0)?;
        cmdq.exec::<command::InitHca>(&init, 0)?;
        self.inited = true;
        self.query_board_id();

        let caps = Arc::new(Caps::query(cmdq)?, GFP_KERNEL)?;
        if caps.gen().driver_version() != 0 {
            self.set_driver_version()?;
        }
        let page_request_disable = caps.gen().page_request_disable() != 0;
        let dct = caps.gen().dct() != 0;
        self.caps = Some(caps);
        let uar = self.uar.insert(Uar::alloc(cmdq)?).index();

        // EQs (main.c mlx5_load -> eq.c): command EQ first, then event mode, async and pages
        // EQs, then the completion EQs.
        let eqs = self.eqs.insert(EqTable::new(&m, pdev, uar)?);
        eqs.create_cmd_eq()?;
        eqs.create_async_eq(dct)?;
        if !page_request_disable {
            eqs.create_pages_eq()?;
        }
        eqs.create_comp_eqs()?;

        // The PTP hardware clock (main.c `mlx5_load` -> clock.c `mlx5_init_clock`). Not
        // fatal: without it the function works, without hardware timestamps.
        let khz = self.caps()?.gen().device_frequency_khz();
        match Clock::register(&m, khz) {
            Ok(c) => self.clock = Some(c),
            Err(e) => dev_warn!(pdev, "no PTP hardware clock: {:?}\n", e),
        }
        Ok(())
    }

    /// ISSI negotiation (main.c `mlx5_core_set_issi`).
    fn set_issi(&self) -> Result {
        let cmdq = &self.mdev.cmdq;
        let q = input::<command::QueryIssi>(0)?;
        let out = cmdq.exec::<command::QueryIssi>(&q, 0)?;
        if issi_supported(out.supported_issi_dw0(), ISSI) {
            let mut s = input::<command::SetIssi>(0)?;
            s.set_current_issi(ISSI);
            cmdq.exec::<command::SetIssi>(&s, 0)?;
        } else if !issi_supported(out.supported_issi_dw0(), 0) {
            dev_err!(
                self.mdev.dev.dev(),
                "device supports neither ISSI 0 nor 1 ({:#x})\n",
                out.supported_issi_dw0()
            );
            return Err(ENODEV);
        }
        Ok(())
    }

    /// Reads the board's PSID (main.c `mlx5_query_board_id`: QUERY_ADAPTER). Not fatal: the
    /// PSID is only reported (`devlink dev info`); without it the field stays empty.
    fn query_board_id(&mut self) {
        let r = input::<command::QueryAdapter>(0)
            .and_then(|q| self.mdev.cmdq.exec::<command::QueryAdapter>(&q, 0));
        match r {
            Ok(out) => {
                let psid = out.query_adapter_struct().vsd_contd_psid();
                let n = psid.len().min(PSID_LEN);
                self.fw.psid[..n].copy_from_slice(&psid[..n]);
            }
            Err(e) => dev_warn!(
                self.mdev.dev.dev(),
                "QUERY_ADAPTER failed ({:?}): no PSID\n",
                e
            ),
        }
    }

    /// Tells the device the host's byte order (main.c `set_hca_ctrl`).
    fn set_host_endianness(&self) -> Result {
        let mut m = input::<command::AccessReg>(HostEndiannessReg::SIZE)?;
        m.set_op_mod(regs::ACCESS_REG_WRITE.into());
        m.set_register_id(regs::id::HOST_ENDIANNESS.into());
        let he = if cfg!(target_endian = "big") {
            regs::HOST_ENDIANNESS_BIG
        } else {
            regs::HOST_ENDIANNESS_LITTLE
        };
        let (reg, _) = HostEndiannessReg::mut_from_prefix(m.tail_mut()).map_err(|_| EINVAL)?;
        reg.set_he(he.into());
        self.mdev
            .cmdq
            .exec::<command::AccessReg>(&m, HostEndiannessReg::SIZE)
            .map(|_| ())
    }

    fn set_driver_version(&self) -> Result {
        let mut m = input::<command::SetDriverVersion>(0)?;
        let v = b"cx4,rust";
        m.driver_version_mut()[..v.len()].copy_from_slice(v);
        self.mdev
            .cmdq
            .exec::<command::SetDriverVersion>(&m, 0)
            .map(|_| ())
    }

    /// Undoes the bring-up, in reverse order. Failures are logged and the teardown goes on:
    /// whatever the device did not take back is freed anyway.
    fn teardown(&mut self) {
        let m = self.mdev.clone();
        let cmdq = &m.cmdq;
        // The layers are gone by now (layers.rs drops them first).
        self.clock = None;
        if self.health {
            health::stop(&m);
            self.health = false;
        }
        // Destroys the EQs, frees their interrupts and flushes the page work.
        self.eqs = None;
        if let Some(uar) = self.uar.take() {
            let _ = uar.free(cmdq);
        }
        self.caps = None;
        if self.inited {
            let mut t = input::<command::TeardownHca>(0);
            if let Ok(t) = t.as_mut() {
                t.set_profile(teardown_profile::GRACEFUL_CLOSE.into());
            }
            let _ = t.and_then(|t| cmdq.exec::<command::TeardownHca>(&t, 0));
            self.inited = false;
        }
        if self.enabled && !cmdq.in_error() {
            if let Err(e) = m.pages.reclaim_all(cmdq) {
                dev_warn!(
                    m.dev.dev(),
                    "could not reclaim all firmware pages ({:?}), {} left\n",
                    e,
                    m.pages.held()
                );
            }
        }
        if self.enabled {
            let mut d = input::<command::DisableHca>(0);
            if let Ok(d) = d.as_mut() {
                d.set_function_id(0);
            }
            let _ = d.and_then(|d| cmdq.exec::<command::DisableHca>(&d, 0));
            self.enabled = false;
        }
        let left = m.pages.release_all();
        if left != 0 {
            dev_warn!(
                m.dev.dev(),
                "freed {} firmware pages the device did not return\n",
                left
            );
        }
    }
}

impl Drop for Hca {
    fn drop(&mut self) {
        self.teardown();
    }
}
