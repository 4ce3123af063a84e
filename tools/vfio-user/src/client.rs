//! A blocking vfio-user client for host test harnesses: it drives a device model the way
//! QEMU does (or the way a userspace driver would), one request at a time.
//!
//! Requests the server sends to the client (`DMA_READ`/`DMA_WRITE`) are answered with
//! `ENOTSUP`: this client always shares its memory as memfds.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::backend::DmaMap;
use crate::caps::Caps;
use crate::channel::{Channel, Recv};
use crate::connection::MAX_XFER_LIMIT;
use crate::sock::MAX_FDS;
use crate::wire::*;
use crate::Errno;

/// Largest reply body the client reads: QEMU's transfer ceiling plus room for headers.
const MAX_REPLY_BODY: usize = MAX_XFER_LIMIT as usize + 8 * 1024;

/// Why a client call failed.
#[derive(Debug)]
pub enum ClientError {
    /// The socket failed or the server closed it.
    Io(io::Error),
    /// The server answered with an error reply.
    Remote(Errno),
    /// The server's reply did not make sense.
    Protocol(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "vfio-user I/O error: {e}"),
            Self::Remote(e) => write!(f, "vfio-user server error: {e}"),
            Self::Protocol(m) => write!(f, "vfio-user protocol error: {m}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<io::Error> for ClientError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl ClientError {
    /// The server's errno, for [`ClientError::Remote`].
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Self::Remote(e) => Some(*e),
            _ => None,
        }
    }
}

fn protocol(msg: impl Into<String>) -> ClientError {
    ClientError::Protocol(msg.into())
}

/// A connection to a vfio-user server.
#[derive(Debug)]
pub struct Client {
    chan: Channel,
    next_id: u16,
    server_caps: Caps,
}

impl Client {
    /// Connects to the server socket at `path` and negotiates the version.
    pub fn connect(path: impl AsRef<Path>) -> Result<Self, ClientError> {
        let mut client = Self::from_stream(UnixStream::connect(path)?);
        client.negotiate()?;
        Ok(client)
    }

    /// Wraps a connected stream without sending anything (call [`Client::negotiate`] next,
    /// or drive the protocol by hand with [`Client::send_raw`]).
    pub fn from_stream(stream: UnixStream) -> Self {
        Self {
            chan: Channel::new(stream),
            next_id: 0,
            server_caps: Caps::default(),
        }
    }

    /// The capabilities this client proposes.
    pub fn proposed_caps() -> Caps {
        Caps {
            max_msg_fds: MAX_FDS as u64,
            ..Caps::default()
        }
    }

    /// Sends `VERSION` 0.0 with [`Client::proposed_caps`] and records the server's answer.
    pub fn negotiate(&mut self) -> Result<&Caps, ClientError> {
        let mut payload = VersionHead { major: 0, minor: 0 }.encode();
        payload.extend_from_slice(&Self::proposed_caps().to_version_data(None));
        let reply = self.request(Command::VERSION, 0, &payload, &[])?;
        let head =
            VersionHead::decode(&reply.body).ok_or_else(|| protocol("short VERSION reply"))?;
        if head.major != 0 {
            return Err(protocol(format!(
                "server speaks protocol {}.{}",
                head.major, head.minor
            )));
        }
        let data = reply.body.get(VersionHead::SIZE..).unwrap_or_default();
        self.server_caps = Caps::parse(data).map_err(protocol)?;
        Ok(&self.server_caps)
    }

    /// What the server announced (defaults before [`Client::negotiate`]).
    pub fn server_caps(&self) -> &Caps {
        &self.server_caps
    }

    /// The socket (e.g. to set a read timeout).
    pub fn stream(&self) -> &UnixStream {
        self.chan.stream()
    }

    /// A fresh message id.
    pub fn next_id(&mut self) -> u16 {
        let id = self.next_id;
        self.next_id = id.wrapping_add(1);
        id
    }

    /// Sends a request and returns its reply, error replies included.
    pub fn call(
        &mut self,
        command: Command,
        flags: u32,
        payload: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> Result<Message, ClientError> {
        let id = self.next_id();
        self.chan.send(
            Header::request(id, command, flags & !FLAG_NO_REPLY),
            payload,
            fds,
        )?;
        self.wait_reply(id)
    }

    /// Sends a request and returns its reply; an error reply becomes [`ClientError::Remote`].
    pub fn request(
        &mut self,
        command: Command,
        flags: u32,
        payload: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> Result<Message, ClientError> {
        let reply = self.call(command, flags, payload, fds)?;
        match reply.errno() {
            Some(e) => Err(ClientError::Remote(e)),
            None => Ok(reply),
        }
    }

    /// Sends a request with [`FLAG_NO_REPLY`] (a posted write, say); nothing comes back.
    pub fn post(
        &mut self,
        command: Command,
        payload: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<()> {
        let id = self.next_id();
        self.chan
            .send(Header::request(id, command, FLAG_NO_REPLY), payload, fds)
    }

    fn wait_reply(&mut self, id: u16) -> Result<Message, ClientError> {
        loop {
            match self.chan.recv(MAX_REPLY_BODY)? {
                Recv::Idle => {
                    return Err(
                        io::Error::new(io::ErrorKind::TimedOut, "no reply from the server").into(),
                    )
                }
                Recv::Eof => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "server closed the connection",
                    )
                    .into())
                }
                Recv::Malformed { header, errno }
                    if header.id == id && header.msg_type() == TYPE_REPLY =>
                {
                    return Err(protocol(format!(
                        "malformed reply to {:?}: {errno}",
                        header.command
                    )))
                }
                Recv::Malformed { header, errno } => {
                    log::warn!("malformed message {header:?} ignored: {errno}")
                }
                Recv::Message(m) if m.header.msg_type() == TYPE_REPLY && m.header.id == id => {
                    return Ok(m)
                }
                Recv::Message(m) if m.header.msg_type() == TYPE_REPLY => {
                    log::warn!(
                        "stray reply {} to {:?} ignored",
                        m.header.id,
                        m.header.command
                    )
                }
                Recv::Message(m) => {
                    log::warn!("server request {:?} refused", m.header.command);
                    if !m.header.no_reply() {
                        self.chan
                            .send(m.header.error_reply(Errno::ENOTSUP), &[], &[])?;
                    }
                }
            }
        }
    }

    /// `DEVICE_GET_INFO`.
    pub fn device_info(&mut self) -> Result<DeviceInfoPayload, ClientError> {
        let req = DeviceInfoPayload {
            argsz: DeviceInfoPayload::SIZE as u32,
            ..Default::default()
        };
        let reply = self.request(Command::DEVICE_GET_INFO, 0, &req.encode(), &[])?;
        DeviceInfoPayload::decode(&reply.body)
            .ok_or_else(|| protocol("short DEVICE_GET_INFO reply"))
    }

    /// `DEVICE_GET_REGION_INFO`, with the region's mmap file if the server sent one.
    pub fn region_info(
        &mut self,
        index: u32,
    ) -> Result<(RegionInfoPayload, Option<File>), ClientError> {
        let req = RegionInfoPayload {
            argsz: RegionInfoPayload::SIZE as u32,
            index,
            ..Default::default()
        };
        let reply = self.request(Command::DEVICE_GET_REGION_INFO, 0, &req.encode(), &[])?;
        let info = RegionInfoPayload::decode(&reply.body)
            .ok_or_else(|| protocol("short region info reply"))?;
        Ok((info, reply.fds.into_iter().next().map(File::from)))
    }

    /// `DEVICE_GET_IRQ_INFO`.
    pub fn irq_info(&mut self, index: u32) -> Result<IrqInfoPayload, ClientError> {
        let req = IrqInfoPayload {
            argsz: IrqInfoPayload::SIZE as u32,
            index,
            ..Default::default()
        };
        let reply = self.request(Command::DEVICE_GET_IRQ_INFO, 0, &req.encode(), &[])?;
        IrqInfoPayload::decode(&reply.body).ok_or_else(|| protocol("short IRQ info reply"))
    }

    fn access(region: u32, offset: u64, len: usize) -> Result<RegionAccessPayload, ClientError> {
        let count = u32::try_from(len).map_err(|_| ClientError::Remote(Errno::E2BIG))?;
        Ok(RegionAccessPayload {
            offset,
            region,
            count,
        })
    }

    /// `REGION_READ` of `buf.len()` bytes at `offset`.
    pub fn region_read(
        &mut self,
        region: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), ClientError> {
        let req = Self::access(region, offset, buf.len())?;
        let reply = self.request(Command::REGION_READ, 0, &req.encode(), &[])?;
        let head =
            RegionAccessPayload::decode(&reply.body).ok_or_else(|| protocol("short read reply"))?;
        let data = reply
            .body
            .get(RegionAccessPayload::SIZE..)
            .unwrap_or_default();
        if head.count as usize != buf.len() || data.len() != buf.len() {
            return Err(protocol(format!(
                "read of {} bytes answered with {}",
                buf.len(),
                data.len()
            )));
        }
        buf.copy_from_slice(data);
        Ok(())
    }

    fn write_payload(region: u32, offset: u64, data: &[u8]) -> Result<Vec<u8>, ClientError> {
        let mut payload = Self::access(region, offset, data.len())?.encode();
        payload.extend_from_slice(data);
        Ok(payload)
    }

    /// `REGION_WRITE` of `data` at `offset`, waiting for the reply.
    pub fn region_write(
        &mut self,
        region: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), ClientError> {
        let payload = Self::write_payload(region, offset, data)?;
        self.request(Command::REGION_WRITE, 0, &payload, &[])?;
        Ok(())
    }

    /// `REGION_WRITE` with no reply, as QEMU posts BAR writes; a later request's reply
    /// implies it was done.
    pub fn region_write_posted(
        &mut self,
        region: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), ClientError> {
        let payload = Self::write_payload(region, offset, data)?;
        Ok(self.post(Command::REGION_WRITE, &payload, &[])?)
    }

    /// `DMA_MAP` of `map`, sharing `fd` (e.g. a [`crate::memfd`]) if given.
    pub fn dma_map(&mut self, map: DmaMap, fd: Option<BorrowedFd<'_>>) -> Result<(), ClientError> {
        let req = DmaMapPayload {
            argsz: DmaMapPayload::SIZE as u32,
            flags: map.flags,
            offset: map.offset,
            iova: map.iova,
            size: map.size,
        };
        self.request(Command::DMA_MAP, 0, &req.encode(), fd.as_slice())?;
        Ok(())
    }

    /// `DMA_UNMAP` (flags 0 or [`DMA_UNMAP_FLAG_ALL`] with iova and size 0).
    pub fn dma_unmap(&mut self, iova: u64, size: u64, flags: u32) -> Result<(), ClientError> {
        let req = DmaUnmapPayload {
            argsz: DmaUnmapPayload::SIZE as u32,
            flags,
            iova,
            size,
        };
        self.request(Command::DMA_UNMAP, 0, &req.encode(), &[])?;
        Ok(())
    }

    /// `DEVICE_SET_IRQS`; `data` is the bool array for `VFIO_IRQ_SET_DATA_BOOL` (else empty),
    /// `fds` the eventfds for `VFIO_IRQ_SET_DATA_EVENTFD`.
    pub fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        data: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> Result<(), ClientError> {
        let argsz = u32::try_from(IrqSetPayload::SIZE + data.len())
            .map_err(|_| ClientError::Remote(Errno::E2BIG))?;
        let mut payload = IrqSetPayload {
            argsz,
            flags,
            index,
            start,
            count,
        }
        .encode();
        payload.extend_from_slice(data);
        self.request(Command::DEVICE_SET_IRQS, 0, &payload, fds)?;
        Ok(())
    }

    /// `DEVICE_RESET`.
    pub fn reset(&mut self) -> Result<(), ClientError> {
        self.request(Command::DEVICE_RESET, 0, &[], &[])?;
        Ok(())
    }

    /// Sends `bytes` exactly as given (no framing check), `fds` attached: for fuzzing.
    pub fn send_raw(&mut self, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        self.chan.send_raw(bytes, fds)
    }

    /// Receives one framed message of any kind; `None` once the server closed the stream.
    /// Malformed frames (size below 16, oversized) are an `InvalidData` error.
    pub fn recv_raw(&mut self) -> io::Result<Option<Message>> {
        match self.chan.recv(MAX_REPLY_BODY)? {
            Recv::Eof => Ok(None),
            Recv::Idle => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "no message (read timeout)",
            )),
            Recv::Message(m) => Ok(Some(m)),
            Recv::Malformed { header, errno } => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("malformed message {header:?}: {errno}"),
            )),
        }
    }
}
