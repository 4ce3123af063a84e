// SPDX-License-Identifier: GPL-2.0
//! The EC engine as a DMA engine (Documentation/ec.md, "dmaengine provider"): one channel
//! whose memcpy, XOR, P+Q and validation requests become vector calculations, so that
//! async_tx — and through it md raid456 — and dmatest use the card unmodified.
//!
//! Every request becomes one calculation per piece of at most the engine's `max_len`
//! (`out[j] = XOR_i coef[i][j] · src[i]`):
//!
//! | request | field | sources (coefficients per output) | outputs |
//! |---|---|---|---|
//! | memcpy | GF(2^4) | src (1) | dst |
//! | xor | GF(2^4) | srcs (1) | dst |
//! | xor_val | GF(2^4) | srcs (1) | scratch, checked for zero |
//! | pq | GF(2^8) | srcs (P: 1, Q: scf[i]); with CONTINUE also old P (1, 0), old Q (0, 1) | P, Q (each unless disabled) |
//! | pq_val | GF(2^8) | srcs (1, scf[i]), P (1, 0), Q (0, 1) | scratch P', Q', checked for zero |
//! | interrupt | — | — | — (ends after the earlier ones) |
//!
//! GF(2^4) with coefficient 1 is plain XOR, so copy and XOR work on the ConnectX-4 profile;
//! P+Q needs GF(2^8) matrices (`calc_matrix_type_8bit`), and only with all six operations does
//! async_tx pick the channel (dmesg says so when it cannot).
//!
//! A validation computes into a scratch buffer of the channel ([`VAL_SLOTS`] of them, each
//! [`SCRATCH`] bytes per output) and reads it back; a longer one runs piece after piece
//! through the same scratch. A calculation that ends in an error completion (the engine then
//! resets its QP) is submitted again, up to [`MAX_RETRIES`] times; after that, or when the
//! engine is gone, the descriptor ends aborted (a validation then reports every check as
//! failed). While the engine is busy, work waits for the next completion or, with nothing in
//! flight, is retried a jiffy later.

use core::{
    num::NonZeroU32,
    sync::atomic::{
        AtomicU64,
        Ordering, //
    },
};

use dmaengine::{
    Active,
    Caps,
    ChanRef,
    Kind,
    Operations,
    Request,
    Status,
    SUM_CHECK_P,
    SUM_CHECK_Q, //
};
use kapi::{
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    fmt,
    prelude::*,
    sync::Arc,
};

use super::{
    Calc,
    DmaAddr,
    EcDone,
    EcEngine,
    Field,
    MAX_OUTPUTS,
    MAX_SRCS, //
};
use crate::dmabuf::DmaBuf;

/// Validation scratch buffers (validations in flight at most).
pub(crate) const VAL_SLOTS: usize = 8;
/// Bytes of one scratch output: a validation's piece.
pub(crate) const SCRATCH: u32 = 16 << 10;
/// Submissions of a failed calculation before its descriptor is aborted.
pub(crate) const MAX_RETRIES: u32 = 4;
/// Most pieces of one request.
const MAX_PIECES: u32 = 64;
/// Completions the interrupt handler can hold for the bottom half (the engine has at most
/// `max_inflight` ≤ 64 calculations in flight).
const RING: usize = 128;

/// What a descriptor computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Interrupt,
    Memcpy,
    Xor,
    XorVal,
    Pq,
    PqVal,
}

impl Op {
    fn idx(self) -> usize {
        self as usize
    }

    const NAMES: [&'static str; 6] = ["interrupt", "memcpy", "xor", "xor_val", "pq", "pq_val"];
}

/// The provider's descriptor.
pub(crate) struct Desc {
    op: Op,
    /// `DMA_PREP_FENCE`: later descriptors wait for this one.
    fence: bool,
    field: Field,
    srcs: [DmaAddr; MAX_SRCS],
    coef: [[u8; MAX_OUTPUTS]; MAX_SRCS],
    k: usize,
    /// Outputs (for a validation: filled with its scratch when it starts).
    dsts: [DmaAddr; 2],
    n: usize,
    /// `SUM_CHECK_*` bit of each output of a validation.
    sum_bits: [u32; 2],
    len: u32,
    piece: u32,
    pieces: u32,
    /// Next piece never submitted.
    next: u32,
    /// Pieces to submit again (bit i: piece i).
    retry: u64,
    inflight: u32,
    done: u32,
    retries: u32,
    failed: bool,
    sum: u32,
    scratch: Option<usize>,
}

impl Desc {
    /// Whether a source of this descriptor overlaps one of the ranges `writes`.
    fn reads_any(&self, writes: &[(DmaAddr, u32)]) -> bool {
        let len = u64::from(self.len);
        self.srcs[..self.k].iter().any(|&s| {
            writes
                .iter()
                .any(|&(w, wl)| s < w + u64::from(wl) && w < s + len)
        })
    }
}

/// The provider's counters (read by the debugfs `ec` file).
#[derive(Default)]
pub(crate) struct DmaStats {
    ops: [AtomicU64; 6],
    bytes: AtomicU64,
    calcs: AtomicU64,
    errors: AtomicU64,
    retries: AtomicU64,
    aborted: AtomicU64,
    val_mismatch: AtomicU64,
}

/// Completions handed from the interrupt handler to the bottom half, and the validation
/// scratch in use. A leaf lock: nothing is taken under it.
struct Shared {
    ring: [(u64, i32); RING],
    n: usize,
    lost: u64,
    scratch_busy: u32,
    /// The completion object given to the engine (holds a channel reference: dropped when the
    /// channel's last client leaves, so that the provider does not keep its own channel).
    done: Option<Arc<dyn EcDone>>,
}

/// The provider: the engine and the validation scratch.
#[pin_data]
pub(crate) struct EcDma {
    engine: Arc<EcEngine>,
    gf256: bool,
    piece: u32,
    scratch: KVec<DmaBuf>,
    #[pin]
    sh: IrqSafeLock<Shared>,
    stats: Arc<DmaStats>,
}

/// The engine's completion callback for the channel.
struct DmaDone(ChanRef<EcDma>);

impl EcDone for DmaDone {
    fn done(&self, tag: u64, res: Result) {
        let errno = match res {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
        {
            let mut sh = self.0.ops().sh.lock();
            if sh.n < RING {
                let n = sh.n;
                sh.ring[n] = (tag, errno);
                sh.n += 1;
            } else {
                // Cannot happen (at most 64 in flight); counted, and the descriptor then
                // never completes rather than completing wrongly.
                sh.lost += 1;
            }
        }
        self.0.kick();
    }
}

fn tag(cookie: i32, piece: u32) -> u64 {
    (u64::from(cookie as u32) << 32) | u64::from(piece)
}

impl EcDma {
    /// The channel's capabilities on `engine`.
    pub(crate) fn caps(engine: &EcEngine) -> Caps {
        let c = engine.caps();
        let srcs = c.max_srcs.min(MAX_SRCS) as u16;
        let pq = c.gf256 && c.max_outputs >= 2 && srcs > 2;
        Caps {
            interrupt: true,
            memcpy: true,
            xor: true,
            xor_val: true,
            pq,
            pq_val: pq,
            max_xor: srcs,
            max_pq: if pq { srcs - 2 } else { 0 },
            pq_continue: pq,
            // The engine's interleaving chunk (64 bytes).
            align_log2: c.len_align.trailing_zeros() as u8,
        }
    }

    /// A provider on `engine` (allocates the validation scratch).
    pub(crate) fn new(
        dev: &device::Device<Bound>,
        engine: Arc<EcEngine>,
        stats: Arc<DmaStats>,
    ) -> Result<impl PinInit<Self, Error>> {
        let c = *engine.caps();
        let mut scratch = KVec::with_capacity(VAL_SLOTS, GFP_KERNEL)?;
        for _ in 0..VAL_SLOTS {
            scratch.push(DmaBuf::alloc(dev, 2 * SCRATCH as usize)?, GFP_KERNEL)?;
        }
        Ok(pin_init!(Self {
            gf256: c.gf256,
            piece: c.max_len / c.len_align * c.len_align,
            engine,
            scratch,
            sh <- new_irq_safe_lock!(
                Shared {
                    ring: [(0, 0); RING],
                    n: 0,
                    lost: 0,
                    scratch_busy: 0,
                    done: None,
                },
                "cx4::ec_dma"
            ),
            stats,
        }? Error))
    }

    /// Checks a request against the caps; fills a descriptor.
    fn build(&self, req: &Request<'_>) -> Result<Desc> {
        let mut d = Desc {
            op: Op::Interrupt,
            fence: req.fence,
            field: Field::Gf16,
            srcs: [0; MAX_SRCS],
            coef: [[0; MAX_OUTPUTS]; MAX_SRCS],
            k: 0,
            dsts: [0; 2],
            n: 0,
            sum_bits: [0; 2],
            len: u32::try_from(req.len).map_err(|_| EINVAL)?,
            piece: self.piece,
            pieces: 0,
            next: 0,
            retry: 0,
            inflight: 0,
            done: 0,
            retries: 0,
            failed: false,
            sum: 0,
            scratch: None,
        };
        // Adds a source with its coefficient for each output.
        let add = |d: &mut Desc, a: DmaAddr, c: [u8; 2]| -> Result {
            if d.k >= self.engine.caps().max_srcs.min(MAX_SRCS) {
                return Err(EINVAL);
            }
            d.srcs[d.k] = a;
            d.coef[d.k][..2].copy_from_slice(&c);
            d.k += 1;
            Ok(())
        };
        match req.kind {
            Kind::Interrupt => return Ok(d),
            Kind::Memcpy { dst, src } => {
                d.op = Op::Memcpy;
                add(&mut d, src, [1, 0])?;
                d.dsts[0] = dst;
                d.n = 1;
            }
            Kind::Xor { dst, srcs } => {
                d.op = Op::Xor;
                for &s in srcs {
                    add(&mut d, s, [1, 0])?;
                }
                d.dsts[0] = dst;
                d.n = 1;
            }
            Kind::XorVal { srcs } => {
                d.op = Op::XorVal;
                for &s in srcs {
                    add(&mut d, s, [1, 0])?;
                }
                d.n = 1;
                d.sum_bits[0] = SUM_CHECK_P;
            }
            Kind::Pq {
                p,
                q,
                srcs,
                scf,
                cont,
            } => {
                if !self.gf256 || scf.len() != srcs.len() {
                    return Err(EINVAL);
                }
                d.op = Op::Pq;
                d.field = Field::Gf256;
                // Output columns: P (if enabled), then Q (if enabled).
                let outs = [p, q];
                for (i, &s) in srcs.iter().enumerate() {
                    let mut c = [0u8; 2];
                    let mut j = 0;
                    for (o, coef) in outs.iter().zip([1, scf[i]]) {
                        if o.is_some() {
                            c[j] = coef;
                            j += 1;
                        }
                    }
                    add(&mut d, s, c)?;
                }
                let mut j = 0;
                for o in outs.iter() {
                    if let Some(a) = *o {
                        if cont {
                            // The old value is a source of its own output only.
                            let mut c = [0u8; 2];
                            c[j] = 1;
                            add(&mut d, a, c)?;
                        }
                        d.dsts[j] = a;
                        j += 1;
                    }
                }
                d.n = j;
            }
            Kind::PqVal { p, q, srcs, scf } => {
                if !self.gf256 || scf.len() != srcs.len() {
                    return Err(EINVAL);
                }
                d.op = Op::PqVal;
                d.field = Field::Gf256;
                let outs = [p, q];
                for (i, &s) in srcs.iter().enumerate() {
                    let mut c = [0u8; 2];
                    let mut j = 0;
                    for (o, coef) in outs.iter().zip([1, scf[i]]) {
                        if o.is_some() {
                            c[j] = coef;
                            j += 1;
                        }
                    }
                    add(&mut d, s, c)?;
                }
                let mut j = 0;
                for (o, bit) in outs.iter().zip([SUM_CHECK_P, SUM_CHECK_Q]) {
                    if let Some(a) = *o {
                        let mut c = [0u8; 2];
                        c[j] = 1;
                        add(&mut d, a, c)?;
                        d.sum_bits[j] = bit;
                        j += 1;
                    }
                }
                d.n = j;
            }
        }
        if d.k == 0 || d.n == 0 {
            return Err(EINVAL);
        }
        // Divisors typed non-zero: no panic path in a client's (possibly atomic) call. (A
        // division by a plain `u32` ends the function in a call to `panic_const_div_by_zero`,
        // which objtool does not know as noreturn: "prep() falls through to next function".)
        let align = NonZeroU32::new(self.engine.caps().len_align).ok_or(EINVAL)?;
        if d.len == 0 || d.len % align != 0 {
            return Err(EINVAL);
        }
        if matches!(d.op, Op::XorVal | Op::PqVal) {
            d.piece = SCRATCH;
        }
        let piece = NonZeroU32::new(d.piece).ok_or(EINVAL)?;
        d.pieces = d.len / piece + u32::from(d.len % piece != 0);
        if d.pieces > MAX_PIECES {
            return Err(EINVAL);
        }
        Ok(d)
    }

    /// Whether `d` is a validation (one piece at a time, through scratch).
    fn is_val(d: &Desc) -> bool {
        matches!(d.op, Op::XorVal | Op::PqVal)
    }

    /// Takes in one completion.
    fn complete(&self, d: &mut Desc, piece: u32, errno: i32) {
        d.inflight = d.inflight.saturating_sub(1);
        if errno == 0 {
            d.done += 1;
            if Self::is_val(d) {
                if let Some(s) = d.scratch {
                    let len = (d.len - piece * d.piece).min(d.piece) as usize;
                    for j in 0..d.n {
                        if !self.zero(s, j, len) {
                            d.sum |= d.sum_bits[j];
                        }
                    }
                }
            }
            return;
        }
        self.stats.errors.fetch_add(1, Ordering::Relaxed);
        if errno == EIO.to_errno() && d.retries < MAX_RETRIES && !d.failed {
            d.retries += 1;
            d.retry |= 1u64 << piece;
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
        } else {
            d.failed = true;
        }
    }

    /// Whether output `j` of scratch slot `s` is all zero over `len` bytes.
    fn zero(&self, s: usize, j: usize, len: usize) -> bool {
        let Some(buf) = self.scratch.get(s) else {
            return false;
        };
        let mut tmp = [0u8; 256];
        let base = j * SCRATCH as usize;
        let mut off = 0;
        while off < len {
            let n = (len - off).min(tmp.len());
            if buf.read(base + off, &mut tmp[..n]).is_err() || tmp[..n].iter().any(|&b| b != 0)
            {
                return false;
            }
            off += n;
        }
        true
    }

    /// Submits the next piece of `d` (cookie `cookie`); `Err(EBUSY)` when the engine (or the
    /// scratch) is full.
    fn submit_one(&self, cookie: i32, d: &mut Desc, done: &Arc<dyn EcDone>) -> Result {
        let piece = if d.retry != 0 {
            d.retry.trailing_zeros()
        } else {
            d.next
        };
        let off = piece * d.piece;
        let len = (d.len - off).min(d.piece);
        let mut srcs = [0u64; MAX_SRCS];
        for (s, &a) in srcs.iter_mut().zip(&d.srcs[..d.k]) {
            *s = a + u64::from(off);
        }
        let mut dsts = [0u64; 2];
        for (o, &a) in dsts.iter_mut().zip(&d.dsts[..d.n]) {
            // A validation's scratch is reused piece after piece, from its start.
            *o = if Self::is_val(d) { a } else { a + u64::from(off) };
        }
        let calc = Calc {
            field: d.field,
            srcs: &srcs[..d.k],
            dsts: &dsts[..d.n],
            coef: &d.coef[..d.k],
            len,
        };
        self.engine.submit(&calc, done, tag(cookie, piece))?;
        self.stats.calcs.fetch_add(1, Ordering::Relaxed);
        if d.retry != 0 {
            d.retry &= !(1u64 << piece);
        } else {
            d.next += 1;
        }
        d.inflight += 1;
        Ok(())
    }

    /// Ends `d` if nothing of it is left; returns its status then.
    fn end(&self, d: &mut Desc) -> Option<Status> {
        if d.op == Op::Interrupt {
            return Some(Status::Ok);
        }
        if d.inflight != 0 {
            return None;
        }
        let status = if d.failed {
            self.stats.aborted.fetch_add(1, Ordering::Relaxed);
            Status::Aborted
        } else if d.done >= d.pieces {
            match d.op {
                Op::XorVal | Op::PqVal => {
                    if d.sum != 0 {
                        self.stats.val_mismatch.fetch_add(1, Ordering::Relaxed);
                    }
                    Status::Sum(d.sum)
                }
                _ => Status::Ok,
            }
        } else {
            return None;
        };
        if let Some(s) = d.scratch.take() {
            self.sh.lock().scratch_busy &= !(1 << s);
        }
        Some(status)
    }

    /// Gives `d` a scratch slot (a validation starting); false if none is free.
    fn take_scratch(&self, d: &mut Desc) -> bool {
        if d.scratch.is_some() {
            return true;
        }
        let mut sh = self.sh.lock();
        let free = !sh.scratch_busy & ((1u32 << VAL_SLOTS) - 1);
        if free == 0 {
            return false;
        }
        let s = free.trailing_zeros() as usize;
        sh.scratch_busy |= 1 << s;
        drop(sh);
        let Some(buf) = self.scratch.get(s) else {
            return false;
        };
        d.scratch = Some(s);
        for j in 0..d.n {
            d.dsts[j] = buf.dma() + (j as u64) * u64::from(SCRATCH);
        }
        true
    }

    /// The counters, for the debugfs `ec` file.
    pub(crate) fn show(stats: &DmaStats, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dma")?;
        for (name, n) in Op::NAMES.iter().zip(&stats.ops) {
            write!(f, " {} {}", name, n.load(Ordering::Relaxed))?;
        }
        writeln!(
            f,
            " bytes {} calcs {} errors {} retries {} aborted {} val_mismatch {}",
            stats.bytes.load(Ordering::Relaxed),
            stats.calcs.load(Ordering::Relaxed),
            stats.errors.load(Ordering::Relaxed),
            stats.retries.load(Ordering::Relaxed),
            stats.aborted.load(Ordering::Relaxed),
            stats.val_mismatch.load(Ordering::Relaxed)
        )
    }
}

impl Operations for EcDma {
    type Desc = Desc;

    fn prep(&self, req: &Request<'_>) -> Result<Desc> {
        let d = self.build(req)?;
        self.stats.ops[d.op.idx()].fetch_add(1, Ordering::Relaxed);
        self.stats
            .bytes
            .fetch_add(u64::from(d.len), Ordering::Relaxed);
        Ok(d)
    }

    fn process(&self, chan: &ChanRef<Self>, active: &mut Active<'_, Self>) {
        // 1. The completions the interrupt handler collected (taken out of the leaf lock: the
        //    engine is called below without it).
        let mut ring = [(0u64, 0i32); RING];
        let (n, done) = {
            let mut sh = self.sh.lock();
            let n = sh.n;
            ring[..n].copy_from_slice(&sh.ring[..n]);
            sh.n = 0;
            if sh.done.is_none() {
                let d: Result<Arc<dyn EcDone>> =
                    Arc::new(DmaDone(chan.clone()), GFP_ATOMIC)
                        .map(|a| a as Arc<dyn EcDone>)
                        .map_err(Error::from);
                sh.done = d.ok();
            }
            (n, sh.done.clone())
        };
        for &(t, errno) in &ring[..n] {
            let cookie = (t >> 32) as u32 as i32;
            let piece = t as u32;
            active.find(cookie, |e, _| self.complete(e.desc, piece, errno));
        }
        let Some(done) = done else {
            // No memory for the completion object: try again later.
            chan.kick_after(1);
            return;
        };
        // 2. Start what can start, in cookie order; end what is over.
        let mut blocked = false;
        let mut inflight = 0;
        let mut writes = [(0u64, 0u32); 32];
        let mut nwrites = 0;
        active.for_each(|e, fin| {
            if e.is_finished() {
                return true;
            }
            let cookie = e.cookie();
            let d = &mut *e.desc;
            // Read after write: a descriptor that reads what an earlier, unfinished one
            // writes waits for it, fence or not (async_tx submits a dependency on the same
            // channel directly, trusting the channel's order; the card runs the calculations
            // in order, but a result lands only when its SEND arrives on the looped-back QP,
            // after later calculations may have read their sources).
            let fresh = d.next == 0 && d.inflight == 0 && d.done == 0;
            if fresh && d.reads_any(&writes[..nwrites]) {
                return false;
            }
            while !blocked && !d.failed && (d.retry != 0 || d.next < d.pieces) {
                if Self::is_val(d) && (d.inflight != 0 || !self.take_scratch(d)) {
                    blocked = d.inflight == 0;
                    break;
                }
                match self.submit_one(cookie, d, &done) {
                    Ok(()) => {}
                    Err(e) if e == EBUSY => blocked = true,
                    Err(_) => d.failed = true,
                }
            }
            inflight += d.inflight;
            if let Some(s) = self.end(d) {
                fin.finish(s);
                return !blocked;
            }
            // Its outputs are not final until it completes.
            if !Self::is_val(d) {
                for &a in &d.dsts[..d.n] {
                    if nwrites == writes.len() {
                        // Too many to track: be safe, start nothing after it.
                        return false;
                    }
                    writes[nwrites] = (a, d.len);
                    nwrites += 1;
                }
            }
            // A fence holds back every later descriptor until it has completed.
            !blocked && !d.fence
        });
        if blocked && inflight == 0 {
            // Nothing in flight will complete to kick the channel: retry soon.
            chan.kick_after(1);
        }
    }

    fn free_chan_resources(&self) {
        // Break the channel reference the completion object holds.
        let d = self.sh.lock().done.take();
        drop(d);
    }
}
