// SPDX-License-Identifier: GPL-2.0
//! PCI binding: device IDs, probe and unbind.

use ::devlink::Devlink;
use cx4_hw::pci::{
    DEVICE_CONNECTX4,
    DEVICE_CONNECTX4_LX, //
};
use kernel::{
    device::Core,
    dma::{
        self,
        DmaMask, //
    },
    pci,
    prelude::*,
    sync::Arc,
    time::Delta, //
};

use crate::function::Function;

/// Which member of the family a PCI ID names.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Chip {
    /// ConnectX-4 (15b3:1013).
    ConnectX4,
    /// ConnectX-4 Lx (15b3:1015).
    ConnectX4Lx,
}

impl Chip {
    fn name(self) -> &'static str {
        match self {
            Chip::ConnectX4 => "ConnectX-4",
            Chip::ConnectX4Lx => "ConnectX-4 Lx",
        }
    }
}

/// The PCI driver.
pub(crate) struct Cx4Driver;

/// Per-device state while bound.
pub(crate) struct Cx4Device<'bound> {
    pdev: &'bound pci::Device,
    chip: Chip,
    function: Arc<Function>,
    /// The devlink instance with the `fw_fatal` and `tx` reporters (taken first at unbind).
    devlink: Option<Devlink<'bound>>,
}

kernel::pci_device_table!(
    PCI_TABLE,
    MODULE_PCI_TABLE,
    <Cx4Driver as pci::Driver>::IdInfo,
    [
        (
            pci::DeviceId::from_id(pci::Vendor::MELLANOX, DEVICE_CONNECTX4 as u32),
            Chip::ConnectX4
        ),
        (
            pci::DeviceId::from_id(pci::Vendor::MELLANOX, DEVICE_CONNECTX4_LX as u32),
            Chip::ConnectX4Lx
        ),
    ]
);

impl pci::Driver for Cx4Driver {
    type IdInfo = Chip;
    type Data<'bound> = Cx4Device<'bound>;

    const ID_TABLE: pci::IdTable<Self::IdInfo> = &PCI_TABLE;

    fn probe<'bound>(
        pdev: &'bound pci::Device<Core<'_>>,
        chip: &'bound Self::IdInfo,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        pdev.enable_device_mem()?;
        pdev.set_master();
        // SAFETY: In probe, before this driver made any DMA allocation or mapping for the
        // device: nothing runs concurrently with the mask change.
        #[allow(unsafe_code)]
        let mask = unsafe { dma::Device::dma_set_mask_and_coherent(pdev, DmaMask::new::<64>()) };
        mask?;
        let timeout = Delta::from_millis(crate::cmd_timeout_ms().into());
        let function = Function::new(pdev, chip.name(), timeout, crate::auto_recover())
            .inspect_err(|e| {
                dev_err!(pdev, "{}: probe failed: {:?}\n", chip.name(), e);
            })?;
        let (devlink, reporter, queues) =
            crate::devlink::register(pdev.as_ref(), &function).inspect_err(|e| {
                dev_err!(
                    pdev,
                    "{}: devlink registration failed: {:?}\n",
                    chip.name(),
                    e
                );
            })?;
        Function::start(&function, reporter, queues);
        Ok(Cx4Device {
            pdev,
            chip: *chip,
            function,
            devlink: Some(devlink),
        })
    }

    fn unbind<'bound>(pdev: &'bound pci::Device<Core<'_>>, this: Pin<&Self::Data<'bound>>) {
        dev_info!(pdev, "{} unbound\n", this.chip.name());
    }
}

impl Drop for Cx4Device<'_> {
    fn drop(&mut self) {
        // devlink first: user space stops seeing the instance, the reporter is destroyed
        // (a report or recovery in progress finishes first) and no callback can start.
        self.devlink = None;
        // Before unbind completes: no recovery may run on an unbound device.
        self.function.stop();
        dev_dbg!(self.pdev, "cx4 device state released\n");
    }
}
