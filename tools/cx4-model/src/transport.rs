//! The vfio-user transport: the only module that knows the wire protocol.
//!
//! The project's own protocol crate (`tools/vfio-user`) does the message loop; this module
//! describes the device to it, adapts region accesses, DMA maps, IRQ fds and resets to
//! [`Device`], and serves the control socket that injects faults at run time.

use std::{
    fs::File,
    io::{BufRead, BufReader, Write},
    os::unix::net::UnixListener,
    path::Path,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use vfio_user_proto::{
    Backend, DeviceInfo, DmaMap, Errno, Event, IrqInfo, RegionInfo, Server, VFIO_IRQ_INFO_EVENTFD,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};

use crate::{
    device::{AccessError, Device, IRQ_MSIX, REGION_BAR0, REGION_CONFIG},
    faults::Fault,
    pci_cfg::CFG_SIZE,
};

/// A device shared between the message loop and the control socket.
pub type Shared = Arc<Mutex<Device>>;

fn lock(d: &Shared) -> MutexGuard<'_, Device> {
    // A panic while holding the lock would be a model bug; keep serving with the state as is.
    d.lock().unwrap_or_else(|e| e.into_inner())
}

struct Adapter(Shared);

fn access_errno(e: AccessError) -> Errno {
    match e {
        AccessError::OutOfRange => Errno::EINVAL,
        AccessError::BadAccess => Errno::EINVAL,
    }
}

impl Backend for Adapter {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), Errno> {
        lock(&self.0)
            .region_read(region, offset, data)
            .map_err(access_errno)
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> Result<(), Errno> {
        lock(&self.0)
            .region_write(region, offset, data)
            .map_err(access_errno)
    }

    fn dma_map(&mut self, map: DmaMap, fd: Option<File>) -> Result<(), Errno> {
        log::debug!(
            "DMA map {:#x}+{:#x} (fd {})",
            map.iova,
            map.size,
            fd.is_some()
        );
        lock(&self.0)
            .guest_memory()
            .map(map.iova, map.size, map.offset, fd)
            .map_err(|e| {
                log::warn!("DMA map refused: {e}");
                Errno::EINVAL
            })
    }

    fn dma_unmap(&mut self, iova: u64, size: u64) -> Result<(), Errno> {
        log::debug!("DMA unmap {iova:#x}+{size:#x}");
        lock(&self.0).guest_memory().unmap(iova, size).map_err(|e| {
            log::warn!("DMA unmap refused: {e}");
            Errno::ENOENT
        })
    }

    fn reset(&mut self) -> Result<(), Errno> {
        lock(&self.0).reset();
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), Errno> {
        log::debug!(
            "SET_IRQS index {index} flags {flags:#x} start {start} count {count} fds {}",
            fds.len()
        );
        match index {
            IRQ_MSIX => lock(&self.0)
                .set_msix(flags, start, count, fds)
                .map_err(|e| {
                    log::warn!("SET_IRQS refused: {e}");
                    Errno::EINVAL
                }),
            _ if count == 0 => Ok(()),
            _ => Err(Errno::EINVAL),
        }
    }

    fn disconnected(&mut self) {
        let d = lock(&self.0);
        log::info!("client disconnected; {}", d.page_report());
    }
}

/// What the device looks like to the client.
pub fn device_info(msix_vectors: u32) -> DeviceInfo {
    let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
    let mut regions: Vec<RegionInfo> = (0..9).map(|i| RegionInfo::new(i, 0, 0)).collect();
    regions[REGION_BAR0 as usize] = RegionInfo::new(REGION_BAR0, cx4_hw::pci::BAR0_SIZE, rw);
    regions[REGION_CONFIG as usize] = RegionInfo::new(REGION_CONFIG, CFG_SIZE as u64, rw);
    let irqs = (0..5)
        .map(|index| IrqInfo {
            index,
            count: if index == IRQ_MSIX { msix_vectors } else { 0 },
            flags: VFIO_IRQ_INFO_EVENTFD,
        })
        .collect();
    DeviceInfo {
        regions,
        irqs,
        resettable: true,
    }
}

/// Serves the control socket: one fault SPEC per line, answered `ok` or `error: ...`, or a
/// read-only query answered with one line (`stats`, `qos`).
pub fn spawn_control(path: &Path, dev: Shared) -> Result<(), String> {
    let listener =
        UnixListener::bind(path).map_err(|e| format!("control socket {}: {e}", path.display()))?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let reader = match stream.try_clone() {
                Ok(s) => BufReader::new(s),
                Err(_) => continue,
            };
            let mut w = stream;
            for line in reader.lines() {
                let Ok(line) = line else { break };
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                let reply = match line {
                    "stats" => lock(&dev).stats_line(),
                    "qos" => lock(&dev).qos_line(),
                    "roce" => lock(&dev).roce_line(),
                    "lies" => lock(&dev).lies_line(),
                    _ => match Fault::parse(line) {
                        Ok(f) => match lock(&dev).inject(&f) {
                            Ok(()) => "ok".to_string(),
                            Err(e) => format!("error: {e}"),
                        },
                        Err(e) => format!("error: {e}"),
                    },
                };
                if writeln!(w, "{reply}").is_err() {
                    break;
                }
            }
        }
    });
    Ok(())
}

/// Listens on `socket` and serves one client until it disconnects.
pub fn serve(socket: &Path, dev: Shared) -> Result<(), String> {
    let msix = lock(&dev).msix_vectors() as u32;
    let server = Server::bind(socket, device_info(msix))
        .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    log::info!("listening on {}", socket.display());
    let mut conn = server.accept().map_err(|e| format!("accept: {e}"))?;
    conn.stream()
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let mut adapter = Adapter(dev);
    loop {
        match conn.handle_one(&mut adapter) {
            Ok(Event::Closed) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("connection: {e}")),
        }
    }
    Ok(())
}
