//! Event queues: rings of 64-byte EQEs in guest memory, written with the ownership bit, armed
//! through the UAR page, one MSI-X interrupt per arm.

use cx4_hw::eq::{eqe::Eqe, eqe_owner_for};
use zerocopy::IntoBytes;

use crate::{faults::FaultPlan, guest_mem::GuestMem, irq::MsiX};

/// One event queue.
#[derive(Debug)]
pub struct Eq {
    /// EQ number.
    pub eqn: u8,
    /// log2 of the number of entries.
    pub log_size: u8,
    /// Page addresses of the ring.
    pub pas: Vec<u64>,
    /// log2 of the page size of `pas` (12 + eqc.log_page_size).
    pub page_shift: u8,
    /// UAR page the EQ's doorbells are rung on.
    pub uar_page: u32,
    /// MSI-X vector.
    pub vector: u16,
    /// Event types delivered to this EQ (bit per type).
    pub mask: [u64; 4],
    /// Producer index (EQEs written).
    pub pi: u32,
    /// Consumer index as last reported by the driver.
    pub ci: u32,
    /// Armed: the next EQE raises the interrupt.
    pub armed: bool,
    /// Set once the ring overflowed; the EQ then stops (as hardware does).
    pub overrun: bool,
    /// EQEs written.
    pub events: u64,
    /// Interrupts raised.
    pub interrupts: u64,
}

impl Eq {
    /// Number of entries.
    pub fn size(&self) -> u32 {
        1 << self.log_size
    }

    /// Whether events of type `t` go to this EQ.
    pub fn wants(&self, t: u8) -> bool {
        self.mask[usize::from(t / 64)] & (1u64 << (t % 64)) != 0
    }

    fn slot_addr(&self, idx: u32) -> Option<u64> {
        let off = u64::from(idx & (self.size() - 1)) * Eqe::SIZE as u64;
        crate::fw::ring_addr(&self.pas, self.page_shift, off)
    }

    /// Writes `eqe` with the ownership bit for the current pass, and raises the interrupt if
    /// armed (unless `faults` drops it). Returns false if the EQ overran or its ring is not in
    /// guest memory.
    pub fn post(
        &mut self,
        mem: &GuestMem,
        msix: &mut MsiX,
        faults: &mut FaultPlan,
        eqe: &Eqe,
    ) -> bool {
        if self.overrun {
            return false;
        }
        if self.pi.wrapping_sub(self.ci) >= self.size() {
            log::error!(
                "EQ {}: overrun (pi {} ci {}), EQ stopped",
                self.eqn,
                self.pi,
                self.ci
            );
            self.overrun = true;
            return false;
        }
        let mut eqe = *eqe;
        faults.liar.eqe(self.eqn.into(), eqe.as_mut_bytes());
        eqe.set_owner(eqe_owner_for(self.pi, self.log_size.into()).into());
        let Some(addr) = self.slot_addr(self.pi) else {
            log::error!("EQ {}: ring page for index {} missing", self.eqn, self.pi);
            return false;
        };
        // Write the body first and the ownership byte last, as hardware does.
        let (body, owner) = eqe.as_bytes().split_at(Eqe::SIZE - 1);
        if mem.write(addr, body).is_err() || mem.write(addr + body.len() as u64, owner).is_err() {
            log::error!("EQ {}: EQE address {addr:#x} not in guest memory", self.eqn);
            return false;
        }
        self.pi = self.pi.wrapping_add(1);
        self.events += 1;
        self.maybe_interrupt(msix, faults);
        true
    }

    /// Fires the armed EQ's one interrupt if an event is pending; a `drop-irq` fault swallows
    /// exactly such an interrupt (the EQ is disarmed as if it had fired).
    fn maybe_interrupt(&mut self, msix: &mut MsiX, faults: &mut FaultPlan) {
        if self.armed && self.pi != self.ci {
            self.armed = false;
            if faults.take_drop(self.vector) {
                log::warn!("EQ {}: interrupt dropped (fault injection)", self.eqn);
                return;
            }
            self.interrupts += 1;
            msix.trigger(self.vector);
            // The hostile card's storm: the vector again, with no event behind it.
            for _ in 0..faults.liar.irq(self.vector) {
                msix.trigger(self.vector);
            }
        }
    }

    /// A doorbell on the EQ's UAR page: new consumer index, optionally arming.
    pub fn doorbell(&mut self, ci: u32, arm: bool, msix: &mut MsiX, faults: &mut FaultPlan) {
        // The driver reports 24 bits of ci; keep our 32-bit counter consistent with it.
        let lo = ci & 0x00ff_ffff;
        let mut full = (self.pi & !0x00ff_ffff) | lo;
        if full > self.pi {
            full = full.wrapping_sub(1 << 24);
        }
        self.ci = full;
        if arm {
            self.armed = true;
            self.maybe_interrupt(msix, faults);
        }
    }
}
