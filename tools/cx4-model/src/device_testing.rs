//! Test access to a whole [`Device`]: the crate's host tests drive the card through its BAR0
//! surface (doorbells, commands, faults) and look at its parts. The device derefs to its
//! [`Hca`] for them, and lends its bus context to the part-level calls they make.

use std::ops::{
    Deref,
    DerefMut, //
};

use super::Device;
use crate::hca::Hca;

impl Deref for Device {
    type Target = Hca;

    fn deref(&self) -> &Hca {
        &self.hca
    }
}

impl DerefMut for Device {
    fn deref_mut(&mut self) -> &mut Hca {
        &mut self.hca
    }
}

impl Device {
    /// [`Hca::receive`] on this device's bus.
    pub(crate) fn receive(&mut self, frame: &[u8]) {
        self.hca.receive(&mut self.bus, frame)
    }

    /// [`crate::roce::Roce::roce_receive`] on this device's bus.
    pub(crate) fn roce_receive(&mut self, frame: &[u8]) -> bool {
        self.hca.roce_at().roce_receive(&mut self.bus, frame)
    }

    /// [`crate::roce::Roce::roce_sync`] on this device's bus.
    pub(crate) fn roce_sync(&mut self) {
        self.hca.roce_at().roce_sync(&mut self.bus)
    }

    /// [`crate::roce::Roce::roce_tick_at`] on this device's bus.
    pub(crate) fn roce_tick_at(&mut self, now: u64) {
        self.hca.roce_at().roce_tick_at(&mut self.bus, now)
    }

    /// [`Hca::pause_tick`] on this device's bus.
    pub(crate) fn pause_tick(&mut self) {
        self.hca.pause_tick(&mut self.bus)
    }

    /// [`Hca::pause_deadline`] on this device's bus.
    pub(crate) fn pause_deadline(&self) -> Option<std::time::Duration> {
        self.hca.pause_deadline(&self.bus)
    }

    /// [`crate::datapath::Nic::close_merges`] on this device's bus.
    pub(crate) fn close_merges(&mut self) {
        self.hca.nic_at().close_merges(&mut self.bus)
    }

    /// [`Hca::sq_doorbell`] on this device's bus.
    pub(crate) fn sq_doorbell(&mut self, page: u32, sqn: u32) {
        self.hca.sq_doorbell(&mut self.bus, page, sqn)
    }
}
