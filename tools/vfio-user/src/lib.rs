//! The vfio-user protocol (QEMU `docs/interop/vfio-user.rst`, protocol 0.0) for the cx4
//! device model: a server message loop that stays in step with its client whatever it is
//! sent, and a small client for host test harnesses.
//!
//! A device model implements [`Backend`] and describes itself with a [`DeviceInfo`]; the
//! server does the protocol work (handshake, validation, DMA bookkeeping, replies):
//!
//! ```no_run
//! use vfio_user_proto::*;
//! # struct Dev;
//! # impl Backend for Dev {
//! #     fn region_read(&mut self, _: u32, _: u64, _: &mut [u8]) -> Result<(), Errno> { Ok(()) }
//! #     fn region_write(&mut self, _: u32, _: u64, _: &[u8]) -> Result<(), Errno> { Ok(()) }
//! #     fn dma_map(&mut self, _: DmaMap, _: Option<std::fs::File>) -> Result<(), Errno> { Ok(()) }
//! #     fn dma_unmap(&mut self, _: u64, _: u64) -> Result<(), Errno> { Ok(()) }
//! #     fn reset(&mut self) -> Result<(), Errno> { Ok(()) }
//! #     fn set_irqs(&mut self, _: u32, _: u32, _: u32, _: u32, _: Vec<std::fs::File>) -> Result<(), Errno> { Ok(()) }
//! # }
//! let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
//! let info = DeviceInfo {
//!     regions: vec![RegionInfo::new(0, 1 << 20, rw), RegionInfo::new(7, 4096, rw), RegionInfo::new(8, 0, 0)],
//!     irqs: vec![IrqInfo { index: 2, count: 8, flags: VFIO_IRQ_INFO_EVENTFD }, IrqInfo { index: 4, count: 0, flags: 0 }],
//!     resettable: true,
//! };
//! let server = Server::bind("/tmp/cx4.sock", info)?;
//! let mut conn = server.accept()?;
//! let mut dev = Dev;
//! loop {
//!     match conn.handle_one(&mut dev)? {
//!         Event::Closed => break,
//!         _ => { /* the device's own work can go here */ }
//!     }
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Layout: [`wire`] (header, commands, payload structs), `sock` (`SCM_RIGHTS` fd passing),
//! `channel` (framing), [`caps`] (`VERSION` JSON), `backend` ([`Backend`], [`DeviceInfo`]),
//! `dma` (mapping table), `connection` (the message loop, [`Connection`]), `server`
//! ([`Server`]), `client` ([`Client`]), `fds` ([`memfd`], [`eventfd`]), `errno` ([`Errno`]).
//!
//! What QEMU 11 (hw/vfio-user/) does that shapes this crate:
//! * it sends `VERSION` 0.0 with `max_msg_fds` 16, `max_data_xfer_size` 1 MiB, `pgsizes`
//!   4096, `max_dma_maps` 65535, `migration` and `write_multiple: true`, and reads the reply
//!   into a buffer the size of its request, so the reply must not be longer (see
//!   [`Connection`]);
//! * it posts BAR writes with `NO_REPLY` unless a region is mmap-able; failed posted writes
//!   get no reply;
//! * it coalesces posted writes into `REGION_WRITE_MULTI` only if the server announced
//!   `write_multiple` ([`ServerConfig::write_multiple`]);
//! * `DMA_UNMAP` with `VFIO_DMA_UNMAP_FLAG_ALL` (bit 1, iova 0, size 0) when the address
//!   space goes away; `DMA_MAP` without an fd for memory it cannot share;
//! * `SET_IRQS` with eventfds in chunks of at most `max_msg_fds`, and with no fds (count > 0)
//!   to de-assign;
//! * it handles `DMA_READ`/`DMA_WRITE` requests from the server on the same socket (no
//!   twin socket); its `VFIOUserDMARW` puts a 32-bit count at offset 8 and data at 12 (the
//!   spec says 64-bit count, data at 16), which a future server-side DMA must follow.

pub mod caps;
pub mod wire;

mod backend;
mod channel;
mod client;
mod connection;
mod dma;
mod errno;
mod fds;
mod server;
mod sock;

pub use backend::{
    Backend, DeviceInfo, DmaMap, IrqInfo, RegionInfo, RegionMmap, MAX_IRQS, MAX_REGIONS,
};
pub use caps::Caps;
pub use client::{Client, ClientError};
pub use connection::{Connection, Event, ServerConfig, MAX_DMA_MAPS_LIMIT, MAX_XFER_LIMIT};
pub use errno::Errno;
pub use fds::{eventfd, memfd};
pub use server::Server;
pub use sock::{KERNEL_MAX_FDS, MAX_FDS};
pub use wire::{
    Command, Header, Message, DMA_MAP_FLAG_READ, DMA_MAP_FLAG_WRITE, DMA_UNMAP_FLAG_ALL,
    FLAG_ERROR, FLAG_NO_REPLY, HEADER_SIZE, TYPE_REPLY, TYPE_REQUEST, VFIO_DEVICE_FLAGS_PCI,
    VFIO_DEVICE_FLAGS_RESET, VFIO_IRQ_INFO_EVENTFD, VFIO_IRQ_INFO_MASKABLE,
    VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_ACTION_UNMASK,
    VFIO_IRQ_SET_DATA_BOOL, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_REGION_INFO_FLAG_MMAP, VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
