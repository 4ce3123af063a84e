// SPDX-License-Identifier: GPL-2.0
//! Device health (core/health.c): the initialization segment's health buffer and counter are
//! polled every 2 s from a delayed work item. A fatal condition (firmware version all-ones,
//! NIC interface disabled or in software reset, a syndrome with the recovery-flow bit) or a
//! health counter that stops moving marks the device in error: the command queue fails every
//! waiting and new command with `ENXIO`, a report goes to dmesg and debugfs, and the device is
//! left cleanly failed until it is unbound.

use core::{
    fmt,
    sync::atomic::{
        AtomicBool,
        AtomicU32,
        AtomicU64,
        Ordering, //
    },
};

use kernel::{
    prelude::*,
    sync::Arc,
    time::msecs_to_jiffies,
    workqueue, //
};

use crate::{
    iseg::Health,
    mdev::{
        Mdev,
        HEALTH_WORK, //
    },
};

/// Poll period (health.c `MLX5_HEALTH_POLL_INTERVAL`, 2 s).
const POLL_MS: u32 = 2000;
/// Polls without a health counter change before the device counts as dead (health.c
/// `MAX_MISSES`).
const MAX_MISSES: u32 = 3;

/// health.c's description of a health syndrome (the schema's checked code table).
fn synd_name(synd: u8) -> &'static str {
    cx4_hw::iseg::health_synd::describe(synd)
}

/// Why the device is considered failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fatal {
    /// BAR0 reads fail: the device is gone.
    Gone,
    /// The health buffer's firmware version reads all-ones.
    FwVersion,
    /// The NIC interface is disabled or in software reset.
    NicInterface(u32),
    /// A health syndrome with the recovery-flow-required bit.
    Syndrome(u8),
    /// The health counter stopped.
    CounterStalled,
}

impl kernel::fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fatal::Gone => f.write_str("device gone (BAR0 unreadable)"),
            Fatal::FwVersion => f.write_str("firmware version reads all-ones"),
            Fatal::NicInterface(n) => write!(f, "NIC interface down (state {n})"),
            Fatal::Syndrome(s) => write!(f, "health syndrome {:#x}: {}", s, synd_name(s)),
            Fatal::CounterStalled => f.write_str("health counter stopped"),
        }
    }
}

/// Health state of one function.
pub(crate) struct HealthState {
    stop: AtomicBool,
    /// `mark_failed` has run (or is running): it runs once.
    marking: AtomicBool,
    failed: AtomicBool,
    reason: AtomicU32,
    synd: AtomicU32,
    /// The NIC interface state that failed the device (`Fatal::NicInterface`).
    nic_state: AtomicU32,
    last_counter: AtomicU32,
    misses: AtomicU32,
    polls: AtomicU64,
}

impl HealthState {
    /// Not yet polled.
    pub(crate) fn new() -> Self {
        Self {
            stop: AtomicBool::new(true),
            marking: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            reason: AtomicU32::new(0),
            synd: AtomicU32::new(0),
            nic_state: AtomicU32::new(0),
            last_counter: AtomicU32::new(0),
            misses: AtomicU32::new(0),
            polls: AtomicU64::new(0),
        }
    }

    /// Whether the device was marked in error.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Why the device was marked in error, if it was.
    pub(crate) fn fatal(&self) -> Option<Fatal> {
        if !self.failed() {
            return None;
        }
        Some(match self.reason.load(Ordering::Relaxed) {
            1 => Fatal::Gone,
            2 => Fatal::FwVersion,
            3 => Fatal::NicInterface(self.nic_state.load(Ordering::Relaxed)),
            4 => Fatal::Syndrome(self.synd.load(Ordering::Relaxed) as u8),
            _ => Fatal::CounterStalled,
        })
    }

    /// The debugfs report.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let synd = self.synd.load(Ordering::Relaxed) as u8;
        writeln!(
            f,
            "state {}\npolls {}\nhealth_counter {}\nmisses {}\nsyndrome {:#x} ({})\nreason {}",
            if self.failed() { "error" } else { "ok" },
            self.polls.load(Ordering::Relaxed),
            self.last_counter.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
            synd,
            if synd != 0 { synd_name(synd) } else { "none" },
            match self.reason.load(Ordering::Relaxed) {
                0 => "none",
                1 => "device gone",
                2 => "firmware version all-ones",
                3 => "NIC interface down",
                4 => "fatal syndrome",
                _ => "health counter stalled",
            }
        )
    }
}

/// Reads the health buffer once: `Err` names a fatal condition.
pub(crate) fn check(mdev: &Mdev) -> Result<Health, Fatal> {
    let bar = &mdev.bar;
    let h = bar.health().map_err(|_| Fatal::Gone)?;
    if h.fw_ver == u32::MAX {
        return Err(Fatal::FwVersion);
    }
    let nic = bar.nic_interface().map_err(|_| Fatal::Gone)?;
    if nic == cx4_hw::iseg::NIC_IFC_DISABLED || nic == cx4_hw::iseg::NIC_IFC_SW_RESET {
        return Err(Fatal::NicInterface(nic));
    }
    if h.rfr() && h.synd != 0 {
        return Err(Fatal::Syndrome(h.synd));
    }
    Ok(h)
}

/// Marks the device in error (once) and reports why.
pub(crate) fn mark_failed(mdev: &Mdev, why: Fatal) {
    let hs = &mdev.health;
    if hs.marking.swap(true, Ordering::AcqRel) {
        return;
    }
    // Why, then the report, then `failed`: whoever sees `failed` (the recovery watcher) reads
    // a complete reason, and the log tells the story in order.
    let code = match why {
        Fatal::Gone => 1,
        Fatal::FwVersion => 2,
        Fatal::NicInterface(n) => {
            hs.nic_state.store(n, Ordering::Relaxed);
            3
        }
        Fatal::Syndrome(s) => {
            hs.synd.store(s.into(), Ordering::Relaxed);
            4
        }
        Fatal::CounterStalled => 5,
    };
    hs.reason.store(code, Ordering::Relaxed);
    let h = mdev.bar.health().unwrap_or_default();
    let name = if h.synd != 0 {
        synd_name(h.synd)
    } else {
        "none"
    };
    dev_err!(
        mdev.dev.dev(),
        "device in error state: {:?}; health syndrome {:#x} ({}), rfr {}, fw_ver {:#x}; \
         commands now fail with ENXIO\n",
        why,
        h.synd,
        name,
        u8::from(h.rfr()),
        h.fw_ver
    );
    hs.failed.store(true, Ordering::Release);
    mdev.cmdq.set_error();
}

/// One poll (the health work item).
pub(crate) fn poll(mdev: &Arc<Mdev>) {
    let hs = &mdev.health;
    if hs.stop.load(Ordering::Acquire) {
        return;
    }
    hs.polls.fetch_add(1, Ordering::Relaxed);
    if !hs.failed() {
        match check(mdev) {
            Err(why) => mark_failed(mdev, why),
            Ok(h) => {
                let prev = hs.synd.swap(h.synd.into(), Ordering::Relaxed) as u8;
                if h.synd != 0 && h.synd != prev {
                    dev_warn!(
                        mdev.dev.dev(),
                        "health syndrome {:#x} ({}) without recovery request\n",
                        h.synd,
                        synd_name(h.synd)
                    );
                }
                let count = mdev.bar.health_counter().unwrap_or(0);
                if count == hs.last_counter.swap(count, Ordering::Relaxed) {
                    if hs.misses.fetch_add(1, Ordering::Relaxed) + 1 >= MAX_MISSES {
                        mark_failed(mdev, Fatal::CounterStalled);
                    }
                } else {
                    hs.misses.store(0, Ordering::Relaxed);
                }
            }
        }
    }
    // Keep polling unless stopping; a failed device stays failed, nothing more to watch.
    if !hs.stop.load(Ordering::Acquire) && !hs.failed() {
        schedule(mdev);
    }
}

fn schedule(mdev: &Arc<Mdev>) {
    // Already queued is fine.
    let _ = workqueue::system_long()
        .enqueue_delayed::<Arc<Mdev>, HEALTH_WORK>(mdev.clone(), msecs_to_jiffies(POLL_MS));
}

/// Starts polling.
pub(crate) fn start(mdev: &Arc<Mdev>) {
    let hs = &mdev.health;
    hs.last_counter
        .store(mdev.bar.health_counter().unwrap_or(0), Ordering::Relaxed);
    hs.misses.store(0, Ordering::Relaxed);
    hs.stop.store(false, Ordering::Release);
    schedule(mdev);
}

/// Stops polling and waits for a running poll.
pub(crate) fn stop(mdev: &Mdev) {
    mdev.health.stop.store(true, Ordering::Release);
    // A poll that read `stop` before it was set may re-queue itself once; flushing again
    // runs that one at once, and it sees `stop`.
    while kapi::flush_delayed_work(&mdev.health_work) {}
}
