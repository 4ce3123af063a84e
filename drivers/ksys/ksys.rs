// SPDX-License-Identifier: GPL-2.0
//! Raw bindings to kernel C APIs that the `kernel` crate does not (yet) bind: what
//! `rust/bindings` is to the `kernel` crate, for cx4's own abstractions.
//!
//! The bindings are generated at build time by `ksys.mk` from `bindings_helper.h`, with the
//! same bindgen and the same flags as the kernel's own `rust/bindings` (the C flags of the
//! kernel build, filtered for libclang when the kernel is built by gcc, and the kernel's
//! `rust/bindgen_parameters`), restricted to what `bindgen_parameters` allowlists. The output
//! lives in `.build/ksys/` (never committed).
//!
//! Types are shared with `kernel::bindings`, not duplicated: only allowlisted items are
//! generated, and every other name the generated code uses (`device`, `net`,
//! `netlink_ext_ack`, `u32_`, …) resolves to `kernel::bindings` through a glob import. So a
//! `*mut bindings::device` from the `kernel` crate is a `*mut ksys::device`, without casts,
//! and the crate re-exports both sets under one path.
//!
//! Static inline functions and macros are reached through C shims (`helpers.c`): each
//! `ksys_helper_NAME` is renamed to `NAME` (keeping its link name), as the kernel does for
//! `rust_helper_*`.
//!
//! Like `rust/bindings`, this crate is for abstractions only: drivers use the safe wrappers
//! (`drivers/devlink/`, `drivers/netdev/`); the driver crate does not get it as a dependency
//! (`--extern`).

#![allow(
    clippy::all,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]

#[allow(dead_code)]
#[allow(clippy::as_underscore)]
#[allow(clippy::cast_lossless)]
#[allow(clippy::ptr_as_ptr)]
#[allow(clippy::ref_as_ptr)]
#[allow(clippy::undocumented_unsafe_blocks)]
mod generated {
    // `--ctypes-prefix ffi`, as in the kernel: the C types come from the kernel's `ffi` crate.
    use kernel::ffi;
    // `--with-derive-custom-struct .*=MaybeZeroable` (the kernel's bindgen_parameters).
    use pin_init::{
        MaybeZeroable,
        Zeroable, //
    };

    // Everything the generated items refer to but do not define. Items defined below take
    // precedence over the glob import.
    pub use kernel::bindings::*;

    include!("../../.build/ksys/bindings_generated.rs");

    // `bindgen` does not derive this for its opaque blobs (the kernel's bindings do the same
    // for `__BindgenBitfieldUnit`), so opaque types would not be `Zeroable`.
    //
    // SAFETY: `__BindgenOpaqueArray8<T>` is a newtype around `T`.
    unsafe impl<T: Zeroable> Zeroable for __BindgenOpaqueArray8<T> {}

    // Nor for the bit-field units and union markers of the structs generated here (the
    // netdev tables, `page_pool_params`), which must be `Zeroable` for the same reason.
    //
    // SAFETY: `__BindgenBitfieldUnit<T>` is a newtype around `T`.
    unsafe impl<T: Zeroable> Zeroable for __BindgenBitfieldUnit<T> {}
    // SAFETY: `__BindgenUnionField<T>` is a `PhantomData`, zero-sized.
    unsafe impl<T> Zeroable for __BindgenUnionField<T> {}
}

pub use generated::*;

/// A slot of a C ops table (`net_device_ops`, `ethtool_ops`, `dcbnl_rtnl_ops`,
/// `ib_device_ops`, ...): `Some(trampoline)` if the driver's `#[vtable]` trait implements the
/// operation (`$has`, its `HAS_*` constant), `None` otherwise, so the C core sees the same
/// NULL a C driver leaves for an operation it does not have.
///
/// It lives here, in the crate of the C tables, because every binding crate over `ksys`
/// (`netdev`, `ib`, ...) fills such tables the same way; use it as `ksys::op!` or import it
/// (`use ksys::op;`). A `const fn` cannot do it: the trampoline is a function item and only
/// coerces to the field's function-pointer type at the field itself.
///
/// ```ignore
/// ndo_open: op!(T::HAS_OPEN, Self::open),
/// ```
#[macro_export]
macro_rules! op {
    ($has:expr, $f:expr) => {
        if $has {
            ::core::option::Option::Some($f)
        } else {
            ::core::option::Option::None
        }
    };
}
