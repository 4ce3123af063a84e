//! Message framing over a unix stream: whole messages in, whole messages out.
//!
//! Receiving always consumes exactly `header.size` bytes, whatever the message says, so a bad
//! message never leaves the stream out of step: it comes back as [`Recv::Malformed`] with the
//! errno to answer it with, its body read (and thrown away) and its descriptors closed.
//!
//! Bytes are read into a buffer kept across messages, as many as have arrived: a message
//! costs one `recvmsg` (none when an earlier read brought it), not one for its header and one
//! for its body, and its body is copied into a buffer handed back with [`Channel::recycle`],
//! so a busy stream of small messages (QEMU's posted BAR writes) allocates nothing per
//! message. Descriptors go with the message whose first byte their `sendmsg` carried: a unix
//! stream read stops after the first segment that carries descriptors (net/unix/af_unix.c
//! `unix_stream_read_generic`), so they belong to the last message that begins in the bytes
//! of the read that brought them.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use crate::sock::{self, MAX_FDS};
use crate::wire::{Header, Message, HEADER_SIZE};
use crate::Errno;

/// Size of the receive buffer: room for a few hundred posted writes (32 bytes each plus their
/// data), read with one call; it grows to hold a longer message whole.
const RX_BUF: usize = 16 * 1024;

/// The outcome of [`Channel::recv`].
#[derive(Debug)]
pub(crate) enum Recv {
    /// A complete message.
    Message(Message),
    /// A message that was consumed but cannot be used; answer it with `errno`.
    Malformed {
        /// Its header, as received.
        header: Header,
        /// `EINVAL` (size below 16, more than [`MAX_FDS`] descriptors) or `E2BIG` (too long).
        errno: Errno,
    },
    /// The peer closed the stream at a message boundary.
    Eof,
    /// Nothing arrived (non-blocking socket or read timeout); no byte was consumed.
    Idle,
}

/// Descriptors that arrived with one read.
#[derive(Debug)]
struct ArrivedFds {
    /// Stream position of the message they go with.
    at: u64,
    fds: Vec<OwnedFd>,
    /// The kernel dropped some (`MSG_CTRUNC`) or there were more than [`MAX_FDS`].
    excess: bool,
}

/// What [`Channel::fill`] got.
enum Fill {
    /// The bytes asked for are buffered.
    Ready,
    /// Nothing is buffered and nothing arrived.
    Idle,
    /// The stream ended first.
    Eof,
}

/// A unix stream that carries vfio-user messages.
pub(crate) struct Channel {
    stream: UnixStream,
    /// Bytes read and not yet handed out: `rx[head..tail]`, starting at a message boundary
    /// (except while an oversized message is drained).
    rx: Vec<u8>,
    head: usize,
    tail: usize,
    /// Stream position of `rx[head]`.
    pos: u64,
    /// Descriptors received and not yet handed out with their message.
    fds: Vec<ArrivedFds>,
    /// A body buffer handed back ([`Channel::recycle`]) for the next message.
    spare: Vec<u8>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("stream", &self.stream)
            .field("buffered", &(self.tail - self.head))
            .field("fds", &self.fds)
            .finish()
    }
}

impl Channel {
    pub(crate) fn new(stream: UnixStream) -> Self {
        Self {
            stream,
            rx: vec![0; RX_BUF],
            head: 0,
            tail: 0,
            pos: 0,
            fds: Vec::new(),
            spare: Vec::new(),
        }
    }

    pub(crate) fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Whether bytes already read wait in the buffer: then [`Channel::recv`] has (the start
    /// of) a message without the socket being readable.
    pub(crate) fn buffered(&self) -> bool {
        self.tail > self.head
    }

    /// Hands a message's body back, to hold the next message's.
    pub(crate) fn recycle(&mut self, body: Vec<u8>) {
        if body.capacity() >= self.spare.capacity() {
            self.spare = body;
        }
    }

    fn buffered_len(&self) -> usize {
        self.tail - self.head
    }

    /// Moves the buffered bytes to the front when `need` bytes from `head` would not fit or
    /// nothing is free behind them, growing the buffer to `need`.
    fn make_room(&mut self, need: usize) {
        if self.head == self.tail {
            (self.head, self.tail) = (0, 0);
        }
        if self.rx.len() - self.head < need || self.tail == self.rx.len() {
            self.rx.copy_within(self.head..self.tail, 0);
            (self.head, self.tail) = (0, self.tail - self.head);
        }
        if self.rx.len() < need {
            self.rx.resize(need, 0);
        }
    }

    /// Reads until `need` bytes are buffered (taking whatever else has arrived, up to the
    /// buffer's size) unless the stream ends.
    ///
    /// If the socket is non-blocking or has a read timeout and nothing at all is buffered or
    /// arrives, returns [`Fill::Idle`] when `idle_ok`; once bytes of a message are buffered it
    /// waits for the rest, so a message is never left half read.
    fn fill(&mut self, need: usize, idle_ok: bool) -> io::Result<Fill> {
        while self.buffered_len() < need {
            self.make_room(need);
            let read_at = self.pos + self.buffered_len() as u64;
            let mut fds = Vec::new();
            let r = match sock::recv(self.stream.as_fd(), &mut self.rx[self.tail..], &mut fds) {
                Err(e) if is_idle(&e) && idle_ok && !self.buffered() => return Ok(Fill::Idle),
                Err(e) if is_idle(&e) => {
                    sock::wait(self.stream.as_fd(), libc::POLLIN)?;
                    continue;
                }
                r => r?,
            };
            self.tail += r.bytes;
            if !fds.is_empty() || r.fds_truncated {
                let excess = r.fds_truncated || fds.len() > MAX_FDS;
                let at = self.owner_of(read_at);
                self.fds.push(ArrivedFds { at, fds, excess });
            }
            if r.bytes == 0 {
                return Ok(Fill::Eof);
            }
        }
        Ok(Fill::Ready)
    }

    /// The stream position of the last message that begins at or after `read_at` in the
    /// buffer (the one that owns descriptors read with the bytes from `read_at` on); if none
    /// begins there, the message the bytes continue.
    fn owner_of(&self, read_at: u64) -> u64 {
        let end = self.pos + self.buffered_len() as u64;
        let mut at = self.pos;
        let mut owner = None;
        loop {
            if at >= read_at {
                owner = Some(at);
            }
            let off = self.head + (at - self.pos) as usize;
            let Some(h) = self.rx.get(off..self.tail).and_then(Header::decode) else {
                break;
            };
            let next = at + u64::from(h.size.max(HEADER_SIZE as u32));
            if next >= end {
                break;
            }
            at = next;
        }
        owner.unwrap_or(at)
    }

    /// Drops `n` buffered bytes.
    fn consume(&mut self, n: usize) {
        self.head += n;
        self.pos += n as u64;
    }

    /// The descriptors of the message at `at`; earlier ones nobody claimed are closed.
    fn take_fds(&mut self, at: u64) -> (Vec<OwnedFd>, bool) {
        let mut fds = Vec::new();
        let mut excess = false;
        self.fds.retain_mut(|a| {
            if a.at == at {
                excess |= a.excess;
                fds.append(&mut a.fds);
            }
            a.at > at
        });
        if excess || fds.len() > MAX_FDS {
            return (Vec::new(), true);
        }
        (fds, false)
    }

    /// Receives one message whose body may be at most `max_body` bytes long.
    ///
    /// A stream that ends inside a message is an `UnexpectedEof` error.
    pub(crate) fn recv(&mut self, max_body: usize) -> io::Result<Recv> {
        match self.fill(HEADER_SIZE, true)? {
            Fill::Ready => {}
            Fill::Idle => return Ok(Recv::Idle),
            Fill::Eof if !self.buffered() => return Ok(Recv::Eof),
            Fill::Eof => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stream ended inside a header",
                ))
            }
        }
        let at = self.pos;
        let header = self
            .rx
            .get(self.head..self.tail)
            .and_then(Header::decode)
            .ok_or_else(|| io::Error::other("short header"))?;
        let Some(body_len) = (header.size as usize).checked_sub(HEADER_SIZE) else {
            self.consume(HEADER_SIZE);
            let _ = self.take_fds(at);
            return Ok(Recv::Malformed {
                header,
                errno: Errno::EINVAL,
            });
        };
        if body_len > max_body {
            self.consume(HEADER_SIZE);
            self.drain(body_len)?;
            let _ = self.take_fds(at);
            return Ok(Recv::Malformed {
                header,
                errno: Errno::E2BIG,
            });
        }
        let total = HEADER_SIZE + body_len;
        match self.fill(total, false)? {
            Fill::Ready => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stream ended inside a message",
                ))
            }
        }
        let mut body = std::mem::take(&mut self.spare);
        body.clear();
        body.extend_from_slice(&self.rx[self.head + HEADER_SIZE..self.head + total]);
        self.consume(total);
        let (fds, excess) = self.take_fds(at);
        if excess {
            self.recycle(body);
            return Ok(Recv::Malformed {
                header,
                errno: Errno::EINVAL,
            });
        }
        Ok(Recv::Message(Message { header, body, fds }))
    }

    /// Reads and discards `len` bytes of the message being dropped (closing any descriptors
    /// that come with them), never reading past them.
    fn drain(&mut self, mut len: usize) -> io::Result<()> {
        let buffered = self.buffered_len().min(len);
        self.consume(buffered);
        len -= buffered;
        while len > 0 {
            self.make_room(1);
            let chunk = (self.rx.len() - self.tail).min(len);
            let mut fds = Vec::new();
            let r = match sock::recv(
                self.stream.as_fd(),
                &mut self.rx[self.tail..self.tail + chunk],
                &mut fds,
            ) {
                Err(e) if is_idle(&e) => {
                    sock::wait(self.stream.as_fd(), libc::POLLIN)?;
                    continue;
                }
                r => r?,
            };
            if r.bytes == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stream ended inside a message",
                ));
            }
            len -= r.bytes;
            self.pos += r.bytes as u64;
        }
        Ok(())
    }

    /// Sends `header` (its `size` set to fit) followed by `payload`, with `fds` attached.
    pub(crate) fn send(
        &self,
        mut header: Header,
        payload: &[u8],
        fds: &[BorrowedFd<'_>],
    ) -> io::Result<()> {
        let total = HEADER_SIZE
            .checked_add(payload.len())
            .and_then(|t| u32::try_from(t).ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "message too large"))?;
        header.size = total;
        let mut buf = Vec::with_capacity(total as usize);
        buf.extend_from_slice(&header.encode());
        buf.extend_from_slice(payload);
        self.send_raw(&buf, fds)
    }

    /// Sends `bytes` as they are, `fds` attached to the first byte.
    pub(crate) fn send_raw(&self, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        if bytes.is_empty() {
            return match fds {
                [] => Ok(()),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "fds need at least one byte",
                )),
            };
        }
        let mut sent = 0;
        while let Some(rest) = bytes.get(sent..).filter(|r| !r.is_empty()) {
            // The descriptors go with the first byte.
            let fds = if sent == 0 { fds } else { &[] };
            match sock::send(self.stream.as_fd(), rest, fds) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => sent += n,
                Err(e) if is_idle(&e) => sock::wait(self.stream.as_fd(), libc::POLLOUT)?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A non-blocking socket had nothing (or a read timeout expired).
fn is_idle(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{encode_request, Command};

    #[test]
    fn oversized_message_is_drained_and_next_one_is_read() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, mut b) = (Channel::new(a), Channel::new(b));
        let big = encode_request(1, Command::REGION_WRITE, 0, &vec![7u8; 100_000]);
        let small = encode_request(2, Command::DEVICE_RESET, 0, &[]);
        let writer = std::thread::spawn(move || {
            a.send_raw(&big, &[]).unwrap();
            a.send_raw(&small, &[]).unwrap();
        });
        match b.recv(1024).unwrap() {
            Recv::Malformed { header, errno } => {
                assert_eq!(header.id, 1);
                assert_eq!(errno, Errno::E2BIG);
            }
            other => panic!("{other:?}"),
        }
        match b.recv(1024).unwrap() {
            Recv::Message(m) => assert_eq!(m.header.command, Command::DEVICE_RESET),
            other => panic!("{other:?}"),
        }
        writer.join().unwrap();
    }

    #[test]
    fn pipelined_messages_share_reads_and_fds_go_with_their_message() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, mut b) = (Channel::new(a), Channel::new(b));
        let (x, _y) = UnixStream::pair().unwrap();
        // Three messages in one write, one carrying two descriptors, then one more: all
        // queued before the first read.
        let mut burst = Vec::new();
        for id in 1..=3u16 {
            burst.extend(encode_request(
                id,
                Command::REGION_WRITE,
                0,
                &[id as u8; 24],
            ));
        }
        a.send_raw(&burst, &[]).unwrap();
        let irqs = encode_request(4, Command::DEVICE_SET_IRQS, 0, &[0; 20]);
        a.send_raw(&irqs, &[x.as_fd(), x.as_fd()]).unwrap();
        a.send_raw(&encode_request(5, Command::DEVICE_RESET, 0, &[]), &[])
            .unwrap();
        let mut body_at = None;
        for id in 1..=5u16 {
            match b.recv(1024).unwrap() {
                Recv::Message(m) => {
                    assert_eq!(m.header.id, id);
                    assert_eq!(m.fds.len(), if id == 4 { 2 } else { 0 }, "message {id}");
                    if id <= 3 {
                        assert_eq!(m.body, vec![id as u8; 24]);
                        // Later bodies reuse the first one's buffer: no allocation each.
                        assert_eq!(*body_at.get_or_insert(m.body.as_ptr()), m.body.as_ptr());
                    }
                    b.recycle(m.body);
                }
                other => panic!("{other:?}"),
            }
            if id == 1 {
                assert!(
                    b.buffered(),
                    "one read brought the messages after the first"
                );
            }
        }
        assert!(!b.buffered());
    }

    #[test]
    fn header_size_below_16_is_malformed_but_framed() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, mut b) = (Channel::new(a), Channel::new(b));
        let mut h = Header::request(3, Command::VERSION, 0);
        h.size = 4;
        a.send_raw(&h.encode(), &[]).unwrap();
        assert!(matches!(
            b.recv(64).unwrap(),
            Recv::Malformed {
                errno: Errno::EINVAL,
                ..
            }
        ));
        drop(a);
        assert!(matches!(b.recv(64).unwrap(), Recv::Eof));
    }
}
