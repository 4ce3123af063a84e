// SPDX-License-Identifier: GPL-2.0
//! The bound PCI function across reloads (upstream: health.c's recovery flow and
//! `mlx5_unload_one`/`mlx5_load_one`).
//!
//! [`Function`] owns the brought-up core and layers ([`Layers`]) for as long as the driver is
//! bound. A watcher (a
//! delayed work item) notices when the HCA went into the error state (a fatal health syndrome,
//! a stopped health counter, an unresponsive command interface) and reports it, once per
//! fault, to devlink's `fw_fatal` health reporter (devlink.rs). Recovery tears the HCA down
//! (commands fail fast by then), resets the function (PCI function-level reset, our
//! substitute for the firmware's software reset, which needs the vendor-specific capability
//! the modelled card does not have), and brings the HCA up again.
//!
//! Who recovers (as upstream, devlink drives it):
//! - the report makes devlink call the reporter's `recover` (its auto-recover, on by
//!   default), which runs the first attempt ([`Function::recover`]) before the report
//!   returns; its success counts as devlink's recovery;
//! - a device that still reports a fatal condition after the reset stays down and the
//!   reporter in error; the watcher then retries with a back-off until the condition clears
//!   or the driver unbinds, and tells devlink when an attempt succeeds;
//! - with the `auto_recover` module parameter at 0 neither happens: `recover` declines
//!   automatic attempts (`ECANCELED`), and the device stays failed until user space asks
//!   (`devlink health recover`: one attempt per request).

use core::sync::atomic::{
    AtomicBool,
    AtomicU32,
    Ordering, //
};

use ::devlink::{
    health,
    Fmsg, //
};
use cx4_hw::iseg::health_synd;
use kapi::BoundDevice;
use kernel::{
    bindings,
    device::Bound,
    impl_has_delayed_work, new_delayed_work, new_mutex, pci,
    prelude::*,
    sync::{
        lock::{
            mutex::MutexBackend,
            Guard, //
        },
        Arc,
        Mutex, //
    },
    time::{
        msecs_to_jiffies,
        Delta, //
    },
    workqueue::{
        self,
        DelayedWork,
        WorkItem, //
    },
};

use crate::{
    en::health::{
        EnHealth,
        RxReporter,
        TxReporter, //
    },
    hca::{
        Fault,
        FwInfo, //
    },
    health::Fatal,
    layers::Layers,
};

/// How often the watcher looks at a healthy HCA.
const WATCH_MS: u32 = 1000;
/// The longest wait between two recovery attempts.
const MAX_BACKOFF_MS: u32 = 8000;

/// What the recovery flow has seen, for reports (debugfs, devlink health).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecoveryStats {
    /// Fatal conditions noticed.
    pub(crate) errors: u32,
    /// Successful recoveries.
    pub(crate) recoveries: u32,
    /// Recovery attempts that failed (the device still faulty).
    pub(crate) failed_attempts: u32,
    /// The last fatal condition.
    pub(crate) last: Option<Fault>,
}

struct State {
    hca: Option<Layers>,
    /// The loaded HCA's fault was noticed and counted.
    faulted: bool,
    stats: RecoveryStats,
    /// Milliseconds until the next attempt while the HCA is down.
    backoff: u32,
    /// devlink's `fw_fatal` reporter, from [`Function::start`] on.
    reporter: Option<FwReporter>,
    /// The firmware of the last HCA brought up (`devlink dev info`).
    fw: FwInfo,
}

/// The bound function and its (re)loadable HCA.
#[pin_data]
pub(crate) struct Function {
    dev: BoundDevice,
    chip: &'static str,
    timeout: Delta,
    auto_recover: bool,
    stopping: AtomicBool,
    /// Attempts since the fault was noticed.
    attempts: AtomicU32,
    /// The `tx` and `rx` reporters' data, handed to each HCA load for its netdev.
    health: EnHealth,
    #[pin]
    state: Mutex<State>,
    #[pin]
    watch: DelayedWork<Function, 0>,
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 0> for Function { self.watch }
}

impl WorkItem<0> for Function {
    type Pointer = Arc<Function>;

    fn run(this: Arc<Function>) {
        if this.stopping.load(Ordering::Acquire) {
            return;
        }
        let next = this.tick();
        if !this.stopping.load(Ordering::Acquire) {
            Self::schedule(&this, next);
        }
    }
}

impl Function {
    /// Brings the HCA up for the first time (from probe); [`Function::start`] starts watching.
    pub(crate) fn new(
        pdev: &pci::Device<Bound>,
        chip: &'static str,
        timeout: Delta,
        auto_recover: bool,
    ) -> Result<Arc<Self>> {
        let health = EnHealth::new()?;
        let hca = Layers::load(pdev, chip, timeout, &health)?;
        let fw = hca.fw_info();
        // SAFETY: `Function` is the driver's data for `pdev`: unbind stops it (`Function::stop`
        // cancels the watcher, the only deferred user of `dev`) and drops it before unbind
        // completes; a failed probe drops it before probe returns.
        #[allow(unsafe_code)]
        let dev = unsafe { BoundDevice::new(pdev.as_ref()) };
        let this = Arc::pin_init(
            try_pin_init!(Self {
                dev,
                chip,
                timeout,
                auto_recover,
                stopping: AtomicBool::new(false),
                attempts: AtomicU32::new(0),
                health,
                state <- new_mutex!(State {
                    hca: Some(hca),
                    faulted: false,
                    stats: RecoveryStats::default(),
                    backoff: 0,
                    reporter: None,
                    fw,
                }),
                watch <- new_delayed_work!("cx4::recovery"),
            }),
            GFP_KERNEL,
        )?;
        Ok(this)
    }

    /// Starts watching the HCA; faults go to `reporter`, the netdev's SQ and RQ errors to
    /// `queues` (`tx`, `rx`).
    pub(crate) fn start(this: &Arc<Self>, reporter: FwReporter, queues: (TxReporter, RxReporter)) {
        this.state.lock().reporter = Some(reporter);
        this.health.set_reporters(Some(queues));
        Self::schedule(this, WATCH_MS);
    }

    /// The `tx` and `rx` reporters' data (devlink.rs creates the reporters on it).
    pub(crate) fn en_health(&self) -> &EnHealth {
        &self.health
    }

    /// The firmware version and PSID of the current HCA (of the last one brought up while it
    /// is down), for `devlink dev info` (under the devlink instance lock, like `recover`).
    pub(crate) fn fw_info(&self) -> FwInfo {
        self.state.lock().fw
    }

    fn schedule(this: &Arc<Self>, ms: u32) {
        // Already queued is fine.
        let _ = workqueue::system_long()
            .enqueue_delayed::<Arc<Function>, 0>(this.clone(), msecs_to_jiffies(ms));
    }

    /// What recovery has seen so far, and whether the HCA is up.
    pub(crate) fn stats(&self) -> (RecoveryStats, bool) {
        let g = self.state.lock();
        (g.stats, g.hca.as_ref().is_some_and(|h| h.fault().is_none()))
    }

    /// One recovery attempt now, for devlink's `recover` (under the devlink instance lock):
    /// `automatic` after a report, else asked for by user space. `Ok` when the HCA is up
    /// (again).
    pub(crate) fn recover(&self, automatic: bool) -> Result {
        if automatic && !self.auto_recover {
            return Err(Error::from_errno(-(bindings::ECANCELED as i32)));
        }
        let mut g = self.state.lock();
        if g.hca.as_ref().is_some_and(|h| h.fault().is_none()) {
            // Recovered meanwhile (by the watcher), or never failed.
            return Ok(());
        }
        self.attempt(&mut g)
    }

    /// One look at the HCA; returns when to look again (ms).
    fn tick(&self) -> u32 {
        let mut g = self.state.lock();
        if let Some(hca) = g.hca.as_ref() {
            let Some(fault) = hca.fault() else {
                return WATCH_MS;
            };
            if !g.faulted {
                g.faulted = true;
                g.stats.errors += 1;
                g.stats.last = Some(fault);
                self.attempts.store(0, Ordering::Relaxed);
                dev_err!(
                    self.dev.dev(),
                    "{}: fatal error ({}); {}\n",
                    self.chip,
                    fault,
                    if self.auto_recover {
                        "recovering: teardown, function reset, reload"
                    } else {
                        "automatic recovery is off (auto_recover=0)"
                    }
                );
                let reporter = g.reporter.clone();
                // devlink's locks come before ours: report without holding the state.
                drop(g);
                if let Some(r) = reporter {
                    // devlink runs the first attempt (`recover`) before this returns; its
                    // outcome shows in the state at the next look.
                    let _ = r.report(c"firmware fatal error", &fault);
                }
                return WATCH_MS;
            }
        }
        // Faulted or down, and devlink's attempt (if any) failed: retry if allowed.
        if !self.auto_recover {
            return WATCH_MS;
        }
        let recovered = self.attempt(&mut g).is_ok();
        let next = if recovered { WATCH_MS } else { g.backoff };
        let reporter = g.reporter.clone();
        drop(g);
        if let (true, Some(r)) = (recovered, reporter) {
            let _ = r.recovered();
        }
        next
    }

    /// Tears a faulted HCA down, resets the function and brings the HCA up again.
    fn attempt(&self, g: &mut Guard<'_, State, MutexBackend>) -> Result {
        // Checked under the state lock, which `stop` takes after setting it.
        if self.stopping.load(Ordering::Acquire) {
            return Err(ENODEV);
        }
        // Commands fail fast by now: the teardown is quick and frees what the device held.
        if g.hca.take().is_some() {
            g.backoff = 0;
        }
        let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        match self.reload() {
            Ok(hca) => {
                g.fw = hca.fw_info();
                g.hca = Some(hca);
                g.faulted = false;
                g.stats.recoveries += 1;
                g.backoff = 0;
                self.attempts.store(0, Ordering::Relaxed);
                dev_info!(
                    self.dev.dev(),
                    "{}: recovered after {} attempt(s)\n",
                    self.chip,
                    n
                );
                Ok(())
            }
            Err(e) => {
                g.stats.failed_attempts += 1;
                g.backoff = (g.backoff * 2).clamp(WATCH_MS, MAX_BACKOFF_MS);
                if n == 1 || n % 10 == 0 {
                    dev_warn!(
                        self.dev.dev(),
                        "{}: recovery attempt {} failed ({:?}); {}\n",
                        self.chip,
                        n,
                        e,
                        if self.auto_recover {
                            "retrying with a back-off"
                        } else {
                            "stays failed until a recovery is requested"
                        }
                    );
                }
                Err(e)
            }
        }
    }

    /// Function reset, then a fresh bring-up.
    fn reload(&self) -> Result<Layers> {
        let pdev: &pci::Device<Bound> = self.dev.get().try_into()?;
        // A remove in progress holds the device lock (and waits for this work): give way.
        kapi::try_reset_function(pdev)?;
        Layers::load(pdev, self.chip, self.timeout, &self.health)
    }

    /// Stops the watcher and tears the HCA down (unbind).
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        // A pending run is started now and sees `stopping`; a running one finishes first.
        while kapi::flush_delayed_work(&self.watch) {}
        let mut g = self.state.lock();
        g.hca = None;
        g.reporter = None;
        drop(g);
        // The netdev is gone: no more queue errors are queued; the last reports finish (into
        // a destroyed reporter by now: refused) before the module may go.
        self.health.flush();
        self.health.set_reporters(None);
    }
}

/// A handle on the `fw_fatal` reporter, which the watcher reports with.
pub(crate) type FwReporter = health::Reporter<FwFatal>;

/// The `fw_fatal` reporter's callback data (health.c `mlx5_fw_fatal_reporter_ops`):
/// `recover` runs a recovery attempt ([`Function::recover`]), `diagnose` describes the health
/// state from [`Function::stats`]. devlink.rs registers it.
pub(crate) struct FwFatal {
    pub(crate) function: Arc<Function>,
}

#[vtable]
impl health::Operations for FwFatal {
    const NAME: &'static CStr = c"fw_fatal";

    /// The fault that was reported.
    type Context = Fault;

    fn recover(&self, error: Option<&Fault>) -> Result {
        self.function.recover(error.is_some())
    }

    fn diagnose(&self, fmsg: &mut Fmsg<'_>) -> Result {
        let (stats, up) = self.function.stats();
        // While the function is down, the fault that took it down.
        let current = if up { None } else { stats.last };
        let synd = match current {
            Some(Fault::Health(Fatal::Syndrome(s))) => s,
            _ => 0,
        };
        let name = if synd != 0 {
            health_synd::describe(synd)
        } else {
            "none"
        };
        fmsg.put_str(c"state", if up { c"ok" } else { c"error" });
        fmsg.put_fmt(c"syndrome", fmt!("{:#x}", synd))?;
        fmsg.put_fmt(c"syndrome_name", fmt!("{}", name))?;
        match current {
            Some(f) => fmsg.put_fmt(c"reason", fmt!("{}", f))?,
            None => fmsg.put_str(c"reason", c"none"),
        }
        fmsg.put_u32(c"errors", stats.errors);
        fmsg.put_u32(c"recoveries", stats.recoveries);
        fmsg.put_u32(c"failed_attempts", stats.failed_attempts);
        Ok(())
    }
}
