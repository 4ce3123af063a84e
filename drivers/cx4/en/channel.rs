// SPDX-License-Identifier: GPL-2.0
//! One channel (en_main.c `mlx5e_open_channel`): a send CQ + SQ and a receive CQ + RQ on one
//! completion EQ, polled by one NAPI instance.
//!
//! Ownership: the NAPI poller owns the receive CQ and ring; the send ring and its CQ live in
//! the netdev's per-queue TX slot ([`super::netdev::EnPriv`]), shared by `ndo_start_xmit` and the
//! poll under a BH lock. The CQs report completions to a [`Kick`], which
//! schedules the channel's NAPI from the EQ's interrupt handler. With adaptive moderation on
//! (`ethtool -C adaptive-rx/-tx`), the poll feeds each CQ's [`Dim`] its counters and the
//! kernel's algorithm moves the CQ's moderation ([`CqModerator`], en_dim.c).

use core::sync::atomic::{
    AtomicU32,
    AtomicU64,
    Ordering, //
};

use kapi::{
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};
use netdev::{
    dim::{
        Dim,
        DimDir,
        DimHandler,
        DimModeration,
        DimPeriodMode, //
    },
    napi::{
        Napi,
        NapiContext,
        NapiPoller,
        QueueKind, //
    },
    xdp::BpfProg,
    Device,
};

use crate::{
    cq::{
        self,
        Cq,
        CqHandler, //
    },
    mdev::Mdev,
    en::{
        netdev::EnPriv,
        rx::RxRing,
        stats::ChannelStats,
        xsk::XskQueues,
    },
};

/// The CQ handler of a channel: schedules its NAPI. Holds the channel only while it is open
/// ([`Kick::clear`] breaks the reference cycle channel → CQ → handler → channel).
#[pin_data]
pub(crate) struct Kick {
    #[pin]
    target: IrqSafeLock<Option<Arc<Channel>>>,
}

impl Kick {
    /// A handler with no channel yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                target <- new_irq_safe_lock!(None, "cx4::en_kick"),
            }),
            GFP_KERNEL,
        )
    }

    fn set(&self, ch: Arc<Channel>) {
        let old = self.target.lock().replace(ch);
        drop(old);
    }

    /// Schedules the channel's NAPI, if a channel is attached (`ndo_xsk_wakeup`; en/xsk/tx.c
    /// `mlx5e_xsk_wakeup`). `ENXIO` if none is (mlx5e: `ENETDOWN`).
    pub(crate) fn wake(&self) -> Result {
        match self.target.lock().as_ref() {
            Some(ch) => {
                ch.napi.schedule();
                Ok(())
            }
            None => Err(ENXIO),
        }
    }

    /// Forgets the channel (after its NAPI is disabled).
    pub(crate) fn clear(&self) {
        let old = self.target.lock().take();
        drop(old);
    }
}

impl CqHandler for Kick {
    fn completion(&self, cqn: u32) {
        if let Some(ch) = self.target.lock().as_ref() {
            if let Some(st) = ch.priv_.stats(ch.ix) {
                ChannelStats::add(&st.events, 1);
                let per_cq = if cqn == ch.cqns[0] {
                    &st.tx_events
                } else {
                    &st.rx_events
                };
                ChannelStats::add(per_cq, 1);
            }
            ch.napi.schedule();
        }
    }

    fn error(&self, cqn: u32, syndrome: u8) {
        if let Some(ch) = self.target.lock().as_ref() {
            if ch.priv_.mdev().reports.allow() {
                pr_err!(
                    "channel {}: CQ {:#x} error event, syndrome {:#x}; reopening\n",
                    ch.ix,
                    cqn,
                    syndrome
                );
            }
            EnPriv::cq_error(&ch.priv_);
        }
    }
}

/// The NAPI poller of a channel.
/// Applies the moderation DIM chose to one CQ (`MODIFY_CQ`; en_dim.c
/// `mlx5e_complete_dim_work`).
pub(crate) struct CqModerator {
    mdev: Arc<Mdev>,
    cqn: u32,
}

impl DimHandler for CqModerator {
    fn apply(&self, m: DimModeration) {
        // A failure leaves the CQ as it was; the next decision tries again.
        let _ = cq::modify_moderation(
            &self.mdev,
            self.cqn,
            u32::from(m.usecs),
            u32::from(m.pkts),
            None,
        );
    }
}

/// The DIM state of one of a channel's CQs.
type CqDim = Pin<KBox<Dim<CqModerator>>>;

/// Which of a channel's CQs adapt their moderation.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Adaptive {
    pub(crate) tx: bool,
    pub(crate) rx: bool,
}

/// The DIM states of a channel's send and receive CQs, where adaptive moderation is on.
#[derive(Default)]
struct Dims {
    tx: Option<CqDim>,
    rx: Option<CqDim>,
}

impl Dims {
    /// DIM for the CQs `cqns` (send, receive) that `on` names. The send CQ counts its
    /// period from the event, the receive CQ as `rx_mode` says (as the netdev set it).
    fn new(
        mdev: &Arc<Mdev>,
        cqns: [u32; 2],
        on: Adaptive,
        rx_mode: DimPeriodMode,
    ) -> Result<Self> {
        let mk = |dir, mode, cqn| -> Result<CqDim> {
            let h = CqModerator {
                mdev: mdev.clone(),
                cqn,
            };
            KBox::pin_init(Dim::new(dir, mode, h), GFP_KERNEL)
        };
        Ok(Self {
            tx: on
                .tx
                .then(|| mk(DimDir::Tx, DimPeriodMode::FromEqe, cqns[0]))
                .transpose()?,
            rx: on.rx.then(|| mk(DimDir::Rx, rx_mode, cqns[1])).transpose()?,
        })
    }
}

pub(crate) struct ChannelPoll {
    // Field order is drop order: DIM (its work modifies the CQs) first; the RQ before its CQ;
    // the send CQ after the SQ, which the channel's owner destroys before dropping the
    // channel (after [`Channel::stop`] dropped DIM).
    dims: Dims,
    rx: RxRing,
    rcq: Cq,
    /// The XSK RQ and SQ with their CQs, with a pool bound to the channel: opened beside the
    /// regular RQ, which stays posted (en/xsk/setup.c `mlx5e_open_xsk`).
    xsk: Option<XskQueues>,
    priv_: Arc<EnPriv>,
    ix: u32,
}

impl NapiPoller for ChannelPoll {
    fn poll(&mut self, napi: &NapiContext, budget: i32) -> i32 {
        let Some(st) = self.priv_.stats(self.ix) else {
            return 0;
        };
        ChannelStats::add(&st.polls, 1);
        let dev = napi.device();
        if let (Some(txq), Some(slot)) = (dev.tx_queue(self.ix), self.priv_.tx_slot(self.ix)) {
            let mut slot = slot.lock();
            if let Some(ring) = &mut *slot {
                if ring.complete(txq, budget, self.priv_.tstamp.timer(), st) {
                    EnPriv::schedule_recovery(self.priv_.clone());
                }
            }
        }
        let budget_u = usize::try_from(budget).unwrap_or(0);
        let rxcsum = self.priv_.rxcsum.load(Ordering::Relaxed);
        let rxts = self.priv_.tstamp.rx_timer();
        let tx = self.priv_.tx_slot(self.ix);
        let mut work = self.rx.poll(&mut self.rcq, napi, budget_u, rxcsum, rxts, tx, st);
        // The XSK RQ takes what the budget leaves (en_txrx.c `mlx5e_napi_poll`); XDP_TX
        // from it copies the frame into a page of the regular RQ's pool.
        let mut xsk_busy = false;
        if let Some(x) = self.xsk.as_mut() {
            let left = budget_u.saturating_sub(work);
            let (n, busy) = x.poll(napi, left, self.rx.xdp_tx_pool(), tx, st);
            work += n;
            xsk_busy = busy;
        }
        if self.rx.in_error() || self.xsk.as_ref().is_some_and(XskQueues::in_error) {
            EnPriv::rx_error(&self.priv_, self.ix);
        }
        if work >= budget_u || self.rx.short() || xsk_busy {
            return budget;
        }
        let work = work as i32;
        if napi.complete_done(work) {
            ChannelStats::add(&st.arms, 1);
            // Each CQ's DIM counts that CQ's events (mlx5e's `cq.event_ctr`).
            let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
            if let Some(d) = self.dims.tx.as_mut() {
                let ev = get(&st.tx_events) as u16;
                d.as_mut().sample(ev, get(&st.tx_packets), get(&st.tx_bytes));
            }
            if let Some(d) = self.dims.rx.as_mut() {
                let ev = get(&st.rx_events) as u16;
                d.as_mut().sample(ev, get(&st.rx_packets), get(&st.rx_bytes));
            }
            if let Some(slot) = self.priv_.tx_slot(self.ix) {
                if let Some(ring) = &mut *slot.lock() {
                    let _ = ring.arm();
                }
            }
            if let Some(x) = self.xsk.as_mut() {
                x.arm();
            }
            let _ = self.rcq.rearm();
        }
        work
    }
}

impl ChannelPoll {
    /// The poller of channel `ix` over its receive CQ and ring (the send ring and CQ `tcqn`
    /// are in the TX slot) and its XSK queues, if any, with DIM on the CQs `adaptive` names.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        priv_: Arc<EnPriv>,
        ix: u32,
        rcq: Cq,
        rx: RxRing,
        xsk: Option<XskQueues>,
        tcqn: u32,
        adaptive: Adaptive,
        rx_mode: DimPeriodMode,
    ) -> Result<Self> {
        let dims = Dims::new(priv_.mdev(), [tcqn, rcq.cqn()], adaptive, rx_mode)?;
        Ok(Self {
            dims,
            rx,
            rcq,
            xsk,
            priv_,
            ix,
        })
    }

    /// Recovers what an error completion stopped: the regular RQ, the XSK RQ, the XSK SQ
    /// (each only if it is in error); whether any was.
    fn recover(&mut self, st: &ChannelStats) -> Result<bool> {
        let mut was = false;
        if self.rx.in_error() {
            was |= self.rx.recover(&mut self.rcq, st)?;
        }
        if let Some(x) = self.xsk.as_mut() {
            was |= x.recover(st)?;
        }
        Ok(was)
    }
}

/// An open channel.
#[pin_data]
pub(crate) struct Channel {
    ix: u32,
    rqn: u32,
    /// The XSK RQ's number while the channel has one (0: none).
    xsk_rqn: AtomicU32,
    /// The send and receive CQs (for `ethtool -C`).
    cqns: [u32; 2],
    priv_: Arc<EnPriv>,
    kick: Arc<Kick>,
    /// The channel's completion events when the event watch last looked ([`Channel::watch`]).
    watched: AtomicU64,
    #[pin]
    napi: Napi<ChannelPoll>,
}

impl Channel {
    /// Starts channel `ix`: its NAPI instance on `dev` polls `poll`; `kick` (the CQs'
    /// handler) schedules it from now on. The first poll runs at once and arms the CQs.
    /// `tcqn` is the send CQ (in the channel's TX slot). As mlx5e's channels, the NAPI
    /// instance is tied to `irq` (its completion vector) and linked to RX and TX queue `ix`,
    /// which the netdev netlink family shows (`napi-get`, `queue-get`).
    pub(crate) fn start(
        dev: &Device,
        priv_: Arc<EnPriv>,
        ix: u32,
        kick: Arc<Kick>,
        poll: ChannelPoll,
        tcqn: u32,
        irq: Option<u32>,
    ) -> Result<Arc<Self>> {
        let k = kick.clone();
        let rqn = poll.rx.rqn();
        let xsk_rqn = poll.xsk.as_ref().map_or(0, XskQueues::rqn);
        let cqns = [tcqn, poll.rcq.cqn()];
        // Named apart: inside the initializer, `ix` is the field being initialized.
        let napi_index = ix;
        let ch = Arc::pin_init(
            try_pin_init!(Self {
                ix,
                rqn,
                xsk_rqn: AtomicU32::new(xsk_rqn),
                cqns,
                priv_,
                kick: k,
                watched: AtomicU64::new(0),
                napi <- Napi::new_indexed(dev, poll, napi_index),
            }),
            GFP_KERNEL,
        )?;
        kick.set(ch.clone());
        ch.napi.set_irq(irq);
        for kind in [QueueKind::Rx, QueueKind::Tx] {
            // Only the netlink view depends on it: a failure (a queue count out of step) is
            // reported, the channel still runs.
            if let Err(e) = ch.napi.link_queue(kind, ix) {
                dev_warn!(
                    ch.priv_.mdev().dev.dev(),
                    "channel {ix}: {kind:?} queue not linked to its NAPI: {e:?}\n"
                );
            }
        }
        ch.napi.enable();
        ch.napi.schedule();
        Ok(ch)
    }

    /// The event watch's look at this channel (from its work, state lock held, so the
    /// channel is open): if no completion event came since the last look, one poll — the
    /// event of a completion may have been lost (a dropped interrupt, a corrupted EQE naming
    /// another CQ) and with it the CQ's arming, which would leave the channel deaf for good.
    /// A poll that finds nothing re-arms the CQs (mlx5e recovers a lost event only from a TX
    /// timeout, `mlx5e_health_channel_eq_recover`; a receive-only channel never recovers).
    pub(crate) fn watch(&self) {
        let Some(st) = self.priv_.stats(self.ix) else {
            return;
        };
        let events = st.events.load(Ordering::Relaxed);
        if self.watched.swap(events, Ordering::Relaxed) == events {
            ChannelStats::add(&st.eq_rearm, 1);
            self.napi.schedule();
        }
    }

    /// Stops polling: disables NAPI and detaches the CQ handler. The channel is dropped by
    /// its owner afterwards (which destroys the RQ and the CQs).
    pub(crate) fn stop(&self) {
        self.napi.disable();
        // DIM's work must not modify the CQs once they go: wait for it.
        self.napi.with_disabled(|p| p.dims = Dims::default());
        self.kick.clear();
    }

    /// Turns adaptive moderation on or off on the channel's CQs (`ethtool -C`), polling
    /// stopped meanwhile. A CQ DIM leaves keeps the moderation DIM last gave it: the caller
    /// sets the static one.
    pub(crate) fn set_adaptive(
        &self,
        mdev: &Arc<Mdev>,
        on: Adaptive,
        rx_mode: DimPeriodMode,
    ) -> Result {
        let r = self.napi.with_disabled(|p| {
            let keep = |d: &mut Option<CqDim>, want: bool| if want { d.take() } else { None };
            let (tx, rx) = (keep(&mut p.dims.tx, on.tx), keep(&mut p.dims.rx, on.rx));
            p.dims = Dims::default();
            let mut d = Dims::new(
                mdev,
                self.cqns,
                Adaptive {
                    tx: on.tx && tx.is_none(),
                    rx: on.rx && rx.is_none(),
                },
                rx_mode,
            )?;
            d.tx = d.tx.or(tx);
            d.rx = d.rx.or(rx);
            p.dims = d;
            Ok(())
        });
        self.napi.schedule();
        r
    }

    /// Schedules a poll (after the send ring was put back by a recovery: it re-arms).
    pub(crate) fn schedule(&self) {
        self.napi.schedule();
    }

    /// Recovers the queues an error completion stopped ([`RxRing::recover`], the XSK
    /// queues') with polling stopped, then polls again (process context).
    pub(crate) fn recover_rx(&self, st: &ChannelStats) -> Result<bool> {
        let r = self.napi.with_disabled(|p| p.recover(st));
        self.napi.schedule();
        r
    }

    /// Swaps the XDP program of a channel that runs one, polling stopped meanwhile (so no
    /// frame meets the old program after this returns).
    pub(crate) fn replace_xdp(&self, prog: BpfProg) -> Result {
        let r = self.napi.with_disabled(|p| {
            if let Some(x) = p.xsk.as_mut() {
                x.replace_xdp(prog.clone());
            }
            p.rx.replace_xdp(prog)
        });
        self.napi.schedule();
        r
    }

    /// Starts polling `xsk` beside the regular queues (en/xsk/setup.c
    /// `mlx5e_activate_xsk`); [`Channel::rqn`] names its RQ from now on. The caller then
    /// points the channel's RSS and direct TIR entries at it.
    pub(crate) fn attach_xsk(&self, xsk: XskQueues) {
        let rqn = xsk.rqn();
        let old = self.napi.with_disabled(|p| p.xsk.replace(xsk));
        self.xsk_rqn.store(rqn, Ordering::Release);
        self.napi.schedule();
        drop(old);
    }

    /// Makes [`Channel::rqn`] name the regular RQ again, before the caller points the
    /// channel's entries back at it and detaches the XSK queues.
    pub(crate) fn route_regular(&self) {
        self.xsk_rqn.store(0, Ordering::Release);
    }

    /// Stops polling the XSK queues and gives them back (en/xsk/setup.c
    /// `mlx5e_deactivate_xsk`), after the caller pointed the channel's entries back at the
    /// regular RQ; dropping them closes them (`mlx5e_close_xsk`). The regular RQ stayed
    /// posted all along.
    pub(crate) fn detach_xsk(&self) -> Option<XskQueues> {
        self.xsk_rqn.store(0, Ordering::Release);
        let x = self.napi.with_disabled(|p| p.xsk.take());
        self.napi.schedule();
        x
    }

    /// The RQ the channel's RSS and direct TIR entries deliver to: its XSK RQ while it has
    /// one, else its regular RQ.
    pub(crate) fn rqn(&self) -> u32 {
        match self.xsk_rqn.load(Ordering::Acquire) {
            0 => self.rqn,
            n => n,
        }
    }

    /// The channel index.
    pub(crate) fn ix(&self) -> u32 {
        self.ix
    }

    /// The send CQ's and the receive CQ's numbers.
    pub(crate) fn cqns(&self) -> [u32; 2] {
        self.cqns
    }
}
