// SPDX-License-Identifier: GPL-2.0
//! The engine: one self-connected RC QP, its CQ, and a ring of slots, each a calculation in
//! flight with its pre-created indirect mkeys and its matrix (libmlx5 `ec.c`: the calc
//! context, `mlx5_ec_comp`, `__mlx5_ec_encode_async`, `ec_poll_cq`).
//!
//! - Submit (any context): under one IRQ-safe lock, the next slot's matrix is written, its
//!   receive WQE posted, then the UMR WQEs (a repeat block spreading the result over the N
//!   outputs when N > 1; a KLM list gathering the k sources unless they are one contiguous
//!   range) and the vector-calc SEND (small-fenced after a UMR), one doorbell. Unlike
//!   libmlx5's, the SEND is signaled: its requester CQE retires the send-queue blocks, so the
//!   ring is never overwritten while the card may still read it. Slots are taken and freed
//!   in order; no slot or no send-queue room is `EBUSY`.
//! - Completion (the CQ's interrupt): the receive CQE of the looped-back SEND completes the
//!   oldest slot (its byte count must be N · len), an error CQE or a flushed receive fails it
//!   with `EIO` (one dmesg line per error burst). The callbacks run after the lock is
//!   released, in submission order.
//! - Recovery: after an error CQE the engine takes no new calculation (`EBUSY`) until every
//!   slot in flight has completed (the card flushes them), then a work item moves the QP to
//!   RESET and back to RTS, cleans the CQ and starts the rings again.
//! - Shutdown (the ib device goes): the QP, mkeys, CQ and PD are destroyed; calculations in
//!   flight complete with `ENODEV`; later submits are `ENODEV`. The `Arc` may outlive it.

use core::sync::atomic::{
    AtomicU64,
    Ordering, //
};

use cx4_hw::{
    cq::cqe::{
        opcode as cqe_op,
        syndrome,
        Cqe64,
        ErrCqe, //
    },
    wqe::vector_calc::noutputs,
};
use kapi::{
    new_irq_safe_lock,
    ratelimit::Ratelimit,
    IrqSafeLock, //
};
use kernel::{
    impl_has_work, new_mutex, new_work,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    workqueue::{
        self,
        Work,
        WorkItem, //
    },
};
use zerocopy::FromBytes;

use super::{
    qp::{
        LoopAddr,
        LoopQp,
        QpParams,
        RQ_STRIDE, //
    },
    wqe::{
        self,
        Scratch,
        UmrTarget,
        VecCalc, //
    },
    Calc,
    EcCaps,
    EcDone,
    Field, //
};
use crate::{
    caps::Caps,
    cq::{
        Cq,
        CqHandler,
        CqParams, //
    },
    dmabuf::DmaBuf,
    mdev::Mdev,
    mkey::Mkey,
    pd::Pd,
};

/// Calculations in flight (slots; also the receive queue's depth).
pub(crate) const SLOTS: u32 = 64;
/// Send-queue basic blocks: a calculation takes at most 4 (repeat UMR) + 6 (16-entry KLM
/// UMR) + 1 (SEND) = 11 (libmlx5's "11 BB"); 64 slots' worth fit in 1024.
const SQ_BBS: u32 = 1024;
/// CQ entries: a receive and a send completion per slot, and the flush of every WQE of every
/// slot after an error, with room to spare.
const LOG_CQ_SIZE: u32 = 10;
/// Bytes of a slot's matrix (16 rows × 4 columns).
const MATRIX_BYTES: usize = 64;
/// The interleaving chunk of the result stream (`log_chunk_size` 0).
const CHUNK: u32 = 64;
/// The largest block: 4 MiB (the SEND carries N of them; the model computes up to 16 MiB).
const MAX_LEN: u32 = 4 << 20;
/// CQEs handled per lock hold.
const BATCH: usize = 16;

/// What the engine needs from the function and its ib device.
pub(crate) struct EcSetup {
    /// The completion EQ of its CQ.
    pub(crate) eqn: u8,
    /// The ib device's kernel UAR page (doorbells).
    pub(crate) uar: u32,
    /// The ib device's queue counter set.
    pub(crate) counter: u8,
    /// The port's own address (its MAC and the GID the QP loops back to).
    pub(crate) addr: LoopAddr,
}

/// Where the engine is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Being created.
    Starting,
    /// Takes calculations.
    Ready,
    /// An error CQE came: waiting for the slots in flight, then the QP's reset.
    Recovering,
    /// The QP could not be brought back.
    Broken,
    /// Shut down.
    Dead,
}

/// A completion to report: the callback, its tag and the result.
type Callback = (Arc<dyn EcDone>, u64, Result);

/// A calculation in flight.
#[derive(Default)]
struct Slot {
    done: Option<Arc<dyn EcDone>>,
    tag: u64,
    /// The receive byte count that means success (N · len).
    bytes: u32,
}

/// The hardware objects, in destruction order (the QP before the mkeys, everything before
/// the PD); shared so that recovery can run commands on the QP without the lock.
struct Hw {
    qp: LoopQp,
    /// Per slot: the inputs' KLM mkey and the outputs' repeat-block mkey.
    mkeys: KVec<(Mkey, Mkey)>,
    /// The local DMA lkey: a physical-address mkey over all memory (ib_core's PD
    /// `local_dma_lkey` for mlx5, which has no reserved lkey for kernel users).
    dma: Mkey,
    pd: Pd,
    /// The slots' matrices.
    matrices: DmaBuf,
    /// Where a three-output calculation's fourth output goes (one chunk, stride 0).
    dump: DmaBuf,
}

/// The state under the lock.
struct State {
    mode: Mode,
    hw: Option<Arc<Hw>>,
    cq: Option<Cq>,
    slots: KVec<Slot>,
    /// Slots taken and freed (also the receive queue's counters).
    head: u32,
    tail: u32,
    /// Send queue producer and consumer, in basic blocks.
    sq_pc: u16,
    sq_cc: u16,
    /// An error of the current burst was logged.
    logged: bool,
    /// The recovery work is queued or running.
    queued: bool,
}

/// Counters (debugfs).
#[derive(Default)]
pub(crate) struct EcStats {
    pub(crate) submitted: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) busy: AtomicU64,
    pub(crate) recoveries: AtomicU64,
}

/// The function's erasure-coding engine (see the module documentation and ec/mod.rs).
#[pin_data]
pub(crate) struct EcEngine {
    mdev: Arc<Mdev>,
    caps: EcCaps,
    addr: LoopAddr,
    stats: EcStats,
    #[pin]
    st: IrqSafeLock<State>,
    /// Serialises recovery and shutdown (both run commands on the QP).
    #[pin]
    ctl: Mutex<()>,
    #[pin]
    work: Work<EcEngine, 0>,
}

impl_has_work! {
    impl HasWork<Self, 0> for EcEngine { self.work }
}

impl WorkItem<0> for EcEngine {
    type Pointer = Arc<EcEngine>;

    fn run(this: Arc<EcEngine>) {
        this.recover();
    }
}

/// The CQ's events: poll.
struct Events(Arc<EcEngine>);

impl CqHandler for Events {
    fn completion(&self, _cqn: u32) {
        EcEngine::poll(&self.0);
    }

    fn error(&self, cqn: u32, syndrome: u8) {
        if self.0.mdev.reports.allow() {
            dev_err!(
                self.0.mdev.dev.dev(),
                "EC engine: CQ {:#x} error event, syndrome {:#x}\n",
                cqn,
                syndrome
            );
        }
    }
}

/// The engine's capabilities from the vector-calc page; `None` without matrix calculations
/// with XOR in output slot 0.
pub(crate) fn caps_of(caps: &Caps) -> Option<EcCaps> {
    if caps.gen().vector_calc() == 0 {
        return None;
    }
    let v = caps.vector_calc()?;
    if v.calc_matrix() == 0 {
        return None;
    }
    // Output slots usable from 0 on: those with XOR.
    let xor = [v.calc0(), v.calc1(), v.calc2(), v.calc3()];
    let max_outputs = xor.iter().take_while(|c| c.op_xor() != 0).count();
    let max_srcs = (v.max_vec_count() as usize).min(super::MAX_SRCS);
    if max_outputs == 0 || max_srcs == 0 {
        return None;
    }
    let msg = 1u64 << caps.gen().log_max_msg().min(31);
    Some(EcCaps {
        gf256: v.calc_matrix_type_8bit() != 0,
        max_srcs,
        max_outputs,
        max_len: (msg / 4).min(MAX_LEN.into()) as u32 / CHUNK * CHUNK,
        len_align: CHUNK,
        max_inflight: SLOTS as usize,
    })
}

impl EcEngine {
    /// Creates the engine: PD, local DMA mkey, CQ, QP connected to itself, the slots' mkeys
    /// and matrices. `ENODEV` if the device has no usable vector-calc engine.
    pub(crate) fn create(mdev: &Arc<Mdev>, caps: &Caps, s: EcSetup) -> Result<Arc<Self>> {
        let ec = caps_of(caps).ok_or(ENODEV)?;
        let mut slots = KVec::with_capacity(SLOTS as usize, GFP_KERNEL)?;
        for _ in 0..SLOTS {
            slots.push(Slot::default(), GFP_KERNEL)?;
        }
        let this = Arc::pin_init(
            try_pin_init!(Self {
                mdev: mdev.clone(),
                caps: ec,
                addr: s.addr,
                stats: EcStats::default(),
                st <- new_irq_safe_lock!(
                    State {
                        mode: Mode::Starting,
                        hw: None,
                        cq: None,
                        slots,
                        head: 0,
                        tail: 0,
                        sq_pc: 0,
                        sq_cc: 0,
                        logged: false,
                        queued: false,
                    },
                    "cx4::ec_engine"
                ),
                ctl <- new_mutex!((), "cx4::ec_ctl"),
                work <- new_work!("cx4::ec_recover"),
            }),
            GFP_KERNEL,
        )?;
        let g = caps.gen();
        let pd = Pd::alloc(mdev)?;
        let dma = Mkey::create_pa(mdev, pd.pdn())?;
        let cq = Cq::create(
            mdev,
            &CqParams {
                log_size: LOG_CQ_SIZE.min(g.log_max_cq_sz()),
                eqn: s.eqn,
                uar: s.uar,
            },
            Some(Arc::new(Events(this.clone()), GFP_KERNEL)?),
        )?;
        let qp = LoopQp::create(
            mdev,
            QpParams {
                pdn: pd.pdn(),
                cqn: cq.cqn(),
                uar: s.uar,
                rq_wqes: SLOTS,
                sq_bbs: SQ_BBS,
                cqe_v1: g.cqe_version() == 1,
                log_max_msg: g.log_max_msg(),
                counter: s.counter,
            },
        )?;
        let mut mkeys = KVec::with_capacity(SLOTS as usize, GFP_KERNEL)?;
        for _ in 0..SLOTS {
            let inp = Mkey::create_indirect(mdev, pd.pdn(), super::MAX_SRCS as u32)?;
            // The repeat block's header and four entries.
            let out = Mkey::create_indirect(mdev, pd.pdn(), 5)?;
            mkeys.push((inp, out), GFP_KERNEL)?;
        }
        let matrices = DmaBuf::alloc(mdev.dev.get(), SLOTS as usize * MATRIX_BYTES)?;
        let dump = DmaBuf::alloc(mdev.dev.get(), CHUNK as usize)?;
        qp.connect(&s.addr)?;
        let qpn = qp.qpn();
        let hw = Arc::new(
            Hw {
                qp,
                mkeys,
                dma,
                pd,
                matrices,
                dump,
            },
            GFP_KERNEL,
        )?;
        let armed = {
            let mut st = this.st.lock();
            st.hw = Some(hw);
            st.mode = Mode::Ready;
            st.cq.insert(cq).arm(false)
        };
        if let Err(e) = armed {
            // Breaks the CQ handler's reference cycle and destroys the objects.
            this.shutdown();
            return Err(e);
        }
        dev_info!(
            mdev.dev.dev(),
            "EC engine: QP {:#x} looped back to GID index {}, GF(2^4){}, {} sources, {} outputs, {} in flight\n",
            qpn,
            s.addr.sgid_index,
            if ec.gf256 { " and GF(2^8)" } else { "" },
            ec.max_srcs,
            ec.max_outputs,
            SLOTS
        );
        Ok(this)
    }

    /// The engine's limits.
    pub(crate) fn caps(&self) -> &EcCaps {
        &self.caps
    }

    /// The counters.
    pub(crate) fn stats(&self) -> &EcStats {
        &self.stats
    }

    /// Calculations in flight.
    pub(crate) fn inflight(&self) -> u32 {
        let st = self.st.lock();
        st.head.wrapping_sub(st.tail)
    }

    /// The engine's state, for debugfs.
    pub(crate) fn mode_name(&self) -> &'static str {
        match self.st.lock().mode {
            Mode::Starting => "starting",
            Mode::Ready => "ready",
            Mode::Recovering => "recovering",
            Mode::Broken => "broken",
            Mode::Dead => "shut down",
        }
    }

    /// Checks a calculation against the caps; returns the number of outputs.
    fn check(&self, c: &Calc<'_>) -> Result<usize> {
        let cp = &self.caps;
        let (k, n) = (c.srcs.len(), c.dsts.len());
        if !(1..=cp.max_srcs).contains(&k)
            || !(1..=cp.max_outputs).contains(&n)
            || c.coef.len() != k
            || c.len == 0
            || c.len % cp.len_align != 0
            || c.len > cp.max_len
            || (c.field == Field::Gf256 && !cp.gf256)
        {
            return Err(EINVAL);
        }
        let max = c.field.max_symbol();
        if c.coef.iter().any(|row| row[..n].iter().any(|&x| x > max)) {
            return Err(EINVAL);
        }
        Ok(n)
    }

    /// Submits one calculation (see ec/mod.rs).
    pub(crate) fn submit(&self, c: &Calc<'_>, done: &Arc<dyn EcDone>, tag: u64) -> Result {
        let n = self.check(c)?;
        let k = c.srcs.len();
        let outs = usize::from(noutputs(n as u8));
        let len = c.len;
        let contig = c
            .srcs
            .windows(2)
            .all(|w| w[0].checked_add(len.into()) == Some(w[1]));
        // The matrix as the card reads it: k rows × outs columns; GF(2^4) entries carry
        // libmlx5's bit 4; a three-output calculation's fourth column is zero.
        let mut mat = [0u8; MATRIX_BYTES];
        for (i, row) in c.coef.iter().enumerate() {
            for j in 0..n {
                mat[i * outs + j] = match c.field {
                    Field::Gf16 => 0x10 | row[j],
                    Field::Gf256 => row[j],
                };
            }
        }
        let umr_out = if outs > 1 { wqe::umr_bbs(outs + 1) } else { 0 };
        let umr_in = if contig { 0 } else { wqe::umr_bbs(k) };
        let need = (umr_out + umr_in + 1) as u32;

        let mut guard = self.st.lock();
        let st = &mut *guard;
        match st.mode {
            Mode::Ready => {}
            Mode::Recovering | Mode::Starting => {
                self.stats.busy.fetch_add(1, Ordering::Relaxed);
                return Err(EBUSY);
            }
            Mode::Broken => return Err(EIO),
            Mode::Dead => return Err(ENODEV),
        }
        if st.head.wrapping_sub(st.tail) >= SLOTS
            || u32::from(st.sq_pc.wrapping_sub(st.sq_cc)) + need > SQ_BBS
        {
            self.stats.busy.fetch_add(1, Ordering::Relaxed);
            return Err(EBUSY);
        }
        let hw = st.hw.as_ref().ok_or(ENODEV)?;
        let slot = (st.head % SLOTS) as usize;
        let (inumr, outumr) = hw.mkeys.get(slot).ok_or(EINVAL)?;
        let (inkey, outkey) = (inumr.key(), outumr.key());
        let lkey = hw.dma.key();
        let qpn = hw.qp.qpn();
        let cm_addr = hw.matrices.dma() + (slot * MATRIX_BYTES) as u64;
        hw.matrices.write(slot * MATRIX_BYTES, &mat[..k * outs])?;
        // 1. The receive for the result.
        let mut r = [0u8; RQ_STRIDE];
        let bytes = len * outs as u32;
        if outs > 1 {
            wqe::recv(&mut r, bytes, outkey, c.dsts[0])?;
        } else {
            wqe::recv(&mut r, bytes, lkey, c.dsts[0])?;
        }
        hw.qp.write_rq(st.head, &r)?;
        let mut pc = st.sq_pc;
        let mut b: Scratch = [0u8; wqe::MAX_WQE_BBS * 64];
        // 2. The outputs' repeat block: chunk j of each repetition is output j's next chunk.
        if outs > 1 {
            let chunk = len.min(CHUNK) as u16;
            let mut pieces = [(0u16, 0u16, 0u32, 0u64); 4];
            for (j, p) in pieces.iter_mut().enumerate().take(outs) {
                *p = match c.dsts.get(j) {
                    Some(&d) => (chunk, chunk, lkey, d),
                    None => (0, chunk, lkey, hw.dump.dma()),
                };
            }
            let t = UmrTarget {
                idx: pc,
                qpn,
                mkey: outkey,
                pdn: hw.pd.pdn(),
                start: c.dsts[0],
                len: bytes.into(),
            };
            let bbs = wqe::umr_repeat(&mut b, &t, len / u32::from(chunk), &pieces[..outs])?;
            hw.qp.write_sq(pc, &b[..bbs * 64])?;
            pc = pc.wrapping_add(bbs as u16);
        }
        // 3. The inputs' KLM list, unless they are one range.
        let (vec_lkey, vec_addr) = if contig {
            (lkey, c.srcs[0])
        } else {
            let t = UmrTarget {
                idx: pc,
                qpn,
                mkey: inkey,
                pdn: hw.pd.pdn(),
                start: c.srcs[0],
                len: u64::from(len) * k as u64,
            };
            let bbs = wqe::umr_klm(&mut b, &t, c.srcs.iter().map(|&a| (len, lkey, a)))?;
            hw.qp.write_sq(pc, &b[..bbs * 64])?;
            pc = pc.wrapping_add(bbs as u16);
            (inkey, c.srcs[0])
        };
        // 4. The vector-calc SEND.
        wqe::vec_calc(
            &mut b,
            &VecCalc {
                idx: pc,
                qpn,
                fence: umr_out + umr_in > 0,
                signaled: true,
                field: c.field,
                outputs: n,
                k,
                cm_lkey: lkey,
                cm_addr,
                len,
                vec_lkey,
                vec_addr,
            },
        )?;
        hw.qp.write_sq(pc, &b[..64])?;
        pc = pc.wrapping_add(1);
        let mut last = [0u8; 8];
        last.copy_from_slice(&b[..8]);
        let head = st.head.wrapping_add(1);
        hw.qp.ring(head, pc, last)?;
        let s = st.slots.get_mut(slot).ok_or(EINVAL)?;
        s.done = Some(done.clone());
        s.tag = tag;
        s.bytes = bytes;
        st.head = head;
        st.sq_pc = pc;
        self.stats.submitted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Handles the CQ's completions (its interrupt), then re-arms it.
    fn poll(this: &Arc<Self>) {
        loop {
            let mut out: [Option<Callback>; BATCH] = [const { None }; BATCH];
            let mut got = 0;
            let mut more = false;
            {
                let mut guard = this.st.lock();
                let st = &mut *guard;
                let Some(cq) = st.cq.as_mut() else {
                    return;
                };
                let dev = this.mdev.dev.dev();
                let n = cq.poll(BATCH, |cqe| {
                    let ring = Ring {
                        slots: &mut st.slots,
                        tail: &mut st.tail,
                        head: st.head,
                        sq_cc: &mut st.sq_cc,
                        mode: &mut st.mode,
                        logged: &mut st.logged,
                    };
                    if let Some(r) = handle(ring, cqe, dev, &this.mdev.reports, &this.stats) {
                        if let Some(slot) = out.get_mut(got) {
                            *slot = Some(r);
                            got += 1;
                        }
                    }
                });
                if n == 0 {
                    // Empty: re-arm, and look again in case a CQE came meanwhile.
                    if cq.arm(false).is_ok() && cq.has_cqe() {
                        more = true;
                    }
                    if st.mode == Mode::Recovering && st.head == st.tail && !st.queued {
                        st.queued = true;
                        let _ = workqueue::system().enqueue::<Arc<EcEngine>, 0>(this.clone());
                    }
                } else {
                    more = true;
                }
            }
            for (done, tag, res) in out.iter_mut().take(got).filter_map(Option::take) {
                done.done(tag, res);
            }
            if !more {
                return;
            }
        }
    }

    /// Resets the QP after an error and brings it back to RTS (the work item).
    fn recover(&self) {
        let _g = self.ctl.lock();
        let hw = {
            let st = self.st.lock();
            if st.mode != Mode::Recovering {
                return;
            }
            st.hw.clone()
        };
        let Some(hw) = hw else {
            return;
        };
        let r = hw.qp.reset();
        {
            let mut st = self.st.lock();
            if let Some(cq) = st.cq.as_mut() {
                let qpn = hw.qp.qpn();
                cq.clean(|c| c.sop_drop_qpn() & 0xff_ffff == qpn);
            }
            st.head = 0;
            st.tail = 0;
            st.sq_pc = 0;
            st.sq_cc = 0;
        }
        let r = r.and_then(|()| hw.qp.connect(&self.addr));
        let mut st = self.st.lock();
        st.queued = false;
        st.logged = false;
        if st.mode != Mode::Recovering {
            return;
        }
        match r {
            Ok(()) => {
                st.mode = Mode::Ready;
                drop(st);
                self.stats.recoveries.fetch_add(1, Ordering::Relaxed);
                dev_info!(
                    self.mdev.dev.dev(),
                    "EC engine: QP {:#x} reset and reconnected after an error\n",
                    hw.qp.qpn()
                );
            }
            Err(e) => {
                st.mode = Mode::Broken;
                drop(st);
                dev_err!(
                    self.mdev.dev.dev(),
                    "EC engine: QP {:#x} could not be recovered ({:?}); engine disabled\n",
                    hw.qp.qpn(),
                    e
                );
            }
        }
    }

    /// Destroys the hardware objects; calculations in flight complete with `ENODEV`.
    /// Called once by the owner before the ib device goes; never from a callback.
    pub(crate) fn shutdown(&self) {
        let _g = self.ctl.lock();
        let (hw, cq, mut slots, tail, head) = {
            let mut st = self.st.lock();
            st.mode = Mode::Dead;
            (
                st.hw.take(),
                st.cq.take(),
                core::mem::take(&mut st.slots),
                st.tail,
                st.head,
            )
        };
        // The QP first (no more completions), then the mkeys, PD, and the CQ.
        drop(hw);
        drop(cq);
        let mut t = tail;
        while t != head {
            if let Some(s) = slots.get_mut((t % SLOTS) as usize) {
                if let Some(d) = s.done.take() {
                    self.stats.errors.fetch_add(1, Ordering::Relaxed);
                    d.done(s.tag, Err(ENODEV));
                }
            }
            t = t.wrapping_add(1);
        }
    }
}

/// The ring fields a CQE updates.
struct Ring<'a> {
    slots: &'a mut KVec<Slot>,
    tail: &'a mut u32,
    head: u32,
    sq_cc: &'a mut u16,
    mode: &'a mut Mode,
    logged: &'a mut bool,
}

/// One CQE: the send side retires send-queue blocks; the receive side completes the oldest
/// slot. Returns the callback to run.
fn handle(
    r: Ring<'_>,
    cqe: &Cqe64,
    dev: &kernel::device::Device,
    reports: &Ratelimit,
    stats: &EcStats,
) -> Option<Callback> {
    let op = cqe.opcode() as u8;
    let err = ErrCqe::ref_from_bytes(&cqe.0[..]).ok();
    let mut fail = |what: &str, synd: u8, vendor: u32| {
        if *r.mode == Mode::Ready {
            *r.mode = Mode::Recovering;
        }
        if !*r.logged && synd != syndrome::WR_FLUSH_ERR {
            *r.logged = true;
            dev_err!(
                dev,
                "EC engine: {} error CQE: {} (syndrome {:#x}, vendor {:#x}, WQE {:#x}); calculations in flight fail, QP to be reset\n",
                what,
                syndrome::syndrome_name(synd),
                synd,
                vendor,
                cqe.wqe_counter()
            );
        }
    };
    match op {
        cqe_op::REQ => {
            // The signaled SEND (one basic block) and everything before it are done.
            *r.sq_cc = (cqe.wqe_counter() as u16).wrapping_add(1);
            None
        }
        cqe_op::REQ_ERR => {
            let e = err?;
            fail("send", e.syndrome() as u8, e.vendor_err_synd());
            None
        }
        cqe_op::RESP_SEND | cqe_op::RESP_ERR => {
            if *r.tail == r.head {
                return None;
            }
            let s = r.slots.get_mut((*r.tail % SLOTS) as usize)?;
            *r.tail = r.tail.wrapping_add(1);
            let done = s.done.take()?;
            let res = if op == cqe_op::RESP_ERR {
                let e = err?;
                fail("receive", e.syndrome() as u8, e.vendor_err_synd());
                Err(EIO)
            } else if cqe.byte_cnt() != s.bytes {
                if reports.allow() {
                    dev_err!(
                        dev,
                        "EC engine: result of {} bytes, expected {}\n",
                        cqe.byte_cnt(),
                        s.bytes
                    );
                }
                Err(EIO)
            } else {
                Ok(())
            };
            if res.is_ok() {
                stats.completed.fetch_add(1, Ordering::Relaxed);
            } else {
                stats.errors.fetch_add(1, Ordering::Relaxed);
            }
            Some((done, s.tag, res))
        }
        _ => None,
    }
}
