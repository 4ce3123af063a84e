// SPDX-License-Identifier: GPL-2.0
//! The Ethernet health reporters `tx` and `rx` (mlx5e's en/reporter_tx.c, en/reporter_rx.c),
//! registered on the function's devlink instance by the root (devlink.rs).
//!
//! The netdev comes and goes with each HCA load, and a load runs either under the devlink
//! instance lock (fw_fatal's `recover`) or not (the watcher's retries, probe), so the netdev
//! cannot create and destroy a reporter itself (`devlink_health_reporter_create()` and
//! `_destroy()` take that lock). The reporter therefore lives as long as the instance, with
//! [`TxHealth`] as its data: the function (function.rs) makes it before its first load and hands it to
//! each netdev, which attaches its private data on probe and detaches it first thing when it
//! goes ([`TxHealth::attach`], [`TxHealth::detach`]); `diagnose` describes the attached
//! netdev's SQs.
//!
//! Both are a [`QueueHealth`], for the SQs (`tx`) or the RQs (`rx`); what follows says it
//! for the SQs, and holds for the RQs with `recover_rqs`.
//!
//! The SQ recovery itself stays in the netdev's work (en/netdev.rs `recover_sqs`), which
//! hands each error it handled, with its outcome, to [`TxHealth::push`]. The report is made
//! from a work item of [`TxHealth`], not from the netdev's: reporting takes the instance lock
//! (devlink recovers automatically under it), and the netdev's work is flushed when the
//! netdev goes, which fw_fatal's recovery does with that lock held, and `ndo_stop` under the
//! RTNL, which the same recovery takes (unregistering the netdev) under the instance lock.
//! The report's `recover` (auto-recover) only returns the outcome of the recovery already
//! done, so the error and recovery counts match the SQs recovered; a user's `devlink health
//! recover` recovers the SQs still in error now. Lock order: instance lock, then
//! [`TxHealth`]'s netdev lock, then the netdev's state lock; [`TxHealth`]'s work is flushed at
//! unbind only (`Function::stop`), where no lock is held.

use core::marker::PhantomData;

use ::devlink::{
    health,
    Fmsg, //
};
use kernel::{
    bindings, impl_has_work, new_mutex, new_work,
    prelude::*,
    str::CString,
    sync::{
        Arc,
        Mutex, //
    },
    workqueue::{
        self,
        Work,
        WorkItem, //
    },
};

use crate::en::netdev::EnPriv;

/// Which queues a [`QueueHealth`] reporter covers: the send queues (`tx`) or the receive
/// queues (`rx`), with the netdev's recovery and diagnosis of them.
pub(crate) trait QueueKind: Send + Sync + 'static {
    /// The reporter's name.
    const NAME: &'static CStr;
    /// What a queue is called in the report ("SQ", "RQ").
    const QUEUE: &'static str;
    /// The direction, in the report ("TX", "RX").
    const DIRECTION: &'static str;
    /// Recovers the queues in error now (a user's `devlink health recover`).
    fn recover(en: &EnPriv) -> Result;
    /// Describes the queues.
    fn diagnose(en: &EnPriv, fmsg: &mut Fmsg<'_>) -> Result;
}

/// The send queues (mlx5e's en/reporter_tx.c).
pub(crate) struct Tx;

impl QueueKind for Tx {
    const NAME: &'static CStr = c"tx";
    const QUEUE: &'static str = "SQ";
    const DIRECTION: &'static str = "TX";
    fn recover(en: &EnPriv) -> Result {
        en.recover_sqs()
    }
    fn diagnose(en: &EnPriv, fmsg: &mut Fmsg<'_>) -> Result {
        en.diagnose_sqs(fmsg)
    }
}

/// The receive queues (mlx5e's en/reporter_rx.c).
pub(crate) struct Rx;

impl QueueKind for Rx {
    const NAME: &'static CStr = c"rx";
    const QUEUE: &'static str = "RQ";
    const DIRECTION: &'static str = "RX";
    fn recover(en: &EnPriv) -> Result {
        en.recover_rqs()
    }
    fn diagnose(en: &EnPriv, fmsg: &mut Fmsg<'_>) -> Result {
        en.diagnose_rqs(fmsg)
    }
}

/// The `tx` reporter's data.
pub(crate) type TxHealth = QueueHealth<Tx>;
/// The `rx` reporter's data.
pub(crate) type RxHealth = QueueHealth<Rx>;
/// A handle on the `tx` reporter, for [`TxHealth`]'s work to report with.
pub(crate) type TxReporter = health::Reporter<TxHealth>;
/// A handle on the `rx` reporter.
pub(crate) type RxReporter = health::Reporter<RxHealth>;

/// A queue error the netdev handled: the report's context.
pub(crate) struct QueueErr {
    /// The SQ or RQ.
    pub(crate) qn: u32,
    /// Its channel.
    pub(crate) channel: u32,
    /// Whether the netdev's recovery brought it back.
    pub(crate) recovered: bool,
}

/// The data of a queue reporter (`tx` or `rx`): the current netdev and the queue errors to
/// report.
#[pin_data]
pub(crate) struct QueueHealth<K: QueueKind> {
    /// The netdev's private data while it is registered.
    #[pin]
    en: Mutex<Option<Arc<EnPriv>>>,
    /// Errors handled, not reported yet.
    #[pin]
    pending: Mutex<KVec<QueueErr>>,
    /// The reporter, from `Function::start` to `Function::stop`.
    #[pin]
    reporter: Mutex<Option<health::Reporter<QueueHealth<K>>>>,
    #[pin]
    work: Work<QueueHealth<K>, 0>,
    _kind: PhantomData<K>,
}

impl_has_work! {
    impl{K: QueueKind} HasWork<Self, 0> for QueueHealth<K> { self.work }
}

impl<K: QueueKind> WorkItem<0> for QueueHealth<K> {
    type Pointer = Arc<QueueHealth<K>>;

    fn run(this: Arc<QueueHealth<K>>) {
        this.report_pending();
    }
}

impl<K: QueueKind> QueueHealth<K> {
    /// A new one, with no netdev and no reporter yet.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                en <- new_mutex!(None, "cx4::queue_health_en"),
                pending <- new_mutex!(KVec::new(), "cx4::queue_health_pending"),
                reporter <- new_mutex!(None, "cx4::queue_health_reporter"),
                work <- new_work!("cx4::queue_health"),
                _kind: PhantomData,
            }),
            GFP_KERNEL,
        )
    }

    /// The netdev is registered: `diagnose` and `recover` reach it from now on.
    pub(crate) fn attach(&self, en: Arc<EnPriv>) {
        *self.en.lock() = Some(en);
    }

    /// The netdev goes: waits for a `diagnose` or `recover` in progress on it.
    pub(crate) fn detach(&self) {
        let en = self.en.lock().take();
        drop(en);
    }

    /// Sets (or with `None` clears) the reporter.
    pub(crate) fn set_reporter(&self, r: Option<health::Reporter<QueueHealth<K>>>) {
        let old = core::mem::replace(&mut *self.reporter.lock(), r);
        drop(old);
    }

    /// Queues errors the netdev handled, for the work to report (any context that may
    /// sleep; takes no devlink lock).
    pub(crate) fn push(this: &Arc<Self>, errs: KVec<QueueErr>) {
        if errs.is_empty() {
            return;
        }
        {
            let mut p = this.pending.lock();
            if p.is_empty() {
                *p = errs;
            } else {
                for e in errs {
                    // Out of memory: that error goes unreported (it was handled).
                    if p.push(e, GFP_KERNEL).is_err() {
                        break;
                    }
                }
            }
        }
        // Already queued is fine.
        let _ = workqueue::system().enqueue::<Arc<QueueHealth<K>>, 0>(this.clone());
    }

    /// Waits for the report work (unbind, after the netdev is gone).
    pub(crate) fn flush(&self) {
        kapi::flush_work(&self.work);
    }

    fn report_pending(&self) {
        let errs = core::mem::take(&mut *self.pending.lock());
        let Some(r) = self.reporter.lock().clone() else {
            return;
        };
        for e in errs.iter() {
            let Ok(msg) = CString::try_from_fmt(fmt!(
                "{} error CQE on {} {:#x} (channel {})",
                K::DIRECTION,
                K::QUEUE,
                e.qn,
                e.channel
            )) else {
                continue;
            };
            match r.report(&msg, e) {
                // devlink declined to recover (the reporter was still in error from an
                // earlier failed recovery): this queue did come back, say so.
                Err(err) if e.recovered && err.to_errno() == -(bindings::ECANCELED as i32) => {
                    let _ = r.recovered();
                }
                _ => {}
            }
        }
    }
}

#[vtable]
impl<K: QueueKind> health::Operations for QueueHealth<K> {
    const NAME: &'static CStr = K::NAME;

    /// The error reported, and how the netdev's recovery went.
    type Context = QueueErr;

    fn recover(&self, error: Option<&QueueErr>) -> Result {
        match error {
            // After a report: the netdev's work already recovered (or could not).
            Some(e) if e.recovered => Ok(()),
            Some(_) => Err(EIO),
            // Asked for by user space: recover the queues in error now.
            None => match self.en.lock().as_ref() {
                Some(en) => K::recover(en),
                None => Err(ENODEV),
            },
        }
    }

    fn diagnose(&self, fmsg: &mut Fmsg<'_>) -> Result {
        match self.en.lock().as_ref() {
            Some(en) => K::diagnose(en, fmsg),
            None => {
                fmsg.put_str(c"netdev", c"none");
                Ok(())
            }
        }
    }
}

/// The queue reporters' data, made by the function (function.rs) before its first load and handed to
/// each netdev.
#[derive(Clone)]
pub(crate) struct EnHealth {
    /// The `tx` reporter's.
    pub(crate) tx: Arc<TxHealth>,
    /// The `rx` reporter's.
    pub(crate) rx: Arc<RxHealth>,
}

impl EnHealth {
    /// Both, with no netdev and no reporter yet.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            tx: TxHealth::new()?,
            rx: RxHealth::new()?,
        })
    }

    /// Sets (or clears) both reporters.
    pub(crate) fn set_reporters(&self, r: Option<(TxReporter, RxReporter)>) {
        let (tx, rx) = match r {
            Some((t, r)) => (Some(t), Some(r)),
            None => (None, None),
        };
        self.tx.set_reporter(tx);
        self.rx.set_reporter(rx);
    }

    /// Waits for both report works.
    pub(crate) fn flush(&self) {
        self.tx.flush();
        self.rx.flush();
    }
}
