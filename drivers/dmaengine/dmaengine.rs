// SPDX-License-Identifier: GPL-2.0
//! DMA engine providers (`include/linux/dmaengine.h`, `drivers/dma/dmaengine.c`): a device
//! whose channel takes memcpy, XOR, P+Q (RAID-6) and validation requests from async_tx (md
//! raid456), dmatest and other dmaengine clients. The 7.2 `kernel` crate has no dmaengine
//! abstraction; this crate is written as a `kernel::dma::engine` module could be proposed.
//!
//! - [`Registration`]: a `struct dma_device` with one memory-to-memory channel, registered
//!   with `dma_async_device_register()` for a bound device; dropping it unregisters it.
//! - [`Operations`]: the provider, implemented by the driver: it turns a client's request into
//!   its own descriptor ([`Operations::prep`]) and moves submitted descriptors to the hardware
//!   and their completions back ([`Operations::process`]).
//!
//! The abstraction does what every provider repeats (and what `drivers/dma/dmaengine.h`, a
//! header private to drivers/dma, does for them there): cookies, `tx_submit`, `tx_status`,
//! completion callbacks in cookie order, unmapping (`dmaengine_unmap_put`), dependencies
//! (`dma_run_dependencies`) and freeing descriptors once their client has acked them.
//!
//! # Contexts
//!
//! - [`Operations::prep`] runs in the client's context, which may be atomic: it must not
//!   sleep. It only sees requests whose addresses are mappings: a request naming
//!   `DMA_MAPPING_ERROR` (a client's failed `dma_map_page()`, which async_tx never checks)
//!   gets a descriptor that never reaches the provider and ends aborted, in its turn; the
//!   device never sees the address. Its descriptor is allocated with `GFP_NOWAIT`; `Err`
//!   (or a failed allocation) returns NULL to the client, which async_tx takes as "busy": it
//!   calls `issue_pending` and prepares again, *forever*. So a provider must refuse only for want of resources
//!   that completions give back, never for a request its advertised caps allow.
//! - [`Operations::process`] runs with the channel lock held and interrupts disabled, from
//!   `device_issue_pending` and from the channel's bottom-half work item, which
//!   [`ChanRef::kick`] queues (e.g. from the device's completion interrupt) and
//!   [`ChanRef::kick_after`] queues later (e.g. to retry when the device was busy and no
//!   completion will come to kick it). It must not sleep.
//! - Client callbacks run from the bottom-half work item (softirq context, as a provider's
//!   tasklet would), without the channel lock, in cookie order: a descriptor finished by
//!   `process` waits for every earlier one.
//!
//! # Lifetimes
//!
//! The `dma_device`, its channel, the provider `T` and the descriptors live in one reference
//! counted allocation. dmaengine holds a reference from registration until its
//! `device_release` callback (after `dma_async_device_unregister()` and after the last client
//! has put the channel: unbinding with async_tx loaded), queued work items hold one while
//! queued, and so do the [`ChanRef`]s a provider gives its in-flight hardware requests. The
//! provider must not store a [`ChanRef`] in `T` itself (a cycle: never freed).
//! dmaengine takes a reference on the bound driver's module for each client of the channel
//! (`dma_chan_get`), so the module cannot be unloaded while the channel is in use.
//!
//! # Files
//!
//! - `dmaengine.rs` (this file): [`Caps`], the [`Operations`] a provider implements.
//! - `request.rs`: what a client asks ([`Request`], [`Kind`]) and how a descriptor ends
//!   ([`Status`]).
//! - `desc.rs`: descriptors (the C descriptor and the provider's part in one box), their
//!   lists, and what [`Operations::process`] sees of them ([`Active`], [`Entry`],
//!   [`Finisher`]).
//! - `chan.rs`: the device, its channel and the provider in one allocation, the channel's
//!   state under its lock, the bottom half that calls clients back, and [`ChanRef`].
//! - `prep.rs`: the `device_prep_dma_*` callbacks: a client's request into a descriptor.
//! - `callbacks.rs`: the other C callbacks: `tx_submit`, `tx_status`, `issue_pending`, the
//!   channel's resources and `device_release`.
//! - `registration.rs`: [`Registration`], setting up and registering the `dma_device`.

use kernel::prelude::*;

mod callbacks;
mod chan;
mod desc;
mod prep;
mod registration;
mod request;

pub use chan::ChanRef;
pub use desc::{
    Active,
    Entry,
    Finisher, //
};
pub use registration::Registration;
pub use request::{
    DmaAddr,
    Kind,
    Request,
    Status,
    MAX_SRCS,
    SUM_CHECK_P,
    SUM_CHECK_Q, //
};

/// The prefix of this crate's messages (`pr_*!`), as `module!` defines it for a module.
const __LOG_PREFIX: &[u8] = b"dmaengine\0";

/// `DMA_MIN_COOKIE`: the first cookie (`drivers/dma/dmaengine.h`).
const MIN_COOKIE: i32 = 1;

/// What the channel offers (`cap_mask`, `max_xor`, `max_pq`, alignments).
#[derive(Clone, Copy, Debug, Default)]
pub struct Caps {
    /// `DMA_INTERRUPT`.
    pub interrupt: bool,
    /// `DMA_MEMCPY`.
    pub memcpy: bool,
    /// `DMA_XOR`, with up to `max_xor` sources.
    pub xor: bool,
    /// `DMA_XOR_VAL`.
    pub xor_val: bool,
    /// `DMA_PQ`, with up to `max_pq` sources.
    pub pq: bool,
    /// `DMA_PQ_VAL`.
    pub pq_val: bool,
    /// Most XOR sources (at most [`MAX_SRCS`]).
    pub max_xor: u16,
    /// Most P+Q sources (at most [`MAX_SRCS`]).
    pub max_pq: u16,
    /// `DMA_HAS_PQ_CONTINUE`: the provider takes `DMA_PREP_CONTINUE` itself (the old P and Q
    /// as two more sources), so async_tx does not append them as sources of its own.
    pub pq_continue: bool,
    /// Addresses and lengths are multiples of `1 << align_log2` bytes (all operations).
    pub align_log2: u8,
}

impl Caps {
    /// Whether async_tx will pick the channel in the test kernel's configuration (no channel
    /// switching): only with all six operations (`device_has_all_tx_types`).
    pub fn async_tx_usable(&self) -> bool {
        self.interrupt && self.memcpy && self.xor && self.xor_val && self.pq && self.pq_val
    }
}

/// A DMA engine provider's operations; see the module documentation for their contexts.
pub trait Operations: Send + Sync + Sized + 'static {
    /// The provider's part of a descriptor.
    type Desc: Send;

    /// Prepares a descriptor for `req` (must not sleep). `Err` returns NULL to the client.
    fn prep(&self, req: &Request<'_>) -> Result<Self::Desc>;

    /// Moves work: starts submitted descriptors on the hardware, takes in the hardware's
    /// completions and [`Entry::finish`]es the descriptors they end. `active` holds every
    /// submitted and not yet completed descriptor, in cookie order.
    fn process(&self, chan: &ChanRef<Self>, active: &mut Active<'_, Self>);

    /// The channel's first client arrives (process context).
    fn alloc_chan_resources(&self) -> Result {
        Ok(())
    }

    /// The channel's last client has left (process context).
    fn free_chan_resources(&self) {}
}
