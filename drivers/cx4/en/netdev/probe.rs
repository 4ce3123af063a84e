// SPDX-License-Identifier: GPL-2.0
//! The netdev's probe and removal (en_main.c `mlx5e_probe`, `mlx5e_build_nic_netdev`,
//! `mlx5e_remove`): [`En`] creates the Ethernet resources and the private state, sets the
//! netdev's features from the caps, registers it with its ethtool, dcbnl and UDP tunnel ops,
//! and follows the port's state with the carrier.

use core::sync::atomic::AtomicBool;

use cx4_hw::eq::port_change_subtype;
use kapi::new_bh_lock;
use kernel::{
    new_delayed_work,
    new_mutex,
    new_work,
    prelude::*,
    str::CString,
    sync::Arc, //
};
use netdev::{
    xdp::XdpFeatures,
    DeviceRef,
    Features,
    Registration, //
};

use super::{
    default_coalesce,
    EnNetdev,
    EnPriv,
    Params,
    RxMode,
    State,
    DEFAULT_LOG_RING,
    LOG_INDIR,
    MAX_MTU,
    MIN_MTU,
    RSS_KEY_LEN,
    TX_TIMEOUT_MS, //
};
use crate::{
    caps::Caps,
    clock::Clock,
    en::{
        channel::Kick,
        dcb::{
            self,
            DcbState,
            EnDcb, //
        },
        ethtool::EnEthtool,
        health::EnHealth,
        port::PortEventsRegistration,
        qos::QosCaps,
        qstats::EnQueueStats,
        res::EnRes,
        rss::TrafficType,
        stats::ChannelStats,
        tstamp::Tstamp,
        tunnel::{
            EnTunnels,
            VxlanPorts,
            IANA_VXLAN_PORT, //
        },
        tx::TxCfg,
    },
    eq::{
        CompVector,
        PortEvents, //
    },
    mdev::Mdev,
    tis::Tis,
};

/// Port change events set the carrier (en_main.c `mlx5e_update_carrier`, here straight
/// from the event: the PORT_CHANGE subtype is the new operational state).
struct Link {
    dev: DeviceRef,
}

impl PortEvents for Link {
    fn port_change(&self, _port: u8, sub_type: u8) {
        let d = self.dev.device();
        match sub_type {
            port_change_subtype::ACTIVE => d.carrier_on(),
            port_change_subtype::DOWN => d.carrier_off(),
            _ => {}
        }
    }
}

/// The Ethernet function of a card: the registered netdev. Dropping it unregisters it (after
/// the port events stop reaching it) and waits for the recovery work.
pub(crate) struct En {
    // Field order is drop order.
    port_events: Option<PortEventsRegistration>,
    reg: Option<Registration<EnNetdev>>,
    priv_: Arc<EnPriv>,
}

impl En {
    /// Creates and registers the netdev of the function (`mlx5e_probe`), timestamping with the
    /// function's `clock` if it has one.
    pub(crate) fn probe(
        mdev: &Arc<Mdev>,
        caps: &Caps,
        comp: KVec<CompVector>,
        fw_version: CString,
        health: &EnHealth,
        clock: Option<&Clock>,
    ) -> Result<Self> {
        let max_channels = (comp.len() as u32).max(1);
        let res = EnRes::create(mdev, caps)?;
        let tis = Tis::create(mdev, res.tdn(), 0)?;
        let mut tx = KVec::with_capacity(max_channels as usize, GFP_KERNEL)?;
        let mut stats = KVec::with_capacity(max_channels as usize, GFP_KERNEL)?;
        let mut rx_err = KVec::with_capacity(max_channels as usize, GFP_KERNEL)?;
        let mut kicks = KVec::with_capacity(max_channels as usize, GFP_KERNEL)?;
        for _ in 0..max_channels {
            tx.push(
                KBox::pin_init(new_bh_lock!(None, "cx4::en_tx_slot"), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
            stats.push(ChannelStats::default(), GFP_KERNEL)?;
            rx_err.push(AtomicBool::new(false), GFP_KERNEL)?;
            kicks.push(Kick::new()?, GFP_KERNEL)?;
        }
        let channels = netdev_default_channels(max_channels);
        let mut indir = KVec::with_capacity(1 << LOG_INDIR, GFP_KERNEL)?;
        for i in 0..(1u32 << LOG_INDIR) {
            indir.push(i.checked_rem(channels).unwrap_or(0), GFP_KERNEL)?;
        }
        let mut key = [0u8; RSS_KEY_LEN];
        netdev::rss_key_fill(&mut key);
        let mac = res.mac();
        // en_dcbnl.c mlx5e_dcbnl_initialize: the trust state decides the SQs' minimum
        // inline mode, the ETS configuration starts from mlx5e's defaults.
        let qos = QosCaps::query(mdev, caps);
        let mut dcb_state = DcbState::query(mdev, &qos);
        if qos.qos {
            if let Err(e) = dcb::init_ets(mdev, &qos, &mut dcb_state) {
                dev_warn!(mdev.dev.dev(), "ETS initialisation failed: {:?}\n", e);
            }
        }
        let min_inline = dcb::min_inline_for(dcb_state.trust(), res.min_inline());
        let tun = res.caps().tunnels;
        let priv_ = Arc::pin_init(
            try_pin_init!(EnPriv {
                tx,
                tis,
                res,
                dma_dev: mdev.dev.clone(),
                comp,
                max_channels,
                stats,
                rx_err,
                kicks,
                cq_err: AtomicBool::new(false),
                closing: AtomicBool::new(false),
                fw_version,
                rxcsum: AtomicBool::new(true),
                vxlan: VxlanPorts::new(),
                tx_cfg: TxCfg {
                    geneve: tun.geneve,
                },
                tstamp: Tstamp::new(clock),
                health: health.clone(),
                qos,
                dcb <- dcb_state.new_lock(),
                state <- new_mutex!(State {
                    params: Params {
                        channels,
                        log_sq: DEFAULT_LOG_RING,
                        log_rq: DEFAULT_LOG_RING,
                        indir,
                        key,
                        hash_fields: TrafficType::default_fields(),
                        min_inline,
                        coalesce: default_coalesce(res.caps()),
                        lro: false,
                        xdp: None,
                        rules: KVec::new(),
                        contexts: KVec::new(),
                        xsk: KVec::new(),
                    },
                    rx_mode: RxMode::default(),
                    mac,
                    open: None,
                    dev: None,
                }),
                recovery <- new_work!("cx4::en_recovery"),
                watch_on: AtomicBool::new(false),
                watch <- new_delayed_work!("cx4::en_watch"),
            }),
            GFP_KERNEL,
        )?;
        let mut reg = Registration::<EnNetdev>::new(
            mdev.dev.get(),
            max_channels,
            max_channels,
            priv_.clone(),
        )?;
        reg.set_ethtool_ops::<EnEthtool>()?;
        reg.set_queue_stats_ops::<EnQueueStats>()?;
        // en_dcbnl.c mlx5e_dcbnl_build_netdev: DCB for a function that owns the port's QoS.
        if qos.qos {
            reg.set_dcbnl_ops::<EnDcb>()?;
        }
        let dev = reg.device();
        // The TX slots are BH locks (taken with interrupts enabled); netpoll would call
        // xmit and the poll with interrupts disabled, possibly from a hard interrupt.
        dev.disable_netpoll();
        dev.set_dev_addr(&mac);
        dev.set_mtu_range(MIN_MTU, MAX_MTU);
        // en_main.c mlx5e_build_nic_netdev: 15 s, not the stack's 5 s default.
        dev.set_watchdog_timeo(
            u32::try_from(kernel::time::msecs_to_jiffies(TX_TIMEOUT_MS)).unwrap_or(u32::MAX),
        );
        let caps = priv_.res.caps();
        let mut hw = Features::SG
            | Features::IP_CSUM
            | Features::IPV6_CSUM
            | Features::RXCSUM
            | Features::HW_VLAN_CTAG_TX;
        if caps.log_max_lso > 0 {
            hw |= Features::TSO | Features::TSO6;
        }
        // Offered, off by default as in mlx5e.
        let lro = if caps.lro {
            Features::LRO
        } else {
            Features::EMPTY
        };
        let fixed = if caps.vlan_strip {
            Features::HW_VLAN_CTAG_RX | Features::HIGHDMA
        } else {
            Features::HIGHDMA
        };
        let base = hw;
        if tun.vxlan || tun.gre || tun.geneve {
            let mut enc = Features::SG
                | Features::IP_CSUM
                | Features::IPV6_CSUM
                | Features::TSO
                | Features::TSO6
                | Features::GSO_PARTIAL;
            let mut partial = Features::EMPTY;
            if tun.vxlan || tun.geneve {
                let udp = Features::GSO_UDP_TUNNEL | Features::GSO_UDP_TUNNEL_CSUM;
                hw |= udp;
                enc |= udp;
                partial |= Features::GSO_UDP_TUNNEL_CSUM;
            }
            if tun.gre {
                let gre = Features::GSO_GRE | Features::GSO_GRE_CSUM;
                hw |= gre;
                enc |= gre;
                partial |= Features::GSO_GRE_CSUM;
            }
            hw |= Features::GSO_PARTIAL;
            dev.set_hw_enc_features(enc);
            dev.set_gso_partial_features(partial);
        }
        dev.set_hw_features(hw | lro);
        // Flow rules (netdev/rules.rs) where the flow tables chain; fixed on, as mlx5e built
        // without aRFS (CONFIG_MLX5_EN_RXNFC) has it.
        let ntuple = if caps.ntuple {
            Features::NTUPLE
        } else {
            Features::EMPTY
        };
        dev.set_features(hw | fixed | ntuple | Features::RXHASH);
        // Native XDP: PASS, DROP, TX, ABORTED, REDIRECT (netdev/xdp.rs).
        dev.set_xdp_features(
            XdpFeatures::BASIC | XdpFeatures::REDIRECT | XdpFeatures::XSK_ZEROCOPY,
        );
        dev.set_vlan_features(base);
        if caps.log_max_lso > 0 {
            dev.set_tso_max_size(1 << u32::from(caps.log_max_lso).min(16));
        }
        dev.set_real_num_tx_queues(channels)?;
        dev.set_real_num_rx_queues(channels)?;
        // en_main.c mlx5e_netdev_init: the carrier starts off (a new net_device's is on), so
        // the carrier_on of the first open is a change the stack sees and the operational
        // state becomes UP, not UNKNOWN. Before registration no event is counted.
        dev.carrier_off();
        if tun.vxlan {
            // lib/vxlan.c: the IANA port is always parsed; the stack reports the others.
            priv_.vxlan.add(mdev, IANA_VXLAN_PORT)?;
            reg.set_udp_tunnel_nic::<EnTunnels>()?;
        }
        priv_.state.lock().dev = Some(reg.device_ref());
        let link = Arc::new(
            Link {
                dev: reg.device_ref(),
            },
            GFP_KERNEL,
        )?;
        let port_events = PortEventsRegistration::new(mdev, link)?;
        reg.register()?;
        health.tx.attach(priv_.clone());
        health.rx.attach(priv_.clone());
        dev_info!(
            mdev.dev.dev(),
            "{}: Ethernet netdev, MAC {:02x?}, {} channel(s) of {}, min inline mode {}\n",
            reg.device().name(),
            mac,
            channels,
            max_channels,
            priv_.res.min_inline()
        );
        Ok(Self {
            port_events: Some(port_events),
            reg: Some(reg),
            priv_,
        })
    }

    /// A counted reference to the netdev (the RDMA layer binds its port to it).
    pub(crate) fn device_ref(&self) -> Option<DeviceRef> {
        self.reg.as_ref().map(Registration::device_ref)
    }

    /// The device's minimum inline mode of the SQs (`cx4_hw::wq::inline_mode`).
    pub(crate) fn min_inline(&self) -> u8 {
        self.priv_.res.min_inline()
    }
}

impl Drop for En {
    fn drop(&mut self) {
        // devlink's `tx` and `rx` reporters stop reaching this netdev (a `diagnose` in
        // progress ends).
        self.priv_.health.tx.detach();
        self.priv_.health.rx.detach();
        self.port_events = None;
        // Unregisters (closing the netdev if it is up).
        self.reg = None;
        self.priv_.stop_watch();
        kapi::flush_work(&self.priv_.recovery);
        self.priv_.state.lock().dev = None;
        self.priv_.vxlan.clear(self.priv_.res.mdev());
    }
}

/// The channels a new netdev starts with: one per completion EQ, at most the stack's default
/// RSS queue count (`netif_get_num_default_rss_queues`).
fn netdev_default_channels(max: u32) -> u32 {
    netdev::default_rss_queues().min(max).max(1)
}
