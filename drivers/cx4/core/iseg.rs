// SPDX-License-Identifier: GPL-2.0
//! BAR0: typed access to the big-endian initialization segment at its start, and raw doorbell
//! writes into the UAR pages that follow it.
//!
//! The mapping is a device resource (`Devres`), so interrupt handlers and work items can share
//! it; every access goes through `try_access` and fails with `ENXIO` once the device is gone.

use core::mem::offset_of;

use cx4_hw::{
    iseg::{
        self,
        CmdqSize,
        FwVersion,
        HealthBuffer, //
    },
    uar::UAR_PAGE_SIZE, //
};
use kernel::{
    device::Bound,
    devres::Devres,
    io::{
        poll::read_poll_timeout,
        Io, //
    },
    pci,
    prelude::*,
    time::Delta, //
};

type Mapping = pci::Bar<'static, { iseg::SIZE }>;

/// The fields of the health buffer the driver watches.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Health {
    /// Firmware version word; all-ones means the device is gone.
    pub(crate) fw_ver: u32,
    /// Recovery-flow-required bit and severity.
    pub(crate) rfr_severity: u8,
    /// Health syndrome.
    pub(crate) synd: u8,
}

impl Health {
    /// Whether the firmware asks for a recovery flow (`rfr` bit 7 of `rfr_severity`).
    pub(crate) fn rfr(&self) -> bool {
        self.rfr_severity & iseg::HEALTH_RFR != 0
    }
}

/// BAR0 of one device.
pub(crate) struct Bar0 {
    map: Devres<Mapping>,
}

impl Bar0 {
    /// Requests and maps BAR0 (at least the initialization segment; the UAR pages behind it
    /// are reached with run-time checked offsets).
    pub(crate) fn new(pdev: &pci::Device<Bound>) -> Result<Self> {
        let bar = pdev.iomap_region_sized::<{ iseg::SIZE }>(0, c"cx4")?;
        Ok(Self {
            map: bar.into_devres()?,
        })
    }

    fn with<R>(&self, f: impl FnOnce(&Mapping) -> Result<R>) -> Result<R> {
        self.map.try_access_with(f).ok_or(ENXIO)?
    }

    /// Reads the big-endian 32-bit word at `off`.
    pub(crate) fn read_be32(&self, off: usize) -> Result<u32> {
        self.with(|b| Ok(u32::from_be_bytes(b.try_read32(off)?.to_le_bytes())))
    }

    /// Writes `v` big-endian at `off`.
    pub(crate) fn write_be32(&self, off: usize, v: u32) -> Result {
        self.with(|b| b.try_write32(u32::from_le_bytes(v.to_be_bytes()), off))
    }

    /// Writes 4 bytes, in bus order, at `off` (one 32-bit MMIO write).
    pub(crate) fn write_bytes32(&self, off: usize, bytes: [u8; 4]) -> Result {
        self.with(|b| b.try_write32(u32::from_le_bytes(bytes), off))
    }

    /// Writes 8 bytes, in bus order, at `off` (one 64-bit MMIO write).
    pub(crate) fn write_bytes64(&self, off: usize, bytes: [u8; 8]) -> Result {
        self.with(|b| b.try_write64(u64::from_le_bytes(bytes), off))
    }

    /// Offset of byte `off` of UAR page `page`.
    pub(crate) fn uar_offset(page: u32, off: usize) -> Result<usize> {
        (page as usize)
            .checked_mul(UAR_PAGE_SIZE)
            .and_then(|p| p.checked_add(off))
            .ok_or(EINVAL)
    }

    /// Firmware version (`fw_rev` and the sub-minor half of `cmdif_rev_fw_sub`).
    pub(crate) fn fw_version(&self) -> Result<FwVersion> {
        Ok(FwVersion::from_regs(
            self.read_be32(iseg::FW_REV)?,
            self.read_be32(iseg::CMDIF_REV_FW_SUB)?,
        ))
    }

    /// Command interface revision the firmware speaks.
    pub(crate) fn cmdif_rev(&self) -> Result<u16> {
        Ok(iseg::cmdif_rev(self.read_be32(iseg::CMDIF_REV_FW_SUB)?))
    }

    /// Command queue geometry advertised by the firmware.
    pub(crate) fn cmdq_size(&self) -> Result<CmdqSize> {
        Ok(CmdqSize::from_reg(self.read_be32(iseg::CMDQ_ADDR_L_SZ)?))
    }

    /// The NIC interface state (bits 10:8 of `cmdq_addr_l_sz`).
    pub(crate) fn nic_interface(&self) -> Result<u32> {
        Ok(iseg::nic_interface(self.read_be32(iseg::CMDQ_ADDR_L_SZ)?))
    }

    /// Programs the command queue's bus address (4 KiB aligned).
    pub(crate) fn set_cmdq_addr(&self, dma: u64) -> Result {
        self.write_be32(iseg::CMDQ_ADDR_H, (dma >> 32) as u32)?;
        self.write_be32(iseg::CMDQ_ADDR_L_SZ, dma as u32)
    }

    /// Rings the command doorbell for the slots in `mask`.
    pub(crate) fn ring_cmd_doorbell(&self, mask: u32) -> Result {
        self.write_be32(iseg::CMD_DBELL, mask)
    }

    /// Whether the firmware still reports that it is initializing.
    pub(crate) fn initializing(&self) -> Result<bool> {
        Ok(self.read_be32(iseg::INITIALIZING)? & iseg::INITIALIZING_BIT != 0)
    }

    /// Waits until the firmware clears the initializing bit, or fails with `ETIMEDOUT`.
    pub(crate) fn wait_ready(&self, timeout: Delta) -> Result {
        read_poll_timeout(
            || self.initializing(),
            |busy| !*busy,
            Delta::from_millis(10),
            timeout,
        )
        .map(|_| ())
    }

    /// The health counter the firmware increments while alive.
    pub(crate) fn health_counter(&self) -> Result<u32> {
        self.read_be32(iseg::HEALTH_COUNTER)
    }

    /// The watched fields of the health buffer.
    pub(crate) fn health(&self) -> Result<Health> {
        let fw_ver = self.read_be32(iseg::HEALTH + offset_of!(HealthBuffer, fw_ver))?;
        // rfr_severity and synd are bytes; read their aligned dwords (the buffer is big-endian,
        // so byte k of a dword is bits 31-8k..24-8k).
        let rfr_off = iseg::HEALTH + offset_of!(HealthBuffer, rfr_severity);
        let synd_off = iseg::HEALTH + offset_of!(HealthBuffer, synd);
        let byte = |off: usize| -> Result<u8> {
            let w = self.read_be32(off & !3)?;
            Ok(w.to_be_bytes()[off & 3])
        };
        Ok(Health {
            fw_ver,
            rfr_severity: byte(rfr_off)?,
            synd: byte(synd_off)?,
        })
    }
}
