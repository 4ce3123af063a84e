// SPDX-License-Identifier: GPL-2.0
//! Dynamic interrupt moderation (`include/linux/dim.h`, `lib/dim/net_dim.c`): the kernel's
//! algorithm that watches a queue's packet, byte and interrupt rates and moves its CQ
//! moderation along a table of profiles (`ethtool -C adaptive-rx/adaptive-tx on`).
//!
//! The queue's NAPI poll feeds a [`Dim`] its counters ([`Dim::sample`]); when the algorithm
//! picks another profile it schedules a work item, which calls [`DimHandler::apply`] in
//! process context with the profile's moderation (a driver changes its CQ there: a firmware
//! command may sleep) and then lets the algorithm measure again.
//!
//! # Contexts
//!
//! [`Dim::sample`] from the queue's NAPI poll (softirq, never concurrently: it takes
//! `Pin<&mut Dim>`); [`DimHandler::apply`] in a work item (process context, may sleep);
//! dropping a [`Dim`] waits for a running `apply` (process context, not from `apply`).

use core::marker::PhantomPinned;

use kernel::{
    prelude::*,
    types::Opaque, //
};

/// The direction of a queue: the algorithm's profile tables differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimDir {
    /// A receive queue (`net_dim_get_rx_moderation()`).
    Rx,
    /// A send queue (`net_dim_get_tx_moderation()`).
    Tx,
}

/// When the CQ's moderation period starts (`enum dim_cq_period_mode`): the profiles differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimPeriodMode {
    /// From the event (interrupt) that armed it (`DIM_CQ_PERIOD_MODE_START_FROM_EQE`).
    FromEqe,
    /// From each completion, which restarts it (`DIM_CQ_PERIOD_MODE_START_FROM_CQE`).
    FromCqe,
}

/// A moderation the algorithm chose: hold a completion's interrupt for at most `usecs`
/// microseconds or `pkts` completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimModeration {
    /// Microseconds.
    pub usecs: u16,
    /// Completions.
    pub pkts: u16,
}

impl DimPeriodMode {
    fn raw(self) -> u8 {
        match self {
            Self::FromEqe => 0,
            Self::FromCqe => 1,
        }
    }
}

/// The moderation a queue starts with under DIM: the algorithm's default profile
/// (`net_dim_get_def_rx_moderation()`, `net_dim_get_def_tx_moderation()`).
#[inline]
pub fn default_moderation(dir: DimDir, mode: DimPeriodMode) -> DimModeration {
    // SAFETY: Table lookups; any period mode below `DIM_CQ_PERIOD_NUM_MODES` is valid.
    let m = unsafe {
        match dir {
            DimDir::Rx => ksys::net_dim_get_def_rx_moderation(mode.raw()),
            DimDir::Tx => ksys::net_dim_get_def_tx_moderation(mode.raw()),
        }
    };
    DimModeration {
        usecs: m.usec,
        pkts: m.pkts,
    }
}

/// What a [`Dim`] does with a moderation the algorithm chose.
pub trait DimHandler: Send + Sync + 'static {
    /// Applies `m` to the queue's CQ. Process context (a work item); may sleep.
    fn apply(&self, m: DimModeration);
}

/// The DIM state of one queue, pinned (its work item points into it).
///
/// # Invariants
///
/// `raw` was initialised by `dim_init` with [`Dim::work`] for `H` as its work function; the
/// work is cancelled (and waited for) before the memory goes.
#[repr(C)]
#[pin_data(PinnedDrop)]
pub struct Dim<H: DimHandler> {
    // First, so a pointer to `raw` is a pointer to the `Dim` (`repr(C)`; `Opaque` is
    // `repr(transparent)`).
    #[pin]
    raw: Opaque<ksys::dim>,
    dir: DimDir,
    handler: H,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The C state is touched by the one sampler (`Pin<&mut Self>`) and the work item,
// as in C drivers; `H` is `Send + Sync`.
unsafe impl<H: DimHandler> Send for Dim<H> {}
// SAFETY: `&Dim` gives nothing but the handler (`Sync`).
unsafe impl<H: DimHandler> Sync for Dim<H> {}

impl<H: DimHandler> Dim<H> {
    /// A DIM state for a `dir` queue whose CQ counts its period as `mode` says, starting to
    /// measure; `handler` applies its decisions.
    #[inline]
    pub fn new(dir: DimDir, mode: DimPeriodMode, handler: H) -> impl PinInit<Self> {
        let mode = mode.raw();
        pin_init!(Self {
            // SAFETY: `slot` is valid for writes; `dim_init` zeroes it and initialises its
            // work item, whose function finds the `Dim` from it (see `work`).
            raw <- unsafe {
                Opaque::ffi_init(move |slot: *mut ksys::dim| {
                    ksys::dim_init(slot, Some(Self::work), mode)
                })
            },
            dir,
            handler,
            _pin: PhantomPinned,
        })
    }

    /// Feeds the algorithm the queue's counters (running totals; `events`, the CQ's
    /// interrupts, wraps at 16 bits). From the queue's NAPI poll.
    #[inline]
    pub fn sample(self: Pin<&mut Self>, events: u16, packets: u64, bytes: u64) {
        // SAFETY: The state is initialised (type invariant); one sampler at a time (`&mut`).
        // The work item reads the profile and restarts the measure concurrently, as in C.
        unsafe { ksys::dim_sample(self.raw.get(), events, packets, bytes) };
    }

    /// The handler.
    #[inline]
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// The work function: applies the chosen profile, then measures again.
    ///
    /// # Safety
    ///
    /// `work` is the work item of a live `Dim<H>` (the work is cancelled before it goes).
    unsafe extern "C" fn work(work: *mut kernel::bindings::work_struct) {
        // SAFETY: `work` is inside a `ksys::dim`, itself the first field of a `Dim<H>`
        // (`repr(C)`), alive while its work runs (the function's contract).
        let (raw, this) = unsafe {
            let raw = ksys::dim_of_work(work.cast());
            (raw, &*raw.cast::<Self>().cast_const())
        };
        // SAFETY: `raw` is the live state; reading its mode and profile races with nothing
        // (the sampler does not change them while a decision waits for this work).
        let m = unsafe { ksys::dim_moderation(raw, this.dir == DimDir::Tx) };
        this.handler.apply(DimModeration {
            usecs: m.usec,
            pkts: m.pkts,
        });
        // SAFETY: As above.
        unsafe { ksys::dim_measure_again(raw) };
    }
}

#[pinned_drop]
impl<H: DimHandler> PinnedDrop for Dim<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The state is initialised; after this no work item refers to it.
        unsafe { ksys::dim_cancel(self.raw.get()) };
    }
}
