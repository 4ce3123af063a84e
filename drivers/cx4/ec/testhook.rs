// SPDX-License-Identifier: GPL-2.0
//! The debugfs file `cx4/<pci name>/ec` (tests/ec_kernel.py), built only with
//! `CX4_TEST_HOOKS=y` (`--cfg cx4_test_hooks`) and registered by the root (layers.rs) whether
//! or not the engine came up: a write is one request, run to
//! completion through the kernel API (ops.rs); a read shows the engine's counters and the last
//! request's result.
//!
//! Request (one line of `key=value` words):
//!
//! - `op=encode|decode|update|raid6`, `field=gf16|gf256`, `k=`, `m=`, `len=`;
//! - `mat=HEX`: the m × k coding matrix, row-major (row j = code block j); `op=raid6` makes
//!   it (P all ones, Q = 2^i, GF(2^8)) and needs none;
//! - `seed=N`: data block i is the xorshift64* stream of `seed ^ (i + 1) · 0x9e3779b97f4a7c15`
//!   (8 bytes per step, little endian); `layout=scatter` (default: each block its own coherent
//!   buffer, a KLM UMR gathers them) or `contig` (one buffer of at most 2 MiB, no UMR);
//! - `batch=B` (encode, raid6): B calculations over the same data, each with its own code
//!   blocks, all submitted before any is awaited (`EBUSY` is retried); their codes must agree;
//! - decode: `erase=i,j,..` — the blocks are encoded, the erased ones overwritten, decoded;
//! - update: `upd=i,j,..` and `seed2=N` — encoded, then those data blocks replaced by seed2's
//!   streams and the code updated from the old code and the old and new data.
//!
//! Result: `ok <op> ...`, `code j crc 0x…` for the code blocks of the (first) encode,
//! `block i crc 0x…` for decoded blocks, `new code j crc 0x…` after an update (CRC-32 as
//! zlib's), `peak inflight N`, `ns N` (the (first) encode's batch: nanoseconds from just before
//! the first submit to the last completion, monotonic clock — tools/bench/ec_bench.py's
//! throughput); or `error <op>: <errno>: <why>` and the write fails with that errno (`EINVAL`
//! for a request the API refuses, `EIO` when the card failed calculations).

use core::{
    fmt,
    fmt::Write,
    sync::atomic::{
        AtomicBool,
        AtomicI32,
        AtomicU64,
        AtomicUsize,
        Ordering, //
    },
};

use kernel::{
    debugfs::{
        Dir,
        File, //
    },
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    time::{
        delay::fsleep,
        Delta,
        Instant,
        Monotonic, //
    },
    uaccess::UserSliceReader,
};

use super::{
    crc::Crc32,
    decode,
    encode,
    update,
    CodeMatrix,
    DmaAddr,
    EcDone,
    EcEngine,
    EcSlot,
    Field,
    MAX_OUTPUTS,
    MAX_SRCS, //
};
use crate::{
    dmabuf::DmaBuf,
    mdev::Mdev, //
};

/// The longest request line.
const MAX_REQ: usize = 512;
/// Most calculations of one batch.
const MAX_BATCH: usize = 64;
/// The largest `layout=contig` buffer (one coherent allocation: 2 MiB, order 9).
const MAX_CONTIG: usize = 2 << 20;
/// How long a request waits for its calculations (TCG guests are slow).
const WAIT_MS: u32 = 120_000;

/// The hook's state: the last result.
#[pin_data]
pub(crate) struct TestHook {
    mdev: Arc<Mdev>,
    slot: Arc<EcSlot>,
    #[pin]
    last: Mutex<KVec<u8>>,
}

/// A request, parsed.
struct Req {
    op: Op,
    field: Field,
    k: usize,
    m: usize,
    len: u32,
    mat: [u8; MAX_SRCS * MAX_OUTPUTS],
    has_mat: bool,
    seed: u64,
    seed2: u64,
    contig: bool,
    batch: usize,
    list: [usize; MAX_SRCS + MAX_OUTPUTS],
    nlist: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Encode,
    Decode,
    Update,
    Raid6,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Encode => "encode",
            Op::Decode => "decode",
            Op::Update => "update",
            Op::Raid6 => "raid6",
        }
    }
}

/// Waits for a request's calculations: counts them, checks their order.
struct Wait {
    left: AtomicUsize,
    failed: AtomicUsize,
    next: AtomicU64,
    in_order: AtomicBool,
    errno: AtomicI32,
    /// When the wait was made (just before the first submit).
    start: Instant<Monotonic>,
    /// Nanoseconds from `start` to the latest completion.
    ns: AtomicU64,
}

impl EcDone for Wait {
    fn done(&self, tag: u64, res: Result) {
        if self.next.fetch_add(1, Ordering::AcqRel) != tag {
            self.in_order.store(false, Ordering::Release);
        }
        if let Err(e) = res {
            self.failed.fetch_add(1, Ordering::AcqRel);
            self.errno.store(e.to_errno(), Ordering::Release);
        }
        // Before `left` drops: the waiter reads it once the last one is counted.
        let ns = self.start.elapsed().as_nanos().max(0) as u64;
        self.ns.store(ns, Ordering::Release);
        self.left.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A block of `len` bytes in coherent memory, or a view into a larger one.
struct Buf {
    mem: Arc<DmaBuf>,
    off: usize,
}

impl Buf {
    fn dma(&self) -> DmaAddr {
        self.mem.dma() + self.off as u64
    }
}

/// The xorshift64* stream of block `i`.
fn fill(seed: u64, i: usize, out: &mut [u8]) {
    let mut x = seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    if x == 0 {
        x = 1;
    }
    for c in out.chunks_mut(8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        c.copy_from_slice(&v[..c.len()]);
    }
}

fn parse_list(v: &str, out: &mut [usize]) -> Result<usize> {
    let mut n = 0;
    for w in v.split(',').filter(|w| !w.is_empty()) {
        *out.get_mut(n).ok_or(EINVAL)? = w.parse().map_err(|_| EINVAL)?;
        n += 1;
    }
    Ok(n)
}

fn hex(c: u8) -> Result<u8> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(EINVAL),
    }
}

impl Req {
    fn parse(s: &str) -> Result<Self> {
        let mut r = Req {
            op: Op::Encode,
            field: Field::Gf16,
            k: 0,
            m: 0,
            len: 0,
            mat: [0; MAX_SRCS * MAX_OUTPUTS],
            has_mat: false,
            seed: 1,
            seed2: 2,
            contig: false,
            batch: 1,
            list: [0; MAX_SRCS + MAX_OUTPUTS],
            nlist: 0,
        };
        let num = |v: &str| v.parse::<u64>().map_err(|_| EINVAL);
        for w in s.split_whitespace() {
            let (key, v) = w.split_once('=').ok_or(EINVAL)?;
            match key {
                "op" => {
                    r.op = match v {
                        "encode" => Op::Encode,
                        "decode" => Op::Decode,
                        "update" => Op::Update,
                        "raid6" => Op::Raid6,
                        _ => return Err(EINVAL),
                    }
                }
                "field" => {
                    r.field = match v {
                        "gf16" => Field::Gf16,
                        "gf256" => Field::Gf256,
                        _ => return Err(EINVAL),
                    }
                }
                "k" => r.k = num(v)?.min(1024) as usize,
                "m" => r.m = num(v)?.min(1024) as usize,
                "len" => r.len = u32::try_from(num(v)?).map_err(|_| EINVAL)?,
                "seed" => r.seed = num(v)?,
                "seed2" => r.seed2 = num(v)?,
                "batch" => r.batch = num(v)? as usize,
                "layout" => {
                    r.contig = match v {
                        "contig" => true,
                        "scatter" => false,
                        _ => return Err(EINVAL),
                    }
                }
                "mat" => {
                    let b = v.as_bytes();
                    if b.len() % 2 != 0 || b.len() / 2 > r.mat.len() {
                        return Err(EINVAL);
                    }
                    for (i, p) in b.chunks(2).enumerate() {
                        r.mat[i] = hex(p[0])? << 4 | hex(p[1])?;
                    }
                    r.has_mat = true;
                }
                "erase" | "upd" => r.nlist = parse_list(v, &mut r.list)?,
                _ => return Err(EINVAL),
            }
        }
        if r.batch == 0 || r.batch > MAX_BATCH {
            return Err(EINVAL);
        }
        Ok(r)
    }
}

/// Why the API refused a request, from the engine's caps (for the result line).
fn explain(e: &EcEngine, r: &Req) -> &'static str {
    let c = e.caps();
    if r.k == 0 || r.k > c.max_srcs {
        "k must be 1..=16 (max_vec_count)"
    } else if r.m == 0 || r.m > c.max_outputs {
        "m must be 1..=4 (output slots)"
    } else if r.field == Field::Gf256 && !c.gf256 {
        "GF(2^8) matrices not supported by this card (calc_matrix_type_8bit = 0)"
    } else if r.len == 0 || r.len % c.len_align != 0 {
        "len must be a positive multiple of 64 bytes"
    } else if r.len > c.max_len {
        "len above the engine's largest block"
    } else {
        "bad matrix, erasures or updates"
    }
}

/// Formats into a fixed buffer (no allocation in the result path).
struct Line<'a>(&'a mut KVec<u8>);

impl fmt::Write for Line<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0
            .extend_from_slice(s.as_bytes(), GFP_KERNEL)
            .map_err(|_| fmt::Error)
    }
}

impl TestHook {
    /// The hook of the function whose engine `slot` holds.
    pub(crate) fn new(mdev: Arc<Mdev>, slot: Arc<EcSlot>) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            mdev,
            slot,
            last <- new_mutex!(KVec::new(), "cx4::ec_testhook"),
        })
    }

    /// The `ec` file's contents: the engine's and the DMA channel's counters, then the last
    /// request's result.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.slot.show(f)?;
        let last = self.last.lock();
        f.write_str(core::str::from_utf8(&last).unwrap_or("?\n"))
    }

    /// One write: a request.
    pub(crate) fn write(&self, r: &mut UserSliceReader) -> Result {
        let mut buf = [0u8; MAX_REQ];
        let n = r.len().min(buf.len());
        r.read_slice(&mut buf[..n])?;
        let s = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?.trim();
        let mut out = KVec::new();
        let res = match Req::parse(s) {
            Err(e) => {
                let _ = writeln!(Line(&mut out), "error parse: {:?}: bad request {:?}", e, s);
                Err(e)
            }
            Ok(req) => match self.slot.get() {
                None => {
                    let _ = writeln!(Line(&mut out), "error {}: ENODEV: no engine", req.op.name());
                    Err(ENODEV)
                }
                Some(e) => self.run(&e, &req, &mut out),
            },
        };
        *self.last.lock() = out;
        res
    }

    fn alloc(&self, len: usize) -> Result<Arc<DmaBuf>> {
        Ok(Arc::new(
            DmaBuf::alloc(self.mdev.dev.get(), len)?,
            GFP_KERNEL,
        )?)
    }

    /// k blocks of seeded data (scattered or one buffer).
    fn data(&self, r: &Req, seed: u64, tmp: &mut KVec<u8>) -> Result<KVec<Buf>> {
        let len = r.len as usize;
        let mut v = KVec::new();
        let whole = if r.contig {
            Some(self.alloc(len * r.k)?)
        } else {
            None
        };
        for i in 0..r.k {
            fill(seed, i, tmp);
            let b = match &whole {
                Some(w) => Buf {
                    mem: w.clone(),
                    off: i * len,
                },
                None => Buf {
                    mem: self.alloc(len)?,
                    off: 0,
                },
            };
            b.mem.write(b.off, tmp)?;
            v.push(b, GFP_KERNEL)?;
        }
        Ok(v)
    }

    fn blank(&self, n: usize, len: usize, tmp: &mut KVec<u8>) -> Result<KVec<Buf>> {
        let mut v = KVec::new();
        tmp.iter_mut().for_each(|b| *b = 0xdb);
        for _ in 0..n {
            let b = Buf {
                mem: self.alloc(len)?,
                off: 0,
            };
            b.mem.write(0, tmp)?;
            v.push(b, GFP_KERNEL)?;
        }
        Ok(v)
    }

    fn crc(b: &Buf, len: usize, tmp: &mut KVec<u8>) -> Result<u32> {
        b.mem.read(b.off, &mut tmp[..len])?;
        let mut c = Crc32::new();
        c.update(&tmp[..len]);
        Ok(c.finish())
    }

    /// Waits for `w`'s calculations; `EIO` (or their error) if any failed.
    fn wait(w: &Wait, out: &mut KVec<u8>, what: &str, total: usize) -> Result {
        let mut ms = 0;
        while w.left.load(Ordering::Acquire) != 0 {
            if ms >= WAIT_MS {
                let _ = writeln!(
                    Line(out),
                    "error {what}: ETIMEDOUT: calculations not answered"
                );
                return Err(ETIMEDOUT);
            }
            fsleep(Delta::from_millis(2));
            ms += 2;
        }
        if !w.in_order.load(Ordering::Acquire) {
            let _ = writeln!(Line(out), "error {what}: EIO: completions out of order");
            return Err(EIO);
        }
        let failed = w.failed.load(Ordering::Acquire);
        if failed != 0 {
            let e = Error::from_errno(w.errno.load(Ordering::Acquire));
            let _ = writeln!(
                Line(out),
                "error {what}: {:?}: {failed} of {total} calculations failed",
                e
            );
            return Err(e);
        }
        Ok(())
    }

    /// Submits with `f` (tag t), retrying while the engine is busy.
    fn submit_retry(mut f: impl FnMut() -> Result) -> Result {
        let mut ms = 0;
        loop {
            match f() {
                Err(e) if e == EBUSY && ms < WAIT_MS => {
                    fsleep(Delta::from_millis(1));
                    ms += 1;
                }
                r => return r,
            }
        }
    }

    fn new_wait(n: usize) -> Result<Arc<Wait>> {
        Ok(Arc::new(
            Wait {
                left: AtomicUsize::new(n),
                failed: AtomicUsize::new(0),
                next: AtomicU64::new(0),
                in_order: AtomicBool::new(true),
                errno: AtomicI32::new(0),
                start: Instant::now(),
                ns: AtomicU64::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    fn run(&self, e: &EcEngine, r: &Req, out: &mut KVec<u8>) -> Result {
        let what = r.op.name();
        let res = self.run_inner(e, r, out);
        if let Err(err) = res {
            if err == EINVAL && !out.starts_with(b"error") {
                out.clear();
                let _ = writeln!(Line(out), "error {what}: EINVAL: {}", explain(e, r));
            }
        }
        res
    }

    fn run_inner(&self, e: &EcEngine, r: &Req, out: &mut KVec<u8>) -> Result {
        let what = r.op.name();
        let mat = match r.op {
            Op::Raid6 => {
                if r.field != Field::Gf256 || r.m != 2 {
                    return Err(EINVAL);
                }
                CodeMatrix::raid6(r.k)?
            }
            _ if !r.has_mat => return Err(EINVAL),
            _ => CodeMatrix::new(
                r.field,
                r.k,
                r.m,
                r.mat.get(..r.k.saturating_mul(r.m)).ok_or(EINVAL)?,
            )?,
        };
        // Sizes the API checks too, but the buffers must be allocatable first.
        let c = e.caps();
        if r.len == 0 || r.len > c.max_len || r.len % c.len_align != 0 {
            // Let the API refuse it, over one small buffer.
            let w = Self::new_wait(1)?;
            let d: Arc<dyn EcDone> = w.clone();
            let one = self.alloc(64)?;
            let a = [one.dma(); MAX_SRCS];
            encode(e, &mat, &a[..r.k], &a[..r.m], r.len, &d, 0)?;
            // Accepted after all (cannot happen): the buffer must outlive the card's use.
            let _ = Self::wait(&w, out, what, 1);
            return Err(EINVAL);
        }
        let len = r.len as usize;
        if r.contig && len * r.k > MAX_CONTIG {
            let _ = writeln!(
                Line(out),
                "error {what}: EINVAL: layout=contig takes at most {MAX_CONTIG} bytes"
            );
            return Err(EINVAL);
        }
        let mut tmp = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        let data = self.data(r, r.seed, &mut tmp)?;
        let batch = if matches!(r.op, Op::Encode | Op::Raid6) {
            r.batch
        } else {
            1
        };
        let codes = self.blank(r.m * batch, len, &mut tmp)?;
        let mut da = [0u64; MAX_SRCS];
        for (a, b) in da.iter_mut().zip(data.iter()) {
            *a = b.dma();
        }
        let w = Self::new_wait(batch)?;
        let d: Arc<dyn EcDone> = w.clone();
        let mut peak = 0;
        for t in 0..batch {
            let mut ca = [0u64; MAX_OUTPUTS];
            for (j, a) in ca.iter_mut().enumerate().take(r.m) {
                *a = codes[t * r.m + j].dma();
            }
            let sub =
                Self::submit_retry(|| encode(e, &mat, &da[..r.k], &ca[..r.m], r.len, &d, t as u64));
            if let Err(err) = sub {
                // The ones submitted must finish before their buffers go.
                w.left.fetch_sub(batch - t, Ordering::AcqRel);
                let _ = Self::wait(&w, &mut KVec::new(), what, batch);
                if err != EINVAL {
                    let _ = writeln!(Line(out), "error {what}: {:?}: submit", err);
                }
                return Err(err);
            }
            peak = peak.max(e.inflight());
        }
        Self::wait(&w, out, what, batch)?;
        let ns = w.ns.load(Ordering::Acquire);
        let mut first = [0u32; MAX_OUTPUTS];
        for t in 0..batch {
            for j in 0..r.m {
                let c = Self::crc(&codes[t * r.m + j], len, &mut tmp)?;
                if t == 0 {
                    first[j] = c;
                } else if c != first[j] {
                    let _ = writeln!(
                        Line(out),
                        "error {what}: EIO: batch {t} code {j} crc {c:#010x} != {:#010x}",
                        first[j]
                    );
                    return Err(EIO);
                }
            }
        }
        let mut text = KVec::new();
        let mut l = Line(&mut text);
        let _ = writeln!(
            l,
            "ok {what} k {} m {} len {} batch {} {}",
            r.k,
            r.m,
            r.len,
            batch,
            if r.contig { "contig" } else { "scatter" }
        );
        for (j, c) in first.iter().enumerate().take(r.m) {
            let _ = writeln!(l, "code {j} crc {c:#010x}");
        }
        match r.op {
            Op::Encode | Op::Raid6 => {}
            Op::Decode => {
                let erased = &r.list[..r.nlist];
                // Every block in one list: data then code; the erased ones overwritten.
                let mut blocks = [0u64; MAX_SRCS + MAX_OUTPUTS];
                for i in 0..r.k + r.m {
                    blocks[i] = if i < r.k {
                        data[i].dma()
                    } else {
                        codes[i - r.k].dma()
                    };
                }
                tmp.iter_mut().for_each(|b| *b = 0x6b);
                for &x in erased {
                    let b = if x < r.k {
                        data.get(x)
                    } else {
                        codes.get(x.wrapping_sub(r.k))
                    }
                    .ok_or(EINVAL)?;
                    b.mem.write(b.off, &tmp)?;
                }
                let w = Self::new_wait(1)?;
                let d: Arc<dyn EcDone> = w.clone();
                Self::submit_retry(|| decode(e, &mat, &blocks[..r.k + r.m], erased, r.len, &d, 0))?;
                Self::wait(&w, out, what, 1)?;
                for &x in erased {
                    let b = if x < r.k { &data[x] } else { &codes[x - r.k] };
                    let c = Self::crc(b, len, &mut tmp)?;
                    let _ = writeln!(l, "block {x} crc {c:#010x}");
                }
            }
            Op::Update => {
                let upd = &r.list[..r.nlist];
                let mut olds = [0u64; MAX_SRCS];
                let mut news = [0u64; MAX_SRCS];
                let mut keep = KVec::new();
                for (a, &c) in upd.iter().enumerate() {
                    olds[a] = data.get(c).ok_or(EINVAL)?.dma();
                    fill(r.seed2, c, &mut tmp);
                    let b = self.alloc(len)?;
                    b.write(0, &tmp)?;
                    news[a] = b.dma();
                    keep.push(b, GFP_KERNEL)?;
                }
                let mut ca = [0u64; MAX_OUTPUTS];
                for (j, a) in ca.iter_mut().enumerate().take(r.m) {
                    *a = codes[j].dma();
                }
                let w = Self::new_wait(1)?;
                let d: Arc<dyn EcDone> = w.clone();
                // In place: the new code over the old.
                Self::submit_retry(|| {
                    update(
                        e,
                        &mat,
                        upd,
                        &olds[..upd.len()],
                        &news[..upd.len()],
                        &ca[..r.m],
                        &ca[..r.m],
                        r.len,
                        &d,
                        0,
                    )
                })?;
                Self::wait(&w, out, what, 1)?;
                for j in 0..r.m {
                    let c = Self::crc(&codes[j], len, &mut tmp)?;
                    let _ = writeln!(l, "new code {j} crc {c:#010x}");
                }
            }
        }
        let _ = writeln!(l, "peak inflight {peak}");
        let _ = writeln!(l, "ns {ns}");
        out.extend_from_slice(&text, GFP_KERNEL)?;
        Ok(())
    }
}

/// The `ec` file in the function's debugfs directory; removed on drop.
pub(crate) struct EcFile {
    _file: Pin<KBox<File<TestHook>>>,
}

impl EcFile {
    /// Creates `ec` in `dir` for the engine in `slot`.
    pub(crate) fn new(dir: &Dir, mdev: Arc<Mdev>, slot: Arc<EcSlot>) -> Result<Self> {
        let data = TestHook::new(mdev, slot);
        let file = KBox::pin_init(
            dir.read_write_callback_file(c"ec", data, &show, &write),
            GFP_KERNEL,
        )?;
        Ok(Self { _file: file })
    }
}

fn show(t: &TestHook, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    t.show(f)
}

fn write(t: &TestHook, r: &mut UserSliceReader) -> Result {
    t.write(r)
}
