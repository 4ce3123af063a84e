// SPDX-License-Identifier: GPL-2.0
//! Software counters of the Ethernet layer, per channel (en_stats.c's `sq`/`rq` stats):
//! written by the channel's datapath (xmit and NAPI), read by `ndo_get_stats64` and
//! `ethtool -S` without taking any lock.

use core::sync::atomic::{
    AtomicU64,
    Ordering, //
};

/// Declares the per-channel counters once: the struct, its ethtool names and its snapshot.
macro_rules! channel_stats {
    ($($field:ident: $name:literal, $doc:literal;)*) => {
        /// The counters of one channel.
        #[derive(Default)]
        pub(crate) struct ChannelStats {
            $(#[doc = $doc] pub(crate) $field: AtomicU64,)*
        }

        impl ChannelStats {
            /// The counter names in `ethtool -S` (prefixed with `ch<N>_` per channel, and
            /// summed without prefix).
            pub(crate) const NAMES: &'static [&'static str] = &[$($name,)*];

            /// The values, in [`Self::NAMES`] order.
            pub(crate) fn values(&self) -> [u64; Self::NAMES.len()] {
                [$(self.$field.load(Ordering::Relaxed),)*]
            }
        }
    };
}

channel_stats! {
    tx_packets: "tx_packets", "Packets sent (TSO packets count once per segment).";
    tx_bytes: "tx_bytes", "Bytes sent.";
    tx_tso_packets: "tx_tso_packets", "TSO (LSO) WQEs posted.";
    tx_tso_bytes: "tx_tso_bytes", "Payload bytes of TSO WQEs.";
    tx_csum_partial: "tx_csum_partial", "Packets with checksum offload.";
    tx_csum_partial_inner: "tx_csum_partial_inner", "Packets with inner checksum offload.";
    tx_csum_none: "tx_csum_none", "Packets without checksum offload.";
    tx_vlan_insert: "tx_added_vlan_packets", "Packets whose VLAN tag the device inserted.";
    tx_doorbells: "tx_doorbells", "Doorbells rung.";
    tx_stopped: "tx_queue_stopped", "Times the queue was stopped (ring full).";
    tx_wake: "tx_queue_wake", "Times the queue was woken.";
    tx_dropped: "tx_queue_dropped", "Packets dropped by the driver (mapping failed, queue gone).";
    tx_cqes: "tx_cqes", "Send completions.";
    tx_cqe_err: "tx_cqe_err", "Send error completions.";
    tx_recover: "tx_recover", "SQ recoveries after an error completion.";
    rx_packets: "rx_packets", "Packets received.";
    rx_bytes: "rx_bytes", "Bytes received.";
    rx_csum_unnecessary: "rx_csum_unnecessary", "Packets whose checksums the device verified.";
    rx_csum_unnecessary_inner: "rx_csum_unnecessary_inner", "Tunnelled packets verified inside.";
    rx_csum_none: "rx_csum_none", "Packets without checksum verdict.";
    rx_vlan_strip: "rx_removed_vlan_packets", "Packets whose VLAN tag the device stripped.";
    rx_copybreak: "rx_copybreak", "Small frames copied into a new skb, their page kept posted.";
    rx_lro_packets: "rx_lro_packets", "Packets the device merged from several TCP segments (LRO).";
    rx_lro_bytes: "rx_lro_bytes", "Bytes of the packets LRO merged.";
    rx_lro_err: "rx_lro_err", "Merged packets dropped: their headers were not TCP over IP.";
    rx_cqe_err: "rx_wqe_err", "Receive error completions.";
    rx_recover: "rx_recover", "RQ recoveries after an error completion.";
    rx_buff_alloc_err: "rx_buff_alloc_err", "Receive buffers that could not be allocated.";
    rx_dropped: "rx_dropped", "Frames dropped by the driver (bad length, no skb).";
    rx_xdp_drop: "rx_xdp_drop", "Frames XDP dropped (XDP_DROP, XDP_ABORTED, failed XDP_TX).";
    rx_xdp_redirect: "rx_xdp_redirect", "Frames XDP redirected (XDP_REDIRECT).";
    rx_xdp_tx_xmit: "rx_xdp_tx_xmit", "Frames an XDP program sent back out (XDP_TX).";
    rx_xdp_tx_full: "rx_xdp_tx_full", "XDP_TX frames dropped for want of room in the SQ.";
    rx_xdp_tx_err: "rx_xdp_tx_err", "XDP_TX frames dropped: they could not be sent.";
    rx_xsk_packets: "rx_xsk_packets", "Frames of an XSK RQ given to the stack (copied).";
    rx_xsk_bytes: "rx_xsk_bytes", "Bytes of the frames of an XSK RQ given to the stack.";
    rx_xsk_xdp_drop: "rx_xsk_xdp_drop", "XSK frames XDP dropped (XDP_DROP, XDP_ABORTED, failed XDP_TX).";
    rx_xsk_xdp_redirect: "rx_xsk_xdp_redirect", "XSK frames XDP redirected (to the socket).";
    rx_xsk_buff_alloc_err: "rx_xsk_buff_alloc_err", "Times the socket's fill ring was empty.";
    tx_xsk_xmit: "tx_xsk_xmit", "Frames sent from an AF_XDP socket's TX ring.";
    tx_xsk_full: "tx_xsk_full", "Times the XSK SQ was full.";
    tx_xsk_err: "tx_xsk_err", "XSK frames that could not be sent.";
    tx_xsk_cqes: "tx_xsk_cqes", "Completions of the XSK SQ.";
    tx_xsk_recover: "tx_xsk_recover", "XSK SQ recoveries after an error completion.";
    polls: "ch_poll", "NAPI polls.";
    arms: "ch_arm", "CQ re-arms (NAPI completed).";
    events: "ch_events", "Completion events (interrupts that scheduled NAPI).";
    tx_events: "ch_tx_events", "Completion events of the send CQ (what its DIM counts).";
    rx_events: "ch_rx_events", "Completion events of the receive CQ (what its DIM counts).";
    eq_rearm: "ch_eq_rearm", "Polls the event watch started: a second without a completion event.";
}

impl ChannelStats {
    /// Adds `n` to a counter.
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }
}
