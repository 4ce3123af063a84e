// SPDX-License-Identifier: GPL-2.0
//! Completion queues (core/cq.c, include/linux/mlx5/cq.h): create / destroy / modify / query,
//! the doorbell record, arming (next or solicited) and a poll API for the Ethernet and RDMA
//! layers; completion and error events from the EQs reach the CQ's handler.

use core::{
    fmt,
    sync::atomic::{
        AtomicU64,
        Ordering, //
    },
};

use cx4_hw::{
    command,
    cq::{
        cqe::{
            cqe_owned_by_sw,
            Cqe64,
            OP_OWN_SW_INIT,
            OWNER_MASK, //
        },
        cqe_stride,
        CqModifyFields,
        CreateCqIn, //
    },
    pages::PAGE_SIZE,
    uar::{
        CqArmDoorbell,
        CQ_DBR_ARM,
        CQ_DBR_SET_CI,
        CQ_DB_REQ_NOT,
        CQ_DB_REQ_NOT_SOL, //
    },
};
use kapi::{
    barrier::{
        dma_rmb,
        dma_wmb, //
    },
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::{
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::Arc, //
};

use crate::{
    cmd::input,
    dmabuf::DmaBuf,
    mdev::Mdev,
    msg::Msg,
    uar, //
};

/// What a CQ's owner does with its events. Both run in the EQ's hard-interrupt handler (as
/// upstream's `mlx5_cq::comp`), with the CQ table locked: they must not sleep, and should only
/// note the event and schedule the real work (NAPI, a work item).
pub(crate) trait CqHandler: Send + Sync + 'static {
    /// A completion event (the CQ was armed and got a CQE).
    fn completion(&self, cqn: u32);
    /// A CQ error event (e.g. overrun).
    fn error(&self, cqn: u32, syndrome: u8) {
        let _ = (cqn, syndrome);
    }
}

/// Event bookkeeping of one CQ, reachable from the EQs by CQ number.
struct CqEntry {
    handler: Option<Arc<dyn CqHandler>>,
    /// The completion EQ it reports to.
    eqn: u32,
    events: AtomicU64,
    errors: AtomicU64,
}

/// CQ number → CQ, for the EQ interrupt handlers. Events are dispatched under the lock, so a
/// CQ's entry (and handler) is never released in interrupt context.
#[pin_data]
pub(crate) struct CqTable {
    #[pin]
    map: IrqSafeLock<RBTree<u32, Arc<CqEntry>>>,
    unknown: AtomicU64,
    /// Polls of every CQ of an EQ after a corrupted completion event ([`CqTable::kick_eq`]).
    kicks: AtomicU64,
}

impl CqTable {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            map <- new_irq_safe_lock!(RBTree::new(), "cx4::cq_table"),
            unknown: AtomicU64::new(0),
            kicks: AtomicU64::new(0),
        })
    }

    /// Runs `f` on CQ `cqn`'s entry, under the table lock; counts events for unknown CQs.
    /// Whether the CQ is known.
    fn with(&self, cqn: u32, f: impl FnOnce(&CqEntry)) -> bool {
        let map = self.map.lock();
        match map.get(&cqn) {
            Some(e) => {
                f(e);
                true
            }
            None => {
                self.unknown.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Dispatches a completion event (from the EQ interrupt handler); false if no such CQ.
    pub(crate) fn completion(&self, cqn: u32) -> bool {
        self.with(cqn, |e| {
            e.events.fetch_add(1, Ordering::Relaxed);
            if let Some(h) = &e.handler {
                h.completion(cqn);
            }
        })
    }

    /// Hands every CQ of completion EQ `eqn` a completion event (from the EQ interrupt
    /// handler), after an event there that named no CQ of ours or was no completion event: the
    /// CQ it stood for would otherwise never hear of its completions again (its arming is
    /// spent). A poll that finds nothing costs nothing; a consumer sees a spurious event, as
    /// it may after any arming.
    pub(crate) fn kick_eq(&self, eqn: u32) {
        self.kicks.fetch_add(1, Ordering::Relaxed);
        let map = self.map.lock();
        for (cqn, e) in map.iter().filter(|(_, e)| e.eqn == eqn) {
            if let Some(h) = &e.handler {
                h.completion(*cqn);
            }
        }
    }

    /// Dispatches a CQ error event (from the EQ interrupt handler).
    pub(crate) fn error(&self, cqn: u32, syndrome: u8) {
        self.with(cqn, |e| {
            e.errors.fetch_add(1, Ordering::Relaxed);
            if let Some(h) = &e.handler {
                h.error(cqn, syndrome);
            }
        });
    }

    /// The debugfs view.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let map = self.map.lock();
        for (cqn, e) in map.iter() {
            writeln!(
                f,
                "cq {:#x}: events {} errors {}",
                cqn,
                e.events.load(Ordering::Relaxed),
                e.errors.load(Ordering::Relaxed)
            )?;
        }
        writeln!(
            f,
            "events for unknown CQs {}, polls of an EQ's CQs after a corrupted event {}",
            self.unknown.load(Ordering::Relaxed),
            self.kicks.load(Ordering::Relaxed)
        )
    }
}

/// Parameters of a new CQ.
pub(crate) struct CqParams {
    /// log2 of the number of CQEs.
    pub(crate) log_size: u32,
    /// The completion EQ it reports to.
    pub(crate) eqn: u8,
    /// The UAR page of its arm doorbell.
    pub(crate) uar: u32,
}

/// A completion queue of 64-byte CQEs. Dropping it destroys it.
pub(crate) struct Cq {
    mdev: Arc<Mdev>,
    cqn: u32,
    log_size: u32,
    buf: DmaBuf,
    dbrec: DmaBuf,
    uar: u32,
    ci: u32,
    /// The completion event count when the CQ was last armed (its low bits are the arm
    /// doorbell's sequence number): while it has not moved, the CQ is still armed (the device
    /// disarms a CQ only by raising its event).
    armed_at: Option<u64>,
    entry: Arc<CqEntry>,
}

impl Cq {
    /// Creates a CQ; `handler` gets its events.
    pub(crate) fn create(
        mdev: &Arc<Mdev>,
        p: &CqParams,
        handler: Option<Arc<dyn CqHandler>>,
    ) -> Result<Self> {
        let bytes = (Cqe64::SIZE << p.log_size).max(PAGE_SIZE);
        let buf = DmaBuf::alloc(mdev.dev.get(), bytes)?;
        for i in 0..(1usize << p.log_size) {
            buf.write_u8(i * Cqe64::SIZE + Cqe64::SIZE - 1, OP_OWN_SW_INIT)?;
        }
        let dbrec = DmaBuf::alloc(mdev.dev.get(), 64)?;
        let npages = bytes / PAGE_SIZE;
        let mut m = input::<command::CreateCq>(npages * 8)?;
        {
            let c = m.cq_context_mut();
            c.set_cqe_sz(cqe_stride::S64.into());
            c.set_log_cq_size(p.log_size);
            c.set_uar_page(p.uar);
            c.set_c_eqn_or_apu_element(p.eqn.into());
            c.set_log_page_size(0);
            c.set_dbr_addr(dbrec.dma());
        }
        for i in 0..npages {
            CreateCqIn::set_pas(m.bytes_mut(), i, buf.dma() + (i * PAGE_SIZE) as u64)
                .map_err(|_| EINVAL)?;
        }
        let entry = Arc::new(
            CqEntry {
                handler,
                eqn: p.eqn.into(),
                events: AtomicU64::new(0),
                errors: AtomicU64::new(0),
            },
            GFP_KERNEL,
        )?;
        // Reserve the table node first: once the CQ exists, registering it cannot fail.
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let out = mdev.cmdq.exec::<command::CreateCq>(&m, 0)?;
        let cqn = out.cqn();
        // A stale entry of the same number (none expected) goes after the lock is released.
        let stale = mdev
            .cqs
            .map
            .lock()
            .insert(node.into_node(cqn, entry.clone()));
        drop(stale);
        Ok(Self {
            mdev: mdev.clone(),
            cqn,
            log_size: p.log_size,
            buf,
            dbrec,
            uar: p.uar,
            ci: 0,
            armed_at: None,
            entry,
        })
    }

    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        self.cqn
    }

    /// Completion events received.
    pub(crate) fn events(&self) -> u64 {
        self.entry.events.load(Ordering::Relaxed)
    }

    /// Consumes up to `budget` CQEs, handing each to `f`, and publishes the new consumer index
    /// in the doorbell record. Returns how many were consumed.
    pub(crate) fn poll(&mut self, budget: usize, mut f: impl FnMut(&Cqe64)) -> usize {
        let mask = (1u32 << self.log_size) - 1;
        let mut n = 0;
        while n < budget {
            let off = ((self.ci & mask) as usize) * Cqe64::SIZE;
            let Ok(op_own) = self.buf.read_u8(off + Cqe64::SIZE - 1) else {
                break;
            };
            if !cqe_owned_by_sw(op_own, self.ci, self.log_size) {
                break;
            }
            // Orders the owner bit's load before the CQE body's (wq.h `mlx5_cqwq_get_cqe`:
            // `dma_rmb`; mlx5_ib `mlx5_poll_one`: `rmb`).
            dma_rmb();
            let mut cqe = Cqe64::new();
            if self.buf.read(off, &mut cqe.0).is_err() {
                break;
            }
            f(&cqe);
            self.ci = self.ci.wrapping_add(1);
            n += 1;
        }
        if n > 0 {
            let _ = self.dbrec.write_be32(CQ_DBR_SET_CI, self.ci & 0xff_ffff);
        }
        n
    }

    /// Removes the waiting CQEs `drop` selects (those of a QP moved to reset), keeping the
    /// others in order (mlx5_ib `__mlx5_ib_cq_clean`): from the newest back to the consumer
    /// index, each kept entry is copied over the ones removed after it (its slot's owner bit
    /// kept), then the consumer index moves past the removed count. Returns that count.
    pub(crate) fn clean(&mut self, drop: impl Fn(&Cqe64) -> bool) -> usize {
        let mask = (1u32 << self.log_size) - 1;
        let size = Cqe64::SIZE;
        let sw_owned = |i: u32| {
            self.buf
                .read_u8(((i & mask) as usize) * size + size - 1)
                .is_ok_and(|o| cqe_owned_by_sw(o, i, self.log_size))
        };
        let mut prod = self.ci;
        while sw_owned(prod) && prod.wrapping_sub(self.ci) <= mask {
            prod = prod.wrapping_add(1);
        }
        // Orders the owner bits' loads before the CQE bodies' (stricter than
        // `__mlx5_ib_cq_clean`, which has none here).
        dma_rmb();
        let mut freed = 0u32;
        let mut cqe = Cqe64::new();
        while prod != self.ci {
            prod = prod.wrapping_sub(1);
            let off = ((prod & mask) as usize) * size;
            if self.buf.read(off, &mut cqe.0).is_err() {
                break;
            }
            if drop(&cqe) {
                freed += 1;
            } else if freed > 0 {
                let dst = ((prod.wrapping_add(freed) & mask) as usize) * size;
                let owner = self.buf.read_u8(dst + size - 1).unwrap_or(0) & OWNER_MASK;
                let last = cqe.0[size - 1];
                cqe.0[size - 1] = (last & !OWNER_MASK) | owner;
                let _ = self.buf.write(dst, &cqe.0);
            }
        }
        if freed > 0 {
            self.ci = self.ci.wrapping_add(freed);
            // Orders the compaction's CQE rewrites before the consumer-index record: the device
            // must not see the slots freed before their contents moved (`__mlx5_ib_cq_clean`:
            // `wmb` before `mlx5_cq_set_ci`).
            dma_wmb();
            let _ = self.dbrec.write_be32(CQ_DBR_SET_CI, self.ci & 0xff_ffff);
        }
        freed as usize
    }

    /// Whether a CQE is waiting at the consumer index.
    pub(crate) fn has_cqe(&self) -> bool {
        let mask = (1u32 << self.log_size) - 1;
        let off = ((self.ci & mask) as usize) * Cqe64::SIZE;
        self.buf
            .read_u8(off + Cqe64::SIZE - 1)
            .is_ok_and(|op_own| cqe_owned_by_sw(op_own, self.ci, self.log_size))
    }

    /// Arms the CQ: the next completion (or, with `solicited`, the next solicited one)
    /// raises a completion event.
    pub(crate) fn arm(&mut self, solicited: bool) -> Result {
        // cq.h mlx5_cq_arm: the sequence number follows the completion events seen.
        let events = self.events();
        self.armed_at = Some(events);
        let db = CqArmDoorbell {
            sn: (events & 3) as u8,
            cmd: if solicited {
                CQ_DB_REQ_NOT_SOL
            } else {
                CQ_DB_REQ_NOT
            },
            ci: self.ci & 0xff_ffff,
            cqn: self.cqn,
        };
        self.dbrec.write_be32(CQ_DBR_ARM, db.arm_word())?;
        // No barrier between the arm record and the doorbell: `cq_doorbell` is an ordered
        // `writeq`, after every earlier store to memory (`mlx5_cq_arm`'s `wmb` is for its raw
        // `mlx5_write64`).
        uar::cq_doorbell(&self.mdev.bar, self.uar, db)
    }

    /// Arms the CQ for its next completion (not solicited only) unless it is still armed: no
    /// completion event arrived since it was last armed. A NAPI poller re-arms all its CQs
    /// when it completes, but only the ones whose event scheduled it were disarmed; each
    /// arm it skips is an MMIO write saved. An event on its way (raised by the device, not
    /// yet counted) schedules the poller again, which then arms the CQ.
    pub(crate) fn rearm(&mut self) -> Result {
        if self.armed_at.is_some_and(|a| a == self.events()) {
            return Ok(());
        }
        self.arm(false)
    }

    /// Sets the completion moderation, as [`modify_moderation`].
    pub(crate) fn modify_moderation(&self, period: u32, count: u32, mode: Option<u32>) -> Result {
        modify_moderation(&self.mdev, self.cqn, period, count, mode)
    }

    /// Queries the CQ context (the selftests).
    #[cfg(cx4_test_hooks)]
    pub(crate) fn query(&self) -> Result<Msg<cx4_hw::cq::QueryCqOut>> {
        let mut m = input::<command::QueryCq>(0)?;
        m.set_cqn(self.cqn);
        self.mdev.cmdq.exec::<command::QueryCq>(&m, 0)
    }
}

/// Sets CQ `cqn`'s completion moderation (`MODIFY_CQ` op_mod 0): period in microseconds, CQE
/// count and, if given, the period mode (0 from the last event, 1 from the first completion).
pub(crate) fn modify_moderation(
    mdev: &Mdev,
    cqn: u32,
    period: u32,
    count: u32,
    mode: Option<u32>,
) -> Result {
    let mut m = input::<command::ModifyCq>(0)?;
    m.set_cqn(cqn);
    let mut select = CqModifyFields::PERIOD | CqModifyFields::COUNT;
    if mode.is_some() {
        select |= CqModifyFields::PERIOD_MODE;
    }
    m.set_modify_field_select_resize_field_select(select.bits());
    let c = m.cq_context_mut();
    c.set_cq_period(period);
    c.set_cq_max_count(count);
    c.set_cq_period_mode(mode.unwrap_or(0));
    mdev.cmdq.exec::<command::ModifyCq>(&m, 0).map(|_| ())
}

impl Drop for Cq {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyCq>(0) {
            m.set_cqn(self.cqn);
            let _ = self.mdev.cmdq.exec::<command::DestroyCq>(&m, 0);
        }
        // The entry is dropped after the table lock (and with it interrupts) is released.
        let entry = self.mdev.cqs.map.lock().remove(&self.cqn);
        drop(entry);
    }
}

/// A CQ whose buffer and doorbell record its owner provides (the RDMA layer's user CQs,
/// whose memory is the process's): created from a CREATE_CQ input the owner filled in,
/// registered in the CQ table so that its events reach `handler`. Dropping it destroys it.
pub(crate) struct ExtCq {
    mdev: Arc<Mdev>,
    cqn: u32,
}

impl ExtCq {
    /// Creates the CQ described by `m` (context and page list).
    pub(crate) fn create(
        mdev: &Arc<Mdev>,
        m: &Msg<CreateCqIn>,
        handler: Arc<dyn CqHandler>,
    ) -> Result<Self> {
        let entry = Arc::new(
            CqEntry {
                handler: Some(handler),
                eqn: m.cq_context().c_eqn_or_apu_element(),
                events: AtomicU64::new(0),
                errors: AtomicU64::new(0),
            },
            GFP_KERNEL,
        )?;
        // Reserve the table node first: once the CQ exists, registering it cannot fail.
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let out = mdev.cmdq.exec::<command::CreateCq>(m, 0)?;
        let cqn = out.cqn();
        let stale = mdev.cqs.map.lock().insert(node.into_node(cqn, entry));
        drop(stale);
        Ok(Self {
            mdev: mdev.clone(),
            cqn,
        })
    }

    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        self.cqn
    }
}

impl Drop for ExtCq {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyCq>(0) {
            m.set_cqn(self.cqn);
            if let Err(e) = self.mdev.cmdq.exec::<command::DestroyCq>(&m, 0) {
                dev_warn!(self.mdev.dev.dev(), "DESTROY_CQ {:#x}: {:?}\n", self.cqn, e);
            }
        }
        // The entry is dropped after the table lock (and with it interrupts) is released.
        let entry = self.mdev.cqs.map.lock().remove(&self.cqn);
        drop(entry);
    }
}
