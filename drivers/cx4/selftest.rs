// SPDX-License-Identifier: GPL-2.0
//! Test hooks behind debugfs `cx4/<dev>/selftest` (used by tests/driver_core.py): write
//!
//! - `query N` — run N `QUERY_ISSI` commands (command queue round trips at run time);
//! - `query-eq N` — run N `QUERY_EQ` commands on completion EQ 0 (what reading upstream's
//!   debugfs `EQs/<n>/num_eqes` sends; `make bench` compares the two);
//! - `cq` — create a 64-entry CQ on completion EQ 0 and arm it (its number is logged);
//! - `cq-poll` — consume the test CQ's CQEs, re-arm it and query it (`QUERY_CQ`);
//! - `cq-moderate PERIOD COUNT` — set the test CQ's moderation (`MODIFY_CQ`);
//! - `cq-destroy` — destroy the test CQ.
//!
//! A failing command makes the write fail with the command's errno.

use cx4_hw::command;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    uaccess::UserSliceReader, //
};

use crate::{
    cmd::input,
    cq::{
        Cq,
        CqParams, //
    },
    mdev::Mdev, //
};

/// State of the test hooks.
#[pin_data]
pub(crate) struct SelfTest {
    mdev: Arc<Mdev>,
    uar: u32,
    comp_eqn: Option<u8>,
    #[pin]
    cq: Mutex<Option<Cq>>,
}

impl SelfTest {
    /// Hooks for a device whose CQs use UAR page `uar` and completion EQ `comp_eqn`.
    pub(crate) fn new(
        mdev: Arc<Mdev>,
        uar: u32,
        comp_eqn: Option<u8>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            mdev,
            uar,
            comp_eqn,
            cq <- new_mutex!(None),
        })
    }

    fn query(&self, n: u32) -> Result {
        for _ in 0..n {
            let m = input::<command::QueryIssi>(0)?;
            self.mdev.cmdq.exec::<command::QueryIssi>(&m, 0)?;
        }
        Ok(())
    }

    fn query_eq(&self, n: u32) -> Result {
        let eqn = self.comp_eqn.ok_or(ENODEV)?;
        for _ in 0..n {
            let mut m = input::<command::QueryEq>(0)?;
            m.set_eq_number(eqn.into());
            self.mdev.cmdq.exec::<command::QueryEq>(&m, 0)?;
        }
        Ok(())
    }

    fn cq_create(&self) -> Result {
        let mut slot = self.cq.lock();
        if slot.is_some() {
            return Err(EBUSY);
        }
        let eqn = self.comp_eqn.ok_or(ENODEV)?;
        let p = CqParams {
            log_size: 6,
            eqn,
            uar: self.uar,
        };
        let mut cq = Cq::create(&self.mdev, &p, None)?;
        cq.arm(false)?;
        dev_info!(
            self.mdev.dev.dev(),
            "selftest: CQ {:#x} armed on EQ {}\n",
            cq.cqn(),
            eqn
        );
        *slot = Some(cq);
        Ok(())
    }

    fn cq_poll(&self) -> Result {
        let mut slot = self.cq.lock();
        let cq = (*slot).as_mut().ok_or(ENOENT)?;
        let mut cqes = 0u32;
        let n = cq.poll(64, |_| cqes += 1);
        cq.arm(false)?;
        let q = cq.query()?;
        let ctx = q.cq_context();
        dev_info!(
            self.mdev.dev.dev(),
            "selftest: CQ {:#x} polled {} CQEs, {} events, re-armed; device: producer {} \
             consumer {}\n",
            cq.cqn(),
            n,
            cq.events(),
            ctx.producer_counter(),
            ctx.consumer_counter()
        );
        Ok(())
    }

    fn cq_moderate(&self, period: u32, count: u32) -> Result {
        let slot = self.cq.lock();
        let cq = (*slot).as_ref().ok_or(ENOENT)?;
        cq.modify_moderation(period, count)
    }

    /// Handles one write to the `selftest` file.
    pub(crate) fn write(&self, r: &mut UserSliceReader) -> Result {
        let mut buf = [0u8; 64];
        let n = r.len().min(buf.len());
        r.read_slice(&mut buf[..n])?;
        let s = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?.trim();
        let mut words = s.split_whitespace();
        match (words.next(), words.next()) {
            (Some("query"), n) => {
                let n = n.map_or(Ok(1), |v| v.parse::<u32>().map_err(|_| EINVAL))?;
                self.query(n)
            }
            (Some("query-eq"), n) => {
                let n = n.map_or(Ok(1), |v| v.parse::<u32>().map_err(|_| EINVAL))?;
                self.query_eq(n)
            }
            (Some("cq"), None) => self.cq_create(),
            (Some("cq-moderate"), Some(p)) => {
                let c = words.next().ok_or(EINVAL)?;
                let num = |v: &str| v.parse::<u32>().map_err(|_| EINVAL);
                self.cq_moderate(num(p)?, num(c)?)
            }
            (Some("cq-poll"), None) => self.cq_poll(),
            (Some("cq-destroy"), None) => {
                self.cq.lock().take();
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }
}
