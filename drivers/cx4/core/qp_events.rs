// SPDX-License-Identifier: GPL-2.0
//! QP asynchronous events (core/qp.c `rsc_event_notifier`): the async EQ's QP events
//! (communication established, SQ drained, path migration, work queue errors) routed by QP
//! number to the QP's owner, the RDMA layer.

use core::{
    fmt,
    sync::atomic::{
        AtomicU64,
        Ordering, //
    },
};

use kapi::{
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::{
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::Arc,
};

use crate::mdev::Mdev;

/// What a QP's owner does with its events. Runs in the async EQ's hard-interrupt handler
/// with the table locked: it must not sleep.
pub(crate) trait QpHandler: Send + Sync + 'static {
    /// Event `event_type` (`cx4_hw::eq::event_type`) for QP `qpn`.
    fn event(&self, qpn: u32, event_type: u8);
}

/// QP number → handler, for the async EQ. Events are dispatched under the lock, so a QP's
/// handler is never released in interrupt context.
#[pin_data]
pub(crate) struct QpEventTable {
    #[pin]
    map: IrqSafeLock<RBTree<u32, Arc<dyn QpHandler>>>,
    unknown: AtomicU64,
}

impl QpEventTable {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            map <- new_irq_safe_lock!(RBTree::new(), "cx4::qp_events"),
            unknown: AtomicU64::new(0),
        })
    }

    /// Dispatches an event (from the async EQ's interrupt handler).
    pub(crate) fn event(&self, qpn: u32, event_type: u8) {
        let map = self.map.lock();
        match map.get(&qpn) {
            Some(h) => h.event(qpn, event_type),
            None => {
                self.unknown.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The debugfs view.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.map.lock().iter().count();
        writeln!(
            f,
            "qps with event handlers {} events for unknown QPs {}",
            n,
            self.unknown.load(Ordering::Relaxed)
        )
    }
}

/// QP `qpn`'s entry in the table; dropping it removes the entry.
pub(crate) struct QpEventReg {
    mdev: Arc<Mdev>,
    qpn: u32,
}

impl QpEventReg {
    /// Routes QP `qpn`'s events to `handler`.
    pub(crate) fn new(mdev: &Arc<Mdev>, qpn: u32, handler: Arc<dyn QpHandler>) -> Result<Self> {
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let stale = mdev.qps.map.lock().insert(node.into_node(qpn, handler));
        drop(stale);
        Ok(Self {
            mdev: mdev.clone(),
            qpn,
        })
    }
}

impl Drop for QpEventReg {
    fn drop(&mut self) {
        // Released after the table lock (and with it interrupts) is.
        let h = self.mdev.qps.map.lock().remove(&self.qpn);
        drop(h);
    }
}
