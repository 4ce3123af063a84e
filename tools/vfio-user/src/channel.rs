//! Message framing over a unix stream: whole messages in, whole messages out.
//!
//! Receiving always consumes exactly `header.size` bytes, whatever the message says, so a bad
//! message never leaves the stream out of step: it comes back as [`Recv::Malformed`] with the
//! errno to answer it with, its body read (and thrown away) and its descriptors closed.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use crate::sock::{self, MAX_FDS};
use crate::wire::{Header, Message, HEADER_SIZE};
use crate::Errno;

/// Chunk size for discarding the body of an oversized message.
const DRAIN_CHUNK: usize = 64 * 1024;

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

/// A unix stream that carries vfio-user messages.
#[derive(Debug)]
pub(crate) struct Channel {
    stream: UnixStream,
}

impl Channel {
    pub(crate) fn new(stream: UnixStream) -> Self {
        Self { stream }
    }

    pub(crate) fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// Reads into all of `buf` unless the stream ends; returns the bytes read.
    ///
    /// If the socket is non-blocking or has a read timeout and nothing at all has arrived,
    /// the `WouldBlock`/`TimedOut` error is returned when `idle_ok`; once bytes of a message
    /// have arrived it waits for the rest, so a message is never left half read.
    fn fill(
        &self,
        buf: &mut [u8],
        fds: &mut Vec<OwnedFd>,
        excess_fds: &mut bool,
        idle_ok: bool,
    ) -> io::Result<usize> {
        let mut done = 0;
        while let Some(rest) = buf.get_mut(done..).filter(|r| !r.is_empty()) {
            let r = match sock::recv(self.stream.as_fd(), rest, fds) {
                Err(e) if is_idle(&e) && !(idle_ok && done == 0) => {
                    sock::wait(self.stream.as_fd(), libc::POLLIN)?;
                    continue;
                }
                r => r?,
            };
            if r.fds_truncated || fds.len() > MAX_FDS {
                *excess_fds = true;
                fds.clear();
            }
            if r.bytes == 0 {
                break;
            }
            done += r.bytes;
        }
        Ok(done)
    }

    /// Receives one message whose body may be at most `max_body` bytes long.
    ///
    /// A stream that ends inside a message is an `UnexpectedEof` error.
    pub(crate) fn recv(&self, max_body: usize) -> io::Result<Recv> {
        let mut fds = Vec::new();
        let mut excess_fds = false;
        let mut head = [0u8; HEADER_SIZE];
        match self.fill(&mut head, &mut fds, &mut excess_fds, true) {
            Err(e) if is_idle(&e) => return Ok(Recv::Idle),
            Err(e) => return Err(e),
            Ok(0) => return Ok(Recv::Eof),
            Ok(HEADER_SIZE) => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stream ended inside a header",
                ))
            }
        }
        let header = Header::decode(&head).ok_or_else(|| io::Error::other("short header"))?;
        let Some(body_len) = (header.size as usize).checked_sub(HEADER_SIZE) else {
            return Ok(Recv::Malformed {
                header,
                errno: Errno::EINVAL,
            });
        };
        if body_len > max_body {
            self.drain(body_len)?;
            return Ok(Recv::Malformed {
                header,
                errno: Errno::E2BIG,
            });
        }
        let mut body = vec![0u8; body_len];
        if self.fill(&mut body, &mut fds, &mut excess_fds, false)? < body_len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "stream ended inside a message",
            ));
        }
        if excess_fds {
            return Ok(Recv::Malformed {
                header,
                errno: Errno::EINVAL,
            });
        }
        Ok(Recv::Message(Message { header, body, fds }))
    }

    /// Reads and discards `len` bytes (closing any descriptors that come with them).
    fn drain(&self, mut len: usize) -> io::Result<()> {
        let mut scratch = vec![0u8; DRAIN_CHUNK.min(len)];
        let mut fds = Vec::new();
        let mut excess = false;
        while len > 0 {
            let chunk = scratch.get_mut(..DRAIN_CHUNK.min(len)).unwrap_or_default();
            let n = self.fill(chunk, &mut fds, &mut excess, false)?;
            fds.clear();
            if n < chunk.len() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "stream ended inside a message",
                ));
            }
            len -= n;
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
        let (a, b) = (Channel::new(a), Channel::new(b));
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
    fn header_size_below_16_is_malformed_but_framed() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, b) = (Channel::new(a), Channel::new(b));
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
