//! The function behind BAR0 and where its parts meet: the [`Firmware`] (`fw/`: command
//! interface, objects, event queues — the state the other parts share, lent to them per
//! call), the NIC data path (send queues, steering, receive queues; `datapath.rs`,
//! `striding.rs`, still `impl Hca`), the [`RoceEngine`] (`roce/`) and the [`Port`] (`port.rs`:
//! the wire and its flow control).
//!
//! [`Hca`] is a passive part: every method that touches guest memory, raises an interrupt or
//! consults the fault plan takes the [`Bus`] per call from [`crate::device::Device`], which owns
//! it once. Nothing here names the device; the device (and the runtime's threads through it)
//! calls in. The [`Port`] keeps its fields private and takes the firmware (its registers and
//! counters) per call; this file composes it with the data path (pause timer, stalled SQs,
//! held frames).

use std::{
    collections::{BTreeSet, VecDeque},
    time::Instant,
};

use crate::{
    bus::Bus,
    config::{Chip, Config},
    eth::{frame, pause::MacControl},
    fw::{CapProfile, Firmware},
    pages::Pages,
    path_stats::PathStats,
    port::Port,
    roce::{Roce, RoceEngine},
    rx_merges::RxMerges, //
};

/// The function's parts below the PCI and BAR0 surface.
pub struct Hca {
    /// The firmware.
    pub(crate) fw: Firmware,
    /// The port: its wire and its pause state.
    pub(crate) port: Port,
    /// Data-path statistics.
    pub(crate) path: PathStats,
    /// The RoCE engine (`roce/`).
    pub(crate) roce: RoceEngine,
    /// LRO merges open on striding RQs.
    pub(crate) merges: RxMerges,
}

impl Hca {
    /// The parts in their power-on state, firmware from the chip's capability profile.
    pub fn new(cfg: &Config) -> Self {
        Hca {
            fw: firmware(cfg),
            port: Default::default(),
            path: Default::default(),
            roce: RoceEngine::new(cfg.seed),
            merges: Default::default(),
        }
    }

    /// Function-level reset of the parts: the firmware starts initializing again and the data
    /// path and the RoCE engine drop everything in flight. The port stays attached.
    pub fn reset(&mut self, bus: &Bus) {
        self.fw.reset();
        self.port.reset();
        // The `roce-wire` fault stays (like rx-starve); what it held is gone with everything
        // in flight and the draws start again from the seed.
        self.roce.reset(bus.faults.roce_wire.is_some());
        self.merges = Default::default();
    }

    /// The `roce-wire` fault was set or changed: the draws start again from the seed, or,
    /// with the fault gone, what it held goes out.
    pub fn roce_wire_fault_changed(&mut self, bus: &mut Bus) {
        if bus.faults.roce_wire.is_some() {
            // Reproducible draws: the same spec on the same `--seed` does the same.
            self.roce.reseed();
        } else {
            self.roce_at().roce_wire_flush(bus);
        }
    }

    /// A received MAC control frame: the port counts and honours it; a pause it ends runs the
    /// stalled SQs again.
    pub(crate) fn mac_control(&mut self, bus: &mut Bus, mc: MacControl) {
        if self.port.mac_control(&mut self.fw, mc) {
            self.resume_stalled(bus);
        }
    }

    /// Runs the SQs stalled on a pause again (those that still exist), and sends the RoCE
    /// frames the pause held back (`roce::congestion`).
    fn resume_stalled(&mut self, bus: &mut Bus) {
        self.roce_at().roce_gate_release(crate::clock::now_ns());
        let stalled: BTreeSet<(u32, u32)> = self.port.take_stalled();
        for (page, sqn) in stalled {
            if self.fw.sq(sqn).is_some() {
                self.execute_sq(bus, page, sqn);
            }
        }
    }

    /// The pause timer: ends expired pauses (running stalled SQs again), delivers held frames
    /// whose RQs have WQEs now, sends XON for slots with nothing held and refreshes the XOFF
    /// of the others before the partner's pause runs out (`port.rs`). The wire thread calls
    /// it at [`Hca::pause_deadline`], and every received frame and SQ doorbell does.
    pub fn pause_tick(&mut self, bus: &mut Bus) {
        let now = Instant::now();
        // Ends an `rx-starve` whose time is up (and logs it), even with nothing held.
        bus.faults.rx_starved();
        if self.port.expire(&mut self.fw, now) {
            self.resume_stalled(bus);
        }
        if self.port.holding() {
            self.drain_held(bus);
            if !self.merges.defer {
                self.close_merges(bus);
            }
        }
        self.port.refresh_xoffs(&mut self.fw, now);
    }

    /// Delivers held frames in order, per RQ, while their RQs have WQEs.
    fn drain_held(&mut self, bus: &mut Bus) {
        let cfg = crate::datapath::parse_config(&self.fw);
        let mut blocked = BTreeSet::new();
        let mut rest = VecDeque::new();
        for h in self.port.take_held() {
            if blocked.contains(&h.rqn) {
                rest.push_back(h);
                continue;
            }
            let Ok(hdrs) = frame::parse(&h.frame, &cfg) else {
                continue;
            };
            if !self.deliver_via_tir(bus, &h.frame, &hdrs, h.tirn, h.flow_tag, h.prio, true, 1) {
                blocked.insert(h.rqn);
                rest.push_back(h);
            }
        }
        self.port.put_back(rest);
    }

    /// How long the wire thread may wait before [`Hca::pause_tick`] is due (`port.rs`).
    pub fn pause_deadline(&self, bus: &Bus) -> Option<std::time::Duration> {
        self.port.pause_deadline(&self.fw, bus)
    }

    /// The RoCE engine at work, lent the firmware, the port and the data path's counters.
    pub(crate) fn roce_at(&mut self) -> Roce<'_> {
        self.roce.at(&mut self.fw, &self.port, &mut self.path)
    }

    /// When [`Roce::roce_tick`] is next due, from now (`roce/mod.rs`).
    pub fn roce_deadline(&self) -> Option<std::time::Duration> {
        self.roce.deadline(&self.port)
    }

    /// The port's speed in bit/s (PTYS operational protocol; 10 Gb/s if unknown).
    pub fn link_bps(&self) -> u64 {
        self.port.link_bps(&self.fw)
    }

    /// The priority of `frame` under the port's trust state.
    pub fn frame_prio(&self, frame: &[u8]) -> u8 {
        self.port.frame_prio(&self.fw, frame)
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
