//! The invariant CRC (ICRC) of a RoCE packet: RoCEv2 (IBTA Annex A17.3.3), computed as the
//! Linux soft-RoCE driver does (`drivers/infiniband/sw/rxe/rxe_icrc.c`), which is what real
//! peers check, and RoCE v1 (IBTA Annex A16: the IBA ICRC of a packet with a GRH and no LRH).
//!
//! The ICRC is the CRC-32 of IEEE 802.3 (polynomial 0x04C11DB7, reflected, register preset to
//! all ones, result inverted). Over a RoCEv2 packet ([`compute`]) it covers:
//!
//! 1. 8 bytes of 0xFF standing for the InfiniBand LRH that RoCEv2 does not carry (64 bits —
//!    rxe folds them into its seed 0xDEBB20E3, the register after those 8 bytes);
//! 2. the IP header with its variant fields set to all ones — IPv4: TOS (DSCP and ECN), TTL
//!    and header checksum; IPv6: traffic class, flow label and hop limit;
//! 3. the UDP header with its checksum set to all ones;
//! 4. the BTH with byte 4 (FECN, BECN and the 6 reserved bits) set to all ones;
//! 5. the rest of the packet: extension headers, payload and pad.
//!
//! So a switch may rewrite ECN (mark CE), DSCP, TTL and the checksums that follow from them
//! without breaking the ICRC. The 4 ICRC bytes follow the pad, least significant byte first:
//! rxe stores the inverted register as a host-order 32-bit word (on little-endian hosts) and
//! scapy's `contrib.roce` packs `zlib.crc32` byte-reversed, and the two agree (see the test
//! vectors in [`super::packet`]).
//!
//! Over a RoCE v1 packet ([`compute_grh`]: Ethernet, then the 40-byte IB GRH, no IP, no UDP)
//! it covers the same 8 bytes of 0xFF for the absent LRH (the same seed), then the GRH with
//! its variant fields — traffic class, flow label, hop limit — set to all ones (bytes 0 low
//! nibble, 1–3 and 7: the GRH has the IPv6 header's layout), then the BTH with byte 4
//! (resv8a) set to all ones, then the rest. Checked against two sources: the IBA 1.x
//! §7.8.1 rule for a global packet (a GRH present) as quoted in the NVIDIA developer forum
//! thread "How to calculate the CRC32 for BF2 RDMA?" and in Shanley's *InfiniBand Network
//! Architecture* ch. 25 "Packet CRCs" — the ICRC includes GRH IPVer, PayLen, NxtHdr, SGID and
//! DGID, the BTH except Resv8a, the ETHs and the payload; the LRH, GRH TClass, FlowLabel and
//! HopLmt and BTH Resv8a are replaced by ones — and the RoCE v1 era soft-RoCE (System Fabric
//! Works / Mellanox, 2009–2010, `rxe_sb8.c` `rxe_sb8_ib_headers`, in the public code index),
//! which starts from the same 0xDEBB20E3 seed, ORs 0x0f into GRH byte 0, sets GRH bytes 1, 2,
//! 3 and 7 and BTH byte 4 to 0xff, runs the CRC over GRH + BTH + the rest and inverts it.
//! The test below recomputes a v1 ICRC with a bit-at-a-time CRC of its own over hand-masked
//! bytes. (Upstream rxe only does v2.)
//!
//! rxe copies a fixed 20-byte IPv4 header, so IPv4 options are not supported (the packet
//! parser rejects them).

use super::error::WireError;
use super::headers::{Bth, BTH_LEN};

/// Length of the ICRC.
pub const ICRC_LEN: usize = 4;
/// Length of an IPv4 header without options.
pub const IPV4_HLEN: usize = 20;
/// Length of an IPv6 header.
pub const IPV6_HLEN: usize = 40;
/// Length of a UDP header.
pub const UDP_HLEN: usize = 8;
/// Length of the IB global route header (RoCE v1).
pub const GRH_LEN: usize = 40;
/// The CRC register after 8 bytes of 0xFF (the masked LRH) from all ones: rxe's seed.
pub const LRH_SEED: u32 = 0xdebb_20e3;

/// Advances a CRC-32 register over `data`, with no inversion on either side (the kernel's
/// `crc32_le`). `crc32fast` keeps its state inverted (its state is the CRC of the bytes so far),
/// hence the inversions around it; it folds with PCLMULQDQ where the CPU has it (a RoCE frame
/// costs a fraction of a nanosecond per byte), else uses slicing-by-16 tables.
pub fn crc32_update(crc: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!crc);
    h.update(data);
    !h.finalize()
}

/// The CRC-32 of Ethernet and zlib: register preset to all ones, result inverted.
pub fn crc32(data: &[u8]) -> u32 {
    !crc32_update(!0, data)
}

/// Length of the IP header at the start of `datagram`, from its version nibble (IPv4 without
/// options, or IPv6).
pub fn ip_header_len(datagram: &[u8]) -> Result<usize, WireError> {
    let first = *datagram.first().ok_or(WireError::Truncated {
        what: "IP header",
        need: 1,
        have: 0,
    })?;
    match first >> 4 {
        4 if first & 0xf == 5 => Ok(IPV4_HLEN),
        4 => Err(WireError::Ipv4Options(first & 0xf)),
        6 => Ok(IPV6_HLEN),
        v => Err(WireError::IpVersion(v)),
    }
}

/// The ICRC of a RoCEv2 datagram: `datagram` runs from the first byte of the IP header to the
/// end of the pad, the ICRC itself excluded. Its lengths are not checked against the IP and
/// UDP length fields (the packet parser does that). The wire carries the result as
/// `to_le_bytes()`.
pub fn compute(datagram: &[u8]) -> Result<u32, WireError> {
    let ip_len = ip_header_len(datagram)?;
    let fixed = ip_len + UDP_HLEN + BTH_LEN;
    let head = datagram.get(..fixed).ok_or(WireError::Truncated {
        what: "RoCEv2 headers",
        need: fixed,
        have: datagram.len(),
    })?;
    let mut masked = [0u8; IPV6_HLEN + UDP_HLEN + BTH_LEN];
    let m = &mut masked[..fixed];
    m.copy_from_slice(head);
    if ip_len == IPV4_HLEN {
        m[1] = 0xff; // TOS
        m[8] = 0xff; // TTL
        m[10] = 0xff; // header checksum
        m[11] = 0xff;
    } else {
        m[0] |= 0x0f; // traffic class, high nibble
        m[1] = 0xff; // traffic class, low nibble; flow label
        m[2] = 0xff;
        m[3] = 0xff;
        m[7] = 0xff; // hop limit
    }
    m[ip_len + 6] = 0xff; // UDP checksum
    m[ip_len + 7] = 0xff;
    m[ip_len + UDP_HLEN + Bth::FECN_BECN_OFFSET] = 0xff;
    let crc = crc32_update(LRH_SEED, m);
    let crc = crc32_update(crc, datagram.get(fixed..).unwrap_or_default());
    Ok(!crc)
}

/// Checks the ICRC at the end of `datagram` (from the IP header to the end of the ICRC).
pub fn check(datagram: &[u8]) -> Result<(), WireError> {
    let body_len = datagram
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(WireError::Truncated {
            what: "ICRC",
            need: ICRC_LEN,
            have: datagram.len(),
        })?;
    let (body, tail) = datagram.split_at(body_len);
    let expected = compute(body)?;
    let found = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    if found == expected {
        Ok(())
    } else {
        Err(WireError::Icrc { found, expected })
    }
}

/// The ICRC of a RoCE v1 packet: `packet` runs from the first byte of the GRH to the end of
/// the pad, the ICRC itself excluded. The GRH's own fields (version, payload length, next
/// header) are not checked (the packet parser does that). The wire carries the result as
/// `to_le_bytes()`, as for RoCEv2.
pub fn compute_grh(packet: &[u8]) -> Result<u32, WireError> {
    const FIXED: usize = GRH_LEN + BTH_LEN;
    let head = packet.get(..FIXED).ok_or(WireError::Truncated {
        what: "GRH and BTH",
        need: FIXED,
        have: packet.len(),
    })?;
    let mut m = [0u8; FIXED];
    m.copy_from_slice(head);
    m[0] |= 0x0f; // traffic class, high nibble
    m[1] = 0xff; // traffic class, low nibble; flow label
    m[2] = 0xff;
    m[3] = 0xff;
    m[7] = 0xff; // hop limit
    m[GRH_LEN + Bth::FECN_BECN_OFFSET] = 0xff; // resv8a
    let crc = crc32_update(LRH_SEED, &m);
    let crc = crc32_update(crc, &packet[FIXED..]);
    Ok(!crc)
}

/// Checks the ICRC at the end of a RoCE v1 `packet` (from the GRH to the end of the ICRC).
pub fn check_grh(packet: &[u8]) -> Result<(), WireError> {
    let body_len = packet
        .len()
        .checked_sub(ICRC_LEN)
        .ok_or(WireError::Truncated {
            what: "ICRC",
            need: ICRC_LEN,
            have: packet.len(),
        })?;
    let (body, tail) = packet.split_at(body_len);
    let expected = compute_grh(body)?;
    let found = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    if found == expected {
        Ok(())
    } else {
        Err(WireError::Icrc { found, expected })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        // The CRC-32 check value of the Rocksoft catalogue ("CRC-32/ISO-HDLC").
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn rxe_seed_is_eight_bytes_of_ones() {
        assert_eq!(crc32_update(!0, &[0xff; 8]), LRH_SEED);
        // Not 64 bytes: the LRH is 64 bits.
        assert_ne!(crc32_update(!0, &[0xff; 64]), LRH_SEED);
    }

    /// The byte-at-a-time table CRC of the reflected polynomial 0xEDB88320, as the
    /// kernel's `crc32_le` computes it: the reference [`crc32_update`] must match.
    fn table_crc32_update(mut crc: u32, data: &[u8]) -> u32 {
        let table: Vec<u32> = (0..256u32)
            .map(|i| {
                (0..8).fold(i, |c, _| {
                    if c & 1 != 0 {
                        0xedb8_8320 ^ (c >> 1)
                    } else {
                        c >> 1
                    }
                })
            })
            .collect();
        for &b in data {
            crc = table[usize::from((crc as u8) ^ b)] ^ (crc >> 8);
        }
        crc
    }

    #[test]
    fn matches_the_byte_at_a_time_crc_at_every_length_and_alignment() {
        // Long enough for the folding (SIMD) path, short ones for its tail and table paths.
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 131 + i / 7) as u8).collect();
        for (start, len) in [(0, 0), (0, 1), (3, 15), (1, 16), (5, 63), (0, 64), (7, 127)]
            .into_iter()
            .chain((0..40).map(|k| (k % 13, 128 + k * 97)))
        {
            let d = &data[start..start + len];
            for seed in [0, !0, LRH_SEED, 0x1234_5678] {
                assert_eq!(
                    crc32_update(seed, d),
                    table_crc32_update(seed, d),
                    "{len} bytes at {start}, seed {seed:#x}"
                );
            }
        }
    }

    #[test]
    fn incremental_equals_whole() {
        let data: Vec<u8> = (0..=255u8).collect();
        let split = crc32_update(crc32_update(!0, &data[..77]), &data[77..]);
        assert_eq!(split, crc32_update(!0, &data));
    }

    /// A minimal IPv4 datagram: IP, UDP, BTH (RC_SEND_ONLY), 4 payload bytes.
    fn v4() -> Vec<u8> {
        let mut d = vec![0u8; IPV4_HLEN + UDP_HLEN + BTH_LEN + 4];
        d[0] = 0x45;
        d[9] = 17;
        d[IPV4_HLEN + 2..IPV4_HLEN + 4].copy_from_slice(&4791u16.to_be_bytes());
        d[IPV4_HLEN + UDP_HLEN] = 0x04;
        d
    }

    #[test]
    fn masked_fields_do_not_change_the_icrc() {
        let base = compute(&v4()).unwrap();
        for at in [1, 8, 10, 11, IPV4_HLEN + 6, IPV4_HLEN + 7, IPV4_HLEN + 12] {
            let mut d = v4();
            d[at] ^= 0x5a;
            assert_eq!(compute(&d).unwrap(), base, "byte {at}");
        }
        for at in [
            2,
            9,
            12,
            19,
            IPV4_HLEN,
            IPV4_HLEN + 8,
            IPV4_HLEN + 13,
            v4().len() - 1,
        ] {
            let mut d = v4();
            d[at] ^= 0x01;
            assert_ne!(compute(&d).unwrap(), base, "byte {at}");
        }
    }

    #[test]
    fn short_or_foreign_input_is_an_error() {
        assert!(matches!(compute(&[]), Err(WireError::Truncated { .. })));
        assert!(matches!(
            compute(&v4()[..39]),
            Err(WireError::Truncated { .. })
        ));
        assert_eq!(compute(&[0x46; 64]), Err(WireError::Ipv4Options(6)));
        assert_eq!(compute(&[0x50; 64]), Err(WireError::IpVersion(5)));
        assert!(matches!(
            check(&[0x45, 0, 0]),
            Err(WireError::Truncated { .. })
        ));
    }

    #[test]
    fn check_accepts_what_compute_appends() {
        let mut d = v4();
        let c = compute(&d).unwrap();
        d.extend_from_slice(&c.to_le_bytes());
        assert_eq!(check(&d), Ok(()));
        let last = d.len() - 1;
        d[last] ^= 0x80;
        assert!(matches!(check(&d), Err(WireError::Icrc { .. })));
    }

    /// A minimal RoCE v1 packet: GRH (IPVer 6, next header BTH), BTH (RC_SEND_ONLY), 4
    /// payload bytes.
    fn grh_packet() -> Vec<u8> {
        let mut d = vec![0u8; GRH_LEN + BTH_LEN + 4];
        d[0] = 0x60;
        d[5] = (BTH_LEN + 4 + ICRC_LEN) as u8;
        d[6] = 0x1b;
        d[GRH_LEN] = 0x04;
        d
    }

    #[test]
    fn grh_masked_fields_do_not_change_the_v1_icrc() {
        let base = compute_grh(&grh_packet()).unwrap();
        for at in [1, 2, 3, 7, GRH_LEN + 4] {
            let mut d = grh_packet();
            d[at] ^= 0x5a;
            assert_eq!(compute_grh(&d).unwrap(), base, "byte {at}");
        }
        let mut d = grh_packet();
        d[0] ^= 0x0f;
        assert_eq!(compute_grh(&d).unwrap(), base, "traffic class high nibble");
        for at in [
            0,
            4,
            5,
            6,
            8,
            23,
            24,
            39,
            GRH_LEN,
            GRH_LEN + 5,
            grh_packet().len() - 1,
        ] {
            let mut d = grh_packet();
            d[at] ^= 0x10;
            assert_ne!(compute_grh(&d).unwrap(), base, "byte {at}");
        }
        assert!(matches!(
            compute_grh(&grh_packet()[..51]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            check_grh(&[0x60, 0, 0]),
            Err(WireError::Truncated { .. })
        ));
        let mut d = grh_packet();
        d.extend_from_slice(&base.to_le_bytes());
        assert_eq!(check_grh(&d), Ok(()));
        d[10] ^= 1;
        assert!(matches!(check_grh(&d), Err(WireError::Icrc { .. })));
    }
}
