//! Large receive offload: consecutive TCP segments of one flow merged into one packet, as the
//! card does for a TIR with `packet_merge_mask` into a striding RQ.
//!
//! What may merge ([`segment`]): an untunnelled TCP segment over IPv4 without options or
//! fragmentation (IPv6 without extension headers), with ACK set and no flag but PSH, no TCP
//! option but the aligned timestamp (NOP, NOP, TS), a payload, no congestion mark, and valid
//! IP and TCP checksums. A merge ([`Merge`]) holds the first segment's headers and appends the
//! payload of each next one in sequence (same flow, same header length, `seq` = the next byte,
//! ACK not going back); a PSH segment is merged and closes it.
//!
//! The packet in the buffer keeps the first segment's headers as they came; the CQE carries
//! what mlx5e needs to fix them (en_rx.c `mlx5e_lro_update_hdr`): the segment count in
//! `srqn[31:24]`, the smallest TTL / hop limit, the last ACK number and window, the PSH bit
//! (`tcppsh_abort_dupack` bit 6), and in `check_sum` the one's-complement sum of the merged TCP
//! payload (mlx5e adds the rewritten TCP header and the pseudo-header to it). mlx5e then
//! rewrites the IP length and checksum and hands the stack a GSO packet of `lro_num_seg`
//! segments with `CHECKSUM_UNNECESSARY`.

use cx4_hw::cq::cqe::{l4_hdr_type, Cqe64};

use super::{
    csum::{self, Sum},
    frame::{Headers, IpVersion, L4Kind},
};

/// TCP flags.
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
/// The only TCP option layout merged: NOP, NOP, timestamp (kind 8, length 10).
const TS_OPTION: [u8; 4] = [1, 1, 8, 10];

/// The flow a segment belongs to: VLAN, addresses and ports, header length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowKey {
    /// IPv6 (else IPv4).
    pub v6: bool,
    /// The outer 802.1Q TCI, if tagged.
    pub vlan: Option<u16>,
    /// Source and destination address (IPv4 in the first 4 bytes of each).
    pub addrs: [[u8; 16]; 2],
    /// Source and destination port.
    pub ports: [u16; 2],
    /// Bytes before the payload (L2 to the end of TCP).
    pub hdr_len: usize,
}

/// A TCP segment that may merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Its flow.
    pub key: FlowKey,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// Window (unscaled, as on the wire).
    pub win: u16,
    /// TTL or hop limit.
    pub ttl: u8,
    /// PSH set.
    pub psh: bool,
    /// TCP header length.
    pub tcp_hdr: usize,
    /// The payload: `[key.hdr_len, end)` of the frame (Ethernet padding after `end`).
    pub end: usize,
}

impl Segment {
    /// Payload bytes.
    pub fn len(&self) -> usize {
        self.end - self.key.hdr_len
    }

    /// No payload (never for a [`segment`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn be16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

fn be32(f: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]])
}

/// `frame` (parsed as `h`) as a segment that may merge, or `None`.
pub fn segment(frame: &[u8], h: &Headers) -> Option<Segment> {
    if h.tunnel.is_some() {
        return None;
    }
    let (l3, l4) = (h.outer.l3?, h.outer.l4?);
    if l3.fragment || l4.kind != L4Kind::Tcp || l3.end > frame.len() {
        return None;
    }
    let (v6, ttl) = match l3.version {
        // No options; not ECN-CE (a congestion mark must reach the stack as it came).
        IpVersion::V4 if l3.header_len == 20 && frame[l3.offset + 1] & 3 != 3 => {
            (false, frame[l3.offset + 8])
        }
        IpVersion::V6 if l3.header_len == 40 && (be16(frame, l3.offset) >> 4) & 3 != 3 => {
            (true, frame[l3.offset + 7])
        }
        _ => return None,
    };
    let flags = frame[l4.offset + 13];
    if flags & ACK == 0 || flags & !(ACK | PSH) != 0 {
        return None;
    }
    match l4.header_len {
        20 => {}
        32 if frame[l4.offset + 20..l4.offset + 24] == TS_OPTION => {}
        _ => return None,
    }
    let hdr_len = l4.payload();
    if l3.end <= hdr_len {
        return None;
    }
    if (l3.version == IpVersion::V4 && !csum::ipv4_ok(frame, &l3)) || !csum::l4_ok(frame, &l3, &l4)
    {
        return None;
    }
    let mut addrs = [[0u8; 16]; 2];
    let (src, dst) = (l3.src_range(), l3.dst_range());
    addrs[0][..src.len()].copy_from_slice(&frame[src]);
    addrs[1][..dst.len()].copy_from_slice(&frame[dst]);
    Some(Segment {
        key: FlowKey {
            v6,
            vlan: h.l2().first_vlan().map(|v| v.tci),
            addrs,
            ports: [l4.src_port, l4.dst_port],
            hdr_len,
        },
        seq: be32(frame, l4.offset + 4),
        ack: be32(frame, l4.offset + 8),
        win: be16(frame, l4.offset + 14),
        ttl,
        psh: flags & PSH != 0,
        tcp_hdr: l4.header_len,
        end: l3.end,
    })
}

/// An open merge: the first segment's flow and what the CQE will say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merge {
    /// The flow.
    pub key: FlowKey,
    /// The sequence number the next segment must have.
    pub next_seq: u32,
    /// Segments merged.
    pub segs: u32,
    /// Bytes of the packet so far (headers and payloads, as written to the buffer).
    pub bytes: u32,
    /// IP payload so far (TCP header and payloads).
    pub ip_payload: u32,
    /// Last segment's ACK number and window.
    pub ack: u32,
    /// See `ack`.
    pub win: u16,
    /// Smallest TTL / hop limit.
    pub min_ttl: u8,
    /// A segment had PSH: the merge is complete.
    pub psh: bool,
    /// One's-complement sum of the payload so far, and whether it has an odd length.
    sum: Sum,
    odd: bool,
}

impl Merge {
    /// Opens a merge with `s`, whose frame (without a stripped VLAN tag) is `bytes` long up
    /// to the end of its IP datagram.
    pub fn start(frame: &[u8], s: &Segment, bytes: u32) -> Merge {
        let l4_len = s.end - s.key.hdr_len;
        let mut m = Merge {
            key: s.key,
            next_seq: s.seq,
            segs: 0,
            bytes: bytes - l4_len as u32,
            ip_payload: 0,
            ack: s.ack,
            win: s.win,
            min_ttl: s.ttl,
            psh: false,
            sum: Sum::new(),
            odd: false,
        };
        m.ip_payload = s.tcp_hdr as u32;
        m.add(frame, s);
        m
    }

    /// Whether `s` continues this merge and its payload fits `room` more packet bytes and
    /// `max_ip_payload` in all.
    pub fn takes(&self, s: &Segment, room: u32, max_ip_payload: u32) -> bool {
        let n = s.len() as u32;
        !self.psh
            && s.key == self.key
            && s.seq == self.next_seq
            && s.ack.wrapping_sub(self.ack) < 1 << 31
            && n <= room
            && self.ip_payload + n <= max_ip_payload
    }

    /// Appends `s`'s payload (the caller writes it at [`Merge::bytes`] before calling).
    pub fn add(&mut self, frame: &[u8], s: &Segment) {
        let payload = &frame[s.key.hdr_len..s.end];
        let mut w = Sum::new().bytes(payload).fold();
        if self.odd {
            // A piece that starts at an odd offset adds its bytes swapped (RFC 1071 §2(B)).
            w = w.swap_bytes();
        }
        self.sum = self.sum.word(w);
        self.odd ^= payload.len() % 2 == 1;
        self.next_seq = s.seq.wrapping_add(payload.len() as u32);
        self.segs += 1;
        self.bytes += payload.len() as u32;
        self.ip_payload += payload.len() as u32;
        self.ack = s.ack;
        self.win = s.win;
        self.min_ttl = self.min_ttl.min(s.ttl);
        self.psh |= s.psh;
    }

    /// The one's-complement sum of the merged payload (folded, not inverted).
    pub fn payload_sum(&self) -> u16 {
        self.sum.fold()
    }

    /// Turns the first segment's receive CQE into the merged packet's: LRO fields, header
    /// types, the payload sum, checksums good. The caller sets the byte count and position.
    pub fn finish_cqe(&self, c: &mut Cqe64) {
        c.set_lro_num_seg(self.segs);
        c.set_lro_tcppsh_abort_dupack(u32::from(self.psh) << 6);
        c.set_lro_min_ttl(self.min_ttl.into());
        c.set_lro_tcp_win(self.win.into());
        c.set_lro_ack_seq_num(self.ack);
        c.set_l4_hdr_type(l4_hdr_type::TCP_ACK_AND_DATA.into());
        c.set_check_sum(self.payload_sum().into());
        c.set_l3_ok(1);
        c.set_l4_ok(1);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::eth::frame::{parse, ParseConfig};

    /// An IPv4 TCP segment (timestamps when `ts`) with `payload`, valid checksums.
    pub(crate) fn tcp4(seq: u32, ack: u32, flags: u8, ts: bool, payload: &[u8]) -> Vec<u8> {
        let opt = if ts { 12 } else { 0 };
        let mut f = vec![0u8; 14 + 20 + 20 + opt];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = 14;
        f[ip] = 0x45;
        let tot = (20 + 20 + opt + payload.len()) as u16;
        f[ip + 2..ip + 4].copy_from_slice(&tot.to_be_bytes());
        f[ip + 6] = 0x40;
        f[ip + 8] = 64;
        f[ip + 9] = 6;
        f[ip + 12..ip + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[ip + 16..ip + 20].copy_from_slice(&[10, 0, 0, 2]);
        let t = ip + 20;
        f[t..t + 2].copy_from_slice(&5001u16.to_be_bytes());
        f[t + 2..t + 4].copy_from_slice(&40000u16.to_be_bytes());
        f[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
        f[t + 8..t + 12].copy_from_slice(&ack.to_be_bytes());
        f[t + 12] = ((20 + opt) as u8 / 4) << 4;
        f[t + 13] = flags;
        f[t + 14..t + 16].copy_from_slice(&512u16.to_be_bytes());
        if ts {
            f[t + 20..t + 24].copy_from_slice(&TS_OPTION);
            f[t + 24..t + 28].copy_from_slice(&7u32.to_be_bytes());
        }
        f.extend_from_slice(payload);
        let h = parse(&f, &ParseConfig::default()).unwrap();
        csum::fill_ipv4(&mut f, &h.outer.l3.unwrap());
        csum::fill_l4(&mut f, &h.outer.l3.unwrap(), &h.outer.l4.unwrap());
        f
    }

    fn seg(f: &[u8]) -> Option<Segment> {
        segment(f, &parse(f, &ParseConfig::default()).unwrap())
    }

    #[test]
    fn what_merges_and_what_does_not() {
        let data = [7u8; 100];
        assert!(seg(&tcp4(1, 1, ACK, true, &data)).is_some());
        assert!(seg(&tcp4(1, 1, ACK | PSH, false, &data)).is_some());
        assert!(seg(&tcp4(1, 1, ACK, false, &[])).is_none(), "no payload");
        assert!(seg(&tcp4(1, 1, PSH, false, &data)).is_none(), "no ACK");
        assert!(seg(&tcp4(1, 1, ACK | 0x01, false, &data)).is_none(), "FIN");
        assert!(seg(&tcp4(1, 1, ACK | 0x02, false, &data)).is_none(), "SYN");
        let mut bad = tcp4(1, 1, ACK, false, &data);
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(seg(&bad).is_none(), "bad TCP checksum");
        let mut sack = tcp4(1, 1, ACK, true, &data);
        sack[14 + 20 + 22] = 5; // option kind 5 (SACK) where TS was
        let h = parse(&sack, &ParseConfig::default()).unwrap();
        csum::fill_l4(&mut sack, &h.outer.l3.unwrap(), &h.outer.l4.unwrap());
        assert!(seg(&sack).is_none(), "options other than the timestamp");
        let mut ce = tcp4(1, 1, ACK, false, &data);
        ce[14 + 1] = 3;
        let h = parse(&ce, &ParseConfig::default()).unwrap();
        csum::fill_ipv4(&mut ce, &h.outer.l3.unwrap());
        assert!(seg(&ce).is_none(), "ECN CE");
    }

    #[test]
    fn merged_headers_fixed_as_mlx5e_does_give_a_valid_packet() {
        // Odd and even payload lengths, so the running sum crosses odd offsets.
        let pieces: [&[u8]; 3] = [&[1, 2, 3], &[4, 5, 6, 7, 8], &[9, 10]];
        let mut seq = 1000;
        let mut frames = Vec::new();
        for (i, p) in pieces.iter().enumerate() {
            let flags = if i == 2 { ACK | PSH } else { ACK };
            frames.push(tcp4(seq, 50 + i as u32, flags, true, p));
            seq += p.len() as u32;
        }
        let s0 = seg(&frames[0]).unwrap();
        let mut m = Merge::start(&frames[0], &s0, frames[0].len() as u32);
        let mut packet = frames[0].clone();
        for f in &frames[1..] {
            let s = seg(f).unwrap();
            assert!(m.takes(&s, 1000, 65536));
            packet.extend_from_slice(&f[s.key.hdr_len..s.end]);
            m.add(f, &s);
        }
        assert!(m.psh);
        assert_eq!(m.segs, 3);
        assert_eq!(m.bytes as usize, packet.len());
        assert_eq!(m.ip_payload as usize, packet.len() - 14 - 20);
        let mut c = Cqe64::new();
        m.finish_cqe(&mut c);
        assert_eq!(c.lro_num_seg(), 3);
        assert_eq!(c.lro_ack_seq_num(), 52);
        // mlx5e_lro_update_hdr: IP length and checksum, TCP PSH/ACK/window, TCP checksum from
        // the CQE's payload sum plus the header and the pseudo-header.
        let ip = 14;
        let tot = (packet.len() - ip) as u16;
        packet[ip + 2..ip + 4].copy_from_slice(&tot.to_be_bytes());
        packet[ip + 8] = c.lro_min_ttl() as u8;
        let t = ip + 20;
        packet[t + 13] = ACK
            | if c.lro_tcppsh_abort_dupack() & 0x40 != 0 {
                PSH
            } else {
                0
            };
        packet[t + 8..t + 12].copy_from_slice(&c.lro_ack_seq_num().to_be_bytes());
        packet[t + 14..t + 16].copy_from_slice(&(c.lro_tcp_win() as u16).to_be_bytes());
        packet[t + 16..t + 18].copy_from_slice(&[0, 0]);
        let h = parse(&packet, &ParseConfig::default()).unwrap();
        let (l3, l4) = (h.outer.l3.unwrap(), h.outer.l4.unwrap());
        csum::fill_ipv4(&mut packet, &l3);
        let sum = Sum::new()
            .bytes(&packet[t..t + 32])
            .word(c.check_sum() as u16)
            .plus(csum::pseudo_header(&packet, &l3, 6, packet.len() - t));
        packet[t + 16..t + 18].copy_from_slice(&sum.checksum().to_be_bytes());
        assert!(csum::ipv4_ok(&packet, &l3));
        assert!(csum::l4_ok(&packet, &l3, &l4), "merged TCP checksum");
        assert_eq!(&packet[t + 32..], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    }

    #[test]
    fn out_of_order_other_flows_and_full_merges_are_refused() {
        let a = tcp4(100, 1, ACK, false, &[0; 10]);
        let s = seg(&a).unwrap();
        let m = Merge::start(&a, &s, a.len() as u32);
        let next = seg(&tcp4(110, 1, ACK, false, &[0; 10])).unwrap();
        assert!(m.takes(&next, 10, 1000));
        assert!(!m.takes(&next, 9, 1000), "no room");
        assert!(
            !m.takes(&next, 100, 20 + 10 + 9),
            "over the IP payload limit"
        );
        assert!(m.takes(&next, 100, 20 + 10 + 10));
        assert!(!m.takes(
            &seg(&tcp4(111, 1, ACK, false, &[0; 10])).unwrap(),
            100,
            1000
        ));
        assert!(!m.takes(
            &seg(&tcp4(110, 0, ACK, false, &[0; 10])).unwrap(),
            100,
            1000
        ));
        let ts = seg(&tcp4(110, 1, ACK, true, &[0; 10])).unwrap();
        assert!(!m.takes(&ts, 100, 1000), "another header length");
    }
}
