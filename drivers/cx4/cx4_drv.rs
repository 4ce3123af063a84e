// SPDX-License-Identifier: GPL-2.0
//! cx4: a Rust driver for ConnectX-4-class (mlx5) RDMA NICs.
//!
//! The crate root only declares the module; each concept lives in its own file, in layers
//! (README.md has the layout and the import rule):
//!
//! - core/: the function (upstream mlx5_core) — BAR0, the command queue, pages, caps, EQs,
//!   CQs, health, the HCA bring-up (hca.rs), the function's debugfs directory, and the objects
//!   every layer shares (PD, transport domain, mkeys, UAR pages, kernel QPs, work-queue
//!   doorbells). It imports none of the layers;
//! - en/: the Ethernet layer (netdev, rings, steering, health reporters, selftests);
//! - ib/: the RDMA layer (the ib device on the netdev's RoCE port, over drivers/ib/);
//! - ec/: the erasure-coding engine (the card's vector-calc engine on a self-connected RC QP)
//!   and its dmaengine provider;
//! - the root: driver.rs (PCI binding), function.rs (the bound function across reloads),
//!   devlink.rs (the devlink instance and its `fw_fatal` reporter, over drivers/devlink/) and
//!   layers.rs, which brings up core → debugfs → en → ib → ec and is the only file that
//!   names every layer. en, ib and ec import the core, never each other.
//!
//! The kernel C APIs the `kernel` crate does not wrap (MSI-X, interrupt lines, `IrqSafeLock`,
//! coherent copies, ...) are safe APIs of the `kapi` crate (drivers/kapi/), devlink and netdev
//! those of the `devlink` and `netdev` crates: this crate is safe Rust, which the crate-level
//! `deny` below enforces, with named exceptions, each under `#[allow(unsafe_code)]`:
//! - three calls whose contracts only the caller can keep, with the SAFETY argument at the
//!   call site as nova-core writes them: the DMA mask in probe (driver.rs) and
//!   `kapi::BoundDevice::new` (core/mdev.rs, function.rs);
//! - the code the kernel's `#[kunit_tests]` macro generates to register a KUnit suite
//!   (`extern "C"` case wrappers and the suite's `static`), in each test module.
//!
//! (`forbid` would refuse those `allow`s.)

#![deny(unsafe_code)]

// The core (core/): the PCI function's command interface, memory, interrupts, health and the
// objects every layer shares (PD, transport domain, mkey, UAR pages). Its files import none of
// en/, ib/, ec/ or the root's files; `#[path]` keeps them at `crate::<name>` (a `core` module
// would shadow Rust's `core` crate).
#[path = "core/caps.rs"]
mod caps;
#[path = "core/clock.rs"]
mod clock;
#[path = "core/cmd.rs"]
mod cmd;
#[path = "core/cq.rs"]
mod cq;
#[path = "core/debugfs.rs"]
mod debugfs;
#[path = "core/dmabuf.rs"]
mod dmabuf;
#[path = "core/eq.rs"]
mod eq;
#[path = "core/fs.rs"]
mod fs;
#[path = "core/hca.rs"]
mod hca;
#[path = "core/health.rs"]
mod health;
#[path = "core/hwq.rs"]
mod hwq;
#[path = "core/iseg.rs"]
mod iseg;
#[path = "core/mbox.rs"]
mod mbox;
#[path = "core/mdev.rs"]
mod mdev;
#[path = "core/mkey.rs"]
mod mkey;
#[path = "core/msg.rs"]
mod msg;
#[path = "core/pages.rs"]
mod pages;
#[path = "core/pd.rs"]
mod pd;
#[path = "core/qp.rs"]
mod qp;
#[path = "core/qp_events.rs"]
mod qp_events;
#[path = "core/rqt.rs"]
mod rqt;
#[path = "core/stats.rs"]
mod stats;
#[path = "core/tir.rs"]
mod tir;
#[path = "core/tis.rs"]
mod tis;
#[path = "core/uar.rs"]
mod uar;
#[path = "core/wq.rs"]
mod wq;

// The layers on the core: Ethernet, RDMA, erasure coding.
mod ec;
mod en;
mod ib;

// The composition root: the PCI binding (driver.rs), the function across reloads
// (function.rs), its devlink instance (devlink.rs) and one load of the core and the layers
// (layers.rs, the only file that names them all).
mod devlink;
mod driver;
mod function;
mod layers;

use kernel::{
    driver::Registration,
    pci,
    prelude::*, //
};

/// The module: the PCI driver registration and the `cx4/` debugfs directory its devices
/// share (one `cx4/<pci-name>/` each).
#[pin_data]
struct Cx4Module {
    // Dropped first: every device is unbound before the debugfs root goes (a device's
    // directory would keep the root's entry alive anyway).
    #[pin]
    _driver: Registration<pci::Adapter<driver::Cx4Driver>>,
    // `None` only if another root were installed first (one per module: never here).
    _debugfs_root: Option<kapi::DebugfsRoot>,
}

impl kernel::InPlaceModule for Cx4Module {
    fn init(module: &'static kernel::ThisModule) -> impl PinInit<Self, Error> {
        // The root exists before the driver can probe a device.
        let root = kapi::DebugfsRoot::install(c"cx4");
        try_pin_init!(Self {
            _driver <- Registration::new(<Self as kernel::ModuleMetadata>::NAME, module),
            _debugfs_root: root,
        })
    }
}

kernel::prelude::module! {
    type: Cx4Module,
    name: "cx4",
    authors: ["The cx4 developers"],
    description: "ConnectX-4 / ConnectX-4 Lx (mlx5) driver in Rust",
    license: "GPL v2",
    params: {
        cmd_timeout_ms: u32 {
            default: 60000,
            description: "Firmware command timeout in milliseconds",
        },
        auto_recover: u32 {
            default: 1,
            description: "Recover from fatal device errors by reset and reload (0: stay failed)",
        },
    },
}

/// The auto_recover module parameter.
pub(crate) fn auto_recover() -> bool {
    *module_parameters::auto_recover.value() != 0
}

/// The command timeout module parameter.
pub(crate) fn cmd_timeout_ms() -> u32 {
    (*module_parameters::cmd_timeout_ms.value()).max(1)
}
