// SPDX-License-Identifier: GPL-2.0
//! The state of one function shared by process context, interrupt handlers and work items
//! (upstream's `struct mlx5_core_dev`): BAR0, the command queue, firmware pages, the CQ table,
//! and the work items that serve page requests and poll the health buffer.
//!
//! It lives in an `Arc` so that interrupt handlers and work items can hold it; the HCA object
//! (hca.rs) owns the bring-up and stops every such user before the driver unbinds.

use kapi::{
    new_irq_safe_lock,
    ratelimit::Ratelimit,
    BoundDevice,
    IrqSafeLock, //
};
use kernel::{
    impl_has_delayed_work, impl_has_work, new_delayed_work, new_mutex, new_work, pci,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    time::Delta,
    workqueue::{
        DelayedWork,
        Work,
        WorkItem, //
    },
};

use crate::{
    cmd::Cmdq,
    cq::CqTable,
    eq::PortEvents,
    fs::RxChain,
    health::{
        self,
        HealthState, //
    },
    iseg::Bar0,
    pages::Pages,
    qp_events::QpEventTable, //
};

/// Work item id of the page-request work.
pub(crate) const PAGE_WORK: u64 = 1;
/// Work item id of the health poll.
pub(crate) const HEALTH_WORK: u64 = 2;

/// The shared state of one function.
#[pin_data]
pub(crate) struct Mdev {
    /// The PCI device (bound while this exists; see [`BoundDevice`]).
    pub(crate) dev: BoundDevice,
    /// BAR0.
    pub(crate) bar: Arc<Bar0>,
    /// The command queue.
    #[pin]
    pub(crate) cmdq: Cmdq,
    /// Firmware pages.
    #[pin]
    pub(crate) pages: Pages,
    /// CQs by number, for event dispatch.
    #[pin]
    pub(crate) cqs: CqTable,
    /// QP number → the owner of its asynchronous events.
    #[pin]
    pub(crate) qps: QpEventTable,
    /// SRQ number → the owner of its asynchronous events.
    #[pin]
    pub(crate) srqs: QpEventTable,
    /// DCT number → the owner of its `DCT_DRAINED` event.
    #[pin]
    pub(crate) dcts: QpEventTable,
    /// The port change listener (the Ethernet layer), called from the async EQ's handler.
    #[pin]
    port_events: IrqSafeLock<Option<Arc<dyn PortEvents>>>,
    /// Serves page requests (queued by the pages EQ).
    #[pin]
    pub(crate) page_work: Work<Mdev, PAGE_WORK>,
    /// Health state.
    pub(crate) health: HealthState,
    /// Polls the health buffer.
    #[pin]
    pub(crate) health_work: DelayedWork<Mdev, HEALTH_WORK>,
    /// Holds back the reports a device can provoke at will (error events, bad completions)
    /// past the printk burst; the counters count them all.
    #[pin]
    pub(crate) reports: Ratelimit,
    /// The NIC RX tables at the root, shared by the Ethernet and RDMA layers (fs.rs).
    #[pin]
    pub(crate) rx_chain: Mutex<RxChain>,
}

impl_has_work! {
    impl HasWork<Self, PAGE_WORK> for Mdev { self.page_work }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, HEALTH_WORK> for Mdev { self.health_work }
}

impl WorkItem<HEALTH_WORK> for Mdev {
    type Pointer = Arc<Mdev>;

    fn run(this: Arc<Mdev>) {
        health::poll(&this);
    }
}

impl WorkItem<PAGE_WORK> for Mdev {
    type Pointer = Arc<Mdev>;

    fn run(this: Arc<Mdev>) {
        if let Err(e) = this.pages.serve(this.dev.get(), &this.cmdq) {
            dev_err!(this.dev.dev(), "page request failed: {:?}\n", e);
        }
    }
}

impl Mdev {
    /// The shared state for a device whose BAR0 is mapped, with a command queue of the
    /// geometry the firmware advertises.
    pub(crate) fn new(
        pdev: &pci::Device<kernel::device::Bound>,
        bar: Arc<Bar0>,
        timeout: Delta,
    ) -> Result<impl PinInit<Self, Error>> {
        let geo = bar.cmdq_size()?;
        // SAFETY: The `Mdev` and its command queue hold these references. Both belong to the
        // function's loaded layers (layers.rs), which `Function` drops in unbind and in every
        // failed probe or reload, after the layers above the core are gone and the core's
        // interrupts are freed and its work flushed (`Hca`'s teardown); no `Arc<Mdev>` is
        // handed to anything that outlives them.
        #[allow(unsafe_code)]
        let (cmdq_dev, dev) = unsafe {
            (
                BoundDevice::new(pdev.as_ref()),
                BoundDevice::new(pdev.as_ref()),
            )
        };
        let cmdq = Cmdq::new(cmdq_dev, bar.clone(), geo.log_size, geo.log_stride, timeout)?;
        Ok(try_pin_init!(Self {
            dev,
            bar,
            cmdq <- cmdq,
            pages <- Pages::new(),
            cqs <- CqTable::new(),
            qps <- QpEventTable::new(),
            srqs <- QpEventTable::new(),
            dcts <- QpEventTable::new(),
            port_events <- new_irq_safe_lock!(None, "cx4::port_events"),
            page_work <- new_work!("cx4::pages"),
            health: HealthState::new(),
            health_work <- new_delayed_work!("cx4::health"),
            reports <- Ratelimit::new(c"cx4 device"),
            rx_chain <- new_mutex!(RxChain::default(), "cx4::rx_chain"),
        }))
    }

    /// Registers the port change listener; `EBUSY` if there is one already.
    pub(crate) fn set_port_events(&self, h: Arc<dyn PortEvents>) -> Result {
        let mut slot = self.port_events.lock();
        if slot.is_some() {
            // `h` (a parameter) is dropped after the guard, once the lock is released.
            return Err(EBUSY);
        }
        *slot = Some(h);
        Ok(())
    }

    /// Unregisters the port change listener and returns it, to be dropped by the caller once
    /// the lock is released (so never in the interrupt handler).
    pub(crate) fn clear_port_events(&self) -> Option<Arc<dyn PortEvents>> {
        self.port_events.lock().take()
    }

    /// Hands a port change event to the listener (from the async EQ's hard-interrupt handler).
    pub(crate) fn port_event(&self, port: u8, sub_type: u8) {
        if let Some(h) = self.port_events.lock().as_ref() {
            h.port_change(port, sub_type);
        }
    }
}
