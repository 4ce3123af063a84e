// SPDX-License-Identifier: GPL-2.0
//! The Ethernet netdev (en_main.c): its private state, `net_device_ops`, open and close of
//! the channels with their RSS and steering, MTU / MAC / RX mode changes, SQ error recovery,
//! and the carrier from port change events.

use core::sync::atomic::{
    AtomicBool,
    Ordering, //
};

use kapi::{
    BhLock,
    BoundDevice, //
};
use kernel::{
    impl_has_delayed_work, impl_has_work,
    prelude::*,
    str::CString,
    sync::{
        Arc,
        ArcBorrow,
        Mutex, //
    },
    time::msecs_to_jiffies,
    workqueue::{
        self,
        DelayedWork,
        Work,
        WorkItem, //
    },
};
use netdev::{
    dim::{
        self,
        DimDir,
        DimPeriodMode, //
    },
    ethtool::Coalesce,
    tstamp::HwTstampConfig,
    xdp::{
        BpfProg,
        XdpSetup, //
    },
    xsk::XskPool,
    AddrList,
    Device,
    DeviceOps,
    DeviceRef,
    Features,
    MacAddr,
    Stats64,
    TxResult, //
};

use crate::{
    cq::{
        self,
        Cq,
        CqParams, //
    },
    en::{
        channel::{
            Adaptive,
            Channel,
            ChannelPoll,
            Kick, //
        },
        dcb::DcbState,
        fs::RxSteering,
        health::EnHealth,
        lro::tir_lro,
        ntuple::Rule,
        port,
        qos::QosCaps,
        res::{
            self as enres,
            EnCaps,
            EnRes, //
        },
        rq::{
            Rq,
            RqParams, //
        },
        rss::{
            DirectTir,
            HashFields,
            Rss, //
        },
        rx::RxRing,
        sq::{
            Sq,
            SqParams, //
        },
        stats::ChannelStats,
        tstamp::Tstamp,
        tunnel::{
            self,
            VxlanPorts, //
        },
        tx::{
            TxCfg,
            TxRing, //
        },
        xsk::XskQueues,
    },
    eq::CompVector,
    mdev::Mdev,
    tir::TirLro,
    tis::Tis,
};

mod probe;
mod recovery;
mod xdp;
mod rules;

pub(crate) use rules::{
    RssContext,
    MAX_RSS_CONTEXTS, //
};

pub(crate) use probe::En;

/// log2 of the default ring sizes (en/params.c: 1024 WQEBBs / WQEs).
pub(crate) const DEFAULT_LOG_RING: u32 = 10;
/// log2 of the smallest and largest ring sizes `ethtool -G` accepts.
pub(crate) const MIN_LOG_RING: u32 = 6;
/// See [`MIN_LOG_RING`].
pub(crate) const MAX_LOG_RING: u32 = 13;
/// log2 of the RSS indirection table size (`MLX5E_INDIR_RQT_SIZE` is 256).
pub(crate) const LOG_INDIR: u32 = 8;
/// The RSS key length (Toeplitz).
pub(crate) const RSS_KEY_LEN: usize = 40;
/// The largest MTU (en.h `MLX5E_HW2SW_MTU(max port MTU)`; 9600 bytes of hardware MTU).
pub(crate) const MAX_MTU: u32 = 9600 - port::HARD_MTU;
/// The smallest MTU (`ETH_MIN_MTU`).
pub(crate) const MIN_MTU: u32 = 68;
/// CQ moderation at open without DIM: mlx5e's defaults (en.h
/// `MLX5E_PARAMS_DEFAULT_{RX,TX}_CQ_MODERATION_{USEC,PKTS}`), periods from the last event.
/// With DIM see [`default_coalesce`].
const DEFAULT_COALESCE: Coalesce = Coalesce {
    use_adaptive_rx: false,
    use_adaptive_tx: false,
    rx_usecs: 8,
    rx_max_frames: 32,
    tx_usecs: 16,
    tx_max_frames: 32,
};
/// The CQ moderation a netdev starts with (en_main.c `mlx5e_build_nic_params`): where the
/// device allows DIM, adaptive in both directions from the algorithm's default profiles (the
/// receive CQs' period restarting at each completion where the device offers it); else
/// [`DEFAULT_COALESCE`].
fn default_coalesce(caps: &EnCaps) -> Coalesce {
    if !caps.dim() {
        return DEFAULT_COALESCE;
    }
    let rx = dim::default_moderation(DimDir::Rx, caps.rx_period_mode());
    let tx = dim::default_moderation(DimDir::Tx, DimPeriodMode::FromEqe);
    Coalesce {
        use_adaptive_rx: true,
        use_adaptive_tx: true,
        rx_usecs: rx.usecs.into(),
        rx_max_frames: rx.pkts.into(),
        tx_usecs: tx.usecs.into(),
        tx_max_frames: tx.pkts.into(),
    }
}

/// The `MODIFY_CQ` period mode of the receive CQs: set to "from each completion" where the
/// device offers it (else left as created: from the event).
fn rx_cq_mode(caps: &EnCaps) -> Option<u32> {
    (caps.rx_period_mode() == DimPeriodMode::FromCqe).then_some(1)
}

/// The longest CQ moderation period, µs (`cq_period` is 12 bits; `MLX5_MAX_CQ_PERIOD`).
const MAX_CQ_PERIOD: u32 = 0xfff;
/// The most CQEs a moderated CQ holds its event for (`cq_max_count`; `MLX5_MAX_CQ_COUNT`).
const MAX_CQ_COUNT: u32 = 0xffff;
/// How long a stopped TX queue may wait for completions before the stack reports a TX
/// timeout and the SQs are recovered (mlx5e's value).
const TX_TIMEOUT_MS: u32 = 15_000;

/// What `ethtool -G/-L/-X` and the stack configure, kept across close and open.
pub(crate) struct Params {
    /// Channels in use.
    pub(crate) channels: u32,
    /// log2 of the SQ size (WQEBBs).
    pub(crate) log_sq: u32,
    /// log2 of the RQ size (WQEs).
    pub(crate) log_rq: u32,
    /// The RSS indirection table (channel indices).
    pub(crate) indir: KVec<u32>,
    /// The RSS key.
    pub(crate) key: [u8; RSS_KEY_LEN],
    /// The fields each traffic type hashes (`ethtool -N rx-flow-hash`).
    pub(crate) hash_fields: HashFields,
    /// The minimum inline mode of the SQs (`cx4_hw::wq::inline_mode`): the device's, raised
    /// to IP headers while the port trusts DSCP (en_dcbnl.c
    /// `mlx5e_params_calc_trust_tx_min_inline_mode`).
    pub(crate) min_inline: u8,
    /// CQ moderation (`ethtool -C`), for the cards with `cq_moderation`.
    pub(crate) coalesce: Coalesce,
    /// LRO (`ethtool -K lro`): the TIRs merge TCP segments into RQ WQEs of
    /// [`RxRing::LRO_PAGES`] pages.
    pub(crate) lro: bool,
    /// The XDP program (`ip link set xdpdrv`): every RQ runs it, one page per frame, no LRO.
    pub(crate) xdp: Option<BpfProg>,
    /// The ethtool flow rules (`ethtool -N flow-type`), by location.
    pub(crate) rules: KVec<Rule>,
    /// The additional RSS contexts (`ethtool -X context new`), by id.
    pub(crate) contexts: KVec<RssContext>,
    /// The AF_XDP zero-copy pools, by queue (`XDP_SETUP_XSK_POOL`): that channel's RQ and
    /// its second SQ are built over the pool.
    pub(crate) xsk: KVec<Option<XskPool>>,
}

impl Params {
    /// A copy (the indirection table is allocated).
    fn try_clone(&self) -> Result<Self> {
        let mut indir = KVec::with_capacity(self.indir.len(), GFP_KERNEL)?;
        indir.extend_from_slice(&self.indir, GFP_KERNEL)?;
        let mut rules = KVec::with_capacity(self.rules.len(), GFP_KERNEL)?;
        rules.extend_from_slice(&self.rules, GFP_KERNEL)?;
        let mut contexts = KVec::with_capacity(self.contexts.len(), GFP_KERNEL)?;
        contexts.extend_from_slice(&self.contexts, GFP_KERNEL)?;
        let mut xsk = KVec::with_capacity(self.xsk.len(), GFP_KERNEL)?;
        xsk.extend_from_slice(&self.xsk, GFP_KERNEL)?;
        Ok(Self {
            channels: self.channels,
            log_sq: self.log_sq,
            log_rq: self.log_rq,
            indir,
            key: self.key,
            hash_fields: self.hash_fields,
            min_inline: self.min_inline,
            coalesce: self.coalesce,
            lro: self.lro,
            xdp: self.xdp.clone(),
            rules,
            contexts,
            xsk,
        })
    }
}

/// The RX filter state the stack asked for (`ndo_set_rx_mode`).
#[derive(Default)]
struct RxMode {
    promisc: bool,
    allmulti: bool,
    mc: KVec<[u8; 6]>,
}

/// The objects of an open netdev. Closing destroys them in the order of [`EnPriv::close`].
struct Open {
    channels: KVec<Arc<Channel>>,
    rss: Option<Rss>,
    /// One direct TIR per channel, for the ethtool rules naming a queue.
    direct: KVec<DirectTir>,
    /// The additional RSS contexts' RQTs and TIRs, with their ids.
    contexts: KVec<(u32, Rss)>,
    fs: Option<RxSteering>,
}

/// Mutable state, under [`EnPriv::state`] (taken in process context only).
struct State {
    params: Params,
    rx_mode: RxMode,
    mac: [u8; 6],
    open: Option<Open>,
    /// The device, for the recovery work (set after allocation).
    dev: Option<DeviceRef>,
}

/// The TX slot of one queue: the channel's send ring while it is open. A BH lock, as
/// mlx5e's send path runs with interrupts enabled: `ndo_start_xmit` and the NAPI poll take
/// it with bottom halves already off, process context (open, close, recovery) disables them.
pub(crate) type TxSlot = BhLock<Option<TxRing>>;

/// The netdev's private data (`netdev_priv`), shared by the callbacks, the NAPI pollers and
/// the recovery work.
#[pin_data]
pub(crate) struct EnPriv {
    // Field order is drop order: the TX slots (SQs) and the TIS before the resources.
    tx: KVec<Pin<KBox<TxSlot>>>,
    tis: Tis,
    res: EnRes,
    dma_dev: BoundDevice,
    /// The completion EQs (and their vectors' interrupts) channels attach to, in turn.
    comp: KVec<CompVector>,
    max_channels: u32,
    stats: KVec<ChannelStats>,
    /// Per channel: its RQ saw an error completion and waits for the recovery work.
    rx_err: KVec<AtomicBool>,
    /// Per channel: the CQ handler that schedules its NAPI (kept across reopens, so that
    /// `ndo_xsk_wakeup` reaches the channel without a lock).
    kicks: KVec<Arc<Kick>>,
    /// A channel's CQ reported an error event (an overrun: the card and the driver disagree
    /// on the ring): the recovery work reopens the channels.
    cq_err: AtomicBool,
    /// `ndo_stop` waits for the recovery work with the RTNL held: a reopen waiting for the
    /// RTNL gives up when this is set.
    closing: AtomicBool,
    /// The firmware version, for `ethtool -i`.
    pub(crate) fw_version: CString,
    /// `NETIF_F_RXCSUM` is on.
    pub(crate) rxcsum: AtomicBool,
    /// The VXLAN ports the device parses.
    vxlan: VxlanPorts,
    /// How SQs build WQEs.
    tx_cfg: TxCfg,
    /// Hardware timestamps: configuration and clock.
    pub(crate) tstamp: Tstamp,
    /// devlink's `tx` and `rx` reporters: the SQ and RQ errors `recover_sqs` and
    /// `recover_rqs` handled go there.
    health: EnHealth,
    /// What of QoS (DCB) the device implements.
    qos: QosCaps,
    /// DCB state the device does not keep (taken before `state`, never after).
    #[pin]
    dcb: Mutex<DcbState>,
    #[pin]
    state: Mutex<State>,
    #[pin]
    recovery: Work<EnPriv, 0>,
    /// The event watch runs while the channels are open ([`Channel::watch`]).
    watch_on: AtomicBool,
    /// The event watch, once a second.
    #[pin]
    watch: DelayedWork<EnPriv, 1>,
}

impl_has_work! {
    impl HasWork<Self, 0> for EnPriv { self.recovery }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 1> for EnPriv { self.watch }
}

/// How often the event watch looks at the channels.
const WATCH_MS: u32 = 1000;

impl WorkItem<1> for EnPriv {
    type Pointer = Arc<EnPriv>;

    /// The event watch: each open channel that had no completion event for a period polls
    /// once. It never waits for the state lock (a reconfiguration holds it, and `ndo_stop`
    /// waits for this work): it skips that period instead.
    fn run(this: Arc<EnPriv>) {
        if !this.watch_on.load(Ordering::Acquire) {
            return;
        }
        if let Some(g) = this.state.try_lock() {
            for ch in g.open.iter().flat_map(|o| o.channels.iter()) {
                ch.watch();
            }
        }
        if this.watch_on.load(Ordering::Acquire) {
            Self::schedule_watch(this);
        }
    }
}

impl WorkItem<0> for EnPriv {
    type Pointer = Arc<EnPriv>;

    fn run(this: Arc<EnPriv>) {
        let _ = this.recover_sqs();
        let _ = this.recover_rqs();
        if this.cq_err.swap(false, Ordering::AcqRel) {
            EnPriv::reopen_after_cq_error(this.as_arc_borrow());
        }
    }
}

impl EnPriv {
    /// The counters of channel `ix`.
    pub(crate) fn stats(&self, ix: u32) -> Option<&ChannelStats> {
        self.stats.get(ix as usize)
    }

    /// Every channel's counters (the ones not in use stay as they were).
    pub(crate) fn all_stats(&self) -> &[ChannelStats] {
        &self.stats
    }

    /// The TX slot of queue `ix` (`None` past `max_channels`).
    pub(crate) fn tx_slot(&self, ix: u32) -> Option<&TxSlot> {
        self.tx.get(ix as usize).map(|s| &**s)
    }

    /// The VXLAN ports the device parses.
    pub(crate) fn vxlan_ports(&self) -> &VxlanPorts {
        &self.vxlan
    }

    /// The most channels.
    pub(crate) fn max_channels(&self) -> u32 {
        self.max_channels
    }

    /// The shared device state.
    pub(crate) fn mdev(&self) -> &Arc<Mdev> {
        self.res.mdev()
    }

    /// What of QoS (DCB) the device implements.
    pub(crate) fn qos(&self) -> &QosCaps {
        &self.qos
    }

    /// The DCB state (lock it before anything that takes the netdev's state).
    pub(crate) fn dcb(&self) -> &Mutex<DcbState> {
        &self.dcb
    }

    /// The device's minimum inline mode (`cx4_hw::wq::inline_mode`), before DSCP trust.
    pub(crate) fn device_min_inline(&self) -> u8 {
        self.res.min_inline()
    }

    /// A copy of the parameters.
    pub(crate) fn params(&self) -> Result<Params> {
        self.state.lock().params.try_clone()
    }

    /// Notes that the RQ of channel `ix` is in error and asks for the recovery work, once
    /// (from NAPI: an error CQE).
    pub(crate) fn rx_error(this: &Arc<Self>, ix: u32) {
        if let Some(f) = this.rx_err.get(ix as usize) {
            if !f.swap(true, Ordering::AcqRel) {
                Self::schedule_recovery(this.clone());
            }
        }
    }

    /// Notes that a channel's CQ reported an error event and asks for the recovery work,
    /// which reopens the channels (from the EQ's interrupt handler).
    pub(crate) fn cq_error(this: &Arc<Self>) {
        if !this.cq_err.swap(true, Ordering::AcqRel) {
            Self::schedule_recovery(this.clone());
        }
    }

    /// Queues the event watch's next look (already queued is fine).
    fn schedule_watch(this: Arc<Self>) {
        let _ = workqueue::system_long()
            .enqueue_delayed::<Arc<EnPriv>, 1>(this, msecs_to_jiffies(WATCH_MS));
    }

    /// Stops the event watch and waits for a running look (not under the state lock).
    pub(crate) fn stop_watch(&self) {
        self.watch_on.store(false, Ordering::Release);
        // A look that read `watch_on` before it was cleared may queue one more.
        while kapi::flush_delayed_work(&self.watch) {}
    }

    /// Asks for the SQ recovery work (from NAPI: an error CQE).
    pub(crate) fn schedule_recovery(this: Arc<Self>) {
        let _ = workqueue::system_long().enqueue::<Arc<EnPriv>, 0>(this);
    }

    /// Opens the channels, RSS and steering (`ndo_open`, or a reconfiguration while up).
    fn open_locked(this: ArcBorrow<'_, Self>, dev: &Device, g: &mut State) -> Result {
        if g.open.is_some() {
            return Ok(());
        }
        let mdev = this.res.mdev();
        // `min`/`max` rather than `clamp`: no panic path in the module (objtool).
        let n = g.params.channels.min(this.max_channels).max(1);
        let hw_mtu = port::sw_to_hw_mtu(dev.mtu());
        set_mtu(mdev, hw_mtu)?;
        let mut open = Open {
            channels: KVec::with_capacity(n as usize, GFP_KERNEL)?,
            rss: None,
            direct: KVec::new(),
            contexts: KVec::new(),
            fs: None,
        };
        let mut rqns = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        let r = (|| -> Result {
            for ix in 0..n {
                let rqn = this.open_channel(dev, ix, &g.params, hw_mtu, &mut open)?;
                rqns.push(rqn, GFP_KERNEL)?;
            }
            let table = rq_table(&g.params.indir, &rqns)?;
            let lro = this.lro(&g.params);
            let p = &g.params;
            let mut rss = Rss::create(
                &this.res,
                &p.key,
                &p.hash_fields,
                LOG_INDIR,
                &rqns,
                lro.as_ref(),
            )?;
            rss.set_indir(&table)?;
            let rss = open.rss.insert(rss);
            let ntuple = this.res.caps().ntuple;
            let mut fs = RxSteering::create(mdev, &|tt| rss.tirn(tt), g.mac, ntuple)?;
            fs.set_rx_mode(g.mac, &g.rx_mode.mc, g.rx_mode.promisc, g.rx_mode.allmulti)?;
            open.fs = Some(fs);
            this.open_rules(&mut open, p, &rqns, lro.as_ref())?;
            dev.set_real_num_tx_queues(n)?;
            dev.set_real_num_rx_queues(n)?;
            port::set_admin_up(mdev, true)?;
            Ok(())
        })();
        if let Err(e) = r {
            this.close_open(dev, open);
            return Err(e);
        }
        // Woken, not just started: packets the stack requeued while the queues were down
        // go out now, not when the next packet for the queue comes (a TCP sender whose
        // packets sit in the qdisc sends nothing more).
        for ix in 0..n {
            if let Some(q) = dev.tx_queue(ix) {
                q.reset();
                q.wake();
            }
        }
        // And every other queue started, as mlx5e's `netif_tx_start_all_queues`: the TX
        // watchdog looks at all `num_tx_queues`, and a queue past the channels in use, left
        // stopped by the last close, would "time out" though nothing is queued on it.
        dev.start_all_tx_queues();
        match port::query_status(mdev) {
            Ok(s) if s.oper_up => dev.carrier_on(),
            _ => dev.carrier_off(),
        }
        g.open = Some(open);
        Ok(())
    }

    /// Creates channel `ix` (its CQs, SQ, RQ with buffers, NAPI) into `open`; returns its RQ
    /// number.
    fn open_channel(
        self: ArcBorrow<'_, Self>,
        dev: &Device,
        ix: u32,
        p: &Params,
        hw_mtu: u32,
        open: &mut Open,
    ) -> Result<u32> {
        let mdev = self.res.mdev();
        let st = self.stats(ix).ok_or(EINVAL)?;
        let slot = self.tx_slot(ix).ok_or(EINVAL)?;
        // A new RQ: an error noted on the channel's previous one (closed before its recovery
        // ran) is moot.
        if let Some(f) = self.rx_err.get(ix as usize) {
            f.store(false, Ordering::Release);
        }
        let cv = *self
            .comp
            .get(ix as usize % self.comp.len().max(1))
            .ok_or(ENODEV)?;
        let eqn = cv.eqn;
        let kick = self.kicks.get(ix as usize).ok_or(EINVAL)?.clone();
        let cq_p = |log_size| CqParams {
            log_size,
            eqn,
            uar: self.res.uar(),
        };
        let tcq = Cq::create(mdev, &cq_p(p.log_sq), Some(kick.clone()))?;
        let rcq = Cq::create(mdev, &cq_p(p.log_rq), Some(kick.clone()))?;
        if self.res.caps().cq_moderation {
            let c = &p.coalesce;
            tcq.modify_moderation(c.tx_usecs, c.tx_max_frames, None)?;
            rcq.modify_moderation(c.rx_usecs, c.rx_max_frames, rx_cq_mode(self.res.caps()))?;
        }
        let tcqn = tcq.cqn();
        let sq = Sq::create(
            &self.res,
            &SqParams {
                log_size: p.log_sq,
                cqn: tcq.cqn(),
                tisn: self.tis.tisn(),
                allow_swp: self.tx_cfg.geneve,
                min_inline: p.min_inline,
            },
        )?;
        let tx = TxRing::new(sq, tcq)?;
        let rq = Rq::create(
            &self.res,
            &RqParams {
                log_size: p.log_rq,
                segs: if p.xdp.is_some() {
                    1
                } else if p.lro && self.res.caps().lro {
                    RxRing::LRO_PAGES
                } else {
                    RxRing::pages_for(hw_mtu)
                },
                cqn: rcq.cqn(),
                vlan_strip_disable: !self.res.caps().vlan_strip,
            },
        )?;
        let rx = RxRing::new(rq, self.dma_dev.get(), dev, ix as u16, st, p.xdp.clone())?;
        let xsk = match p.xsk_pool(ix) {
            Some(pool) => Some(self.open_xsk(dev, ix, pool, p, st, &kick, eqn)?),
            None => None,
        };
        let rqn = xsk.as_ref().map_or(rx.rqn(), XskQueues::rqn);
        let adaptive = Adaptive {
            tx: p.coalesce.use_adaptive_tx && self.res.caps().dim(),
            rx: p.coalesce.use_adaptive_rx && self.res.caps().dim(),
        };
        let rx_mode = self.res.caps().rx_period_mode();
        let poll = ChannelPoll::new(self.into(), ix, rcq, rx, xsk, tcqn, adaptive, rx_mode)?;
        // The send ring goes into the queue's slot: from now on xmit may use it.
        let old = slot.lock().replace(tx);
        drop(old);
        match Channel::start(dev, self.into(), ix, kick, poll, tcqn, cv.irq) {
            Ok(ch) => open.channels.push(ch, GFP_KERNEL).map_err(|_| {
                // Unreachable in practice (capacity reserved); the channel is dropped.
                ENOMEM
            })?,
            Err(e) => {
                let ring = slot.lock().take();
                drop(ring);
                return Err(e);
            }
        }
        Ok(rqn)
    }

    /// The TIRs' TCP segment merging, if LRO is on and the device has it.
    fn lro(&self, p: &Params) -> Option<TirLro> {
        let caps = self.res.caps();
        (p.lro && caps.lro).then(|| tir_lro(RxRing::lro_wqe_bytes(), &caps.lro_periods))
    }

    /// Tears down what `open` holds: the queues stop, NAPI stops, steering and RSS go, then
    /// the SQs (with their CQs), then the channels (RQs, receive CQs, page pools).
    fn close_open(&self, dev: &Device, open: Open) {
        dev.carrier_off();
        dev.stop_all_tx_queues();
        let Open {
            channels,
            rss,
            direct,
            contexts,
            fs,
        } = open;
        for ch in channels.iter() {
            ch.stop();
        }
        // The steering first: its entries forward to the TIRs.
        drop(fs);
        drop(contexts);
        drop(direct);
        drop(rss);
        for ch in channels.iter() {
            if let Some(slot) = self.tx_slot(ch.ix()) {
                let ring = slot.lock().take();
                drop(ring);
            }
        }
        drop(channels);
        let _ = port::set_admin_up(self.res.mdev(), false);
    }

    fn close_locked(&self, dev: &Device, g: &mut State) {
        if let Some(open) = g.open.take() {
            self.close_open(dev, open);
        }
    }

    /// Sets the CQ moderation (`ethtool -C`): kept in the parameters and applied to the open
    /// channels' CQs in place (`MODIFY_CQ`, en_ethtool.c `mlx5e_set_coalesce`): DIM turned on
    /// or off per direction; the static values go to the CQs of a direction without DIM
    /// (DIM owns the others). `EOPNOTSUPP`
    /// without the `cq_moderation` capability, `ERANGE` past the CQ context's fields (12-bit
    /// period, 16-bit count).
    pub(crate) fn set_coalesce(&self, c: &Coalesce) -> Result {
        let caps = self.res.caps();
        if !caps.cq_moderation || ((c.use_adaptive_rx || c.use_adaptive_tx) && !caps.dim()) {
            return Err(super::ethtool::eopnotsupp());
        }
        if c.rx_usecs > MAX_CQ_PERIOD
            || c.tx_usecs > MAX_CQ_PERIOD
            || c.rx_max_frames > MAX_CQ_COUNT
            || c.tx_max_frames > MAX_CQ_COUNT
        {
            return Err(ERANGE);
        }
        let mut g = self.state.lock();
        let old = core::mem::replace(&mut g.params.coalesce, *c);
        let on = Adaptive {
            tx: c.use_adaptive_tx,
            rx: c.use_adaptive_rx,
        };
        let was = Adaptive {
            tx: old.use_adaptive_tx,
            rx: old.use_adaptive_rx,
        };
        if let Some(open) = &g.open {
            for ch in open.channels.iter() {
                if on != was {
                    ch.set_adaptive(self.mdev(), on, caps.rx_period_mode())?;
                }
                let [tcqn, rcqn] = ch.cqns();
                if !on.tx {
                    cq::modify_moderation(self.mdev(), tcqn, c.tx_usecs, c.tx_max_frames, None)?;
                }
                if !on.rx {
                    let mode = rx_cq_mode(caps);
                    cq::modify_moderation(self.mdev(), rcqn, c.rx_usecs, c.rx_max_frames, mode)?;
                }
            }
        }
        Ok(())
    }

    /// Sets the RSS indirection table (channel indices) and the hash key in place, as mlx5e
    /// does (`mlx5e_rss_set_rxfh`): MODIFY_RQT and MODIFY_TIR on the open channels' RSS
    /// objects, no channel closed, the carrier untouched.
    pub(crate) fn set_rss(
        this: ArcBorrow<'_, Self>,
        indir: Option<&[u32]>,
        key: Option<&[u8; RSS_KEY_LEN]>,
    ) -> Result {
        let mut g = this.state.lock();
        let g = &mut *g;
        if let Some(t) = indir {
            if t.len() != g.params.indir.len() || t.iter().any(|&c| c >= g.params.channels) {
                return Err(EINVAL);
            }
        }
        if let Some(open) = g.open.as_mut() {
            let rqns = open.rqns()?;
            if let Some(rss) = open.rss.as_mut() {
                if let Some(t) = indir {
                    rss.set_indir(&rq_table(t, &rqns)?)?;
                }
                if let Some(k) = key {
                    rss.set_key(k)?;
                }
            }
        }
        if let Some(t) = indir {
            g.params.indir.clear();
            g.params.indir.extend_from_slice(t, GFP_KERNEL)?;
        }
        if let Some(k) = key {
            g.params.key = *k;
        }
        Ok(())
    }

    /// Applies new parameters: closes and reopens the channels if the netdev is up.
    pub(crate) fn reconfigure(
        this: ArcBorrow<'_, Self>,
        dev: &Device,
        f: impl FnOnce(&mut Params) -> Result,
    ) -> Result {
        let mut g = this.state.lock();
        let was_open = g.open.is_some();
        let mut p = g.params.try_clone()?;
        f(&mut p)?;
        this.close_locked(dev, &mut g);
        g.params = p;
        if was_open {
            Self::open_locked(this, dev, &mut g)?;
        }
        Ok(())
    }
}

/// The RQ numbers an indirection table of channel indices stands for, given the open
/// channels' RQs (`rqns[i]` is channel `i`'s).
fn rq_table(indir: &[u32], rqns: &[u32]) -> Result<KVec<u32>> {
    let n = rqns.len() as u32;
    let mut table = KVec::with_capacity(indir.len(), GFP_KERNEL)?;
    for &c in indir {
        let rqn = c.checked_rem(n).and_then(|c| rqns.get(c as usize));
        table.push(*rqn.ok_or(EINVAL)?, GFP_KERNEL)?;
    }
    Ok(table)
}

/// The netdev operations.
pub(crate) struct EnNetdev;

#[vtable]
impl DeviceOps for EnNetdev {
    type Data = Arc<EnPriv>;

    fn open(dev: &Device, data: ArcBorrow<'_, EnPriv>) -> Result {
        let mut g = data.state.lock();
        EnPriv::open_locked(data, dev, &mut g)?;
        drop(g);
        data.watch_on.store(true, Ordering::Release);
        EnPriv::schedule_watch(data.into());
        Ok(())
    }

    fn stop(dev: &Device, data: ArcBorrow<'_, EnPriv>) -> Result {
        // The recovery work takes the state lock (and may wait for the RTNL we hold, until
        // it sees `closing`): let it finish first, then close.
        data.closing.store(true, Ordering::Release);
        data.stop_watch();
        kapi::flush_work(&data.recovery);
        let mut g = data.state.lock();
        data.close_locked(dev, &mut g);
        data.closing.store(false, Ordering::Release);
        Ok(())
    }

    fn start_xmit(dev: &Device, data: ArcBorrow<'_, EnPriv>, skb: netdev::skb::SkBuff) -> TxResult {
        let ix = u32::from(skb.queue_mapping());
        let (Some(txq), Some(st)) = (dev.tx_queue(ix), data.stats(ix)) else {
            drop(skb);
            return TxResult::Ok;
        };
        let Some(slot) = data.tx_slot(ix) else {
            ChannelStats::add(&st.tx_dropped, 1);
            drop(skb);
            return TxResult::Ok;
        };
        let mut slot = slot.lock();
        match &mut *slot {
            Some(ring) => ring.xmit(skb, data.dma_dev.get(), txq, &data.tx_cfg, &data.tstamp, st),
            None => {
                ChannelStats::add(&st.tx_dropped, 1);
                drop(skb);
                TxResult::Ok
            }
        }
    }

    fn features_check(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        skb: &netdev::skb::SkBuff,
        f: Features,
    ) -> Features {
        if !skb.encapsulation() || tunnel::offloadable(skb, &data.res.caps().tunnels, &data.vxlan) {
            return f;
        }
        // The stack checksums and segments what the device cannot parse.
        f & !(Features::CSUM_MASK | Features::GSO_MASK)
    }

    fn get_stats64(_dev: &Device, data: ArcBorrow<'_, EnPriv>, s: &mut Stats64) {
        for st in data.all_stats() {
            let v = |c: &core::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
            s.rx_packets += v(&st.rx_packets);
            s.rx_bytes += v(&st.rx_bytes);
            s.tx_packets += v(&st.tx_packets);
            s.tx_bytes += v(&st.tx_bytes);
            s.tx_dropped += v(&st.tx_dropped);
            s.rx_dropped += v(&st.rx_dropped) + v(&st.rx_buff_alloc_err);
            s.rx_errors += v(&st.rx_cqe_err);
            s.tx_errors += v(&st.tx_cqe_err);
        }
    }

    fn set_rx_mode_async(
        dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        _uc: &AddrList<'_>,
        mc: &AddrList<'_>,
    ) -> Result {
        let flags = dev.flags();
        let mut list = KVec::with_capacity(mc.len(), GFP_KERNEL)?;
        for a in mc.iter() {
            list.push(a, GFP_KERNEL)?;
        }
        let mut g = data.state.lock();
        g.rx_mode.promisc = flags.promisc();
        g.rx_mode.allmulti = flags.allmulti();
        g.rx_mode.mc = list;
        let mac = g.mac;
        let State { rx_mode, open, .. } = &mut *g;
        if let Some(fs) = open.as_mut().and_then(|o| o.fs.as_mut()) {
            fs.set_rx_mode(mac, &rx_mode.mc, rx_mode.promisc, rx_mode.allmulti)?;
        }
        Ok(())
    }

    fn set_mac_address(dev: &Device, data: ArcBorrow<'_, EnPriv>, addr: &MacAddr) -> Result {
        let mut g = data.state.lock();
        if let Some(fs) = g.open.as_mut().and_then(|o| o.fs.as_mut()) {
            fs.set_mac(*addr)?;
        }
        g.mac = *addr;
        dev.set_dev_addr(addr);
        Ok(())
    }

    fn change_mtu(dev: &Device, data: ArcBorrow<'_, EnPriv>, new_mtu: u32) -> Result {
        if !(MIN_MTU..=MAX_MTU).contains(&new_mtu) {
            return Err(EINVAL);
        }
        let mut g = data.state.lock();
        data.mtu_allowed(dev, &g.params, new_mtu)?;
        let was_open = g.open.is_some();
        data.close_locked(dev, &mut g);
        dev.set_mtu(new_mtu);
        if was_open {
            EnPriv::open_locked(data, dev, &mut g)?;
        } else {
            set_mtu(data.res.mdev(), port::sw_to_hw_mtu(new_mtu))?;
        }
        Ok(())
    }

    fn tx_timeout(dev: &Device, data: ArcBorrow<'_, EnPriv>, txqueue: u32) {
        dev_warn!(
            data.dma_dev.dev(),
            "{}: TX timeout on queue {}\n",
            dev.name(),
            txqueue
        );
        EnPriv::schedule_recovery(data.into());
    }

    fn fix_features(dev: &Device, data: ArcBorrow<'_, EnPriv>, f: Features) -> Features {
        // en_main.c `mlx5e_fix_features`.
        let g = data.state.lock();
        if f.contains(Features::LRO) && (g.params.xdp.is_some() || g.params.xsk_queues() > 0) {
            dev_warn!(
                data.dma_dev.dev(),
                "{}: LRO is incompatible with XDP\n",
                dev.name()
            );
            return f & !Features::LRO;
        }
        f
    }

    fn set_features(dev: &Device, data: ArcBorrow<'_, EnPriv>, f: Features) -> Result {
        // LRO changes the RQs' WQEs and the TIRs: the channels reopen (as mlx5e does for
        // its legacy RQ).
        let lro = f.contains(Features::LRO);
        if lro != data.state.lock().params.lro {
            EnPriv::reconfigure(data, dev, |p| {
                p.lro = lro;
                Ok(())
            })?;
        }
        data.rxcsum
            .store(f.contains(Features::RXCSUM), Ordering::Relaxed);
        Ok(())
    }

    fn xdp_setup_prog(dev: &Device, data: ArcBorrow<'_, EnPriv>, setup: XdpSetup<'_>) -> Result {
        EnPriv::set_xdp(data, dev, setup)
    }

    fn xdp_setup_xsk_pool(
        dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        queue: u16,
        pool: Option<XskPool>,
    ) -> Result {
        EnPriv::set_xsk_pool(data, dev, u32::from(queue), pool)
    }

    fn xsk_wakeup(_dev: &Device, data: ArcBorrow<'_, EnPriv>, queue: u32, _flags: u32) -> Result {
        data.xsk_wakeup(queue)
    }

    fn hwtstamp_get(_dev: &Device, data: ArcBorrow<'_, EnPriv>) -> Result<HwTstampConfig> {
        data.tstamp.get()
    }

    fn hwtstamp_set(
        _dev: &Device,
        data: ArcBorrow<'_, EnPriv>,
        config: &mut HwTstampConfig,
    ) -> Result {
        data.tstamp.set(config)
    }
}

/// Sets the port's MTU (PMTU: the largest frame the port sends and takes) and the NIC vport
/// context's (en_main.c `mlx5e_set_mtu`); `hw_mtu` counts the Ethernet header, a VLAN tag and
/// the FCS.
fn set_mtu(mdev: &Mdev, hw_mtu: u32) -> Result {
    port::set_mtu(mdev, hw_mtu)?;
    enres::set_vport_mtu(mdev, hw_mtu)
}
