use super::*;
use crate::roce::headers::{Aeth, Deth, ImmDt, NakCode, Opcode, Reth, Syndrome};

// Test vectors: frames built by scapy's `contrib.roce` (scapy 2.8.0, Python 3.11), whose
// BTH layer computes the RoCEv2 ICRC itself, independently of this crate. The script
// also recomputes every ICRC the way rxe_icrc.c does (its own masking code, rxe's seed
// 0xDEBB20E3, zlib's CRC-32) and found scapy and rxe agree on all of them. scapy has no
// RETH/DETH/ImmDt layers, so those follow the BTH as raw bytes (the ICRC covers them the
// same way). The UDP checksum is 0 (as rxe sends it) except in V6_UC_SEND_ONLY_PAD1_CSUM,
// where scapy computed it. Produced with
// `pip install --target /tmp/pyscapy scapy; PYTHONPATH=/tmp/pyscapy python3 gen.py`:
//
// # Generates the RoCEv2 test vectors of tools/cx4-model/src/roce/packet.rs with scapy.
// # Run: PYTHONPATH=/tmp/pyscapy python3 gen.py   (scapy 2.8.0, Python 3.11)
// import struct, zlib
// from scapy.all import Ether, Dot1Q, IP, IPv6, UDP, Raw, raw
// from scapy.contrib.roce import BTH, AETH, cnp
// import scapy
//
// MAC_D, MAC_S = "02:00:00:00:00:02", "02:00:00:00:00:01"
// V4S, V4D = "192.168.10.1", "192.168.10.2"
// V6S, V6D = "fd00::1", "fd00::2"
//
// def reth(va, rkey, ln): return struct.pack(">QII", va, rkey, ln)
// def deth(qkey, sqp): return struct.pack(">II", qkey, sqp & 0xffffff)
// def imm(v): return struct.pack(">I", v)
// def pay(n, seed): return bytes((seed + 7 * i) & 0xff for i in range(n))
// def padded(p): return p + b"\0" * ((-len(p)) & 3)
//
// vectors = {
//   # IPv4, RC SEND_ONLY, 5-byte payload (pad 3), DSCP 26 + ECT(0), UDP checksum 0 (as rxe)
//   "V4_SEND_ONLY_PAD3": Ether(dst=MAC_D, src=MAC_S) /
//       IP(src=V4S, dst=V4D, tos=(26 << 2) | 2, ttl=64, id=0x1234, flags="DF") /
//       UDP(sport=0xc0de, dport=4791, chksum=0) /
//       BTH(opcode=0x04, solicited=1, padcount=3, pkey=0xffff, dqpn=0x000011, ackreq=1, psn=0x123456) /
//       Raw(padded(pay(5, 1))),
//   # IPv4 in a VLAN (PCP 3, VID 100), RC RDMA_WRITE_ONLY + RETH, 16-byte payload (pad 0), CE, FECN
//   "V4_VLAN_WRITE_ONLY_CE": Ether(dst=MAC_D, src=MAC_S) / Dot1Q(prio=3, vlan=100) /
//       IP(src=V4S, dst=V4D, tos=(24 << 2) | 3, ttl=63, id=0x0001, flags="DF") /
//       UDP(sport=49153, dport=4791, chksum=0) /
//       BTH(opcode=0x0a, padcount=0, pkey=0x8001, fecn=1, dqpn=0xabcdef, ackreq=1, psn=0xffffff) /
//       Raw(reth(0x00007f1234567000, 0x1234abcd, 16) + pay(16, 2)),
//   # IPv4, RC ACKNOWLEDGE + AETH (ACK, credits 0x1f, MSN 7), no payload
//   "V4_ACK": Ether(dst=MAC_D, src=MAC_S) /
//       IP(src=V4D, dst=V4S, tos=0, ttl=64, id=0xbeef, flags="DF") /
//       UDP(sport=0xc0df, dport=4791, chksum=0) /
//       BTH(opcode=0x11, pkey=0xffff, dqpn=0x000012, psn=0x123456) /
//       AETH(syndrome=0x1f, msn=7),
//   # IPv4, RC ACKNOWLEDGE + AETH NAK (PSN sequence error), ECT(0)
//   "V4_NAK_SEQ": Ether(dst=MAC_D, src=MAC_S) /
//       IP(src=V4D, dst=V4S, tos=2, ttl=64, id=0xbef0, flags="DF") /
//       UDP(sport=0xc0df, dport=4791, chksum=0) /
//       BTH(opcode=0x11, pkey=0xffff, dqpn=0x000012, psn=0x000100) /
//       AETH(syndrome=0x60, msn=0x00abcd),
//   # IPv4, UD SEND_ONLY_WITH_IMMEDIATE + DETH + ImmDt, 13-byte payload (pad 3)
//   "V4_UD_SEND_IMM_PAD3": Ether(dst=MAC_D, src=MAC_S) /
//       IP(src=V4S, dst=V4D, tos=(46 << 2) | 1, ttl=1, id=0x0000, flags="DF") /
//       UDP(sport=0xd000, dport=4791, chksum=0) /
//       BTH(opcode=0x65, solicited=1, padcount=3, pkey=0xffff, dqpn=0x000001, psn=0x000002) /
//       Raw(deth(0x80010000, 0x000123) + imm(0xdeadbeef) + padded(pay(13, 3))),
//   # IPv4 CNP (scapy's cnp(): BECN set, 16 reserved bytes)
//   "V4_CNP": Ether(dst=MAC_D, src=MAC_S) /
//       IP(src=V4D, dst=V4S, tos=(48 << 2), ttl=64, id=0x0042, flags="DF") /
//       UDP(sport=0xc0e0, dport=4791, chksum=0) / cnp(0x000011),
//   # IPv6, RC SEND_ONLY, 6-byte payload (pad 2), ECT(0), flow label, UDP checksum 0 (as rxe)
//   "V6_SEND_ONLY_PAD2": Ether(dst=MAC_D, src=MAC_S) /
//       IPv6(src=V6S, dst=V6D, tc=(26 << 2) | 2, fl=0x12345, hlim=64) /
//       UDP(sport=0xc0de, dport=4791, chksum=0) /
//       BTH(opcode=0x04, padcount=2, pkey=0xffff, dqpn=0x000011, ackreq=1, psn=0x000001) /
//       Raw(padded(pay(6, 4))),
//   # IPv6, UC SEND_ONLY, 7-byte payload (pad 1), BECN, UDP checksum computed by scapy
//   "V6_UC_SEND_ONLY_PAD1_CSUM": Ether(dst=MAC_D, src=MAC_S) /
//       IPv6(src=V6S, dst=V6D, tc=3, fl=0, hlim=255) /
//       UDP(sport=0xc0de, dport=4791) /
//       BTH(opcode=0x24, padcount=1, pkey=0x7fff, becn=1, dqpn=0x000abc, psn=0x000fff) /
//       Raw(padded(pay(7, 5))),
//   # IPv6 in a VLAN (PCP 5, VID 7), RC RDMA_READ_RESPONSE_ONLY + AETH, 8-byte payload (pad 0)
//   "V6_VLAN_READ_RESP_ONLY": Ether(dst=MAC_D, src=MAC_S) / Dot1Q(prio=5, vlan=7) /
//       IPv6(src=V6D, dst=V6S, tc=(26 << 2), fl=0xfffff, hlim=2) /
//       UDP(sport=0xffff, dport=4791, chksum=0) /
//       BTH(opcode=0x10, pkey=0xffff, dqpn=0x000013, psn=0x00aaaa) /
//       AETH(syndrome=0x00, msn=0x000009) / Raw(pay(8, 6)),
// }
//
// def rxe_icrc(frame, l3_off):
//     """The ICRC as rxe_icrc.c computes it (independent of scapy's masking code)."""
//     d = bytearray(frame[l3_off:])
//     if d[0] >> 4 == 4:
//         hl = 20
//         d[1] = 0xff; d[8] = 0xff; d[10:12] = b"\xff\xff"
//     else:
//         hl = 40
//         d[0] |= 0x0f; d[1:4] = b"\xff\xff\xff"; d[7] = 0xff
//     d[hl + 6:hl + 8] = b"\xff\xff"
//     d[hl + 8 + 4] = 0xff
//     crc = 0xdebb20e3  # crc32_le(~0, 8 x 0xff), no final inversion
//     # kernel crc32_le has no pre/post inversion; zlib's does: raw(c, x) = ~zlib.crc32(x, ~c)
//     raw_crc = (~zlib.crc32(bytes(d[:-4]), (~crc) & 0xffffffff)) & 0xffffffff
//     return struct.pack("<I", (~raw_crc) & 0xffffffff)
//
// print("// scapy", scapy.VERSION)
// for name, p in vectors.items():
//     b = raw(p)
//     l3 = 18 if b[12:14] == b"\x81\x00" else 14
//     ok = rxe_icrc(b, l3) == b[-4:]
//     print(f"// {name}: {len(b)} bytes, ICRC {b[-4:].hex()} rxe-recomputed {'agrees' if ok else 'DISAGREES: ' + rxe_icrc(b, l3).hex()}")
//     print(f"const {name}: &[u8] = &[")
//     for i in range(0, len(b), 16):
//         print("    " + ", ".join(f"0x{x:02x}" for x in b[i:i + 16]) + ",")
//     print("];")
// scapy 2.8.0
// V4_SEND_ONLY_PAD3: 66 bytes, ICRC 3a49e688 rxe-recomputed agrees
const V4_SEND_ONLY_PAD3: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x6a,
    0x00, 0x34, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x92, 0xc7, 0xc0, 0xa8, 0x0a, 0x01, 0xc0, 0xa8,
    0x0a, 0x02, 0xc0, 0xde, 0x12, 0xb7, 0x00, 0x20, 0x00, 0x00, 0x04, 0xb0, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x11, 0x80, 0x12, 0x34, 0x56, 0x01, 0x08, 0x0f, 0x16, 0x1d, 0x00, 0x00, 0x00, 0x3a, 0x49,
    0xe6, 0x88,
];
// V4_VLAN_WRITE_ONLY_CE: 94 bytes, ICRC 10efa710 rxe-recomputed agrees
const V4_VLAN_WRITE_ONLY_CE: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x81, 0x00, 0x60, 0x64,
    0x08, 0x00, 0x45, 0x63, 0x00, 0x4c, 0x00, 0x01, 0x40, 0x00, 0x3f, 0x11, 0xa5, 0xe9, 0xc0, 0xa8,
    0x0a, 0x01, 0xc0, 0xa8, 0x0a, 0x02, 0xc0, 0x01, 0x12, 0xb7, 0x00, 0x38, 0x00, 0x00, 0x0a, 0x00,
    0x80, 0x01, 0x80, 0xab, 0xcd, 0xef, 0x80, 0xff, 0xff, 0xff, 0x00, 0x00, 0x7f, 0x12, 0x34, 0x56,
    0x70, 0x00, 0x12, 0x34, 0xab, 0xcd, 0x00, 0x00, 0x00, 0x10, 0x02, 0x09, 0x10, 0x17, 0x1e, 0x25,
    0x2c, 0x33, 0x3a, 0x41, 0x48, 0x4f, 0x56, 0x5d, 0x64, 0x6b, 0x10, 0xef, 0xa7, 0x10,
];
// V4_ACK: 62 bytes, ICRC e8bc7845 rxe-recomputed agrees
const V4_ACK: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x00,
    0x00, 0x30, 0xbe, 0xef, 0x40, 0x00, 0x40, 0x11, 0xe6, 0x79, 0xc0, 0xa8, 0x0a, 0x02, 0xc0, 0xa8,
    0x0a, 0x01, 0xc0, 0xdf, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x12, 0x00, 0x12, 0x34, 0x56, 0x1f, 0x00, 0x00, 0x07, 0xe8, 0xbc, 0x78, 0x45,
];
// V4_NAK_SEQ: 62 bytes, ICRC bfaf604b rxe-recomputed agrees
const V4_NAK_SEQ: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x02,
    0x00, 0x30, 0xbe, 0xf0, 0x40, 0x00, 0x40, 0x11, 0xe6, 0x76, 0xc0, 0xa8, 0x0a, 0x02, 0xc0, 0xa8,
    0x0a, 0x01, 0xc0, 0xdf, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x12, 0x00, 0x00, 0x01, 0x00, 0x60, 0x00, 0xab, 0xcd, 0xbf, 0xaf, 0x60, 0x4b,
];
// V4_UD_SEND_IMM_PAD3: 86 bytes, ICRC b7dd9030 rxe-recomputed agrees
const V4_UD_SEND_IMM_PAD3: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0xb9,
    0x00, 0x48, 0x00, 0x00, 0x40, 0x00, 0x01, 0x11, 0xe3, 0x98, 0xc0, 0xa8, 0x0a, 0x01, 0xc0, 0xa8,
    0x0a, 0x02, 0xd0, 0x00, 0x12, 0xb7, 0x00, 0x34, 0x00, 0x00, 0x65, 0xb0, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x23, 0xde, 0xad,
    0xbe, 0xef, 0x03, 0x0a, 0x11, 0x18, 0x1f, 0x26, 0x2d, 0x34, 0x3b, 0x42, 0x49, 0x50, 0x57, 0x00,
    0x00, 0x00, 0xb7, 0xdd, 0x90, 0x30,
];
// V4_CNP: 74 bytes, ICRC e6a6df71 rxe-recomputed agrees
const V4_CNP: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0xc0,
    0x00, 0x3c, 0x00, 0x42, 0x40, 0x00, 0x40, 0x11, 0xa4, 0x5b, 0xc0, 0xa8, 0x0a, 0x02, 0xc0, 0xa8,
    0x0a, 0x01, 0xc0, 0xe0, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff, 0xff, 0x40, 0x00,
    0x00, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe6, 0xa6, 0xdf, 0x71,
];
// V6_SEND_ONLY_PAD2: 86 bytes, ICRC 19a04977 rxe-recomputed agrees
const V6_SEND_ONLY_PAD2: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd, 0x66, 0xa1,
    0x23, 0x45, 0x00, 0x20, 0x11, 0x40, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc0, 0xde, 0x12, 0xb7, 0x00, 0x20, 0x00, 0x00, 0x04, 0x20,
    0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x00, 0x01, 0x04, 0x0b, 0x12, 0x19, 0x20, 0x27,
    0x00, 0x00, 0x19, 0xa0, 0x49, 0x77,
];
// V6_UC_SEND_ONLY_PAD1_CSUM: 86 bytes, ICRC bf2ce29b rxe-recomputed agrees
const V6_UC_SEND_ONLY_PAD1_CSUM: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd, 0x60, 0x30,
    0x00, 0x00, 0x00, 0x20, 0x11, 0xff, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc0, 0xde, 0x12, 0xb7, 0x00, 0x20, 0x29, 0x32, 0x24, 0x10,
    0x7f, 0xff, 0x40, 0x00, 0x0a, 0xbc, 0x00, 0x00, 0x0f, 0xff, 0x05, 0x0c, 0x13, 0x1a, 0x21, 0x28,
    0x2f, 0x00, 0xbf, 0x2c, 0xe2, 0x9b,
];
// V6_VLAN_READ_RESP_ONLY: 94 bytes, ICRC fa1c5abd rxe-recomputed agrees
const V6_VLAN_READ_RESP_ONLY: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x81, 0x00, 0xa0, 0x07,
    0x86, 0xdd, 0x66, 0x8f, 0xff, 0xff, 0x00, 0x24, 0x11, 0x02, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0xff, 0x12, 0xb7, 0x00, 0x24,
    0x00, 0x00, 0x10, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x13, 0x00, 0x00, 0xaa, 0xaa, 0x00, 0x00,
    0x00, 0x09, 0x06, 0x0d, 0x14, 0x1b, 0x22, 0x29, 0x30, 0x37, 0xfa, 0x1c, 0x5a, 0xbd,
];
const ALL: [&[u8]; 9] = [
    V4_SEND_ONLY_PAD3,
    V4_VLAN_WRITE_ONLY_CE,
    V4_ACK,
    V4_NAK_SEQ,
    V4_UD_SEND_IMM_PAD3,
    V4_CNP,
    V6_SEND_ONLY_PAD2,
    V6_UC_SEND_ONLY_PAD1_CSUM,
    V6_VLAN_READ_RESP_ONLY,
];

const MAC_D: [u8; 6] = [2, 0, 0, 0, 0, 2];
const MAC_S: [u8; 6] = [2, 0, 0, 0, 0, 1];
const V4S: [u8; 4] = [192, 168, 10, 1];
const V4D: [u8; 4] = [192, 168, 10, 2];
const V6S: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6D: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// The script's `pay(n, seed)`.
fn pay(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| ((seed + 7 * i) & 0xff) as u8).collect()
}

fn eth(vlan_tci: Option<u16>) -> Ethernet {
    Ethernet {
        dst: MAC_D,
        src: MAC_S,
        vlan_tci,
    }
}

fn v4(src: [u8; 4], dst: [u8; 4], dscp: u8, ecn: Ecn, ttl: u8, id: u16) -> Ip {
    Ip::V4(Ipv4 {
        src,
        dst,
        dscp,
        ecn,
        ttl,
        id,
        dont_fragment: true,
    })
}

fn v6(src: [u8; 16], dst: [u8; 16], dscp: u8, ecn: Ecn, flow_label: u32, hop: u8) -> Ip {
    Ip::V6(Ipv6 {
        src,
        dst,
        dscp,
        ecn,
        flow_label,
        hop_limit: hop,
    })
}

/// The packets of the script, written out by hand from its parameters (not from the
/// bytes), with the payloads they carry.
fn expected() -> Vec<(&'static [u8], Packet<'static>)> {
    let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
    let none = ExtHeaders::default();
    vec![
        (
            V4_SEND_ONLY_PAD3,
            Packet {
                eth: eth(None),
                ip: v4(V4S, V4D, 26, Ecn::Ect0, 64, 0x1234),
                src_port: 0xc0de,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth {
                    solicited: true,
                    pad: 3,
                    ack_req: true,
                    ..Bth::new(Opcode::RcSendOnly, 0x11, 0x12_3456)
                },
                ext: none,
                payload: leak(pay(5, 1)),
            },
        ),
        (
            V4_VLAN_WRITE_ONLY_CE,
            Packet {
                eth: eth(Some(3 << 13 | 100)),
                ip: v4(V4S, V4D, 24, Ecn::Ce, 63, 1),
                src_port: 49153,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth {
                    pkey: 0x8001,
                    fecn: true,
                    ack_req: true,
                    ..Bth::new(Opcode::RcRdmaWriteOnly, 0xab_cdef, 0xff_ffff)
                },
                ext: ExtHeaders {
                    reth: Some(Reth {
                        va: 0x7f12_3456_7000,
                        rkey: 0x1234_abcd,
                        dma_len: 16,
                    }),
                    ..none
                },
                payload: leak(pay(16, 2)),
            },
        ),
        (
            V4_ACK,
            Packet {
                eth: eth(None),
                ip: v4(V4D, V4S, 0, Ecn::NotEct, 64, 0xbeef),
                src_port: 0xc0df,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth::new(Opcode::RcAcknowledge, 0x12, 0x12_3456),
                ext: ExtHeaders {
                    aeth: Some(Aeth {
                        syndrome: Syndrome::Ack { credits: 0x1f },
                        msn: 7,
                    }),
                    ..none
                },
                payload: &[],
            },
        ),
        (
            V4_NAK_SEQ,
            Packet {
                eth: eth(None),
                ip: v4(V4D, V4S, 0, Ecn::Ect0, 64, 0xbef0),
                src_port: 0xc0df,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth::new(Opcode::RcAcknowledge, 0x12, 0x100),
                ext: ExtHeaders {
                    aeth: Some(Aeth {
                        syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                        msn: 0xabcd,
                    }),
                    ..none
                },
                payload: &[],
            },
        ),
        (
            V4_UD_SEND_IMM_PAD3,
            Packet {
                eth: eth(None),
                ip: v4(V4S, V4D, 46, Ecn::Ect1, 1, 0),
                src_port: 0xd000,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth {
                    solicited: true,
                    pad: 3,
                    ..Bth::new(Opcode::UdSendOnlyWithImmediate, 1, 2)
                },
                ext: ExtHeaders {
                    deth: Some(Deth {
                        qkey: 0x8001_0000,
                        src_qp: 0x123,
                    }),
                    imm: Some(ImmDt { imm: 0xdead_beef }),
                    ..none
                },
                payload: leak(pay(13, 3)),
            },
        ),
        (
            V4_CNP,
            Packet {
                eth: eth(None),
                ip: v4(V4D, V4S, 48, Ecn::NotEct, 64, 0x42),
                src_port: 0xc0e0,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth {
                    becn: true,
                    ..Bth::new(Opcode::Cnp, 0x11, 0)
                },
                ext: none,
                payload: &[],
            },
        ),
        (
            V6_SEND_ONLY_PAD2,
            Packet {
                eth: eth(None),
                ip: v6(V6S, V6D, 26, Ecn::Ect0, 0x12345, 64),
                src_port: 0xc0de,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth {
                    pad: 2,
                    ack_req: true,
                    ..Bth::new(Opcode::RcSendOnly, 0x11, 1)
                },
                ext: none,
                payload: leak(pay(6, 4)),
            },
        ),
        (
            V6_UC_SEND_ONLY_PAD1_CSUM,
            Packet {
                eth: eth(None),
                ip: v6(V6S, V6D, 0, Ecn::Ce, 0, 255),
                src_port: 0xc0de,
                udp_checksum: UdpChecksum::Compute,
                bth: Bth {
                    pad: 1,
                    pkey: 0x7fff,
                    becn: true,
                    ..Bth::new(Opcode::UcSendOnly, 0xabc, 0xfff)
                },
                ext: none,
                payload: leak(pay(7, 5)),
            },
        ),
        (
            V6_VLAN_READ_RESP_ONLY,
            Packet {
                eth: eth(Some(5 << 13 | 7)),
                ip: v6(V6D, V6S, 26, Ecn::NotEct, 0xf_ffff, 2),
                src_port: 0xffff,
                udp_checksum: UdpChecksum::Zero,
                bth: Bth::new(Opcode::RcRdmaReadResponseOnly, 0x13, 0xaaaa),
                ext: ExtHeaders {
                    aeth: Some(Aeth {
                        syndrome: Syndrome::Ack { credits: 0 },
                        msn: 9,
                    }),
                    ..none
                },
                payload: leak(pay(8, 6)),
            },
        ),
    ]
}

#[test]
fn scapy_vectors_parse_and_build_byte_identical() {
    let all = expected();
    assert_eq!(all.len(), ALL.len());
    for (i, (bytes, want)) in all.iter().enumerate() {
        assert_eq!(parse(bytes).as_ref(), Ok(want), "vector {i}");
        assert_eq!(build(want).as_deref(), Ok(*bytes), "vector {i}");
    }
}

/// A frame built for the card's internal loopback is the wire frame but for its ICRC, left
/// zero (and a computed UDP checksum, which covers it); only the loopback's parser takes it,
/// and it reads the same packet.
#[test]
fn looped_back_frames_differ_only_by_their_absent_icrc() {
    for (i, (bytes, want)) in expected().iter().enumerate() {
        let looped = build_with(want, want.payload.len(), true, |d| {
            d.copy_from_slice(want.payload)
        })
        .unwrap();
        let n = looped.len();
        if want.udp_checksum == UdpChecksum::Zero {
            assert_eq!(
                looped[..n - 4],
                bytes[..n - 4],
                "vector {i}: headers and payload"
            );
        }
        assert_eq!(looped[n - 4..], [0; 4], "vector {i}: no ICRC");
        assert_ne!(bytes[n - 4..], [0; 4], "vector {i}: the wire frame has one");
        assert_eq!(parse_looped(&looped).as_ref(), Ok(want), "vector {i}");
        assert_eq!(parse_looped(bytes).as_ref(), Ok(want), "vector {i}");
        assert!(
            parse(&looped).is_err(),
            "vector {i}: the wire parser checks the ICRC"
        );
    }
}

/// Offset of the IP header and length of the IP datagram of a (valid) frame.
fn datagram_span(frame: &[u8]) -> std::ops::Range<usize> {
    let l3 = if frame[12..14] == [0x81, 0x00] {
        18
    } else {
        14
    };
    let len = if frame[l3] >> 4 == 4 {
        usize::from(u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]))
    } else {
        40 + usize::from(u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]))
    };
    l3..l3 + len
}

/// Offsets (in the datagram) the ICRC does not cover.
fn masked(datagram: &[u8]) -> Vec<usize> {
    let (ip, mut m) = if datagram[0] >> 4 == 4 {
        (20, vec![1, 8, 10, 11])
    } else {
        (40, vec![1, 2, 3, 7]) // byte 0's low nibble too, checked separately
    };
    m.extend([ip + 6, ip + 7, ip + 8 + 4]);
    m
}

#[test]
fn any_flip_outside_the_masked_fields_breaks_the_icrc() {
    for (i, v) in ALL.iter().enumerate() {
        let span = datagram_span(v);
        let ip_hlen = if v[span.start] >> 4 == 4 { 20 } else { 40 };
        let skip = masked(&v[span.clone()]);
        for at in 0..span.len() {
            for bit in [0x01u8, 0x80, 0xff] {
                let mut f = v.to_vec();
                f[span.start + at] ^= bit;
                let d = &f[span.clone()];
                let low_tc = ip_hlen == 40 && at == 0 && bit & 0xf0 == 0;
                if skip.contains(&at) || low_tc {
                    assert_eq!(icrc::check(d), Ok(()), "vector {i} byte {at} ^{bit:#x}");
                    continue;
                }
                assert!(icrc::check(d).is_err(), "vector {i} byte {at} ^{bit:#x}");
                let r = parse(&f);
                assert!(r.is_err(), "vector {i} byte {at} ^{bit:#x}: {r:?}");
                // Past the UDP header (checksum 0 or right), only the ICRC can tell.
                if at >= ip_hlen + 8 && f[span.start + ip_hlen + 6..][..2] == [0, 0] {
                    assert!(
                        matches!(r, Err(WireError::Icrc { .. })),
                        "vector {i} byte {at}: {r:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn ecn_marking_keeps_the_icrc() {
    for (bytes, want) in expected() {
        for ecn in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            let mut f = bytes.to_vec();
            set_ecn(&mut f, ecn).unwrap();
            let mut p = want;
            p.ip.set_ecn(ecn);
            assert_eq!(parse(&f), Ok(p));
            assert_eq!(build(&p).unwrap(), f);
        }
    }
    assert!(set_ecn(&mut [0u8; 13], Ecn::Ce).is_err());
    assert_eq!(
        set_ecn(&mut [0u8; 20], Ecn::Ce),
        Err(WireError::EtherType(0))
    );
}

#[test]
fn ethernet_padding_is_ignored() {
    for (bytes, want) in expected() {
        let mut f = bytes.to_vec();
        f.extend_from_slice(&[0u8; 17]);
        assert_eq!(parse(&f), Ok(want));
    }
}

#[test]
fn every_truncation_is_an_error() {
    for v in ALL {
        for cut in 0..v.len() {
            assert!(parse(&v[..cut]).is_err(), "cut at {cut}");
        }
    }
}

/// Recomputes the IPv4 header checksum and the ICRC of a mutated frame (keeping a zero
/// UDP checksum), so a test reaches the check it aims at.
fn reseal(f: &mut [u8]) {
    let span = datagram_span(f);
    let l3 = span.start;
    if f[l3] >> 4 == 4 {
        f[l3 + 10] = 0;
        f[l3 + 11] = 0;
        let c = csum::checksum(&f[l3..l3 + 20]);
        f[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
    }
    let end = span.end.min(f.len());
    if let Ok(c) = icrc::compute(&f[l3..end - 4]) {
        f[end - 4..end].copy_from_slice(&c.to_le_bytes());
    }
}

/// `V4_SEND_ONLY_PAD3` with `edit` applied, resealed.
fn edited(edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut f = V4_SEND_ONLY_PAD3.to_vec();
    edit(&mut f);
    reseal(&mut f);
    f
}

#[test]
fn specific_errors() {
    // V4_SEND_ONLY_PAD3 layout: IP at 14, UDP at 34, BTH at 42, payload at 54, ICRC at 62.
    assert_eq!(
        parse(&edited(|f| f[13] = 0x06)),
        Err(WireError::EtherType(0x0806))
    );
    assert_eq!(
        parse(&edited(|f| f[14] = 0x65)),
        Err(WireError::IpVersion(6))
    );
    assert_eq!(
        parse(&edited(|f| f[14] = 0x46)),
        Err(WireError::Ipv4Options(6))
    );
    assert_eq!(parse(&edited(|f| f[20] = 0x20)), Err(WireError::Fragment));
    assert_eq!(parse(&edited(|f| f[21] = 0x01)), Err(WireError::Fragment));
    assert_eq!(parse(&edited(|f| f[23] = 6)), Err(WireError::NotUdp(6)));
    assert_eq!(
        parse(&edited(|f| f[17] += 1)),
        Err(WireError::IpLength {
            claimed: 0x35,
            available: 0x34
        })
    );
    assert_eq!(
        parse(&edited(|f| f[39] -= 4)),
        Err(WireError::UdpLength {
            udp: 0x1c,
            ip: 0x20
        })
    );
    assert_eq!(
        parse(&edited(|f| f[37] = 0xb6)),
        Err(WireError::UdpPort(4790))
    );
    assert!(matches!(
        parse(&edited(|f| f[41] = 1)),
        Err(WireError::UdpChecksum { found: 1, .. })
    ));
    let mut bad_csum = V4_SEND_ONLY_PAD3.to_vec();
    bad_csum[24] ^= 1;
    assert!(matches!(
        parse(&bad_csum),
        Err(WireError::Ipv4Checksum {
            found: 0x93c7,
            expected: 0x92c7
        })
    ));
    let mut bad_icrc = V4_SEND_ONLY_PAD3.to_vec();
    bad_icrc[65] ^= 0x80;
    assert_eq!(
        parse(&bad_icrc),
        Err(WireError::Icrc {
            found: 0x08e6_493a,
            expected: 0x88e6_493a
        })
    );
    assert_eq!(
        parse(&edited(|f| f[42] = 0x15)),
        Err(WireError::UnknownOpcode(0x15))
    );
    assert_eq!(
        parse(&edited(|f| f[43] |= 1)),
        Err(WireError::TransportVersion(1))
    );
    // Pad count 3 on 8 bytes of payload and pad: alignment holds, pad fits.
    for pad in [0u8, 1, 2] {
        assert_eq!(
            parse(&edited(|f| f[43] = (f[43] & !0x30) | pad << 4)).map(|p| p.payload.len()),
            Ok(8 - usize::from(pad))
        );
    }
    // An ACK with payload or a pad count.
    let mut ack = V4_ACK.to_vec();
    ack[43] |= 0x10;
    reseal(&mut ack);
    assert_eq!(parse(&ack), Err(WireError::PadCount { pad: 1, len: 0 }));
    // A COMPARE_SWAP whose AtomicETH runs into the ICRC.
    assert_eq!(
        parse(&edited(|f| f[42] = 0x13)),
        Err(WireError::Truncated {
            what: "AtomicETH",
            need: 28,
            have: 8
        })
    );
    // A reserved AETH syndrome.
    let mut rsvd = V4_ACK.to_vec();
    rsvd[54] = 0x40;
    reseal(&mut rsvd);
    assert_eq!(parse(&rsvd), Err(WireError::AethSyndrome(0x40)));
    let mut long_ack = V4_ACK.to_vec();
    long_ack.splice(58..58, [0u8; 4]);
    long_ack[17] += 4;
    long_ack[39] += 4;
    reseal(&mut long_ack);
    assert_eq!(
        parse(&long_ack),
        Err(WireError::UnexpectedPayload {
            opcode: 0x11,
            len: 4
        })
    );
    // Payload and pad not a multiple of 4.
    let mut odd = V4_SEND_ONLY_PAD3.to_vec();
    odd.insert(58, 0);
    odd[17] += 1;
    odd[39] += 1;
    reseal(&mut odd);
    assert_eq!(parse(&odd), Err(WireError::PadCount { pad: 3, len: 9 }));
    // A UDP datagram too short for a BTH and an ICRC.
    let mut tiny = V4_SEND_ONLY_PAD3[..34 + 8 + 12].to_vec();
    tiny[17] = 40;
    tiny[39] = 20;
    reseal(&mut tiny);
    assert!(matches!(
        parse(&tiny),
        Err(WireError::Truncated {
            what: "BTH and ICRC",
            ..
        })
    ));
}

#[test]
fn udp_checksum_is_checked_when_present() {
    let mut f = V6_UC_SEND_ONLY_PAD1_CSUM.to_vec();
    f[14 + 40 + 6] ^= 0x01;
    assert!(matches!(parse(&f), Err(WireError::UdpChecksum { .. })));
    // Zeroing it is allowed, over IPv6 too (as rxe sends it).
    f[14 + 40 + 6] = 0;
    f[14 + 40 + 7] = 0;
    assert_eq!(parse(&f).map(|p| p.udp_checksum), Ok(UdpChecksum::Zero));
    // The IPv4 vectors with a computed checksum parse as `Compute` and round-trip.
    let (_, mut p) = expected()[0];
    p.udp_checksum = UdpChecksum::Compute;
    let f = build(&p).unwrap();
    assert_ne!(f[40..42], [0, 0]);
    assert_eq!(parse(&f), Ok(p));
}

#[test]
fn build_errors() {
    let (_, ack) = expected()[2];
    let with_payload = Packet {
        payload: &[1, 2, 3, 4],
        ..ack
    };
    assert_eq!(
        build(&with_payload),
        Err(WireError::UnexpectedPayload {
            opcode: 0x11,
            len: 4
        })
    );
    let no_aeth = Packet {
        ext: ExtHeaders::default(),
        ..ack
    };
    assert_eq!(build(&no_aeth), Err(WireError::MissingHeader("AETH")));
    let (_, send) = expected()[6];
    let mut bad_flow = send;
    if let Ip::V6(h) = &mut bad_flow.ip {
        h.flow_label = 1 << 20;
    }
    assert!(matches!(
        build(&bad_flow),
        Err(WireError::FieldRange { .. })
    ));
    let mut bad_dscp = send;
    if let Ip::V6(h) = &mut bad_dscp.ip {
        h.dscp = 64;
    }
    assert!(matches!(
        build(&bad_dscp),
        Err(WireError::FieldRange { .. })
    ));
    let big = vec![0u8; 65536];
    let too_long = Packet {
        payload: &big,
        ..send
    };
    assert!(matches!(build(&too_long), Err(WireError::TooLong(_))));
    // The largest aligned payload that an IPv6 payload length holds.
    let max = vec![0u8; 65535 - 8 - 12 - 4 - 3];
    let fits = Packet {
        payload: &max,
        ..send
    };
    let f = build(&fits).unwrap();
    assert_eq!(parse(&f).map(|p| p.payload.len()), Ok(max.len()));
}

/// Sample extension headers for `op`.
fn ext_for(op: Opcode) -> ExtHeaders {
    use crate::roce::headers::{AtomicAckEth, AtomicEth, Ext, Ieth};
    let mut e = ExtHeaders::default();
    for &k in op.info().headers {
        match k {
            Ext::Deth => e.deth = Some(Deth { qkey: 7, src_qp: 9 }),
            Ext::Reth => {
                e.reth = Some(Reth {
                    va: 0x1000,
                    rkey: 0x55,
                    dma_len: 3,
                })
            }
            Ext::AtomicEth => {
                e.atomic = Some(AtomicEth {
                    va: 8,
                    rkey: 1,
                    swap_add: 2,
                    compare: 3,
                })
            }
            Ext::Aeth => {
                e.aeth = Some(Aeth {
                    syndrome: Syndrome::RnrNak { timer: 31 },
                    msn: 5,
                })
            }
            Ext::AtomicAckEth => e.atomic_ack = Some(AtomicAckEth { orig: 0xabc }),
            Ext::ImmDt => e.imm = Some(ImmDt { imm: 0x0102_0304 }),
            Ext::Ieth => e.ieth = Some(Ieth { rkey: 0x77 }),
            Ext::Xrceth => e.xrc = Some(crate::roce::headers::Xrceth { srqn: 0x42 }),
            Ext::Dceth => {
                e.dc = Some(crate::roce::headers::Dceth {
                    key: 0x0102_0304_0506_0708,
                    dci: 0x12_3456,
                    conn_psn: 0xab_cdef,
                })
            }
            Ext::CnpReserved => {}
        }
    }
    e
}

#[test]
fn every_opcode_round_trips_as_a_frame() {
    let data = pay(9, 11);
    for &op in Opcode::ALL {
        let lens: &[usize] = if op.info().payload {
            &[0, 1, 2, 3, 4, 9]
        } else {
            &[0]
        };
        for &len in lens {
            for (ip, vlan) in [
                (v4(V4S, V4D, 3, Ecn::Ect0, 9, 77), None),
                (v6(V6S, V6D, 63, Ecn::Ce, 0xabcde, 1), Some(0xe001)),
            ] {
                for udp_checksum in [UdpChecksum::Zero, UdpChecksum::Compute] {
                    let p = Packet {
                        eth: eth(vlan),
                        ip,
                        src_port: 0x1234,
                        udp_checksum,
                        bth: Bth {
                            pad: pad_for(len),
                            ..Bth::new(op, 0x42, 0x99)
                        },
                        ext: ext_for(op),
                        payload: &data[..len],
                    };
                    let f = build(&p).unwrap();
                    assert_eq!(parse(&f), Ok(p), "{} len {len}", op.name());
                }
            }
        }
    }
}

/// xorshift64*: a small deterministic generator for the fuzz test.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What a successful parse must satisfy: rebuilding it parses to the same packet.
fn consistent(f: &[u8]) {
    if let Ok(p) = parse(f) {
        let again = build(&p).expect("a parsed packet builds");
        assert_eq!(parse(&again), Ok(p));
    }
}

#[test]
fn fuzz_parse_never_panics() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Random bytes, sometimes behind a plausible Ethernet/IP/UDP prefix.
    for _ in 0..20_000 {
        let len = rng.below(160);
        let mut f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if len > 60 && rng.below(2) == 0 {
            let v = ALL[rng.below(ALL.len())];
            let keep = rng.below(v.len().min(len));
            f[..keep].copy_from_slice(&v[..keep]);
        }
        consistent(&f);
    }
    // Mutations of valid frames: byte changes, insertions, deletions, truncations, and the
    // same resealed so that they get past the IP checksum and the ICRC.
    let mut accepted = 0;
    for round in 0..40_000 {
        let mut f = ALL[round % ALL.len()].to_vec();
        for _ in 0..1 + rng.below(4) {
            if f.is_empty() {
                break;
            }
            match rng.below(6) {
                0 | 1 => {
                    let at = rng.below(f.len());
                    f[at] = rng.next() as u8;
                }
                2 => {
                    let at = rng.below(f.len());
                    f[at] ^= 1 << rng.below(8);
                }
                3 => {
                    let at = rng.below(f.len() + 1);
                    f.insert(at, rng.next() as u8);
                }
                4 if f.len() > 1 => {
                    let at = rng.below(f.len());
                    f.remove(at);
                }
                _ => f.truncate(rng.below(f.len() + 1)),
            }
        }
        consistent(&f);
        if round % 2 == 0 && f.len() > 14 {
            reseal_loosely(&mut f);
            if parse(&f).is_ok() {
                accepted += 1;
            }
            consistent(&f);
        }
    }
    // The resealed mutations reach the transport checks, and some pass them.
    assert!(accepted > 100, "{accepted}");
}

/// Like [`reseal`], but for arbitrary bytes: does what it can without panicking.
fn reseal_loosely(f: &mut [u8]) {
    let Ok((_, ethertype, l3)) = parse_l2(f) else {
        return;
    };
    let rest = f.len() - l3;
    let total = match ethertype {
        ETHERTYPE_IPV4 if rest >= 20 => {
            let total = usize::from(u16::from_be_bytes([f[l3 + 2], f[l3 + 3]]));
            f[l3 + 10] = 0;
            f[l3 + 11] = 0;
            let c = csum::checksum(&f[l3..l3 + 20]);
            f[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
            total
        }
        ETHERTYPE_IPV6 if rest >= 40 => {
            40 + usize::from(u16::from_be_bytes([f[l3 + 4], f[l3 + 5]]))
        }
        _ => return,
    };
    if total > rest || total < 4 {
        return;
    }
    let end = l3 + total;
    if let Ok(c) = icrc::compute(&f[l3..end - 4]) {
        f[end - 4..end].copy_from_slice(&c.to_le_bytes());
    }
}

// RoCE v1 (EtherType 0x8915, IB GRH). A frame written out byte by byte from its fields:
// RC SEND_ONLY (solicited, ack request), 5 payload bytes and 3 of pad, from the link-local
// EUI-64 GID of MAC_S (fe80::ff:fe00:1) to the IPv4-mapped GID ::ffff:192.168.10.2 (a v1
// GID table holds either kind), traffic class 0xa6, flow label 0x54321, hop limit 64.
const V1_GRH: [u8; 40] = [
    0x6a, 0x65, 0x43, 0x21, // IPVer 6, TClass 0xa6, FlowLabel 0x54321
    0x00, 0x18, 0x1b, 0x40, // PayLen 24 (BTH 12 + 5 + pad 3 + ICRC 4), NxtHdr BTH, HopLmt
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 0x01, // SGID
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 10, 2, // DGID
];
const V1_BTH: [u8; 12] = [
    0x04, 0xb0, 0xff, 0xff, // SEND_ONLY; SE, pad 3, TVer 0; P_Key
    0x00, 0x00, 0x00, 0x11, // resv8a; destination QP 0x11
    0x80, 0x12, 0x34, 0x56, // AckReq; PSN 0x123456
];
const V1_PAYLOAD_AND_PAD: [u8; 8] = [0x01, 0x08, 0x0f, 0x16, 0x1d, 0, 0, 0];
/// What the ICRC covers, masked by hand (IBA 7.8.1 for a packet with a GRH, as the RoCE v1
/// soft-RoCE computed it): 8 bytes of ones for the absent LRH, the GRH with TClass,
/// FlowLabel and HopLmt set to ones, the BTH with resv8a set to ones, the rest.
const V1_MASKED: [u8; 8 + 40 + 12 + 8] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // the LRH that is not there
    0x6f, 0xff, 0xff, 0xff, 0x00, 0x18, 0x1b, 0xff, // GRH: IPVer kept, PayLen, NxtHdr
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 0x01, // SGID
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 10, 2, // DGID
    0x04, 0xb0, 0xff, 0xff, 0xff, 0x00, 0x00, 0x11, 0x80, 0x12, 0x34, 0x56, // BTH
    0x01, 0x08, 0x0f, 0x16, 0x1d, 0, 0, 0, // payload and pad
];
/// Python's `zlib.crc32` of [`V1_MASKED`]: a third, separate implementation.
const V1_ZLIB_CRC: u32 = 0x049c_ed2a;

/// CRC-32 (IEEE 802.3, reflected) one bit at a time, written out from its definition for
/// these tests: nothing shared with `icrc.rs`'s table.
fn bitwise_crc32(data: &[u8]) -> u32 {
    let mut reg = 0xffff_ffffu32;
    for &byte in data {
        reg ^= u32::from(byte);
        for _ in 0..8 {
            let lsb = reg & 1;
            reg >>= 1;
            if lsb == 1 {
                reg ^= 0xedb8_8320;
            }
        }
    }
    !reg
}

/// The v1 frame, Ethernet header from `vlan`, its ICRC from [`bitwise_crc32`].
fn v1_frame(vlan: Option<u16>) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    if let Some(tci) = vlan {
        f.extend([0x81, 0x00]);
        f.extend(tci.to_be_bytes());
    }
    f.extend([0x89, 0x15]);
    f.extend(V1_GRH);
    f.extend(V1_BTH);
    f.extend(V1_PAYLOAD_AND_PAD);
    f.extend(bitwise_crc32(&V1_MASKED).to_le_bytes());
    f
}

fn v1_grh() -> Grh {
    let mut sgid = [0u8; 16];
    sgid[..2].copy_from_slice(&[0xfe, 0x80]);
    sgid[11..].copy_from_slice(&[0xff, 0xfe, 0, 0, 1]);
    let mut dgid = [0u8; 16];
    dgid[10..].copy_from_slice(&[0xff, 0xff, 192, 168, 10, 2]);
    Grh {
        sgid,
        dgid,
        traffic_class: 0xa6,
        flow_label: 0x5_4321,
        hop_limit: 64,
    }
}

fn v1_packet(vlan: Option<u16>) -> Packet<'static> {
    Packet {
        eth: eth(vlan),
        ip: Ip::Grh(v1_grh()),
        src_port: 0,
        udp_checksum: UdpChecksum::Zero,
        bth: Bth {
            solicited: true,
            pad: 3,
            ack_req: true,
            ..Bth::new(Opcode::RcSendOnly, 0x11, 0x12_3456)
        },
        ext: ExtHeaders::default(),
        payload: &[0x01, 0x08, 0x0f, 0x16, 0x1d],
    }
}

#[test]
fn roce_v1_icrc_matches_an_independent_crc_of_the_masked_bytes() {
    assert_eq!(
        bitwise_crc32(b"123456789"),
        0xcbf4_3926,
        "the CRC-32 check value"
    );
    assert_eq!(bitwise_crc32(&V1_MASKED), V1_ZLIB_CRC);
    let f = v1_frame(None);
    let (packet, icrc) = f[14..].split_at(f.len() - 14 - 4);
    assert_eq!(icrc::compute_grh(packet), Ok(V1_ZLIB_CRC));
    assert_eq!(
        icrc,
        &[0x2a, 0xed, 0x9c, 0x04],
        "least significant byte first"
    );
    assert_eq!(icrc::check_grh(&f[14..]), Ok(()));
    // Not the RoCEv2 rule over the same bytes (the GRH would be taken as IPv6 + UDP).
    assert_ne!(icrc::compute(packet), Ok(V1_ZLIB_CRC));
}

#[test]
fn roce_v1_frames_build_and_parse_byte_identical() {
    for vlan in [None, Some(5 << 13 | 7)] {
        let f = v1_frame(vlan);
        let p = v1_packet(vlan);
        assert_eq!(build(&p).as_deref(), Ok(&f[..]), "{vlan:?}");
        assert_eq!(parse(&f), Ok(p), "{vlan:?}");
        // Ethernet padding after the GRH's payload length is ignored.
        let mut padded = f.clone();
        padded.extend([0u8; 11]);
        assert_eq!(parse(&padded), Ok(p));
    }
    // build ignores the UDP fields of a RoCE v1 packet.
    let p = Packet {
        src_port: 0xc0de,
        udp_checksum: UdpChecksum::Compute,
        ..v1_packet(None)
    };
    assert_eq!(build(&p).unwrap(), v1_frame(None));
    // ECN: none in v1.
    assert_eq!(p.ip.ecn(), Ecn::NotEct);
    assert!(p.ip.is_v1());
    assert_eq!(p.ip.traffic_class(), 0xa6);
    assert_eq!(p.ip.dst_gid(), v1_grh().dgid);
    let mut f = v1_frame(None);
    assert_eq!(set_ecn(&mut f, Ecn::Ce), Err(WireError::NoEcn));
    assert_eq!(f, v1_frame(None), "untouched");
}

#[test]
fn roce_v1_masked_fields_only_are_outside_the_icrc() {
    let f = v1_frame(None);
    let masked_byte = |at: usize, bit: u8| {
        // GRH byte 0's low nibble (traffic class high half), bytes 1-3 (traffic class low
        // half and flow label), 7 (hop limit); BTH byte 4 (resv8a).
        (at == 0 && bit & 0xf0 == 0) || matches!(at, 1..=3 | 7) || at == 40 + 4
    };
    for at in 0..f.len() - 14 {
        for bit in [0x01u8, 0x80, 0xff] {
            let mut g = f.clone();
            g[14 + at] ^= bit;
            if masked_byte(at, bit) {
                assert_eq!(icrc::check_grh(&g[14..]), Ok(()), "byte {at} ^{bit:#x}");
                continue;
            }
            assert!(parse(&g).is_err(), "byte {at} ^{bit:#x}");
            if at >= 8 && at < f.len() - 14 - 4 {
                // Past IPVer, PayLen and NxtHdr only the ICRC can tell (a changed BTH
                // byte 4 is masked, the rest decodes or fails on its own after the ICRC).
                assert!(
                    matches!(parse(&g), Err(WireError::Icrc { .. })),
                    "byte {at} ^{bit:#x}: {:?}",
                    parse(&g)
                );
            }
        }
    }
}

/// Reseals a mutated RoCE v1 frame's ICRC (by its own GRH payload length) where it can.
fn reseal_v1(f: &mut [u8]) {
    let Ok((_, ethertype, l3)) = parse_l2(f) else {
        return;
    };
    if ethertype != ETHERTYPE_ROCE_V1 || f.len() < l3 + GRH_LEN {
        return;
    }
    let end = l3 + GRH_LEN + usize::from(u16::from_be_bytes([f[l3 + 4], f[l3 + 5]]));
    if end > f.len() || end < l3 + GRH_LEN + 4 {
        return;
    }
    if let Ok(c) = icrc::compute_grh(&f[l3..end - 4]) {
        f[end - 4..end].copy_from_slice(&c.to_le_bytes());
    }
}

#[test]
fn roce_v1_specific_errors() {
    let edited = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut f = v1_frame(None);
        edit(&mut f);
        reseal_v1(&mut f);
        parse(&f).map(|p| p.payload.len())
    };
    assert_eq!(edited(&|f| f[14] = 0x4a), Err(WireError::IpVersion(4)));
    assert_eq!(
        edited(&|f| f[20] = 0x11),
        Err(WireError::GrhNextHeader(0x11))
    );
    assert_eq!(
        edited(&|f| f[19] = 25),
        Err(WireError::IpLength {
            claimed: 65,
            available: 64
        })
    );
    assert_eq!(
        edited(&|f| f[19] = 15),
        Err(WireError::Truncated {
            what: "BTH and ICRC",
            need: 16,
            have: 15
        })
    );
    assert_eq!(
        edited(&|f| f[54] = 0x15),
        Err(WireError::UnknownOpcode(0x15))
    );
    assert_eq!(edited(&|f| f[55] |= 1), Err(WireError::TransportVersion(1)));
    // A shorter PayLen: the ICRC is read where the GRH says, the rest is padding.
    assert_eq!(edited(&|f| f[19] = 20), Ok(1), "4 bytes with pad 3");
    assert_eq!(
        edited(&|f| f[19] = 19),
        Err(WireError::PadCount { pad: 3, len: 3 })
    );
    let mut bad = v1_frame(None);
    let last = bad.len() - 1;
    bad[last] ^= 0x80;
    assert_eq!(
        parse(&bad),
        Err(WireError::Icrc {
            found: V1_ZLIB_CRC ^ 0x8000_0000,
            expected: V1_ZLIB_CRC
        })
    );
    let p = Packet {
        ip: Ip::Grh(Grh {
            flow_label: 1 << 20,
            ..v1_grh()
        }),
        ..v1_packet(None)
    };
    assert!(matches!(build(&p), Err(WireError::FieldRange { .. })));
    let big = vec![0u8; 65536];
    let p = Packet {
        payload: &big,
        ..v1_packet(None)
    };
    assert!(matches!(build(&p), Err(WireError::TooLong(_))));
}

#[test]
fn roce_v1_every_opcode_and_truncation() {
    let data = pay(9, 11);
    for &op in Opcode::ALL {
        let lens: &[usize] = if op.info().payload {
            &[0, 1, 2, 3, 4, 9]
        } else {
            &[0]
        };
        for &len in lens {
            for vlan in [None, Some(0xe001)] {
                let p = Packet {
                    eth: eth(vlan),
                    ip: Ip::Grh(v1_grh()),
                    src_port: 0,
                    udp_checksum: UdpChecksum::Zero,
                    bth: Bth {
                        pad: pad_for(len),
                        ..Bth::new(op, 0x42, 0x99)
                    },
                    ext: ext_for(op),
                    payload: &data[..len],
                };
                let f = build(&p).unwrap();
                assert_eq!(parse(&f), Ok(p), "{} len {len}", op.name());
                for cut in 0..f.len() {
                    assert!(parse(&f[..cut]).is_err(), "{} cut at {cut}", op.name());
                }
            }
        }
    }
}

#[test]
fn fuzz_roce_v1_parse_never_panics() {
    let mut rng = Rng(0x5eed_0008_9150_0001);
    let samples: Vec<Vec<u8>> = vec![
        v1_frame(None),
        v1_frame(Some(3 << 13 | 100)),
        build(&Packet {
            ext: ext_for(Opcode::RcRdmaReadResponseOnly),
            bth: Bth::new(Opcode::RcRdmaReadResponseOnly, 7, 8),
            ..v1_packet(None)
        })
        .unwrap(),
    ];
    let mut accepted = 0;
    for round in 0..40_000 {
        let mut f = samples[round % samples.len()].clone();
        for _ in 0..1 + rng.below(4) {
            if f.is_empty() {
                break;
            }
            match rng.below(6) {
                0 | 1 => {
                    let at = rng.below(f.len());
                    f[at] = rng.next() as u8;
                }
                2 => {
                    let at = rng.below(f.len());
                    f[at] ^= 1 << rng.below(8);
                }
                3 => {
                    let at = rng.below(f.len() + 1);
                    f.insert(at, rng.next() as u8);
                }
                4 if f.len() > 1 => {
                    let at = rng.below(f.len());
                    f.remove(at);
                }
                _ => f.truncate(rng.below(f.len() + 1)),
            }
        }
        consistent(&f);
        if round % 2 == 0 {
            reseal_v1(&mut f);
            if parse(&f).is_ok() {
                accepted += 1;
            }
            consistent(&f);
        }
    }
    assert!(accepted > 100, "{accepted}");
}
