//! IPoIB's stateless offloads on UD QPs (`ipoib_basic_offloads`; mlx5_ib's
//! `IB_DEVICE_UD_IP_CSUM` and `IBK_UD_TSO`).
//!
//! A UD QP created with `ulp_stateless_offload_mode` 1 (mlx5_ib's `IB_QP_CREATE_IPOIB_UD_LSO`,
//! the QP ib_ipoib asks for when the device offers UD TSO) carries in every send WQE, after
//! the datagram segment, a 16-byte pad (`mlx5_wqe_eth_pad`) and an Ethernet segment
//! (`mlx5_wqe_eth_seg`; `handle_qpt_ud` and `set_eth_seg` in mlx5_ib's `wr.c`): the checksum
//! requests (`cs_flags` L3 and L4: `IB_SEND_IP_CSUM`) and, for an LSO WQE (opcode 0x0E,
//! `IB_WR_LSO`), the MSS and the headers inline (`inline_hdr.sz` bytes from the segment's
//! last two bytes on), the data segments following at the next 16-byte boundary.
//!
//! The message is an IPoIB packet: the 4-byte encapsulation header (EtherType, reserved) then
//! IPv4 or IPv6. The card runs it through its Ethernet offload engine with the encapsulation
//! header standing in for an Ethernet header of that EtherType: the checksums as
//! [`csum::offload_tx`], LSO as [`lso::segment`] (per segment: IPv4 total length,
//! identification and header checksum, IPv6 payload length, TCP sequence number, flags and
//! checksum), each segment a UD datagram of its own behind the encapsulation header.

use cx4_hw::wqe::{CsFlags, WqeEthSeg};
use zerocopy::FromBytes;

use crate::eth::{
    csum,
    dma::WqeReader,
    frame::{self, ParseConfig},
    lso,
};

use super::wqe::WqeError;

/// Bytes of the pad between the datagram and the Ethernet segment (`mlx5_wqe_eth_pad`).
pub const ETH_PAD_LEN: usize = 16;
/// Bytes of IPoIB's encapsulation header (`struct ipoib_header`: EtherType, reserved).
pub const IPOIB_HLEN: usize = 4;
/// Bytes of the Ethernet header the encapsulation header stands in for.
const ETH_HLEN: usize = 14;

/// The offload requests of one send WQE of an offloading UD QP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdOffload {
    /// Checksum requests (`cs_flags`).
    pub flags: CsFlags,
    /// LSO: the maximum segment size and the inline headers.
    pub lso: Option<(usize, Vec<u8>)>,
}

impl UdOffload {
    /// Decodes the pad and Ethernet segment from byte `at` of a WQE of `end` bytes; `lso`
    /// for an LSO WQE (whose headers are inline). Returns the requests and the byte where
    /// the data segments start.
    pub fn decode<R: WqeReader + ?Sized>(
        r: &R,
        at: usize,
        end: usize,
        lso: bool,
    ) -> Result<(UdOffload, usize), WqeError> {
        let eth_at = at + ETH_PAD_LEN;
        if eth_at + WqeEthSeg::SIZE > end {
            return Err(WqeError::BadSegment(format!(
                "no Ethernet segment in a UD WQE of {end} bytes"
            )));
        }
        let mut b = [0u8; WqeEthSeg::SIZE];
        r.read(eth_at, &mut b).map_err(WqeError::Unreadable)?;
        let eth = WqeEthSeg::ref_from_bytes(&b[..])
            .map_err(|_| WqeError::BadSegment("Ethernet segment".into()))?;
        let flags = CsFlags::from_bits_truncate(eth.cs_flags() as u8);
        if !lso {
            return Ok((UdOffload { flags, lso: None }, eth_at + WqeEthSeg::SIZE));
        }
        let hlen = eth.inline_hdr_sz() as usize;
        let hdr_at = eth_at + WqeEthSeg::SIZE - 2;
        let data_at = eth_at + (WqeEthSeg::SIZE - 2 + hlen).div_ceil(16) * 16;
        if hlen < IPOIB_HLEN || data_at > end {
            return Err(WqeError::BadSegment(format!(
                "LSO headers of {hlen} bytes in a UD WQE of {end} bytes"
            )));
        }
        let mut header = vec![0u8; hlen];
        r.read(hdr_at, &mut header).map_err(WqeError::Unreadable)?;
        let lso = Some((eth.mss() as usize, header));
        Ok((UdOffload { flags, lso }, data_at))
    }

    /// No request: the message goes as posted.
    pub fn none() -> UdOffload {
        UdOffload {
            flags: CsFlags::empty(),
            lso: None,
        }
    }

    /// The inline headers of an LSO WQE (empty otherwise): the message's first bytes.
    pub fn header(&self) -> &[u8] {
        self.lso.as_ref().map_or(&[], |(_, h)| h)
    }

    /// The datagrams of the IPoIB message `msg` (the inline headers, then the gathered
    /// data): one with its checksums filled as asked, or the LSO segments.
    pub fn datagrams(&self, msg: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        if msg.len() < IPOIB_HLEN {
            return Err(format!("{} bytes: no IPoIB header", msg.len()));
        }
        if self.flags.is_empty() && self.lso.is_none() {
            return Ok(vec![msg.to_vec()]);
        }
        // The Ethernet engine's view: an Ethernet header of the encapsulated EtherType.
        let mut f = vec![0u8; ETH_HLEN - 2];
        f.extend_from_slice(&msg[..2]);
        f.extend_from_slice(&msg[IPOIB_HLEN..]);
        let h = frame::parse(&f, &ParseConfig::default().for_tx()).map_err(|e| e.to_string())?;
        let encap = &msg[..IPOIB_HLEN];
        let back = |hdr: &[u8], data: &[u8]| {
            let mut d = Vec::with_capacity(IPOIB_HLEN + hdr.len() + data.len() - ETH_HLEN);
            d.extend_from_slice(encap);
            d.extend_from_slice(&hdr[ETH_HLEN..]);
            d.extend_from_slice(data);
            d
        };
        match &self.lso {
            Some((mss, _)) => Ok(lso::segment(&f, &h, *mss, self.flags)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|s| back(&s.header, &f[s.payload]))
                .collect()),
            None => {
                csum::offload_tx(&mut f, &h, self.flags);
                Ok(vec![back(&f, &[])])
            }
        }
    }
}

/// Whether the received IPoIB datagram `d` (encapsulation header, then the IP packet) has a
/// good IP header and TCP/UDP checksum, as the card reports it in the CQE of an offloading
/// QP (the Ethernet engine's receive check, [`csum::rx_checksum`]); not for other protocols
/// or fragments.
pub fn rx_csum_ok(d: &[u8]) -> bool {
    if d.len() < IPOIB_HLEN {
        return false;
    }
    let mut f = vec![0u8; ETH_HLEN - 2];
    f.extend_from_slice(&d[..2]);
    f.extend_from_slice(&d[IPOIB_HLEN..]);
    let Ok(h) = frame::parse(&f, &ParseConfig::default()) else {
        return false;
    };
    let l4 = h
        .innermost()
        .l4
        .is_some_and(|l4| l4.kind != frame::L4Kind::Other);
    let c = csum::rx_checksum(&f, &h, false);
    l4 && c.l3_ok && c.l4_ok
}

/// An IPoIB TCP/IPv4 packet: encapsulation header, IPv4 (checksum 0), TCP (sequence 0x100,
/// checksum 0) with `payload`; its headers are the first 44 bytes.
#[cfg(test)]
pub(crate) fn tcp4(payload: &[u8]) -> Vec<u8> {
    let mut m = vec![0x08, 0x00, 0, 0];
    let total = (20 + 20 + payload.len()) as u16;
    m.extend_from_slice(&[0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0]);
    m[6..8].copy_from_slice(&total.to_be_bytes());
    m.extend_from_slice(&[192, 168, 77, 1, 192, 168, 77, 2]);
    m.extend_from_slice(&[0x13, 0x89, 0xc0, 0x00, 0, 0, 1, 0, 0, 0, 0, 0]);
    m.extend_from_slice(&[0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    m.extend_from_slice(payload);
    m
}

/// Whether the IPv4 header and TCP checksums of IPoIB datagram `d` ([`tcp4`]'s) are right.
#[cfg(test)]
pub(crate) fn csums_ok(d: &[u8]) -> bool {
    let ip = &d[IPOIB_HLEN..];
    let tcp_len = ip.len() - 20;
    let pseudo = csum::Sum::new()
        .bytes(&ip[12..20])
        .word(6)
        .word(tcp_len as u16);
    csum::checksum(&ip[..20]) == 0 && pseudo.bytes(&ip[20..]).checksum() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_are_filled_behind_the_encapsulation_header() {
        let m = tcp4(b"hello ipoib");
        let off = UdOffload {
            flags: CsFlags::L3 | CsFlags::L4,
            lso: None,
        };
        let d = off.datagrams(&m).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].len(), m.len());
        assert_eq!(d[0][..4], [0x08, 0, 0, 0]);
        assert!(csums_ok(&d[0]));
        assert!(!csums_ok(&m));
        // No request: the message as posted.
        assert_eq!(UdOffload::none().datagrams(&m).unwrap(), vec![m]);
    }

    #[test]
    fn lso_cuts_tcp_into_mss_segments_each_with_the_ipoib_header() {
        let payload: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let m = tcp4(&payload);
        let off = UdOffload {
            flags: CsFlags::L3 | CsFlags::L4,
            lso: Some((2000, m[..44].to_vec())),
        };
        let d = off.datagrams(&m).unwrap();
        assert_eq!(d.len(), 3);
        let mut got = Vec::new();
        for (i, s) in d.iter().enumerate() {
            assert_eq!(s[..4], [0x08, 0, 0, 0]);
            assert!(csums_ok(s), "segment {i}");
            let seq = u32::from_be_bytes([s[28], s[29], s[30], s[31]]);
            assert_eq!(seq, 0x100 + 2000 * i as u32);
            assert_eq!(usize::from(u16::from_be_bytes([s[6], s[7]])), s.len() - 4);
            got.extend_from_slice(&s[44..]);
        }
        assert_eq!(got, payload);
        assert!(UdOffload::none().datagrams(&[8]).is_err());
    }
}
