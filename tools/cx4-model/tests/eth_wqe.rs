//! Send WQEs built byte by byte as mlx5e writes them (control segment, Ethernet segment with
//! inline headers, data and inline segments), executed through memory keys; their errors
//! and PRM syndromes; ring wrap-around; receive WQEs, delivery and the CQEs of both
//! directions.

mod eth_util;

use cx4_hw::cq::cqe::{self, l3_hdr_type, l4_hdr_type, opcode as cqe_op, syndrome, Cqe64};
use cx4_model::eth::{
    cqe::{err_cqe, set_user_index, tx_cqe},
    dma::{DmaError, RingMemory, RingWqe},
    frame::{parse, ParseConfig},
    rss::RssHash,
    rx::{deliver, rq_wqe_segments, RxFault, RxOptions},
    txwqe::{execute, Ctrl, Output, TxConfig, TxFault},
};
use eth_util::*;

const LKEY: u32 = 0x1234_5600;
const BASE: u64 = 0x8000_0000;

/// A gather entry of a test WQE.
enum Seg {
    Data { lkey: u32, addr: u64, len: u32 },
    Inline(Vec<u8>),
}

/// A send WQE: ctrl, eth segment with `inline` headers, then `segs`; `ds` from the layout
/// unless overridden.
#[allow(clippy::too_many_arguments)]
fn send_wqe(
    opcode: u8,
    index: u16,
    sqn: u32,
    cs_flags: u8,
    mss: u16,
    inline: &[u8],
    segs: &[Seg],
    ds: Option<u8>,
) -> Vec<u8> {
    let mut w = vec![0u8; 32];
    w[0] = 0;
    w[1..3].copy_from_slice(&index.to_be_bytes());
    w[3] = opcode;
    w[11] = 0x08; // CQ_UPDATE
    w[16 + 4] = cs_flags;
    w[16 + 6..16 + 8].copy_from_slice(&mss.to_be_bytes());
    w[16 + 12..16 + 14].copy_from_slice(&(inline.len() as u16).to_be_bytes());
    let first = inline.len().min(2);
    w[30..30 + first].copy_from_slice(&inline[..first]);
    let rest = &inline[first..];
    let mut tail = rest.to_vec();
    tail.resize(rest.len().div_ceil(16) * 16, 0);
    w.extend_from_slice(&tail);
    for s in segs {
        match s {
            Seg::Data { lkey, addr, len } => {
                w.extend_from_slice(&len.to_be_bytes());
                w.extend_from_slice(&lkey.to_be_bytes());
                w.extend_from_slice(&addr.to_be_bytes());
            }
            Seg::Inline(d) => {
                let mut seg = (0x8000_0000u32 | d.len() as u32).to_be_bytes().to_vec();
                seg.extend_from_slice(d);
                seg.resize(seg.len().div_ceil(16) * 16, 0);
                w.extend_from_slice(&seg);
            }
        }
    }
    let ds = ds.unwrap_or((w.len() / 16) as u8);
    w[4..8].copy_from_slice(&((sqn << 8) | u32::from(ds)).to_be_bytes());
    w
}

fn run(w: &[u8], mk: &Mkeys) -> Result<cx4_model::eth::txwqe::Sent, TxFault> {
    let ctrl = Ctrl::read(w)?;
    execute(&ctrl, w, mk, &TxConfig::default())
}

fn v4() -> Ip {
    Ip::v4([172, 16, 0, 1], [172, 16, 0, 2])
}

fn tcp_frame(len: usize) -> Vec<u8> {
    let ip = v4();
    let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
    ethernet(
        &[],
        0x0800,
        &ip_packet(&ip, 6, 9, &[], &tcp(&ip, 1, 2, 3, ACK, &[], &data)),
    )
}

#[test]
fn send_gathers_inline_headers_and_two_keys_and_inserts_checksums() {
    let want = tcp_frame(300);
    let mut guest = want.clone();
    guest[24] ^= 0xff; // IP checksum left to the device
    guest[34 + 16] ^= 0x55; // TCP checksum left to the device
    let mut mk = Mkeys::default();
    mk.add(LKEY, BASE, 4096);
    mk.add(LKEY + 1, BASE + 0x10000, 4096);
    mk.fill(LKEY, BASE + 100, &guest[18..200]);
    mk.fill(LKEY + 1, BASE + 0x10000, &guest[200..]);
    let segs = [
        Seg::Data {
            lkey: LKEY,
            addr: BASE + 100,
            len: 182,
        },
        Seg::Data {
            lkey: LKEY + 1,
            addr: BASE + 0x10000,
            len: (guest.len() - 200) as u32,
        },
    ];
    let w = send_wqe(0x0a, 0x1234, 0x77, 0xc0, 0, &guest[..18], &segs, None);
    let ctrl = Ctrl::read(&w[..]).unwrap();
    assert_eq!(
        (ctrl.opcode, ctrl.wqe_index, ctrl.qpn, ctrl.ds),
        (0x0a, 0x1234, 0x77, 5)
    );
    assert!(ctrl.cqe_requested() && !ctrl.solicited());
    assert_eq!(ctrl.wqebbs(), 2);
    let sent = run(&w, &mk).unwrap();
    assert_eq!(sent.output, Output::Frame(want.clone()));
    assert_eq!(sent.csum_done.bits(), 0xc0);
    assert_eq!(sent.gathered, want.len());
}

#[test]
fn inline_data_segments_padding_and_vlan_insertion() {
    let want = tcp_frame(0); // 54 bytes: padded to 60 on the wire
    let mk = Mkeys::default();
    let w = send_wqe(
        0x0a,
        1,
        1,
        0,
        0,
        &want[..14],
        &[
            Seg::Inline(want[14..40].to_vec()),
            Seg::Inline(want[40..].to_vec()),
        ],
        None,
    );
    let out = run(&w, &mk).unwrap().output.frames();
    let mut padded = want.clone();
    padded.resize(60, 0);
    assert_eq!(out, vec![padded]);

    // PRM VLAN insertion (insert.type bit 15, TCI in the next two bytes), no inline headers.
    let want = tcp_frame(100);
    let mut mk = Mkeys::default();
    mk.add(LKEY, BASE, 4096);
    mk.fill(LKEY, BASE, &want);
    let mut w = send_wqe(
        0x0a,
        2,
        1,
        0,
        0,
        &[],
        &[Seg::Data {
            lkey: LKEY,
            addr: BASE,
            len: want.len() as u32,
        }],
        None,
    );
    w[28..32].copy_from_slice(&[0x80, 0x00, 0x20, 0x64]);
    let out = run(&w, &mk).unwrap().output.frames();
    let tagged = ethernet(&[0x2064], 0x0800, &want[14..]);
    assert_eq!(out, vec![tagged]);
}

#[test]
fn lso_wqe_with_all_headers_inline() {
    let ip = v4();
    let data: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    let sf = ethernet(
        &[],
        0x0800,
        &ip_packet(&ip, 6, 1, &[], &tcp(&ip, 1, 2, 3, ACK | PSH, &[], &data)),
    );
    let mut mk = Mkeys::default();
    mk.add(LKEY, BASE, 8192);
    mk.fill(LKEY, BASE, &sf[54..]);
    let w = send_wqe(
        0x0e,
        7,
        1,
        0xc0,
        1448,
        &sf[..54],
        &[Seg::Data {
            lkey: LKEY,
            addr: BASE,
            len: 4000,
        }],
        None,
    );
    let sent = run(&w, &mk).unwrap();
    assert_eq!(sent.output.count(), 3);
    let mut joined = Vec::new();
    let mut n = 0;
    sent.output.for_each(|h, p, pad| {
        assert_eq!((h.len(), pad), (54, 0));
        joined.extend_from_slice(p);
        n += 1;
    });
    assert_eq!((n, joined), (3, data));
    for f in sent.output.frames() {
        let h = parse(&f, &ParseConfig::default()).unwrap();
        assert!(l4_sum_ok(&f, &ip, 6, 34, f.len()));
        assert_eq!(h.outer.l4.unwrap().src_port, 1);
    }
}

#[test]
fn software_parser_offsets_locate_a_tunnel_the_parser_does_not_know() {
    // GENEVE on port 7000: only the SWP offsets let the card find the inner headers.
    let (o, i) = (v4(), Ip::v4([1, 1, 1, 1], [2, 2, 2, 2]));
    let t = tcp(&i, 5, 6, 7, ACK, &[], b"swp!");
    let mut g = geneve(1, 0, 0x6558);
    g.extend_from_slice(&ethernet(&[], 0x0800, &ip_packet(&i, 6, 1, &[], &t)));
    let want = ethernet(
        &[],
        0x0800,
        &ip_packet(&o, 17, 1, &[], &udp(&o, 1, 7000, &g, false)),
    );
    let mut guest = want.clone();
    let inner_l3 = 14 + 20 + 8 + 8 + 14;
    guest[inner_l3 + 20 + 16] ^= 0xff;
    guest[inner_l3 + 10] ^= 0xff;
    let mut w = send_wqe(0x0a, 1, 1, 0x70, 0, &guest, &[], None);
    w[16] = (34 / 2) as u8; // outer L4
    w[17] = (14 / 2) as u8; // outer L3
    w[18] = ((inner_l3 + 20) / 2) as u8; // inner L4
    w[19] = (inner_l3 / 2) as u8; // inner L3
    w[21] = 0x20; // outer UDP
    let sent = run(&w, &Mkeys::default()).unwrap();
    assert_eq!(sent.output, Output::Frame(want));
    // Without the offsets the card's own parser sees plain UDP and leaves the inner headers.
    w[16..20].fill(0);
    let sent = run(&w, &Mkeys::default()).unwrap();
    assert_eq!(sent.output, Output::Frame(guest));
}

#[test]
fn nop_completes_without_output() {
    let mut w = vec![0u8; 16];
    w[1..3].copy_from_slice(&5u16.to_be_bytes());
    w[7] = 1;
    let sent = run(&w, &Mkeys::default()).unwrap();
    assert_eq!(sent.output, Output::Nothing);
}

#[test]
fn bad_wqes_fail_with_prm_syndromes() {
    let f = tcp_frame(50);
    let mut mk = Mkeys::default();
    mk.add(LKEY, BASE, 256);
    mk.fill(LKEY, BASE, &f[18..]);
    let data = |lkey, addr, len| Seg::Data { lkey, addr, len };
    let rest = (f.len() - 18) as u32;
    let cases: Vec<(Vec<u8>, u8, u8)> = vec![
        // ds 1 for a SEND.
        (
            send_wqe(0x0a, 0, 1, 0, 0, &f[..18], &[], Some(1)),
            syndrome::LOCAL_QP_OP_ERR,
            0x02,
        ),
        // ds 0.
        (
            send_wqe(0x0a, 0, 1, 0, 0, &f[..18], &[], Some(0)),
            syndrome::LOCAL_QP_OP_ERR,
            0x02,
        ),
        // Inline headers longer than the WQE says.
        (
            send_wqe(0x0a, 0, 1, 0, 0, &f[..18], &[], Some(2)),
            syndrome::LOCAL_LENGTH_ERR,
            0x03,
        ),
        // An unknown lkey.
        (
            send_wqe(
                0x0a,
                0,
                1,
                0,
                0,
                &f[..18],
                &[data(LKEY + 9, BASE, rest)],
                None,
            ),
            syndrome::LOCAL_PROT_ERR,
            0x0a,
        ),
        // Outside the key.
        (
            send_wqe(
                0x0a,
                0,
                1,
                0,
                0,
                &f[..18],
                &[data(LKEY, BASE + 200, rest)],
                None,
            ),
            syndrome::LOCAL_PROT_ERR,
            0x0b,
        ),
        // Longer than a frame may be.
        (
            send_wqe(
                0x0a,
                0,
                1,
                0,
                0,
                &f[..18],
                &[data(LKEY, BASE, 0x7fff_ffff)],
                None,
            ),
            syndrome::LOCAL_LENGTH_ERR,
            0x05,
        ),
        // Shorter than an Ethernet header.
        (
            send_wqe(0x0a, 0, 1, 0, 0, &f[..10], &[], None),
            syndrome::LOCAL_LENGTH_ERR,
            0x06,
        ),
        // LSO with MSS 0.
        (
            send_wqe(0x0e, 0, 1, 0, 0, &f[..18], &[data(LKEY, BASE, rest)], None),
            syndrome::LOCAL_QP_OP_ERR,
            0x07,
        ),
        // An RDMA opcode on an Ethernet SQ.
        (
            send_wqe(0x08, 0, 1, 0, 0, &f[..18], &[], None),
            syndrome::LOCAL_QP_OP_ERR,
            0x01,
        ),
    ];
    for (i, (w, synd, vendor)) in cases.iter().enumerate() {
        let e = run(w, &mk).expect_err(&format!("case {i} must fail"));
        assert_eq!(
            (e.syndrome(), e.vendor_syndrome()),
            (*synd, *vendor),
            "case {i}: {e}"
        );
    }
    // An inline data segment running past the WQE.
    let mut w = send_wqe(
        0x0a,
        0,
        1,
        0,
        0,
        &f[..18],
        &[Seg::Inline(vec![0; 20])],
        None,
    );
    let n = w.len();
    w[n - 32..n - 28].copy_from_slice(&(0x8000_0000u32 | 100).to_be_bytes());
    let e = run(&w, &mk).unwrap_err();
    assert_eq!(
        (e.syndrome(), e.vendor_syndrome()),
        (syndrome::LOCAL_LENGTH_ERR, 0x04)
    );
    // LSO of a frame without TCP/UDP.
    let arp = ethernet(&[], 0x0806, &[0; 46]);
    let w = send_wqe(0x0e, 0, 1, 0, 100, &arp, &[], None);
    assert_eq!(
        run(&w, &mk).unwrap_err().syndrome(),
        syndrome::LOCAL_QP_OP_ERR
    );
}

/// An SQ buffer of `n` 64-byte basic blocks.
struct Ring(Vec<u8>);

impl RingMemory for Ring {
    fn read_ring(&self, offset: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let at = offset as usize;
        out.copy_from_slice(&self.0[at..at + out.len()]);
        Ok(())
    }
}

#[test]
fn wqes_wrap_around_the_ring() {
    let f = tcp_frame(100);
    let w = send_wqe(0x0a, 3, 1, 0xc0, 0, &f, &[], None); // 2 + 10 DS: three basic blocks
    assert_eq!(w.len(), 192);
    let mut ring = Ring(vec![0xee; 256]);
    // Index 3 of a 4-entry ring: the last block, then blocks 0 and 1.
    ring.0[192..256].copy_from_slice(&w[..64]);
    ring.0[..128].copy_from_slice(&w[64..]);
    let r = RingWqe::new(&ring, 2, 6, 3);
    let ctrl = Ctrl::read(&r).unwrap();
    assert_eq!((ctrl.wqe_index, ctrl.wqebbs()), (3, 3));
    let sent = execute(&ctrl, &r, &Mkeys::default(), &TxConfig::default()).unwrap();
    assert_eq!(sent.output, Output::Frame(f));
    // The counter wraps as well: index 7 is slot 3.
    let r = RingWqe::new(&ring, 2, 6, 7);
    assert_eq!(Ctrl::read(&r).unwrap().wqe_index, 3);
}

fn rq_wqe(segs: &[(u32, u32, u64)], stride: usize) -> Vec<u8> {
    let mut w = Vec::new();
    for &(bc, lkey, addr) in segs {
        w.extend_from_slice(&bc.to_be_bytes());
        w.extend_from_slice(&lkey.to_be_bytes());
        w.extend_from_slice(&addr.to_be_bytes());
    }
    w.resize(stride, 0);
    w
}

#[test]
fn receive_scatters_strips_the_tag_and_fills_the_cqe() {
    let ip = v4();
    let data = vec![0x5a; 1000];
    let f = ethernet(
        &[0x3007],
        0x0800,
        &ip_packet(&ip, 6, 1, &[], &tcp(&ip, 10, 20, 30, ACK, &[], &data)),
    );
    let mut mk = Mkeys::default();
    mk.add(LKEY, BASE, 8192);
    // mlx5e: byte_count | MLX5_HW_START_PADDING, then a terminating segment.
    let w = rq_wqe(
        &[
            (0x8000_0000 | 256, LKEY, BASE),
            (0x8000_0000 | 2048, LKEY, BASE + 4096),
            (0, 0x100, 0),
            (64, LKEY, BASE + 7000),
        ],
        64,
    );
    let segs = rq_wqe_segments(&w[..], 64).unwrap();
    assert_eq!(segs.len(), 2);
    assert_eq!((segs[0].len, segs[1].addr), (256, BASE + 4096));
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let rss = RssHash {
        hash: 0xdead_beef,
        ip: cqe::rss_ip::IPV4,
        l4: cqe::rss_l4::L4_TCP,
    };
    let opts = RxOptions {
        strip_vlan: true,
        report_inner: false,
        flow_tag: 0x12_3456,
        user_index: 0x42_0007,
    };
    let c = deliver(&f, &h, &rss, &opts, &segs, 0x4242, &mk).unwrap();
    let untagged = ethernet(&[], 0x0800, &f[18..]);
    let mut got = mk.get(LKEY, BASE, 256);
    got.extend(mk.get(LKEY, BASE + 4096, untagged.len() - 256));
    assert_eq!(got, untagged);
    let b = &c.0;
    assert_eq!(be32(b, 0x2c) as usize, untagged.len(), "byte_cnt");
    assert_eq!(be32(b, 0x0c), 0xdead_beef, "rss_hash_result");
    assert_eq!(b[0x10], 0x44, "rss_hash_type: IPv4 | TCP");
    assert_eq!(b[0x1c] & 0x06, 0x06, "L3_OK | L4_OK");
    assert_eq!(
        b[0x1d],
        (l4_hdr_type::TCP_ACK_AND_DATA << 4) | (l3_hdr_type::IPV4 << 2) | 1
    );
    assert_eq!(be16(b, 0x1e), 0x3007, "vlan_info");
    assert_eq!(
        be16(b, 0x14),
        naive_sum(&[&f[18..]]),
        "check_sum from the IP header"
    );
    assert_eq!(be32(b, 0x38), 0x12_3456, "flow tag");
    assert_eq!(be16(b, 0x3c), 0x4242, "wqe_counter");
    assert_eq!(b[0x3f] >> 4, cqe_op::RESP_SEND);
    assert_eq!(b[0] & 1, 0, "not tunnelled");
    assert_eq!(b[0x20], 0, "lro_num_seg");
    assert_eq!(be32(b, 0x20), 0x42_0007, "srqn_uidx: the RQ's user_index");

    // Without stripping the tag stays in the buffer.
    let keep = RxOptions {
        strip_vlan: false,
        ..opts
    };
    let c = deliver(&f, &h, &rss, &keep, &segs, 1, &mk).unwrap();
    assert_eq!(be32(&c.0, 0x2c) as usize, f.len());
    assert_eq!(c.0[0x1d] & 1, 0);
    assert_eq!(mk.get(LKEY, BASE, 18), f[..18].to_vec());
}

#[test]
fn receive_faults() {
    let f = tcp_frame(2000);
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let mut mk = Mkeys::default();
    mk.add(LKEY, BASE, 1024);
    let w = rq_wqe(&[(1024, LKEY, BASE)], 16);
    let segs = rq_wqe_segments(&w[..], 16).unwrap();
    let e = deliver(
        &f,
        &h,
        &RssHash::default(),
        &RxOptions::default(),
        &segs,
        0,
        &mk,
    )
    .unwrap_err();
    assert!(matches!(e, RxFault::TooLong { capacity: 1024, .. }));
    assert_eq!(e.syndrome(), syndrome::LOCAL_LENGTH_ERR);
    let w = rq_wqe(&[(4096, LKEY + 1, BASE)], 16);
    let segs = rq_wqe_segments(&w[..], 16).unwrap();
    let e = deliver(
        &f,
        &h,
        &RssHash::default(),
        &RxOptions::default(),
        &segs,
        0,
        &mk,
    )
    .unwrap_err();
    assert_eq!(e.syndrome(), syndrome::LOCAL_PROT_ERR);
}

#[test]
fn tunnelled_receive_reports_inner_types() {
    let (o, i) = (v4(), Ip::v4([3, 3, 3, 3], [4, 4, 4, 4]));
    let mut vx = vxlan(3);
    vx.extend_from_slice(&ethernet(
        &[],
        0x0800,
        &ip_packet(&i, 17, 1, &[], &udp(&i, 1, 2, b"in", true)),
    ));
    let f = ethernet(
        &[],
        0x0800,
        &ip_packet(&o, 17, 1, &[], &udp(&o, 3, 4789, &vx, true)),
    );
    let h = parse(&f, &ParseConfig::default()).unwrap();
    let mut mk = Mkeys::default();
    mk.add(LKEY, BASE, 4096);
    let segs = rq_wqe_segments(&rq_wqe(&[(4096, LKEY, BASE)], 16)[..], 16).unwrap();
    let opts = RxOptions {
        report_inner: true,
        ..RxOptions::default()
    };
    let c = deliver(&f, &h, &RssHash::default(), &opts, &segs, 0, &mk).unwrap();
    assert_eq!(c.0[0] & 1, 1, "tunnelled");
    assert_eq!(c.0[0x1c] & 0x06, 0x06);
    assert_eq!(c.0[0x1d] >> 4, l4_hdr_type::UDP);
}

#[test]
fn requester_and_error_cqes() {
    let c: Cqe64 = tx_cqe(0xbeef, 0x0a, 0x12_3456);
    assert_eq!(be32(&c.0, 0x38), 0x0a12_3456);
    assert_eq!(be16(&c.0, 0x3c), 0xbeef);
    assert_eq!(c.0[0x3f], cqe_op::REQ << 4);
    assert_eq!(be32(&c.0, 0x20), 0, "no user index unless set");
    let mut c = c;
    set_user_index(&mut c, 0x1ab_cdef);
    assert_eq!(
        be32(&c.0, 0x20),
        0xab_cdef,
        "srqn_uidx: 24 bits of the SQ's user_index"
    );
    let e = err_cqe(false, syndrome::LOCAL_PROT_ERR, 0x0a, 7, 0x0e, 0x99);
    assert_eq!(e.0[0x37], syndrome::LOCAL_PROT_ERR);
    assert_eq!(e.0[0x36], 0x0a);
    assert_eq!(be32(&e.0, 0x38), 0x0e00_0099);
    assert_eq!(be16(&e.0, 0x3c), 7);
    assert_eq!(e.0[0x3f], cqe_op::REQ_ERR << 4);
    let r = err_cqe(true, syndrome::LOCAL_LENGTH_ERR, 0x21, 1, 0, 5);
    assert_eq!(r.0[0x3f] >> 4, cqe_op::RESP_ERR);
}
