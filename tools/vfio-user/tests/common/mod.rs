//! A test device and the plumbing to run it behind a server thread.
//!
//! Region 0 (`REGS`, 4 KiB, read/write) is a register file:
//! * `0x000..0x100` scratch, plain memory;
//! * `DMA_IOVA` (u64), `DMA_LEN` (u32), `DMA_GO` (u32): writing `GO_TO_GUEST` copies
//!   `DMA_LEN` scratch bytes to guest memory at `DMA_IOVA`, `GO_FROM_GUEST` the other way;
//!   `DMA_STATUS` (u32) then holds 0 or the errno;
//! * `IRQ_FIRE` (u32): writing `n` signals MSI-X vector `n`'s eventfd.
//!
//! Region 1 (`RO`, 256 bytes) is read-only, region 7 (`CONFIG`, 256 bytes) read/write;
//! IRQ index 2 (`MSIX`) has 4 vectors.

#![allow(dead_code)]

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use vfio_user_proto::*;

pub const REGS: u32 = 0;
pub const RO: u32 = 1;
pub const CONFIG: u32 = 7;
pub const MSIX: u32 = 2;
pub const MSIX_VECTORS: u32 = 4;

pub const DMA_IOVA: u64 = 0x100;
pub const DMA_LEN: u64 = 0x108;
pub const DMA_GO: u64 = 0x10c;
pub const DMA_STATUS: u64 = 0x110;
pub const IRQ_FIRE: u64 = 0x200;
pub const GO_TO_GUEST: u32 = 1;
pub const GO_FROM_GUEST: u32 = 2;

/// What the device did, for the test thread to inspect.
#[derive(Default)]
pub struct State {
    pub regs: Vec<u8>,
    pub config: Vec<u8>,
    pub maps: Vec<(DmaMap, Option<File>)>,
    pub vectors: Vec<Option<File>>,
    pub masked: Vec<bool>,
    pub set_irqs_calls: Vec<(u32, u32, u32, u32, usize)>,
    pub resets: u32,
    pub disconnects: u32,
}

/// The device: a handle to shared [`State`].
#[derive(Clone)]
pub struct TestDev(pub Arc<Mutex<State>>);

impl TestDev {
    pub fn new() -> Self {
        let st = State {
            regs: vec![0; 4096],
            config: vec![0; 256],
            vectors: (0..MSIX_VECTORS).map(|_| None).collect(),
            masked: vec![false; MSIX_VECTORS as usize],
            ..Default::default()
        };
        Self(Arc::new(Mutex::new(st)))
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn info() -> DeviceInfo {
        let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
        DeviceInfo {
            regions: vec![
                RegionInfo::new(REGS, 4096, rw),
                RegionInfo::new(RO, 256, VFIO_REGION_INFO_FLAG_READ),
                RegionInfo::new(CONFIG, 256, rw),
                RegionInfo::new(8, 0, 0),
            ],
            irqs: vec![
                IrqInfo {
                    index: 0,
                    count: 1,
                    flags: VFIO_IRQ_INFO_EVENTFD,
                },
                IrqInfo {
                    index: MSIX,
                    count: MSIX_VECTORS,
                    flags: VFIO_IRQ_INFO_EVENTFD | VFIO_IRQ_INFO_MASKABLE,
                },
                IrqInfo {
                    index: 4,
                    count: 0,
                    flags: 0,
                },
            ],
            resettable: true,
        }
    }
}

fn u32_at(b: &[u8], off: u64) -> u32 {
    let o = off as usize;
    u32::from_ne_bytes(b[o..o + 4].try_into().unwrap())
}

fn dma(st: &mut State, iova: u64, len: u64, to_guest: bool) -> Result<(), Errno> {
    let last = iova.checked_add(len.max(1) - 1).ok_or(Errno::EFAULT)?;
    let (map, file) = st
        .maps
        .iter()
        .find(|(m, _)| iova >= m.iova && last <= m.last())
        .ok_or(Errno::EFAULT)?;
    let file = file.as_ref().ok_or(Errno::EFAULT)?;
    let off = map
        .offset
        .checked_add(iova - map.iova)
        .ok_or(Errno::EFAULT)?;
    let len = len as usize;
    if to_guest {
        if !map.writable() {
            return Err(Errno::EPERM);
        }
        file.write_all_at(&st.regs[..len], off).map_err(Errno::from)
    } else {
        if !map.readable() {
            return Err(Errno::EPERM);
        }
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, off).map_err(Errno::from)?;
        st.regs[..len].copy_from_slice(&buf);
        Ok(())
    }
}

impl Backend for TestDev {
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), Errno> {
        let st = self.state();
        let src = if region == CONFIG {
            &st.config
        } else if region == RO {
            &st.regs[..256]
        } else {
            &st.regs
        };
        let o = offset as usize;
        data.copy_from_slice(&src[o..o + data.len()]);
        Ok(())
    }

    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> Result<(), Errno> {
        let mut st = self.state();
        let o = offset as usize;
        if region == CONFIG {
            st.config[o..o + data.len()].copy_from_slice(data);
            return Ok(());
        }
        assert_eq!(
            region, REGS,
            "server let a write to region {region} through"
        );
        st.regs[o..o + data.len()].copy_from_slice(data);
        if offset == DMA_GO && data.len() == 4 {
            let iova = u64::from_ne_bytes(st.regs[DMA_IOVA as usize..][..8].try_into().unwrap());
            let len = u64::from(u32_at(&st.regs, DMA_LEN)).min(0x100);
            let go = u32_at(&st.regs, DMA_GO);
            let status = match dma(&mut st, iova, len, go == GO_TO_GUEST) {
                Ok(()) => 0,
                Err(e) => e.raw() as u32,
            };
            st.regs[DMA_STATUS as usize..][..4].copy_from_slice(&status.to_ne_bytes());
        }
        if offset == IRQ_FIRE && data.len() == 4 {
            let n = u32_at(&st.regs, IRQ_FIRE) as usize;
            let masked = st.masked.get(n).copied().unwrap_or(true);
            if let Some(Some(f)) = st.vectors.get_mut(n) {
                if !masked {
                    f.write_all(&1u64.to_ne_bytes()).map_err(Errno::from)?;
                }
            }
        }
        Ok(())
    }

    fn dma_map(&mut self, map: DmaMap, fd: Option<File>) -> Result<(), Errno> {
        self.state().maps.push((map, fd));
        Ok(())
    }

    fn dma_unmap(&mut self, iova: u64, size: u64) -> Result<(), Errno> {
        let mut st = self.state();
        let before = st.maps.len();
        st.maps.retain(|(m, _)| !(m.iova == iova && m.size == size));
        assert_eq!(
            st.maps.len() + 1,
            before,
            "unmap of {iova:#x}+{size:#x} named no single mapping"
        );
        Ok(())
    }

    fn reset(&mut self) -> Result<(), Errno> {
        let mut st = self.state();
        st.regs.fill(0);
        st.resets += 1;
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
        let mut st = self.state();
        st.set_irqs_calls
            .push((index, flags, start, count, fds.len()));
        if index != MSIX {
            return Ok(());
        }
        let range = start as usize..(start + count) as usize;
        let action = flags & 0x38;
        match flags & 0x7 {
            VFIO_IRQ_SET_DATA_EVENTFD if action == VFIO_IRQ_SET_ACTION_TRIGGER => {
                if fds.is_empty() {
                    range.for_each(|i| st.vectors[i] = None);
                } else {
                    for (i, f) in range.zip(fds) {
                        st.vectors[i] = Some(f);
                    }
                }
            }
            VFIO_IRQ_SET_DATA_NONE if count == 0 => st.vectors.iter_mut().for_each(|v| *v = None),
            VFIO_IRQ_SET_DATA_NONE => match action {
                VFIO_IRQ_SET_ACTION_MASK => range.for_each(|i| st.masked[i] = true),
                VFIO_IRQ_SET_ACTION_UNMASK => range.for_each(|i| st.masked[i] = false),
                _ => {
                    for i in range {
                        if let Some(f) = st.vectors[i].as_mut() {
                            f.write_all(&1u64.to_ne_bytes()).map_err(Errno::from)?;
                        }
                    }
                }
            },
            _ => return Err(Errno::ENOTSUP),
        }
        Ok(())
    }

    fn disconnected(&mut self) {
        let mut st = self.state();
        st.disconnects += 1;
        st.vectors.iter_mut().for_each(|v| *v = None);
    }
}

/// A server thread serving a fresh [`TestDev`] on one end of a socketpair.
pub struct Harness {
    pub dev: TestDev,
    pub server: Option<JoinHandle<std::io::Result<()>>>,
}

impl Harness {
    /// Starts the server; returns the raw client end (nothing sent yet).
    pub fn start_raw(config: ServerConfig) -> (Self, Client) {
        Self::start_raw_with(TestDev::info(), config)
    }

    /// Like [`Harness::start_raw`] with another device description.
    pub fn start_raw_with(info: DeviceInfo, config: ServerConfig) -> (Self, Client) {
        let (a, b) = UnixStream::pair().unwrap();
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let dev = TestDev::new();
        let mut conn = Connection::new(a, info, config).unwrap();
        let mut backend = dev.clone();
        let server = std::thread::spawn(move || conn.serve(&mut backend));
        (
            Self {
                dev,
                server: Some(server),
            },
            Client::from_stream(b),
        )
    }

    /// Starts the server and negotiates the version.
    pub fn start() -> (Self, Client) {
        let (h, mut c) = Self::start_raw(ServerConfig::default());
        c.negotiate().unwrap();
        (h, c)
    }

    /// Waits for the server thread, which must neither panic nor fail.
    pub fn join(mut self) {
        if let Some(s) = self.server.take() {
            s.join()
                .expect("server thread panicked")
                .expect("server loop failed");
        }
    }
}

/// Whether `f` (an eventfd) has a non-zero count, without blocking.
pub fn signalled(f: &File) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: f.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `p` is one valid pollfd for an open descriptor; timeout 0 does not block.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n == 1 && p.revents & libc::POLLIN != 0
}

/// Reads (and resets) an eventfd's count.
pub fn take(f: &File) -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    (&*f).read_exact(&mut b).unwrap();
    u64::from_ne_bytes(b)
}

/// One readable register in region 0: proves the stream is in step.
pub fn probe(c: &mut Client) {
    let mut v = [0u8; 4];
    c.region_write(REGS, 0x40, &0xfeed_f00du32.to_ne_bytes())
        .expect("probe write");
    c.region_read(REGS, 0x40, &mut v).expect("probe read");
    assert_eq!(u32::from_ne_bytes(v), 0xfeed_f00d);
}

/// Sends `bytes` and returns the one reply (the test knows one comes).
pub fn raw_call(c: &mut Client, bytes: &[u8], fds: &[std::os::fd::BorrowedFd<'_>]) -> Message {
    c.send_raw(bytes, fds).unwrap();
    c.recv_raw().unwrap().expect("server closed the connection")
}
