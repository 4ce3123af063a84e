// SPDX-License-Identifier: GPL-2.0
//! PCI binding: device IDs, probe and unbind.

use cx4_hw::{
    iseg,
    pci::{
        DEVICE_CONNECTX4,
        DEVICE_CONNECTX4_LX, //
    },
};
use kernel::{
    device::Core,
    pci,
    prelude::*,
    time::Delta, //
};

use crate::iseg::{
    Bar0,
    InitSeg, //
};

/// How long the firmware may stay in its initializing state after probe.
const FW_INIT_TIMEOUT: Delta = Delta::from_secs(10);

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
    _bar: Bar0<'bound>,
    chip: Chip,
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

        let bar = pdev.iomap_region_sized::<{ iseg::SIZE }>(0, c"cx4")?;
        let seg = InitSeg::new(&bar);

        // The PRM asks the driver to wait for the initializing bit both before and after it
        // reads the command interface revision; the first wait is the one that can time out.
        if let Err(e) = seg.wait_ready(FW_INIT_TIMEOUT) {
            dev_err!(
                pdev,
                "firmware stuck in initializing state ({} ms), giving up\n",
                FW_INIT_TIMEOUT.as_millis()
            );
            return Err(e);
        }

        let cmdif = seg.cmdif_rev();
        if cmdif != iseg::CMDIF_REV {
            dev_err!(
                pdev,
                "unsupported command interface revision {} (driver supports {})\n",
                cmdif,
                iseg::CMDIF_REV
            );
            return Err(ENODEV);
        }

        let fw = seg.fw_version();
        let q = seg.cmdq_size();
        dev_info!(
            pdev,
            "{}: firmware version {}.{}.{}, cmdif rev {}, {} command slots\n",
            chip.name(),
            fw.major,
            fw.minor,
            fw.subminor,
            cmdif,
            1u32 << q.log_size
        );

        Ok(Cx4Device {
            pdev,
            _bar: bar,
            chip: *chip,
        })
    }

    fn unbind<'bound>(pdev: &'bound pci::Device<Core<'_>>, this: Pin<&Self::Data<'bound>>) {
        dev_info!(pdev, "{} unbound\n", this.chip.name());
    }
}

impl Drop for Cx4Device<'_> {
    fn drop(&mut self) {
        dev_dbg!(self.pdev, "cx4 device state released\n");
    }
}
