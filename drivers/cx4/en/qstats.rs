// SPDX-License-Identifier: GPL-2.0
//! Per-queue statistics over the netdev netlink family (`qstats-get`), as mlx5e's
//! `mlx5e_stat_ops` (en_main.c `mlx5e_get_queue_stats_rx`/`_tx`, `mlx5e_get_base_stats`):
//! queue `i` is channel `i` (one RQ and one SQ each); the base is what the channels past the
//! live count counted before a channel change took them away, so that base plus the live
//! queues equals the interface counters (`ndo_get_stats64` sums every channel the same way).

use core::sync::atomic::{
    AtomicU64,
    Ordering, //
};

use kernel::{
    prelude::*,
    sync::ArcBorrow, //
};

use netdev::{
    qstats::{
        QueueStatsOps,
        RxQueueStats,
        TxQueueStats, //
    },
    Device, //
};

use super::{
    netdev::EnPriv,
    stats::ChannelStats, //
};

/// cx4's `netdev_stat_ops`.
pub(crate) struct EnQueueStats;

/// A counter's value.
fn v(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// The receive statistics cx4 counts, of one channel.
fn rx_of(s: &ChannelStats) -> RxQueueStats {
    RxQueueStats {
        packets: Some(v(&s.rx_packets)),
        bytes: Some(v(&s.rx_bytes)),
        alloc_fail: Some(v(&s.rx_buff_alloc_err)),
        csum_unnecessary: Some(v(&s.rx_csum_unnecessary) + v(&s.rx_csum_unnecessary_inner)),
        csum_none: Some(v(&s.rx_csum_none)),
        hw_gro_packets: Some(v(&s.rx_lro_packets)),
        hw_gro_bytes: Some(v(&s.rx_lro_bytes)),
        ..Default::default()
    }
}

/// The send statistics cx4 counts, of one channel.
fn tx_of(s: &ChannelStats) -> TxQueueStats {
    TxQueueStats {
        packets: Some(v(&s.tx_packets)),
        bytes: Some(v(&s.tx_bytes)),
        csum_none: Some(v(&s.tx_csum_none)),
        needs_csum: Some(v(&s.tx_csum_partial) + v(&s.tx_csum_partial_inner)),
        hw_gso_packets: Some(v(&s.tx_tso_packets)),
        hw_gso_bytes: Some(v(&s.tx_tso_bytes)),
        stop: Some(v(&s.tx_stopped)),
        wake: Some(v(&s.tx_wake)),
        ..Default::default()
    }
}

#[vtable]
impl QueueStatsOps for EnQueueStats {
    type Data = kernel::sync::Arc<EnPriv>;

    fn rx_queue(_dev: &Device, data: ArcBorrow<'_, EnPriv>, queue: u32, s: &mut RxQueueStats) {
        if let Some(st) = data.stats(queue) {
            *s = rx_of(st);
        }
    }

    fn tx_queue(_dev: &Device, data: ArcBorrow<'_, EnPriv>, queue: u32, s: &mut TxQueueStats) {
        if let Some(st) = data.stats(queue) {
            *s = tx_of(st);
        }
    }

    fn base(
        dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        rx: &mut RxQueueStats,
        tx: &mut TxQueueStats,
    ) {
        // Zero for every statistic cx4 counts (they are right for the whole device), plus
        // what the channels no queue reports counted.
        let zero = ChannelStats::default();
        *rx = rx_of(&zero);
        *tx = tx_of(&zero);
        let (rx_live, tx_live) = (dev.real_num_rx_queues(), dev.real_num_tx_queues());
        for (i, st) in (0u32..).zip(data.all_stats()) {
            if i >= rx_live {
                rx.add(&rx_of(st));
            }
            if i >= tx_live {
                tx.add(&tx_of(st));
            }
        }
    }
}
