//! One vector calculation: `vec_count` input vectors times the coefficient matrix, and the
//! chunk-interleaved stream the card sends as the SEND's payload.
//!
//! The matrix is laid out as libmlx5 registers it (`reg_encode_matrix`,
//! `mlx5_get_ec_decode_mat`): `vec_count` rows × N columns, row-major, one byte per entry;
//! entry [i][j] is the coefficient of input i in output j. (That is Jerasure's
//! `coding_matrix[j·k + i]` and ISA-L's `a[(k + j)·k + i]`: libmlx5 transposes.)
//!
//! The stream interleaves the N outputs per chunk: bytes `[c·chunk·N + j·chunk, +chunk)` are
//! output j's bytes `[c·chunk, +chunk)` — what libmlx5's "repeat block" UMR mkey spreads back
//! over the code blocks. A last, shorter chunk (vector size not a multiple of the chunk)
//! contributes its remaining bytes of output 0, then of output 1, …: the model's reading,
//! consistent with libmlx5's pattern for blocks smaller than a chunk (its chunk is then the
//! block size); libmlx5 itself only documents 64-byte multiples.

use super::{
    dot::{DotProd, Input, Kernel},
    gf::Field, //
};

/// Bytes of each input vector read and computed at a time (k stripes and the N outputs'
/// stay in L2).
const STRIPE: usize = 32 << 10;
/// The shortest stripe cut at the end of an input's contiguous run; a shorter run is
/// copied instead.
const MIN_RUN: usize = 4 << 10;

/// The parameters of one calculation (already checked against the capabilities).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Calc {
    /// The field of the coefficients.
    pub field: Field,
    /// Number of input vectors (k).
    pub vec_count: usize,
    /// Bytes per vector.
    pub vec_size: usize,
    /// Outputs N (1, 2 or 4); also the matrix's column count.
    pub outputs: usize,
    /// Which of the N outputs are computed; an unused slot (calc_op 0 — the fourth of
    /// libmlx5's m = 3) sends zeros.
    pub active: [bool; 4],
    /// Interleaving chunk in bytes.
    pub chunk: usize,
}

impl Calc {
    /// Bytes of the coefficient matrix.
    pub fn matrix_len(&self) -> usize {
        self.vec_count * self.outputs
    }

    /// Bytes of the result stream (the SEND's payload).
    pub fn stream_len(&self) -> usize {
        self.vec_size * self.outputs
    }

    /// A fresh accumulator for the outputs (all zero).
    pub fn outputs_zero(&self) -> Vec<Vec<u8>> {
        vec![vec![0u8; self.vec_size]; self.outputs]
    }

    /// Adds input vector `i` (`vec_size` bytes) into the outputs: output j ^= entry[i][j] ⊗
    /// input, one pass per output — the scalar reference ([`Calc::compute_scalar`]).
    pub fn accumulate(&self, matrix: &[u8], i: usize, input: &[u8], outputs: &mut [Vec<u8>]) {
        for (j, out) in outputs.iter_mut().enumerate() {
            if !self.active.get(j).copied().unwrap_or(false) {
                continue;
            }
            let entry = matrix.get(i * self.outputs + j).copied().unwrap_or(0);
            self.field.mul_acc_region(entry, input, out);
        }
    }

    /// The coefficients of the N slots prepared for `kernel` ([`DotProd`]): entry [i][j] of
    /// `matrix` (zero past its end), zero for an unused slot.
    pub fn dot_prod(&self, kernel: Kernel, matrix: &[u8]) -> DotProd {
        let n = self.outputs;
        let entries: Vec<u8> = (0..self.vec_count)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| match self.active.get(j) {
                Some(true) => matrix.get(i * n + j).copied().unwrap_or(0),
                _ => 0,
            })
            .collect();
        DotProd::new(kernel, self.field, &entries, self.vec_count, n)
    }

    /// The stream, the inputs read from `src` a stripe at a time: each stripe of every input
    /// straight from where it is when it is contiguous there (guest memory included), else
    /// copied ([`Source`]); the outputs' stripe is computed in one pass ([`DotProd`]) and
    /// placed at its positions in the chunk-interleaved stream. A stripe ends where an input's
    /// contiguous run does when that run is long enough (KLM entries, pages), so that the
    /// kernels read in place. The first error of `src` ends the calculation.
    pub fn compute_from<S: Source>(
        &self,
        kernel: Kernel,
        matrix: &[u8],
        src: &S,
    ) -> Result<Vec<u8>, S::Error> {
        let mut stream = vec![0u8; self.stream_len()];
        let dot = self.dot_prod(kernel, matrix);
        let mut scratch = Scratch::default();
        self.compute_rows(&dot, src, 0..self.vec_size, &mut scratch, |off, outs| {
            self.place(&mut stream, outs, off)
        })?;
        Ok(stream)
    }

    /// Bytes `rows` (offsets in the vectors) of every output, the inputs read from `src` a
    /// stripe at a time as [`Calc::compute_from`] reads them, multiplied by `dot` (this
    /// calculation's [`Calc::dot_prod`]); `sink(off, outs)` takes each stripe, `outs[j]`
    /// holding output j's bytes `off..off + len` (an unused slot's zeros). `scratch` holds
    /// the stripes between calls. The first error of `src` ends the calculation.
    pub fn compute_rows<S: Source>(
        &self,
        dot: &DotProd,
        src: &S,
        rows: std::ops::Range<usize>,
        scratch: &mut Scratch,
        mut sink: impl FnMut(usize, &[&mut [u8]]),
    ) -> Result<(), S::Error> {
        let k = self.vec_count;
        let size = rows.end.min(self.vec_size);
        // No longer than the rows (a burst's few packets).
        let stripe = STRIPE.min(size.saturating_sub(rows.start)).max(1);
        let Scratch {
            inputs: ins,
            outputs: outs,
        } = scratch;
        // Zero pages until an input must be copied (calloc); kept for the next call.
        for (buf, n) in [(&mut *ins, stripe * k), (&mut *outs, stripe * self.outputs)] {
            if buf.len() < n {
                buf.resize(n, 0);
            }
        }
        let mut direct = Vec::with_capacity(k);
        let mut off = rows.start;
        while off < size {
            let n = stripe.min(size - off);
            let run = (0..k).map(|i| src.run(i, off)).min().unwrap_or(n);
            let n = if run >= MIN_RUN { run.min(n) } else { n };
            direct.clear();
            for (i, buf) in ins.chunks_mut(stripe).take(k).enumerate() {
                direct.push(src.stripe(i, off, &mut buf[..n])?);
            }
            let inputs: Vec<Input> = direct
                .iter()
                .zip(ins.chunks(stripe))
                .map(|(d, buf)| d.unwrap_or_else(|| Input::from(&buf[..n])))
                .collect();
            let mut slots: Vec<&mut [u8]> = outs
                .chunks_mut(stripe)
                .take(self.outputs)
                .map(|o| &mut o[..n])
                .collect();
            dot.apply(&inputs, &mut slots);
            sink(off, &slots);
            off += n;
        }
        Ok(())
    }

    /// Where byte `p` of the stream comes from: output j, byte `off` of it, and how many
    /// bytes from there on follow each other in both (to the end of the chunk); `None` past
    /// the stream.
    pub fn stream_source(&self, p: usize) -> Option<(usize, usize, usize)> {
        let (n, chunk) = (self.outputs.max(1), self.chunk.max(1));
        let whole = self.vec_size / chunk * chunk;
        if p < whole * n {
            let (row, within) = (p / (chunk * n), p % (chunk * n));
            return Some((
                within / chunk,
                row * chunk + within % chunk,
                chunk - within % chunk,
            ));
        }
        let (tail, q) = (self.vec_size - whole, p - whole * n);
        (q < tail * n).then(|| (q / tail, whole + q % tail, tail - q % tail))
    }

    /// The rows (offsets in the vectors) whose output bytes make up stream bytes `range`:
    /// whole chunks' rows, from the first byte's chunk to the last byte's.
    pub fn rows_of(&self, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let chunk = self.chunk.max(1);
        let whole = self.vec_size / chunk * chunk;
        let row = |p: usize| -> Option<(usize, usize)> {
            let (_, off, _) = self.stream_source(p)?;
            Some(if off < whole {
                (off / chunk * chunk, (off / chunk + 1) * chunk)
            } else {
                (whole, self.vec_size)
            })
        };
        match (range.is_empty(), row(range.start), row(range.end - 1)) {
            (false, Some((start, _)), Some((_, end))) => start..end,
            _ => 0..0,
        }
    }

    /// Puts bytes `off..off + len` of each output (`outs[j]`) at their places in the stream.
    fn place(&self, stream: &mut [u8], outs: &[&mut [u8]], off: usize) {
        let n = outs.len();
        let chunk = self.chunk.max(1);
        let len = outs.first().map_or(0, |o| o.len());
        // Whole chunks interleave chunk by chunk; the short last one, `tail` bytes of output
        // 0, then of output 1, ...
        let whole = self.vec_size / chunk * chunk;
        let tail = self.vec_size - whole;
        let mut b = off;
        while b < off + len {
            let (at, step, end) = if b < whole {
                let c = b / chunk;
                (
                    c * chunk * n + (b - c * chunk),
                    chunk,
                    ((c + 1) * chunk).min(off + len),
                )
            } else {
                (whole * n + (b - whole), tail, off + len)
            };
            for (j, o) in outs.iter().enumerate() {
                let p = at + j * step;
                stream[p..p + end - b].copy_from_slice(&o[b - off..end - off]);
            }
            b = end;
        }
    }

    /// The whole calculation on inputs given contiguously (`vec_count × vec_size` bytes,
    /// vector i at `i·vec_size`, as the card reads them from `vec_addr`): the stream, with the
    /// fastest kernel of the CPU ([`Kernel::best`]).
    pub fn compute(&self, matrix: &[u8], inputs: &[u8]) -> Vec<u8> {
        self.compute_with(Kernel::best(), matrix, inputs)
    }

    /// [`Calc::compute`] with a given kernel. Input bytes missing at the end count as zeros.
    pub fn compute_with(&self, kernel: Kernel, matrix: &[u8], inputs: &[u8]) -> Vec<u8> {
        let src = HostInputs {
            data: inputs,
            vec_size: self.vec_size,
        };
        match self.compute_from(kernel, matrix, &src) {
            Ok(s) => s,
            Err(never) => match never {},
        }
    }

    /// [`Calc::compute`] the way the engine computed before [`dot_prod`]: one
    /// [`Field::mul_acc_region`] pass per (input, output) pair — the reference of the tests and
    /// the benchmark.
    pub fn compute_scalar(&self, matrix: &[u8], inputs: &[u8]) -> Vec<u8> {
        let mut outs = self.outputs_zero();
        for (i, v) in inputs
            .chunks(self.vec_size.max(1))
            .take(self.vec_count)
            .enumerate()
        {
            self.accumulate(matrix, i, v, &mut outs);
        }
        interleave(&outs, self.chunk)
    }
}

/// The stripe buffers of [`Calc::compute_rows`], kept between calls.
#[derive(Debug, Default)]
pub struct Scratch {
    /// Inputs' stripes that had to be copied.
    inputs: Vec<u8>,
    /// The outputs' stripes.
    outputs: Vec<u8>,
}

/// Where a calculation reads its input vectors ([`Calc::compute_from`]).
pub trait Source {
    /// What ends the calculation.
    type Error;

    /// How many bytes of input `i` from byte `off` on are contiguous where they are (one
    /// piece of one mapping): how far a stripe can be read in place.
    fn run(&self, i: usize, off: usize) -> usize;

    /// Bytes `off..off + buf.len()` of input `i`: in place where they are contiguous
    /// (`Some`), else copied into `buf` (`None`).
    fn stripe(
        &self,
        i: usize,
        off: usize,
        buf: &mut [u8],
    ) -> Result<Option<Input<'_>>, Self::Error>;
}

/// Inputs given contiguously in host memory, vector i at `i·vec_size`; bytes missing at the
/// end count as zeros.
struct HostInputs<'a> {
    data: &'a [u8],
    vec_size: usize,
}

impl Source for HostInputs<'_> {
    type Error = std::convert::Infallible;

    fn run(&self, i: usize, off: usize) -> usize {
        let at = i * self.vec_size + off;
        self.data.len().saturating_sub(at)
    }

    fn stripe(
        &self,
        i: usize,
        off: usize,
        buf: &mut [u8],
    ) -> Result<Option<Input<'_>>, Self::Error> {
        let at = (i * self.vec_size + off).min(self.data.len());
        let have = buf.len().min(self.data.len() - at);
        if have == buf.len() {
            return Ok(Some(Input::from(&self.data[at..at + have])));
        }
        buf[..have].copy_from_slice(&self.data[at..at + have]);
        buf[have..].fill(0);
        Ok(None)
    }
}

/// The outputs (equal lengths) interleaved per `chunk` bytes, as the card sends them.
pub fn interleave(outputs: &[Vec<u8>], chunk: usize) -> Vec<u8> {
    let len = outputs.first().map_or(0, Vec::len);
    let mut s = Vec::with_capacity(len * outputs.len());
    let chunk = chunk.max(1);
    let mut at = 0;
    while at < len {
        let n = chunk.min(len - at);
        for o in outputs {
            s.extend_from_slice(&o[at..at + n]);
        }
        at += n;
    }
    s
}

/// The inverse of [`interleave`]: `n` outputs of `len` bytes out of a stream (what the
/// repeat-block mkey does on the receive side).
pub fn deinterleave(stream: &[u8], n: usize, len: usize, chunk: usize) -> Vec<Vec<u8>> {
    let mut outs = vec![Vec::with_capacity(len); n];
    let chunk = chunk.max(1);
    let mut at = 0;
    let mut pos = 0;
    while at < len {
        let c = chunk.min(len - at);
        for o in outs.iter_mut() {
            let end = (pos + c).min(stream.len());
            o.extend_from_slice(&stream[pos.min(end)..end]);
            pos += c;
        }
        at += c;
    }
    outs
}

#[cfg(test)]
mod tests {
    use super::super::testing::Rng;
    use super::*;

    fn calc(field: Field, k: usize, size: usize, n: usize, chunk: usize) -> Calc {
        Calc {
            field,
            vec_count: k,
            vec_size: size,
            outputs: n,
            active: [true, n > 1, n > 2, n > 3],
            chunk,
        }
    }

    #[test]
    fn interleave_puts_each_outputs_chunk_in_turn() {
        let a = vec![1u8; 130];
        let b = vec![2u8; 130];
        let s = interleave(&[a.clone(), b.clone()], 64);
        assert_eq!(s.len(), 260);
        assert!(s[..64].iter().all(|&x| x == 1));
        assert!(s[64..128].iter().all(|&x| x == 2));
        assert!(s[128..192].iter().all(|&x| x == 1));
        // The short last chunk: 2 bytes of a, then 2 of b.
        assert_eq!(&s[256..], &[1, 1, 2, 2]);
        assert_eq!(deinterleave(&s, 2, 130, 64), vec![a, b]);
    }

    #[test]
    fn xor_parity_of_gf16_ones_and_the_dump_slot() {
        // w = 1: every coefficient 0x11 (1 with libmlx5's bit 4) is plain XOR.
        let c = calc(Field::Gf16, 3, 64, 1, 64);
        let inputs: Vec<u8> = (0..192u32).map(|i| (i * 37 + 5) as u8).collect();
        let s = c.compute(&[0x11, 0x11, 0x11], &inputs);
        for b in 0..64 {
            assert_eq!(s[b], inputs[b] ^ inputs[64 + b] ^ inputs[128 + b]);
        }
        // m = 3: four columns, the fourth slot unused sends zeros (the dump).
        let mut c = calc(Field::Gf16, 2, 128, 4, 64);
        c.active = [true, true, true, false];
        let m = [0x11, 0x12, 0x13, 0x00, 0x11, 0x11, 0x11, 0x00];
        let inputs = vec![0x35u8; 256];
        let outs = deinterleave(&c.compute(&m, &inputs), 4, 128, 64);
        assert!(outs[0].iter().all(|&x| x == 0), "1·x + 1·x = 0");
        // 2·0x35 ^ 1·0x35 = 3·0x35, nibble-wise: 3·5 = 0xf, 3·3 = 5.
        assert!(outs[1].iter().all(|&x| x == 0x5f));
        assert!(outs[3].iter().all(|&x| x == 0));
    }

    #[test]
    fn gf256_matrix_times_inputs_by_hand() {
        let c = calc(Field::Gf256, 2, 4, 2, 64);
        let m = [0x02, 0x01, 0x03, 0x01];
        let inputs = [0x80, 0x01, 0x00, 0xff, 0x01, 0x02, 0x03, 0x04];
        let outs = deinterleave(&c.compute(&m, &inputs), 2, 4, 64);
        let f = Field::Gf256;
        for b in 0..4 {
            assert_eq!(outs[0][b], f.mul(2, inputs[b]) ^ f.mul(3, inputs[4 + b]));
            assert_eq!(outs[1][b], inputs[b] ^ inputs[4 + b]);
        }
        assert_eq!(outs[0][0], 0x1d ^ 0x03);
    }

    #[test]
    fn every_kernel_computes_what_the_scalar_passes_did() {
        // Dump slots, matrices shorter than k × N, inputs shorter than k × vec_size (the
        // missing bytes count as zeros), vectors over several stripes, in both fields.
        let mut rng = Rng(0x2545_f491);
        for kernel in Kernel::ALL.into_iter().filter(|k| k.available()) {
            for field in [Field::Gf16, Field::Gf256] {
                for (k, size, n, chunk, mat_len, in_len) in [
                    (10, 4100, 4, 64, 40, 41000),
                    (3, 68, 4, 64, 12, 204),
                    (6, 1028, 2, 128, 12, 6000),
                    (5, 132, 1, 64, 3, 5 * 132),
                    (16, 260, 4, 64, 64, 16 * 260 - 77),
                    // Several stripes, the last one short; chunks longer than a stripe.
                    (3, 70_004, 4, 64, 12, 3 * 70_004),
                    (2, 100_000, 2, 65_536, 4, 200_000 - 5),
                ] {
                    let mut c = calc(field, k, size, n, chunk);
                    if n == 4 {
                        c.active = [true, true, true, size % 3 != 0];
                    }
                    let m = rng.bytes(mat_len);
                    let inputs = rng.bytes(in_len);
                    assert_eq!(
                        c.compute_with(kernel, &m, &inputs),
                        c.compute_scalar(&m, &inputs),
                        "{kernel:?} {field:?} k {k} size {size} n {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_mebibyte_is_quick() {
        let c = calc(Field::Gf256, 4, 1 << 20, 4, 64);
        let inputs: Vec<u8> = (0..4usize << 20).map(|i| ((i * 131) >> 3) as u8).collect();
        let m: Vec<u8> = (0..16).map(|i| (i * 29 + 3) as u8).collect();
        let t = std::time::Instant::now();
        let s = c.compute(&m, &inputs);
        assert_eq!(s.len(), 4 << 20);
        // Debug builds included: 16 region passes over 1 MiB.
        assert!(t.elapsed().as_secs() < 20, "took {:?}", t.elapsed());
    }
}
