// SPDX-License-Identifier: GPL-2.0
//! QP and SRQ asynchronous events (core/qp.c `rsc_event_notifier`, mlx5_ib srq_cmd.c
//! `srq_event_notifier`): the async EQ's QP events (communication established, SQ drained,
//! path migration, work queue errors) routed by QP number, and its SRQ events (limit reached,
//! catastrophic error) by SRQ number, and its `DCT_DRAINED` events by DCT number (qpc.c
//! `dct_event_notifier`), each to the object's owner, the RDMA layer. QP, SRQ and DCT
//! numbers are separate tables (a DCT number is from the QP number space, but mlx5 keeps
//! DCTs in a table of their own, and their event names no queue of a QP).

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

/// What a QP's (or an SRQ's) owner does with its events. Runs in the async EQ's
/// hard-interrupt handler with the table locked: it must not sleep.
pub(crate) trait QpHandler: Send + Sync + 'static {
    /// Event `event_type` (`cx4_hw::eq::event_type`) for QP (or SRQ) `qpn`.
    fn event(&self, qpn: u32, event_type: u8);
}

/// QP (or SRQ) number → handler, for the async EQ. Events are dispatched under the lock, so
/// a handler is never released in interrupt context.
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

    /// The debugfs view (`what`: "qps" or "srqs").
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>, what: &str) -> fmt::Result {
        let n = self.map.lock().iter().count();
        writeln!(
            f,
            "{} with event handlers {} events for unknown {} {}",
            what,
            n,
            what,
            self.unknown.load(Ordering::Relaxed)
        )
    }
}

/// A QP's or an SRQ's entry in its table; dropping it removes the entry.
pub(crate) struct QpEventReg {
    mdev: Arc<Mdev>,
    n: u32,
    kind: Kind,
}

/// Which table an entry is in.
#[derive(Clone, Copy)]
enum Kind {
    Qp,
    Srq,
    Dct,
}

impl Kind {
    fn table(self, mdev: &Mdev) -> &QpEventTable {
        match self {
            Self::Qp => &mdev.qps,
            Self::Srq => &mdev.srqs,
            Self::Dct => &mdev.dcts,
        }
    }
}

impl QpEventReg {
    /// Routes QP `qpn`'s events to `handler`.
    pub(crate) fn new(mdev: &Arc<Mdev>, qpn: u32, handler: Arc<dyn QpHandler>) -> Result<Self> {
        Self::add(mdev, qpn, Kind::Qp, handler)
    }

    /// Routes SRQ `srqn`'s events to `handler`.
    pub(crate) fn srq(mdev: &Arc<Mdev>, srqn: u32, handler: Arc<dyn QpHandler>) -> Result<Self> {
        Self::add(mdev, srqn, Kind::Srq, handler)
    }

    /// Routes DCT `dctn`'s `DCT_DRAINED` event to `handler`.
    pub(crate) fn dct(mdev: &Arc<Mdev>, dctn: u32, handler: Arc<dyn QpHandler>) -> Result<Self> {
        Self::add(mdev, dctn, Kind::Dct, handler)
    }

    fn add(mdev: &Arc<Mdev>, n: u32, kind: Kind, handler: Arc<dyn QpHandler>) -> Result<Self> {
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let table = kind.table(mdev);
        let stale = table.map.lock().insert(node.into_node(n, handler));
        drop(stale);
        Ok(Self {
            mdev: mdev.clone(),
            n,
            kind,
        })
    }
}

impl Drop for QpEventReg {
    fn drop(&mut self) {
        // Released after the table lock (and with it interrupts) is.
        let h = self.kind.table(&self.mdev).map.lock().remove(&self.n);
        drop(h);
    }
}
