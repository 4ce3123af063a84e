// SPDX-License-Identifier: GPL-2.0
//! Address handles (mlx5_ib ah.c `create_ib_ah`): the RoCE destination of UD sends kept as
//! the 48-byte address vector (`struct mlx5_av`) that a UD send WQE carries in its datagram
//! segment. Kernel users (ib_mad's replies, the CM) post with it; for a process libmlx5
//! builds its own vector and gets only the destination MAC back. Also a connected QP's
//! address path (`mlx5_set_path`), which qp.rs fills from the same attributes.

use cx4_hw::{
    qp::{
        qpc_st,
        Ads, //
    },
    wqe::rdma::{
        Av,
        AV_GRH, //
    },
};
use ib::{
    qp_attr_mask as m,
    AhAttr,
    GidType,
    AH_GRH, //
};
use kernel::prelude::*;

/// RoCE v2 UDP source ports are drawn from 0xc000.. (`IB_ROCE_UDP_ENCAP_VALID_PORT_MIN`).
pub(crate) const ROCE_UDP_SPORT_MIN: u32 = 0xc000;

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

/// `MLX5_STAT_RATE_OFFSET`: `stat_rate` = `enum ib_rate` + 5.
const STAT_RATE_OFFSET: u8 = 5;

/// `rdma_calc_flow_label` and `rdma_flow_label_to_udp_sport`: the RoCE v2 UDP source port
/// of a connection, from the flow label or, without one, from the two QP numbers.
fn udp_sport(flow_label: u32, lqpn: u32, rqpn: u32) -> u32 {
    let fl = if flow_label != 0 {
        flow_label
    } else {
        let mut v = u64::from(lqpn) * u64::from(rqpn);
        v ^= v >> 20;
        v ^= v >> 40;
        (v & 0xf_ffff) as u32
    };
    flow_label_to_udp_sport(fl)
}

/// The `stat_rate` field of an `enum ib_rate` (`mlx5r_ib_rate`): 0 for the port's rate.
pub(crate) fn rate_field(rate: u8) -> Result<u8> {
    match rate {
        0 => Ok(0),
        r if r + STAT_RATE_OFFSET <= 0xf => Ok(r + STAT_RATE_OFFSET),
        _ => Err(EINVAL),
    }
}

/// `mlx5_set_path` for a RoCE address.
#[allow(clippy::too_many_arguments)]
pub(crate) fn set_path(
    p: &mut Ads,
    ah: &AhAttr,
    port: u32,
    st: u8,
    mask: u32,
    lqpn: u32,
    rqpn: u32,
    gid_tbl_len: u32,
) -> Result {
    if !ah.roce || ah.ah_flags & AH_GRH == 0 {
        return Err(EINVAL);
    }
    if u32::from(ah.sgid_index) >= gid_tbl_len {
        return Err(EINVAL);
    }
    let v2 = ah.sgid_type == Some(GidType::RoceV2);
    let d = ah.dmac;
    p.set_rmac_47_32(u32::from(d[0]) << 8 | u32::from(d[1]));
    p.set_rmac_31_0(u32::from_be_bytes([d[2], d[3], d[4], d[5]]));
    if (st == qpc_st::RC || st == qpc_st::UC || st == qpc_st::XRC) && v2 && mask & m::DEST_QPN != 0
    {
        p.set_udp_sport(udp_sport(ah.flow_label, lqpn, rqpn));
    }
    p.set_eth_prio((ah.sl & 7).into());
    if v2 {
        p.set_dscp((ah.traffic_class >> 2).into());
    }
    p.set_src_addr_index(ah.sgid_index.into());
    p.set_hop_limit(ah.hop_limit.into());
    p.set_tclass(ah.traffic_class.into());
    p.set_flow_label(ah.flow_label);
    p.rgid_rip_mut().copy_from_slice(&ah.dgid);
    p.set_stat_rate(rate_field(ah.static_rate)?.into());
    p.set_vhca_port_num(port);
    Ok(())
}
