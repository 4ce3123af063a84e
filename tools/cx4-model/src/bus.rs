//! The bus context: what the device lends each part for the length of one call — guest
//! memory (DMA), the MSI-X vectors and the fault plan that can drop or delay their interrupts.
//!
//! [`crate::device::Device`] owns the one [`Bus`]; the firmware, the NIC data path and the
//! RoCE engine are passive parts that take `&mut Bus` per call, as rust-vmm queues take their
//! guest memory (`queue.pop_descriptor_chain(mem)`), and never name the device.

use crate::{faults::FaultPlan, guest_mem::GuestMem, irq::MsiX};

/// Guest memory, interrupt vectors and the fault plan of one function.
pub struct Bus {
    /// Guest memory reachable by DMA.
    pub mem: GuestMem,
    /// Interrupt vectors.
    pub msix: MsiX,
    /// Pending faults (interrupt drops and delays, wire faults, ...).
    pub faults: FaultPlan,
}

impl Bus {
    /// No memory mapped, `vectors` MSI-X vectors unconnected, no faults.
    pub fn new(vectors: u16) -> Self {
        Bus {
            mem: GuestMem::default(),
            msix: MsiX::new(vectors),
            faults: FaultPlan::default(),
        }
    }
}
