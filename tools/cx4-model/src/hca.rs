//! The function behind BAR0: the firmware (command interface, objects, event queues), the NIC
//! data path (send queues, steering, receive queues; `datapath.rs`, `striding.rs`, `pfc.rs`),
//! the RoCE engine (`roce/`) and the port's wire.
//!
//! [`Hca`] is a passive part: every method that touches guest memory, raises an interrupt or
//! consults the fault plan takes the [`Bus`] per call from [`crate::device::Device`], which owns
//! it once. Nothing here names the device; the device (and the runtime's threads through it)
//! calls in.

use std::sync::Arc;

use crate::{
    bus::Bus,
    config::{Chip, Config},
    fw::{CapProfile, Firmware},
    pages::Pages,
    path_stats::PathStats,
    pause::PortPause,
    roce::engine::Engine,
    rx_merges::RxMerges,
    wire::Port, //
};

/// The function's parts below the PCI and BAR0 surface.
pub struct Hca {
    /// The firmware.
    pub(crate) fw: Firmware,
    /// The port's wire (`--tap`); frames sent without one go nowhere.
    pub(crate) port: Option<Arc<dyn Port>>,
    /// Data-path statistics.
    pub(crate) path: PathStats,
    /// Pause state of the port (paused priorities, held frames, XOFFs).
    pub(crate) pause: PortPause,
    /// The RoCE engine's per-QP state (`roce::engine`).
    pub(crate) roce: Engine,
    /// LRO merges open on striding RQs.
    pub(crate) merges: RxMerges,
    /// The `--seed` the `roce-wire` fault's draws start from.
    seed: u32,
}

impl Hca {
    /// The parts in their power-on state, firmware from the chip's capability profile.
    pub fn new(cfg: &Config) -> Self {
        Hca {
            fw: firmware(cfg),
            port: None,
            path: Default::default(),
            pause: Default::default(),
            roce: Default::default(),
            merges: Default::default(),
            seed: cfg.seed,
        }
    }

    /// Function-level reset of the parts: the firmware starts initializing again and the data
    /// path and the RoCE engine drop everything in flight. The port stays attached.
    pub fn reset(&mut self, bus: &Bus) {
        self.fw.reset();
        self.pause = Default::default();
        self.roce = Default::default();
        self.merges = Default::default();
        if bus.faults.roce_wire.is_some() {
            // The fault stays (like rx-starve); what it held is gone with everything in flight
            // and the draws start again from the seed.
            self.roce.wire.seed(self.seed);
        }
    }

    /// The `roce-wire` fault was set or changed: the draws start again from the seed, or,
    /// with the fault gone, what it held goes out.
    pub fn roce_wire_fault_changed(&mut self, bus: &mut Bus) {
        if bus.faults.roce_wire.is_some() {
            // Reproducible draws: the same spec on the same `--seed` does the same.
            self.roce.wire.seed(self.seed);
        } else {
            self.roce_wire_flush(bus);
        }
    }
}

/// The firmware the model's configuration describes: the chip's shipped capability profile
/// with the configured features, page demands, firmware version and vport seed.
fn firmware(cfg: &Config) -> Firmware {
    let text = match cfg.chip {
        Chip::ConnectX4 => include_str!("../profiles/connectx4.caps"),
        Chip::ConnectX4Lx => include_str!("../profiles/connectx4lx.caps"),
    };
    let mut caps = CapProfile::parse(text).expect("shipped profiles are valid (unit-tested)");
    if cfg.eth {
        caps.set_general("eth_net_offloads", 1);
    }
    if cfg.roce {
        caps.set_general("roce", 1);
    }
    if cfg.ec_8bit {
        caps.set_vector_calc("calc_matrix_type_8bit", 1);
    }
    let psid = match cfg.chip {
        Chip::ConnectX4 => "MT_2190110032",
        Chip::ConnectX4Lx => "MT_2420110034",
    };
    let mut fw = Firmware::new(
        caps,
        Pages::new(cfg.boot_pages, cfg.init_pages, cfg.regular_pages),
        psid,
    );
    if cfg.chip == Chip::ConnectX4Lx {
        fw.regs.eth_proto = crate::fw::ETH_25GBASE_CR;
    }
    fw.regs.fw_version = cfg.fw;
    fw.vport = crate::fw::VportState::with_seed(cfg.seed);
    fw
}
