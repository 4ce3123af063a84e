// SPDX-License-Identifier: GPL-2.0
//! devlink: the instance of the PCI function (`devlink dev show` lists `pci/<name>`), its
//! `info_get` (`devlink dev info`: devlink.c `mlx5_devlink_info_get`), its `fw_fatal` health
//! reporter (health.c's `mlx5_fw_fatal_reporter`), and the Ethernet layer's `tx` and `rx`
//! reporters (en/health.rs) registered on it.
//!
//! The `fw_fatal` reporter's callbacks live with the recovery flow they drive (function.rs,
//! as upstream's live in health.c); this file registers them. The abstraction
//! (drivers/devlink/) owns the reporters and keeps their callback data alive while devlink can
//! call it.

use ::devlink::{
    info::version,
    Devlink,
    InfoRequest, //
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    prelude::*,
    str::CString,
    sync::Arc, //
};

use crate::{
    en::health::{
        RxReporter,
        TxReporter, //
    },
    function::{
        Function, //
        FwFatal,
        FwReporter,
    },
};

/// The instance's operations: `devlink dev info`.
struct DevOps {
    function: Arc<Function>,
}

#[vtable]
impl ::devlink::Operations for DevOps {
    /// As mlx5: the board's PSID (fixed), the firmware version running and stored (the same:
    /// the card has no pending image), as `fw.version` and the generic `fw`. devlink adds the
    /// driver's name (`cx4`).
    fn info_get(&self, req: &mut InfoRequest<'_>) -> Result {
        let fw = self.function.fw_info();
        if let Some(psid) = fw.psid() {
            let psid = CString::try_from_fmt(fmt!("{}", psid))?;
            req.version_fixed_put(version::FW_PSID, &psid)?;
        }
        let v = fw.version;
        // mlx5's format: "%d.%d.%04d".
        let ver = CString::try_from_fmt(fmt!("{}.{}.{:04}", v.major, v.minor, v.subminor))?;
        for name in [c"fw.version", version::FW] {
            req.version_running_put(name, &ver)?;
        }
        for name in [c"fw.version", version::FW] {
            req.version_stored_put(name, &ver)?;
        }
        Ok(())
    }
}

/// Registers the devlink instance of `dev` (with `devlink dev info`), its `fw_fatal`
/// reporter on `function` and its `tx` and `rx` reporters on the function's `EnHealth`
/// (en/health.rs).
///
/// The instance goes (reporters first) when the returned value is dropped, at unbind.
pub(crate) fn register<'a>(
    dev: &'a device::Device<Bound>,
    function: &Arc<Function>,
) -> Result<(Devlink<'a>, FwReporter, (TxReporter, RxReporter))> {
    let ops = Arc::new(
        DevOps {
            function: function.clone(),
        },
        GFP_KERNEL,
    )?;
    let mut devlink = Devlink::with_ops(dev, ops)?;
    let data = Arc::new(
        FwFatal {
            function: function.clone(),
        },
        GFP_KERNEL,
    )?;
    let fw = devlink.health_reporter(data)?;
    let health = function.en_health();
    let tx = devlink.health_reporter(health.tx.clone())?;
    let rx = devlink.health_reporter(health.rx.clone())?;
    Ok((devlink, fw, (tx, rx)))
}
