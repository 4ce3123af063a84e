// SPDX-License-Identifier: GPL-2.0
//! The attributes of a QP modify (mlx5_ib qp.c): the PRM optional-parameter mask of the IB
//! attribute mask (`ib_mask_to_mlx5_opt`), and the record of what a modify set that query
//! reads back (mlx5_ib keeps it in the QP and the card's context).

use cx4_hw::qp::OptParam;
use ib::{
    qp_attr_mask as m,
    QpAttr, //
};

/// Records the attributes a modify set, for query.
pub(super) fn merge(s: &mut QpAttr, a: &QpAttr, mask: u32) {
    if mask & m::PATH_MTU != 0 {
        s.path_mtu = a.path_mtu;
    }
    if mask & m::QKEY != 0 {
        s.qkey = a.qkey;
    }
    if mask & m::DEST_QPN != 0 {
        s.dest_qp_num = a.dest_qp_num;
    }
    if mask & m::AV != 0 {
        s.ah_attr = a.ah_attr;
    }
    if mask & m::PKEY_INDEX != 0 {
        s.pkey_index = a.pkey_index;
    }
    if mask & m::MAX_QP_RD_ATOMIC != 0 {
        s.max_rd_atomic = a.max_rd_atomic;
    }
    if mask & m::MIN_RNR_TIMER != 0 {
        s.min_rnr_timer = a.min_rnr_timer;
    }
    if mask & m::TIMEOUT != 0 {
        s.timeout = a.timeout;
    }
    if mask & m::RETRY_CNT != 0 {
        s.retry_cnt = a.retry_cnt;
    }
    if mask & m::RNR_RETRY != 0 {
        s.rnr_retry = a.rnr_retry;
    }
}

/// `ib_mask_to_mlx5_opt`.
pub(super) fn opt_of(mask: u32) -> u32 {
    let mut o = OptParam::empty();
    let map: [(u32, OptParam); 12] = [
        (
            m::ACCESS_FLAGS,
            OptParam::RWE.union(OptParam::RRE).union(OptParam::RAE),
        ),
        (m::PKEY_INDEX, OptParam::PKEY_INDEX),
        (m::PORT, OptParam::PRI_PORT),
        (m::QKEY, OptParam::Q_KEY),
        (m::AV, OptParam::PRIMARY_ADDR_PATH.union(OptParam::PRI_PORT)),
        (m::TIMEOUT, OptParam::ACK_TIMEOUT),
        (m::RETRY_CNT, OptParam::RETRY_COUNT),
        (m::RNR_RETRY, OptParam::RNR_RETRY),
        (m::MAX_QP_RD_ATOMIC, OptParam::SRA_MAX),
        (m::ALT_PATH, OptParam::ALT_ADDR_PATH),
        (m::MIN_RNR_TIMER, OptParam::RNR_TIMEOUT),
        (
            m::MAX_DEST_RD_ATOMIC,
            OptParam::RRA_MAX
                .union(OptParam::RWE)
                .union(OptParam::RRE)
                .union(OptParam::RAE),
        ),
    ];
    for (bit, opt) in map {
        if mask & bit != 0 {
            o |= opt;
        }
    }
    if mask & m::PATH_MIG_STATE != 0 {
        o |= OptParam::PM_STATE;
    }
    o.bits()
}
