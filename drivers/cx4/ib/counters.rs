// SPDX-License-Identifier: GPL-2.0
//! The RoCE port's hardware counters (mlx5_ib counters.c): what `rdma statistic` and
//! sysfs `ports/1/hw_counters/` show.
//!
//! One queue counter set belongs to the ib device; every QP names it at RST→INIT
//! (`counter_set_id`, as mlx5_ib's default per-port set), so the card counts the transport
//! events of all of them there. The congestion counters (CNPs sent and handled, ECN-marked
//! RoCE packets) are the card's, from `QUERY_CONG_STATISTICS` where the card allows it.

use cx4_hw::command;
use ib::StatDesc;
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// The counters, in the order [`read`] fills them; mlx5_ib's names.
pub(crate) const PORT_COUNTERS: &[StatDesc] = &[
    StatDesc::new(c"rx_write_requests"),
    StatDesc::new(c"rx_read_requests"),
    StatDesc::new(c"rx_atomic_requests"),
    StatDesc::new(c"out_of_buffer"),
    StatDesc::new(c"out_of_sequence"),
    StatDesc::new(c"duplicate_request"),
    StatDesc::new(c"rnr_nak_retry_err"),
    StatDesc::new(c"packet_seq_err"),
    StatDesc::new(c"implied_nak_seq_err"),
    StatDesc::new(c"local_ack_timeout_err"),
    StatDesc::new(c"rp_cnp_ignored"),
    StatDesc::new(c"rp_cnp_handled"),
    StatDesc::new(c"np_ecn_marked_roce_packets"),
    StatDesc::new(c"np_cnp_sent"),
];

/// The ib device's queue counter set (`ALLOC_Q_COUNTER`), freed on drop.
pub(crate) struct QCounter {
    mdev: Arc<Mdev>,
    id: u8,
}

impl QCounter {
    pub(crate) fn alloc(mdev: &Arc<Mdev>) -> Result<Self> {
        let msg = input::<command::AllocQCounter>(0)?;
        let out = mdev.cmdq.exec::<command::AllocQCounter>(&msg, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            // An 8-bit field.
            id: out.counter_set_id() as u8,
        })
    }

    /// The set's number, for the QPs' `counter_set_id`.
    pub(crate) fn id(&self) -> u8 {
        self.id
    }
}

impl Drop for QCounter {
    fn drop(&mut self) {
        let r = input::<command::DeallocQCounter>(0).and_then(|mut m| {
            m.set_counter_set_id(self.id.into());
            self.mdev
                .cmdq
                .exec::<command::DeallocQCounter>(&m, 0)
                .map(|_| ())
        });
        if let Err(e) = r {
            dev_warn!(
                self.mdev.dev.dev(),
                "DEALLOC_Q_COUNTER {}: {:?}\n",
                self.id,
                e
            );
        }
    }
}

/// Reads every counter of [`PORT_COUNTERS`] into `values` (as many as it has room for):
/// `QUERY_Q_COUNTER` of set `id`, then `QUERY_CONG_STATISTICS` if `cong` (the card's
/// `cc_query_allowed`), zeros otherwise.
pub(crate) fn read(mdev: &Mdev, id: u8, cong: bool, values: &mut [u64]) -> Result {
    let mut m = input::<command::QueryQCounter>(0)?;
    m.set_counter_set_id(id.into());
    let q = mdev.cmdq.exec::<command::QueryQCounter>(&m, 0)?;
    let mut all = [0u64; PORT_COUNTERS.len()];
    let basic = [
        q.rx_write_requests(),
        q.rx_read_requests(),
        q.rx_atomic_requests(),
        q.out_of_buffer(),
        q.out_of_sequence(),
        q.duplicate_request(),
        q.rnr_nak_retry_err(),
        q.packet_seq_err(),
        q.implied_nak_seq_err(),
        q.local_ack_timeout_err(),
    ];
    for (v, b) in all.iter_mut().zip(basic) {
        *v = b.into();
    }
    if cong {
        let m = input::<command::QueryCongStatistics>(0)?;
        let c = mdev.cmdq.exec::<command::QueryCongStatistics>(&m, 0)?;
        let wide = |hi: u32, lo: u32| (u64::from(hi) << 32) | u64::from(lo);
        all[basic.len()..].copy_from_slice(&[
            wide(c.rp_cnp_ignored_high(), c.rp_cnp_ignored_low()),
            wide(c.rp_cnp_handled_high(), c.rp_cnp_handled_low()),
            wide(
                c.np_ecn_marked_roce_packets_high(),
                c.np_ecn_marked_roce_packets_low(),
            ),
            wide(c.np_cnp_sent_high(), c.np_cnp_sent_low()),
        ]);
    }
    for (v, a) in values.iter_mut().zip(all) {
        *v = a;
    }
    Ok(())
}
