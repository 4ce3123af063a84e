//! The wire: the card's Ethernet port on a real L2 segment.
//!
//! A port is a Linux TAP device (`IFF_TAP | IFF_NO_PI`, ordinary Ethernet frames, no
//! home-made fabric) that the VM runner creates on its bridge inside its network namespace and
//! the model opens by name (`--tap NAME`). Its carrier is the cable: a TAP that is down or
//! detached reads as a pulled cable. Host tests use [`Loopback`], an in-memory port.
//!
//! With `--wire-gso` the TAP carries a virtio-net header ([`vnet`]) before each frame, as
//! QEMU's virtio-net backend does: LSO output goes out as one GSO superframe
//! ([`Port::send_superframe`], `eth::gso`) and the host hands superframes and partial
//! checksums to the port, which finishes them like the card would have received them
//! (`Hca::receive_offloaded`). The frames on any real wire are the same; the host kernel
//! cuts superframes where a receiver needs segments.
//!
//! The engines see only the [`Port`] trait: `send` one frame, and frames arrive through the
//! receive loop the device runs ([`Tap::recv`]).

pub mod vnet;

use std::{
    collections::VecDeque,
    fs::{File, OpenOptions},
    io::{self, Read},
    ops::Range,
    os::fd::AsRawFd,
    sync::Mutex,
};

use crate::eth::gso::Superframe;

use self::vnet::{RxOffload, VnetHdr};

/// Largest frame a port carries: PMTU 9978 (the modelled maximum) plus the Ethernet header
/// and one VLAN tag.
pub const MAX_FRAME: usize = 9978 + 14 + 4;

/// Receive buffer for [`Tap::recv`]: a virtio-net header and a superframe (an IP datagram of
/// up to 64 KiB after the Ethernet header, VLAN tags and IPv6 header), more than any frame.
pub const RECV_BUF: usize = vnet::LEN + 0x1_0000 + 128;

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
    /// Whether the port carries GSO superframes ([`Port::send_superframe`]).
    fn carries_superframes(&self) -> bool {
        false
    }
    /// Puts LSO output on the wire as one superframe: `sf.header` then `payload` (the
    /// superframe's payload, after its headers). Only called when
    /// [`Port::carries_superframes`].
    fn send_superframe(&self, sf: &Superframe, payload: &[u8]) -> io::Result<()> {
        let _ = (sf, payload);
        Err(io::Error::from(io::ErrorKind::Unsupported))
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
const IFF_VNET_HDR: u16 = 0x4000;
const IFNAMSIZ: usize = 16;
/// `TUNSETOFFLOAD` (`_IOW('T', 208, unsigned int)`): what the port can take from the host.
const TUNSETOFFLOAD: u64 = 0x4004_54d0;
/// `TUNSETVNETHDRSZ` (`_IOW('T', 216, int)`).
const TUNSETVNETHDRSZ: u64 = 0x4004_54d8;
/// `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN`: partial checksums and TCP
/// superframes (no UDP segmentation, no tunnel GSO: the host cuts those first).
const TUN_OFFLOADS: libc::c_uint = 0x01 | 0x02 | 0x04 | 0x08;

/// A TAP device opened by name.
pub struct Tap {
    file: File,
    name: String,
    /// Frames carry a virtio-net header (superframes both ways).
    vnet: bool,
}

/// A frame read from the TAP: where it is in the caller's buffer and what the host left the
/// port to finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// The frame's bytes in the buffer.
    pub frame: Range<usize>,
    /// Checksum or segmentation to finish.
    pub offload: RxOffload,
    /// The frame filled the buffer: it may have been cut short.
    pub truncated: bool,
}

impl Tap {
    /// Attaches to the TAP device `name` (created by the runner, or created here if the
    /// process may). With `gso`, frames cross with a virtio-net header and the port takes
    /// partial checksums and TCP superframes from the host.
    pub fn open(name: &str, gso: bool) -> io::Result<Self> {
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
        let flags = IFF_TAP | IFF_NO_PI | if gso { IFF_VNET_HDR } else { 0 };
        ifr[IFNAMSIZ..IFNAMSIZ + 2].copy_from_slice(&flags.to_ne_bytes());
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq` (40 bytes on Linux) at the pointer,
        // which points to a live, writable 40-byte buffer; the fd is an open /dev/net/tun.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, ifr.as_mut_ptr()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        if gso {
            let len = vnet::LEN as libc::c_int;
            // SAFETY: TUNSETVNETHDRSZ reads one int at the pointer, a live local.
            let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETVNETHDRSZ as _, &len) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: TUNSETOFFLOAD takes the flags by value, no pointers.
            let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETOFFLOAD as _, TUN_OFFLOADS) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
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
            vnet: gso,
        })
    }

    /// The next frame from the segment, read into `buf`; `WouldBlock` if none is waiting
    /// (the fd is non-blocking: [`Tap::wait_readable`] waits). A frame longer than `buf` is
    /// cut short by the kernel (callers pass [`RECV_BUF`] bytes, drop truncated frames and
    /// anything longer than the port MTU allows).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Received> {
        let n = (&self.file).read(buf)?;
        let truncated = n == buf.len();
        if !self.vnet {
            return Ok(Received {
                frame: 0..n,
                offload: RxOffload::None,
                truncated,
            });
        }
        let Some(hdr) = buf.get(..vnet::LEN).filter(|_| n >= vnet::LEN) else {
            return Ok(Received {
                frame: 0..0,
                offload: RxOffload::None,
                truncated: true,
            });
        };
        let mut h = [0u8; vnet::LEN];
        h.copy_from_slice(hdr);
        Ok(Received {
            frame: vnet::LEN..n,
            offload: VnetHdr::parse(&h).offload(),
            truncated,
        })
    }

    /// Writes `parts` as one frame after the virtio-net header `hdr` (if the TAP has one).
    fn write_parts(&self, hdr: VnetHdr, parts: &[&[u8]]) -> io::Result<()> {
        let hdr = hdr.to_bytes();
        let head: &[u8] = if self.vnet { &hdr } else { &[] };
        let iov: Vec<libc::iovec> = std::iter::once(head)
            .chain(parts.iter().copied())
            .filter(|p| !p.is_empty())
            .map(|p| libc::iovec {
                iov_base: p.as_ptr() as *mut libc::c_void,
                iov_len: p.len(),
            })
            .collect();
        let total: usize = head.len() + parts.iter().map(|p| p.len()).sum::<usize>();
        // SAFETY: every iovec points into a live slice (`hdr` or one of `parts`) for the
        // duration of the call, and writev only reads them; the fd is the open TAP.
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

    /// Waits until a frame can be read (true), or `timeout` passed or `wake` was kicked
    /// (false); `None` waits for a frame or a kick only. Timeouts are rounded up to whole
    /// milliseconds.
    pub fn wait_readable(
        &self,
        timeout: Option<std::time::Duration>,
        wake: &crate::wake::Wake,
    ) -> io::Result<bool> {
        let [tap, woken] = crate::wake::poll_two(self.file.as_raw_fd(), wake, timeout)?;
        if woken {
            wake.clear();
        }
        Ok(tap)
    }
}

impl Port for Tap {
    fn send(&self, frame: &[u8]) -> io::Result<()> {
        self.write_parts(VnetHdr::default(), &[frame])
    }

    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        self.write_parts(VnetHdr::default(), parts)
    }

    fn carries_superframes(&self) -> bool {
        self.vnet
    }

    fn send_superframe(&self, sf: &Superframe, payload: &[u8]) -> io::Result<()> {
        if !self.vnet {
            return Err(io::Error::from(io::ErrorKind::Unsupported));
        }
        self.write_parts(VnetHdr::superframe(sf), &[&sf.header, payload])
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
    superframes: Mutex<Vec<(Superframe, Vec<u8>)>>,
    carries_superframes: bool,
    unplugged: std::sync::atomic::AtomicBool,
}

impl Loopback {
    /// A port that also carries superframes (kept apart: [`Loopback::take_superframes`]).
    pub fn with_superframes() -> Self {
        Loopback {
            carries_superframes: true,
            ..Default::default()
        }
    }

    /// The frames sent so far, oldest first (and forgets them).
    pub fn take(&self) -> Vec<Vec<u8>> {
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect()
    }

    /// The superframes sent so far with their payloads, oldest first (and forgets them).
    pub fn take_superframes(&self) -> Vec<(Superframe, Vec<u8>)> {
        std::mem::take(&mut *self.superframes.lock().unwrap_or_else(|e| e.into_inner()))
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

    fn carries_superframes(&self) -> bool {
        self.carries_superframes
    }

    fn send_superframe(&self, sf: &Superframe, payload: &[u8]) -> io::Result<()> {
        if !self.carries_superframes || !self.carrier() {
            return Err(io::Error::from(io::ErrorKind::Unsupported));
        }
        self.superframes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((sf.clone(), payload.to_vec()));
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
            let e = Tap::open(bad, true).err().expect("must be refused");
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn tap_round_trip_when_the_host_allows_it() {
        // Needs CAP_NET_ADMIN and /dev/net/tun; elsewhere the open fails and there is nothing
        // to check (the VM tests cover the TAP path in any case).
        let name = format!("cx4t{}", std::process::id() % 100_000);
        let Ok(tap) = Tap::open(&name, true) else {
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
