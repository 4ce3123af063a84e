// SPDX-License-Identifier: GPL-2.0
//! A build-time check, not code that runs: a clock implementing every operation, so that the
//! generic registration and its trampolines are type-checked before a driver uses them.

use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
    sync::Arc,
    time::Jiffies,
    ThisModule,
};

use crate::{
    ClockOps,
    Registration,
    SystemTimestamps, //
};

struct Check;

#[vtable]
impl ClockOps for Check {
    fn adjfine(&self, _scaled_ppm: i64) -> Result {
        Ok(())
    }

    fn adjtime(&self, _delta: i64) -> Result {
        Ok(())
    }

    fn gettimex(&self, sts: &mut SystemTimestamps<'_>) -> Result<i64> {
        sts.pre();
        sts.post();
        Ok(0)
    }

    fn settime(&self, _ns: i64) -> Result {
        Ok(())
    }

    fn do_aux_work(&self) -> Option<Jiffies> {
        None
    }
}

/// Uses the generic functions (type-checked).
#[allow(dead_code)]
fn check(parent: &device::Device<Bound>, module: &'static ThisModule) -> Result {
    let reg = Registration::new(parent, module, c"check", 0, Arc::new(Check, GFP_KERNEL)?)?;
    reg.schedule_aux_work(0);
    let _ = (reg.index(), reg.data());
    Ok(())
}
