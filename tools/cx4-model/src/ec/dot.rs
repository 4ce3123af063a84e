//! The engine's arithmetic at SIMD speed: the dot product of k input vectors with an m × k
//! coefficient matrix, in one pass over the inputs per stripe with the m outputs accumulated
//! together, as ISA-L's `gf_Nvect_dot_prod` kernels (erasure_code/ec_highlevel_func.c,
//! gf_*vect_dot_prod_avx2.asm) do — not one pass per (input, output) pair.
//!
//! Both fields share the kernels, because multiplying by a constant is linear over GF(2) in
//! either of them (the GF(2^4) product acts on each nibble of a byte separately):
//!
//! - split tables ([`Kernel::Ssse3`], [`Kernel::Avx2`]): per coefficient c two 16-byte tables,
//!   c ⊗ n and c ⊗ (n << 4) for each nibble n, looked up with `pshufb` and XORed — ISA-L's
//!   `gf_vect_mul_init` layout; in GF(2^4) the second table is (c ⊗ n) << 4;
//! - affine ([`Kernel::GfniAvx2`], [`Kernel::GfniAvx512`]): per coefficient the 8 × 8 bit
//!   matrix of "multiply by c", applied with `gf2p8affineqb` (block diagonal in GF(2^4));
//! - [`Kernel::Portable`]: the byte tables of [`Field`], stripe by stripe, on any CPU; it also
//!   finishes the tail a vector kernel leaves (lengths not a multiple of its width).
//!
//! Every kernel is bit-exact with [`Field::mul_acc_region`] (the tests force each kernel the
//! CPU has against it). The fastest one the CPU has is chosen once with
//! `is_x86_feature_detected!` ([`Kernel::best`]); a vector kernel is only entered after that
//! check.

use std::{marker::PhantomData, sync::OnceLock};

use vm_memory::{bitmap::BitmapSlice, VolatileSlice};

use super::gf::Field;

/// A code path of [`dot_prod`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Byte tables, any CPU.
    Portable,
    /// Split nibble tables, 16-byte `pshufb` (SSSE3).
    Ssse3,
    /// Split nibble tables, 32-byte `vpshufb` (AVX2).
    Avx2,
    /// Bit matrices, 32-byte `vgf2p8affineqb` (GFNI with AVX2).
    GfniAvx2,
    /// Bit matrices, 64-byte `vgf2p8affineqb` (GFNI with AVX-512F/BW).
    GfniAvx512,
}

impl Kernel {
    /// Every kernel, slowest first.
    pub const ALL: [Kernel; 5] = [
        Kernel::Portable,
        Kernel::Ssse3,
        Kernel::Avx2,
        Kernel::GfniAvx2,
        Kernel::GfniAvx512,
    ];

    /// A short name (for benchmarks and logs).
    pub const fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Ssse3 => "ssse3",
            Kernel::Avx2 => "avx2",
            Kernel::GfniAvx2 => "gfni-avx2",
            Kernel::GfniAvx512 => "gfni-avx512",
        }
    }

    /// Whether this CPU can run the kernel (detected at run time).
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Kernel::Portable => true,
                Kernel::Ssse3 => is_x86_feature_detected!("ssse3"),
                Kernel::Avx2 => is_x86_feature_detected!("avx2"),
                Kernel::GfniAvx2 => {
                    is_x86_feature_detected!("gfni") && is_x86_feature_detected!("avx2")
                }
                Kernel::GfniAvx512 => {
                    is_x86_feature_detected!("gfni")
                        && is_x86_feature_detected!("avx512f")
                        && is_x86_feature_detected!("avx512bw")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Kernel::Portable
        }
    }

    /// The fastest kernel this CPU runs, detected once.
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            Kernel::ALL
                .into_iter()
                .rev()
                .find(|k| k.available())
                .unwrap_or(Kernel::Portable)
        })
    }
}

/// Bytes of a stripe in the portable kernel (inputs and outputs stay in L1 across it).
const STRIPE: usize = 2048;

/// One input vector of a dot product: `len` bytes at `ptr`, readable for `'a` — a host slice,
/// or guest memory straight from its mapping (a vm-memory [`VolatileSlice`]), which the guest
/// may write meanwhile. The kernels read it only through raw-pointer loads inside `0..len`,
/// never through a reference, as vm-memory's own copies read guest memory
/// (`copy_nonoverlapping`); a byte the guest changes during the calculation reads as either
/// value, as it would for the card's DMA.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    ptr: *const u8,
    len: usize,
    _borrow: PhantomData<&'a [u8]>,
}

impl<'a> From<&'a [u8]> for Input<'a> {
    fn from(s: &'a [u8]) -> Input<'a> {
        Input {
            ptr: s.as_ptr(),
            len: s.len(),
            _borrow: PhantomData,
        }
    }
}

impl<'a, B: BitmapSlice> From<VolatileSlice<'a, B>> for Input<'a> {
    /// Guest memory: a `VolatileSlice` is `len` bytes of a mapping that lives for `'a` (its
    /// `PtrGuard` only unmaps on drop with vm-memory's `xen` feature, which the model does
    /// not enable).
    fn from(s: VolatileSlice<'a, B>) -> Input<'a> {
        Input {
            ptr: s.ptr_guard().as_ptr(),
            len: s.len(),
            _borrow: PhantomData,
        }
    }
}

impl Input<'_> {
    /// Bytes readable.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of bytes `off..off + n`.
    ///
    /// # Panics
    /// If they are not inside the input.
    fn at(&self, off: usize, n: usize) -> *const u8 {
        assert!(
            off.checked_add(n).is_some_and(|end| end <= self.len),
            "{n} bytes at {off} of an input of {}",
            self.len
        );
        self.ptr.wrapping_add(off)
    }

    /// Copies bytes `off..off + out.len()` into `out`.
    ///
    /// # Panics
    /// If they are not inside the input.
    fn copy_to(&self, off: usize, out: &mut [u8]) {
        let src = self.at(off, out.len());
        // SAFETY: `at` checked that the bytes are inside the input, which is readable for its
        // lifetime (`Input`'s constructors); `out` is a distinct, writable host buffer.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) };
    }
}

/// The coefficients of one dot product, in the forms the kernels use; entry `i·m + j` is the
/// coefficient of input i in output j.
struct Coefs {
    /// The symbols ([`Field::coefficient`] applied).
    sym: Vec<u8>,
    /// Split tables: bytes 0..16 c ⊗ n, bytes 16..32 c ⊗ (n << 4), n = 0..15.
    split: Vec<[u8; 32]>,
    /// `gf2p8affineqb` matrices of "multiply by c": byte 7 − r holds the input bits that
    /// feed output bit r.
    affine: Vec<u64>,
}

impl Coefs {
    fn new(field: Field, entries: &[u8]) -> Coefs {
        let sym: Vec<u8> = entries.iter().map(|&e| field.coefficient(e)).collect();
        let split = sym
            .iter()
            .map(|&c| {
                let t = field.table(c);
                let mut s = [0u8; 32];
                for n in 0..16 {
                    s[n] = t[n];
                    s[16 + n] = t[n << 4];
                }
                s
            })
            .collect();
        let affine = sym
            .iter()
            .map(|&c| {
                let t = field.table(c);
                let mut a = 0u64;
                for r in 0..8 {
                    let row = (0..8).fold(0u8, |row, b| row | ((t[1 << b] >> r) & 1) << b);
                    a |= u64::from(row) << (8 * (7 - r));
                }
                a
            })
            .collect();
        Coefs { sym, split, affine }
    }
}

/// `outputs[j] = Σ_i coef[i][j] ⊗ inputs[i]` over `field`, with `kernel`: `entries` holds
/// `inputs.len() × outputs.len()` matrix entries, row i the coefficients of input i (libmlx5's
/// layout, [`Field::coefficient`] applies); every output has the same length and every input
/// at least that many bytes. The outputs are overwritten. ([`DotProd`] keeps the prepared
/// coefficients for many calls.)
///
/// # Panics
/// If the CPU lacks `kernel` ([`Kernel::available`]), or the lengths do not fit.
pub fn dot_prod(
    kernel: Kernel,
    field: Field,
    entries: &[u8],
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
) {
    let inputs: Vec<Input> = inputs.iter().map(|&i| Input::from(i)).collect();
    DotProd::new(kernel, field, entries, inputs.len(), outputs.len()).apply(&inputs, outputs);
}

/// A k × m dot product ready to run: the coefficients in the kernel's form, the outputs in
/// groups of up to 4 (each group one pass over the inputs).
pub struct DotProd {
    /// Checked available in [`DotProd::new`].
    kernel: Kernel,
    field: Field,
    k: usize,
    m: usize,
    /// The coefficients of outputs 4g..4g + 4, entry `i·group + j`.
    groups: Vec<Coefs>,
}

impl DotProd {
    /// Prepares `entries` (`k × m`, row i the coefficients of input i) for `kernel`.
    ///
    /// # Panics
    /// If the CPU lacks `kernel`, or `entries` is not `k × m` bytes.
    pub fn new(kernel: Kernel, field: Field, entries: &[u8], k: usize, m: usize) -> DotProd {
        assert_eq!(entries.len(), k * m, "a {k} × {m} matrix");
        assert!(kernel.available(), "{kernel:?} on a CPU without it");
        let groups = (0..m)
            .step_by(4)
            .map(|j0| {
                let g = (m - j0).min(4);
                let sub: Vec<u8> = (0..k)
                    .flat_map(|i| (0..g).map(move |j| entries[i * m + j0 + j]))
                    .collect();
                Coefs::new(field, &sub)
            })
            .collect();
        DotProd {
            kernel,
            field,
            k,
            m,
            groups,
        }
    }

    /// The kernel it runs.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// `outputs[j] = Σ_i coef[i][j] ⊗ inputs[i]` ([`dot_prod`]).
    ///
    /// # Panics
    /// If there are not k inputs and m outputs, or the lengths do not fit.
    pub fn apply(&self, inputs: &[Input], outputs: &mut [&mut [u8]]) {
        assert_eq!((inputs.len(), outputs.len()), (self.k, self.m), "k and m");
        let len = outputs.first().map_or(0, |o| o.len());
        assert!(
            outputs.iter().all(|o| o.len() == len),
            "outputs of one length"
        );
        assert!(
            inputs.iter().all(|i| i.len() >= len),
            "inputs of {len} bytes"
        );
        for (group, c) in outputs.chunks_mut(4).zip(&self.groups) {
            let kernel = self.kernel;
            // SAFETY: `DotProd::new` checked that the CPU has `kernel`.
            let done = unsafe {
                match group.len() {
                    1 => vector::<1>(kernel, c, inputs, group, len),
                    2 => vector::<2>(kernel, c, inputs, group, len),
                    3 => vector::<3>(kernel, c, inputs, group, len),
                    _ => vector::<4>(kernel, c, inputs, group, len),
                }
            };
            portable(self.field, &c.sym, inputs, group, done, len);
        }
    }
}

/// Runs the vector kernel over the whole vectors it covers; returns the bytes done.
///
/// # Safety
/// The CPU has `kernel` ([`Kernel::available`]).
unsafe fn vector<const M: usize>(
    kernel: Kernel,
    c: &Coefs,
    inputs: &[Input],
    outputs: &mut [&mut [u8]],
    len: usize,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the caller guarantees the CPU has the features each function below is
        // compiled for.
        unsafe {
            match kernel {
                Kernel::Portable => 0,
                Kernel::Ssse3 => x86::ssse3::<M>(&c.split, inputs, outputs, len),
                Kernel::Avx2 => x86::avx2::<M>(&c.split, inputs, outputs, len),
                Kernel::GfniAvx2 => x86::gfni_avx2::<M>(&c.affine, inputs, outputs, len),
                Kernel::GfniAvx512 => x86::gfni_avx512::<M>(&c.affine, inputs, outputs, len),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kernel, c, inputs, outputs, len);
        0
    }
}

/// Bytes `from..len` of the outputs with the byte tables, stripe by stripe: each stripe of
/// every output is cleared, then each input's stripe is accumulated into it.
fn portable(
    field: Field,
    sym: &[u8],
    inputs: &[Input],
    outputs: &mut [&mut [u8]],
    from: usize,
    len: usize,
) {
    let m = outputs.len();
    let mut at = from;
    let mut buf = [0u8; STRIPE];
    for out in outputs.iter_mut() {
        out[from..len].fill(0);
    }
    while at < len {
        let end = (at + STRIPE).min(len);
        for (i, inp) in inputs.iter().enumerate() {
            let b = &mut buf[..end - at];
            inp.copy_to(at, b);
            for (j, out) in outputs.iter_mut().enumerate() {
                field.mul_acc_region(sym[i * m + j], b, &mut out[at..end]);
            }
        }
        at = end;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The vector kernels. Each is a safe function compiled for its features; calling one is
    //! `unsafe` only because the CPU must have them, which the caller checks. Loads and stores
    //! are unaligned: loads from inputs bounds-checked to the vector's width ([`Input`]),
    //! stores to slices likewise.

    use core::arch::x86_64::*;

    use super::Input;

    /// Split tables, 16 bytes at a time.
    #[target_feature(enable = "ssse3")]
    pub(super) fn ssse3<const M: usize>(
        split: &[[u8; 32]],
        inputs: &[Input],
        outputs: &mut [&mut [u8]],
        len: usize,
    ) -> usize {
        const W: usize = 16;
        let mask = _mm_set1_epi8(0x0f);
        let tabs: Vec<[__m128i; 2]> = split
            .iter()
            .map(|t| {
                // SAFETY: `t` is 32 bytes: two 16-byte loads inside it.
                unsafe {
                    [
                        _mm_loadu_si128(t.as_ptr().cast()),
                        _mm_loadu_si128(t[16..].as_ptr().cast()),
                    ]
                }
            })
            .collect();
        let mut off = 0;
        while off + W <= len {
            let mut acc = [_mm_setzero_si128(); M];
            for (inp, t) in inputs.iter().zip(tabs.chunks_exact(M)) {
                let s = inp.at(off, W);
                // SAFETY: `at` checked that the W bytes are inside the input (readable).
                let x = unsafe { _mm_loadu_si128(s.cast()) };
                let lo = _mm_and_si128(x, mask);
                let hi = _mm_and_si128(_mm_srli_epi64::<4>(x), mask);
                for (a, t) in acc.iter_mut().zip(t) {
                    let p = _mm_xor_si128(_mm_shuffle_epi8(t[0], lo), _mm_shuffle_epi8(t[1], hi));
                    *a = _mm_xor_si128(*a, p);
                }
            }
            for (out, a) in outputs.iter_mut().zip(acc) {
                let d = &mut out[off..off + W];
                // SAFETY: `d` is W writable bytes.
                unsafe { _mm_storeu_si128(d.as_mut_ptr().cast(), a) };
            }
            off += W;
        }
        off
    }

    /// Split tables, 32 bytes at a time.
    #[target_feature(enable = "avx2")]
    pub(super) fn avx2<const M: usize>(
        split: &[[u8; 32]],
        inputs: &[Input],
        outputs: &mut [&mut [u8]],
        len: usize,
    ) -> usize {
        const W: usize = 32;
        let mask = _mm256_set1_epi8(0x0f);
        let tabs: Vec<[__m256i; 2]> = split
            .iter()
            .map(|t| {
                // SAFETY: `t` is 32 bytes: two 16-byte loads inside it.
                let (lo, hi) = unsafe {
                    (
                        _mm_loadu_si128(t.as_ptr().cast()),
                        _mm_loadu_si128(t[16..].as_ptr().cast()),
                    )
                };
                [
                    _mm256_broadcastsi128_si256(lo),
                    _mm256_broadcastsi128_si256(hi),
                ]
            })
            .collect();
        let mut off = 0;
        while off + W <= len {
            let mut acc = [_mm256_setzero_si256(); M];
            for (inp, t) in inputs.iter().zip(tabs.chunks_exact(M)) {
                let s = inp.at(off, W);
                // SAFETY: `at` checked that the W bytes are inside the input (readable).
                let x = unsafe { _mm256_loadu_si256(s.cast()) };
                let lo = _mm256_and_si256(x, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi64::<4>(x), mask);
                for (a, t) in acc.iter_mut().zip(t) {
                    let p = _mm256_xor_si256(
                        _mm256_shuffle_epi8(t[0], lo),
                        _mm256_shuffle_epi8(t[1], hi),
                    );
                    *a = _mm256_xor_si256(*a, p);
                }
            }
            for (out, a) in outputs.iter_mut().zip(acc) {
                let d = &mut out[off..off + W];
                // SAFETY: `d` is W writable bytes.
                unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), a) };
            }
            off += W;
        }
        off
    }

    /// Affine bit matrices, 32 bytes at a time.
    #[target_feature(enable = "gfni,avx2")]
    pub(super) fn gfni_avx2<const M: usize>(
        affine: &[u64],
        inputs: &[Input],
        outputs: &mut [&mut [u8]],
        len: usize,
    ) -> usize {
        const W: usize = 32;
        let mats: Vec<__m256i> = affine
            .iter()
            .map(|&a| _mm256_set1_epi64x(a as i64))
            .collect();
        let mut off = 0;
        while off + W <= len {
            let mut acc = [_mm256_setzero_si256(); M];
            for (inp, t) in inputs.iter().zip(mats.chunks_exact(M)) {
                let s = inp.at(off, W);
                // SAFETY: `at` checked that the W bytes are inside the input (readable).
                let x = unsafe { _mm256_loadu_si256(s.cast()) };
                for (a, &t) in acc.iter_mut().zip(t) {
                    *a = _mm256_xor_si256(*a, _mm256_gf2p8affine_epi64_epi8::<0>(x, t));
                }
            }
            for (out, a) in outputs.iter_mut().zip(acc) {
                let d = &mut out[off..off + W];
                // SAFETY: `d` is W writable bytes.
                unsafe { _mm256_storeu_si256(d.as_mut_ptr().cast(), a) };
            }
            off += W;
        }
        off
    }

    /// Affine bit matrices, 64 bytes at a time.
    #[target_feature(enable = "gfni,avx512f,avx512bw")]
    pub(super) fn gfni_avx512<const M: usize>(
        affine: &[u64],
        inputs: &[Input],
        outputs: &mut [&mut [u8]],
        len: usize,
    ) -> usize {
        const W: usize = 64;
        let mats: Vec<__m512i> = affine
            .iter()
            .map(|&a| _mm512_set1_epi64(a as i64))
            .collect();
        let mut off = 0;
        while off + W <= len {
            let mut acc = [_mm512_setzero_si512(); M];
            for (inp, t) in inputs.iter().zip(mats.chunks_exact(M)) {
                let s = inp.at(off, W);
                // SAFETY: `at` checked that the W bytes are inside the input (readable).
                let x = unsafe { _mm512_loadu_si512(s.cast()) };
                for (a, &t) in acc.iter_mut().zip(t) {
                    *a = _mm512_xor_si512(*a, _mm512_gf2p8affine_epi64_epi8::<0>(x, t));
                }
            }
            for (out, a) in outputs.iter_mut().zip(acc) {
                let d = &mut out[off..off + W];
                // SAFETY: `d` is W writable bytes.
                unsafe { _mm512_storeu_si512(d.as_mut_ptr().cast(), a) };
            }
            off += W;
        }
        off
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::Rng;
    use super::*;

    /// The reference: one [`Field::mul_acc_region`] pass per (input, output) pair.
    fn reference(
        field: Field,
        entries: &[u8],
        inputs: &[&[u8]],
        len: usize,
        m: usize,
    ) -> Vec<Vec<u8>> {
        let mut outs = vec![vec![0u8; len]; m];
        for (i, inp) in inputs.iter().enumerate() {
            for (j, o) in outs.iter_mut().enumerate() {
                field.mul_acc_region(entries[i * m + j], &inp[..len], o);
            }
        }
        outs
    }

    fn check(kernel: Kernel, field: Field, rng: &mut Rng, k: usize, m: usize, len: usize) {
        let entries = rng.bytes(k * m);
        // Inputs at odd offsets into longer buffers: unaligned, and bytes past `len`.
        let bufs: Vec<Vec<u8>> = (0..k).map(|_| rng.bytes(len + 67)).collect();
        let skew: Vec<usize> = (0..k).map(|_| rng.below(64)).collect();
        let inputs: Vec<&[u8]> = bufs.iter().zip(&skew).map(|(b, &s)| &b[s..]).collect();
        let want = reference(field, &entries, &inputs, len, m);
        let mut store = vec![0xa5u8; m * (len + 3) + 1];
        let mut outs: Vec<&mut [u8]> = store[1..]
            .chunks_mut(len + 3)
            .map(|c| &mut c[..len])
            .collect();
        dot_prod(kernel, field, &entries, &inputs, &mut outs);
        for (j, (got, want)) in outs.iter().zip(&want).enumerate() {
            assert!(
                **got == want[..],
                "{kernel:?} {field:?} k {k} m {m} len {len} output {j}"
            );
        }
    }

    #[test]
    fn every_kernel_matches_the_scalar_arithmetic() {
        let mut rng = Rng(0x5eed_0ec0);
        let lens = [
            0usize, 1, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 129, 4096, 5003,
        ];
        let mut ran = 0;
        for kernel in Kernel::ALL.into_iter().filter(|k| k.available()) {
            for field in [Field::Gf16, Field::Gf256] {
                for &len in &lens {
                    for (k, m) in [(1, 1), (2, 2), (3, 3), (4, 4), (10, 4), (16, 4), (5, 6)] {
                        check(kernel, field, &mut rng, k, m, len);
                    }
                }
                for _ in 0..40 {
                    let (k, m, len) = (1 + rng.below(16), 1 + rng.below(5), rng.below(9000));
                    check(kernel, field, &mut rng, k, m, len);
                }
            }
            ran += 1;
        }
        assert!(ran >= 1);
        assert!(Kernel::best().available());
    }

    #[test]
    fn special_coefficients_and_the_gf16_entry_format() {
        // 0, 1, libmlx5's 0x1c (w = 4: bit 4 set, coefficient 0xc), and every symbol.
        let mut rng = Rng(7);
        let x = rng.bytes(300);
        for kernel in Kernel::ALL.into_iter().filter(|k| k.available()) {
            for field in [Field::Gf16, Field::Gf256] {
                for e in 0..=255u8 {
                    let entries = [e, 0, 1, 0x1c];
                    let inputs = [&x[..], &x[..]];
                    let want = reference(field, &entries, &inputs, 300, 2);
                    let (mut a, mut b) = (vec![0u8; 300], vec![0u8; 300]);
                    dot_prod(kernel, field, &entries, &inputs, &mut [&mut a, &mut b]);
                    assert_eq!(
                        [a, b],
                        [want[0].clone(), want[1].clone()],
                        "{kernel:?} {e:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_vector_kernel_covers_whole_vectors_and_leaves_the_tail() {
        // The tests above must not pass by the portable tail doing all the work.
        let x = [0x5au8; 200];
        for (kernel, width) in [
            (Kernel::Ssse3, 16),
            (Kernel::Avx2, 32),
            (Kernel::GfniAvx2, 32),
            (Kernel::GfniAvx512, 64),
        ] {
            if !kernel.available() {
                continue;
            }
            let c = Coefs::new(Field::Gf256, &[7]);
            let mut o = vec![0u8; 200];
            // SAFETY: the CPU has `kernel` (checked just above).
            let done =
                unsafe { vector::<1>(kernel, &c, &[Input::from(&x[..])], &mut [&mut o], 200) };
            assert_eq!(done, 200 / width * width, "{kernel:?}");
            assert!(o[..done].iter().all(|&b| b == Field::Gf256.mul(7, 0x5a)));
        }
    }

    #[test]
    fn the_portable_kernel_runs_everywhere_and_the_best_is_listed() {
        assert!(Kernel::Portable.available());
        assert!(Kernel::ALL.contains(&Kernel::best()));
        let names: std::collections::BTreeSet<_> = Kernel::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), Kernel::ALL.len());
    }
}
