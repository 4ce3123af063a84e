// SPDX-License-Identifier: GPL-2.0
//! Per-opcode command statistics: count, errors, latency, how each command completed, and how
//! many carried mailboxes.
//!
//! The latency is counted as upstream's debugfs `average` (cmd.c `ts1`/`ts2`): from handing the
//! entry to the device to the moment its completion is seen (by the EQ handler or the poll
//! loop), so `make bench` compares like with like.

use core::fmt;

use cx4_hw::opcode::opcode_name;
use kernel::{
    new_mutex,
    prelude::*,
    sync::Mutex, //
};

/// How a command's completion was noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Completion {
    /// Polling the ownership bit (polling mode).
    Polled,
    /// A command-completion EQE woke the waiter (event mode).
    Event,
    /// Event mode, but found complete by the polling fallback (the EQE was late or lost).
    Fallback,
}

#[derive(Clone, Copy, Default)]
struct OpStat {
    opcode: u16,
    count: u64,
    errors: u64,
    total_ns: u64,
    max_ns: u64,
    polled: u64,
    events: u64,
    fallback: u64,
    timeouts: u64,
    mbox: u64,
}

/// Counters of all commands, keyed by opcode.
#[pin_data]
pub(crate) struct CmdStats {
    #[pin]
    ops: Mutex<KVec<OpStat>>,
}

/// Distinct opcodes tracked (more than the driver sends; later ones are not counted).
const MAX_OPCODES: usize = 128;

impl CmdStats {
    /// Empty statistics with room for every opcode the driver sends.
    pub(crate) fn new() -> Result<impl PinInit<Self, Error>> {
        let v = KVec::with_capacity(MAX_OPCODES, GFP_KERNEL)?;
        Ok(try_pin_init!(Self {
            ops <- new_mutex!(v),
        }))
    }

    fn with(&self, op: u16, f: impl FnOnce(&mut OpStat)) {
        let mut ops = self.ops.lock();
        if let Some(s) = ops.iter_mut().find(|s| s.opcode == op) {
            f(s);
            return;
        }
        let mut s = OpStat {
            opcode: op,
            ..Default::default()
        };
        f(&mut s);
        // Full table: this opcode goes uncounted (never the case for the core's command set).
        let _ = ops.push_within_capacity(s);
    }

    /// Records a completed command (successful or with a failure status) that took `ns` from
    /// posting to completion; `mbox`: its input or output used mailbox blocks.
    pub(crate) fn record(&self, op: u16, ns: u64, how: Completion, failed: bool, mbox: bool) {
        self.with(op, |s| {
            s.count += 1;
            s.errors += u64::from(failed);
            s.mbox += u64::from(mbox);
            s.total_ns += ns;
            s.max_ns = s.max_ns.max(ns);
            match how {
                Completion::Polled => s.polled += 1,
                Completion::Event => s.events += 1,
                Completion::Fallback => s.fallback += 1,
            }
        });
    }

    /// Records a command that failed before or without a completion (timeout, delivery error,
    /// device in error).
    pub(crate) fn record_failure(&self, op: u16, timeout: bool) {
        self.with(op, |s| {
            s.count += 1;
            s.errors += 1;
            s.timeouts += u64::from(timeout);
        });
    }

    /// Totals over all opcodes: (commands, polled, event, fallback).
    pub(crate) fn totals(&self) -> (u64, u64, u64, u64) {
        let ops = self.ops.lock();
        ops.iter().fold((0, 0, 0, 0), |t, s| {
            (
                t.0 + s.count,
                t.1 + s.polled,
                t.2 + s.events,
                t.3 + s.fallback,
            )
        })
    }

    /// The debugfs table: a header line, then one line per opcode.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops = self.ops.lock();
        writeln!(
            f,
            "{:<26} {:>6} {:>8} {:>6} {:>10} {:>10} {:>7} {:>7} {:>8} {:>8} {:>7}",
            "opcode",
            "",
            "count",
            "errors",
            "mean_us",
            "max_us",
            "polled",
            "event",
            "fallback",
            "timeouts",
            "mbox"
        )?;
        for s in ops.iter() {
            // Completed commands only: failures before a completion have no latency.
            let timed = s.polled + s.events + s.fallback;
            let mean = s.total_ns.checked_div(timed).unwrap_or(0) / 100;
            writeln!(
                f,
                "{:<26} {:#06x} {:>8} {:>6} {:>8}.{} {:>10} {:>7} {:>7} {:>8} {:>8} {:>7}",
                opcode_name(s.opcode),
                s.opcode,
                s.count,
                s.errors,
                mean / 10,
                mean % 10,
                s.max_ns / 1000,
                s.polled,
                s.events,
                s.fallback,
                s.timeouts,
                s.mbox
            )?;
        }
        Ok(())
    }
}
