//! The device side: the [`Backend`] trait a device model implements and the static
//! [`DeviceInfo`] that describes its regions and interrupts.
//!
//! The server validates every request against the `DeviceInfo` before the backend sees it:
//! region accesses are within the region and allowed by its flags, DMA maps do not overlap,
//! IRQ ranges fit the index. A backend can therefore trust its arguments to that extent.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::wire::{
    DMA_MAP_FLAG_READ, DMA_MAP_FLAG_WRITE, VFIO_REGION_INFO_FLAG_MMAP, VFIO_REGION_INFO_FLAG_READ,
    VFIO_REGION_INFO_FLAG_WRITE,
};
use crate::Errno;

/// Highest number of regions QEMU accepts (`VFIO_USER_MAX_REGIONS` in hw/vfio-user/device.c).
pub const MAX_REGIONS: u32 = 100;
/// Highest number of IRQ indexes QEMU accepts (`VFIO_USER_MAX_IRQS`).
pub const MAX_IRQS: u32 = 50;

/// A guest memory range the client made available for DMA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaMap {
    /// Guest DMA address of the first byte.
    pub iova: u64,
    /// Length in bytes (never 0; `iova + size - 1` does not overflow).
    pub size: u64,
    /// Offset of `iova` in the file passed with the map.
    pub offset: u64,
    /// [`DMA_MAP_FLAG_READ`] and/or [`DMA_MAP_FLAG_WRITE`].
    pub flags: u32,
}

impl DmaMap {
    /// The device may read this memory.
    pub fn readable(&self) -> bool {
        self.flags & DMA_MAP_FLAG_READ != 0
    }

    /// The device may write this memory.
    pub fn writable(&self) -> bool {
        self.flags & DMA_MAP_FLAG_WRITE != 0
    }

    /// Address of the last byte.
    pub fn last(&self) -> u64 {
        self.iova.saturating_add(self.size.saturating_sub(1))
    }
}

/// The device model behind a vfio-user connection.
///
/// Every method returns the errno to report to the client on failure. A backend never sees a
/// request the [`DeviceInfo`] rules out (unknown region, access beyond its size, IRQ range
/// beyond the index's count, overlapping DMA map).
pub trait Backend {
    /// Reads `data.len()` bytes of region `region` at `offset` (a readable region, in bounds).
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), Errno>;

    /// Writes `data` to region `region` at `offset` (a writable region, in bounds).
    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> Result<(), Errno>;

    /// Makes `map` available for DMA. `fd` is the client's memory file to mmap at
    /// `map.offset`; `None` means the memory can only be reached with `DMA_READ`/`DMA_WRITE`
    /// messages to the client.
    fn dma_map(&mut self, map: DmaMap, fd: Option<File>) -> Result<(), Errno>;

    /// Withdraws a mapping. `iova`/`size` always name exactly one earlier successful
    /// [`Backend::dma_map`] (the server splits `UNMAP_ALL` and multi-mapping unmaps). The
    /// backend must drop every reference to the memory before returning.
    fn dma_unmap(&mut self, iova: u64, size: u64) -> Result<(), Errno>;

    /// Resets the device (only called when [`DeviceInfo::resettable`] is set).
    fn reset(&mut self) -> Result<(), Errno>;

    /// Applies `VFIO_USER_DEVICE_SET_IRQS` to sub-indexes `start..start + count` of IRQ
    /// `index`. `flags` has exactly one `VFIO_IRQ_SET_DATA_*` and one `VFIO_IRQ_SET_ACTION_*`
    /// bit:
    ///
    /// * `DATA_NONE`: act on every sub-index; `count == 0` (with `start == 0`) means
    ///   "disable the whole index".
    /// * `DATA_EVENTFD`: `fds` holds `count` eventfds to assign, or is empty to de-assign.
    /// * `DATA_BOOL` never reaches the backend: the server turns each run of true values
    ///   into a `DATA_NONE` call.
    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), Errno>;

    /// The client went away. The server has already unmapped all its DMA mappings through
    /// [`Backend::dma_unmap`]; per the spec the backend should now close the client's IRQ
    /// eventfds and otherwise keep the device state. The default does nothing.
    fn disconnected(&mut self) {}
}

/// How the client may mmap a region.
#[derive(Clone, Debug)]
pub struct RegionMmap {
    /// The file sent with the region info.
    pub fd: Arc<OwnedFd>,
    /// The mmap offset of the region's first byte in `fd`.
    pub offset: u64,
}

/// One region of the device (`struct vfio_region_info`).
#[derive(Clone, Debug)]
pub struct RegionInfo {
    /// Region index (for PCI: BARs 0-5, ROM 6, config space 7, VGA 8).
    pub index: u32,
    /// Size in bytes.
    pub size: u64,
    /// `VFIO_REGION_INFO_FLAG_READ`/`WRITE`/`MMAP`; `MMAP` requires [`RegionInfo::mmap`].
    pub flags: u32,
    /// The mmap-able file, for regions with `VFIO_REGION_INFO_FLAG_MMAP`.
    pub mmap: Option<RegionMmap>,
}

impl RegionInfo {
    /// A region accessed through messages only.
    pub fn new(index: u32, size: u64, flags: u32) -> Self {
        Self {
            index,
            size,
            flags,
            mmap: None,
        }
    }

    /// The client may read it.
    pub fn readable(&self) -> bool {
        self.flags & VFIO_REGION_INFO_FLAG_READ != 0
    }

    /// The client may write it.
    pub fn writable(&self) -> bool {
        self.flags & VFIO_REGION_INFO_FLAG_WRITE != 0
    }
}

/// One IRQ index of the device (`struct vfio_irq_info`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqInfo {
    /// IRQ index (for PCI: INTx 0, MSI 1, MSI-X 2, ERR 3, REQ 4).
    pub index: u32,
    /// Number of vectors.
    pub count: u32,
    /// `VFIO_IRQ_INFO_*` flags.
    pub flags: u32,
}

/// The static description of a device.
///
/// `num_regions` is the highest listed region index plus one, and likewise for IRQs; an
/// index below that which is not listed reports size/count 0 and no flags (QEMU wants at
/// least the 9 PCI regions and 5 PCI IRQ indexes to exist).
#[derive(Clone, Debug, Default)]
pub struct DeviceInfo {
    /// The regions.
    pub regions: Vec<RegionInfo>,
    /// The IRQ indexes.
    pub irqs: Vec<IrqInfo>,
    /// The device accepts `DEVICE_RESET`.
    pub resettable: bool,
}

impl DeviceInfo {
    /// Number of regions announced in `DEVICE_GET_INFO`.
    pub fn num_regions(&self) -> u32 {
        self.regions
            .iter()
            .map(|r| r.index.saturating_add(1))
            .max()
            .unwrap_or(0)
    }

    /// Number of IRQ indexes announced in `DEVICE_GET_INFO`.
    pub fn num_irqs(&self) -> u32 {
        self.irqs
            .iter()
            .map(|i| i.index.saturating_add(1))
            .max()
            .unwrap_or(0)
    }

    /// The region with this index, if listed.
    pub fn region(&self, index: u32) -> Option<&RegionInfo> {
        self.regions.iter().find(|r| r.index == index)
    }

    /// The IRQ index with this number, if listed.
    pub fn irq(&self, index: u32) -> Option<&IrqInfo> {
        self.irqs.iter().find(|i| i.index == index)
    }

    /// Checks that indexes are unique and within QEMU's limits and that region flags are
    /// consistent with their mmap files.
    pub fn validate(&self) -> Result<(), String> {
        for (i, r) in self.regions.iter().enumerate() {
            if r.index >= MAX_REGIONS {
                return Err(format!(
                    "region index {} is not below {MAX_REGIONS}",
                    r.index
                ));
            }
            if self
                .regions
                .get(..i)
                .unwrap_or_default()
                .iter()
                .any(|o| o.index == r.index)
            {
                return Err(format!("region {} is listed twice", r.index));
            }
            let known = VFIO_REGION_INFO_FLAG_READ
                | VFIO_REGION_INFO_FLAG_WRITE
                | VFIO_REGION_INFO_FLAG_MMAP;
            if r.flags & !known != 0 {
                return Err(format!(
                    "region {} has unsupported flags {:#x}",
                    r.index, r.flags
                ));
            }
            if (r.flags & VFIO_REGION_INFO_FLAG_MMAP != 0) != r.mmap.is_some() {
                return Err(format!(
                    "region {}: the MMAP flag needs an mmap fd and vice versa",
                    r.index
                ));
            }
        }
        for (i, q) in self.irqs.iter().enumerate() {
            if q.index >= MAX_IRQS {
                return Err(format!("IRQ index {} is not below {MAX_IRQS}", q.index));
            }
            if self
                .irqs
                .get(..i)
                .unwrap_or_default()
                .iter()
                .any(|o| o.index == q.index)
            {
                return Err(format!("IRQ index {} is listed twice", q.index));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_come_from_highest_index() {
        let info = DeviceInfo {
            regions: vec![
                RegionInfo::new(7, 256, VFIO_REGION_INFO_FLAG_READ),
                RegionInfo::new(0, 4096, 0),
            ],
            irqs: vec![IrqInfo {
                index: 2,
                count: 4,
                flags: 0,
            }],
            resettable: true,
        };
        assert_eq!(info.num_regions(), 8);
        assert_eq!(info.num_irqs(), 3);
        assert!(info.validate().is_ok());
        assert!(info.region(3).is_none());
    }

    #[test]
    fn validate_rejects_bad_descriptions() {
        let dup = DeviceInfo {
            regions: vec![RegionInfo::new(1, 1, 0), RegionInfo::new(1, 2, 0)],
            ..Default::default()
        };
        assert!(dup.validate().is_err());
        let big = DeviceInfo {
            regions: vec![RegionInfo::new(MAX_REGIONS, 1, 0)],
            ..Default::default()
        };
        assert!(big.validate().is_err());
        let mmap = DeviceInfo {
            regions: vec![RegionInfo::new(0, 1, VFIO_REGION_INFO_FLAG_MMAP)],
            ..Default::default()
        };
        assert!(mmap.validate().is_err());
        let irq = DeviceInfo {
            irqs: vec![IrqInfo {
                index: MAX_IRQS,
                count: 1,
                flags: 0,
            }],
            ..Default::default()
        };
        assert!(irq.validate().is_err());
    }
}
