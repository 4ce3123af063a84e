// SPDX-License-Identifier: GPL-2.0
//! Typed access to the big-endian initialization segment at the start of BAR0.

use cx4_hw::iseg::{
    self,
    CmdqSize,
    FwVersion, //
};
use kernel::{
    io::{
        poll::read_poll_timeout,
        Io, //
    },
    pci,
    prelude::*,
    time::Delta, //
};

/// BAR0 mapped at least over the initialization segment.
pub(crate) type Bar0<'bound> = pci::Bar<'bound, { iseg::SIZE }>;

/// The initialization segment of one device.
pub(crate) struct InitSeg<'a, 'bound> {
    bar: &'a Bar0<'bound>,
}

impl<'a, 'bound> InitSeg<'a, 'bound> {
    /// Wraps a mapped BAR0.
    pub(crate) fn new(bar: &'a Bar0<'bound>) -> Self {
        Self { bar }
    }

    fn read_be32<const OFF: usize>(&self) -> u32 {
        u32::from_be(self.bar.read32(OFF))
    }

    /// Firmware version (`fw_rev` and the sub-minor half of `cmdif_rev_fw_sub`).
    pub(crate) fn fw_version(&self) -> FwVersion {
        FwVersion::from_regs(
            self.read_be32::<{ iseg::FW_REV }>(),
            self.read_be32::<{ iseg::CMDIF_REV_FW_SUB }>(),
        )
    }

    /// Command interface revision the firmware speaks.
    pub(crate) fn cmdif_rev(&self) -> u16 {
        iseg::cmdif_rev(self.read_be32::<{ iseg::CMDIF_REV_FW_SUB }>())
    }

    /// Command queue geometry advertised by the firmware.
    pub(crate) fn cmdq_size(&self) -> CmdqSize {
        CmdqSize::from_reg(self.read_be32::<{ iseg::CMDQ_ADDR_L_SZ }>())
    }

    /// Whether the firmware still reports that it is initializing.
    pub(crate) fn initializing(&self) -> bool {
        self.read_be32::<{ iseg::INITIALIZING }>() & iseg::INITIALIZING_BIT != 0
    }

    /// Waits until the firmware clears the initializing bit, or fails with `ETIMEDOUT`.
    pub(crate) fn wait_ready(&self, timeout: Delta) -> Result {
        read_poll_timeout(
            || Ok(self.initializing()),
            |busy| !*busy,
            Delta::from_millis(10),
            timeout,
        )
        .map(|_| ())
    }
}
