//! One client connection on the server side: the message loop.
//!
//! [`Connection::handle_one`] reads exactly one message, validates it, calls the
//! [`Backend`], and answers it (unless it asked for no reply). Whatever the message holds,
//! its bytes are consumed in full and unused descriptors are closed before anything is
//! answered, so an error never leaves the stream out of step, and every error reply
//! carries a non-zero errno.
//!
//! ## Message ids and server-to-client requests
//!
//! Message ids belong to the sender of a request (spec: "Message IDs belong entirely to the
//! sender"); the `Reply` type bit tells which id space a message's id lives in. The client's
//! requests carry the client's ids and are echoed back; requests this side sends with
//! [`Connection::send_request`] (e.g. a future `DMA_READ`/`DMA_WRITE` for memory mapped
//! without an fd) take ids from this connection's own counter, which skips ids still
//! awaiting a reply. Their replies come back interleaved with client requests (QEMU has no
//! twin socket) and [`Connection::handle_one`] hands them out as [`Event::Reply`]. A caller
//! that needs the answer before it can go on keeps calling `handle_one`, serving client
//! requests meanwhile, until its reply arrives: blocking on it would deadlock against a
//! client that is itself waiting for a reply.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use crate::backend::{Backend, DeviceInfo, DmaMap, IrqInfo};
use crate::caps::Caps;
use crate::channel::{Channel, Recv};
use crate::dma::{last_addr, DmaTable};
use crate::sock::MAX_FDS;
use crate::wire::*;
use crate::Errno;

/// Room beyond `max_data_xfer_size` for the fixed part of any message (the largest,
/// `REGION_WRITE_MULTI` with 200 entries, needs 4808 bytes).
const MSG_OVERHEAD: usize = 8 * 1024;

/// QEMU refuses a `max_data_xfer_size` above this (`VFIO_USER_MAX_MAX_XFER`).
pub const MAX_XFER_LIMIT: u32 = 64 << 20;
/// QEMU refuses a `max_dma_maps` above this (`VFIO_USER_DEF_MAP_MAX`).
pub const MAX_DMA_MAPS_LIMIT: u32 = 65535;

/// Limits a server announces in its `VERSION` reply and enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// Largest `count` of a region read or write (default 1 MiB, at most [`MAX_XFER_LIMIT`]).
    /// Messages longer than this plus a small fixed overhead are drained and refused with
    /// `E2BIG`.
    pub max_data_xfer_size: u32,
    /// Most DMA mappings at once (default and maximum [`MAX_DMA_MAPS_LIMIT`]).
    pub max_dma_maps: u32,
    /// Announce `write_multiple` (if the client proposes it), letting QEMU coalesce posted
    /// writes of up to 8 bytes into `REGION_WRITE_MULTI`. Default off; the message is
    /// accepted either way.
    pub write_multiple: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_data_xfer_size: 1 << 20,
            max_dma_maps: MAX_DMA_MAPS_LIMIT,
            write_multiple: false,
        }
    }
}

impl ServerConfig {
    /// Largest message (header included) the server reads into memory.
    pub fn max_msg_size(&self) -> usize {
        HEADER_SIZE + self.max_body()
    }

    fn max_body(&self) -> usize {
        self.max_data_xfer_size as usize + MSG_OVERHEAD
    }

    /// The capabilities announced in `VERSION`.
    pub fn caps(&self) -> Caps {
        Caps {
            max_msg_fds: MAX_FDS as u64,
            max_data_xfer_size: self.max_data_xfer_size.into(),
            pgsizes: 4096,
            max_dma_maps: self.max_dma_maps.into(),
            write_multiple: self.write_multiple,
            present: Vec::new(),
        }
    }

    pub(crate) fn validate(&self) -> io::Result<()> {
        if self.max_data_xfer_size == 0 || self.max_data_xfer_size > MAX_XFER_LIMIT {
            return Err(invalid("max_data_xfer_size must be in 1..=64 MiB"));
        }
        if self.max_dma_maps == 0 || self.max_dma_maps > MAX_DMA_MAPS_LIMIT {
            return Err(invalid("max_dma_maps must be in 1..=65535"));
        }
        Ok(())
    }
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

/// What [`Connection::handle_one`] did.
#[derive(Debug)]
pub enum Event {
    /// A client request was handled and, unless it set no-reply, answered.
    Request {
        /// Its command.
        command: Command,
        /// `Ok` or the errno it was (or would have been) answered with.
        result: Result<(), Errno>,
    },
    /// The reply to a request sent with [`Connection::send_request`].
    Reply(Message),
    /// A reply that matched no outstanding request was dropped.
    Discarded,
    /// No message arrived: the socket is non-blocking or its read timeout expired before a
    /// message began. Nothing was consumed; call again when convenient.
    Idle,
    /// The client closed the connection (or it failed). DMA mappings have been withdrawn and
    /// [`Backend::disconnected`] called; further calls keep returning `Closed`.
    Closed,
}

/// A successful answer: payload and an optional descriptor to pass along.
struct Reply {
    payload: Vec<u8>,
    fd: Option<Arc<OwnedFd>>,
}

impl Reply {
    fn empty() -> Self {
        Self::with(Vec::new())
    }

    fn with(payload: Vec<u8>) -> Self {
        Self { payload, fd: None }
    }
}

/// Refuses descriptors on a command that takes none (they are closed when dropped).
fn no_fds(fds: &[OwnedFd]) -> Result<(), Errno> {
    if fds.is_empty() {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// A connected client.
#[derive(Debug)]
pub struct Connection {
    chan: Channel,
    info: Arc<DeviceInfo>,
    config: ServerConfig,
    /// The client's capabilities, once `VERSION` succeeded.
    peer: Option<Caps>,
    dma: DmaTable,
    next_id: u16,
    /// Requests sent to the client that await a reply: id -> command.
    pending: HashMap<u16, Command>,
    closed: bool,
}

impl Connection {
    /// Serves `info` on an already connected stream (e.g. one end of a socketpair).
    pub fn new(
        stream: UnixStream,
        info: impl Into<Arc<DeviceInfo>>,
        config: ServerConfig,
    ) -> io::Result<Self> {
        let info = info.into();
        info.validate().map_err(invalid)?;
        config.validate()?;
        Ok(Self {
            chan: Channel::new(stream),
            info,
            config,
            peer: None,
            dma: DmaTable::default(),
            next_id: 0,
            pending: HashMap::new(),
            closed: false,
        })
    }

    /// The client's capabilities, once it negotiated a version.
    pub fn peer_caps(&self) -> Option<&Caps> {
        self.peer.as_ref()
    }

    /// The client's current DMA mappings, in address order.
    pub fn dma_maps(&self) -> Vec<DmaMap> {
        self.dma.all()
    }

    /// The socket, e.g. to poll it or set a read timeout.
    pub fn stream(&self) -> &UnixStream {
        self.chan.stream()
    }

    /// Whether bytes already read from the socket wait to be handled: then
    /// [`Connection::handle_one`] has (the start of) a message though the socket may not be
    /// readable, so call it before polling the socket.
    pub fn buffered(&self) -> bool {
        self.chan.buffered()
    }

    /// Handles messages until the client disconnects (waiting through [`Event::Idle`]).
    pub fn serve(&mut self, backend: &mut dyn Backend) -> io::Result<()> {
        loop {
            match self.handle_one(backend)? {
                Event::Closed => return Ok(()),
                Event::Idle => crate::sock::wait(self.chan.stream().as_fd(), libc::POLLIN)?,
                _ => {}
            }
        }
    }

    /// Reads and handles one message, blocking until it has arrived in full.
    ///
    /// To interleave other work, either poll [`Connection::stream`] for input first (unless
    /// [`Connection::buffered`]: messages read along with an earlier one wait there), or give
    /// the stream a read timeout (or make it non-blocking): when no message has begun,
    /// `handle_one` returns [`Event::Idle`]; once one has begun it is always read to its end.
    ///
    /// I/O errors other than the client going away are returned after the connection has
    /// been closed down as for [`Event::Closed`].
    pub fn handle_one(&mut self, backend: &mut dyn Backend) -> io::Result<Event> {
        if self.closed {
            return Ok(Event::Closed);
        }
        match self.step(backend) {
            Err(e) if is_disconnect(&e) => {
                log::info!("vfio-user client went away: {e}");
                self.close(backend);
                Ok(Event::Closed)
            }
            Err(e) => {
                self.close(backend);
                Err(e)
            }
            Ok(ev) => Ok(ev),
        }
    }

    fn step(&mut self, backend: &mut dyn Backend) -> io::Result<Event> {
        match self.chan.recv(self.config.max_body())? {
            Recv::Idle => Ok(Event::Idle),
            Recv::Eof => {
                log::info!("vfio-user client closed the connection");
                self.close(backend);
                Ok(Event::Closed)
            }
            Recv::Malformed { header, errno } => {
                log::warn!(
                    "malformed {:?} message (id {}, size {}): {errno}",
                    header.command,
                    header.id,
                    header.size
                );
                if header.msg_type() == TYPE_REPLY {
                    self.pending.remove(&header.id);
                    return Ok(Event::Discarded);
                }
                self.answer(&header, Err(errno))?;
                Ok(Event::Request {
                    command: header.command,
                    result: Err(errno),
                })
            }
            Recv::Message(msg) if msg.header.msg_type() == TYPE_REPLY => Ok(self.take_reply(msg)),
            Recv::Message(Message { header, body, fds }) => {
                let result = if header.msg_type() == TYPE_REQUEST {
                    self.dispatch(backend, &header, &body, fds)
                } else {
                    Err(Errno::EINVAL)
                };
                self.chan.recycle(body);
                if let Err(e) = &result {
                    log::warn!("{:?} (id {}) failed: {e}", header.command, header.id);
                }
                let summary = result.as_ref().map(|_| ()).map_err(|e| *e);
                self.answer(&header, result)?;
                Ok(Event::Request {
                    command: header.command,
                    result: summary,
                })
            }
        }
    }

    /// Sends a request to the client and returns its message id; unless `flags` has
    /// [`FLAG_NO_REPLY`], its reply will come out of [`Connection::handle_one`] as
    /// [`Event::Reply`]. At most the client's `max_msg_fds` descriptors may be attached.
    pub fn send_request(
        &mut self,
        command: Command,
        flags: u32,
        payload: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<u16> {
        if self.closed {
            return Err(io::ErrorKind::NotConnected.into());
        }
        let peer_fds = self.peer.as_ref().map_or(1, |p| p.max_msg_fds);
        if fds.len() as u64 > peer_fds {
            return Err(invalid("more fds than the client accepts"));
        }
        if self.pending.len() >= usize::from(u16::MAX) {
            return Err(io::Error::other("too many requests awaiting a reply"));
        }
        let mut id = self.next_id;
        while self.pending.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        self.next_id = id.wrapping_add(1);
        let header = Header::request(id, command, flags);
        self.chan.send(header, payload, fds)?;
        if !header.no_reply() {
            self.pending.insert(id, command);
        }
        Ok(id)
    }

    fn take_reply(&mut self, msg: Message) -> Event {
        match self.pending.remove(&msg.header.id) {
            Some(cmd) if cmd == msg.header.command => Event::Reply(msg),
            Some(cmd) => {
                log::warn!(
                    "reply {} is for {:?}, not {:?}; dropped",
                    msg.header.id,
                    msg.header.command,
                    cmd
                );
                Event::Discarded
            }
            None => {
                log::warn!(
                    "stray reply {} to {:?} dropped",
                    msg.header.id,
                    msg.header.command
                );
                Event::Discarded
            }
        }
    }

    fn answer(&self, req: &Header, result: Result<Reply, Errno>) -> io::Result<()> {
        if req.no_reply() {
            return Ok(());
        }
        match result {
            Ok(reply) => {
                let fd = reply.fd.as_ref().map(|f| f.as_fd());
                self.chan.send(req.reply(), &reply.payload, fd.as_slice())
            }
            Err(e) => self.chan.send(req.error_reply(e), &[], &[]),
        }
    }

    /// Withdraws the client's DMA mappings and tells the backend it is gone.
    fn close(&mut self, backend: &mut dyn Backend) {
        if self.closed {
            return;
        }
        self.closed = true;
        for m in self.dma.all() {
            if let Err(e) = backend.dma_unmap(m.iova, m.size) {
                log::warn!(
                    "DMA unmap of {:#x}+{:#x} at disconnect failed: {e}",
                    m.iova,
                    m.size
                );
            }
            self.dma.remove(m.iova);
        }
        self.pending.clear();
        self.peer = None;
        backend.disconnected();
    }

    fn dispatch(
        &mut self,
        backend: &mut dyn Backend,
        header: &Header,
        body: &[u8],
        fds: Vec<OwnedFd>,
    ) -> Result<Reply, Errno> {
        log::debug!(
            "{:?} id {} size {} fds {}",
            header.command,
            header.id,
            header.size,
            fds.len()
        );
        match header.command {
            Command::VERSION => {
                no_fds(&fds)?;
                return self.version(body);
            }
            Command::DMA_MAP
            | Command::DMA_UNMAP
            | Command::DEVICE_GET_INFO
            | Command::DEVICE_GET_REGION_INFO
            | Command::DEVICE_GET_IRQ_INFO
            | Command::DEVICE_SET_IRQS
            | Command::REGION_READ
            | Command::REGION_WRITE
            | Command::REGION_WRITE_MULTI
            | Command::DEVICE_RESET => {}
            // DMA_READ/DMA_WRITE go server to client only; the rest is not implemented.
            _ => return Err(Errno::ENOTSUP),
        }
        if self.peer.is_none() {
            log::warn!("{:?} before VERSION", header.command);
            return Err(Errno::EINVAL);
        }
        match header.command {
            Command::DMA_MAP => self.dma_map(backend, body, fds),
            Command::DEVICE_SET_IRQS => self.set_irqs(backend, body, fds),
            cmd => {
                no_fds(&fds)?;
                match cmd {
                    Command::DMA_UNMAP => self.dma_unmap(backend, body),
                    Command::DEVICE_GET_INFO => self.device_info(body),
                    Command::DEVICE_GET_REGION_INFO => self.region_info(body),
                    Command::DEVICE_GET_IRQ_INFO => self.irq_info(body),
                    Command::REGION_READ => self.region_read(backend, body),
                    Command::REGION_WRITE => self.region_write(backend, body),
                    Command::REGION_WRITE_MULTI => self.write_multi(backend, body),
                    Command::DEVICE_RESET => self.reset(backend),
                    _ => Err(Errno::ENOTSUP),
                }
            }
        }
    }

    fn version(&mut self, body: &[u8]) -> Result<Reply, Errno> {
        let head = VersionHead::decode(body).ok_or(Errno::EINVAL)?;
        if head.major != 0 {
            log::warn!(
                "client wants protocol {}.{}, only 0.x is spoken",
                head.major,
                head.minor
            );
            return Err(Errno::ENOTSUP);
        }
        let peer = Caps::parse(body.get(VersionHead::SIZE..).unwrap_or_default()).map_err(|e| {
            log::warn!("VERSION: {e}");
            Errno::EINVAL
        })?;
        let mut ours = self.config.caps();
        ours.write_multiple &= peer.write_multiple;
        let mut payload = VersionHead { major: 0, minor: 0 }.encode();
        let data = ours.to_version_data(Some(&peer.present));
        // QEMU receives the reply into a buffer the size of its own request
        // (hw/vfio-user/proxy.c: "reply larger than recv buffer"); an answer without
        // version data means "defaults", which this server also handles.
        if payload.len() + data.len() <= body.len() {
            payload.extend_from_slice(&data);
        } else {
            log::debug!(
                "VERSION reply without capabilities: the request was too short to hold them"
            );
        }
        log::info!(
            "vfio-user client: protocol {}.{}, {peer:?}",
            head.major,
            head.minor
        );
        self.peer = Some(peer);
        Ok(Reply::with(payload))
    }

    fn dma_map(
        &mut self,
        backend: &mut dyn Backend,
        body: &[u8],
        fds: Vec<OwnedFd>,
    ) -> Result<Reply, Errno> {
        let req = DmaMapPayload::decode(body).ok_or(Errno::EINVAL)?;
        if fds.len() > 1 || req.flags & !(DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE) != 0 {
            return Err(Errno::EINVAL);
        }
        let last = last_addr(req.iova, req.size).ok_or(Errno::EINVAL)?;
        if self.dma.overlaps(req.iova, last) {
            return Err(Errno::EEXIST);
        }
        if self.dma.len() >= self.config.max_dma_maps as usize {
            return Err(Errno::ENOSPC);
        }
        let map = DmaMap {
            iova: req.iova,
            size: req.size,
            offset: req.offset,
            flags: req.flags,
        };
        backend.dma_map(map, fds.into_iter().next().map(File::from))?;
        self.dma.insert(map);
        Ok(Reply::empty())
    }

    fn dma_unmap(&mut self, backend: &mut dyn Backend, body: &[u8]) -> Result<Reply, Errno> {
        let req = DmaUnmapPayload::decode(body).ok_or(Errno::EINVAL)?;
        if req.flags & DMA_UNMAP_FLAG_GET_DIRTY_BITMAP != 0 {
            return Err(Errno::ENOTSUP);
        }
        if req.flags & !DMA_UNMAP_FLAG_ALL != 0 {
            return Err(Errno::EINVAL);
        }
        let victims = if req.flags & DMA_UNMAP_FLAG_ALL != 0 {
            if req.iova != 0 || req.size != 0 {
                return Err(Errno::EINVAL);
            }
            self.dma.all()
        } else {
            self.dma.covered(req.iova, req.size)?
        };
        let mut result = Ok(());
        for m in victims {
            match backend.dma_unmap(m.iova, m.size) {
                Ok(()) => self.dma.remove(m.iova),
                Err(e) => result = result.and(Err(e)),
            }
        }
        result?;
        Ok(Reply::with(req.encode()))
    }

    fn device_info(&self, body: &[u8]) -> Result<Reply, Errno> {
        let req = DeviceInfoPayload::decode(body).ok_or(Errno::EINVAL)?;
        if (req.argsz as usize) < DeviceInfoPayload::SIZE {
            return Err(Errno::EINVAL);
        }
        let reset = if self.info.resettable {
            VFIO_DEVICE_FLAGS_RESET
        } else {
            0
        };
        Ok(Reply::with(
            DeviceInfoPayload {
                argsz: DeviceInfoPayload::SIZE as u32,
                flags: VFIO_DEVICE_FLAGS_PCI | reset,
                num_regions: self.info.num_regions(),
                num_irqs: self.info.num_irqs(),
            }
            .encode(),
        ))
    }

    fn region_info(&self, body: &[u8]) -> Result<Reply, Errno> {
        let req = RegionInfoPayload::decode(body).ok_or(Errno::EINVAL)?;
        if (req.argsz as usize) < RegionInfoPayload::SIZE || req.index >= self.info.num_regions() {
            return Err(Errno::EINVAL);
        }
        let mut reply = RegionInfoPayload {
            argsz: RegionInfoPayload::SIZE as u32,
            index: req.index,
            ..Default::default()
        };
        let mut fd = None;
        if let Some(r) = self.info.region(req.index) {
            reply.size = r.size;
            reply.flags = r.flags;
            match &r.mmap {
                Some(m) if self.peer.as_ref().is_some_and(|p| p.max_msg_fds >= 1) => {
                    reply.offset = m.offset;
                    fd = Some(m.fd.clone());
                }
                _ => reply.flags &= !VFIO_REGION_INFO_FLAG_MMAP,
            }
        }
        Ok(Reply {
            payload: reply.encode(),
            fd,
        })
    }

    fn irq_info(&self, body: &[u8]) -> Result<Reply, Errno> {
        let req = IrqInfoPayload::decode(body).ok_or(Errno::EINVAL)?;
        if (req.argsz as usize) < IrqInfoPayload::SIZE || req.index >= self.info.num_irqs() {
            return Err(Errno::EINVAL);
        }
        let irq = self.info.irq(req.index).copied().unwrap_or(IrqInfo {
            index: req.index,
            count: 0,
            flags: 0,
        });
        Ok(Reply::with(
            IrqInfoPayload {
                argsz: IrqInfoPayload::SIZE as u32,
                flags: irq.flags,
                index: irq.index,
                count: irq.count,
            }
            .encode(),
        ))
    }

    fn set_irqs(
        &mut self,
        backend: &mut dyn Backend,
        body: &[u8],
        fds: Vec<OwnedFd>,
    ) -> Result<Reply, Errno> {
        let req = IrqSetPayload::decode(body).ok_or(Errno::EINVAL)?;
        let data = req.flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        let action = req.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        if (req.argsz as usize) < IrqSetPayload::SIZE
            || req.index >= self.info.num_irqs()
            || req.flags & !(VFIO_IRQ_SET_DATA_TYPE_MASK | VFIO_IRQ_SET_ACTION_TYPE_MASK) != 0
            || !data.is_power_of_two()
            || !action.is_power_of_two()
        {
            return Err(Errno::EINVAL);
        }
        let irq = self.info.irq(req.index).copied().unwrap_or(IrqInfo {
            index: req.index,
            count: 0,
            flags: 0,
        });
        if req.count == 0 {
            // "count (and start) of 0 with DATA_NONE disables all interrupts of the index".
            if data != VFIO_IRQ_SET_DATA_NONE || req.start != 0 {
                return Err(Errno::EINVAL);
            }
            no_fds(&fds)?;
            backend.set_irqs(req.index, req.flags, 0, 0, Vec::new())?;
            return Ok(Reply::empty());
        }
        if req
            .start
            .checked_add(req.count)
            .is_none_or(|end| end > irq.count)
        {
            return Err(Errno::EINVAL);
        }
        match data {
            VFIO_IRQ_SET_DATA_NONE => {
                no_fds(&fds)?;
                backend.set_irqs(req.index, req.flags, req.start, req.count, Vec::new())?;
            }
            VFIO_IRQ_SET_DATA_BOOL => {
                no_fds(&fds)?;
                let n = usize::try_from(req.count).map_err(|_| Errno::EINVAL)?;
                let end = IrqSetPayload::SIZE.checked_add(n).ok_or(Errno::EINVAL)?;
                let bools = body.get(IrqSetPayload::SIZE..end).ok_or(Errno::EINVAL)?;
                let mut i = 0;
                while i < n {
                    let run = bools.iter().skip(i).take_while(|&&b| b != 0).count();
                    if run > 0 {
                        let (start, count) = (req.start + i as u32, run as u32);
                        backend.set_irqs(
                            req.index,
                            VFIO_IRQ_SET_DATA_NONE | action,
                            start,
                            count,
                            Vec::new(),
                        )?;
                    }
                    i += run.max(1);
                }
            }
            _ => {
                if irq.flags & VFIO_IRQ_INFO_EVENTFD == 0
                    || (!fds.is_empty() && fds.len() != req.count as usize)
                {
                    return Err(Errno::EINVAL);
                }
                let files = fds.into_iter().map(File::from).collect();
                backend.set_irqs(req.index, req.flags, req.start, req.count, files)?;
            }
        }
        Ok(Reply::empty())
    }

    /// Validates a region access before the backend sees it.
    fn check_access(&self, region: u32, offset: u64, count: u32, write: bool) -> Result<(), Errno> {
        if count > self.config.max_data_xfer_size {
            return Err(Errno::E2BIG);
        }
        let r = self.info.region(region).ok_or(Errno::EINVAL)?;
        let allowed = if write { r.writable() } else { r.readable() };
        if !allowed
            || offset
                .checked_add(count.into())
                .is_none_or(|end| end > r.size)
        {
            return Err(Errno::EINVAL);
        }
        Ok(())
    }

    fn region_read(&self, backend: &mut dyn Backend, body: &[u8]) -> Result<Reply, Errno> {
        let req = RegionAccessPayload::decode(body).ok_or(Errno::EINVAL)?;
        self.check_access(req.region, req.offset, req.count, false)?;
        let mut payload = req.encode();
        let head = payload.len();
        payload.resize(head + req.count as usize, 0);
        if let Some(data) = payload.get_mut(head..).filter(|d| !d.is_empty()) {
            backend.region_read(req.region, req.offset, data)?;
        }
        Ok(Reply::with(payload))
    }

    fn region_write(&self, backend: &mut dyn Backend, body: &[u8]) -> Result<Reply, Errno> {
        let req = RegionAccessPayload::decode(body).ok_or(Errno::EINVAL)?;
        let data = body.get(RegionAccessPayload::SIZE..).unwrap_or_default();
        if data.len() != req.count as usize {
            return Err(Errno::EINVAL);
        }
        self.check_access(req.region, req.offset, req.count, true)?;
        if !data.is_empty() {
            backend.region_write(req.region, req.offset, data)?;
        }
        Ok(Reply::with(req.encode()))
    }

    fn write_multi(&self, backend: &mut dyn Backend, body: &[u8]) -> Result<Reply, Errno> {
        let n = u64_at(body, 0).ok_or(Errno::EINVAL)?;
        if n > WRITE_MULTI_MAX || body.len() as u64 != 8 + n * WriteMultiEntry::SIZE as u64 {
            return Err(Errno::EINVAL);
        }
        let entries: Vec<WriteMultiEntry> = body
            .get(8..)
            .unwrap_or_default()
            .chunks_exact(WriteMultiEntry::SIZE)
            .filter_map(WriteMultiEntry::decode)
            .collect();
        // Validate them all first, so a malformed message changes nothing.
        for e in &entries {
            if e.count as usize > WRITE_MULTI_DATA {
                return Err(Errno::EINVAL);
            }
            self.check_access(e.region, e.offset, e.count, true)?;
        }
        for e in &entries {
            let bytes = e.data.to_ne_bytes();
            let data = bytes.get(..e.count as usize).unwrap_or_default();
            if !data.is_empty() {
                backend.region_write(e.region, e.offset, data)?;
            }
        }
        Ok(Reply::with(n.to_ne_bytes().to_vec()))
    }

    fn reset(&self, backend: &mut dyn Backend) -> Result<Reply, Errno> {
        if !self.info.resettable {
            return Err(Errno::ENOTSUP);
        }
        backend.reset()?;
        Ok(Reply::empty())
    }
}

impl AsFd for Connection {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.chan.stream().as_fd()
    }
}

fn is_disconnect(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
    )
}
