//! Event queues: rings of 64-byte EQEs in guest memory, written with the ownership bit, armed
//! through the UAR page, one MSI-X interrupt per arm.

use crate::{faults::FaultPlan, guest_mem::GuestMem, irq::MsiX};

/// Size of an EQE.
pub const EQE_SIZE: usize = 64;
/// Offset of the event type in an EQE.
pub const EQE_TYPE: usize = 0x01;
/// Offset of the event sub-type in an EQE.
pub const EQE_SUB_TYPE: usize = 0x03;
/// Offset of the event data in an EQE.
pub const EQE_DATA: usize = 0x20;
/// Offset of the ownership byte in an EQE.
pub const EQE_OWNER: usize = 0x3f;

/// Event types (`enum mlx5_event`).
pub mod event {
    /// Completion on a CQ.
    pub const COMP: u8 = 0x00;
    /// CQ error.
    pub const CQ_ERROR: u8 = 0x04;
    /// Port state change.
    pub const PORT_CHANGE: u8 = 0x09;
    /// Command completion.
    pub const CMD: u8 = 0x0a;
    /// Page request.
    pub const PAGE_REQUEST: u8 = 0x0b;
}

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
        let off = u64::from(idx & (self.size() - 1)) * EQE_SIZE as u64;
        let page = usize::try_from(off >> self.page_shift).ok()?;
        Some(self.pas.get(page)? + (off & ((1u64 << self.page_shift) - 1)))
    }

    /// Writes one EQE (type, sub-type, 28 bytes of data) with the ownership bit for the current
    /// pass, and raises the interrupt if armed (unless `faults` drops it). Returns false if the
    /// EQ overran or its ring is not in guest memory.
    pub fn post(
        &mut self,
        mem: &GuestMem,
        msix: &mut MsiX,
        faults: &mut FaultPlan,
        ty: u8,
        sub: u8,
        data: &[u8],
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
        let mut eqe = [0u8; EQE_SIZE];
        eqe[EQE_TYPE] = ty;
        eqe[EQE_SUB_TYPE] = sub;
        let n = data.len().min(EQE_OWNER - EQE_DATA);
        eqe[EQE_DATA..EQE_DATA + n].copy_from_slice(&data[..n]);
        eqe[EQE_OWNER] = ((self.pi >> self.log_size) & 1) as u8;
        let Some(addr) = self.slot_addr(self.pi) else {
            log::error!("EQ {}: ring page for index {} missing", self.eqn, self.pi);
            return false;
        };
        // Write the body first and the ownership byte last, as hardware does.
        if mem.write(addr, &eqe[..EQE_OWNER]).is_err()
            || mem
                .write(addr + EQE_OWNER as u64, &eqe[EQE_OWNER..])
                .is_err()
        {
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

/// Offsets in a UAR page (include/linux/mlx5/doorbell.h, eq.c).
pub mod uar {
    /// CQ arm doorbell (64-bit).
    pub const CQ_DOORBELL: u64 = 0x20;
    /// EQ: update consumer index and arm.
    pub const EQ_UPDATE_CI_ARM: u64 = 0x40;
    /// EQ: update consumer index only.
    pub const EQ_UPDATE_CI: u64 = 0x48;
    /// First BlueFlame / doorbell register.
    pub const BF: u64 = 0x800;
}
