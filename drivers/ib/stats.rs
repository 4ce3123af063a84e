// SPDX-License-Identifier: GPL-2.0
//! Hardware counters of a port (`struct rdma_stat_desc`, `struct rdma_hw_stats`): what
//! `rdma statistic` and sysfs `ports/N/hw_counters/` show.
//!
//! The driver names its counters once, in a constant table of [`StatDesc`]
//! ([`crate::IbDriver::PORT_COUNTERS`]); the core allocates the values array from it
//! (`alloc_hw_port_stats`) and asks the driver to fill it
//! ([`crate::IbDriver::port_counters`]) at most every [`LIFESPAN_MS`].

use kernel::prelude::*;

/// How old (ms) the core lets the values get before it asks the driver again
/// (`RDMA_HW_STATS_DEFAULT_LIFESPAN`).
pub(crate) const LIFESPAN_MS: u32 = 10;

/// The name of one hardware counter (`struct rdma_stat_desc`), for a `const` table.
#[repr(transparent)]
pub struct StatDesc(ksys::rdma_stat_desc);

// SAFETY: The descriptor points only to a `'static` string and is never written after its
// construction: sharing it between threads is sharing immutable data.
unsafe impl Sync for StatDesc {}

impl StatDesc {
    /// A counter called `name` (the sysfs file name and the `rdma statistic` key).
    pub const fn new(name: &'static CStr) -> Self {
        Self(ksys::rdma_stat_desc {
            name: kernel::str::as_char_ptr_in_const_context(name),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }

    /// The table as the core takes it: `descs` of `rdma_alloc_hw_stats_struct()`.
    pub(crate) fn as_raw(table: &'static [StatDesc]) -> *const ksys::rdma_stat_desc {
        // `repr(transparent)`: a `StatDesc` slice is an array of `rdma_stat_desc`.
        table.as_ptr().cast()
    }
}
