// SPDX-License-Identifier: GPL-2.0
//! Kernel CQs (mlx5_ib cq.c `create_cq_kernel`, `mlx5_ib_poll_cq`, `mlx5_ib_arm_cq`) and the
//! table of kernel QPs their completions are matched against.
//!
//! A kernel CQ is a driver CQ (`crate::cq::Cq`: coherent ring, doorbell record, the device's
//! kernel UAR page for arming) under an IRQ-safe lock, since ib_core's users poll and arm it
//! from any context. Polling takes the CQEs in order; each names its QP by number, found in
//! the device's [`KqpTable`], whose work queues turn it into a work completion. CQEs of a QP
//! no longer in the table (destroyed with completions still queued) are consumed and dropped.

use ib::{
    CqEvents,
    CqInitAttr,
    WcWriter, //
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

use crate::{
    cq::{
        Cq,
        CqParams, //
    },
    ib::{
        cq::Notify,
        kqp::KernelWq,
        IbShared, //
    },
};

/// The device's kernel QPs by the card's QP number.
#[pin_data]
pub(crate) struct KqpTable {
    #[pin]
    map: IrqSafeLock<RBTree<u32, Arc<KernelWq>>>,
}

impl KqpTable {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            map <- new_irq_safe_lock!(RBTree::new(), "cx4::ib_kqps"),
        })
    }

    /// Adds QP `qpn`.
    pub(crate) fn insert(&self, qpn: u32, wq: Arc<KernelWq>) -> Result {
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let stale = self.map.lock().insert(node.into_node(qpn, wq));
        // A stale entry (none expected) is dropped after the lock is released.
        drop(stale);
        Ok(())
    }

    /// Removes QP `qpn`.
    pub(crate) fn remove(&self, qpn: u32) {
        let old = self.map.lock().remove(&qpn);
        drop(old);
    }

    fn get(&self, qpn: u32) -> Option<Arc<KernelWq>> {
        self.map.lock().get(&qpn).cloned()
    }
}

/// A kernel CQ. Its kernel QPs keep a reference to the ring, to clean it of their CQEs
/// when they are reset (ib_core destroys a CQ only after its QPs).
pub(crate) struct KernelCq {
    cqn: u32,
    cq: Arc<IrqSafeLock<Cq>>,
}

impl KernelCq {
    /// Creates a CQ of at least `attr.cqe` entries on the completion EQ of its vector;
    /// returns it and the entries it reports (the ring less one).
    pub(crate) fn create(
        sh: &IbShared,
        attr: &CqInitAttr,
        events: &Arc<CqEvents>,
    ) -> Result<(Self, u32)> {
        let max = 1u32 << sh.caps.gen().log_max_cq_sz();
        let entries = attr
            .cqe
            .checked_add(1)
            .and_then(u32::checked_next_power_of_two)
            .filter(|&n| attr.cqe >= 1 && n <= max)
            .ok_or(EINVAL)?
            .max(2);
        let eqns = &sh.comp_eqns;
        let eqn = *eqns
            .get(attr.comp_vector as usize % eqns.len().max(1))
            .ok_or(EINVAL)?;
        let cq = Cq::create(
            &sh.mdev,
            &CqParams {
                log_size: entries.ilog2(),
                eqn,
                uar: sh.kuar,
            },
            Some(Arc::new(Notify(events.clone()), GFP_KERNEL)?),
        )?;
        let cqn = cq.cqn();
        let cq = Arc::pin_init(new_irq_safe_lock!(cq, "cx4::ib_kcq"), GFP_KERNEL)?;
        Ok((Self { cqn, cq }, entries - 1))
    }

    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        self.cqn
    }

    /// Moves completions into `out` until it is full or the CQ is empty.
    pub(crate) fn poll(&self, kqps: &KqpTable, out: &mut WcWriter<'_>) {
        let mut cq = self.cq.lock();
        // One CQE may yield no completion (its QP is gone): poll until full or empty.
        while out.room() > 0 {
            let n = cq.poll(out.room(), |cqe| {
                let qpn = cqe.sop_drop_qpn() & 0xff_ffff;
                if let Some(wc) = kqps.get(qpn).and_then(|wq| wq.complete(cqe)) {
                    out.push(&wc);
                }
            });
            if n == 0 {
                break;
            }
        }
    }

    /// The ring, for its kernel QPs to clean ([`KernelWq::clean`]).
    pub(crate) fn ring(&self) -> Arc<IrqSafeLock<Cq>> {
        self.cq.clone()
    }

    /// Arms the CQ; with `report_missed`, whether a CQE is already waiting.
    pub(crate) fn arm(&self, solicited: bool, report_missed: bool) -> Result<bool> {
        let mut cq = self.cq.lock();
        cq.arm(solicited)?;
        Ok(report_missed && cq.has_cqe())
    }
}
