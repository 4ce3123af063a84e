// SPDX-License-Identifier: GPL-2.0
//! Event queues on MSI-X vectors (core/eq.c).
//!
//! Vector 0 carries the control EQs: the command EQ (command completions, which switch the
//! command queue to event mode), the async EQ (port, CQ and QP errors) and the pages EQ
//! (firmware page requests, served from a work item). Each further vector carries one
//! completion EQ, one per online CPU within the vectors granted.
//!
//! An EQ is a ring of 64-byte EQEs in coherent memory; software owns the entry at consumer
//! index `ci` when its owner bit matches the pass over the ring (`cx4_hw::eq`). The interrupt
//! handler consumes owned entries, then writes the consumer index to the EQ's doorbell on the
//! UAR page with the arm bit, which asks for the next interrupt.
//!
//! Like upstream's (eq.c `mlx5_eq_async_int`, `mlx5_eq_comp_int`), the handlers run in
//! hard-interrupt context: a command completion wakes its waiter straight from the interrupt,
//! without a switch to an interrupt thread first. Everything they dispatch to is
//! interrupt-safe: the command queue's completion, the page-request counter and work item, and
//! the CQ table.

use core::{
    fmt,
    sync::atomic::{
        AtomicU32,
        AtomicU64,
        Ordering, //
    },
};

use cx4_hw::{
    command,
    eq::{
        eqe::Eqe,
        eqe_owned_by_sw,
        event_queue_type,
        event_type::{
            self,
            event_type_name, //
        },
        CreateEqIn,
        EventMask,
        EQE_OWNER_INIT_VAL, //
    },
    pages::PAGE_SIZE, //
};
use kapi::{
    barrier::dma_rmb,
    new_irq_safe_lock,
    IrqHandler,
    IrqLine,
    IrqSafeLock,
    MsixVectors, //
};
use kernel::{
    pci,
    prelude::*,
    sync::Arc,
    workqueue, //
};

use crate::{
    cmd::input,
    dmabuf::DmaBuf,
    mdev::Mdev,
    uar, //
};

/// What the Ethernet layer does with port change events. Runs in the async EQ's
/// hard-interrupt handler under a spinlock (upstream's `mlx5_eq_notifier` on the atomic
/// chain): it must not sleep, and should only note the event and schedule work (a carrier
/// re-query).
pub(crate) trait PortEvents: Send + Sync + 'static {
    /// A `PORT_CHANGE` event on `port` (1-based) with `sub_type`
    /// (`cx4_hw::eq::port_change_subtype`: DOWN, ACTIVE, ...).
    fn port_change(&self, port: u8, sub_type: u8);
}

/// Event types counted individually per EQ (all types the PRM defines are below this).
const EVENT_TYPES: usize = 0x28;
/// log2 of the EQ sizes (entries).
const LOG_CMD_EQ: u32 = 6;
const LOG_ASYNC_EQ: u32 = 8;
const LOG_PAGES_EQ: u32 = 6;
const LOG_COMP_EQ: u32 = 8;
/// The consumer index is written back (without arming) every this many EQEs of one batch.
const CI_UPDATE_BATCH: u32 = 64;
/// The most EQs on one vector: the command, async and pages EQs, and completion EQ 0 when only
/// one vector was granted.
const MAX_EQS_PER_VECTOR: usize = 4;

/// What an EQ is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EqKind {
    /// Command completions.
    Cmd,
    /// Asynchronous events.
    Async,
    /// Firmware page requests.
    Pages,
    /// Completion events of CQs; the index of the completion EQ.
    Comp(u32),
}

/// One event queue.
pub(crate) struct Eq {
    mdev: Arc<Mdev>,
    kind: EqKind,
    eqn: u8,
    log_size: u32,
    buf: DmaBuf,
    uar: u32,
    vector: u32,
    ci: AtomicU32,
    events: AtomicU64,
    polls: AtomicU64,
    by_type: [AtomicU64; EVENT_TYPES],
}

impl Eq {
    /// Creates an EQ of `2^log_size` entries on `vector`, reporting `mask`, with doorbells on
    /// UAR page `uar`. It is not armed yet.
    fn create(
        mdev: &Arc<Mdev>,
        kind: EqKind,
        log_size: u32,
        uar: u32,
        vector: u32,
        mask: EventMask,
    ) -> Result<Arc<Self>> {
        let bytes = (Eqe::SIZE << log_size).max(PAGE_SIZE);
        let buf = DmaBuf::alloc(mdev.dev.get(), bytes)?;
        for i in 0..(1usize << log_size) {
            buf.write_u8(i * Eqe::SIZE + Eqe::SIZE - 1, EQE_OWNER_INIT_VAL)?;
        }
        let npages = bytes / PAGE_SIZE;
        let mut m = input::<command::CreateEq>(npages * 8)?;
        {
            let c = m.eq_context_entry_mut();
            c.set_log_eq_size(log_size);
            c.set_uar_page(uar);
            c.set_intr(vector);
            c.set_log_page_size(0);
        }
        m.set_event_bitmask(0, mask.bits()).map_err(|_| EINVAL)?;
        for i in 0..npages {
            CreateEqIn::set_pas(m.bytes_mut(), i, buf.dma() + (i * PAGE_SIZE) as u64)
                .map_err(|_| EINVAL)?;
        }
        let out = mdev.cmdq.exec::<command::CreateEq>(&m, 0)?;
        let eqn = out.eq_number() as u8;
        Ok(Arc::new(
            Self {
                mdev: mdev.clone(),
                kind,
                eqn,
                log_size,
                buf,
                uar,
                vector,
                ci: AtomicU32::new(0),
                events: AtomicU64::new(0),
                polls: AtomicU64::new(0),
                by_type: core::array::from_fn(|_| AtomicU64::new(0)),
            },
            GFP_KERNEL,
        )?)
    }

    /// The EQ number.
    pub(crate) fn eqn(&self) -> u8 {
        self.eqn
    }

    /// Writes the consumer index and arms the EQ for its next interrupt.
    fn arm(&self) {
        let ci = self.ci.load(Ordering::Relaxed);
        let _ = uar::eq_doorbell(&self.mdev.bar, self.uar, self.eqn, ci, true);
    }

    fn destroy(&self) -> Result {
        let mut m = input::<command::DestroyEq>(0)?;
        m.set_eq_number(self.eqn.into());
        self.mdev.cmdq.exec::<command::DestroyEq>(&m, 0).map(|_| ())
    }

    /// Consumes the EQEs software owns, dispatches them and re-arms the EQ if it fired.
    fn process(&self) {
        self.polls.fetch_add(1, Ordering::Relaxed);
        let mut ci = self.ci.load(Ordering::Relaxed);
        let mask = (1u32 << self.log_size) - 1;
        let mut batch = 0u32;
        loop {
            let off = ((ci & mask) as usize) * Eqe::SIZE;
            let owner = match self.buf.read_u8(off + Eqe::SIZE - 1) {
                Ok(o) => o,
                Err(_) => break,
            };
            if !eqe_owned_by_sw(owner, ci, self.log_size) {
                break;
            }
            // Orders the owner bit's load before the EQE body's: the body is read only after the
            // device's write of it is seen (eq.c `mlx5_eq_get_eqe`, `next_eqe_sw` + `dma_rmb`).
            dma_rmb();
            let mut eqe = Eqe::new();
            if self.buf.read(off, &mut eqe.0).is_err() {
                break;
            }
            self.dispatch(&eqe);
            ci = ci.wrapping_add(1);
            batch += 1;
            if batch % CI_UPDATE_BATCH == 0 {
                let _ = uar::eq_doorbell(&self.mdev.bar, self.uar, self.eqn, ci, false);
            }
        }
        if batch > 0 {
            self.ci.store(ci, Ordering::Relaxed);
            self.arm();
        }
        // An EQ with nothing new did not fire (its vector is shared), so it is still armed:
        // re-arming it would only cost an MMIO write.
    }

    fn dispatch(&self, eqe: &Eqe) {
        let ty = eqe.event_type() as u8;
        self.events.fetch_add(1, Ordering::Relaxed);
        if let Some(c) = self.by_type.get(usize::from(ty)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        let m = &self.mdev;
        if let EqKind::Comp(_) = self.kind {
            // A completion EQ carries completion events of our CQs and nothing else (its event
            // mask is 0). Anything else is a corrupted event whose CQ would never hear of its
            // completions again: every CQ of this EQ polls.
            if ty != event_type::COMP || !m.cqs.completion(eqe.comp().cqn()) {
                if m.reports.allow() {
                    dev_warn!(
                        m.dev.dev(),
                        "EQ {}: unexpected event {:#x} for CQ {:#x}; polling its CQs\n",
                        self.eqn,
                        ty,
                        eqe.comp().cqn()
                    );
                }
                m.cqs.kick_eq(self.eqn.into());
            }
            return;
        }
        match ty {
            event_type::CMD => m.cmdq.complete(eqe.cmd().vector()),
            event_type::PAGE_REQUEST => {
                let req = eqe.req_pages();
                if m.pages.request(req.num_pages() as i32) {
                    // Already queued is fine: the queued run serves every pending request.
                    let _ = workqueue::system_long()
                        .enqueue::<Arc<Mdev>, { crate::mdev::PAGE_WORK }>(m.clone());
                }
            }
            event_type::COMP => {
                m.cqs.completion(eqe.comp().cqn());
            }
            event_type::CQ_ERROR => {
                let e = eqe.cq_err();
                if m.reports.allow() {
                    dev_err!(
                        m.dev.dev(),
                        "CQ {:#x} error, syndrome {:#x}\n",
                        e.cqn(),
                        e.syndrome()
                    );
                }
                m.cqs.error(e.cqn(), e.syndrome() as u8);
            }
            event_type::PATH_MIG
            | event_type::COMM_EST
            | event_type::SQ_DRAINED
            | event_type::SRQ_LAST_WQE
            | event_type::WQ_CATAS_ERROR
            | event_type::PATH_MIG_FAILED
            | event_type::WQ_INVAL_REQ_ERROR
            | event_type::WQ_ACCESS_ERROR => {
                let q = eqe.qp_srq();
                if q.queue_type() as u8 == event_queue_type::QP {
                    m.qps.event(q.qp_srq_n(), ty);
                }
            }
            event_type::DCT_DRAINED => {
                // mlx5_eqe_dct.dctn sits where the QP events' number does (qpc.c
                // `dct_event_notifier`).
                let q = eqe.qp_srq();
                if q.queue_type() as u8 == event_queue_type::DCT {
                    m.dcts.event(q.qp_srq_n() & 0xff_ffff, ty);
                }
            }
            event_type::SRQ_RQ_LIMIT | event_type::SRQ_CATAS_ERROR => {
                m.srqs.event(eqe.qp_srq().qp_srq_n() & 0xff_ffff, ty);
            }
            event_type::PORT_CHANGE => {
                dev_info!(
                    m.dev.dev(),
                    "port {} changed state (sub type {})\n",
                    eqe.port().port(),
                    eqe.sub_type()
                );
                m.port_event(eqe.port().port() as u8, eqe.sub_type() as u8);
            }
            _ => {
                dev_dbg!(
                    m.dev.dev(),
                    "EQ {} ({:?}): event {}({:#x})\n",
                    self.eqn,
                    self.kind,
                    event_type_name(ty),
                    ty
                );
            }
        }
    }

    /// The debugfs lines of this EQ.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "eq {} {:?}: vector {} size {} ci {} events {} polls {}",
            self.eqn,
            self.kind,
            self.vector,
            1u32 << self.log_size,
            self.ci.load(Ordering::Relaxed),
            self.events.load(Ordering::Relaxed),
            self.polls.load(Ordering::Relaxed)
        )?;
        for (ty, c) in self.by_type.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            if n != 0 {
                write!(f, " {}={}", event_type_name(ty as u8), n)?;
            }
        }
        writeln!(f)
    }
}

/// The interrupt handler of one vector: it runs the EQs attached to it.
#[pin_data]
pub(crate) struct VectorIrq {
    index: u32,
    irqs: AtomicU64,
    /// The EQs on this vector. The handler processes them under the lock, so once `detach`
    /// returned the EQ is no longer in use by the handler; the last reference of an EQ is
    /// never dropped in the handler (its DMA memory must be freed in process context).
    #[pin]
    eqs: IrqSafeLock<[Option<Arc<Eq>>; MAX_EQS_PER_VECTOR]>,
}

impl IrqHandler for VectorIrq {
    fn handle(&self, _dev: &kernel::device::Device<kernel::device::Bound>) {
        self.irqs.fetch_add(1, Ordering::Relaxed);
        for eq in self.eqs.lock().iter().flatten() {
            eq.process();
        }
    }
}

impl VectorIrq {
    fn attach(&self, eq: Arc<Eq>) -> Result {
        let mut eqs = self.eqs.lock();
        let free = eqs.iter_mut().find(|e| e.is_none()).ok_or(ENOSPC)?;
        *free = Some(eq);
        Ok(())
    }

    /// Detaches EQ `eqn` and returns it, to be dropped outside the lock.
    fn detach(&self, eqn: u8) -> Option<Arc<Eq>> {
        let mut eqs = self.eqs.lock();
        eqs.iter_mut()
            .find(|e| e.as_ref().is_some_and(|e| e.eqn == eqn))
            .and_then(Option::take)
    }

    /// The debugfs line of this vector.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "vector {} irqs {}",
            self.index,
            self.irqs.load(Ordering::Relaxed)
        )
    }
}

/// A completion EQ as its users attach to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CompVector {
    /// The EQ number (a CQ's `c_eqn`).
    pub(crate) eqn: u8,
    /// The Linux interrupt of its vector.
    pub(crate) irq: Option<u32>,
}

/// The interrupt vectors and EQs of a function, as debugfs shows them.
pub(crate) type Snapshot = (KVec<Arc<VectorIrq>>, KVec<Arc<Eq>>);

/// Every EQ of the function and the interrupt lines they use. Dropping it destroys the EQs
/// (completion, pages, async, then command after switching the command queue back to
/// polling) and frees the interrupts.
pub(crate) struct EqTable {
    mdev: Arc<Mdev>,
    uar: u32,
    vectors: Arc<MsixVectors>,
    lines: KVec<IrqLine<VectorIrq>>,
    cmd: Option<Arc<Eq>>,
    async_eq: Option<Arc<Eq>>,
    pages: Option<Arc<Eq>>,
    comp: KVec<Arc<Eq>>,
}

impl EqTable {
    /// Allocates MSI-X vectors (one control vector plus one per online CPU, as many as
    /// granted) and requests their interrupts; creates no EQ yet.
    pub(crate) fn new(
        mdev: &Arc<Mdev>,
        pdev: &pci::Device<kernel::device::Bound>,
        uar: u32,
    ) -> Result<Self> {
        let want = 1 + kapi::num_online_cpus();
        let vectors = MsixVectors::alloc(pdev, 1, want)?;
        let mut lines = KVec::with_capacity(vectors.count() as usize, GFP_KERNEL)?;
        for index in 0..vectors.count() {
            let h = Arc::pin_init(
                try_pin_init!(VectorIrq {
                    index,
                    irqs: AtomicU64::new(0),
                    eqs <- new_irq_safe_lock!(core::array::from_fn(|_| None), "cx4::vector_eqs"),
                }),
                GFP_KERNEL,
            )?;
            let name = if index == 0 { c"cx4-ctrl" } else { c"cx4-comp" };
            lines.push(
                IrqLine::request(pdev, &vectors, index, name, h)?,
                GFP_KERNEL,
            )?;
        }
        Ok(Self {
            mdev: mdev.clone(),
            uar,
            vectors,
            lines,
            cmd: None,
            async_eq: None,
            pages: None,
            comp: KVec::new(),
        })
    }

    fn add(&self, kind: EqKind, log_size: u32, vector: u32, mask: EventMask) -> Result<Arc<Eq>> {
        let line = self.lines.get(vector as usize).ok_or(EINVAL)?;
        let eq = Eq::create(&self.mdev, kind, log_size, self.uar, vector, mask)?;
        if let Err(e) = line.handler().attach(eq.clone()) {
            let _ = eq.destroy();
            return Err(e);
        }
        eq.arm();
        Ok(eq)
    }

    fn remove(&self, eq: &Arc<Eq>) {
        let detached = self
            .lines
            .get(eq.vector as usize)
            .and_then(|line| line.handler().detach(eq.eqn));
        drop(detached);
        let _ = eq.destroy();
    }

    /// Creates the command EQ and switches the command queue to event mode.
    pub(crate) fn create_cmd_eq(&mut self) -> Result {
        let eq = self.add(EqKind::Cmd, LOG_CMD_EQ, 0, EventMask::CMD)?;
        self.cmd = Some(eq);
        self.mdev.cmdq.use_events();
        Ok(())
    }

    /// Creates the async EQ; with the DC transport (`dct`) it also reports `DCT_DRAINED`
    /// (eq.c `gather_async_events_mask`).
    pub(crate) fn create_async_eq(&mut self, dct: bool) -> Result {
        let mut mask = EventMask::ASYNC_BASE;
        if dct {
            mask |= EventMask::DCT_DRAINED;
        }
        self.async_eq = Some(self.add(EqKind::Async, LOG_ASYNC_EQ, 0, mask)?);
        Ok(())
    }

    /// Creates the pages EQ (page requests are served from the pages work item).
    pub(crate) fn create_pages_eq(&mut self) -> Result {
        self.pages = Some(self.add(EqKind::Pages, LOG_PAGES_EQ, 0, EventMask::PAGE_REQUEST)?);
        Ok(())
    }

    /// Creates one completion EQ per online CPU, on its own vector when enough were granted.
    pub(crate) fn create_comp_eqs(&mut self) -> Result {
        let nvec = self.vectors.count();
        let n = if nvec > 1 {
            (nvec - 1).min(kapi::num_online_cpus())
        } else {
            1
        };
        self.comp.reserve(n as usize, GFP_KERNEL)?;
        for i in 0..n {
            let vector = if nvec > 1 { 1 + i } else { 0 };
            let eq = self.add(EqKind::Comp(i), LOG_COMP_EQ, vector, EventMask::COMP)?;
            self.comp.push(eq, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// The completion EQ numbers, in vector order.
    pub(crate) fn comp_eqns(&self) -> Result<KVec<u8>> {
        let mut v = KVec::with_capacity(self.comp.len(), GFP_KERNEL)?;
        for eq in self.comp.iter() {
            v.push(eq.eqn(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// The completion EQs with the interrupt of each one's vector (what a NAPI instance on
    /// the EQ ties itself to, as mlx5e's `netif_napi_set_irq`).
    pub(crate) fn comp_vectors(&self) -> Result<KVec<CompVector>> {
        let mut v = KVec::with_capacity(self.comp.len(), GFP_KERNEL)?;
        for eq in self.comp.iter() {
            let irq = self.lines.get(eq.vector as usize).map(|l| l.irq());
            v.push(CompVector { eqn: eq.eqn(), irq }, GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// Number of vectors granted.
    pub(crate) fn vectors(&self) -> u32 {
        self.vectors.count()
    }

    /// The vectors and EQs, for debugfs.
    pub(crate) fn snapshot(&self) -> Result<Snapshot> {
        let mut v = KVec::with_capacity(self.lines.len(), GFP_KERNEL)?;
        for l in self.lines.iter() {
            v.push(l.handler().clone(), GFP_KERNEL)?;
        }
        let mut e = KVec::new();
        let ctrl = [&self.cmd, &self.async_eq, &self.pages];
        for eq in ctrl.into_iter().flatten() {
            e.push(eq.clone(), GFP_KERNEL)?;
        }
        for eq in self.comp.iter() {
            e.push(eq.clone(), GFP_KERNEL)?;
        }
        Ok((v, e))
    }
}

impl Drop for EqTable {
    fn drop(&mut self) {
        while let Some(eq) = self.comp.pop() {
            self.remove(&eq);
        }
        if let Some(eq) = self.pages.take() {
            self.remove(&eq);
            // No page request can be queued any more; let a queued one finish.
            kapi::flush_work(&self.mdev.page_work);
        }
        if let Some(eq) = self.async_eq.take() {
            self.remove(&eq);
        }
        if let Some(eq) = self.cmd.take() {
            self.mdev.cmdq.use_polling();
            self.remove(&eq);
        }
        // Free the interrupts (waiting for running handlers), then the vectors.
        self.lines.clear();
    }
}
