//! Bounded, seeded fuzzing of the Ethernet engine: mutated and random frames through the
//! parser, checksum validation and offload, RSS, LSO and receive delivery; random send WQEs
//! (ds counts, inline sizes, inline and data segments, lkeys, addresses, lengths, MSS,
//! checksum flags, software parser offsets, ring positions) through the send path. Nothing
//! may panic; every access goes through the bounds-checked memory keys; outputs stay within
//! the configured frame limits.
//!
//! `CX4_FUZZ_SEED` overrides the seed, `CX4_FUZZ_MS` the time budget per test (default 2500).

mod eth_util;

use std::time::{Duration, Instant};

use cx4_hw::wqe::CsFlags;
use cx4_model::eth::{
    cqe, csum,
    dma::{DmaError, RingMemory, RingWqe},
    frame::{parse, ParseConfig},
    lso,
    rss::{self, HashFields, HashSelector, RssConfig},
    rx::{self, RxOptions, RxSeg},
    txwqe::{execute, Ctrl, Output, TxConfig},
};
use eth_util::*;

/// Minimum iterations per test, whatever the budget.
const MIN_ITERATIONS: u64 = 3000;

fn budget() -> Duration {
    let ms = std::env::var("CX4_FUZZ_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2500);
    Duration::from_millis(ms)
}

/// Valid frames of every kind the parser knows, as mutation seeds.
fn corpus(rng: &mut Rng) -> Vec<Vec<u8>> {
    let o4 = Ip::v4([10, 0, 0, 1], [10, 0, 0, 2]);
    let mut a = [0u8; 16];
    a[0] = 0xfe;
    a[1] = 0x80;
    let mut b = a;
    b[15] = 9;
    let o6 = Ip::v6(a, b);
    let mut out = Vec::new();
    for ip in [&o4, &o6] {
        let len = rng.below(3000) as usize;
        let data = rng.bytes(len);
        let t = tcp(ip, 1, 2, 3, ACK | PSH, &[], &data);
        let inner = ethernet(&[], ip.ethertype(), &ip_packet(ip, 6, 1, &[], &t));
        out.push(inner.clone());
        out.push(ethernet(
            &[5, 6],
            ip.ethertype(),
            &ip_packet(ip, 17, 1, &[], &udp(ip, 7, 8, &data, true)),
        ));
        for outer in [&o4, &o6] {
            let mut vx = vxlan(1);
            vx.extend_from_slice(&inner);
            out.push(ethernet(
                &[],
                outer.ethertype(),
                &ip_packet(outer, 17, 1, &[], &udp(outer, 9, 4789, &vx, false)),
            ));
            let mut g = geneve(2, rng.below(8) as u8, 0x6558);
            g.extend_from_slice(&inner);
            out.push(ethernet(
                &[],
                outer.ethertype(),
                &ip_packet(outer, 17, 1, &[], &udp(outer, 9, 6081, &g, true)),
            ));
            let mut nv = gre(Some(7), 0x6558);
            nv.extend_from_slice(&inner);
            out.push(ethernet(
                &[],
                outer.ethertype(),
                &ip_packet(outer, 47, 1, &[], &nv),
            ));
            let inner_ip = &inner[14..];
            out.push(ethernet(
                &[],
                outer.ethertype(),
                &ip_packet(outer, if ip.v6 { 41 } else { 4 }, 1, &[], inner_ip),
            ));
        }
    }
    out
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut f = seed.to_vec();
    match rng.below(6) {
        0 => f.truncate(rng.below(f.len() as u64 + 1) as usize),
        1 => {
            let len = rng.below(64) as usize;
            let extra = rng.bytes(len);
            f.extend_from_slice(&extra);
        }
        2 => {
            let len = rng.below(200) as usize;
            return rng.bytes(len);
        }
        _ => {}
    }
    for _ in 0..rng.below(6) {
        if f.is_empty() {
            break;
        }
        let i = if rng.chance(3, 4) {
            rng.below(f.len().min(120) as u64) as usize
        } else {
            rng.below(f.len() as u64) as usize
        };
        f[i] = if rng.chance(1, 2) {
            rng.next_u64() as u8
        } else {
            f[i] ^ (1 << rng.below(8))
        };
    }
    f
}

fn random_rss(rng: &mut Rng) -> RssConfig {
    let sel = |rng: &mut Rng| HashSelector {
        ipv6: rng.chance(1, 2),
        udp: rng.chance(1, 2),
        fields: HashFields::from_bits_truncate(rng.next_u64() as u32),
    };
    let mut key = [0u8; rss::KEY_LEN];
    key.copy_from_slice(&rng.bytes(rss::KEY_LEN));
    RssConfig {
        key,
        symmetric: rng.chance(1, 2),
        outer: sel(rng),
        inner: rng.chance(1, 2).then(|| sel(rng)),
    }
}

#[test]
fn random_frames_never_panic_the_receive_and_offload_paths() {
    let mut rng = Rng::new(0xf7a3e);
    let seeds = corpus(&mut rng);
    let mut mk = Mkeys::default();
    mk.add(1, 0x1000, 16384);
    let start = Instant::now();
    let (mut n, mut parsed, mut tunnels) = (0u64, 0u64, 0u64);
    while n < MIN_ITERATIONS || start.elapsed() < budget() {
        n += 1;
        let seed = &seeds[rng.below(seeds.len() as u64) as usize];
        let f = mutate(&mut rng, seed);
        let mut rx_cfg = ParseConfig::default();
        if rng.chance(1, 4) {
            rx_cfg.vxlan_ports.push(rng.next_u64() as u16);
        }
        if let Ok(h) = parse(&f, &rx_cfg) {
            parsed += 1;
            tunnels += u64::from(h.tunnel.is_some());
            assert!(h.outer.l3.is_none_or(|l3| l3.end <= f.len()));
            let r = rss::hash(&f, &h, &random_rss(&mut rng));
            let _ = rss::rqt_index(r.hash, rng.below(300) as usize);
            let segs: Vec<RxSeg> = (0..rng.below(4))
                .map(|_| RxSeg {
                    lkey: if rng.chance(9, 10) { 1 } else { 2 },
                    addr: 0x1000 + rng.below(20000),
                    len: rng.below(6000) as u32,
                })
                .collect();
            let opts = RxOptions {
                strip_vlan: rng.chance(1, 2),
                report_inner: rng.chance(1, 2),
                flow_tag: rng.next_u64() as u32,
                user_index: rng.next_u64() as u32,
            };
            match rx::deliver(&f, &h, &r, &opts, &segs, rng.next_u64() as u16, &mk) {
                Ok(c) => assert!(be32(&c.0, 0x2c) as usize <= f.len()),
                Err(e) => {
                    let c = cqe::err_cqe(true, e.syndrome(), e.vendor_syndrome(), 0, 0, 1);
                    assert_ne!(c.0[0x37], 0);
                }
            }
        }
        if let Ok(h) = parse(&f, &rx_cfg.for_tx()) {
            let mut g = f.clone();
            let flags = CsFlags::from_bits_truncate(rng.next_u64() as u8);
            let done = csum::offload_tx(&mut g, &h, flags);
            assert!(flags.contains(done));
            let mss = 1 + rng.below(3000) as usize;
            if let Ok(segs) = lso::segment(&f, &h, mss, flags) {
                let hdr = h.transport_end().unwrap();
                let mut joined = Vec::new();
                for s in &segs {
                    assert_eq!(s.header.len(), hdr);
                    joined.extend_from_slice(&f[s.payload.clone()]);
                }
                assert_eq!(joined, f[hdr.min(f.len())..]);
            }
        }
    }
    eprintln!("{n} frames, {parsed} parsed, {tunnels} tunnelled");
    assert!(
        parsed > n / 10 && tunnels > 0,
        "the mutations keep enough frames valid"
    );
}

/// A random SQ ring buffer.
struct Ring(Vec<u8>);

impl RingMemory for Ring {
    fn read_ring(&self, offset: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let at = offset as usize;
        let src = self.0.get(at..at + out.len()).ok_or(DmaError::Fault {
            addr: offset,
            len: out.len() as u64,
        })?;
        out.copy_from_slice(src);
        Ok(())
    }
}

/// Fills one random send WQE of `ds` segments into `w`, biased towards plausible layouts.
fn random_wqe(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let ds = if rng.chance(1, 10) {
        rng.below(64) as usize
    } else {
        2 + rng.below(40) as usize
    };
    let mut w = rng.bytes(64 * 16);
    let opcode = match rng.below(10) {
        0..=4 => 0x0a,
        5..=7 => 0x0e,
        8 => 0x00,
        _ => rng.next_u64() as u8,
    };
    w[3] = opcode;
    w[7] = (w[7] & 0xc0) | ds as u8;
    if rng.chance(3, 4) {
        w[16..20].fill(0); // no software parser offsets
    }
    w[16 + 4] &= 0xf0;
    if rng.chance(1, 2) {
        w[16 + 6] = (rng.below(8)) as u8; // mss up to ~2 KiB
    }
    // Inline headers from a real frame, usually fitting the WQE.
    let seed = &seeds[rng.below(seeds.len() as u64) as usize];
    let inline = if rng.chance(9, 10) {
        (rng.below(seed.len().min(ds.saturating_sub(2) * 16 + 2).max(1) as u64) as usize)
            .min(seed.len())
    } else {
        rng.below(1200) as usize
    };
    w[28..30].copy_from_slice(&(inline as u16).to_be_bytes());
    let hdr = &seed[..inline.min(seed.len())];
    let n = hdr.len().min(w.len() - 30);
    w[30..30 + n].copy_from_slice(&hdr[..n]);
    let mut at = 32 + inline.saturating_sub(2).div_ceil(16) * 16;
    while at + 16 <= (ds * 16).min(w.len()) {
        if rng.chance(1, 6) {
            let len = rng.below(100) as u32;
            w[at..at + 4].copy_from_slice(&(0x8000_0000 | len).to_be_bytes());
            at += (4 + len as usize).div_ceil(16) * 16;
            continue;
        }
        let len: u32 = match rng.below(10) {
            0 => rng.next_u64() as u32 & 0x7fff_ffff,
            1 => 0,
            _ => rng.below(3000) as u32,
        };
        let lkey: u32 = if rng.chance(9, 10) {
            1
        } else {
            rng.next_u64() as u32
        };
        let addr = if rng.chance(9, 10) {
            0x1000 + rng.below(70000)
        } else {
            rng.next_u64()
        };
        w[at..at + 4].copy_from_slice(&len.to_be_bytes());
        w[at + 4..at + 8].copy_from_slice(&lkey.to_be_bytes());
        w[at + 8..at + 16].copy_from_slice(&addr.to_be_bytes());
        at += 16;
    }
    w
}

#[test]
fn random_send_wqes_never_panic_and_respect_the_limits() {
    let mut rng = Rng::new(0x5e7d);
    let seeds = corpus(&mut rng);
    let mut mk = Mkeys::default();
    mk.add(1, 0x1000, 65536);
    mk.fill(1, 0x1000, &rng.bytes(65536));
    let mut cfg = TxConfig {
        max_frame: 1500 + 22,
        max_lso: 65536,
        ..TxConfig::default()
    };
    let start = Instant::now();
    let (mut n, mut ok, mut frames) = (0u64, 0u64, 0u64);
    let mut superframes = 0u64;
    let mut faults = std::collections::BTreeMap::new();
    while n < MIN_ITERATIONS || start.elapsed() < budget() {
        n += 1;
        // Every other WQE for a wire that carries superframes.
        cfg.superframes = n % 2 == 0;
        let w = random_wqe(&mut rng, &seeds);
        // Place it at a random index of a 16-block ring, possibly wrapping.
        let log_entries = 4;
        let index = rng.next_u64() as u32;
        let mut ring = Ring(rng.bytes(64 << log_entries));
        let slot = (index as usize % (1 << log_entries)) * 64;
        for (i, b) in w.iter().take(64 << log_entries).enumerate() {
            let at = (slot + i) % ring.0.len();
            ring.0[at] = *b;
        }
        let r = RingWqe::new(&ring, log_entries, 6, index);
        let ctrl = match Ctrl::read(&r) {
            Ok(c) => c,
            Err(e) => panic!("a control segment inside the ring must read: {e}"),
        };
        match execute(&ctrl, &r, &mk, &cfg) {
            Ok(sent) => {
                ok += 1;
                frames += sent.output.count() as u64;
                match &sent.output {
                    Output::Nothing => assert_eq!(ctrl.opcode, 0),
                    Output::Frame(f) => assert!(f.len() >= 60 && f.len() <= cfg.max_frame.max(60)),
                    Output::Segments { segments, .. } => {
                        assert!(!segments.is_empty());
                        assert!(segments.iter().all(|s| s.len() <= cfg.max_frame));
                    }
                    Output::Superframe { sf, .. } => {
                        superframes += 1;
                        assert!(cfg.superframes && sf.hdr_len + sf.mss <= cfg.max_frame);
                        // Cut after all (the wire refused it), the segments keep the limits.
                        let mut cut = 0;
                        sent.output.for_each(|h, p, pad| {
                            cut += 1;
                            assert!(h.len() + p.len() + pad <= cfg.max_frame.max(60));
                        });
                        assert_eq!(cut, sent.output.count());
                    }
                }
            }
            Err(e) => {
                let c = cqe::err_cqe(
                    false,
                    e.syndrome(),
                    e.vendor_syndrome(),
                    ctrl.wqe_index,
                    ctrl.opcode,
                    1,
                );
                assert_eq!(c.0[0x3f] >> 4, 13);
                *faults.entry(e.vendor_syndrome()).or_insert(0u64) += 1;
            }
        }
    }
    eprintln!("{n} WQEs, {ok} executed, {frames} frames, {superframes} superframes; faults by vendor syndrome: {faults:x?}");
    assert!(ok > n / 20, "enough WQEs are valid to reach the offloads");
    assert!(
        faults.len() >= 6,
        "the faults cover most causes: {faults:x?}"
    );
}
