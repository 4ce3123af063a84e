// SPDX-License-Identifier: GPL-2.0
//! Bit-field access in the PRM convention and the `ifc_layouts!` declaration macro.
//!
//! The PRM numbers bits from the start of a structure, most significant bit first within each
//! big-endian dword, exactly like `MLX5_GET`/`MLX5_SET` in `include/linux/mlx5/device.h`. A field
//! is therefore fully described by its bit offset and bit width; those two numbers are copied
//! verbatim from `mlx5_ifc.h` into the layout declarations and nothing else computes offsets.

use core::fmt;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// One entry of a layout's field table: `(name, bit offset, bit width)`.
///
/// Variable-length trailing arrays are listed as `name[]` with the width of one element.
pub type Field = (&'static str, u32, u32);

/// Where a layout is published, which decides how the tests check it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A `struct`/`union mlx5_ifc_<IFC_NAME>_bits` (`mlx5_ifc.h` or the mlx5 core sources);
    /// checked field by field against the parsed header.
    Ifc,
    /// A byte-oriented C struct (`device.h`, core sources), checked by hand-written tests.
    CStruct,
    /// Published only by MLNX_OFED (its `mlx5_ifc.h`, or libmlx5's `wqe.h`): layouts upstream
    /// Linux dropped or never had, such as the vector-calc capability page and WQE segment.
    /// Checked by hand-written tests against the cited MLNX sources, and by a conformance test
    /// that they are still absent upstream.
    Ofed,
}

/// A fixed-size PRM layout: a zerocopy wrapper around its big-endian bytes.
pub trait Layout: FromBytes + IntoBytes + KnownLayout + Immutable + Unaligned {
    /// Name in the published headers (`mlx5_ifc_<IFC_NAME>_bits` for [`Source::Ifc`]).
    const IFC_NAME: &'static str;
    /// Where the layout is published.
    const SOURCE: Source;
    /// Size in bytes of the fixed part.
    const SIZE: usize;
    /// Every declared field as `(name, bit offset, bit width)`.
    const FIELDS: &'static [Field];

    /// Reads a declared field of at most 64 bits by name (for tracing and generic decoding).
    fn field(&self, name: &str) -> Option<u64> {
        let (_, off, width) = Self::FIELDS.iter().find(|f| f.0 == name)?;
        read_any(self.as_bytes(), *off, *width)
    }
}

/// Static description of a layout, as collected in each module's `LAYOUTS` table.
#[derive(Clone, Copy, Debug)]
pub struct LayoutInfo {
    /// Name of the Rust type.
    pub rust_name: &'static str,
    /// See [`Layout::IFC_NAME`].
    pub ifc_name: &'static str,
    /// See [`Layout::SOURCE`].
    pub source: Source,
    /// See [`Layout::SIZE`].
    pub size: usize,
    /// See [`Layout::FIELDS`].
    pub fields: &'static [Field],
}

/// An index or message length that does not reach the requested array element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBounds;

const fn mask32(width: u32) -> u32 {
    if width >= 32 {
        u32::MAX
    } else {
        (1 << width) - 1
    }
}

const fn mask64(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1 << width) - 1
    }
}

/// Reads a field of at most 32 bits that does not cross a dword boundary (`MLX5_GET`).
#[inline]
pub fn get32(bytes: &[u8], off: u32, width: u32) -> u32 {
    let i = (off / 32 * 4) as usize;
    if i + 4 > bytes.len() {
        return get_short(bytes, off, width);
    }
    let dw = u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    (dw >> (32 - off % 32 - width)) & mask32(width)
}

/// The bytes a field of at most 32 bits inside one dword spans: (first byte, byte count).
const fn short_span(off: u32, width: u32) -> (usize, u32) {
    let first = off / 8;
    (first as usize, (off + width - 1) / 8 - first + 1)
}

/// [`get32`] for a field in the last, partial dword of a layout smaller than a dword multiple
/// (e.g. the 16-bit `qpdpm_dscp_reg`): reads only the bytes the field spans.
fn get_short(bytes: &[u8], off: u32, width: u32) -> u32 {
    let (first, n) = short_span(off, width);
    let acc = bytes[first..first + n as usize]
        .iter()
        .fold(0u32, |a, b| (a << 8) | u32::from(*b));
    (acc >> (n * 8 - off % 8 - width)) & mask32(width)
}

/// [`set32`] for a field in the last, partial dword of a layout (see [`get_short`]).
fn set_short(bytes: &mut [u8], off: u32, width: u32, v: u32) {
    let (first, n) = short_span(off, width);
    let w = &mut bytes[first..first + n as usize];
    let old = w.iter().fold(0u32, |a, b| (a << 8) | u32::from(*b));
    let shift = n * 8 - off % 8 - width;
    let mask = mask32(width) << shift;
    let new = (old & !mask) | ((v << shift) & mask);
    for (k, b) in w.iter_mut().enumerate() {
        *b = (new >> ((n as usize - 1 - k) * 8)) as u8;
    }
}

/// Writes a field of at most 32 bits (`MLX5_SET`); bits of `v` above `width` are dropped.
#[inline]
pub fn set32(bytes: &mut [u8], off: u32, width: u32, v: u32) {
    let i = (off / 32 * 4) as usize;
    if i + 4 > bytes.len() {
        return set_short(bytes, off, width, v);
    }
    let shift = 32 - off % 32 - width;
    let mask = mask32(width) << shift;
    let w = &mut bytes[i..i + 4];
    let old = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
    w.copy_from_slice(&((old & !mask) | ((v << shift) & mask)).to_be_bytes());
}

/// Reads a field of at most 64 bits inside the 8 bytes starting at its first dword
/// (`MLX5_GET64` for the dword-aligned 64-bit fields of the PRM).
#[inline]
pub fn get64(bytes: &[u8], off: u32, width: u32) -> u64 {
    let i = (off / 32 * 4) as usize;
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[i..i + 8]);
    (u64::from_be_bytes(b) >> (64 - off % 32 - width)) & mask64(width)
}

/// Writes a field of at most 64 bits (`MLX5_SET64`); bits of `v` above `width` are dropped.
#[inline]
pub fn set64(bytes: &mut [u8], off: u32, width: u32, v: u64) {
    let i = (off / 32 * 4) as usize;
    let shift = 64 - off % 32 - width;
    let mask = mask64(width) << shift;
    let w = &mut bytes[i..i + 8];
    let mut b = [0u8; 8];
    b.copy_from_slice(w);
    let old = u64::from_be_bytes(b);
    w.copy_from_slice(&((old & !mask) | ((v << shift) & mask)).to_be_bytes());
}

/// Reads any field of at most 64 bits, or `None` if it is wider or not inside `bytes`.
pub fn read_any(bytes: &[u8], off: u32, width: u32) -> Option<u64> {
    let dw = (off / 32 * 4) as usize;
    if width == 0 || off as usize + width as usize > bytes.len() * 8 {
        None
    } else if off % 32 + width <= 32 {
        Some(u64::from(get32(bytes, off, width)))
    } else if off % 32 + width <= 64 && dw + 8 <= bytes.len() {
        Some(get64(bytes, off, width))
    } else {
        None
    }
}

/// Views `bytes` (exactly `T::SIZE` long) as a nested layout.
#[inline]
pub fn nested<T: Layout>(bytes: &[u8]) -> &T {
    match T::ref_from_bytes(bytes) {
        Ok(t) => t,
        // The declaration macro checks at compile time that the slice is `T::SIZE` bytes, and
        // every layout has alignment 1.
        Err(_) => unreachable!("nested layout size checked at compile time"),
    }
}

/// Mutable twin of [`nested`].
#[inline]
pub fn nested_mut<T: Layout>(bytes: &mut [u8]) -> &mut T {
    match T::mut_from_bytes(bytes) {
        Ok(t) => t,
        Err(_) => unreachable!("nested layout size checked at compile time"),
    }
}

/// Byte range of element `i` of a trailing array starting at byte `start`, inside a `len`-byte
/// message.
#[inline]
pub fn tail_range(
    len: usize,
    start: usize,
    elem_bytes: usize,
    i: usize,
) -> Option<core::ops::Range<usize>> {
    let a = i.checked_mul(elem_bytes)?.checked_add(start)?;
    let b = a.checked_add(elem_bytes)?;
    (b <= len).then_some(a..b)
}

/// Number of whole trailing-array elements in a `len`-byte message whose fixed part is `start`
/// bytes.
#[inline]
pub fn tail_count(len: usize, start: usize, elem_bytes: usize) -> usize {
    len.saturating_sub(start) / elem_bytes
}

/// Shared `Debug` body: the layout name and every non-zero field of at most 64 bits.
///
/// Kept out of line so that each layout's `Debug` impl stays a small call.
#[inline(never)]
pub fn debug_layout(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    bytes: &[u8],
    fields: &[Field],
) -> fmt::Result {
    let mut s = f.debug_struct(name);
    for &(field, off, width) in fields {
        match read_any(bytes, off, width) {
            Some(0) | None => {}
            Some(v) => {
                s.field(field, &format_args!("{v:#x}"));
            }
        }
    }
    s.finish_non_exhaustive()
}

/// Accessor kinds, used by the compile-time declaration check.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// At most 32 bits inside one dword.
    U32,
    /// At most 64 bits inside the 8 bytes from its first dword.
    U64,
    /// A byte-aligned byte array.
    Bytes,
    /// A dword-aligned fixed array of elements of the given width.
    Array(u32),
    /// A nested layout of the given size in bytes.
    Nested(usize),
    /// A variable-length trailing array of elements of the given width.
    Tail(u32),
}

/// Compile-time check of a declaration: every field lies inside the layout and suits its kind.
pub(crate) const fn check_decl(size: usize, fields: &[(u32, u32, Kind)]) {
    let bits = size * 8;
    let mut i = 0;
    while i < fields.len() {
        let (off, w, kind) = fields[i];
        let (o, end) = (off as usize, off as usize + w as usize);
        match kind {
            Kind::U32 => assert!(w >= 1 && off % 32 + w <= 32 && end <= bits),
            Kind::U64 => assert!(w >= 1 && off % 32 + w <= 64 && (o / 32 * 32 + 64) <= bits),
            Kind::Bytes => assert!(o % 8 == 0 && w % 8 == 0 && w > 0 && end <= bits),
            Kind::Array(e) => assert!(o % 32 == 0 && w % e == 0 && w > 0 && end <= bits),
            Kind::Nested(n) => assert!(o % 8 == 0 && w as usize == n * 8 && end <= bits),
            Kind::Tail(e) => assert!(o == bits && w == e && e % 8 == 0),
        }
        i += 1;
    }
}

/// Declares PRM layouts.
///
/// Each `pub struct Name: Source "ifc_name", SIZE_BYTES { fields }` becomes a `#[repr(C)]`
/// zerocopy wrapper around `[u8; SIZE_BYTES]` with the constants of [`Layout`] and, per field
/// `get, set: kind @ BIT_OFFSET, BIT_WIDTH;`, a pair of accessors:
///
/// * `u32` / `u64`: `fn get(&self) -> u32|u64` and `fn set(&mut self, v)`;
/// * `bytes`: `fn get(&self) -> &[u8]` and `fn get_mut(&mut self) -> &mut [u8]` (second name);
/// * `array u32|u64`: indexed `fn get(&self, i) -> Option<_>` and
///   `fn set(&mut self, i, v) -> Result<(), OutOfBounds>`;
/// * `tail u64|Layout`: associated functions on a whole message buffer
///   (`fn get(msg: &[u8], i) -> Option<_>`, `fn set(msg: &mut [u8], i, v)` or `get_mut`);
/// * `Layout` (any other type name): `fn get(&self) -> &Layout`, `fn get_mut(&mut self)`.
///
/// The macro also emits the module's `LAYOUTS` table, so one invocation per module.
macro_rules! ifc_layouts {
    ($(
        $(#[$m:meta])*
        pub struct $name:ident : $src:ident $ifc:literal, $size:literal {
            $(
                $(#[$fm:meta])*
                $get:ident, $set:ident : $kind:ident $($elem:ident)? @ $off:literal, $w:literal;
            )*
        }
    )*) => {
        $(
            $(#[$m])*
            #[derive(
                Clone,
                Copy,
                PartialEq,
                Eq,
                zerocopy_derive::FromBytes,
                zerocopy_derive::IntoBytes,
                zerocopy_derive::KnownLayout,
                zerocopy_derive::Immutable,
                zerocopy_derive::Unaligned,
            )]
            #[repr(C)]
            pub struct $name(#[doc = "The raw big-endian bytes."] pub [u8; $size]);

            impl $name {
                #[doc = concat!("Name in the published headers: `", $ifc, "`.")]
                pub const IFC_NAME: &'static str = $ifc;
                /// Size in bytes of the fixed part.
                pub const SIZE: usize = $size;
                /// Every declared field as `(name, bit offset, bit width)`.
                pub const FIELDS: &'static [$crate::bits::Field] = &[
                    $(($crate::bits::field_name!($kind $($elem)?, $get), $off, $w)),*
                ];

                /// An all-zero instance.
                pub const fn new() -> Self {
                    Self([0; $size])
                }

                $(
                    $crate::bits::accessors!(
                        $kind $($elem)?; $get, $set; $off, $w; $(#[$fm])*
                    );
                )*
            }

            impl Default for $name {
                fn default() -> Self {
                    Self::new()
                }
            }

            impl core::fmt::Debug for $name {
                fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                    $crate::bits::debug_layout(f, stringify!($name), &self.0, Self::FIELDS)
                }
            }

            impl $crate::bits::Layout for $name {
                const IFC_NAME: &'static str = $ifc;
                const SOURCE: $crate::bits::Source = $crate::bits::Source::$src;
                const SIZE: usize = $size;
                const FIELDS: &'static [$crate::bits::Field] = <$name>::FIELDS;
            }

            const _: () = $crate::bits::check_decl(
                $size,
                &[$(($off, $w, $crate::bits::kind!($kind $($elem)?))),*],
            );
        )*

        /// Every layout declared in this module.
        pub const LAYOUTS: &[$crate::bits::LayoutInfo] = &[$(
            $crate::bits::LayoutInfo {
                rust_name: stringify!($name),
                ifc_name: $ifc,
                source: $crate::bits::Source::$src,
                size: $size,
                fields: <$name>::FIELDS,
            }
        ),*];
    };
}
pub(crate) use ifc_layouts;

/// Name of a field in the `FIELDS` table (`name[]` for trailing arrays).
macro_rules! field_name {
    (tail $e:ident, $get:ident) => {
        concat!(stringify!($get), "[]")
    };
    ($kind:ident $($e:ident)?, $get:ident) => {
        stringify!($get)
    };
}
pub(crate) use field_name;

/// The [`Kind`] of a field declaration.
macro_rules! kind {
    (u32) => {
        $crate::bits::Kind::U32
    };
    (u64) => {
        $crate::bits::Kind::U64
    };
    (bytes) => {
        $crate::bits::Kind::Bytes
    };
    (array u32) => {
        $crate::bits::Kind::Array(32)
    };
    (array u64) => {
        $crate::bits::Kind::Array(64)
    };
    (tail u32) => {
        $crate::bits::Kind::Tail(32)
    };
    (tail u64) => {
        $crate::bits::Kind::Tail(64)
    };
    (tail $t:ident) => {
        $crate::bits::Kind::Tail((<$t>::SIZE * 8) as u32)
    };
    ($t:ident) => {
        $crate::bits::Kind::Nested(<$t>::SIZE)
    };
}
pub(crate) use kind;

/// The accessor pair of one field.
macro_rules! accessors {
    (u32; $get:ident, $set:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        #[doc = concat!("Reads `", stringify!($get), "` (", stringify!($w), " bits at bit ",
            stringify!($off), ").")]
        $(#[$fm])*
        #[inline]
        pub fn $get(&self) -> u32 {
            $crate::bits::get32(&self.0, $off, $w)
        }

        #[doc = concat!("Writes `", stringify!($get), "`; bits above its width are dropped.")]
        #[inline]
        pub fn $set(&mut self, v: u32) {
            $crate::bits::set32(&mut self.0, $off, $w, v)
        }
    };
    (u64; $get:ident, $set:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        #[doc = concat!("Reads `", stringify!($get), "` (", stringify!($w), " bits at bit ",
            stringify!($off), ").")]
        $(#[$fm])*
        #[inline]
        pub fn $get(&self) -> u64 {
            $crate::bits::get64(&self.0, $off, $w)
        }

        #[doc = concat!("Writes `", stringify!($get), "`; bits above its width are dropped.")]
        #[inline]
        pub fn $set(&mut self, v: u64) {
            $crate::bits::set64(&mut self.0, $off, $w, v)
        }
    };
    (bytes; $get:ident, $get_mut:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        #[doc = concat!("The bytes of `", stringify!($get), "` (", stringify!($w),
            " bits at bit ", stringify!($off), ").")]
        $(#[$fm])*
        #[inline]
        pub fn $get(&self) -> &[u8] {
            &self.0[$off / 8..($off + $w) / 8]
        }

        #[doc = concat!("The bytes of `", stringify!($get), "`, mutable.")]
        #[inline]
        pub fn $get_mut(&mut self) -> &mut [u8] {
            &mut self.0[$off / 8..($off + $w) / 8]
        }
    };
    (array $t:ident; $get:ident, $set:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        #[doc = concat!("Reads element `i` of `", stringify!($get), "` (", stringify!($w),
            " bits of ", stringify!($t), " at bit ", stringify!($off), ").")]
        $(#[$fm])*
        #[inline]
        pub fn $get(&self, i: usize) -> Option<$t> {
            const E: usize = <$t>::BITS as usize;
            (i < $w / E).then(|| {
                $crate::bits::accessors!(@get $t, &self.0, ($off + i * E) as u32)
            })
        }

        #[doc = concat!("Writes element `i` of `", stringify!($get), "`.")]
        #[inline]
        pub fn $set(&mut self, i: usize, v: $t) -> Result<(), $crate::bits::OutOfBounds> {
            const E: usize = <$t>::BITS as usize;
            if i >= $w / E {
                return Err($crate::bits::OutOfBounds);
            }
            $crate::bits::accessors!(@set $t, &mut self.0, ($off + i * E) as u32, v);
            Ok(())
        }
    };
    (tail u32; $get:ident, $set:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        $crate::bits::accessors!(@tail_scalar u32; $get, $set; $off, $w; $(#[$fm])*);
    };
    (tail u64; $get:ident, $set:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        $crate::bits::accessors!(@tail_scalar u64; $get, $set; $off, $w; $(#[$fm])*);
    };
    (@tail_scalar $t:ident; $get:ident, $set:ident; $off:literal, $w:literal;
        $(#[$fm:meta])*) => {
        #[doc = concat!("Reads element `i` of the trailing array `", stringify!($get),
            "[]` (", stringify!($w), "-bit elements from bit ", stringify!($off),
            ") in the whole message `msg`.")]
        $(#[$fm])*
        #[inline]
        pub fn $get(msg: &[u8], i: usize) -> Option<$t> {
            let r = $crate::bits::tail_range(msg.len(), $off / 8, $w / 8, i)?;
            Some($crate::bits::accessors!(@get $t, &msg[r], 0))
        }

        #[doc = concat!("Writes element `i` of the trailing array `", stringify!($get),
            "[]` in the whole message `msg`.")]
        #[inline]
        pub fn $set(msg: &mut [u8], i: usize, v: $t) -> Result<(), $crate::bits::OutOfBounds> {
            let r = $crate::bits::tail_range(msg.len(), $off / 8, $w / 8, i)
                .ok_or($crate::bits::OutOfBounds)?;
            $crate::bits::accessors!(@set $t, &mut msg[r], 0, v);
            Ok(())
        }
    };
    (tail $t:ident; $get:ident, $get_mut:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        #[doc = concat!("Element `i` of the trailing array `", stringify!($get), "[]` of [`",
            stringify!($t), "`] (from bit ", stringify!($off), ") in the whole message `msg`.")]
        $(#[$fm])*
        #[inline]
        pub fn $get(msg: &[u8], i: usize) -> Option<&$t> {
            let r = $crate::bits::tail_range(msg.len(), $off / 8, <$t>::SIZE, i)?;
            Some($crate::bits::nested(&msg[r]))
        }

        #[doc = concat!("Element `i` of the trailing array `", stringify!($get), "[]`, mutable.")]
        #[inline]
        pub fn $get_mut(msg: &mut [u8], i: usize) -> Option<&mut $t> {
            let r = $crate::bits::tail_range(msg.len(), $off / 8, <$t>::SIZE, i)?;
            Some($crate::bits::nested_mut(&mut msg[r]))
        }
    };
    ($t:ident; $get:ident, $get_mut:ident; $off:literal, $w:literal; $(#[$fm:meta])*) => {
        #[doc = concat!("The nested [`", stringify!($t), "`] `", stringify!($get), "` (at bit ",
            stringify!($off), ").")]
        $(#[$fm])*
        #[inline]
        pub fn $get(&self) -> &$t {
            $crate::bits::nested(&self.0[$off / 8..$off / 8 + <$t>::SIZE])
        }

        #[doc = concat!("The nested [`", stringify!($t), "`] `", stringify!($get), "`, mutable.")]
        #[inline]
        pub fn $get_mut(&mut self) -> &mut $t {
            $crate::bits::nested_mut(&mut self.0[$off / 8..$off / 8 + <$t>::SIZE])
        }
    };
    (@get u32, $b:expr, $off:expr) => {
        $crate::bits::get32($b, $off, 32)
    };
    (@get u64, $b:expr, $off:expr) => {
        $crate::bits::get64($b, $off, 64)
    };
    (@set u32, $b:expr, $off:expr, $v:expr) => {
        $crate::bits::set32($b, $off, 32, $v)
    };
    (@set u64, $b:expr, $off:expr, $v:expr) => {
        $crate::bits::set64($b, $off, 64, $v)
    };
}
pub(crate) use accessors;

/// Declares a table of named numeric codes: one `pub const` per code, `ALL`, the list of
/// `(value, name)` pairs whose names are the Linux header names without `$prefix`, and a
/// name lookup function.
macro_rules! code_table {
    ($ty:ty, $prefix:literal, $name_fn:ident;
        $($(#[$m:meta])* $name:ident = $val:literal, $cname:literal;)*) => {
        $(
            #[doc = concat!("`", $prefix, $cname, "` (", stringify!($val), ").")]
            $(#[$m])*
            pub const $name: $ty = $val;
        )*

        /// Every code of this table with its name in the Linux headers (without the prefix).
        pub const ALL: &[($ty, &str)] = &[$(($name, $cname)),*];

        /// Prefix of the names in [`ALL`] in the Linux headers.
        pub const HEADER_PREFIX: &str = $prefix;

        /// Name of a code as in the Linux headers (without the prefix), or `"UNKNOWN"`.
        pub fn $name_fn(code: $ty) -> &'static str {
            match ALL.iter().find(|(v, _)| *v == code) {
                Some((_, n)) => n,
                None => "UNKNOWN",
            }
        }
    };
}
pub(crate) use code_table;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get32_reads_msb_first_within_big_endian_dword() {
        // Dword 1 = 0x12345678: bits 0x20..0x24 are the top nibble 0x1, 0x3c..0x40 the bottom 0x8.
        let b = [0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78];
        assert_eq!(get32(&b, 0x20, 4), 0x1);
        assert_eq!(get32(&b, 0x3c, 4), 0x8);
        assert_eq!(get32(&b, 0x28, 16), 0x3456);
        assert_eq!(get32(&b, 0x20, 32), 0x1234_5678);
    }

    #[test]
    fn set32_only_touches_its_bits_and_masks_the_value() {
        let mut b = [0xffu8; 4];
        set32(&mut b, 4, 8, 0);
        assert_eq!(b, [0xf0, 0x0f, 0xff, 0xff]);
        set32(&mut b, 4, 8, 0x1ab);
        assert_eq!(b, [0xfa, 0xbf, 0xff, 0xff]);
    }

    #[test]
    fn get64_set64_round_trip_dword_aligned() {
        let mut b = [0u8; 16];
        set64(&mut b, 0x40, 64, 0x0102_0304_0506_0708);
        assert_eq!(&b[8..], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(get64(&b, 0x40, 64), 0x0102_0304_0506_0708);
        // A 48-bit field ending at the end of the second dword.
        set64(&mut b, 0x10, 48, 0xaabb_ccdd_eeff);
        assert_eq!(&b[..8], &[0, 0, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]);
    }

    #[test]
    fn tail_range_rejects_short_messages() {
        assert_eq!(tail_range(0x20, 0x10, 8, 1), Some(0x18..0x20));
        assert_eq!(tail_range(0x20, 0x10, 8, 2), None);
        assert_eq!(tail_range(0x20, 0x10, 8, usize::MAX), None);
        assert_eq!(tail_count(0x20, 0x10, 8), 2);
        assert_eq!(tail_count(0x8, 0x10, 8), 0);
    }

    #[test]
    fn read_any_refuses_wide_or_outside_fields() {
        let b = [0u8; 8];
        assert_eq!(read_any(&b, 0, 64), Some(0));
        assert_eq!(read_any(&b, 0, 72), None);
        assert_eq!(read_any(&b, 0x40, 8), None);
        assert_eq!(read_any(&b, 0x20, 0), None);
    }
}
