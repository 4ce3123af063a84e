// SPDX-License-Identifier: GPL-2.0
//! Where the function's engine is found: a slot the composition root (layers.rs) creates,
//! fills once the RDMA port exists (the engine's QP loops back through it) and empties —
//! shutting the engine down — before the ib device goes; the debugfs `ec` file (test hooks)
//! reads it too. Users take a reference ([`EcSlot::get`]); after removal their `Arc` still
//! works but submits fail with `ENODEV`.
//!
//! The slot also holds the engine's DMA engine channel (dma.rs), registered after the engine
//! is installed ([`EcSlot::start_dma`]) and unregistered before it is shut down, and the
//! channel's counters, which outlive it (the debugfs `ec` file shows them).

use core::sync::atomic::{
    AtomicU64,
    Ordering, //
};

use dmaengine::Registration;
#[cfg(not(cx4_test_hooks))]
use kernel::debugfs::{
    Dir,
    File, //
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    fmt,
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use super::{
    dma::{
        DmaStats,
        EcDma, //
    },
    EcEngine,
};
#[cfg(not(cx4_test_hooks))]
use crate::mdev::Mdev;

/// The function's engine, if it has one, and its DMA channel.
#[pin_data]
pub(crate) struct EcSlot {
    #[pin]
    engine: Mutex<Option<Arc<EcEngine>>>,
    #[pin]
    dma: Mutex<Option<Registration<EcDma>>>,
    dma_stats: Arc<DmaStats>,
}

impl EcSlot {
    /// An empty slot.
    pub(crate) fn new() -> Result<Arc<Self>> {
        let dma_stats = Arc::new(DmaStats::default(), GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Self {
                engine <- new_mutex!(None, "cx4::ec_slot"),
                dma <- new_mutex!(None, "cx4::ec_slot_dma"),
                dma_stats,
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
        self.stop_dma();
        let old = self.engine.lock().replace(e);
        if let Some(o) = old {
            o.shutdown();
        }
    }

    /// Registers the installed engine's DMA channel (not fatal: logged).
    pub(crate) fn start_dma(&self, dev: &device::Device<Bound>) {
        let Some(e) = self.get() else {
            return;
        };
        let caps = EcDma::caps(&e);
        let reg = EcDma::new(dev, e, self.dma_stats.clone())
            .and_then(|init| Registration::new(dev, caps, init));
        match reg {
            Ok(r) => {
                let (d, c) = r.ids();
                if caps.async_tx_usable() {
                    dev_info!(
                        dev,
                        "EC dmaengine dma{}chan{}: memcpy xor xor_val pq pq_val interrupt \
                         (async_tx, md raid456 offload)\n",
                        d,
                        c
                    );
                } else {
                    dev_info!(
                        dev,
                        "EC dmaengine dma{}chan{}: memcpy xor xor_val interrupt; no pq: the \
                         vector-calc engine has no GF(2^8) matrices (calc_matrix_type_8bit = \
                         0), so async_tx (md raid456) will not use this channel\n",
                        d,
                        c
                    );
                }
                *self.dma.lock() = Some(r);
            }
            Err(err) => dev_warn!(dev, "no EC dmaengine channel: {:?}\n", err),
        }
    }

    /// Unregisters the DMA channel (its clients' later requests fail: aborted).
    fn stop_dma(&self) {
        let r = self.dma.lock().take();
        drop(r);
    }

    /// Removes the engine and shuts it down (its hardware objects are destroyed now).
    pub(crate) fn remove(&self) {
        self.stop_dma();
        let e = self.engine.lock().take();
        if let Some(e) = e {
            e.shutdown();
        }
    }

    /// The engine's state, counters and caps, then the DMA channel's counters (the debugfs
    /// `ec` file).
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.get() {
            None => writeln!(f, "engine none")?,
            Some(e) => {
                let s = e.stats();
                let c = e.caps();
                let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
                writeln!(
                    f,
                    "engine {} submitted {} completed {} errors {} busy {} recoveries {} inflight {}",
                    e.mode_name(),
                    l(&s.submitted),
                    l(&s.completed),
                    l(&s.errors),
                    l(&s.busy),
                    l(&s.recoveries),
                    e.inflight()
                )?;
                writeln!(
                    f,
                    "caps gf256 {} max_srcs {} max_outputs {} max_len {} len_align {} max_inflight {}",
                    u8::from(c.gf256),
                    c.max_srcs,
                    c.max_outputs,
                    c.max_len,
                    c.len_align,
                    c.max_inflight
                )?;
            }
        }
        self.show_dma(f)
    }

    /// The DMA channel's counters.
    fn show_dma(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chan = self.dma.lock().as_ref().map(|r| (r.ids(), r.refused()));
        match chan {
            Some(((d, c), refused)) => {
                writeln!(f, "dma chan dma{}chan{}", d, c)?;
                // Requests naming a failed mapping, aborted before the card saw them.
                writeln!(f, "dma refused {}", refused)?;
            }
            None => writeln!(f, "dma chan none")?,
        }
        EcDma::show(&self.dma_stats, f)
    }
}

/// Removes the engine from its slot when dropped (held by the composition root, dropped
/// before the ib device).
pub(crate) struct EcOwner(pub(crate) Arc<EcSlot>);

impl Drop for EcOwner {
    fn drop(&mut self) {
        self.0.remove();
    }
}

/// The read-only debugfs file `ec` ([`EcSlot::show`]); with `CX4_TEST_HOOKS=y`, testhook.rs's
/// `EcFile` takes requests too.
#[cfg(not(cx4_test_hooks))]
pub(crate) struct EcFile {
    _file: Pin<KBox<File<SlotView>>>,
}

/// The `ec` file's data.
#[cfg(not(cx4_test_hooks))]
#[pin_data]
struct SlotView {
    slot: Arc<EcSlot>,
}

#[cfg(not(cx4_test_hooks))]
impl EcFile {
    /// Creates `ec` in `dir` for the engine in `slot` (`_mdev`: as testhook.rs's).
    pub(crate) fn new(dir: &Dir, _mdev: Arc<Mdev>, slot: Arc<EcSlot>) -> Result<Self> {
        let data = try_pin_init!(SlotView { slot });
        let file = KBox::pin_init(dir.read_callback_file(c"ec", data, &show), GFP_KERNEL)?;
        Ok(Self { _file: file })
    }
}

#[cfg(not(cx4_test_hooks))]
fn show(v: &SlotView, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    v.slot.show(f)
}
