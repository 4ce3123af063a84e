// SPDX-License-Identifier: GPL-2.0
//! Queue error recovery and its devlink side (en/reporter_tx.c, en/reporter_rx.c): the
//! recovery work resets each send or receive queue an error completion put in error, reports
//! it to devlink's `tx` or `rx` reporter, and the reporters' `diagnose` lists the queues.

use core::sync::atomic::Ordering;

use kernel::{
    prelude::*,
    sync::ArcBorrow,
    time::{
        delay::fsleep,
        Delta, //
    },
};
use netdev::{
    rtnl::Rtnl,
    Device, //
};

use ::devlink::Fmsg;

use super::EnPriv;
use crate::en::{
    channel::Channel,
    health::{
        QueueErr,
        RxHealth,
        TxHealth, //
    },
};

/// The queues a recovery pass handles.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Send queues.
    Sq,
    /// Receive queues.
    Rq,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Self::Sq => "SQ",
            Self::Rq => "RQ",
        }
    }
}

/// What `diagnose` shows of one queue: its number (`None`: it is down), whether it waits for
/// recovery, its error completions and recoveries.
struct QueueDiag {
    qn: Option<u32>,
    in_error: bool,
    errors: u64,
    recovered: u64,
}

impl EnPriv {
    /// The SQ recovery work (en/reporter_tx.c `mlx5e_tx_reporter_err_cqe_recover`): every
    /// send ring in error is taken out of its slot (xmit drops meanwhile), reset to ready,
    /// and put back; its channel is polled again to re-arm the CQ. Each SQ handled goes to
    /// devlink's `tx` reporter (reported from its own work: see devlink.rs). Also devlink's
    /// `recover` of that reporter when user space asks (under the instance lock, which
    /// nothing here takes). `EIO` if an SQ could not be recovered.
    pub(crate) fn recover_sqs(&self) -> Result {
        let mut errs = KVec::new();
        let r = self.recover(Kind::Sq, &mut errs);
        // The report is made without our state lock (devlink's `diagnose` takes it under
        // the instance lock).
        TxHealth::push(&self.health.tx, errs);
        r
    }

    /// The RQ recovery work (en/reporter_rx.c `mlx5e_rx_reporter_err_rq_cqe_recover`): the
    /// poller of each channel whose RQ saw an error completion is stopped, its RQ reset to
    /// ready with fresh buffers, and polling restarted. Each RQ handled goes to devlink's `rx`
    /// reporter. Also that reporter's `recover`. `EIO` if an RQ could not be recovered.
    pub(crate) fn recover_rqs(&self) -> Result {
        let mut errs = KVec::new();
        let r = self.recover(Kind::Rq, &mut errs);
        RxHealth::push(&self.health.rx, errs);
        r
    }

    /// After a CQ error event (en_main.c `mlx5e_cq_error_event` only reports it; the CQ is
    /// dead until its channel is made again): closes and reopens the channels, as `ethtool -L`
    /// with the same count would, under the RTNL as the stack holds it for `ndo_open`. The RTNL
    /// is only tried, as mlx5e's `mlx5e_tx_timeout_work` does: `ndo_stop` holds it while it
    /// waits for this work, and then `closing` says to give up. Reported to devlink's `rx`
    /// reporter as a recovery of every channel's RQ.
    pub(crate) fn reopen_after_cq_error(this: ArcBorrow<'_, Self>) {
        let _rtnl = loop {
            if let Some(r) = Rtnl::try_lock() {
                break r;
            }
            if this.closing.load(Ordering::Acquire) {
                return;
            }
            fsleep(Delta::from_millis(20));
        };
        let mut g = this.state.lock();
        let Some(dref) = g.dev.clone().filter(|_| g.open.is_some()) else {
            return;
        };
        let dev = dref.device();
        this.close_locked(dev, &mut g);
        let r = Self::open_locked(this, dev, &mut g);
        // The RQs the reopen made (none if it failed: that failure is then reported alone).
        let rqns = g.open.as_ref().map(|o| o.rqns()).transpose();
        drop(g);
        let mut errs = KVec::new();
        for (ix, &qn) in rqns.ok().flatten().iter().flatten().enumerate() {
            let _ = errs.push(
                QueueErr {
                    qn,
                    channel: ix as u32,
                    recovered: true,
                },
                GFP_KERNEL,
            );
        }
        RxHealth::push(&this.health.rx, errs);
        match r {
            Ok(()) => dev_warn!(
                this.dma_dev.dev(),
                "{}: channels reopened after a CQ error event\n",
                dev.name()
            ),
            Err(e) => dev_err!(
                this.dma_dev.dev(),
                "{}: channels could not be reopened after a CQ error event: {:?}\n",
                dev.name(),
                e
            ),
        }
    }

    /// Recovers the queues of `kind` in error on every open channel, noting each in `errs`.
    fn recover(&self, kind: Kind, errs: &mut KVec<QueueErr>) -> Result {
        let g = self.state.lock();
        let (Some(open), Some(dref)) = (g.open.as_ref(), g.dev.as_ref()) else {
            return Ok(());
        };
        let dev = dref.device();
        let mut result = Ok(());
        for ch in open.channels.iter() {
            let ix = ch.ix();
            let done = match kind {
                Kind::Sq => self.recover_sq(dev, ch),
                Kind::Rq => self.recover_rq(ch),
            };
            let Some((qn, r)) = done else {
                continue;
            };
            // Out of memory: this one goes unreported.
            let _ = errs.push(
                QueueErr {
                    qn,
                    channel: ix,
                    recovered: r.is_ok(),
                },
                GFP_KERNEL,
            );
            match r {
                Ok(()) => dev_warn!(
                    self.dma_dev.dev(),
                    "{}: {} {:#x} of channel {} recovered after an error completion\n",
                    dev.name(),
                    kind.name(),
                    qn,
                    ix
                ),
                Err(e) => {
                    dev_err!(
                        self.dma_dev.dev(),
                        "{}: {} {:#x} recovery failed: {:?}; the queue stays down\n",
                        dev.name(),
                        kind.name(),
                        qn,
                        e
                    );
                    result = Err(EIO);
                }
            }
        }
        result
    }

    /// Recovers the SQ of `ch` if it is in error: its SQ number and the outcome. A ring that
    /// could not be recovered stays out of its slot (the queue is down).
    fn recover_sq(&self, dev: &Device, ch: &Channel) -> Option<(u32, Result)> {
        let ix = ch.ix();
        let slot = self.tx_slot(ix)?;
        let (txq, st) = (dev.tx_queue(ix)?, self.stats(ix)?);
        if !slot.lock().as_ref().is_some_and(|r| r.in_error) {
            return None;
        }
        let mut ring = slot.lock().take()?;
        let sqn = ring.sqn();
        let r = ring.recover(txq, st).map(|_| ());
        if r.is_ok() {
            let old = slot.lock().replace(ring);
            drop(old);
            ch.schedule();
        }
        Some((sqn, r))
    }

    /// Recovers the RQ of `ch` if it saw an error completion: its RQ number and the outcome.
    /// One that could not be recovered stays flagged, so that a later `devlink health
    /// recover` tries it again.
    fn recover_rq(&self, ch: &Channel) -> Option<(u32, Result)> {
        let ix = ch.ix();
        let st = self.stats(ix)?;
        let flag = self.rx_err.get(ix as usize)?;
        if !flag.swap(false, Ordering::AcqRel) {
            return None;
        }
        let r = ch.recover_rx(st).map(|_| ());
        if r.is_err() {
            flag.store(true, Ordering::Release);
        }
        Some((ch.rqn(), r))
    }

    /// A reporter's `diagnose`: the netdev, whether it is open, and `name` = one object per
    /// open channel's queue from `queue`, with counters named `errors` and `recovered`.
    fn diagnose(
        &self,
        fmsg: &mut Fmsg<'_>,
        name: &CStr,
        qn: &CStr,
        (errors, recovered): (&CStr, &CStr),
        queue: impl Fn(&Channel) -> QueueDiag,
    ) -> Result {
        let g = self.state.lock();
        match g.dev.as_ref() {
            Some(d) => fmsg.put_str(c"netdev", d.device().name()),
            None => fmsg.put_str(c"netdev", c"none"),
        }
        fmsg.put_bool(c"open", g.open.is_some());
        fmsg.put_array(name, |arr| {
            let Some(open) = g.open.as_ref() else {
                return Ok(());
            };
            for ch in open.channels.iter() {
                let d = queue(ch);
                arr.put_object(|f| {
                    f.put_u32(c"channel", ch.ix());
                    match d.qn {
                        Some(n) => {
                            f.put_fmt(qn, fmt!("{:#x}", n))?;
                            f.put_bool(c"in_error", d.in_error);
                            f.put_str(c"state", if d.in_error { c"error" } else { c"ok" });
                        }
                        // Its recovery failed: the queue stays down.
                        None => f.put_str(c"state", c"down"),
                    }
                    f.put_u64(errors, d.errors);
                    f.put_u64(recovered, d.recovered);
                    Ok(())
                })?;
            }
            Ok(())
        })
    }

    /// devlink `rx` reporter's `diagnose` (en/reporter_rx.c `mlx5e_rx_reporter_diagnose`):
    /// the RQ of each open channel, whether it waits for recovery, its error counters.
    pub(crate) fn diagnose_rqs(&self, fmsg: &mut Fmsg<'_>) -> Result {
        self.diagnose(fmsg, c"RQs", c"rqn", (c"rx_wqe_err", c"rx_recover"), |ch| {
            let ix = ch.ix();
            let (errors, recovered) = self.stats(ix).map_or((0, 0), |st| {
                (
                    st.rx_cqe_err.load(Ordering::Relaxed),
                    st.rx_recover.load(Ordering::Relaxed),
                )
            });
            QueueDiag {
                qn: Some(ch.rqn()),
                in_error: self
                    .rx_err
                    .get(ix as usize)
                    .is_some_and(|f| f.load(Ordering::Acquire)),
                errors,
                recovered,
            }
        })
    }

    /// devlink `tx` reporter's `diagnose` (en/reporter_tx.c `mlx5e_tx_reporter_diagnose`):
    /// the SQ of each open channel, its state and error counters.
    pub(crate) fn diagnose_sqs(&self, fmsg: &mut Fmsg<'_>) -> Result {
        self.diagnose(fmsg, c"SQs", c"sqn", (c"tx_cqe_err", c"tx_recover"), |ch| {
            let ix = ch.ix();
            // Read under the slot's spinlock; the message allocates, so it is filled
            // afterwards.
            let ring = self
                .tx_slot(ix)
                .and_then(|s| s.lock().as_ref().map(|r| (r.sqn(), r.in_error)));
            let (errors, recovered) = self.stats(ix).map_or((0, 0), |st| {
                (
                    st.tx_cqe_err.load(Ordering::Relaxed),
                    st.tx_recover.load(Ordering::Relaxed),
                )
            });
            QueueDiag {
                qn: ring.map(|(n, _)| n),
                in_error: ring.is_some_and(|(_, e)| e),
                errors,
                recovered,
            }
        })
    }
}
