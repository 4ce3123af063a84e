// SPDX-License-Identifier: GPL-2.0
//! Where the function's engine is found: a slot the bring-up creates (hca.rs) and hands to
//! debugfs and to the RDMA layer, which installs the engine once its ib device is registered
//! and removes it — shutting it down — before the ib device goes. Users take a reference
//! ([`EcSlot::get`]); after removal their `Arc` still works but submits fail with `ENODEV`.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use super::EcEngine;

/// The function's engine, if it has one.
#[pin_data]
pub(crate) struct EcSlot {
    #[pin]
    engine: Mutex<Option<Arc<EcEngine>>>,
}

impl EcSlot {
    /// An empty slot.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                engine <- new_mutex!(None, "cx4::ec_slot"),
            }),
            GFP_KERNEL,
        )
    }

    /// The engine, if installed (process context).
    pub(crate) fn get(&self) -> Option<Arc<EcEngine>> {
        self.engine.lock().clone()
    }

    /// Installs the engine.
    pub(crate) fn install(&self, e: Arc<EcEngine>) {
        let old = self.engine.lock().replace(e);
        if let Some(o) = old {
            o.shutdown();
        }
    }

    /// Removes the engine and shuts it down (its hardware objects are destroyed now).
    pub(crate) fn remove(&self) {
        let e = self.engine.lock().take();
        if let Some(e) = e {
            e.shutdown();
        }
    }
}

/// Removes the engine from its slot when dropped (held by the RDMA layer).
pub(crate) struct EcOwner(pub(crate) Arc<EcSlot>);

impl Drop for EcOwner {
    fn drop(&mut self) {
        self.0.remove();
    }
}
