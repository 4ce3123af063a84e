// SPDX-License-Identifier: GPL-2.0
//! ethtool (en_ethtool.c): driver information, link settings from PTYS, rings, channels,
//! the RSS indirection table, key and hash fields, flow rules and RSS contexts (ntuple:
//! netdev/rules.rs), per-channel software counters and the port's PPCNT
//! counters, pause.

use cx4_hw::tir::hash_field_sel;
use kernel::{
    prelude::*,
    str::CString,
    sync::ArcBorrow, //
};
use netdev::{
    ethtool::{
        self,
        rxh,
        Channels,
        Coalesce,
        Duplex,
        EthtoolOps,
        FlowSpec,
        FlowType,
        LinkKsettings,
        PauseParam,
        PauseStats,
        Port,
        RingParam,
        Rxfh,
        RxfhContext,
        RxfhRequest,
        StringSet,
        Strings, //
    },
    tstamp::TsInfo,
    Device,
};

use crate::en::{
    netdev::{
        EnPriv,
        LOG_INDIR,
        MAX_LOG_RING,
        MAX_RSS_CONTEXTS,
        MIN_LOG_RING,
        RSS_KEY_LEN, //
    },
    port, pport,
    rss::TrafficType,
    stats::ChannelStats,
};

/// `EOPNOTSUPP` (the kernel crate names no constant for it).
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32))
}

/// The ethtool operations of the netdev.
pub(crate) struct EnEthtool;

/// The `RXH_*` bits of `ethtool -N rx-flow-hash` and the TIR's `hash_field_sel` bits they are.
const RXH_FIELDS: [(u32, u32); 4] = [
    (rxh::IP_SRC, hash_field_sel::SRC_IP),
    (rxh::IP_DST, hash_field_sel::DST_IP),
    (rxh::L4_B_0_1, hash_field_sel::L4_SPORT),
    (rxh::L4_B_2_3, hash_field_sel::L4_DPORT),
];

/// The TCP or UDP traffic type of `flow` (the flow types whose hash fields can be set).
fn l4_traffic_type(flow: FlowType) -> Option<TrafficType> {
    Some(match flow {
        FlowType::TcpV4 => TrafficType::Ipv4Tcp,
        FlowType::TcpV6 => TrafficType::Ipv6Tcp,
        FlowType::UdpV4 => TrafficType::Ipv4Udp,
        FlowType::UdpV6 => TrafficType::Ipv6Udp,
        _ => return None,
    })
}

/// `log2(n)` of a power of two in the ring range, or `EINVAL`.
fn ring_log(n: u32) -> Result<u32> {
    if !n.is_power_of_two() {
        return Err(EINVAL);
    }
    let l = n.trailing_zeros();
    if !(MIN_LOG_RING..=MAX_LOG_RING).contains(&l) {
        return Err(EINVAL);
    }
    Ok(l)
}

/// A short string for an ethtool name.
fn name(args: core::fmt::Arguments<'_>) -> Result<CString> {
    CString::try_from_fmt(args)
}

#[vtable]
impl EthtoolOps for EnEthtool {
    type Data = kernel::sync::Arc<EnPriv>;

    const ADAPTIVE_COALESCE: bool = true;
    const RXFH_MAX_NUM_CONTEXTS: u32 = MAX_RSS_CONTEXTS;
    const RXFH_PER_CTX_KEY: bool = true;
    const RXFH_PER_CTX_FIELDS: bool = true;

    fn get_rxnfc_rule_count(_dev: &Device, data: ArcBorrow<'_, EnPriv>) -> Result<u32> {
        Ok(data.rule_count())
    }

    fn get_rxnfc_rule(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        location: u32,
    ) -> Result<(FlowSpec, u32)> {
        data.rule(location)
    }

    fn get_rxnfc_rule_locs(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        locs: &mut [u32],
    ) -> Result<u32> {
        data.rule_locs(locs)
    }

    fn insert_rxnfc_rule(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        spec: &FlowSpec,
        rss_context: u32,
    ) -> Result {
        EnPriv::insert_rule(data, spec, rss_context)
    }

    fn delete_rxnfc_rule(_dev: &Device, data: ArcBorrow<'_, EnPriv>, location: u32) -> Result {
        data.delete_rule(location)
    }

    fn create_rxfh_context(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        ctx: &mut RxfhContext<'_>,
        rxfh: &RxfhRequest<'_>,
    ) -> Result {
        EnPriv::set_context(data, ctx, rxfh, true)
    }

    fn modify_rxfh_context(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        ctx: &mut RxfhContext<'_>,
        rxfh: &RxfhRequest<'_>,
    ) -> Result {
        EnPriv::set_context(data, ctx, rxfh, false)
    }

    fn remove_rxfh_context(_dev: &Device, data: ArcBorrow<'_, EnPriv>, context: u32) -> Result {
        data.remove_context(context)
    }

    fn get_drvinfo(_dev: &Device, data: ArcBorrow<'_, EnPriv>, i: &mut ethtool::DrvInfo<'_>) {
        i.set_driver(c"cx4");
        i.set_fw_version(&data.fw_version);
        i.set_bus_info(data.mdev().dev.dev().name());
    }

    fn get_link_ksettings(
        dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        ks: &mut LinkKsettings<'_>,
    ) -> Result {
        let mdev = data.mdev();
        let protos = port::query_eth_protos(mdev)?;
        for bit in 0..32u8 {
            if protos.capability & (1 << bit) != 0 {
                if let Some(m) = link_mode(bit) {
                    ks.add_supported(m);
                }
            }
            if protos.admin & (1 << bit) != 0 {
                if let Some(m) = link_mode(bit) {
                    ks.add_advertising(m);
                }
            }
        }
        if dev.carrier_ok() {
            ks.set_speed(port::protos_speed(protos.oper));
            ks.set_duplex(Duplex::Full);
        } else {
            ks.set_speed(u32::MAX);
            ks.set_duplex(Duplex::Unknown);
        }
        ks.set_port(Port::Da);
        ks.set_autoneg(false);
        Ok(())
    }

    fn get_ringparam(_dev: &Device, data: ArcBorrow<'_, EnPriv>, r: &mut RingParam) {
        let max = 1 << MAX_LOG_RING;
        r.rx_max_pending = max;
        r.tx_max_pending = max;
        if let Ok(p) = data.params() {
            r.rx_pending = 1 << p.log_rq;
            r.tx_pending = 1 << p.log_sq;
        }
    }

    fn set_ringparam(dev: &Device, data: ArcBorrow<'_, EnPriv>, r: &RingParam) -> Result {
        let (lrq, lsq) = (ring_log(r.rx_pending)?, ring_log(r.tx_pending)?);
        EnPriv::reconfigure(data, dev, |p| {
            p.log_rq = lrq;
            p.log_sq = lsq;
            Ok(())
        })
    }

    fn get_coalesce(_dev: &Device, data: ArcBorrow<'_, EnPriv>, c: &mut Coalesce) -> Result {
        *c = data.params()?.coalesce;
        Ok(())
    }

    fn set_coalesce(_dev: &Device, data: ArcBorrow<'_, EnPriv>, c: &Coalesce) -> Result {
        data.set_coalesce(c)
    }

    fn get_ts_info(_dev: &Device, data: ArcBorrow<'_, EnPriv>, info: &mut TsInfo<'_>) -> Result {
        data.tstamp.ts_info(info);
        Ok(())
    }

    fn get_channels(_dev: &Device, data: ArcBorrow<'_, EnPriv>, c: &mut Channels) {
        c.max_combined = data.max_channels();
        if let Ok(p) = data.params() {
            c.combined_count = p.channels;
        }
    }

    fn set_channels(dev: &Device, data: ArcBorrow<'_, EnPriv>, c: &Channels) -> Result {
        let n = c.combined_count;
        if n == 0 || n > data.max_channels() || c.rx_count != 0 || c.tx_count != 0 {
            return Err(EINVAL);
        }
        // A table the user set stays (mlx5e_ethtool_set_channels); the core has refused a count
        // too low for it (ethtool_check_max_channel). Otherwise the new count spreads the
        // table evenly again (ethtool_rxfh_indir_default).
        let keep = dev.rxfh_configured();
        EnPriv::reconfigure(data, dev, |p| {
            // en_ethtool.c `mlx5e_ethtool_set_channels`: a queue with an AF_XDP socket stays.
            if p.xsk_queues() > n {
                return Err(EINVAL);
            }
            p.channels = n;
            if keep {
                if p.indir.iter().any(|&c| c >= n) {
                    return Err(EINVAL);
                }
            } else {
                for (i, e) in p.indir.iter_mut().enumerate() {
                    *e = (i as u32).checked_rem(n).unwrap_or(0);
                }
            }
            Ok(())
        })
    }

    fn get_rx_ring_count(_dev: &Device, data: ArcBorrow<'_, EnPriv>) -> u32 {
        data.params().map(|p| p.channels).unwrap_or(1)
    }

    fn get_rxfh_indir_size(_dev: &Device, _data: ArcBorrow<'_, EnPriv>) -> u32 {
        1 << LOG_INDIR
    }

    fn get_rxfh_key_size(_dev: &Device, _data: ArcBorrow<'_, EnPriv>) -> u32 {
        RSS_KEY_LEN as u32
    }

    fn get_rxfh(_dev: &Device, data: ArcBorrow<'_, EnPriv>, r: &mut Rxfh<'_>) -> Result {
        let p = data.params()?;
        r.set_hfunc(ethtool::RSS_HASH_TOP);
        if let Some(t) = r.indir() {
            for (d, s) in t.iter_mut().zip(p.indir.iter()) {
                *d = *s;
            }
        }
        if let Some(k) = r.key() {
            let n = k.len().min(RSS_KEY_LEN);
            k[..n].copy_from_slice(&p.key[..n]);
        }
        Ok(())
    }

    fn set_rxfh(_dev: &Device, data: ArcBorrow<'_, EnPriv>, r: &mut Rxfh<'_>) -> Result {
        let h = r.hfunc();
        if h != ethtool::RSS_HASH_NO_CHANGE && h != ethtool::RSS_HASH_TOP {
            return Err(eopnotsupp());
        }
        let mut indir = KVec::new();
        if let Some(t) = r.indir() {
            indir.extend_from_slice(t, GFP_KERNEL)?;
        }
        let mut key = None;
        if let Some(k) = r.key() {
            let mut kk = [0u8; RSS_KEY_LEN];
            let n = k.len().min(RSS_KEY_LEN);
            kk[..n].copy_from_slice(&k[..n]);
            key = Some(kk);
        }
        // In place: no close/open, no carrier change (mlx5e_set_rxfh).
        EnPriv::set_rss(
            data,
            (!indir.is_empty()).then_some(&indir[..]),
            key.as_ref(),
        )
    }

    fn get_rxfh_fields(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        context: u32,
        flow: FlowType,
    ) -> Result<u32> {
        // en_fs_ethtool.c `mlx5e_ethtool_get_rxfh_fields`; IPsec flows hash in the IP TIRs.
        let tt = match flow {
            FlowType::Ipv4 | FlowType::IpsecV4 => TrafficType::Ipv4,
            FlowType::Ipv6 | FlowType::IpsecV6 => TrafficType::Ipv6,
            _ => l4_traffic_type(flow).ok_or(EINVAL)?,
        };
        let sel = data.hash_fields(context)?[tt.index()];
        Ok(RXH_FIELDS
            .iter()
            .filter(|(_, f)| sel & f != 0)
            .fold(0, |acc, (r, _)| acc | r))
    }

    fn set_rxfh_fields(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        context: u32,
        flow: FlowType,
        fields: u32,
    ) -> Result {
        // en_fs_ethtool.c `mlx5e_ethtool_set_rxfh_fields`: TCP and UDP flows only, over
        // addresses and ports only.
        let tt = match flow {
            FlowType::Other(_) => return Err(EINVAL),
            _ => l4_traffic_type(flow).ok_or_else(eopnotsupp)?,
        };
        let all = RXH_FIELDS.iter().fold(0, |acc, (r, _)| acc | r);
        if fields & !all != 0 {
            return Err(eopnotsupp());
        }
        let sel = RXH_FIELDS
            .iter()
            .filter(|(r, _)| fields & r != 0)
            .fold(0, |acc, (_, f)| acc | f);
        EnPriv::set_hash_fields(data, context, tt, sel)
    }

    fn get_sset_count(_dev: &Device, data: ArcBorrow<'_, EnPriv>, set: StringSet) -> Result<u32> {
        match set {
            StringSet::Stats => Ok(
                (ChannelStats::NAMES.len() * (1 + data.max_channels() as usize) + pport::count())
                    as u32,
            ),
            _ => Err(eopnotsupp()),
        }
    }

    fn get_strings(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        set: StringSet,
        s: &mut Strings<'_>,
    ) {
        if set != StringSet::Stats {
            return;
        }
        for n in ChannelStats::NAMES {
            if let Ok(c) = name(fmt!("{}", n)) {
                s.push(&c);
            }
        }
        for ch in 0..data.max_channels() {
            for n in ChannelStats::NAMES {
                // The per-channel names (`ch0_tx_packets`; mlx5e says `tx0_packets`).
                if let Ok(c) = name(fmt!("ch{}_{}", ch, n)) {
                    s.push(&c);
                }
            }
        }
        pport::for_each_name(|c| s.push(c));
    }

    fn get_ethtool_stats(_dev: &Device, data: ArcBorrow<'_, EnPriv>, out: &mut [u64]) {
        let all = data.all_stats();
        let mut sum = [0u64; ChannelStats::NAMES.len()];
        for st in all {
            for (s, v) in sum.iter_mut().zip(st.values()) {
                *s += v;
            }
        }
        let mut w = out.iter_mut();
        for v in sum {
            if let Some(o) = w.next() {
                *o = v;
            }
        }
        for st in all {
            for v in st.values() {
                if let Some(o) = w.next() {
                    *o = v;
                }
            }
        }
        // The port's counters follow (a device that does not answer shows them as 0).
        let rest = w.into_slice();
        if let Err(e) = pport::read(data.mdev(), rest) {
            pr_debug!("cx4: PPCNT query failed: {:?}\n", e);
        }
    }

    fn get_pauseparam(_dev: &Device, data: ArcBorrow<'_, EnPriv>, p: &mut PauseParam) {
        // What the port has now (PFCC); a device that does not answer shows pause off.
        let pause = port::query_pause(data.mdev()).unwrap_or_default();
        p.autoneg = false;
        p.rx_pause = pause.rx;
        p.tx_pause = pause.tx;
    }

    fn set_pauseparam(_dev: &Device, data: ArcBorrow<'_, EnPriv>, p: &PauseParam) -> Result {
        // en_ethtool.c `mlx5e_ethtool_set_pauseparam`: no pause autonegotiation.
        if p.autoneg {
            return Err(EINVAL);
        }
        port::set_pause(
            data.mdev(),
            port::Pause {
                rx: p.rx_pause,
                tx: p.tx_pause,
            },
        )
    }

    fn get_pause_stats(_dev: &Device, data: ArcBorrow<'_, EnPriv>, s: &mut PauseStats) {
        // A device that does not answer leaves them unreported.
        if let Ok((tx, rx)) = pport::global_pause(data.mdev()) {
            s.tx_pause_frames = Some(tx);
            s.rx_pause_frames = Some(rx);
        }
    }
}

/// The ethtool link mode of PTYS Ethernet protocol bit `bit` (en_ethtool.c's table, the
/// modes the netdev crate names).
fn link_mode(bit: u8) -> Option<u32> {
    use netdev::ethtool::link_mode as m;
    Some(match bit {
        1 => m::M1000_BASE_KX_FULL,
        4 => m::M10000_BASE_KR_FULL,
        7 => m::M40000_BASE_CR4_FULL,
        20 => m::M100000_BASE_CR4_FULL,
        27 => m::M25000_BASE_CR_FULL,
        29 => m::M25000_BASE_SR_FULL,
        30 => m::M50000_BASE_CR2_FULL,
        _ => return None,
    })
}
