//! A vector calculation taken from its WQE, its result computed where it lands.
//!
//! The card streams a vector-calc SEND's payload from the inputs as it sends it
//! (`vector_calc.rs`); the model keeps what the stream is computed from — the calculation,
//! the matrix and the input vectors' translated pieces — as the SEND's local data
//! ([`super::wqe::Gather::Calc`]), and computes bytes when they are needed:
//! - a frame (the wire, or a loopback that cannot take a burst) gathers from the whole
//!   stream, computed once and kept for retransmissions ([`CalcJob::stream`]);
//! - a burst to a QP of this card places the payload straight into the receive WQE's
//!   buffers: the scatter list's copies ([`crate::fw::Firmware::translate_write`], the
//!   repeat-block mkey that spreads the chunks over the m code blocks) are turned into
//!   spans of the outputs, and each stripe of the outputs is written to them as it is
//!   computed ([`CalcJob::place`]) — no stream, no copy of it, one write per output and
//!   stripe where an output's chunks are contiguous in memory, as they are behind libmlx5's
//!   and cx4's output mkeys.
//!
//! Reading the inputs later than the WQE is what the card does (it reads them as it sends);
//! a calculation is only deferred when every piece of every input lies in one mapping of
//! guest memory, so that the reads cannot fail ([`CalcJob::readable`]).

use std::sync::{Mutex, OnceLock};

use crate::{
    ec::{
        calc::{Calc, Scratch, Source},
        dot::{DotProd, Input, Kernel},
    },
    fw::{strided_spans, Copy},
    guest_mem::GuestMem,
};

/// A calculation whose stream is computed when needed.
pub struct CalcJob {
    calc: Calc,
    matrix: Vec<u8>,
    /// Per input: (offset in the vector, guest address, bytes), in order, adjacent pieces
    /// merged.
    vecs: Vec<Vec<(usize, u64, usize)>>,
    /// The matrix as the fastest kernel of the CPU takes it.
    dot: DotProd,
    /// The stripes of the placements, kept from one to the next.
    scratch: Mutex<Scratch>,
    /// The whole stream, once a frame needed it.
    stream: OnceLock<Vec<u8>>,
}

impl std::fmt::Debug for CalcJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalcJob")
            .field("calc", &self.calc)
            .field("inputs", &self.vecs.len())
            .field("stream", &self.stream.get().map(Vec::len))
            .finish()
    }
}

impl PartialEq for CalcJob {
    fn eq(&self, o: &CalcJob) -> bool {
        (&self.calc, &self.matrix, &self.vecs) == (&o.calc, &o.matrix, &o.vecs)
    }
}

impl Eq for CalcJob {}

impl CalcJob {
    /// The calculation `calc` of `matrix` over the inputs translated to `pieces` (guest
    /// physical, per input in order).
    pub fn new(calc: Calc, matrix: Vec<u8>, pieces: Vec<Vec<(u64, u32)>>) -> CalcJob {
        CalcJob {
            dot: calc.dot_prod(Kernel::best(), &matrix),
            calc,
            matrix,
            vecs: merged(pieces),
            scratch: Mutex::default(),
            stream: OnceLock::new(),
        }
    }

    /// Whether every piece of every input lies in one mapping of guest memory, so that reading
    /// them later cannot fail (else the caller computes at once, [`CalcJob::compute`], and
    /// reports the unreadable input).
    pub fn readable(&self, mem: &GuestMem) -> bool {
        self.vecs
            .iter()
            .flatten()
            .all(|&(_, pa, n)| mem.input(pa, n).is_some())
    }

    /// The calculation.
    pub fn calc(&self) -> &Calc {
        &self.calc
    }

    /// Computes the stream now, reporting the input a read failed in.
    pub fn compute(&self, mem: &GuestMem) -> Result<Vec<u8>, usize> {
        let src = GuestVectors {
            mem,
            vecs: &self.vecs,
        };
        self.calc.compute_from(Kernel::best(), &self.matrix, &src)
    }

    /// The whole stream (computed the first time).
    pub fn stream(&self, mem: &GuestMem) -> &[u8] {
        self.stream.get_or_init(|| {
            self.compute(mem).unwrap_or_else(|i| {
                // Checked readable when the job was made; guest memory does not shrink.
                log::warn!("vector calc: input vector {i} no longer readable: zeros sent");
                vec![0u8; self.calc.stream_len()]
            })
        })
    }

    /// Writes stream bytes `at..at + len` where `copies` put them: each `(base, copy)` places
    /// the bytes from `at + base` on as the copy says (its offsets relative to that byte).
    /// The outputs' rows behind those bytes are computed a stripe at a time and written out
    /// as they are; false (nothing written) if the copies reach past the range. Once the
    /// whole stream was computed (a frame needed it), its bytes are copied instead.
    pub fn place(&self, mem: &GuestMem, at: usize, len: usize, copies: &[(usize, Copy)]) -> bool {
        let Some(spans) = self.spans(at, len, copies) else {
            return false;
        };
        if let Some(stream) = self.stream.get() {
            for (j, out) in spans.iter().enumerate() {
                for s in out {
                    let _ = self
                        .stream_bytes_of(stream, j, s)
                        .map(|b| mem.write(s.pa, &b));
                }
            }
            return true;
        }
        let src = GuestVectors {
            mem,
            vecs: &self.vecs,
        };
        let rows = self.calc.rows_of(at..at + len);
        let mut cursor = vec![0usize; spans.len()];
        let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        let r = self
            .calc
            .compute_rows(&self.dot, &src, rows, &mut scratch, |off, outs| {
                let end = off + outs.first().map_or(0, |o| o.len());
                for ((out, c), bytes) in spans.iter().zip(&mut cursor).zip(outs) {
                    // Spans of one output are disjoint and in order: skip those done.
                    while out.get(*c).is_some_and(|s| s.off + s.n <= off) {
                        *c += 1;
                    }
                    for s in out[*c..].iter().take_while(|s| s.off < end) {
                        let (from, to) = (s.off.max(off), (s.off + s.n).min(end));
                        let pa = s.pa + (from - s.off) as u64;
                        let _ = mem.write(pa, &bytes[from - off..to - off]);
                    }
                }
            });
        if let Err(i) = r {
            log::warn!("vector calc: input vector {i} no longer readable: result not placed");
        }
        true
    }

    /// Output j's bytes of span `s` out of the whole stream.
    fn stream_bytes_of(&self, stream: &[u8], j: usize, s: &Span) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(s.n);
        let mut off = s.off;
        while off < s.off + s.n {
            let p = self.stream_pos(j, off)?;
            let (_, _, run) = self.calc.stream_source(p)?;
            let k = run.min(s.off + s.n - off);
            out.extend_from_slice(stream.get(p..p + k)?);
            off += k;
        }
        Some(out)
    }

    /// The stream position of output j's byte `off` (the inverse of
    /// [`Calc::stream_source`]).
    fn stream_pos(&self, j: usize, off: usize) -> Option<usize> {
        let c = &self.calc;
        let (n, chunk) = (c.outputs.max(1), c.chunk.max(1));
        let whole = c.vec_size / chunk * chunk;
        if off < whole {
            Some(off / chunk * chunk * n + j * chunk + off % chunk)
        } else {
            let tail = c.vec_size - whole;
            (off < c.vec_size).then(|| whole * n + j * tail + (off - whole))
        }
    }

    /// The copies of stream bytes `at..at + len` as spans of each output, each output's in
    /// order of offset; `None` if a copy reaches outside the range.
    fn spans(&self, at: usize, len: usize, copies: &[(usize, Copy)]) -> Option<Vec<Vec<Span>>> {
        let c = &self.calc;
        let mut spans: Vec<Vec<Span>> = vec![Vec::new(); c.outputs];
        let mut bytes = 0usize;
        // Stream bytes p.. to guest pa, n of them, cut at the chunks they come from.
        let generic = |spans: &mut Vec<Vec<Span>>, mut p: usize, mut pa: u64, mut n: usize| {
            while n > 0 {
                let Some((j, off, run)) = c.stream_source(p) else {
                    return false;
                };
                let k = run.min(n);
                spans[j].push(Span { off, pa, n: k });
                (p, pa, n) = (p + k, pa + k as u64, n - k);
            }
            true
        };
        for (base, copy) in copies {
            match copy {
                Copy::Piece { at: a, pa, n } => {
                    bytes += *n as usize;
                    if !generic(&mut spans, at + base + a, *pa, *n as usize) {
                        return None;
                    }
                }
                Copy::Repeated {
                    at: a,
                    step,
                    chunk,
                    count,
                    dst,
                } => {
                    // Each chunk over the one before: only the last stays (the card writes
                    // the stream in order), as the m = 3 dump's stride-0 entry.
                    let (chunk, count) = (*chunk as usize, *count as usize);
                    bytes += chunk * count;
                    let Some(last) = count.checked_sub(1) else {
                        continue;
                    };
                    let mut p = at + base + a + last * step;
                    for &(pa, n) in dst {
                        if !generic(&mut spans, p, pa, n as usize) {
                            return None;
                        }
                        p += n as usize;
                    }
                }
                Copy::Strided {
                    at: a,
                    step,
                    chunk,
                    count,
                    dst,
                } => {
                    let (chunk, count) = (*chunk as usize, *count as usize);
                    bytes += chunk * count;
                    let p = at + base + a;
                    // Output j's chunks one after the other, laid end to end: its bytes
                    // from `off` on go over the pieces as they are.
                    let whole = c.vec_size / c.chunk.max(1) * c.chunk;
                    match c.stream_source(p) {
                        Some((j, off, run))
                            if *step == c.chunk * c.outputs
                                && chunk == c.chunk
                                && run == chunk
                                && off + chunk * count <= whole =>
                        {
                            let mut o = off;
                            for &(pa, n) in dst {
                                spans[j].push(Span {
                                    off: o,
                                    pa,
                                    n: n as usize,
                                });
                                o += n as usize;
                            }
                        }
                        _ => {
                            let mut ok = true;
                            let walked =
                                strided_spans(dst, (*a, *step, chunk, count), |i, po, d, k| {
                                    let pa = dst[i].0 + po as u64;
                                    ok &= generic(&mut spans, at + base + d, pa, k);
                                    ok
                                });
                            if !walked || !ok {
                                return None;
                            }
                        }
                    }
                }
            }
        }
        if bytes != len {
            return None;
        }
        for s in &mut spans {
            s.sort_by_key(|s| s.off);
        }
        Some(spans)
    }
}

/// Bytes `off..off + n` of one output, written to guest physical `pa`.
#[derive(Clone, Copy, Debug)]
struct Span {
    off: usize,
    pa: u64,
    n: usize,
}

/// Each input's pieces with their offsets in the vector, adjacent ones merged.
fn merged(pieces: Vec<Vec<(u64, u32)>>) -> Vec<Vec<(usize, u64, usize)>> {
    pieces
        .into_iter()
        .map(|p| {
            let mut v: Vec<(usize, u64, usize)> = Vec::with_capacity(p.len());
            let mut off = 0;
            for (pa, n) in p {
                let n = n as usize;
                match v.last_mut() {
                    Some(last) if last.1.wrapping_add(last.2 as u64) == pa => last.2 += n,
                    _ => v.push((off, pa, n)),
                }
                off += n;
            }
            v
        })
        .collect()
}

/// The input vectors of a calculation in guest memory, read in place where a stripe lies in
/// one piece of one mapping ([`GuestMem::input`]), else copied piece by piece; every access
/// bounded by vm-memory, an address outside guest memory is an error.
struct GuestVectors<'a> {
    mem: &'a GuestMem,
    /// Per vector: (offset in the vector, guest address, bytes), in order.
    vecs: &'a [Vec<(usize, u64, usize)>],
}

impl GuestVectors<'_> {
    /// The piece of vector `i` holding byte `off`.
    fn piece(&self, i: usize, off: usize) -> Option<(usize, u64, usize)> {
        let v = self.vecs.get(i)?;
        let at = v.partition_point(|p| p.0 + p.2 <= off);
        v.get(at).copied()
    }
}

impl Source for GuestVectors<'_> {
    /// The vector a read failed in.
    type Error = usize;

    fn run(&self, i: usize, off: usize) -> usize {
        self.piece(i, off).map_or(0, |(o, _, n)| o + n - off)
    }

    fn stripe(&self, i: usize, off: usize, buf: &mut [u8]) -> Result<Option<Input<'_>>, usize> {
        let len = buf.len();
        if let Some((o, pa, _)) = self.piece(i, off).filter(|p| off + len <= p.0 + p.2) {
            if let Some(inp) = self.mem.input(pa + (off - o) as u64, len) {
                return Ok(Some(inp));
            }
        }
        let mut at = 0;
        while at < len {
            let (o, pa, n) = self.piece(i, off + at).ok_or(i)?;
            let k = (o + n - (off + at)).min(len - at);
            self.mem
                .read(pa + (off + at - o) as u64, &mut buf[at..at + k])
                .map_err(|_| i)?;
            at += k;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ec::{gf::Field, testing::Rng};
    use crate::guest_mem::test_backing;

    const MEM: u64 = 0x100_0000;
    /// Where the inputs are, where the outputs go.
    const INPUTS: u64 = 0;
    const OUT: u64 = 0x80_0000;
    /// Where stride-0 copies of the last output go (below the outputs).
    const DUMP: u64 = 0x7f_ff00;

    /// Stream bytes `at..at + len` cut into random copies: pieces of random length to
    /// random places, and now and then the contiguous-output pattern (one output's chunks
    /// laid end to end, as a repeat-block entry with its stride equal to its length gives
    /// them) where the range allows it. Returns the copies and, per stream byte of the range,
    /// where it goes.
    fn random_copies(
        rng: &mut Rng,
        c: &Calc,
        at: usize,
        len: usize,
    ) -> (Vec<(usize, Copy)>, Vec<u64>) {
        let (n, chunk) = (c.outputs, c.chunk);
        let mut copies = Vec::new();
        let mut dest = vec![0u64; len];
        let mut next_pa = OUT;
        let row = chunk * n;
        let mut d = 0usize;
        while d < len {
            let p = at + d;
            let whole = c.vec_size / chunk * chunk * n;
            // A run of whole rows of one output (its chunk in each), if the range has them.
            let rows = (len - d) / row;
            if p.is_multiple_of(row) && rows > 0 && p + rows * row <= whole && rng.below(2) == 0 {
                let rows = 1 + rng.below(rows);
                // The last output now and then to the dump, a stride-0 entry.
                let dump = rng.below(3) == 0;
                for j in 0..n {
                    if dump && j == n - 1 {
                        for r in 0..rows {
                            for o in 0..chunk {
                                dest[d + r * row + j * chunk + o] = DUMP + o as u64;
                            }
                        }
                        copies.push((
                            0,
                            Copy::Repeated {
                                at: d + j * chunk,
                                step: row,
                                chunk: chunk as u32,
                                count: rows as u32,
                                dst: vec![(DUMP, chunk as u32)],
                            },
                        ));
                        continue;
                    }
                    let mut dst = Vec::new();
                    let mut left = rows * chunk;
                    while left > 0 {
                        let k = (1 + rng.below(3 * chunk)).min(left);
                        dst.push((next_pa, k as u32));
                        next_pa += k as u64 + 8 * rng.below(3) as u64;
                        left -= k;
                    }
                    let mut q = 0usize;
                    for &(pa, k) in &dst {
                        for b in 0..k as usize {
                            let (r, o) = ((q + b) / chunk, (q + b) % chunk);
                            dest[d + r * row + j * chunk + o] = pa + b as u64;
                        }
                        q += k as usize;
                    }
                    copies.push((
                        0,
                        Copy::Strided {
                            at: d + j * chunk,
                            step: row,
                            chunk: chunk as u32,
                            count: rows as u32,
                            dst,
                        },
                    ));
                }
                d += rows * row;
                continue;
            }
            // Now and then a chunk of the last output to the one dump place (a stride-0
            // repeat-block entry: every chunk over the one before).
            let last = c
                .stream_source(p)
                .is_some_and(|(j, _, run)| j == n - 1 && run == chunk);
            if last && len - d >= chunk && rng.below(3) == 0 {
                copies.push((
                    0,
                    Copy::Piece {
                        at: d,
                        pa: DUMP,
                        n: chunk as u32,
                    },
                ));
                for b in 0..chunk {
                    dest[d + b] = DUMP + b as u64;
                }
                d += chunk;
                continue;
            }
            let k = (1 + rng.below(200)).min(len - d);
            copies.push((
                0,
                Copy::Piece {
                    at: d,
                    pa: next_pa,
                    n: k as u32,
                },
            ));
            for b in 0..k {
                dest[d + b] = next_pa + b as u64;
            }
            next_pa += k as u64 + rng.below(5) as u64;
            d += k;
        }
        assert!(next_pa < MEM, "the test's outputs fit");
        (copies, dest)
    }

    /// A result placed as it is computed lands where the copies put the whole stream's
    /// bytes, for random calculations (both fields, 1-4 outputs, an unused slot, vectors
    /// with a short last chunk, inputs in pieces), random parts of the stream and random
    /// copies; and so does the placement after a frame had the whole stream computed.
    #[test]
    fn a_result_placed_as_computed_lands_where_the_stream_would() {
        let mut rng = Rng(0x0ca1_c0b5);
        let mut mem = GuestMem::default();
        mem.map(0, MEM, 0, Some(test_backing(MEM as usize)))
            .unwrap();
        mem.write(INPUTS, &rng.bytes(0x40_0000)).unwrap();
        let (mut strided, mut repeated, mut dumps) = (0, 0, 0);
        for round in 0..120 {
            let outputs = [1, 2, 4][rng.below(3)];
            let chunk = [64, 32, 128][rng.below(3)];
            let vec_size = [64, 4096, 1000, 9000, 40_000][rng.below(5)];
            let vec_count = 1 + rng.below(10);
            let mut active = [true, outputs > 1, outputs > 2, outputs > 3];
            if outputs == 4 && rng.below(2) == 0 {
                active[3] = false;
            }
            let c = Calc {
                field: [Field::Gf16, Field::Gf256][rng.below(2)],
                vec_count,
                vec_size,
                outputs,
                active,
                chunk,
            };
            let matrix = rng.bytes(c.matrix_len());
            // Each input in 1-3 pieces somewhere in the inputs' area.
            let pieces: Vec<Vec<(u64, u32)>> = (0..vec_count)
                .map(|_| {
                    let cut = rng.below(vec_size);
                    let mut p = Vec::new();
                    for n in [cut, vec_size - cut] {
                        if n > 0 {
                            p.push((INPUTS + rng.below(0x3f_0000) as u64, n as u32));
                        }
                    }
                    p
                })
                .collect();
            let job = || CalcJob::new(c.clone(), matrix.clone(), pieces.clone());
            assert!(job().readable(&mem));
            let stream = job().compute(&mem).unwrap();
            let total = c.stream_len();
            let at = rng.below(total);
            let len = 1 + rng.below(total - at);
            let (copies, dest) = random_copies(&mut rng, &c, at, len);
            strided += copies
                .iter()
                .filter(|c| matches!(c.1, Copy::Strided { .. }))
                .count();
            repeated += copies
                .iter()
                .filter(|c| matches!(c.1, Copy::Repeated { count, .. } if count > 1))
                .count();
            // What each written byte holds at the end: the stream's bytes in order, a later
            // one over an earlier one.
            let mut want = std::collections::BTreeMap::new();
            for (b, &pa) in dest.iter().enumerate() {
                want.insert(pa, stream[at + b]);
            }
            let dumped = dest.iter().filter(|&&pa| (DUMP..OUT).contains(&pa)).count();
            dumps += usize::from(dumped > c.chunk);
            let check = |what: &str| {
                for (&pa, &v) in &want {
                    let mut got = [0u8];
                    mem.read(pa, &mut got).unwrap();
                    assert_eq!(
                        got[0], v,
                        "round {round} {what}: {c:?} at {pa:#x}, stream {at}+{len}"
                    );
                }
            };
            mem.write(DUMP, &vec![0u8; (MEM - DUMP) as usize]).unwrap();
            assert!(job().place(&mem, at, len, &copies));
            check("computed in place");
            mem.write(DUMP, &vec![0u8; (MEM - DUMP) as usize]).unwrap();
            let j = job();
            assert_eq!(j.stream(&mem), &stream[..]);
            assert!(j.place(&mem, at, len, &copies));
            check("from the stream");
            // Copies that do not add up to the range are refused.
            assert!(!job().place(&mem, at, len + 1, &copies));
        }
        assert!(
            strided > 20,
            "{strided} strided copies: the outputs' runs not covered"
        );
        assert!(dumps > 4, "{dumps} rounds overwrote the dump");
        assert!(repeated > 3, "{repeated} stride-0 copies of several chunks");
    }

    #[test]
    fn an_input_piece_over_two_mappings_is_not_deferred() {
        let mut mem = GuestMem::default();
        mem.map(0, 0x1000, 0, Some(test_backing(0x1000))).unwrap();
        mem.map(0x1000, 0x1000, 0, Some(test_backing(0x1000)))
            .unwrap();
        let c = Calc {
            field: Field::Gf256,
            vec_count: 1,
            vec_size: 0x100,
            outputs: 1,
            active: [true, false, false, false],
            chunk: 64,
        };
        let piece = |pa: u64| vec![vec![(pa, 0x100)]];
        assert!(CalcJob::new(c.clone(), vec![1], piece(0xe00)).readable(&mem));
        let over = CalcJob::new(c.clone(), vec![1], piece(0xf80));
        assert!(!over.readable(&mem));
        // Computed at once, it reads across the two.
        mem.write(0xf80, &[7u8; 0x100]).unwrap();
        assert_eq!(over.compute(&mem).unwrap(), vec![7u8; 0x100]);
    }
}
