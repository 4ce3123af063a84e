// SPDX-License-Identifier: GPL-2.0
//! Per-queue statistics for the netdev netlink family (`struct netdev_stat_ops`,
//! <net/netdev_queues.h>): what `ynl --family netdev --dump qstats-get` and tools built on it
//! read, per queue and for the whole device.
//!
//! The stack asks for each live queue ([`QueueStatsOps::rx_queue`],
//! [`QueueStatsOps::tx_queue`]) and for the "base" ([`QueueStatsOps::base`]): what the device
//! counted outside the live queues (queues since removed by a channel change). The device's
//! totals are base plus every live queue, and only the statistics the base sets are reported
//! at device level. A driver sets the statistics it counts and leaves the others `None` (the
//! C structs are not zeroed: an unset statistic is left as the core initialised it, "not
//! collected").
//!
//! The callbacks run under rtnl or the instance lock, from process context, and may run
//! concurrently with the data path (they read its counters, they never stop it).

use core::marker::PhantomData;

use kernel::{
    build_error,
    error::VTABLE_DEFAULT_ERROR,
    prelude::*,
    types::ForeignOwnable, //
};

use ksys::op;

use crate::{
    registration::args,
    Device, //
};

/// The borrowed driver data the callbacks receive.
pub type DataRef<'a, T> = <<T as QueueStatsOps>::Data as ForeignOwnable>::Borrowed<'a>;

/// Declares one of the statistics structs once: the Rust struct (every field optional) and
/// its copy into the C struct (only the fields that are set).
macro_rules! queue_stats {
    ($(#[$meta:meta])* $name:ident => $c:ident { $($(#[$fdoc:meta])* $field:ident,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: Option<u64>,)*
        }

        impl $name {
            /// Adds the statistics `other` sets to those of `self` (one `self` leaves unset
            /// starts from zero); counters wrap as the C ones do.
            pub fn add(&mut self, other: &Self) {
                $(if let Some(v) = other.$field {
                    let s = self.$field.get_or_insert(0);
                    *s = s.wrapping_add(v);
                })*
            }

            /// Writes the statistics that are set into `c`, leaving the others as they are.
            fn write_to(&self, c: &mut ksys::$c) {
                $(if let Some(v) = self.$field {
                    c.$field = v;
                })*
            }
        }
    };
}

queue_stats! {
    /// The statistics of a receive queue (`struct netdev_queue_stats_rx`; the netdev.yaml
    /// spec defines each).
    RxQueueStats => netdev_queue_stats_rx {
        /// Bytes received (as `rx_bytes` of the interface counters).
        bytes,
        /// Packets received.
        packets,
        /// Receive buffers that could not be allocated.
        alloc_fail,
        /// Packets the device dropped.
        hw_drops,
        /// Packets the device dropped for lack of buffers.
        hw_drop_overruns,
        /// Packets with `CHECKSUM_COMPLETE`.
        csum_complete,
        /// Packets with `CHECKSUM_UNNECESSARY`.
        csum_unnecessary,
        /// Packets without a checksum verdict.
        csum_none,
        /// Packets whose checksum the device found wrong.
        csum_bad,
        /// Packets the device coalesced (hardware GRO / LRO).
        hw_gro_packets,
        /// Bytes of the coalesced packets.
        hw_gro_bytes,
        /// Wire packets that went into coalesced packets.
        hw_gro_wire_packets,
        /// Wire bytes that went into coalesced packets.
        hw_gro_wire_bytes,
        /// Packets the device dropped by rate limit.
        hw_drop_ratelimits,
    }
}

queue_stats! {
    /// The statistics of a send queue (`struct netdev_queue_stats_tx`).
    TxQueueStats => netdev_queue_stats_tx {
        /// Bytes sent.
        bytes,
        /// Packets sent (a GSO packet counts as the segments it became).
        packets,
        /// Packets the device dropped.
        hw_drops,
        /// Packets the device dropped because of an error.
        hw_drop_errors,
        /// Packets sent without checksum offload.
        csum_none,
        /// Packets the device checksummed.
        needs_csum,
        /// GSO packets the device segmented.
        hw_gso_packets,
        /// Bytes of those GSO packets.
        hw_gso_bytes,
        /// Wire packets the device made from GSO packets.
        hw_gso_wire_packets,
        /// Wire bytes the device made from GSO packets.
        hw_gso_wire_bytes,
        /// Packets the device dropped by rate limit.
        hw_drop_ratelimits,
        /// Times the queue was stopped.
        stop,
        /// Times the queue was woken.
        wake,
    }
}

/// A driver's per-queue statistics (`struct netdev_stat_ops`). Implementing one callback
/// implies the three (the stack requires them all).
#[vtable]
pub trait QueueStatsOps: Sized + 'static {
    /// The driver data: that of the device's [`crate::DeviceOps`].
    type Data: ForeignOwnable + Send + Sync;

    /// `get_queue_stats_rx`: the statistics of live receive queue `queue`.
    fn rx_queue(_dev: &Device, _data: DataRef<'_, Self>, _queue: u32, _s: &mut RxQueueStats) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_queue_stats_tx`: the statistics of live send queue `queue`.
    fn tx_queue(_dev: &Device, _data: DataRef<'_, Self>, _queue: u32, _s: &mut TxQueueStats) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_base_stats`: what the device counted outside its live queues; sets (to zero if
    /// need be) every statistic that is right for the whole device.
    fn base(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _rx: &mut RxQueueStats,
        _tx: &mut TxQueueStats,
    ) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// The table of `S`, for as long as the module is loaded.
pub(crate) const fn table<S: QueueStatsOps>() -> &'static ksys::netdev_stat_ops {
    &Table::<S>::OPS
}

struct Table<S>(PhantomData<S>);

impl<S: QueueStatsOps> Table<S> {
    const OPS: ksys::netdev_stat_ops = {
        assert!(
            S::HAS_RX_QUEUE && S::HAS_TX_QUEUE && S::HAS_BASE,
            "QueueStatsOps: implement rx_queue, tx_queue and base together"
        );
        ksys::netdev_stat_ops {
            get_queue_stats_rx: op!(S::HAS_RX_QUEUE, Self::rx_queue),
            get_queue_stats_tx: op!(S::HAS_TX_QUEUE, Self::tx_queue),
            get_base_stats: op!(S::HAS_BASE, Self::base),
        }
    };

    /// # Safety
    ///
    /// The netdev core calls it (rtnl or the instance lock held) for a registered device with
    /// this table, a live queue index and a valid `stats`.
    unsafe extern "C" fn rx_queue(
        dev: *mut ksys::net_device,
        idx: c_int,
        stats: *mut ksys::netdev_queue_stats_rx,
    ) {
        // SAFETY: The function's contract: a device of a `Registration` whose data is
        // `S::Data` (`Registration::set_queue_stats_ops` requires it).
        let (dev, data) = unsafe { args::<S::Data>(dev) };
        let mut s = RxQueueStats::default();
        S::rx_queue(dev, data, idx.unsigned_abs(), &mut s);
        // SAFETY: A valid struct only this call writes.
        s.write_to(unsafe { &mut *stats });
    }

    /// # Safety
    ///
    /// As for `rx_queue`.
    unsafe extern "C" fn tx_queue(
        dev: *mut ksys::net_device,
        idx: c_int,
        stats: *mut ksys::netdev_queue_stats_tx,
    ) {
        // SAFETY: As in `rx_queue`.
        let (dev, data) = unsafe { args::<S::Data>(dev) };
        let mut s = TxQueueStats::default();
        S::tx_queue(dev, data, idx.unsigned_abs(), &mut s);
        // SAFETY: A valid struct only this call writes.
        s.write_to(unsafe { &mut *stats });
    }

    /// # Safety
    ///
    /// As for `rx_queue`, with two valid structs.
    unsafe extern "C" fn base(
        dev: *mut ksys::net_device,
        rx: *mut ksys::netdev_queue_stats_rx,
        tx: *mut ksys::netdev_queue_stats_tx,
    ) {
        // SAFETY: As in `rx_queue`.
        let (dev, data) = unsafe { args::<S::Data>(dev) };
        let (mut r, mut t) = (RxQueueStats::default(), TxQueueStats::default());
        S::base(dev, data, &mut r, &mut t);
        // SAFETY: Two valid, distinct structs only this call writes.
        unsafe {
            r.write_to(&mut *rx);
            t.write_to(&mut *tx);
        }
    }
}
