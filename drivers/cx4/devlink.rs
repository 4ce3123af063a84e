// SPDX-License-Identifier: GPL-2.0
//! devlink: the instance of the PCI function (`devlink dev show` lists `pci/<name>`) and its
//! `fw_fatal` health reporter (upstream: devlink.c and health.c's `mlx5_fw_fatal_reporter`).
//!
//! function.rs reports each fatal fault once; `recover` runs a recovery attempt
//! ([`Function::recover`]) and `diagnose` describes the health state from
//! [`Function::stats`]. The abstraction (drivers/devlink/) owns the reporter and keeps this
//! callback data alive while devlink can call it.

use ::devlink::{
    health,
    Devlink,
    Fmsg, //
};
use cx4_hw::iseg::health_synd;
use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
    sync::Arc,
};

use crate::{
    function::Function,
    hca::Fault,
    health::Fatal, //
};

/// A handle on the `fw_fatal` reporter, for function.rs to report with.
pub(crate) type FwReporter = health::Reporter<FwFatal>;

/// The `fw_fatal` reporter's callback data.
pub(crate) struct FwFatal {
    function: Arc<Function>,
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

/// Registers the devlink instance of `dev` with the `fw_fatal` reporter of `function`.
///
/// The instance goes (reporter first) when the returned value is dropped, at unbind.
pub(crate) fn register<'a>(
    dev: &'a device::Device<Bound>,
    function: &Arc<Function>,
) -> Result<(Devlink<'a>, FwReporter)> {
    let mut devlink = Devlink::new(dev)?;
    let data = Arc::new(
        FwFatal {
            function: function.clone(),
        },
        GFP_KERNEL,
    )?;
    let reporter = devlink.health_reporter(data)?;
    Ok((devlink, reporter))
}
