//! The function behind BAR0 and where its parts meet: the [`Firmware`] (`fw/`: command
//! interface, objects, event queues — the state the other parts share, lent to them per
//! call), the [`NicPath`] (`datapath.rs`, `striding.rs`: send queues, steering, receive
//! queues, LRO), the [`RoceEngine`] (`roce/`) and the [`Port`] (`port.rs`: the wire and its
//! flow control).
//!
//! [`Hca`] is a passive part: every method that touches guest memory, raises an interrupt or
//! consults the fault plan takes the [`Bus`] per call from [`crate::device::Device`], which owns
//! it once. Nothing here names the device; the device (and the runtime's threads through it)
//! calls in.
//!
//! The parts keep their fields private and take what they read from the others per call: the
//! [`Port`] the firmware (its registers and counters); the NIC path and the RoCE engine work
//! as [`Nic`] and [`Roce`], lent the firmware, the port and the data-path counters
//! ([`PathStats`], which both count into) by [`Hca::nic_at`] and [`Hca::roce_at`]. This file
//! is where they meet: the doorbell, receive and timer entry points that choose between
//! them, and flow control reaching the data path (pause timer, stalled SQs, held frames).

use std::{
    collections::{BTreeSet, VecDeque},
    sync::Arc,
    time::Instant,
};

use cx4_hw::uar::BF_OFFSET;

use crate::{
    bus::Bus,
    config::{Chip, Config},
    datapath::{max_frame, parse_config, Nic, NicPath},
    eth::{frame, gso, pause::MacControl},
    fw::{CapProfile, Firmware},
    pages::Pages,
    path_stats::PathStats,
    port::Port,
    roce::{Roce, RoceEngine},
    wire::{vnet::RxOffload, Port as Wire}, //
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
    /// The NIC data path (`datapath.rs`, `striding.rs`).
    pub(crate) nic: NicPath,
}

impl Hca {
    /// The parts in their power-on state, firmware from the chip's capability profile.
    pub fn new(cfg: &Config) -> Self {
        Hca {
            fw: firmware(cfg),
            port: Default::default(),
            path: Default::default(),
            roce: RoceEngine::new(cfg.seed),
            nic: Default::default(),
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
        self.nic.reset();
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

    /// A write to the BlueFlame/doorbell area of UAR page `page` (offset `off` ≥ 0x800): an
    /// SQ doorbell. The 8 bytes are the first two dwords of the last WQE's control segment
    /// (`opmod_idx_opcode`, `qpn_ds`); the SQ is the one named in `qpn_ds`.
    pub fn uar_send_doorbell(&mut self, bus: &mut Bus, page: u32, off: u64, data: &[u8]) -> bool {
        if (off as usize) < BF_OFFSET {
            return false;
        }
        if data.len() < 8 {
            log::warn!(
                "UAR {page} doorbell write of {} bytes at {off:#x}, ignored",
                data.len()
            );
            return true;
        }
        let sqn = u32::from_be_bytes([data[4], data[5], data[6], data[7]]) >> 8;
        if self.fw.sq(sqn).is_none() && self.roce_at().qp_doorbell(bus, page, sqn) {
            return true;
        }
        self.sq_doorbell(bus, page, sqn);
        true
    }

    /// Executes SQ `sqn` from its consumer counter up to the producer counter in its doorbell
    /// record. An SQ in error flushes those WQEs with flush-error CQEs; one in reset ignores
    /// the doorbell.
    pub fn sq_doorbell(&mut self, bus: &mut Bus, page: u32, sqn: u32) {
        let t0 = self.path.time_start();
        self.path.sq_doorbells += 1;
        self.nic_at().execute_sq(bus, page, sqn);
        if self.port.pausing() {
            self.pause_tick(bus);
        }
        self.path.tx_ns += PathStats::time_since(t0);
    }

    /// A frame read from the wire with what the host left the port to finish (`wire::vnet`):
    /// a partial checksum is completed, a superframe is cut into the segments the card would
    /// have received (`eth::gso`), each then goes through [`Hca::receive`]. A frame cut
    /// short by the read buffer, a bad checksum position, a superframe that cannot be cut and
    /// an offload never negotiated are dropped and counted. Returns the frames handled.
    pub fn receive_offloaded(
        &mut self,
        bus: &mut Bus,
        frame: &mut [u8],
        offload: RxOffload,
        truncated: bool,
    ) -> usize {
        if truncated {
            self.path.rx_wire += 1;
            self.path.rx_oversize += 1;
            self.fw.count_rx_length_error();
            return 1;
        }
        let why = match offload {
            RxOffload::None => {
                self.receive(bus, frame);
                return 1;
            }
            RxOffload::Csum { start, offset } => match gso::complete_csum(frame, start, offset) {
                Ok(()) => {
                    self.receive(bus, frame);
                    return 1;
                }
                Err(e) => e.to_string(),
            },
            RxOffload::Tcp { mss } => {
                if let Some(n) = self.nic_at().receive_superframe(bus, frame, mss) {
                    self.nic_at().close_merges_unless_deferred(bus);
                    return n;
                }
                let split = frame::parse(frame, &parse_config(&self.fw))
                    .map_err(|e| e.to_string())
                    .and_then(|h| gso::split(frame, &h, mss).map_err(|e| e.to_string()));
                match split {
                    Ok(segments) => {
                        self.path.rx_superframes += 1;
                        let mut f = Vec::with_capacity(segments.first().map_or(0, |s| s.len()));
                        for s in &segments {
                            f.clear();
                            f.extend_from_slice(&s.header);
                            f.extend_from_slice(&frame[s.payload.clone()]);
                            self.receive(bus, &f);
                        }
                        return segments.len();
                    }
                    Err(e) => e,
                }
            }
            RxOffload::Unsupported(t) => format!("GSO type {t:#x} never negotiated"),
        };
        log::debug!(
            "superframe or partial-checksum frame of {} bytes dropped: {why}",
            frame.len()
        );
        self.path.rx_wire += 1;
        self.path.rx_malformed += 1;
        self.fw.count_rx_length_error();
        1
    }

    /// A frame from the wire: size check against the port MTU, parse, steering, RSS, RQ WQE,
    /// scatter, CQE. Frames that cannot be delivered are dropped and counted.
    pub fn receive(&mut self, bus: &mut Bus, frame: &[u8]) {
        let t0 = self.path.time_start();
        if self.port.holding() {
            // Frames held earlier go first (their RQs may have WQEs now).
            self.pause_tick(bus);
        }
        self.receive_frame(bus, frame);
        self.nic_at().close_merges_unless_deferred(bus);
        // A busy segment must not starve the RoCE timers the wire thread wakes for.
        let now = crate::clock::now_ns();
        if self.roce.timers_due(now) {
            self.roce_at().roce_tick(bus);
        }
        self.path.rx_ns += PathStats::time_since(t0);
    }

    fn receive_frame(&mut self, bus: &mut Bus, frame: &[u8]) {
        self.path.rx_wire += 1;
        if !self.fw.regs.oper_up() {
            self.path.rx_link_down += 1;
            return;
        }
        if let Some(mc) = crate::eth::pause::parse_mac_control(frame) {
            // MAC control frames end at the MAC: counted, honoured, never delivered.
            self.mac_control(bus, mc);
            return;
        }
        if self.fw.ib_mode() {
            // An IB port: its packets (`roce/ib_wire.rs`) go to the datagram engine; nothing
            // else reaches an IB link's receiver.
            if crate::roce::ib_wire::is_ib_frame(frame) {
                self.roce_at().ib_receive_wire(bus, frame);
            } else {
                self.path.rx_malformed += 1;
            }
            return;
        }
        if frame.len() > max_frame(&self.fw) {
            self.path.rx_oversize += 1;
            self.fw.count_rx_length_error();
            return;
        }
        // RoCE (v2 over UDP 4791, or v1 over EtherType 0x8915) to one of the port's GIDs: the
        // RDMA receive path, which the netdev never sees.
        if self.roce_at().roce_receive(bus, frame) {
            return;
        }
        self.nic_at().deliver(bus, frame);
    }

    /// The wire's carrier changed (the TAP went down or up): the port's operational state
    /// follows, with a PORT_CHANGE event when it changes.
    pub fn set_carrier(&mut self, bus: &mut Bus, up: bool) {
        let was = self.fw.regs.oper_up();
        self.fw.regs.carrier = up;
        log::info!("wire carrier {}", if up { "on" } else { "off" });
        if self.fw.regs.oper_up() != was {
            self.fw.port_change_event(bus);
        }
    }

    /// Raises the moderated completion events due by `now` (ns, the model's clock).
    pub fn cq_tick(&mut self, bus: &mut Bus, now: u64) {
        self.fw.cq_tick(bus, now);
    }

    /// Attaches the port's wire.
    pub fn attach(&mut self, port: Arc<dyn Wire>) {
        self.fw.regs.carrier = self.port.attach(port);
        let _ = self
            .fw
            .ib
            .set_link(self.fw.regs.link_up && self.fw.regs.carrier);
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
                self.nic_at().execute_sq(bus, page, sqn);
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
            self.nic_at().close_merges_unless_deferred(bus);
        }
        self.port.refresh_xoffs(&mut self.fw, now);
    }

    /// Delivers held frames in order, per RQ, while their RQs have WQEs.
    fn drain_held(&mut self, bus: &mut Bus) {
        let cfg = parse_config(&self.fw);
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
            if !self
                .nic_at()
                .deliver_via_tir(bus, &h.frame, &hdrs, h.tirn, h.flow_tag, h.prio, true, 1)
            {
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

    /// The NIC data path at work, lent the firmware, the port and the data path's counters.
    pub(crate) fn nic_at(&mut self) -> Nic<'_> {
        self.nic.at(&mut self.fw, &mut self.port, &mut self.path)
    }

    /// The RoCE engine at work, lent the firmware, the port and the data path's counters.
    pub(crate) fn roce_at(&mut self) -> Roce<'_> {
        self.roce.at(&mut self.fw, &self.port, &mut self.path)
    }

    /// When [`Roce::roce_tick`] is next due, from now (`roce/mod.rs`).
    pub fn roce_deadline(&self) -> Option<std::time::Duration> {
        self.roce.deadline(&self.port)
    }

    /// The earliest RoCE timer armed since the last call (ns, the model's clock).
    pub fn take_roce_armed(&mut self) -> Option<u64> {
        self.roce.take_armed()
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
    if cfg.link_ib {
        // An InfiniBand port (the VPI card's other personality): mlx5_ib reads the port
        // through MAD_IFC (no ib_virt) and its GIDs from GUIDInfo; 8 GIDs (code 0) as
        // GUIDInfo's GUIDCap says (`fw/ib_port.rs`). IPoIB's UD checksum and LSO offloads
        // (`roce/ipoib_offload.rs`; on an Ethernet port nothing uses them, so the Ethernet
        // personality keeps its profile).
        caps.set_general("port_type", 0);
        caps.set_general("gid_table_size", 0);
        caps.set_general("ipoib_basic_offloads", 1);
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
