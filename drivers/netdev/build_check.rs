// SPDX-License-Identifier: GPL-2.0
//! A build-time check, not code that runs: a driver implementing every operation, whose C
//! tables are evaluated here, so that each trampoline and `const` table of the crate is
//! instantiated (and type- and const-checked) even before a driver uses them.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    dcbnl::{
        self,
        DcbnlOps, //
    },
    ethtool::{
        self,
        EthtoolOps, //
    },
    napi::{
        NapiContext,
        NapiPoller, //
    },
    qstats::{
        self,
        QueueStatsOps,
        RxQueueStats,
        TxQueueStats, //
    },
    skb::SkBuff,
    tstamp::{
        HwTstampConfig,
        TsInfo, //
    },
    udp_tunnel::{
        self,
        UdpTunnelNic, //
    },
    xdp::XdpSetup,
    xsk::XskPool,
    AddrList,
    DataRef,
    Device,
    DeviceOps,
    Features,
    MacAddr,
    Stats64,
    TxResult, //
};

struct Check;

#[vtable]
impl DeviceOps for Check {
    type Data = Arc<()>;

    fn open(_dev: &Device, _data: DataRef<'_, Self>) -> Result {
        Ok(())
    }

    fn stop(_dev: &Device, _data: DataRef<'_, Self>) -> Result {
        Ok(())
    }

    fn start_xmit(_dev: &Device, _data: DataRef<'_, Self>, skb: SkBuff) -> TxResult {
        TxResult::Busy(skb)
    }

    fn features_check(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _skb: &SkBuff,
        features: Features,
    ) -> Features {
        features
    }

    fn get_stats64(_dev: &Device, _data: DataRef<'_, Self>, _stats: &mut Stats64) {}

    fn set_rx_mode(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _uc: &AddrList<'_>,
        _mc: &AddrList<'_>,
    ) {
    }

    fn set_rx_mode_async(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _uc: &AddrList<'_>,
        _mc: &AddrList<'_>,
    ) -> Result {
        Ok(())
    }

    fn set_mac_address(_dev: &Device, _data: DataRef<'_, Self>, _addr: &MacAddr) -> Result {
        Ok(())
    }

    fn validate_addr(_dev: &Device, _data: DataRef<'_, Self>) -> Result {
        Ok(())
    }

    fn change_mtu(_dev: &Device, _data: DataRef<'_, Self>, _new_mtu: u32) -> Result {
        Ok(())
    }

    fn tx_timeout(_dev: &Device, _data: DataRef<'_, Self>, _txqueue: u32) {}

    fn fix_features(_dev: &Device, _data: DataRef<'_, Self>, features: Features) -> Features {
        features
    }

    fn set_features(_dev: &Device, _data: DataRef<'_, Self>, _features: Features) -> Result {
        Ok(())
    }

    fn hwtstamp_get(_dev: &Device, _data: DataRef<'_, Self>) -> Result<HwTstampConfig> {
        Ok(HwTstampConfig::default())
    }

    fn hwtstamp_set(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _config: &mut HwTstampConfig,
    ) -> Result {
        Ok(())
    }

    fn xdp_setup_prog(_dev: &Device, _data: DataRef<'_, Self>, _setup: XdpSetup<'_>) -> Result {
        Ok(())
    }

    fn xdp_setup_xsk_pool(
        _dev: &Device,
        _data: DataRef<'_, Self>,
        _queue: u16,
        _pool: Option<XskPool>,
    ) -> Result {
        Ok(())
    }

    fn xsk_wakeup(_dev: &Device, _data: DataRef<'_, Self>, _queue: u32, _flags: u32) -> Result {
        Ok(())
    }
}

#[vtable]
impl EthtoolOps for Check {
    type Data = Arc<()>;

    fn get_drvinfo(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _i: &mut ethtool::DrvInfo<'_>,
    ) {
    }

    fn get_link(_dev: &Device, _data: ethtool::DataRef<'_, Self>) -> bool {
        false
    }

    fn get_link_ksettings(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _ks: &mut ethtool::LinkKsettings<'_>,
    ) -> Result {
        Ok(())
    }

    fn get_ringparam(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _r: &mut ethtool::RingParam,
    ) {
    }

    fn set_ringparam(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _r: &ethtool::RingParam,
    ) -> Result {
        Ok(())
    }

    fn get_channels(_dev: &Device, _data: ethtool::DataRef<'_, Self>, _c: &mut ethtool::Channels) {}

    fn set_channels(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _c: &ethtool::Channels,
    ) -> Result {
        Ok(())
    }

    fn get_rx_ring_count(_dev: &Device, _data: ethtool::DataRef<'_, Self>) -> u32 {
        1
    }

    fn get_rxfh_indir_size(_dev: &Device, _data: ethtool::DataRef<'_, Self>) -> u32 {
        0
    }

    fn get_rxfh_key_size(_dev: &Device, _data: ethtool::DataRef<'_, Self>) -> u32 {
        0
    }

    fn get_rxfh(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _r: &mut ethtool::Rxfh<'_>,
    ) -> Result {
        Ok(())
    }

    fn set_rxfh(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _r: &mut ethtool::Rxfh<'_>,
    ) -> Result {
        Ok(())
    }

    fn get_sset_count(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _set: ethtool::StringSet,
    ) -> Result<u32> {
        Ok(0)
    }

    fn get_strings(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _set: ethtool::StringSet,
        _s: &mut ethtool::Strings<'_>,
    ) {
    }

    fn get_ethtool_stats(_dev: &Device, _data: ethtool::DataRef<'_, Self>, _s: &mut [u64]) {}

    fn get_pauseparam(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _p: &mut ethtool::PauseParam,
    ) {
    }

    fn set_pauseparam(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _p: &ethtool::PauseParam,
    ) -> Result {
        Ok(())
    }

    fn get_rxfh_fields(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _context: u32,
        _flow: ethtool::FlowType,
    ) -> Result<u32> {
        Ok(ethtool::rxh::IP_SRC)
    }

    fn set_rxfh_fields(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _context: u32,
        _flow: ethtool::FlowType,
        _fields: u32,
    ) -> Result {
        Ok(())
    }

    fn get_pause_stats(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _s: &mut ethtool::PauseStats,
    ) {
    }

    fn get_rxnfc_rule_count(_dev: &Device, _data: ethtool::DataRef<'_, Self>) -> Result<u32> {
        Ok(0)
    }

    fn get_rxnfc_rule(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _location: u32,
    ) -> Result<(ethtool::FlowSpec, u32)> {
        Err(ENOENT)
    }

    fn get_rxnfc_rule_locs(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _locs: &mut [u32],
    ) -> Result<u32> {
        Ok(0)
    }

    fn insert_rxnfc_rule(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        spec: &ethtool::FlowSpec,
        _rss_context: u32,
    ) -> Result {
        let _ = (
            spec.tcp_ip4(true),
            spec.usr_ip4(true),
            spec.ip6(true),
            spec.ether(true),
        );
        let _ = spec.ext(false);
        Ok(())
    }

    fn delete_rxnfc_rule(_dev: &Device, _data: ethtool::DataRef<'_, Self>, _loc: u32) -> Result {
        Ok(())
    }

    fn create_rxfh_context(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        ctx: &mut ethtool::RxfhContext<'_>,
        rxfh: &ethtool::RxfhRequest<'_>,
    ) -> Result {
        for (d, s) in ctx.indir().iter_mut().zip(rxfh.indir().unwrap_or_default()) {
            *d = *s;
        }
        Ok(())
    }

    fn modify_rxfh_context(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        ctx: &mut ethtool::RxfhContext<'_>,
        rxfh: &ethtool::RxfhRequest<'_>,
    ) -> Result {
        for (d, s) in ctx.key().iter_mut().zip(rxfh.key().unwrap_or_default()) {
            *d = *s;
        }
        Ok(())
    }

    fn remove_rxfh_context(_dev: &Device, _data: ethtool::DataRef<'_, Self>, _c: u32) -> Result {
        Ok(())
    }

    fn get_coalesce(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _c: &mut ethtool::Coalesce,
    ) -> Result {
        Ok(())
    }

    fn set_coalesce(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        _c: &ethtool::Coalesce,
    ) -> Result {
        Ok(())
    }

    fn get_ts_info(
        _dev: &Device,
        _data: ethtool::DataRef<'_, Self>,
        info: &mut TsInfo<'_>,
    ) -> Result {
        info.set_phc_index(-1);
        Ok(())
    }
}

#[vtable]
impl DcbnlOps for Check {
    type Data = Arc<()>;

    fn ieee_getets(_dev: &Device, _data: dcbnl::DataRef<'_, Self>, _e: &mut dcbnl::Ets) -> Result {
        Ok(())
    }

    fn ieee_setets(_dev: &Device, _data: dcbnl::DataRef<'_, Self>, _e: &dcbnl::Ets) -> Result {
        Ok(())
    }

    fn ieee_getmaxrate(
        _dev: &Device,
        _data: dcbnl::DataRef<'_, Self>,
        _r: &mut dcbnl::MaxRate,
    ) -> Result {
        Ok(())
    }

    fn ieee_setmaxrate(
        _dev: &Device,
        _data: dcbnl::DataRef<'_, Self>,
        _r: &dcbnl::MaxRate,
    ) -> Result {
        Ok(())
    }

    fn ieee_getpfc(_dev: &Device, _data: dcbnl::DataRef<'_, Self>, _p: &mut dcbnl::Pfc) -> Result {
        Ok(())
    }

    fn ieee_setpfc(_dev: &Device, _data: dcbnl::DataRef<'_, Self>, _p: &dcbnl::Pfc) -> Result {
        Ok(())
    }

    fn ieee_setapp(dev: &Device, _data: dcbnl::DataRef<'_, Self>, app: &dcbnl::App) -> Result {
        dev.dcb_ieee_setapp(app)
    }

    fn ieee_delapp(dev: &Device, _data: dcbnl::DataRef<'_, Self>, app: &dcbnl::App) -> Result {
        dev.dcb_ieee_delapp(app)
    }

    fn getdcbx(_dev: &Device, _data: dcbnl::DataRef<'_, Self>) -> u8 {
        dcbnl::dcbx::HOST | dcbnl::dcbx::VER_IEEE
    }

    fn setdcbx(_dev: &Device, _data: dcbnl::DataRef<'_, Self>, _mode: u8) -> u8 {
        1
    }

    fn dcbnl_getbuffer(
        _dev: &Device,
        _data: dcbnl::DataRef<'_, Self>,
        _b: &mut dcbnl::Buffer,
    ) -> Result {
        Ok(())
    }

    fn dcbnl_setbuffer(
        _dev: &Device,
        _data: dcbnl::DataRef<'_, Self>,
        _b: &dcbnl::Buffer,
    ) -> Result {
        Ok(())
    }
}

#[vtable]
impl UdpTunnelNic for Check {
    type Data = Arc<()>;
    const TABLES: &'static [udp_tunnel::Table] = &[udp_tunnel::Table {
        entries: 3,
        types: &[udp_tunnel::TunnelType::Vxlan],
    }];

    fn set_port(
        _dev: &Device,
        _data: udp_tunnel::DataRef<'_, Self>,
        _p: &udp_tunnel::Port,
    ) -> Result {
        Ok(())
    }

    fn unset_port(
        _dev: &Device,
        _data: udp_tunnel::DataRef<'_, Self>,
        _p: &udp_tunnel::Port,
    ) -> Result {
        Ok(())
    }
}

#[vtable]
impl QueueStatsOps for Check {
    type Data = Arc<()>;

    fn rx_queue(_dev: &Device, _data: qstats::DataRef<'_, Self>, _q: u32, s: &mut RxQueueStats) {
        s.packets = Some(0);
    }

    fn tx_queue(_dev: &Device, _data: qstats::DataRef<'_, Self>, _q: u32, s: &mut TxQueueStats) {
        s.packets = Some(0);
    }

    fn base(
        _dev: &Device,
        _data: qstats::DataRef<'_, Self>,
        rx: &mut RxQueueStats,
        tx: &mut TxQueueStats,
    ) {
        rx.add(&RxQueueStats::default());
        tx.add(&TxQueueStats::default());
    }
}

impl NapiPoller for Check {
    fn poll(&mut self, _napi: &NapiContext, _budget: i32) -> i32 {
        0
    }
}

// The tables, evaluated at build time.
const _: &ksys::net_device_ops = crate::registration::ops_table::<Check>();
const _: &ksys::ethtool_ops = ethtool::table::<Check>();
const _: &ksys::dcbnl_rtnl_ops = dcbnl::table::<Check>();
const _: &ksys::udp_tunnel_nic_info = udp_tunnel::info::<Check>();
const _: &ksys::netdev_stat_ops = qstats::table::<Check>();

/// Uses the generic functions (type-checked; instantiated only if a `#[used]` static points
/// here, which is worth doing by hand after changing a trampoline).
#[allow(dead_code)]
fn check(reg: &mut crate::Registration<Check>) -> Result {
    reg.set_ethtool_ops::<Check>()?;
    reg.set_dcbnl_ops::<Check>()?;
    let dev = reg.device();
    let _ = (
        dev.dcb_ieee_getapp_mask(&dcbnl::App::dscp(0, 0)),
        dev.dcb_ieee_getapp_dscp_prio_mask_map(),
        dev.dcb_ieee_getapp_prio_dscp_mask_map(),
        dev.dcb_ieee_getapp_default_prio_mask(),
    );
    reg.set_udp_tunnel_nic::<Check>()?;
    reg.set_queue_stats_ops::<Check>()?;
    let _napi = KBox::pin_init(crate::napi::Napi::new(reg.device(), Check), GFP_KERNEL)?;
    Ok(())
}
