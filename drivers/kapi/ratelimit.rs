// SPDX-License-Identifier: GPL-2.0
//! Rate limiting of log messages: the kernel's `struct ratelimit_state` and `__ratelimit()`
//! (<linux/ratelimit.h>), what `dev_err_ratelimited()` and `printk_ratelimited()` use in C.
//!
//! A driver whose device can provoke a message at will (a failed command, an unexpected
//! event, a bad completion) must not let a broken or hostile device flood the log: it asks a
//! [`Ratelimit`] before printing. At most 10 messages pass per 5 s (the printk defaults,
//! `DEFAULT_RATELIMIT_BURST` and `_INTERVAL`); when a new interval begins after some were held
//! back, the kernel itself prints `<name>: N callbacks suppressed`.
//!
//! C keeps one state per call site in a static (`DEFINE_RATELIMIT_STATE`); its raw spinlock
//! cannot be built in a Rust `static` initialiser, so a Rust owner keeps a pinned state (one per
//! device, say) initialised at run time. Its upstream home would be `kernel::print`.

use core::marker::PhantomPinned;

use kernel::{
    bindings,
    prelude::*,
    str::CStr,
    types::Opaque, //
};

// The C shim in drivers/ksys/helpers.c (declared in drivers/ksys/helpers.h); the module links
// it in.
unsafe extern "C" {
    fn ksys_helper_ratelimit_init(rs: *mut bindings::ratelimit_state);
}

/// A rate limit for log messages (`struct ratelimit_state` with the printk defaults).
///
/// # Invariants
///
/// `state` was initialised by `ratelimit_state_init()` and has not moved since (pinned).
#[pin_data]
pub struct Ratelimit {
    #[pin]
    state: Opaque<bindings::ratelimit_state>,
    name: &'static CStr,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The state is only touched through `___ratelimit()`, which takes its raw spinlock
// (or gives up without touching it when the lock is contended); `name` is a static string.
unsafe impl Send for Ratelimit {}
// SAFETY: As above: concurrent `allow` calls serialise on the state's own lock.
unsafe impl Sync for Ratelimit {}

impl Ratelimit {
    /// A rate limit whose suppression reports name `name` (the C macros pass the calling
    /// function's name).
    pub fn new(name: &'static CStr) -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `slot` is valid for writes of a `ratelimit_state`; the shim initialises
            // all of it (memset, lock, interval, burst). INVARIANT: initialised here, pinned.
            state <- unsafe {
                Opaque::ffi_init(|slot: *mut bindings::ratelimit_state| {
                    ksys_helper_ratelimit_init(slot)
                })
            },
            name,
            _pin: PhantomPinned,
        })
    }

    /// Whether a message may be printed now (`__ratelimit()`); false while the burst of the
    /// current interval is used up. Any context, interrupts included.
    #[inline]
    pub fn allow(&self) -> bool {
        // SAFETY: `state` is an initialised, pinned state (type invariant); `name` is a
        // NUL-terminated static string, as `__ratelimit`'s function-name argument must be.
        unsafe { bindings::___ratelimit(self.state.get(), self.name.as_char_ptr()) != 0 }
    }
}
