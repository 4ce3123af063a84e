// SPDX-License-Identifier: GPL-2.0
//! One channel (en_main.c `mlx5e_open_channel`): a send CQ + SQ and a receive CQ + RQ on one
//! completion EQ, polled by one NAPI instance.
//!
//! Ownership: the NAPI poller owns the receive CQ and ring; the send ring and its CQ live in
//! the netdev's per-queue TX slot ([`super::netdev::EnPriv`]), shared by `ndo_start_xmit` and the
//! poll under an interrupt-safe lock. The CQs report completions to a [`Kick`], which
//! schedules the channel's NAPI from the EQ's interrupt handler.

use core::sync::atomic::Ordering;

use kapi::{
    new_irq_safe_lock,
    IrqSafeLock, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};
use netdev::{
    napi::{
        Napi,
        NapiContext,
        NapiPoller, //
    },
    Device,
};

use crate::{
    cq::{
        Cq,
        CqHandler, //
    },
    en::{
        netdev::EnPriv,
        rx::RxRing,
        stats::ChannelStats, //
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

    /// Forgets the channel (after its NAPI is disabled).
    pub(crate) fn clear(&self) {
        let old = self.target.lock().take();
        drop(old);
    }
}

impl CqHandler for Kick {
    fn completion(&self, _cqn: u32) {
        if let Some(ch) = self.target.lock().as_ref() {
            if let Some(st) = ch.priv_.stats(ch.ix) {
                ChannelStats::add(&st.events, 1);
            }
            ch.napi.schedule();
        }
    }

    fn error(&self, cqn: u32, syndrome: u8) {
        if let Some(ch) = self.target.lock().as_ref() {
            pr_err!(
                "cx4: channel {}: CQ {:#x} error event, syndrome {:#x}\n",
                ch.ix,
                cqn,
                syndrome
            );
        }
    }
}

/// The NAPI poller of a channel.
pub(crate) struct ChannelPoll {
    // Field order is drop order: the RQ before its CQ; the send CQ after the SQ, which the
    // channel's owner destroys before dropping the channel.
    rx: RxRing,
    rcq: Cq,
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
                if ring.complete(txq, budget, st) {
                    EnPriv::schedule_recovery(self.priv_.clone());
                }
            }
        }
        let budget_u = usize::try_from(budget).unwrap_or(0);
        let rxcsum = self.priv_.rxcsum.load(Ordering::Relaxed);
        let work = self.rx.poll(&mut self.rcq, napi, budget_u, rxcsum, st);
        if self.rx.in_error() {
            EnPriv::rx_error(&self.priv_, self.ix);
        }
        if work >= budget_u || self.rx.short() {
            return budget;
        }
        let work = work as i32;
        if napi.complete_done(work) {
            ChannelStats::add(&st.arms, 1);
            if let Some(slot) = self.priv_.tx_slot(self.ix) {
                if let Some(ring) = &mut *slot.lock() {
                    let _ = ring.arm();
                }
            }
            let _ = self.rcq.rearm();
        }
        work
    }
}

impl ChannelPoll {
    /// The poller of channel `ix` over its receive CQ and ring (the send ring and CQ are in
    /// the TX slot).
    pub(crate) fn new(priv_: Arc<EnPriv>, ix: u32, rcq: Cq, rx: RxRing) -> Self {
        Self {
            rx,
            rcq,
            priv_,
            ix,
        }
    }
}

/// An open channel.
#[pin_data]
pub(crate) struct Channel {
    ix: u32,
    rqn: u32,
    /// The send and receive CQs (for `ethtool -C`).
    cqns: [u32; 2],
    priv_: Arc<EnPriv>,
    kick: Arc<Kick>,
    #[pin]
    napi: Napi<ChannelPoll>,
}

impl Channel {
    /// Starts channel `ix`: its NAPI instance on `dev` polls `poll`; `kick` (the CQs'
    /// handler) schedules it from now on. The first poll runs at once and arms the CQs.
    /// `tcqn` is the send CQ (in the channel's TX slot).
    pub(crate) fn start(
        dev: &Device,
        priv_: Arc<EnPriv>,
        ix: u32,
        kick: Arc<Kick>,
        poll: ChannelPoll,
        tcqn: u32,
    ) -> Result<Arc<Self>> {
        let k = kick.clone();
        let rqn = poll.rx.rqn();
        let cqns = [tcqn, poll.rcq.cqn()];
        let ch = Arc::pin_init(
            try_pin_init!(Self {
                ix,
                rqn,
                cqns,
                priv_,
                kick: k,
                napi <- Napi::new(dev, poll),
            }),
            GFP_KERNEL,
        )?;
        kick.set(ch.clone());
        ch.napi.enable();
        ch.napi.schedule();
        Ok(ch)
    }

    /// Stops polling: disables NAPI and detaches the CQ handler. The channel is dropped by
    /// its owner afterwards (which destroys the RQ and the CQs).
    pub(crate) fn stop(&self) {
        self.napi.disable();
        self.kick.clear();
    }

    /// Schedules a poll (after the send ring was put back by a recovery: it re-arms).
    pub(crate) fn schedule(&self) {
        self.napi.schedule();
    }

    /// Recovers the RQ after an error completion ([`RxRing::recover`]) with polling
    /// stopped, then polls again (process context).
    pub(crate) fn recover_rx(&self, st: &ChannelStats) -> Result<bool> {
        let r = self.napi.with_disabled(|p| p.rx.recover(&mut p.rcq, st));
        self.napi.schedule();
        r
    }

    /// The RQ number.
    pub(crate) fn rqn(&self) -> u32 {
        self.rqn
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
