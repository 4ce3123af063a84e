//! InfiniBand packets on the modelled port's wire (`--link ib`): the local route header (LRH),
//! the packet the engine's transport headers make with it, and how it crosses the test bed.
//!
//! An IB packet (IBA 5.2, 7.7) is LRH (8 bytes) / [GRH (40)] / BTH / extension headers /
//! payload / pad / ICRC (4) / VCRC (2). The LRH: VL (4 bits) and LVer (4) | SL (4), 2 reserved
//! bits and LNH (2: 2 = BTH next, "IBA local"; 3 = GRH next) | DLID (16) | 5 reserved bits and
//! PktLen (11: 4-byte words from the LRH to the ICRC, VCRC excluded) | SLID (16).
//!
//! **Encoding on the test bed (ours, not NVIDIA's):** the test bed's segment is an Ethernet
//! bridge of TAP devices, so each IB packet travels as the payload of an Ethernet frame of
//! the IEEE 802 local experimental EtherType 0x88B5, to the broadcast address (the segment is
//! the link: two ports back to back), from the port's MAC; the IB packet follows the 14-byte
//! Ethernet header unchanged, VCRC included, and bytes after PktLen words plus the VCRC
//! (Ethernet padding) are ignored. Nothing else of Ethernet applies: no VLAN tag, no pause.
//!
//! The ICRC is the RoCE CRC-32 ([`super::icrc`]) over the packet with the LRH's VL nibble and
//! the BTH's resv8a byte set to ones (IBA 7.8.1, a local packet), least significant byte
//! first as RoCE sends it. The VCRC is CRC-16 polynomial 0x100B, register preset to ones,
//! bits taken least significant first, result inverted, over the LRH through the ICRC,
//! sent big-endian (IBA 7.8.2 names the polynomial and the preset; the bit and byte order
//! here are ours, consistent between modelled ports and unverified against a real link).
//!
//! A packet with a GRH (LNH 3: multicast always, and unicast whose address vector is
//! global) carries the 40-byte GRH of IBA 8.3 — RoCE v1's, byte for byte ([`Grh`]: IPVer 6,
//! traffic class, flow label, payload length BTH..ICRC, next header 0x1B, hop limit, SGID,
//! DGID) — between the LRH and the BTH, and its ICRC is the global packet's: the LRH
//! replaced by eight bytes of ones and the GRH's traffic class, flow label and hop limit
//! masked (IBA 7.8.1), i.e. RoCE v1's ([`super::icrc::compute_grh`]). The VCRC covers it
//! like the rest.

use super::error::WireError;
use super::headers::{Bth, TransportHeaders, BTH_LEN};
use super::icrc::{self as icrc_mod, crc32_update, GRH_LEN, ICRC_LEN};
use super::packet::Grh;

/// The EtherType that carries IB packets between modelled ports (IEEE 802 local experimental
/// EtherType 1).
pub const ETHERTYPE_IB: u16 = 0x88b5;
/// Length of the Ethernet header in front of the IB packet.
pub const ETH_HLEN: usize = 14;
/// Length of the LRH.
pub const LRH_LEN: usize = 8;
/// Length of the VCRC.
pub const VCRC_LEN: usize = 2;
/// The permissive LID (directed-route SMPs, and their replies).
pub const PERMISSIVE_LID: u16 = 0xffff;
/// The first multicast LID.
pub const MULTICAST_LID: u16 = 0xc000;
/// LNH: IBA local (BTH follows the LRH).
pub const LNH_LOCAL: u8 = 2;
/// LNH: IBA global (a GRH follows the LRH).
pub const LNH_GLOBAL: u8 = 3;
/// The management virtual lane (QP0's).
pub const VL15: u8 = 15;

/// The local route header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lrh {
    /// Virtual lane.
    pub vl: u8,
    /// Service level.
    pub sl: u8,
    /// Link next header.
    pub lnh: u8,
    /// Destination LID.
    pub dlid: u16,
    /// Packet length in 4-byte words, LRH to ICRC.
    pub pkt_len: u16,
    /// Source LID.
    pub slid: u16,
}

impl Lrh {
    /// The 8 bytes on the wire (LVer 0).
    pub fn encode(&self) -> [u8; LRH_LEN] {
        let mut b = [0u8; LRH_LEN];
        b[0] = self.vl << 4;
        b[1] = (self.sl << 4) | (self.lnh & 3);
        b[2..4].copy_from_slice(&self.dlid.to_be_bytes());
        b[4..6].copy_from_slice(&(self.pkt_len & 0x7ff).to_be_bytes());
        b[6..8].copy_from_slice(&self.slid.to_be_bytes());
        b
    }

    /// Reads an LRH.
    pub fn decode(b: &[u8]) -> Result<Lrh, WireError> {
        let b = b.get(..LRH_LEN).ok_or(WireError::Truncated {
            what: "LRH",
            need: LRH_LEN,
            have: b.len(),
        })?;
        if b[0] & 0xf != 0 {
            return Err(WireError::FieldRange {
                field: "LRH LVer",
                value: u64::from(b[0] & 0xf),
                max: 0,
            });
        }
        Ok(Lrh {
            vl: b[0] >> 4,
            sl: b[1] >> 4,
            lnh: b[1] & 3,
            dlid: u16::from_be_bytes([b[2], b[3]]),
            pkt_len: u16::from_be_bytes([b[4], b[5]]) & 0x7ff,
            slid: u16::from_be_bytes([b[6], b[7]]),
        })
    }
}

/// Whether `lid` is a multicast LID (0xC000..=0xFFFE).
pub fn is_multicast_lid(lid: u16) -> bool {
    (MULTICAST_LID..PERMISSIVE_LID).contains(&lid)
}

/// Where a connected QP's packets go on the IB link: the LRH (PktLen and LNH set per packet),
/// the GRH of a global path, the BTH P_Key, and the port's MAC for the carrying frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbPath {
    /// The LRH template: VL, SL, DLID, SLID.
    pub lrh: Lrh,
    /// The GRH (payload length the builder's), if the path is global.
    pub grh: Option<Grh>,
    /// The BTH P_Key (the QP's P_Key table entry).
    pub pkey: u16,
    /// The sending port's MAC (source of the carrying frame).
    pub src_mac: [u8; 6],
}

/// An IB packet as received: its LRH, transport headers and payload.
#[derive(Clone, Copy, Debug)]
pub struct IbPacket<'a> {
    /// The local route header.
    pub lrh: Lrh,
    /// The global route header (LNH 3) and its 40 bytes as received.
    pub grh: Option<(Grh, &'a [u8])>,
    /// BTH and extension headers.
    pub hdr: TransportHeaders,
    /// The payload (pad removed).
    pub payload: &'a [u8],
}

/// The ICRC of a local IB packet `p` (LRH to the end of the pad).
pub fn icrc(p: &[u8]) -> u32 {
    let mut head = [0u8; LRH_LEN + BTH_LEN];
    let n = head.len().min(p.len());
    head[..n].copy_from_slice(&p[..n]);
    head[0] |= 0xf0; // VL
    head[LRH_LEN + Bth::FECN_BECN_OFFSET] = 0xff; // resv8a
    let crc = crc32_update(!0, &head[..n]);
    !crc32_update(crc, p.get(n..).unwrap_or_default())
}

/// The VCRC of `p` (LRH to the end of the ICRC).
pub fn vcrc(p: &[u8]) -> u16 {
    // Polynomial 0x100B, reflected (0xD008), preset and final inversion.
    let mut crc: u16 = 0xffff;
    for &byte in p {
        crc ^= u16::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xd008
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Whether `frame` is an Ethernet frame carrying an IB packet.
pub fn is_ib_frame(frame: &[u8]) -> bool {
    frame.len() >= ETH_HLEN && u16::from_be_bytes([frame[12], frame[13]]) == ETHERTYPE_IB
}

/// The DLID of the IB packet in `frame`, unchecked.
pub fn peek_dlid(frame: &[u8]) -> Option<u16> {
    let b = frame.get(ETH_HLEN + 2..ETH_HLEN + 4)?;
    Some(u16::from_be_bytes([b[0], b[1]]))
}

/// The Ethernet frame of the IB packet `lrh` (its PktLen and LNH computed here), `grh` (its
/// payload length computed here), `hdr` (its pad count computed here) and `payload`, from
/// the port whose MAC is `src_mac`.
pub fn build(
    src_mac: [u8; 6],
    mut lrh: Lrh,
    grh: Option<&Grh>,
    mut hdr: TransportHeaders,
    payload: &[u8],
) -> Result<Vec<u8>, WireError> {
    let pad = (4 - payload.len() % 4) % 4;
    hdr.bth.pad = pad as u8;
    let hlen = hdr.wire_len();
    let glen = if grh.is_some() { GRH_LEN } else { 0 };
    let len = LRH_LEN + glen + hlen + payload.len() + pad + ICRC_LEN;
    lrh.lnh = if grh.is_some() { LNH_GLOBAL } else { LNH_LOCAL };
    lrh.pkt_len = (len / 4) as u16;
    if len / 4 > 0x7ff {
        return Err(WireError::TooLong(len));
    }
    let mut f = Vec::with_capacity(ETH_HLEN + len + VCRC_LEN);
    f.extend_from_slice(&[0xff; 6]);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&ETHERTYPE_IB.to_be_bytes());
    f.extend_from_slice(&lrh.encode());
    if let Some(g) = grh {
        let at = f.len();
        f.resize(at + GRH_LEN, 0);
        g.write(&mut f[at..], len - LRH_LEN - GRH_LEN)?;
    }
    let at = f.len();
    f.resize(at + hlen, 0);
    hdr.encode(&mut f[at..])?;
    f.extend_from_slice(payload);
    f.resize(f.len() + pad, 0);
    let c = if grh.is_some() {
        icrc_mod::compute_grh(&f[ETH_HLEN + LRH_LEN..])?
    } else {
        icrc(&f[ETH_HLEN..])
    };
    f.extend_from_slice(&c.to_le_bytes());
    let v = vcrc(&f[ETH_HLEN..]);
    f.extend_from_slice(&v.to_be_bytes());
    Ok(f)
}

/// Parses the IB packet in `frame`: the LRH (LNH local or global), the GRH and its payload
/// length, the lengths, the VCRC and ICRC unless `looped` (a packet that never left the
/// card), the transport headers and the pad.
pub fn parse(frame: &[u8], looped: bool) -> Result<IbPacket<'_>, WireError> {
    if !is_ib_frame(frame) {
        let t = frame
            .get(12..14)
            .map_or(0, |t| u16::from_be_bytes([t[0], t[1]]));
        return Err(WireError::EtherType(t));
    }
    let p = &frame[ETH_HLEN..];
    let lrh = Lrh::decode(p)?;
    let glen = match lrh.lnh {
        LNH_LOCAL => 0,
        LNH_GLOBAL => GRH_LEN,
        _ => {
            return Err(WireError::UnexpectedHeader(
                "raw packet (LNH 0/1) on the IB link",
            ))
        }
    };
    let len = usize::from(lrh.pkt_len) * 4;
    let min = LRH_LEN + glen + BTH_LEN + ICRC_LEN;
    if len < min || p.len() < len + VCRC_LEN {
        return Err(WireError::Truncated {
            what: "IB packet (PktLen and VCRC)",
            need: len.max(min) + VCRC_LEN,
            have: p.len(),
        });
    }
    let (pkt, rest) = p.split_at(len);
    if !looped {
        let v = u16::from_be_bytes([rest[0], rest[1]]);
        if v != vcrc(pkt) {
            return Err(WireError::Vcrc {
                found: v,
                expected: vcrc(pkt),
            });
        }
        if glen == 0 {
            let (body, tail) = pkt.split_at(len - ICRC_LEN);
            let found = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
            let expected = icrc(body);
            if found != expected {
                return Err(WireError::Icrc { found, expected });
            }
        } else {
            icrc_mod::check_grh(&pkt[LRH_LEN..])?;
        }
    }
    let grh = if glen == 0 {
        None
    } else {
        let raw = &pkt[LRH_LEN..LRH_LEN + GRH_LEN];
        let (g, paylen) = Grh::read(raw)?;
        if paylen != len - LRH_LEN - GRH_LEN {
            return Err(WireError::IpLength {
                claimed: GRH_LEN + paylen,
                available: len - LRH_LEN,
            });
        }
        Some((g, raw))
    };
    let (hdr, hlen) = TransportHeaders::decode(&pkt[LRH_LEN + glen..])?;
    let end = len - ICRC_LEN;
    let start = LRH_LEN + glen + hlen;
    let pad = usize::from(hdr.bth.pad);
    if start + pad > end {
        return Err(WireError::PadCount {
            pad: hdr.bth.pad,
            len: end.saturating_sub(start),
        });
    }
    Ok(IbPacket {
        lrh,
        grh,
        hdr,
        payload: &pkt[start..end - pad],
    })
}

#[cfg(test)]
mod tests {
    use super::super::headers::{Deth, ExtHeaders, Opcode};
    use super::*;

    fn smp_packet(dlid: u16, slid: u16) -> Vec<u8> {
        let hdr = TransportHeaders {
            bth: Bth::new(Opcode::UdSendOnly, 0, 7),
            ext: ExtHeaders {
                deth: Some(Deth { qkey: 0, src_qp: 0 }),
                ..Default::default()
            },
        };
        let lrh = Lrh {
            vl: VL15,
            dlid,
            slid,
            ..Default::default()
        };
        let mad: Vec<u8> = (0..=255u8).collect();
        build([2, 0xc4, 0, 0, 0, 1], lrh, None, hdr, &mad).unwrap()
    }

    /// A QP0 packet: Ethernet header of EtherType 0x88B5, LRH, BTH, DETH, the 256-byte MAD,
    /// ICRC, VCRC; the parser takes it back whole and refuses it with any bit flipped.
    #[test]
    fn a_qp0_packet_round_trips_and_its_crcs_catch_a_flipped_bit() {
        let f = smp_packet(PERMISSIVE_LID, PERMISSIVE_LID);
        assert_eq!(f.len(), 14 + 8 + 12 + 8 + 256 + 4 + 2);
        assert_eq!(f[12..14], [0x88, 0xb5]);
        assert_eq!(f[14..22], [0xf0, 0x02, 0xff, 0xff, 0x00, 72, 0xff, 0xff]);
        let p = parse(&f, false).unwrap();
        assert_eq!(
            (p.lrh.vl, p.lrh.dlid, p.lrh.slid, p.lrh.pkt_len),
            (15, 0xffff, 0xffff, 72)
        );
        assert_eq!(p.hdr.bth.dest_qp, 0);
        assert_eq!(p.hdr.ext.deth.unwrap().src_qp, 0);
        assert_eq!(p.payload.len(), 256);
        assert_eq!(p.payload[255], 255);
        // Ethernet padding after the VCRC is ignored.
        let mut padded = f.clone();
        padded.extend_from_slice(&[0; 20]);
        assert!(parse(&padded, false).is_ok());
        for bit in [14 * 8 + 20, 40 * 8, (f.len() - 1) * 8] {
            let mut bad = f.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(parse(&bad, false).is_err(), "bit {bit}");
        }
        // The VL is not covered by the ICRC (a switch may change it), only by the VCRC.
        let mut other_vl = f.clone();
        other_vl[14] = 0x00;
        let body = &other_vl[14..14 + 72 * 4 - 4];
        assert_eq!(icrc(body).to_le_bytes(), f[14 + 72 * 4 - 4..14 + 72 * 4]);
        let mut short = f.clone();
        short.truncate(f.len() - 3);
        assert!(matches!(
            parse(&short, false),
            Err(WireError::Truncated { .. })
        ));
    }

    /// A global packet (LNH 3): the GRH between LRH and BTH with its payload length, the
    /// global ICRC (RoCE v1's), both CRCs catching a flipped GRH bit; the VL and the GRH's
    /// traffic class, flow label and hop limit are outside the ICRC (IBA 7.8.1).
    #[test]
    fn a_global_packet_carries_the_grh_under_the_global_icrc() {
        let hdr = TransportHeaders {
            bth: Bth::new(Opcode::UdSendOnly, 0xff_ffff, 9),
            ext: ExtHeaders {
                deth: Some(Deth {
                    qkey: 0x0b1b,
                    src_qp: 0x11,
                }),
                ..Default::default()
            },
        };
        let lrh = Lrh {
            dlid: 0xc000,
            slid: 1,
            ..Default::default()
        };
        let grh = Grh {
            sgid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            dgid: [
                0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
            ],
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 0,
        };
        let f = build([2, 0xc4, 0, 0, 0, 1], lrh, Some(&grh), hdr, b"arp").unwrap();
        assert_eq!(f.len(), 14 + 8 + 40 + 12 + 8 + 4 + 4 + 2);
        assert_eq!(f[15] & 3, LNH_GLOBAL);
        assert_eq!(
            u16::from_be_bytes([f[26], f[27]]),
            12 + 8 + 4 + 4,
            "GRH PayLen"
        );
        let p = parse(&f, false).unwrap();
        let (g, raw) = p.grh.unwrap();
        assert_eq!(g, grh);
        assert_eq!(raw, &f[22..62]);
        assert_eq!(p.payload, b"arp");
        for bit in [(22 + 8) * 8, (22 + 39) * 8 + 7] {
            let mut bad = f.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(parse(&bad, false).is_err(), "bit {bit}");
            // With the VCRC redone, the ICRC still catches a flipped GID bit.
            let end = f.len() - 2;
            let v = vcrc(&bad[14..end]);
            bad[end..].copy_from_slice(&v.to_be_bytes());
            assert!(matches!(parse(&bad, false), Err(WireError::Icrc { .. })));
        }
        // Hop limit and VL are not under the ICRC: a router and a switch may change them.
        let mut hop = f.clone();
        hop[14] = 0x30;
        hop[22 + 7] = 9;
        let end = f.len() - 2;
        let v = vcrc(&hop[14..end]);
        hop[end..].copy_from_slice(&v.to_be_bytes());
        assert_eq!(parse(&hop, false).unwrap().grh.unwrap().0.hop_limit, 9);
    }

    /// The VCRC is the CRC-16 of its definition: a bit-at-a-time division by x^16 + x^12 +
    /// x^3 + x + 1 (0x100B) over the bits least significant first, preset ones, inverted.
    #[test]
    fn vcrc_is_crc16_0x100b() {
        let data = b"123456789";
        let mut reg: u32 = 0xffff;
        for &b in data {
            for i in 0..8 {
                let bit = u32::from((b >> i) & 1);
                let top = reg & 1;
                reg >>= 1;
                if top ^ bit != 0 {
                    reg ^= 0xd008;
                }
            }
        }
        assert_eq!(vcrc(data), !(reg as u16));
        assert_ne!(vcrc(data), vcrc(b"123456788"));
    }
}
