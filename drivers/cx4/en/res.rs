// SPDX-License-Identifier: GPL-2.0
//! Per-function Ethernet resources (en_common.c `mlx5e_create_mdev_resources`): the Ethernet
//! layer's protection domain, transport domain, physical-address mkey (whose key goes into
//! every data segment) and the UAR page the SQ doorbells are written to, all core objects
//! (pd.rs, mkey.rs, uar.rs); and what the rings need to know of
//! the NIC vport (vport.c): the permanent MAC, the minimum inline mode
//! (`mlx5_query_min_inline`), the vport MTU and state.
//!
//! Each object is its own owner type that frees itself in `Drop`; [`EnRes`] holds them in
//! reverse creation order, so a partly created set unwinds like a whole one.

use cx4_hw::{
    caps::net::inline_mode as cap_inline_mode,
    command,
    vport::vport_state,
    wq::inline_mode, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};
use netdev::dim::DimPeriodMode;

use crate::en::tunnel::{
    TunnelCaps,
    MAX_VXLAN_PORTS, //
};
use crate::{
    caps::Caps,
    cmd::input,
    mdev::Mdev,
    mkey::Mkey,
    pd::{
        Pd,
        TransportDomain, //
    },
    uar::UarPage, //
};

/// The Ethernet capabilities the rings and steering objects depend on, read once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EnCaps {
    /// ETH `wqe_inline_mode` ([`cap_inline_mode`]).
    pub(crate) wqe_inline_mode: u8,
    /// ETH `vlan_cap`: the RQ can strip VLAN tags.
    pub(crate) vlan_strip: bool,
    /// ETH `csum_cap`.
    pub(crate) csum: bool,
    /// ETH `max_lso_cap` (log2 of the largest LSO payload).
    pub(crate) log_max_lso: u8,
    /// ETH `swp`: SQs may use the software parser offsets.
    pub(crate) swp: bool,
    /// ETH `rss_ind_tbl_cap`.
    pub(crate) rss_ind_tbl_cap: u8,
    /// GENERAL `log_max_rqt_size`.
    pub(crate) log_max_rqt_size: u8,
    /// GENERAL `log_max_wq_sz`.
    pub(crate) log_max_wq_sz: u8,
    /// GENERAL `max_wqe_sz_rq` in bytes.
    pub(crate) max_wqe_sz_rq: u32,
    /// Stateless tunnel offloads.
    pub(crate) tunnels: TunnelCaps,
    /// GENERAL `cq_moderation`: CQ periods and counts can be set.
    pub(crate) cq_moderation: bool,
    /// GENERAL `cq_period_mode_modify`: MODIFY_CQ can change the period mode (mlx5e offers DIM
    /// only with it).
    pub(crate) cq_period_mode_modify: bool,
    /// GENERAL `cq_period_start_from_cqe`: a CQ's period can restart at each completion.
    pub(crate) cq_period_from_cqe: bool,
    /// ETH `lro_cap`: TIRs can merge TCP segments.
    pub(crate) lro: bool,
    /// ETH `lro_timer_supported_periods` (µs).
    pub(crate) lro_periods: [u32; LRO_PERIODS],
    /// NIC RX flow tables chain as mlx5_core's `FS_CHAINING_CAPS` asks (`flow_modify_en`,
    /// `modify_root`, `identified_miss_table_mode`, `flow_table_modify`): mlx5e then has its
    /// ethtool priorities and offers NTUPLE, and so does cx4 (the ethtool table misses on to
    /// the L2 table).
    pub(crate) ntuple: bool,
}

impl EnCaps {
    /// Whether the channels may adapt their CQ moderation (DIM): `cq_moderation` and
    /// `cq_period_mode_modify`, as mlx5e asks.
    pub(crate) fn dim(&self) -> bool {
        self.cq_moderation && self.cq_period_mode_modify
    }

    /// The period mode of the receive CQs: from each completion where the device offers it
    /// (and MODIFY_CQ can set it), as mlx5e; else from the event. Send CQs always count from
    /// the event (mlx5e's `tx_moder_use_cqe_mode` is false).
    pub(crate) fn rx_period_mode(&self) -> DimPeriodMode {
        if self.cq_period_from_cqe && self.cq_period_mode_modify {
            DimPeriodMode::FromCqe
        } else {
            DimPeriodMode::FromEqe
        }
    }
}

/// The number of `lro_timer_supported_periods`.
pub(crate) const LRO_PERIODS: usize = 4;

impl EnCaps {
    /// Reads the Ethernet capabilities; `ENODEV` if the device has no Ethernet offloads.
    pub(crate) fn from_caps(caps: &Caps) -> Result<Self> {
        let eth = caps.eth().ok_or(ENODEV)?;
        let gen = caps.gen();
        Ok(Self {
            wqe_inline_mode: eth.wqe_inline_mode() as u8,
            vlan_strip: eth.vlan_cap() != 0,
            csum: eth.csum_cap() != 0,
            log_max_lso: eth.max_lso_cap() as u8,
            swp: eth.swp() != 0,
            rss_ind_tbl_cap: eth.rss_ind_tbl_cap() as u8,
            log_max_rqt_size: gen.log_max_rqt_size() as u8,
            log_max_wq_sz: gen.log_max_wq_sz() as u8,
            max_wqe_sz_rq: gen.max_wqe_sz_rq(),
            cq_moderation: gen.cq_moderation() != 0,
            cq_period_mode_modify: gen.cq_period_mode_modify() != 0,
            cq_period_from_cqe: gen.cq_period_start_from_cqe() != 0,
            lro: eth.lro_cap() != 0,
            lro_periods: core::array::from_fn(|i| eth.lro_timer_supported_periods(i).unwrap_or(0)),
            ntuple: caps.flow_nic_rx().is_some_and(|f| {
                f.flow_modify_en() != 0
                    && f.modify_root() != 0
                    && f.identified_miss_table_mode() != 0
                    && f.flow_table_modify() != 0
            }),
            tunnels: TunnelCaps {
                vxlan: eth.tunnel_stateless_vxlan() != 0,
                gre: eth.tunnel_stateless_gre() != 0,
                geneve: eth.swp() != 0 && eth.swp_csum() != 0 && eth.swp_lso() != 0,
                max_vxlan_ports: match eth.max_vxlan_udp_ports() {
                    0 => 4,
                    n => (n as usize).min(MAX_VXLAN_PORTS),
                },
            },
        })
    }
}

/// The per-function Ethernet resources. Dropping it frees them (UAR, mkey, transport domain,
/// PD, in that order).
pub(crate) struct EnRes {
    // Field order is drop order: the reverse of creation.
    uar: UarPage,
    mkey: Mkey,
    td: TransportDomain,
    pd: Pd,
    mdev: Arc<Mdev>,
    caps: EnCaps,
    mac: [u8; 6],
    min_inline: u8,
}

impl EnRes {
    /// Creates the resources and reads the MAC and minimum inline mode.
    pub(crate) fn create(mdev: &Arc<Mdev>, caps: &Caps) -> Result<Self> {
        let caps = EnCaps::from_caps(caps)?;
        let pd = Pd::alloc(mdev)?;
        let td = TransportDomain::alloc(mdev)?;
        let mkey = Mkey::create_pa(mdev, pd.pdn())?;
        let uar = UarPage::alloc(mdev)?;
        let mac = query_permanent_mac(mdev)?;
        // en_main.c mlx5e_build_nic_params: `tx_min_inline_mode` as the device reports it.
        let min_inline = query_min_inline(mdev, &caps)?;
        Ok(Self {
            uar,
            mkey,
            td,
            pd,
            mdev: mdev.clone(),
            caps,
            mac,
            min_inline,
        })
    }

    /// The shared device state.
    pub(crate) fn mdev(&self) -> &Arc<Mdev> {
        &self.mdev
    }

    /// The Ethernet capabilities.
    pub(crate) fn caps(&self) -> &EnCaps {
        &self.caps
    }

    /// The PD number.
    pub(crate) fn pdn(&self) -> u32 {
        self.pd.pdn()
    }

    /// The transport domain number.
    pub(crate) fn tdn(&self) -> u32 {
        self.td.tdn()
    }

    /// The lkey of data segments.
    pub(crate) fn mkey(&self) -> u32 {
        self.mkey.key()
    }

    /// The UAR page of SQ doorbells (and of CQ arm doorbells, if the caller wishes).
    pub(crate) fn uar(&self) -> u32 {
        self.uar.index()
    }

    /// The permanent MAC address of the port.
    pub(crate) fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// The minimum inline mode of SQs ([`inline_mode`]): which headers every send WQE must
    /// carry inline (L2: the Ethernet header and a VLAN tag if any; a WQE that inserts a VLAN
    /// tag needs at least L2 whatever this says, en_tx.c `mlx5e_tx_wqe_inline_mode`).
    pub(crate) fn min_inline(&self) -> u8 {
        self.min_inline
    }

    /// The `sqc.min_wqe_inline_mode` to create an SQ of minimum inline mode `mode` with: only
    /// when the capability says the vport context decides (en_main.c `mlx5e_create_sq`),
    /// else 0.
    pub(crate) fn sq_min_inline_field(&self, mode: u8) -> u8 {
        if self.caps.wqe_inline_mode == cap_inline_mode::VPORT_CONTEXT {
            mode
        } else {
            0
        }
    }
}

fn query_nic_vport(mdev: &Mdev) -> Result<crate::msg::Msg<cx4_hw::vport::QueryNicVportContextOut>> {
    let m = input::<command::QueryNicVportContext>(0)?;
    mdev.cmdq.exec::<command::QueryNicVportContext>(&m, 0)
}

/// The port's permanent MAC address (vport.c `mlx5_query_nic_vport_mac_address`).
pub(crate) fn query_permanent_mac(mdev: &Mdev) -> Result<[u8; 6]> {
    Ok(query_nic_vport(mdev)?
        .nic_vport_context()
        .permanent_address()
        .mac())
}

/// The minimum inline mode (`mlx5_query_min_inline`): from the vport context when the
/// capability says so (falling back to L2 if the query fails), L2, or none.
pub(crate) fn query_min_inline(mdev: &Mdev, caps: &EnCaps) -> Result<u8> {
    Ok(match caps.wqe_inline_mode {
        cap_inline_mode::VPORT_CONTEXT => match query_nic_vport(mdev) {
            Ok(o) => o.nic_vport_context().min_wqe_inline_mode() as u8,
            Err(_) => inline_mode::L2,
        },
        cap_inline_mode::NOT_REQUIRED => inline_mode::NONE,
        _ => inline_mode::L2,
    })
}

/// The vport MTU (L2 payload plus Ethernet header, FCS and one VLAN tag, as mlx5e keeps it:
/// `MLX5E_SW2HW_MTU`).
pub(crate) fn query_vport_mtu(mdev: &Mdev) -> Result<u32> {
    Ok(query_nic_vport(mdev)?.nic_vport_context().mtu())
}

/// Sets the vport MTU (vport.c `mlx5_modify_nic_vport_mtu`), in hardware units (see
/// [`query_vport_mtu`] and [`crate::en::port::sw_to_hw_mtu`]).
pub(crate) fn set_vport_mtu(mdev: &Mdev, hw_mtu: u32) -> Result {
    let mut m = input::<command::ModifyNicVportContext>(0)?;
    m.field_select_mut().set_mtu(1);
    m.nic_vport_context_mut().set_mtu(hw_mtu);
    mdev.cmdq
        .exec::<command::ModifyNicVportContext>(&m, 0)
        .map(|_| ())
}

/// Whether the vport is up (`QUERY_VPORT_STATE`, en_main.c `mlx5e_update_carrier`).
pub(crate) fn query_vport_up(mdev: &Mdev) -> Result<bool> {
    let m = input::<command::QueryVportState>(0)?;
    let out = mdev.cmdq.exec::<command::QueryVportState>(&m, 0)?;
    Ok(out.state() == u32::from(vport_state::UP))
}
