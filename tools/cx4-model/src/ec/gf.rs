//! The two Galois fields of the vector-calc engine, table driven.
//!
//! - [`Field::Gf16`]: GF(2^4) modulo x^4 + x + 1 (0x13), applied to each nibble of a byte
//!   independently — a byte holds two symbols. This is what ConnectX-4 computes for the
//!   symbol widths w ∈ {1, 2, 4} (Mellanox/EC README: EC offload "in GF(2^4)"), what
//!   MLNX's software reference `galois_w4_mult` and GF-Complete's default w = 4 region
//!   multiply (`gf_w4.c`, polynomial 0x13, low nibble then high nibble) compute. w = 1 and 2
//!   use the same field with coefficients 0/1 and 0..3 (not Jerasure's GF(4)).
//! - [`Field::Gf256`]: GF(2^8) modulo x^8 + x^4 + x^3 + x^2 + 1 (0x11d), the field of
//!   Jerasure w = 8, ISA-L and Linux raid6 — what MLNX's tests compare 8-bit-matrix hardware
//!   output with (on cards that advertise `calc_matrix_type_8bit`; ConnectX-4 does not).
//!
//! Region multiply-accumulate uses one 256-entry byte table per coefficient (for GF(2^4) the
//! table maps a byte to both its nibbles multiplied), built once: the scalar reference the
//! vector kernels of [`super::dot`] are tested against, and their tail.

use std::sync::OnceLock;

/// The GF(2^4) reduction polynomial x^4 + x + 1.
pub const GF16_POLY: u16 = 0x13;
/// The GF(2^8) reduction polynomial x^8 + x^4 + x^3 + x^2 + 1.
pub const GF256_POLY: u16 = 0x11d;

/// A field of the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// GF(2^4), polynomial 0x13, two symbols per byte.
    Gf16,
    /// GF(2^8), polynomial 0x11d, one symbol per byte.
    Gf256,
}

/// Carry-less multiplication of `a` and `b` reduced modulo `poly` of degree `bits`.
const fn mul_slow(a: u16, b: u16, poly: u16, bits: u32) -> u16 {
    let mut r = 0u16;
    let mut a = a;
    let mut b = b;
    while b != 0 {
        if b & 1 != 0 {
            r ^= a;
        }
        b >>= 1;
        a <<= 1;
        if a & (1 << bits) != 0 {
            a ^= poly;
        }
    }
    r
}

/// Per-coefficient byte tables: `tables[c][x]` = c ⊗ x for each symbol of byte x.
type Tables = Vec<[u8; 256]>;

fn gf16_tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        (0..16u16)
            .map(|c| {
                let mut t = [0u8; 256];
                for (x, e) in t.iter_mut().enumerate() {
                    let lo = mul_slow(c, x as u16 & 0xf, GF16_POLY, 4);
                    let hi = mul_slow(c, x as u16 >> 4, GF16_POLY, 4);
                    *e = (hi << 4 | lo) as u8;
                }
                t
            })
            .collect()
    })
}

fn gf256_tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        (0..256u16)
            .map(|c| {
                let mut t = [0u8; 256];
                for (x, e) in t.iter_mut().enumerate() {
                    *e = mul_slow(c, x as u16, GF256_POLY, 8) as u8;
                }
                t
            })
            .collect()
    })
}

impl Field {
    /// The coefficient a matrix entry stands for: GF(2^4) takes the entry's low nibble
    /// (libmlx5 sets bit 4 of every w ≠ 8 entry, "crazy HW formatting", and leaves the dump
    /// column 0; the high nibble carries no coefficient), GF(2^8) the whole byte.
    pub const fn coefficient(self, entry: u8) -> u8 {
        match self {
            Field::Gf16 => entry & 0xf,
            Field::Gf256 => entry,
        }
    }

    /// Symbols per byte.
    pub const fn symbols_per_byte(self) -> usize {
        match self {
            Field::Gf16 => 2,
            Field::Gf256 => 1,
        }
    }

    /// The number of field elements.
    pub const fn order(self) -> u16 {
        match self {
            Field::Gf16 => 16,
            Field::Gf256 => 256,
        }
    }

    fn tables(self) -> &'static Tables {
        match self {
            Field::Gf16 => gf16_tables(),
            Field::Gf256 => gf256_tables(),
        }
    }

    /// The byte table of symbol `c` (below [`Field::order`]): entry x is c ⊗ x (each nibble of
    /// x in GF(2^4)).
    pub(super) fn table(self, c: u8) -> &'static [u8; 256] {
        &self.tables()[usize::from(c)]
    }

    /// The product of two symbols (`a`, `b` below [`Field::order`]).
    pub fn mul(self, a: u8, b: u8) -> u8 {
        let t = &self.tables()[usize::from(self.coefficient(a))];
        t[usize::from(self.coefficient(b))]
    }

    /// The multiplicative inverse of a non-zero symbol (`None` for 0).
    pub fn inv(self, a: u8) -> Option<u8> {
        let a = self.coefficient(a);
        (1..self.order())
            .map(|x| x as u8)
            .find(|&x| a != 0 && self.mul(a, x) == 1)
    }

    /// `dst ^= coef ⊗ src`, byte by byte (each nibble separately in GF(2^4)); `coef` is a
    /// matrix entry as read ([`Field::coefficient`] applies).
    pub fn mul_acc_region(self, entry: u8, src: &[u8], dst: &mut [u8]) {
        match self.coefficient(entry) {
            0 => {}
            1 => dst.iter_mut().zip(src).for_each(|(d, s)| *d ^= s),
            c => {
                let t = &self.tables()[usize::from(c)];
                dst.iter_mut()
                    .zip(src)
                    .for_each(|(d, s)| *d ^= t[usize::from(*s)]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gf16_is_x4_x_1_on_each_nibble() {
        let f = Field::Gf16;
        // x · x^3 = x^4 = x + 1.
        assert_eq!(f.mul(2, 8), 3);
        // A byte holds two symbols: 0x82 · 2 = (8·2) << 4 | (2·2) = 0x34.
        let mut d = [0u8];
        f.mul_acc_region(0x12, &[0x82], &mut d);
        assert_eq!(d, [0x34]);
        // Every non-zero element has an inverse and the group has order 15.
        for a in 1..16u8 {
            let i = f.inv(a).unwrap();
            assert_eq!(f.mul(a, i), 1);
            let mut p = 1;
            for _ in 0..15 {
                p = f.mul(p, a);
            }
            assert_eq!(p, 1, "a^15 = 1 for {a}");
        }
        assert_eq!(f.inv(0), None);
        // 2 generates the whole multiplicative group (0x13 is primitive).
        let mut seen = std::collections::BTreeSet::new();
        let mut p = 1;
        for _ in 0..15 {
            seen.insert(p);
            p = f.mul(p, 2);
        }
        assert_eq!(seen.len(), 15);
    }

    #[test]
    fn gf256_is_the_raid6_field() {
        let f = Field::Gf256;
        // x^8 = x^4 + x^3 + x^2 + 1 = 0x1d; raid6's {02}·{80} = {1d}.
        assert_eq!(f.mul(0x80, 2), 0x1d);
        // A known product (ISA-L gf_mul(0x53, 0xca) in 0x11d).
        assert_eq!(f.mul(0x53, 0xca), mul_slow(0x53, 0xca, 0x11d, 8) as u8);
        let mut seen = std::collections::BTreeSet::new();
        let mut p = 1u8;
        for _ in 0..255 {
            seen.insert(p);
            p = f.mul(p, 2);
        }
        assert_eq!(seen.len(), 255, "2 is primitive in 0x11d");
        for a in 1..=255u8 {
            assert_eq!(f.mul(a, f.inv(a).unwrap()), 1);
        }
    }

    #[test]
    fn region_multiply_matches_symbol_multiply_and_distributes() {
        for f in [Field::Gf16, Field::Gf256] {
            let src: Vec<u8> = (0..=255u8).collect();
            for entry in [0u8, 1, 0x11, 0x17, 0x1f, 0x35, 0xff] {
                let mut d = vec![0u8; 256];
                f.mul_acc_region(entry, &src, &mut d);
                for (x, got) in d.iter().enumerate() {
                    let want = match f {
                        Field::Gf16 => {
                            f.mul(entry, x as u8 >> 4) << 4 | f.mul(entry, x as u8 & 0xf)
                        }
                        Field::Gf256 => f.mul(entry, x as u8),
                    };
                    assert_eq!(*got, want, "{f:?} entry {entry:#x} x {x:#x}");
                }
            }
            // (a + b)·x = a·x + b·x.
            for (a, b) in [(3u8, 5u8), (7, 9), (0x0c, 0x0f)] {
                for x in 0..=(f.order() - 1) as u8 {
                    assert_eq!(f.mul(a ^ b, x), f.mul(a, x) ^ f.mul(b, x));
                }
            }
        }
    }

    #[test]
    fn gf16_ignores_the_high_nibble_of_an_entry() {
        // libmlx5 writes w = 4 coefficient c as 0x10 | c; the dump column as 0.
        assert_eq!(Field::Gf16.coefficient(0x17), 7);
        assert_eq!(Field::Gf16.coefficient(0x00), 0);
        assert_eq!(Field::Gf256.coefficient(0x17), 0x17);
    }
}
