//! The vfio-user transport: the only module that knows the wire protocol.
//!
//! The device model sees region accesses, DMA maps, IRQ fds and resets; everything about
//! sockets, message framing and fd passing stays behind this boundary.

use std::{fs::File, mem::size_of, path::Path};

use vfio_bindings::bindings::vfio::{
    vfio_region_info, VFIO_IRQ_INFO_EVENTFD, VFIO_PCI_NUM_IRQS, VFIO_PCI_NUM_REGIONS,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use vfio_user::{DmaMapFlags, DmaUnmapFlags, IrqInfo, Server, ServerBackend, ServerRegion};

use crate::{
    device::{AccessError, Device, IRQ_MSIX, REGION_BAR0, REGION_CONFIG},
    pci_cfg::CFG_SIZE,
};

fn errno(e: i32, msg: impl Into<String>) -> std::io::Error {
    let m = msg.into();
    log::warn!("{m}");
    std::io::Error::from_raw_os_error(e)
}

struct Backend<'a> {
    dev: &'a mut Device,
}

impl ServerBackend for Backend<'_> {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> std::io::Result<()> {
        self.dev
            .region_read(region, offset, data)
            .map_err(|e| match e {
                AccessError::OutOfRange => errno(
                    libc::EINVAL,
                    format!("read outside region {region} at {offset:#x}"),
                ),
                AccessError::BadAccess => errno(
                    libc::EINVAL,
                    format!("bad read of region {region} at {offset:#x}"),
                ),
            })
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.dev
            .region_write(region, offset, data)
            .map_err(|e| match e {
                AccessError::OutOfRange => errno(
                    libc::EINVAL,
                    format!("write outside region {region} at {offset:#x}"),
                ),
                AccessError::BadAccess => errno(
                    libc::EINVAL,
                    format!("bad write of region {region} at {offset:#x}"),
                ),
            })
    }

    fn dma_map(
        &mut self,
        _flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> std::io::Result<()> {
        log::debug!("DMA map {address:#x}+{size:#x} (fd {})", fd.is_some());
        self.dev
            .mem
            .map(address, size, offset, fd)
            .inspect_err(|e| log::warn!("DMA map refused: {e}"))
    }

    fn dma_unmap(&mut self, _flags: DmaUnmapFlags, address: u64, size: u64) -> std::io::Result<()> {
        log::debug!("DMA unmap {address:#x}+{size:#x}");
        self.dev
            .mem
            .unmap(address, size)
            .inspect_err(|e| log::warn!("DMA unmap refused: {e}"))
    }

    fn reset(&mut self) -> std::io::Result<()> {
        self.dev.reset();
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> std::io::Result<()> {
        log::debug!(
            "SET_IRQS index {index} flags {flags:#x} start {start} count {count} fds {}",
            fds.len()
        );
        match index {
            IRQ_MSIX => self.dev.set_msix(flags, start, count, fds),
            _ if count == 0 => Ok(()),
            _ => Err(errno(
                libc::EINVAL,
                format!("SET_IRQS on unsupported index {index}"),
            )),
        }
    }
}

fn regions() -> Vec<ServerRegion> {
    (0..VFIO_PCI_NUM_REGIONS)
        .map(|index| {
            let (size, flags) = match index {
                REGION_BAR0 => (
                    cx4_hw::pci::BAR0_SIZE,
                    VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE,
                ),
                REGION_CONFIG => (
                    CFG_SIZE as u64,
                    VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE,
                ),
                _ => (0, 0),
            };
            ServerRegion {
                region_info: vfio_region_info {
                    argsz: size_of::<vfio_region_info>() as u32,
                    index,
                    size,
                    flags,
                    ..Default::default()
                },
                sparse_areas: Vec::new(),
                mmap_fd: None,
            }
        })
        .collect()
}

fn irqs(msix: u32) -> Vec<IrqInfo> {
    (0..VFIO_PCI_NUM_IRQS)
        .map(|index| IrqInfo {
            index,
            flags: VFIO_IRQ_INFO_EVENTFD,
            count: if index == IRQ_MSIX { msix } else { 0 },
        })
        .collect()
}

/// Listens on `socket`, serves one client until it disconnects.
pub fn serve(socket: &Path, dev: &mut Device) -> Result<(), String> {
    let server = Server::new(socket, true, irqs(dev.msix.len() as u32), regions())
        .map_err(|e| format!("cannot listen on {}: {e:?}", socket.display()))?;
    log::info!("listening on {}", socket.display());
    let mut backend = Backend { dev };
    server.run(&mut backend).map_err(|e| format!("{e:?}"))?;
    backend.dev.mem.clear();
    Ok(())
}
