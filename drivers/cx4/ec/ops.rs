// SPDX-License-Identifier: GPL-2.0
//! Encode, decode and update on top of [`EcEngine::submit`] (libmlx5 `ibv_exp_ec_encode_async`,
//! `_decode_async`, `_update_async`): each is one calculation whose matrix is derived here, on
//! the CPU, from the m × k coding matrix.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use super::{
    gf::{
        invert,
        Square,
        MAX_DIM, //
    },
    Calc,
    DmaAddr,
    EcDone,
    EcEngine,
    Field,
    MAX_OUTPUTS,
    MAX_SRCS, //
};

/// An m × k coding matrix (ISA-L's rows k..k+m of `gf_gen_*_matrix`, Jerasure's
/// `coding_matrix`): `rows[j][i]` is the coefficient of data block i in code block j.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CodeMatrix {
    pub(crate) field: Field,
    pub(crate) k: usize,
    pub(crate) m: usize,
    pub(crate) rows: [[u8; MAX_SRCS]; MAX_OUTPUTS],
}

impl CodeMatrix {
    /// From `m · k` row-major coefficients; `EINVAL` for sizes beyond 16 × 4 or symbols
    /// outside the field.
    pub(crate) fn new(field: Field, k: usize, m: usize, coef: &[u8]) -> Result<Self> {
        if !(1..=MAX_SRCS).contains(&k) || !(1..=MAX_OUTPUTS).contains(&m) || coef.len() != k * m {
            return Err(EINVAL);
        }
        if coef.iter().any(|&c| c > field.max_symbol()) {
            return Err(EINVAL);
        }
        let mut rows = [[0u8; MAX_SRCS]; MAX_OUTPUTS];
        for (j, row) in rows.iter_mut().enumerate().take(m) {
            row[..k].copy_from_slice(&coef[j * k..(j + 1) * k]);
        }
        Ok(Self { field, k, m, rows })
    }

    /// RAID-6 P and Q over k data blocks (lib/raid6, async_tx): P = Σ Dᵢ, Q = Σ 2^i · Dᵢ in
    /// GF(2^8)/0x11d.
    pub(crate) fn raid6(k: usize) -> Result<Self> {
        if !(1..=MAX_SRCS).contains(&k) {
            return Err(EINVAL);
        }
        let mut rows = [[0u8; MAX_SRCS]; MAX_OUTPUTS];
        rows[0][..k].fill(1);
        for (i, q) in rows[1][..k].iter_mut().enumerate() {
            *q = Field::Gf256.exp2(i);
        }
        Ok(Self {
            field: Field::Gf256,
            k,
            m: 2,
            rows,
        })
    }

    /// Row r of the generator `[I; M]` (block r of k + m: data, then code).
    fn generator_row(&self, r: usize) -> [u8; MAX_SRCS] {
        if r < self.k {
            let mut e = [0u8; MAX_SRCS];
            e[r] = 1;
            e
        } else {
            self.rows[r - self.k]
        }
    }
}

/// `code[j] = Σᵢ rows[j][i] · data[i]` (k data blocks, m code blocks of `len` bytes).
pub(crate) fn encode(
    eng: &EcEngine,
    mat: &CodeMatrix,
    data: &[DmaAddr],
    code: &[DmaAddr],
    len: u32,
    done: &Arc<dyn EcDone>,
    tag: u64,
) -> Result {
    if data.len() != mat.k || code.len() != mat.m {
        return Err(EINVAL);
    }
    let mut coef = [[0u8; MAX_OUTPUTS]; MAX_SRCS];
    for (i, c) in coef.iter_mut().enumerate().take(mat.k) {
        for (j, cj) in c.iter_mut().enumerate().take(mat.m) {
            *cj = mat.rows[j][i];
        }
    }
    eng.submit(
        &Calc {
            field: mat.field,
            srcs: data,
            dsts: code,
            coef: &coef[..mat.k],
            len,
        },
        done,
        tag,
    )
}

/// Rebuilds the blocks `erased` (indices into `blocks`: k data then m code blocks; at most
/// m, distinct) from the first k others, in one calculation.
pub(crate) fn decode(
    eng: &EcEngine,
    mat: &CodeMatrix,
    blocks: &[DmaAddr],
    erased: &[usize],
    len: u32,
    done: &Arc<dyn EcDone>,
    tag: u64,
) -> Result {
    let (k, total) = (mat.k, mat.k + mat.m);
    let e = erased.len();
    if blocks.len() != total || e == 0 || e > mat.m || k > MAX_DIM {
        return Err(EINVAL);
    }
    for (a, &x) in erased.iter().enumerate() {
        if x >= total || erased[..a].contains(&x) {
            return Err(EINVAL);
        }
    }
    // The first k survivors, and their generator rows.
    let mut surv = [0usize; MAX_SRCS];
    let mut n = 0;
    for r in (0..total).filter(|r| !erased.contains(r)) {
        if n == k {
            break;
        }
        surv[n] = r;
        n += 1;
    }
    if n < k {
        return Err(EINVAL);
    }
    let mut s: Square = [[0u8; MAX_DIM]; MAX_DIM];
    for (a, row) in s.iter_mut().enumerate().take(k) {
        row[..k].copy_from_slice(&mat.generator_row(surv[a])[..k]);
    }
    let inv = invert(mat.field, &s, k)?;
    // Erased block t = Σ_b (G[erased t] · S⁻¹)[b] · survivor b.
    let f = mat.field;
    let mut coef = [[0u8; MAX_OUTPUTS]; MAX_SRCS];
    for (t, &x) in erased.iter().enumerate() {
        let g = mat.generator_row(x);
        for (b, c) in coef.iter_mut().enumerate().take(k) {
            c[t] = (0..k).fold(0u8, |acc, a| acc ^ f.mul(g[a], inv[a][b]));
        }
    }
    let mut srcs = [0u64; MAX_SRCS];
    for (d, &r) in srcs.iter_mut().zip(surv.iter()).take(k) {
        *d = blocks[r];
    }
    let mut dsts = [0u64; MAX_OUTPUTS];
    for (d, &x) in dsts.iter_mut().zip(erased.iter()) {
        *d = blocks[x];
    }
    eng.submit(
        &Calc {
            field: f,
            srcs: &srcs[..k],
            dsts: &dsts[..e],
            coef: &coef[..k],
            len,
        },
        done,
        tag,
    )
}

/// New code blocks after data blocks `changed` (indices < k) changed from `old_data[c]` to
/// `new_data[c]` (parallel to `changed`): `new_code[j] = old_code[j] + Σ rows[j][c] ·
/// (old + new)`, one calculation of m + 2 · changes sources.
#[allow(clippy::too_many_arguments)]
pub(crate) fn update(
    eng: &EcEngine,
    mat: &CodeMatrix,
    changed: &[usize],
    old_data: &[DmaAddr],
    new_data: &[DmaAddr],
    old_code: &[DmaAddr],
    new_code: &[DmaAddr],
    len: u32,
    done: &Arc<dyn EcDone>,
    tag: u64,
) -> Result {
    let (m, u) = (mat.m, changed.len());
    if u == 0
        || old_data.len() != u
        || new_data.len() != u
        || old_code.len() != m
        || new_code.len() != m
        || m + 2 * u > MAX_SRCS
    {
        return Err(EINVAL);
    }
    for (a, &c) in changed.iter().enumerate() {
        if c >= mat.k || changed[..a].contains(&c) {
            return Err(EINVAL);
        }
    }
    let mut srcs = [0u64; MAX_SRCS];
    let mut coef = [[0u8; MAX_OUTPUTS]; MAX_SRCS];
    for (l, &a) in old_code.iter().enumerate() {
        srcs[l] = a;
        coef[l][l] = 1;
    }
    for (a, &c) in changed.iter().enumerate() {
        for (row, addr) in [(m + 2 * a, old_data[a]), (m + 2 * a + 1, new_data[a])] {
            srcs[row] = addr;
            for (j, cj) in coef[row].iter_mut().enumerate().take(m) {
                *cj = mat.rows[j][c];
            }
        }
    }
    let k = m + 2 * u;
    eng.submit(
        &Calc {
            field: mat.field,
            srcs: &srcs[..k],
            dsts: new_code,
            coef: &coef[..k],
            len,
        },
        done,
        tag,
    )
}
