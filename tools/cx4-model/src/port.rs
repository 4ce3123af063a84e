//! The port: its wire (`--tap`) and flow control on it, where the pause state (`pause.rs`), the
//! MAC control frames (`eth::pause`) and the port's DCB registers (`fw::qos`) meet.
//!
//! [`Port`] is a passive part of [`crate::hca::Hca`]: it reads the firmware's registers (link
//! speed, trust state, PFC/pause enables, the vport MAC) and counts into its PPCNT counters,
//! both lent per call; it never runs a queue itself. Where flow control reaches the data path
//! (running stalled SQs, delivering held frames) `Hca` does it (`hca.rs`).
//!
//! Receive: a MAC control frame is counted and never delivered; a PFC XOFF for a priority
//! with `pfcrx` (or an 802.3x pause with `pprx`: every priority) pauses it for quanta × 512
//! bit times at the port's speed. Send: [`Port::tx_blocked`] stops an SQ at the first WQE
//! whose frame has a paused priority; `Hca::pause_tick` runs it again once the pause
//! ends (XON or expiry). Lossless receive: a frame of a priority with `pfctx` (or any frame
//! with `pptx`) whose RQ has no WQE is held in a bounded buffer and the port sends XOFF;
//! `Hca::pause_tick` delivers held frames in order once WQEs are posted, then sends XON.
//!
//! A frame's priority, for both directions, follows the trust state: the VLAN PCP (untagged:
//! 0), or with DSCP trust an IP frame's DSCP through QPDPM. Real hardware schedules a send by
//! its SQ's TIS priority/TC; the model classifies the frame itself, head-of-line on its SQ.

use std::{
    collections::{BTreeSet, VecDeque},
    sync::Arc,
    time::{Duration, Instant},
};

use cx4_hw::qos::trust_state;

use crate::{
    bus::Bus,
    eth::pause::{self as mac, MacControl},
    fw::Firmware,
    pause::{Held, PortPause, NUM_PRIO},
    wire::Port as Wire, //
};

/// Slot of an 802.3x (global) XOFF in the pause state.
const GLOBAL_SLOT: usize = 0;

/// The port: the wire it sends on and its pause state (paused priorities, held frames,
/// XOFFs asserted, SQs stalled).
#[derive(Default)]
pub struct Port {
    /// The port's wire (`--tap`); frames sent without one go nowhere.
    wire: Option<Arc<dyn Wire>>,
    /// Pause state.
    pause: PortPause,
}

impl Port {
    /// Attaches the wire; returns its carrier.
    pub fn attach(&mut self, wire: Arc<dyn Wire>) -> bool {
        let up = wire.carrier();
        self.wire = Some(wire);
        up
    }

    /// The wire, if one is attached.
    pub fn wire(&self) -> Option<&Arc<dyn Wire>> {
        self.wire.as_ref()
    }

    /// Function-level reset: the pause state goes (the wire stays attached).
    pub fn reset(&mut self) {
        self.pause = Default::default();
    }

    /// Whether anything is paused or held (the data path then runs the pause timer).
    pub fn pausing(&self) -> bool {
        self.holding() || self.pause.any_paused()
    }

    /// Whether the partner paused any priority (the send path's fast check).
    pub fn any_paused(&self) -> bool {
        self.pause.any_paused()
    }

    /// Whether received frames are held for lossless priorities.
    pub fn holding(&self) -> bool {
        self.pause.held().0 > 0
    }

    /// Whether frames for RQ `rqn` are held (lossless receive keeps their order).
    pub fn holds_for(&self, rqn: u32) -> bool {
        self.pause.holds_for(rqn)
    }

    /// Whether frames of priority `prio` may not leave now (a pause from the partner).
    pub fn is_paused(&self, prio: u8) -> bool {
        self.pause.any_paused() && self.pause.is_paused(prio, Instant::now())
    }

    /// SQ `sqn` (rung through UAR `page`) stalls on a pause.
    pub(crate) fn stall(&mut self, page: u32, sqn: u32) {
        self.pause.stalled.insert((page, sqn));
    }

    /// The SQs stalled on a pause, as `(page, sqn)`; they are no longer stalled.
    pub(crate) fn take_stalled(&mut self) -> BTreeSet<(u32, u32)> {
        std::mem::take(&mut self.pause.stalled)
    }

    /// The held frames, in order; the caller puts back what it could not deliver.
    pub(crate) fn take_held(&mut self) -> VecDeque<Held> {
        self.pause.take_held()
    }

    /// Puts back held frames not delivered yet, ahead of any held since.
    pub(crate) fn put_back(&mut self, rest: VecDeque<Held>) {
        self.pause.put_back(rest);
    }

    /// The port's speed in bit/s (PTYS operational protocol; 10 Gb/s if unknown).
    pub fn link_bps(&self, fw: &Firmware) -> u64 {
        use cx4_hw::regs::eth_link_mode::*;
        let p = fw.regs.eth_proto;
        let any = |modes: &[u8]| modes.iter().any(|m| p & proto_bit(*m) != 0);
        let gbps: u64 = if any(&[ETH_100GBASE_CR4, ETH_100GBASE_SR4, ETH_100GBASE_KR4]) {
            100
        } else if any(&[ETH_50GBASE_CR2, ETH_50GBASE_KR2, ETH_50GBASE_SR2]) {
            50
        } else if any(&[ETH_40GBASE_CR4, ETH_40GBASE_KR4, ETH_40GBASE_SR4]) {
            40
        } else if any(&[ETH_25GBASE_CR, ETH_25GBASE_KR, ETH_25GBASE_SR]) {
            25
        } else if any(&[ETH_1000BASE_KX, ETH_1000BASE_CX_SGMII, ETH_1000BASE_T]) {
            1
        } else if any(&[ETH_100BASE_TX]) {
            return 100_000_000;
        } else {
            10
        };
        gbps * 1_000_000_000
    }

    /// The priority of `frame` under the port's trust state.
    pub fn frame_prio(&self, fw: &Firmware, frame: &[u8]) -> u8 {
        let q = &fw.regs.qos;
        mac::frame_priority(frame, q.trust == trust_state::DSCP, &q.dscp2prio)
    }

    /// How long the XOFF the port sends lasts at the link partner.
    fn xoff_time(&self, fw: &Firmware) -> Duration {
        mac::pause_time(mac::XOFF_QUANTA, self.link_bps(fw))
    }

    /// A received MAC control frame: counted, honoured per `pfcrx` / `pprx`. Returns whether
    /// it ended a pause (the caller runs the stalled SQs again).
    pub(crate) fn mac_control(&mut self, fw: &mut Firmware, mc: MacControl) -> bool {
        let now = Instant::now();
        let bps = self.link_bps(fw);
        let q = fw.regs.qos.clone();
        let c = &mut fw.nic.port.pause;
        c.mac_control_rx += 1;
        let mut resumed = false;
        match mc {
            MacControl::Pfc { enable, quanta } => {
                for (p, &pq) in quanta.iter().enumerate() {
                    if enable & (1 << p) == 0 {
                        continue;
                    }
                    c.rx_pause[p] += 1;
                    if q.pfc_rx & (1 << p) != 0 {
                        let d = mac::pause_time(pq, bps);
                        resumed |= self.pause.pause_tx(c, p, d, now);
                    }
                }
                log::debug!(
                    "PFC received: enable {enable:#04x} quanta {quanta:?}, honoured {:#04x}",
                    enable & q.pfc_rx
                );
            }
            MacControl::Pause { quanta } => {
                c.pause_rx += 1;
                c.rx_pause[0] += 1;
                if q.pause_rx {
                    let d = mac::pause_time(quanta, bps);
                    for p in 0..NUM_PRIO {
                        resumed |= self.pause.pause_tx(c, p, d, now);
                    }
                }
                log::debug!(
                    "802.3x pause received: quanta {quanta}, honoured {}",
                    q.pause_rx
                );
            }
            MacControl::Unsupported { opcode } => {
                c.unsupported_opcodes += 1;
                log::debug!("MAC control frame with opcode {opcode:#06x} ignored");
            }
        }
        resumed
    }

    /// Whether the first frame of a WQE's output may not be sent now (its priority is paused).
    /// `first_frame` gives its first bytes; it is called only while a priority is paused.
    pub(crate) fn tx_blocked(&self, fw: &Firmware, first_frame: impl FnOnce() -> Vec<u8>) -> bool {
        self.pause.any_paused()
            && self
                .pause
                .is_paused(self.frame_prio(fw, &first_frame()), Instant::now())
    }

    /// Holds a received frame for a lossless priority whose RQ cannot take it, asserting (or
    /// refreshing) XOFF. Returns false when the buffer is full (the caller drops the frame).
    pub(crate) fn hold_frame(&mut self, fw: &mut Firmware, h: Held) -> bool {
        let prio = h.prio;
        if !self.pause.hold(h) {
            log::debug!("lossless buffer full: priority {prio} frame dropped");
            return false;
        }
        let now = Instant::now();
        let slot = self.xoff_slot(fw, prio);
        let due = self
            .pause
            .xoff(slot)
            .is_none_or(|x| now.saturating_duration_since(x.last_sent) >= self.xoff_time(fw) / 2);
        if due {
            self.send_xoff(fw, slot, now, mac::XOFF_QUANTA);
        }
        true
    }

    /// The XOFF slot of priority `p`: its own with PFC, the global one with 802.3x pause.
    fn xoff_slot(&self, fw: &Firmware, p: u8) -> usize {
        let q = &fw.regs.qos;
        if q.pfc_tx & (1 << p) != 0 {
            usize::from(p)
        } else {
            GLOBAL_SLOT
        }
    }

    /// Sends a pause frame for `slot` (`quanta` 0: XON) and counts it.
    fn send_xoff(&mut self, fw: &mut Firmware, slot: usize, now: Instant, quanta: u16) {
        let global = fw.regs.qos.pfc_tx & (1 << slot) == 0;
        let src = fw.vport.mac;
        let frame = if global {
            mac::pause_frame(src, quanta)
        } else {
            mac::pfc_frame(src, 1 << slot, quanta)
        };
        let c = &mut fw.nic.port.pause;
        c.mac_control_tx += 1;
        c.tx_pause[slot] += 1;
        if global {
            c.pause_tx += 1;
        }
        if quanta == 0 {
            self.pause.xon_sent(c, slot, now);
        } else {
            self.pause.xoff_sent(slot, now);
        }
        self.pause.global = global && slot == GLOBAL_SLOT;
        log::debug!(
            "{} {} sent for {}",
            if global { "pause" } else { "PFC" },
            if quanta == 0 { "XON" } else { "XOFF" },
            if global {
                "all priorities".to_string()
            } else {
                format!("priority {slot}")
            }
        );
        if fw.regs.oper_up() {
            if let Some(p) = &self.wire {
                if let Err(e) = p.send(&frame) {
                    log::debug!("{}: pause frame not sent: {e}", p.name());
                }
            }
        }
    }

    /// Ends expired pauses; returns whether one ended (the caller runs the stalled SQs again).
    pub(crate) fn expire(&mut self, fw: &mut Firmware, now: Instant) -> bool {
        self.pause.expire(&mut fw.nic.port.pause, now)
    }

    /// Sends XON for slots with nothing held and refreshes the XOFF of the others before the
    /// partner's pause runs out.
    pub(crate) fn refresh_xoffs(&mut self, fw: &mut Firmware, now: Instant) {
        let refresh = self.xoff_time(fw) / 2;
        for slot in 0..NUM_PRIO {
            let Some(x) = self.pause.xoff(slot) else {
                continue;
            };
            let holding = if self.pause.global && slot == GLOBAL_SLOT {
                self.pause.held().0 > 0
            } else {
                self.pause.holds_prio(slot as u8)
            };
            if !holding {
                self.send_xoff(fw, slot, now, 0);
            } else if now.saturating_duration_since(x.last_sent) >= refresh {
                self.send_xoff(fw, slot, now, mac::XOFF_QUANTA);
            }
        }
    }

    /// How long the wire thread may wait before `Hca::pause_tick` is due; `None` when
    /// nothing is paused, held or asserted and no `rx-starve` fault runs (its end is a
    /// deadline: held frames drain then without waiting for another frame).
    pub fn pause_deadline(&self, fw: &Firmware, bus: &Bus) -> Option<Duration> {
        let now = Instant::now();
        let starve_end = bus.faults.rx_starve_end().filter(|&t| t > now);
        self.pause
            .deadline(self.xoff_time(fw) / 2, now)
            .into_iter()
            .chain(starve_end)
            .min()
            .map(|t| t.saturating_duration_since(now))
    }

    /// The pause part of the control socket's `qos` line: `paused=0x.. xoff=0x.. held=N/B
    /// stalled_sqs=N` and per priority `prioP=rx_pause/rx_pause_duration_us/
    /// rx_pause_transition/tx_pause/tx_pause_duration_us`, then the 802.3 counters.
    pub fn pause_line(&self, fw: &Firmware) -> String {
        let c = &fw.nic.port.pause;
        let (n, bytes) = self.pause.held();
        let per: Vec<String> = (0..NUM_PRIO)
            .map(|p| {
                format!(
                    "prio{p}={}/{}/{}/{}/{}",
                    c.rx_pause[p],
                    c.rx_pause_duration[p],
                    c.rx_pause_transition[p],
                    c.tx_pause[p],
                    c.tx_pause_duration[p]
                )
            })
            .collect();
        format!(
            "paused={:#04x} xoff={:#04x} held={n}/{bytes} stalled_sqs={} {} mac_control rx={} \
             tx={} pause_rx={} pause_tx={} unsupported={}",
            self.pause.paused_mask(),
            self.pause.xoff_mask(),
            self.pause.stalled.len(),
            per.join(" "),
            c.mac_control_rx,
            c.mac_control_tx,
            c.pause_rx,
            c.pause_tx,
            c.unsupported_opcodes
        )
    }
}

#[cfg(test)]
#[path = "port_tests.rs"]
mod tests;
