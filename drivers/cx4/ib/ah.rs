// SPDX-License-Identifier: GPL-2.0
//! Address handles (mlx5_ib ah.c `create_ib_ah`): the RoCE destination of UD sends kept as
//! the 48-byte address vector (`struct mlx5_av`) that a UD send WQE carries in its datagram
//! segment. Kernel users (ib_mad's replies, the CM) post with it; for a process libmlx5
//! builds its own vector and gets only the destination MAC back.

use cx4_hw::wqe::rdma::{
    Av,
    AV_GRH, //
};
use ib::{
    AhAttr,
    GidType, //
};
use kernel::prelude::*;

use crate::ib::qp::{
    rate_field,
    ROCE_UDP_SPORT_MIN, //
};

/// `MLX5_ECN_ENABLED`: RoCE v2 sends from an address handle are ECN-capable.
const ECN_ENABLED: u32 = 1 << 1;

/// An address handle.
pub(crate) struct IbAh {
    av: Av,
}

impl IbAh {
    /// The address vector of a RoCE destination (`create_ib_ah`); `EINVAL` without a GRH or
    /// with a source GID index beyond the table.
    pub(crate) fn new(attr: &AhAttr, gid_tbl_len: u32) -> Result<Self> {
        if !attr.roce || !attr.has_grh() || u32::from(attr.sgid_index) >= gid_tbl_len {
            return Err(EINVAL);
        }
        let mut av = Av::new();
        av.rgid_mut().copy_from_slice(&attr.dgid);
        av.set_grh_gid_fl(
            (attr.flow_label & 0xf_ffff) | AV_GRH | (u32::from(attr.sgid_index) << 20),
        );
        av.set_hop_limit(attr.hop_limit.into());
        let v2 = attr.sgid_type == Some(GidType::RoceV2);
        let mut tclass = u32::from(attr.traffic_class);
        if v2 {
            tclass |= ECN_ENABLED;
        }
        av.set_tclass(tclass);
        av.set_stat_rate_sl(
            (u32::from(rate_field(attr.static_rate)?) << 4) | (u32::from(attr.sl & 7) << 1),
        );
        av.rmac_mut().copy_from_slice(&attr.dmac);
        // mlx5_ah_get_udp_sport: from the flow label on RoCE v2, else the port's minimum.
        av.set_udp_sport(if v2 && attr.flow_label != 0 {
            flow_label_to_udp_sport(attr.flow_label)
        } else {
            ROCE_UDP_SPORT_MIN
        });
        Ok(Self { av })
    }

    /// The vector, for a UD send WQE (the poster sets the destination QP and Q_Key).
    pub(crate) fn av(&self) -> &Av {
        &self.av
    }
}

/// `rdma_flow_label_to_udp_sport`.
pub(crate) fn flow_label_to_udp_sport(fl: u32) -> u32 {
    let low = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
    low | ROCE_UDP_SPORT_MIN
}
