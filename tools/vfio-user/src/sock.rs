//! File-descriptor passing over a `SOCK_STREAM` unix socket: one `recvmsg`/`sendmsg` call with
//! `SCM_RIGHTS` ancillary data. The only module with socket `unsafe` code.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;

/// Most fds one message may carry; the `max_msg_fds` this crate advertises and QEMU's own
/// ceiling (`VFIO_USER_MAX_MAX_FDS`).
pub const MAX_FDS: usize = 16;

const FD_BYTES: usize = MAX_FDS * size_of::<libc::c_int>();

/// Ancillary buffer size for [`MAX_FDS`] descriptors.
// SAFETY: CMSG_SPACE is plain arithmetic on its argument; it touches no memory.
const CMSG_BUF_LEN: usize = unsafe { libc::CMSG_SPACE(FD_BYTES as libc::c_uint) } as usize;

/// A control-message buffer aligned for `cmsghdr` (8-byte words).
struct CmsgBuf([u64; CMSG_BUF_LEN.div_ceil(8)]);

/// What one [`recv`] call delivered.
pub struct Received {
    /// Bytes read into the buffer (0: end of stream).
    pub bytes: usize,
    /// The kernel had more descriptors than fit and discarded the rest (`MSG_CTRUNC`).
    pub fds_truncated: bool,
}

/// One `recvmsg` into `buf`; descriptors that arrive are appended to `fds` (close-on-exec).
pub fn recv(sock: BorrowedFd<'_>, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<Received> {
    let mut cmsg = CmsgBuf([0; CMSG_BUF_LEN.div_ceil(8)]);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is a plain C struct of integers and pointers; all-zero is a valid value
    // (no name, no iovecs, no control buffer).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.0.as_mut_ptr().cast();
    msg.msg_controllen = size_of::<CmsgBuf>() as _;

    let n = loop {
        // SAFETY: `msg` points at `iov` (covering exactly `buf`) and at `cmsg`, with their true
        // lengths; all three outlive the call, which writes only within those lengths.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n.unsigned_abs();
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    };

    // SAFETY: `msg` was filled in by recvmsg; its control pointer/length describe `cmsg`.
    let mut hdr = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    while !hdr.is_null() {
        // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR return either null or a pointer to a complete
        // cmsghdr inside `cmsg`; read_unaligned tolerates any alignment.
        let c = unsafe { ptr::read_unaligned(hdr) };
        if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_RIGHTS {
            // SAFETY: CMSG_LEN is plain arithmetic.
            let head = unsafe { libc::CMSG_LEN(0) } as usize;
            let count = (c.cmsg_len as usize).saturating_sub(head) / size_of::<libc::c_int>();
            // SAFETY: `hdr` points at a cmsghdr inside `cmsg`; CMSG_DATA only offsets it.
            let data = unsafe { libc::CMSG_DATA(hdr) }.cast::<libc::c_int>();
            for i in 0..count {
                // SAFETY: the kernel wrote `count` ints after the header (cmsg_len covers
                // them and recvmsg never writes past msg_controllen).
                let raw = unsafe { ptr::read_unaligned(data.add(i)) };
                // SAFETY: SCM_RIGHTS installed `raw` as a new descriptor of this process that
                // nothing else owns; wrapping it makes sure it is closed exactly once.
                fds.push(unsafe { OwnedFd::from_raw_fd(raw) });
            }
        }
        // SAFETY: `hdr` is a valid header inside the buffer described by `msg`.
        hdr = unsafe { libc::CMSG_NXTHDR(&msg, hdr) };
    }

    Ok(Received {
        bytes: n,
        fds_truncated: msg.msg_flags & libc::MSG_CTRUNC != 0,
    })
}

/// The kernel's limit of descriptors in one `SCM_RIGHTS` message (`SCM_MAX_FD`).
pub const KERNEL_MAX_FDS: usize = 253;

/// One `sendmsg` of `buf` with `fds` attached; returns the bytes sent (possibly fewer).
///
/// Up to [`KERNEL_MAX_FDS`] descriptors may be sent, more than a peer accepts, so that tests
/// can exercise a receiver's limit.
pub fn send(sock: BorrowedFd<'_>, buf: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<usize> {
    if fds.len() > KERNEL_MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many fds for one message",
        ));
    }
    let data_len = (fds.len() * size_of::<libc::c_int>()) as libc::c_uint;
    // SAFETY: CMSG_SPACE is plain arithmetic on its argument.
    let space = unsafe { libc::CMSG_SPACE(data_len) } as usize;
    // u64 words keep the buffer aligned for cmsghdr.
    let mut cmsg = vec![0u64; space.div_ceil(8)];
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as in `recv`, an all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = cmsg.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: msg_control points at `cmsg`, which is at least msg_controllen long and
        // aligned for cmsghdr, so the first header is non-null and inside it.
        let hdr = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        if hdr.is_null() {
            return Err(io::Error::other("no room for SCM_RIGHTS"));
        }
        // SAFETY: `hdr` points at a properly aligned cmsghdr at the start of `cmsg`; the data
        // area after it has room for `fds.len()` ints (CMSG_SPACE above).
        unsafe {
            (*hdr).cmsg_level = libc::SOL_SOCKET;
            (*hdr).cmsg_type = libc::SCM_RIGHTS;
            (*hdr).cmsg_len = libc::CMSG_LEN(data_len) as _;
            let data = libc::CMSG_DATA(hdr).cast::<libc::c_int>();
            for (i, fd) in fds.iter().enumerate() {
                ptr::write_unaligned(data.add(i), fd.as_raw_fd());
            }
        }
    }
    loop {
        // SAFETY: `msg` describes `buf` (read only by the kernel despite the *mut iov_base)
        // and the control buffer filled above; all outlive the call.
        let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            return Ok(n.unsigned_abs());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Waits until `sock` is ready for `events` (`POLLIN`/`POLLOUT`), or has hung up.
pub fn wait(sock: BorrowedFd<'_>, events: libc::c_short) -> io::Result<()> {
    let mut p = libc::pollfd {
        fd: sock.as_raw_fd(),
        events,
        revents: 0,
    };
    loop {
        // SAFETY: `p` is one valid pollfd for an open descriptor and outlives the call.
        let n = unsafe { libc::poll(&mut p, 1, -1) };
        if n >= 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn fds_travel_with_bytes() {
        let (a, b) = UnixStream::pair().unwrap();
        let (x, _y) = UnixStream::pair().unwrap();
        assert_eq!(
            send(a.as_fd(), b"hello", &[x.as_fd(), x.as_fd()]).unwrap(),
            5
        );
        let mut buf = [0u8; 16];
        let mut fds = Vec::new();
        let r = recv(b.as_fd(), &mut buf, &mut fds).unwrap();
        assert_eq!(r.bytes, 5);
        assert!(!r.fds_truncated);
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(fds.len(), 2);
    }

    #[test]
    fn excess_fds_are_reported_and_closed() {
        let (a, b) = UnixStream::pair().unwrap();
        let fds: Vec<_> = (0..MAX_FDS + 3).map(|_| a.as_fd()).collect();
        assert_eq!(send(a.as_fd(), b"x", &fds).unwrap(), 1);
        let mut buf = [0u8; 1];
        let mut got = Vec::new();
        let r = recv(b.as_fd(), &mut buf, &mut got).unwrap();
        assert!(r.fds_truncated);
        assert_eq!(got.len(), MAX_FDS);
        let too_many: Vec<_> = (0..KERNEL_MAX_FDS + 1).map(|_| a.as_fd()).collect();
        assert!(send(a.as_fd(), b"x", &too_many).is_err());
    }
}
