//! The wire: the card's Ethernet port on a real L2 segment.
//!
//! A port is a Linux TAP device (`IFF_TAP | IFF_NO_PI`, ordinary Ethernet frames, no
//! home-made fabric) that the VM runner creates on its bridge inside its network namespace and
//! the model opens by name (`--tap NAME`). Its carrier is the cable: a TAP that is down or
//! detached reads as a pulled cable. Host tests use [`Loopback`], an in-memory port.
//!
//! The engines see only the [`Port`] trait: `send` one frame, and frames arrive through the
//! receive loop the device runs ([`Tap::recv`]).

use std::{
    collections::VecDeque,
    fs::{File, OpenOptions},
    io::{self, Read, Write},
    os::fd::AsRawFd,
    sync::Mutex,
};

/// Largest frame a port carries: PMTU 9978 (the modelled maximum) plus the Ethernet header
/// and one VLAN tag.
pub const MAX_FRAME: usize = 9978 + 14 + 4;

/// A port of the card.
pub trait Port: Send + Sync {
    /// Puts one Ethernet frame on the wire.
    fn send(&self, frame: &[u8]) -> io::Result<()>;
    /// Puts one Ethernet frame given as consecutive parts on the wire (LSO segments: rewritten
    /// headers, a payload range of the superframe, padding). Ports that can gather override
    /// this; the default copies the parts into one buffer.
    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        self.send(&parts.concat())
    }
    /// Whether the cable is plugged (the link partner is there).
    fn carrier(&self) -> bool;
    /// The port's name, for logs.
    fn name(&self) -> &str;
}

/// `TUNSETIFF` (`_IOW('T', 202, int)`, linux/if_tun.h).
const TUNSETIFF: u64 = 0x4004_54ca;
const IFF_TAP: u16 = 0x0002;
const IFF_NO_PI: u16 = 0x1000;
const IFNAMSIZ: usize = 16;

/// A TAP device opened by name.
pub struct Tap {
    file: File,
    name: String,
}

impl Tap {
    /// Attaches to the TAP device `name` (created by the runner, or created here if the
    /// process may).
    pub fn open(name: &str) -> io::Result<Self> {
        if name.is_empty() || name.len() >= IFNAMSIZ || !name.is_ascii() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad interface name {name:?}"),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/net/tun")?;
        // struct ifreq: ifr_name[16], then the union whose first member is ifr_flags (short).
        let mut ifr = [0u8; 40];
        ifr[..name.len()].copy_from_slice(name.as_bytes());
        ifr[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&(IFF_TAP | IFF_NO_PI).to_ne_bytes());
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq` (40 bytes on Linux) at the pointer,
        // which points to a live, writable 40-byte buffer; the fd is an open /dev/net/tun.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, ifr.as_mut_ptr()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // Non-blocking reads: the receive loop drains every waiting frame after one poll
        // ([`Tap::recv`] says `WouldBlock` when the queue is empty). Writes to a TAP never
        // block either way.
        // SAFETY: fcntl F_GETFL/F_SETFL on the open fd, no pointers.
        let rc = unsafe {
            let fl = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            if fl < 0 {
                fl
            } else {
                libc::fcntl(file.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK)
            }
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tap {
            file,
            name: name.to_string(),
        })
    }

    /// The next frame from the segment, its length in `buf`; `WouldBlock` if none is waiting
    /// (the fd is non-blocking: [`Tap::wait_readable`] waits). A frame longer than `buf` is
    /// truncated by the kernel (callers pass [`MAX_FRAME`] + 1 bytes and drop anything longer
    /// than the port MTU allows).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.file).read(buf)
    }

    /// Waits until a frame can be read (true) or `timeout` passed (false); `None` waits for a
    /// frame only. Timeouts are rounded up to whole milliseconds.
    pub fn wait_readable(&self, timeout: Option<std::time::Duration>) -> io::Result<bool> {
        let ms = match timeout {
            None => -1,
            Some(t) => t.as_micros().div_ceil(1000).clamp(1, 60_000) as i32,
        };
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes one pollfd at the pointer, a live local; the fd is the
        // open TAP.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        match n {
            n if n < 0 => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    Ok(false)
                } else {
                    Err(e)
                }
            }
            0 => Ok(false),
            _ => Ok(true),
        }
    }
}

impl Port for Tap {
    fn send(&self, frame: &[u8]) -> io::Result<()> {
        let n = (&self.file).write(frame)?;
        if n != frame.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("{}: short write {n} of {}", self.name, frame.len()),
            ));
        }
        Ok(())
    }

    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        let iov: Vec<libc::iovec> = parts
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| libc::iovec {
                iov_base: p.as_ptr() as *mut libc::c_void,
                iov_len: p.len(),
            })
            .collect();
        let total: usize = parts.iter().map(|p| p.len()).sum();
        // SAFETY: every iovec points into a live slice of `parts` for the duration of the
        // call, and writev only reads them; the fd is the open TAP.
        let n = unsafe { libc::writev(self.file.as_raw_fd(), iov.as_ptr(), iov.len() as i32) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != total {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("{}: short write {n} of {total}", self.name),
            ));
        }
        Ok(())
    }

    fn carrier(&self) -> bool {
        // The TAP's own operational state (up and attached) stands for the cable.
        std::fs::read_to_string(format!("/sys/class/net/{}/carrier", self.name))
            .map(|s| s.trim() == "1")
            .unwrap_or(false)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// An in-memory port for host tests: frames sent are kept for the test to inspect.
#[derive(Default)]
pub struct Loopback {
    sent: Mutex<VecDeque<Vec<u8>>>,
    unplugged: std::sync::atomic::AtomicBool,
}

impl Loopback {
    /// The frames sent so far, oldest first (and forgets them).
    pub fn take(&self) -> Vec<Vec<u8>> {
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect()
    }

    /// Pulls (false) or plugs (true) the cable.
    pub fn set_carrier(&self, up: bool) {
        self.unplugged
            .store(!up, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Port for Loopback {
    fn send(&self, frame: &[u8]) -> io::Result<()> {
        if !self.carrier() {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "cable pulled"));
        }
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(frame.to_vec());
        Ok(())
    }

    fn carrier(&self) -> bool {
        !self.unplugged.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn name(&self) -> &str {
        "loopback"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_keeps_frames_and_follows_its_cable() {
        let p = Loopback::default();
        p.send(&[1, 2, 3]).unwrap();
        p.send(&[4]).unwrap();
        assert_eq!(p.take(), vec![vec![1, 2, 3], vec![4]]);
        p.set_carrier(false);
        assert!(!p.carrier());
        assert!(p.send(&[5]).is_err(), "a pulled cable carries nothing");
        assert!(p.take().is_empty());
    }

    #[test]
    fn tap_names_are_checked_before_any_syscall() {
        for bad in ["", "a-name-longer-than-15", "tap\u{e9}"] {
            let e = Tap::open(bad).err().expect("must be refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn tap_round_trip_when_the_host_allows_it() {
        // Needs CAP_NET_ADMIN and /dev/net/tun; elsewhere the open fails and there is nothing
        // to check (the VM tests cover the TAP path in any case).
        let name = format!("cx4t{}", std::process::id() % 100_000);
        let Ok(tap) = Tap::open(&name) else {
            eprintln!("skipped: cannot create TAP devices here");
            return;
        };
        assert_eq!(tap.name(), name);
        // Down and unattached: no carrier, and the kernel refuses frames on a down TAP
        // silently or with EIO; either way nothing panics.
        assert!(!tap.carrier());
        let _ = tap.send(&[0u8; 60]);
    }
}
