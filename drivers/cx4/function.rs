// SPDX-License-Identifier: GPL-2.0
//! The bound PCI function across reloads (upstream: health.c's recovery flow and
//! `mlx5_unload_one`/`mlx5_load_one`).
//!
//! [`Function`] owns the brought-up [`Hca`] for as long as the driver is bound. A watcher (a
//! delayed work item) notices when the HCA went into the error state (a fatal health syndrome,
//! a stopped health counter, an unresponsive command interface) and recovers it: it tears the
//! HCA down (commands fail fast by then), resets the function (PCI function-level reset, our
//! substitute for the firmware's software reset, which needs the vendor-specific capability
//! the modelled card does not have), and brings the HCA up again. A device that still reports
//! a fatal condition after the reset stays down; the watcher retries with a back-off until the
//! condition clears or the driver unbinds.
//!
//! Recovery runs by itself unless the `auto_recover` module parameter is 0 (then only a
//! request through [`Function::recover`], e.g. from devlink health, starts it).

use core::sync::atomic::{
    AtomicBool,
    AtomicU32,
    Ordering, //
};

use kernel::{
    device::Bound,
    impl_has_delayed_work, new_delayed_work, new_mutex, pci,
    prelude::*,
    sync::{
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
    hca::{
        Fault,
        Hca, //
    },
    kapi::{
        self,
        BoundDevice, //
    },
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
    hca: Option<Hca>,
    /// The loaded HCA's fault was noticed and counted.
    faulted: bool,
    stats: RecoveryStats,
    /// Milliseconds until the next attempt while the HCA is down.
    backoff: u32,
}

/// The bound function and its (re)loadable HCA.
#[pin_data]
pub(crate) struct Function {
    dev: BoundDevice,
    chip: &'static str,
    timeout: Delta,
    auto_recover: bool,
    stopping: AtomicBool,
    /// A recovery was requested (devlink health recover) while automatic recovery is off.
    requested: AtomicBool,
    attempts: AtomicU32,
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
    /// Brings the HCA up for the first time (from probe) and starts watching it.
    pub(crate) fn new(
        pdev: &pci::Device<Bound>,
        chip: &'static str,
        timeout: Delta,
        auto_recover: bool,
    ) -> Result<Arc<Self>> {
        let hca = Hca::load(pdev, chip, timeout)?;
        let this = Arc::pin_init(
            try_pin_init!(Self {
                dev: BoundDevice::new(pdev.as_ref()),
                chip,
                timeout,
                auto_recover,
                stopping: AtomicBool::new(false),
                requested: AtomicBool::new(false),
                attempts: AtomicU32::new(0),
                state <- new_mutex!(State {
                    hca: Some(hca),
                    faulted: false,
                    stats: RecoveryStats::default(),
                    backoff: 0,
                }),
                watch <- new_delayed_work!("cx4::recovery"),
            }),
            GFP_KERNEL,
        )?;
        Self::schedule(&this, WATCH_MS);
        Ok(this)
    }

    fn schedule(this: &Arc<Self>, ms: u32) {
        // Already queued is fine.
        let _ = workqueue::system_long()
            .enqueue_delayed::<Arc<Function>, 0>(this.clone(), msecs_to_jiffies(ms));
    }

    /// What recovery has seen so far, and whether the HCA is up.
    #[expect(dead_code, reason = "for the devlink health reporter (in progress)")]
    pub(crate) fn stats(&self) -> (RecoveryStats, bool) {
        let g = self.state.lock();
        (g.stats, g.hca.as_ref().is_some_and(|h| h.fault().is_none()))
    }

    /// Asks for a recovery now (when automatic recovery is off, the only way to start one).
    #[expect(dead_code, reason = "for the devlink health reporter (in progress)")]
    pub(crate) fn recover(this: &Arc<Self>) {
        this.requested.store(true, Ordering::Release);
        Self::schedule(this, 0);
    }

    /// One look at the HCA; returns when to look again (ms).
    fn tick(&self) -> u32 {
        let mut g = self.state.lock();
        let requested = self.requested.swap(false, Ordering::AcqRel);
        if let Some(hca) = g.hca.as_ref() {
            let Some(fault) = hca.fault() else {
                return WATCH_MS;
            };
            if !g.faulted {
                g.faulted = true;
                g.stats.errors += 1;
                g.stats.last = Some(fault);
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
            }
            if !self.auto_recover && !requested {
                // Stays failed (commands fail fast) until a recovery is requested.
                return WATCH_MS;
            }
            // Commands fail fast by now: the teardown is quick and frees what the device held.
            g.hca = None;
            g.backoff = 0;
        } else if !self.auto_recover && !requested {
            return WATCH_MS;
        }
        // Down: reset the function and bring the HCA up again.
        let n = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
        match self.reload() {
            Ok(hca) => {
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
                WATCH_MS
            }
            Err(e) => {
                g.stats.failed_attempts += 1;
                g.backoff = (g.backoff * 2).clamp(WATCH_MS, MAX_BACKOFF_MS);
                if n == 1 || n % 10 == 0 {
                    dev_warn!(
                        self.dev.dev(),
                        "{}: recovery attempt {} failed ({:?}); retrying every {} ms\n",
                        self.chip,
                        n,
                        e,
                        g.backoff
                    );
                }
                g.backoff
            }
        }
    }

    /// Function reset, then a fresh bring-up.
    fn reload(&self) -> Result<Hca> {
        let pdev: &pci::Device<Bound> = self.dev.get().try_into()?;
        // A remove in progress holds the device lock (and waits for this work): give way.
        kapi::try_reset_function(pdev)?;
        Hca::load(pdev, self.chip, self.timeout)
    }

    /// Stops the watcher and tears the HCA down (unbind).
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        // A pending run is started now and sees `stopping`; a running one finishes first.
        while kapi::flush_delayed_work(&self.watch) {}
        self.state.lock().hca = None;
    }
}
