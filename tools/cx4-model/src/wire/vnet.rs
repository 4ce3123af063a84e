//! The virtio-net header a TAP opened with `IFF_VNET_HDR` puts before every frame
//! (`struct virtio_net_hdr`, include/uapi/linux/virtio_net.h; legacy layout, 10 bytes, in the
//! host's byte order — little-endian on the hosts the model runs on, as tun's
//! `tun_is_little_endian` gives for a legacy header there).
//!
//! Written: zero (a complete frame), or a superframe's segmentation ([`VnetHdr::superframe`]).
//! Read: what the host left for the NIC to finish ([`RxOffload`]): a partial checksum, a
//! superframe to cut, or nothing.

use crate::eth::gso::Superframe;

/// Length of the legacy header.
pub const LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `csum_start + csum_offset` is partial.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`: the host checked the checksum.
pub const F_DATA_VALID: u8 = 2;

/// `VIRTIO_NET_HDR_GSO_*` types.
pub mod gso_type {
    /// Not a superframe.
    pub const NONE: u8 = 0;
    /// TCP over IPv4.
    pub const TCPV4: u8 = 1;
    /// UDP fragmentation offload (never negotiated here).
    pub const UDP: u8 = 3;
    /// TCP over IPv6.
    pub const TCPV6: u8 = 4;
    /// UDP segmentation (never negotiated here).
    pub const UDP_L4: u8 = 5;
    /// Flag: the TCP header has CWR set; only the first segment keeps it.
    pub const ECN: u8 = 0x80;
}

/// `struct virtio_net_hdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// `F_*` flags.
    pub flags: u8,
    /// [`gso_type`].
    pub gso_type: u8,
    /// Header bytes every segment repeats.
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Where the partial checksum starts.
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: u16,
}

/// What the host asks the NIC to finish for a received frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxOffload {
    /// A complete frame.
    None,
    /// Complete the checksum at `start + offset` over `start..` (see `eth::gso::complete_csum`).
    Csum {
        /// Start of the checksummed range.
        start: usize,
        /// Offset of the checksum field in it.
        offset: usize,
    },
    /// A TCP superframe to cut into segments of `mss` payload bytes (the per-segment
    /// checksums are computed then; `eth::gso::split`).
    Tcp {
        /// Payload bytes per segment.
        mss: usize,
    },
    /// A header this port never negotiated (UDP fragmentation or segmentation, an unknown
    /// type): the frame is dropped and counted as malformed.
    Unsupported(u8),
}

impl VnetHdr {
    /// Parses the header in front of a frame read from the TAP.
    pub fn parse(b: &[u8; LEN]) -> VnetHdr {
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        }
    }

    /// The header bytes.
    pub fn to_bytes(self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        for (i, v) in [
            self.hdr_len,
            self.gso_size,
            self.csum_start,
            self.csum_offset,
        ]
        .into_iter()
        .enumerate()
        {
            b[2 + 2 * i..4 + 2 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// The header of a superframe ([`crate::eth::gso::superframe`] keeps every field below
    /// 64 KiB).
    pub fn superframe(sf: &Superframe) -> VnetHdr {
        let kind = if sf.ipv6 {
            gso_type::TCPV6
        } else {
            gso_type::TCPV4
        };
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: kind | if sf.ecn { gso_type::ECN } else { 0 },
            hdr_len: sf.hdr_len as u16,
            gso_size: sf.mss as u16,
            csum_start: sf.csum_start as u16,
            csum_offset: sf.csum_offset as u16,
        }
    }

    /// What the host left for the NIC to do.
    pub fn offload(&self) -> RxOffload {
        match self.gso_type & !gso_type::ECN {
            gso_type::NONE if self.flags & F_NEEDS_CSUM != 0 => RxOffload::Csum {
                start: self.csum_start.into(),
                offset: self.csum_offset.into(),
            },
            gso_type::NONE => RxOffload::None,
            gso_type::TCPV4 | gso_type::TCPV6 => RxOffload::Tcp {
                mss: self.gso_size.into(),
            },
            other => RxOffload::Unsupported(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_in_the_host_layout() {
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: gso_type::TCPV6 | gso_type::ECN,
            hdr_len: 74,
            gso_size: 1428,
            csum_start: 54,
            csum_offset: 16,
        };
        let b = h.to_bytes();
        assert_eq!(b, [1, 0x84, 74, 0, 0x94, 0x05, 54, 0, 16, 0]);
        assert_eq!(VnetHdr::parse(&b), h);
        assert_eq!(h.offload(), RxOffload::Tcp { mss: 1428 });
    }

    #[test]
    fn offloads_the_host_can_ask_for() {
        let mut h = VnetHdr::default();
        assert_eq!(h.offload(), RxOffload::None);
        h.flags = F_DATA_VALID;
        assert_eq!(h.offload(), RxOffload::None);
        h.flags = F_NEEDS_CSUM;
        h.csum_start = 34;
        h.csum_offset = 6;
        assert_eq!(
            h.offload(),
            RxOffload::Csum {
                start: 34,
                offset: 6
            }
        );
        for t in [gso_type::UDP, gso_type::UDP_L4, 0x7f] {
            h.gso_type = t;
            assert_eq!(h.offload(), RxOffload::Unsupported(t));
        }
    }
}
