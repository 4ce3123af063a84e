//! The modelled ConnectX-4 function: config space, BAR0 and its initialization segment,
//! MSI-X and guest memory. Commands, pages, EQs and the data path hang off this type.

use std::{fs::File, mem::size_of, time::Instant};

use zerocopy::IntoBytes;

use cx4_hw::{
    eq::event_type,
    iseg::{self, CmdqSize, HealthBuffer},
    pci::BAR0_SIZE,
};

use crate::{
    bus::Bus,
    cmdq::{self, CmdQueue, Delivery},
    config::Config,
    faults::Fault,
    fw::new_event,
    hca::Hca,
    hostile::CmdLie,
    pci_cfg::{PciConfig, MSIX_TABLE_OFFSET}, //
};

/// VFIO region index of BAR0.
pub const REGION_BAR0: u32 = 0;
/// VFIO region index of the configuration space.
pub const REGION_CONFIG: u32 = 7;
/// VFIO IRQ index of MSI-X.
pub const IRQ_MSIX: u32 = 2;

/// The command queue geometry the model advertises: 32 slots of 64 bytes (one 4 KiB page
/// holds 2^5 entries of 2^6 bytes, as the PRM requires log_sz + log_stride <= 12).
pub const CMDQ_GEOMETRY: CmdqSize = CmdqSize {
    log_size: 5,
    log_stride: 6,
};

/// Errors the device reports for a region access; they become vfio-user errnos.
#[derive(Debug)]
pub enum AccessError {
    /// No such region, or outside it.
    OutOfRange,
    /// The access width or alignment is not supported by the register.
    BadAccess,
}

/// The device: the PCI function's configuration space and BAR0 (initialization segment,
/// command queue, UAR doorbells) in front of its parts. It owns the bus context once and lends
/// it to the parts per call; the transport and the runtime's threads reach the parts only
/// through it.
pub struct Device {
    cfg: Config,
    pci: PciConfig,
    /// Guest memory, interrupt vectors and faults, lent to the parts per call.
    #[cfg(not(test))]
    bus: Bus,
    /// Guest memory, interrupt vectors and faults (host tests look at them).
    #[cfg(test)]
    pub(crate) bus: Bus,
    /// Firmware, NIC data path, RoCE engine and port.
    #[cfg(not(test))]
    hca: Hca,
    /// Firmware, NIC data path, RoCE engine and port (host tests look at them).
    #[cfg(test)]
    pub(crate) hca: Hca,
    created: Instant,
    reset_at: Instant,
    cmdq_addr_h: u32,
    cmdq_addr_l: u32,
    /// Command doorbell rings seen (for the log).
    doorbells: u64,
    /// BAR0 reads (each a blocking round trip for the guest) and writes (doorbells).
    bar_reads: u64,
    /// See [`Device::bar_reads`].
    bar_writes: u64,
    /// Fatal health syndrome raised (by fault injection); firmware stops answering.
    health_synd: Option<u8>,
    /// The fatal syndrome survives function resets (a hardware fault) until cleared.
    health_persist: bool,
    /// Wakes the thread that runs the RoCE and pause timers ([`Device::wire_tick`]) from
    /// its poll(2).
    timer_wake: Option<std::sync::Arc<crate::wake::Wake>>,
    /// Until when that thread sleeps (the model's clock, ns; `u64::MAX`: until woken).
    timer_sleep_until: u64,
}

impl Device {
    /// A device in its power-on state.
    pub fn new(cfg: &Config) -> Self {
        let now = Instant::now();
        Device {
            pci: PciConfig::new(cfg.chip.device_id(), cfg.msix_vectors),
            bus: Bus::new(cfg.msix_vectors),
            hca: Hca::new(cfg),
            cfg: cfg.clone(),
            created: now,
            reset_at: now,
            cmdq_addr_h: 0,
            cmdq_addr_l: 0,
            doorbells: 0,
            bar_reads: 0,
            timer_wake: None,
            timer_sleep_until: u64::MAX,
            bar_writes: 0,
            health_synd: None,
            health_persist: false,
        }
    }

    /// Applies a fault (control socket or command line).
    pub fn inject(&mut self, f: &Fault) -> Result<(), String> {
        log::warn!("fault injected: {f:?}");
        match *f {
            Fault::Health { synd, persist } => {
                self.health_synd = Some(synd);
                self.health_persist = persist;
                log::error!(
                    "fatal health syndrome {synd:#x} raised; firmware stops executing commands"
                );
            }
            Fault::Pages(n) => {
                if !self.hca.fw.page_request(&mut self.bus, n) {
                    return Err("no EQ takes page requests".into());
                }
                // The demand moves only with a request the driver saw: up for a give, down for
                // pages asked back (else QUERY_PAGES would ask for them again).
                let d = self
                    .hca
                    .fw
                    .pages
                    .demand
                    .entry(crate::pages::Stage::Regular)
                    .or_default();
                *d = d.saturating_add_signed(n);
            }
            Fault::GenCqe {
                cqn,
                solicited,
                count,
            } => {
                // Test hook: requester completions numbered by the CQ's producer index.
                use cx4_hw::cq::cqe::{op_own, opcode, Cqe64};
                for _ in 0..count {
                    let pi = self.hca.fw.cqs.get(&cqn).map_or(0, |c| c.pi);
                    let mut cqe = Cqe64::new();
                    cqe.set_op_own(op_own(opcode::REQ, 0, 0).into());
                    cqe.set_wqe_counter(pi & 0xffff);
                    self.hca
                        .fw
                        .post_cqe(&mut self.bus, cqn, &cqe.0, solicited)?;
                }
            }
            Fault::Link(up) => {
                let was = self.hca.fw.regs.oper_up();
                self.hca.fw.regs.link_up = up;
                if self.hca.fw.regs.oper_up() != was {
                    self.hca.fw.port_change_event(&mut self.bus);
                }
            }
            Fault::DelayIrq { vector, ms } => {
                self.bus.msix.delay_ms.insert(vector, ms);
            }
            Fault::Clear => {
                self.bus.msix.delay_ms.clear();
                if self.health_synd.take().is_some() {
                    log::info!("fatal health syndrome cleared");
                }
                self.health_persist = false;
                self.bus.faults.add(f);
                self.hca.roce_at().roce_wire_flush(&mut self.bus);
            }
            Fault::RoceWire(_) => {
                self.bus.faults.add(f);
                self.hca.roce_wire_fault_changed(&mut self.bus);
            }
            _ => self.bus.faults.add(f),
        }
        Ok(())
    }

    /// A command doorbell: executes every command whose slot bit is set.
    fn ring_cmd_doorbell(&mut self, bits: u32) {
        if self.health_synd.is_some() {
            log::warn!("command doorbell {bits:#x} ignored: firmware is in a fatal state");
            return;
        }
        let q = CmdQueue {
            base: (u64::from(self.cmdq_addr_h) << 32) | u64::from(self.cmdq_addr_l & !0xfff),
            log_size: CMDQ_GEOMETRY.log_size,
            log_stride: CMDQ_GEOMETRY.log_stride,
        };
        // Completion events go to a command EQ that existed when the doorbell rang: the
        // CREATE_EQ that makes the command EQ completes by polling only (mlx5 frees the entry
        // after polling it, so a late event for that slot would name a freed entry).
        let events = self.hca.fw.eqs.values().any(|e| e.wants(event_type::CMD));
        let mut done = 0u32;
        for slot in 0..32u32 {
            if bits & (1 << slot) == 0 {
                continue;
            }
            if slot >= 1 << q.log_size {
                log::warn!("command doorbell for slot {slot} beyond the queue, ignored");
                continue;
            }
            match q.fetch(&self.bus.mem, slot) {
                Ok(None) => {}
                Err((entry, d)) => {
                    log::warn!("command slot {slot}: delivery error {d:?}");
                    cmdq::finish(&self.bus.mem, entry, d);
                    done |= 1 << slot;
                }
                Ok(Some(f)) => {
                    match self.hca.fw.execute(&mut self.bus, &f.input, f.out_len) {
                        // Stalled by fault injection: the entry stays owned by hardware.
                        None => {}
                        Some(mut out) => {
                            let opcode = u16::from_be_bytes([f.input[0], f.input[1]]);
                            let lie = self.bus.faults.liar.cmd(opcode, &mut out);
                            let wrong_token = lie == Some(CmdLie::Token);
                            if let Some(CmdLie::Delivery(code)) = lie {
                                cmdq::finish(&self.bus.mem, f.entry, Delivery::from_code(code));
                            } else if let Err(d) = q.complete(&self.bus.mem, &f, &out, wrong_token)
                            {
                                log::warn!("command slot {slot}: output delivery error {d:?}");
                                cmdq::finish(&self.bus.mem, f.entry, d);
                            }
                            done |= 1 << slot;
                        }
                    }
                }
            }
        }
        // QP transitions the commands made reach the RoCE engine (a 2ERR flushes now).
        self.hca.roce_at().roce_sync(&mut self.bus);
        if done != 0 && events {
            let mut eqe = new_event(event_type::CMD, 0);
            eqe.cmd_mut().set_vector(done);
            self.hca.fw.post_event(&mut self.bus, &eqe);
        }
    }

    /// One line of statistics for the control socket.
    pub fn stats_line(&self) -> String {
        let ops: Vec<String> = self
            .hca
            .fw
            .stats
            .iter()
            .map(|(op, s)| {
                format!(
                    "{}={}/{}",
                    cx4_hw::opcode::opcode_name(*op),
                    s.count,
                    s.errors
                )
            })
            .collect();
        let eqs: Vec<String> = self
            .hca
            .fw
            .eqs
            .values()
            .map(|e| format!("eq{}:{}ev/{}irq", e.eqn, e.events, e.interrupts))
            .collect();
        format!(
            "state={:?} pages_held={} doorbells={} bar_reads={} bar_writes={} cmds {} eqs {} cq_moderated={} path {}",
            self.hca.fw.state,
            self.hca.fw.pages.held(),
            self.doorbells,
            self.bar_reads,
            self.bar_writes,
            ops.join(","),
            eqs.join(","),
            self.hca.fw.cq_timers.released,
            self.hca.path.line()
        ) + " "
            + &self.hca.roce.stats().line()
    }

    /// The hostile card's tally for the control socket's `lies` command, one line (see
    /// [`crate::hostile::Liar::line`]).
    pub fn lies_line(&self) -> String {
        self.bus.faults.liar.line()
    }

    /// The port's DCB state for the control socket's `qos` command, one line (see
    /// [`crate::fw::qos::QosState::line`]).
    pub fn qos_line(&self) -> String {
        format!(
            "{} {}",
            self.hca.fw.regs.qos.line(),
            self.hca.port.pause_line(&self.hca.fw)
        )
    }

    /// The RoCE state for the control socket's `roce` command, one line (see
    /// [`crate::fw::RdmaObjects::line`]), then the engine's counters
    /// ([`crate::roce::engine::RoceStats::line`]).
    pub fn roce_line(&self) -> String {
        format!(
            "{} {}; {}; {}; {}",
            self.hca.fw.rdma.line(),
            self.hca.roce.stats().line(),
            self.hca.fw.cong.line(),
            self.hca.roce.cong().line(),
            self.hca.roce.odp_line()
        )
    }

    /// The page accounting summary (logged at disconnect).
    pub fn page_report(&self) -> String {
        self.hca.fw.pages.report()
    }

    /// Function-level reset: firmware starts initializing again, all state is dropped.
    pub fn reset(&mut self) {
        log::info!("device reset");
        self.reset_at = Instant::now();
        self.cmdq_addr_h = 0;
        self.cmdq_addr_l = 0;
        self.bus.msix.reset();
        self.hca.reset(&self.bus);
        if !self.health_persist {
            self.health_synd = None;
        } else if let Some(s) = self.health_synd {
            log::warn!("fatal health syndrome {s:#x} persists across the reset");
        }
    }

    fn initializing(&self) -> bool {
        self.reset_at.elapsed().as_millis() < u128::from(self.cfg.init_delay_ms)
    }

    /// The health buffer: zero but for the firmware version, and for the recovery-flow bit and
    /// syndrome once a fatal error was raised (health.c reads both).
    fn health_buffer(&self, fw_rev: u32) -> HealthBuffer {
        let mut hb = HealthBuffer::default();
        hb.fw_ver.set(fw_rev);
        if let Some(synd) = self.health_synd {
            hb.rfr_severity = iseg::HEALTH_RFR;
            hb.synd = synd;
        }
        hb
    }

    /// Host-order value of the 32-bit initialization-segment word at `off` (4-aligned).
    fn iseg_word(&self, off: usize) -> u32 {
        let (fw_rev, cmdif_sub) = self.cfg.fw.to_regs(self.cfg.cmdif_rev);
        // The internal timer counts device clock cycles (device_frequency_khz), on the clock
        // completions are stamped with (`Firmware::post_cqe_at`).
        let ns = crate::clock::device_cycles(
            crate::clock::now_ns(),
            self.hca.fw.caps.general("device_frequency_khz"),
        );
        match off {
            iseg::FW_REV => fw_rev,
            iseg::CMDIF_REV_FW_SUB => cmdif_sub,
            iseg::CMDQ_ADDR_H => self.cmdq_addr_h,
            // Bits 10:8 (nic_interface) read 0: the driver owns the NIC interface.
            iseg::CMDQ_ADDR_L_SZ => (self.cmdq_addr_l & !0xfff) | CMDQ_GEOMETRY.to_reg(),
            iseg::INITIALIZING if self.initializing() => iseg::INITIALIZING_BIT,
            o if (iseg::HEALTH..iseg::HEALTH + size_of::<HealthBuffer>()).contains(&o) => {
                let hb = self.health_buffer(fw_rev);
                let b = &hb.as_bytes()[o - iseg::HEALTH..][..4];
                u32::from_be_bytes([b[0], b[1], b[2], b[3]])
            }
            iseg::INTERNAL_TIMER_H => (ns >> 32) as u32,
            iseg::INTERNAL_TIMER_L => ns as u32,
            // Firmware ticks its health counter while alive; ~10 times a second here.
            iseg::HEALTH_COUNTER => (self.created.elapsed().as_millis() / 100) as u32,
            _ => 0,
        }
    }

    fn iseg_write(&mut self, off: usize, v: u32) {
        match off {
            iseg::CMDQ_ADDR_H => self.cmdq_addr_h = v,
            iseg::CMDQ_ADDR_L_SZ => self.cmdq_addr_l = v,
            iseg::CMD_DBELL => {
                self.doorbells += 1;
                self.ring_cmd_doorbell(v);
            }
            _ => log::debug!("write to read-only init segment word {off:#x} = {v:#x} ignored"),
        }
    }

    /// A read of BAR0. The init segment is big-endian; accesses are split into dwords.
    fn bar0_read(&mut self, off: u64, out: &mut [u8]) -> Result<(), AccessError> {
        let end = off
            .checked_add(out.len() as u64)
            .ok_or(AccessError::OutOfRange)?;
        if end > BAR0_SIZE {
            return Err(AccessError::OutOfRange);
        }
        for (i, b) in out.iter_mut().enumerate() {
            let a = off as usize + i;
            let word = if a < iseg::SIZE {
                self.iseg_word(a & !3)
            } else {
                0
            };
            *b = word.to_be_bytes()[a & 3];
        }
        if (off as usize) < iseg::SIZE {
            self.bus.faults.liar.bar(off, out);
        }
        if self.cfg.verbose {
            log::debug!("BAR0 read {off:#x} len {} -> {:02x?}", out.len(), out);
        }
        Ok(())
    }

    fn bar0_write(&mut self, off: u64, data: &[u8]) -> Result<(), AccessError> {
        let end = off
            .checked_add(data.len() as u64)
            .ok_or(AccessError::OutOfRange)?;
        if end > BAR0_SIZE {
            return Err(AccessError::OutOfRange);
        }
        if self.cfg.verbose {
            log::debug!("BAR0 write {off:#x} {:02x?}", data);
        }
        if (off as usize) < iseg::SIZE {
            if !off.is_multiple_of(4) || !data.len().is_multiple_of(4) {
                log::warn!(
                    "unaligned init segment write at {off:#x} len {}",
                    data.len()
                );
                return Err(AccessError::BadAccess);
            }
            for (i, w) in data.chunks_exact(4).enumerate() {
                let v = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
                self.iseg_write(off as usize + 4 * i, v);
            }
        } else if off < u64::from(MSIX_TABLE_OFFSET) {
            let page = (off / 4096) as u32;
            let in_page = off % 4096;
            if in_page + data.len() as u64 > 4096 {
                return Err(AccessError::BadAccess);
            }
            if self.hca.fw.uars.contains_key(&page)
                && self
                    .hca
                    .uar_send_doorbell(&mut self.bus, page, in_page, data)
            {
                return Ok(());
            }
            self.hca.fw.uar_doorbell(&mut self.bus, page, in_page, data);
        }
        Ok(())
    }

    /// A read of a VFIO region.
    pub fn region_read(
        &mut self,
        region: u32,
        off: u64,
        out: &mut [u8],
    ) -> Result<(), AccessError> {
        match region {
            REGION_CONFIG => {
                self.pci.read(off, out);
                Ok(())
            }
            REGION_BAR0 => {
                self.bar_reads += 1;
                self.bar0_read(off, out)
            }
            _ => Err(AccessError::OutOfRange),
        }
    }

    /// A write of a VFIO region.
    pub fn region_write(&mut self, region: u32, off: u64, data: &[u8]) -> Result<(), AccessError> {
        match region {
            REGION_CONFIG => {
                let was_master = self.pci.bus_master();
                self.pci.write(off, data);
                if was_master != self.pci.bus_master() {
                    log::info!(
                        "bus master {}",
                        if self.pci.bus_master() { "on" } else { "off" }
                    );
                }
                Ok(())
            }
            REGION_BAR0 => {
                self.bar_writes += 1;
                let r = self.bar0_write(off, data);
                self.kick_timers();
                r
            }
            _ => Err(AccessError::OutOfRange),
        }
    }

    /// Guest memory, for the transport's DMA_MAP and DMA_UNMAP: the client maps and unmaps
    /// the regions the parts then reach through the bus context.
    pub fn guest_memory(&mut self) -> &mut crate::guest_mem::GuestMem {
        &mut self.bus.mem
    }

    /// The number of MSI-X vectors.
    pub fn msix_vectors(&self) -> usize {
        self.bus.msix.len()
    }

    /// Attaches the port's wire.
    pub fn attach(&mut self, port: std::sync::Arc<dyn crate::wire::Port>) {
        self.hca.attach(port);
    }

    /// When the timer thread (the wire's receive loop) must call [`Device::wire_tick`] even
    /// if the segment stays quiet: the pause timer (`port.rs`), a RoCE requester's ACK or RNR
    /// timer, a frame the `roce-wire` fault holds back. The thread sleeps until then: a timer
    /// armed earlier meanwhile (by a doorbell) wakes it ([`Device::set_timer_wake`]).
    pub fn wire_deadline(&mut self) -> Option<std::time::Duration> {
        let d = self
            .hca
            .pause_deadline(&self.bus)
            .into_iter()
            .chain(self.hca.roce_deadline())
            .min();
        self.hca.take_roce_armed();
        self.timer_sleep_until = d.map_or(u64::MAX, |d| {
            crate::clock::now_ns().saturating_add(d.as_nanos().try_into().unwrap_or(u64::MAX))
        });
        d
    }

    /// Hands the timer thread's wake-up to the device.
    pub fn set_timer_wake(&mut self, wake: std::sync::Arc<crate::wake::Wake>) {
        self.timer_wake = Some(wake);
    }

    /// Wakes the timer thread if a doorbell armed a RoCE timer (an ACK timer, or responses
    /// to stream) earlier than it sleeps: with nothing coming from the segment — requests
    /// looped back inside the card, a DCT that drops a wrong key — it would sleep through it.
    fn kick_timers(&mut self) {
        let Some(at) = self.hca.take_roce_armed() else {
            return;
        };
        if at < self.timer_sleep_until {
            self.timer_sleep_until = at;
            if let Some(w) = &self.timer_wake {
                w.kick();
            }
        }
    }

    /// The wire thread's timers: pause expiry and the RoCE engine's.
    pub fn wire_tick(&mut self) {
        self.hca.pause_tick(&mut self.bus);
        self.hca.roce_at().roce_tick(&mut self.bus);
    }

    /// A burst of received frames starts: LRO merges stay open over it.
    pub fn rx_burst_begin(&mut self) {
        self.hca.nic.set_defer(true);
    }

    /// A frame from the wire with its vnet offload metadata (see
    /// [`Hca::receive_offloaded`]); the number of segments it counted as.
    pub fn receive_offloaded(
        &mut self,
        frame: &mut [u8],
        offload: crate::wire::vnet::RxOffload,
        truncated: bool,
    ) -> usize {
        self.hca
            .receive_offloaded(&mut self.bus, frame, offload, truncated)
    }

    /// The burst ended: the LRO merges it left open close.
    pub fn rx_burst_end(&mut self) {
        self.hca.nic.set_defer(false);
        self.hca.nic_at().close_merges(&mut self.bus);
    }

    /// The wire's carrier changed (see [`Hca::set_carrier`]).
    pub fn set_carrier(&mut self, up: bool) {
        self.hca.set_carrier(&mut self.bus, up);
    }

    /// Raises the moderated completion events due by `now` (ns, the model's clock).
    pub fn cq_tick(&mut self, now: u64) {
        self.hca.cq_tick(&mut self.bus, now);
    }

    /// Hands the CQ moderation timer's wake-up to the firmware (`fw/moderation.rs`).
    pub fn set_cq_timer_wake(&mut self, wake: std::sync::Arc<std::sync::Condvar>) {
        self.hca.fw.cq_timers.wake = Some(wake);
    }

    /// When the next held-back completion event is due (ns), if any.
    pub fn cq_timer_next(&self) -> Option<u64> {
        self.hca.fw.cq_timers.next()
    }

    /// SET_IRQS for MSI-X.
    pub fn set_msix(
        &mut self,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> std::io::Result<()> {
        self.bus.msix.set(flags, start, count, fds)
    }
}

#[cfg(test)]
#[path = "device_testing.rs"]
mod testing;

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(extra: &str) -> Device {
        let args = format!("--socket /x --init-delay-ms 0 {extra}");
        Device::new(&Config::from_args(args.split_whitespace().map(String::from)).unwrap())
    }

    fn rd32(d: &mut Device, off: u64) -> u32 {
        let mut b = [0; 4];
        d.region_read(REGION_BAR0, off, &mut b).unwrap();
        u32::from_be_bytes(b)
    }

    #[test]
    fn init_segment_is_big_endian_with_the_configured_firmware() {
        let mut d = dev("--fw-version 12.28.2006");
        // The kernel's mellanox_check_broken_intx_masking reads these two words.
        assert_eq!(rd32(&mut d, 0), 28 << 16 | 12);
        assert_eq!(rd32(&mut d, 4), 5 << 16 | 2006);
        let mut b = [0; 4];
        d.region_read(REGION_BAR0, 0, &mut b).unwrap();
        assert_eq!(b, [0x00, 0x1c, 0x00, 0x0c], "byte order on the bus");
    }

    #[test]
    fn initializing_bit_clears_after_the_delay() {
        let mut d = dev("--init-delay-ms 200");
        assert_ne!(
            rd32(&mut d, iseg::INITIALIZING as u64) & iseg::INITIALIZING_BIT,
            0
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
        assert_eq!(
            rd32(&mut d, iseg::INITIALIZING as u64) & iseg::INITIALIZING_BIT,
            0
        );
        d.reset();
        assert_ne!(
            rd32(&mut d, iseg::INITIALIZING as u64) & iseg::INITIALIZING_BIT,
            0
        );
    }

    #[test]
    fn cmdq_address_keeps_the_advertised_geometry() {
        let mut d = dev("");
        assert_eq!(rd32(&mut d, 0x14) & 0xff, 0x56);
        d.region_write(REGION_BAR0, 0x10, &0x1u32.to_be_bytes())
            .unwrap();
        d.region_write(REGION_BAR0, 0x14, &0xabcd_e000u32.to_be_bytes())
            .unwrap();
        assert_eq!(rd32(&mut d, 0x10), 1);
        assert_eq!(rd32(&mut d, 0x14), 0xabcd_e056);
        assert_eq!(rd32(&mut d, 0x14) >> 8 & 7, 0, "nic_interface must read 0");
    }

    #[test]
    fn health_counter_ticks() {
        let mut d = dev("");
        let a = rd32(&mut d, iseg::HEALTH_COUNTER as u64);
        std::thread::sleep(std::time::Duration::from_millis(220));
        assert!(rd32(&mut d, iseg::HEALTH_COUNTER as u64) > a);
    }

    #[test]
    fn out_of_range_and_unaligned_accesses_are_errors() {
        let mut d = dev("");
        let mut b = [0; 8];
        assert!(d.region_read(REGION_BAR0, BAR0_SIZE - 4, &mut b).is_err());
        assert!(d.region_read(REGION_BAR0, u64::MAX, &mut b).is_err());
        assert!(d.region_read(3, 0, &mut b).is_err());
        assert!(d.region_write(REGION_BAR0, 0x11, &[1, 2, 3, 4]).is_err());
    }
}
