// SPDX-License-Identifier: GPL-2.0
//! The two fields of the vector-calc engine, on the host CPU: GF(2^4) with x^4 + x + 1 (0x13;
//! ConnectX-4, each nibble of a byte a symbol — GF-Complete's w = 4) and GF(2^8) with
//! x^8 + x^4 + x^3 + x^2 + 1 (0x11d; the 8-bit matrices, the field of ISA-L and of the
//! kernel's raid6 library). The card does the region arithmetic; the driver only needs symbol
//! products and the inverse of a k × k matrix (decoding: the survivors' generator rows), by
//! log/antilog tables built at compile time.

use kernel::prelude::*;

use super::Field;

/// The largest square matrix inverted (k ≤ the engine's 16 sources).
pub(crate) const MAX_DIM: usize = 16;

/// Log and antilog tables of a field with `order` elements and polynomial `poly`
/// (generator x = 2, primitive for both polynomials).
struct Tables {
    log: [u8; 256],
    exp: [u8; 512],
}

const fn tables(order: usize, poly: u32) -> Tables {
    let mut log = [0u8; 256];
    let mut exp = [0u8; 512];
    let mut x: u32 = 1;
    let mut i = 0;
    while i < order - 1 {
        exp[i] = x as u8;
        log[x as usize] = i as u8;
        x <<= 1;
        if x & order as u32 != 0 {
            x ^= poly;
        }
        i += 1;
    }
    // exp[i] for i up to 2·(order − 1) so that a sum of two logs needs no reduction.
    while i < 2 * (order - 1) {
        exp[i] = exp[i - (order - 1)];
        i += 1;
    }
    Tables { log, exp }
}

static GF16: Tables = tables(16, 0x13);
static GF256: Tables = tables(256, 0x11d);

impl Field {
    fn tables(self) -> &'static Tables {
        match self {
            Field::Gf16 => &GF16,
            Field::Gf256 => &GF256,
        }
    }

    /// `a · b` (symbols of the field; larger values are a caller's bug and give 0).
    pub(crate) fn mul(self, a: u8, b: u8) -> u8 {
        if a == 0 || b == 0 || a > self.max_symbol() || b > self.max_symbol() {
            return 0;
        }
        let t = self.tables();
        t.exp[t.log[a as usize] as usize + t.log[b as usize] as usize]
    }

    /// `a⁻¹` (`None` for 0).
    pub(crate) fn inv(self, a: u8) -> Option<u8> {
        if a == 0 || a > self.max_symbol() {
            return None;
        }
        let t = self.tables();
        let n = self.max_symbol() as usize;
        Some(t.exp[(n - t.log[a as usize] as usize) % n])
    }

    /// `2^i` (the generator's powers: RAID-6's Q coefficients, `raid6_gfexp`).
    pub(crate) fn exp2(self, i: usize) -> u8 {
        self.tables().exp[i % self.max_symbol() as usize]
    }
}

/// A square matrix of at most [`MAX_DIM`] rows over a field.
pub(crate) type Square = [[u8; MAX_DIM]; MAX_DIM];

/// Inverts the `n` × `n` matrix `a` (Gauss–Jordan with row swaps); `EINVAL` if it is singular
/// (the survivors cannot restore the erased blocks: the code is not MDS for this pattern).
pub(crate) fn invert(field: Field, a: &Square, n: usize) -> Result<Square> {
    if n == 0 || n > MAX_DIM {
        return Err(EINVAL);
    }
    let mut m = *a;
    let mut inv = [[0u8; MAX_DIM]; MAX_DIM];
    for (i, row) in inv.iter_mut().enumerate().take(n) {
        row[i] = 1;
    }
    for col in 0..n {
        let pivot = (col..n).find(|&r| m[r][col] != 0).ok_or(EINVAL)?;
        m.swap(col, pivot);
        inv.swap(col, pivot);
        let p = field.inv(m[col][col]).ok_or(EINVAL)?;
        for j in 0..n {
            m[col][j] = field.mul(m[col][j], p);
            inv[col][j] = field.mul(inv[col][j], p);
        }
        for r in 0..n {
            let f = m[r][col];
            if r == col || f == 0 {
                continue;
            }
            for j in 0..n {
                m[r][j] ^= field.mul(f, m[col][j]);
                inv[r][j] ^= field.mul(f, inv[col][j]);
            }
        }
    }
    Ok(inv)
}
