//! A host micro-benchmark of the Ethernet send path (the harness of `datapath_tests.rs`),
//! ignored by `cargo test`: WQEs posted as mlx5e posts them on a ConnectX-4 (control segment,
//! Ethernet segment with L3 and L4 checksum offload and the first 18 bytes inline, one data
//! segment for the rest, a CQE asked for each), one doorbell record update and one BlueFlame
//! doorbell write per WQE, through the real doorbell, WQE, gather, checksum, wire and CQE
//! paths into an in-memory wire. Only the time spent inside the card is measured: no TAP, no
//! vfio-user, no VM.
//!
//! ```text
//! cargo test --release -p cx4-model --lib -- --ignored --nocapture send_bench
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*eth_send_rounds*' \
//!     target/release/deps/cx4_model-<hash> --ignored --exact datapath::tests::send_bench::send_bench
//! ```
//!
//! The first prints the (wall) time per frame for each case; under callgrind, divide the
//! instructions counted by the frames it prints (the cases run one after the other; set
//! `CX4_BENCH_CASE` to `1514` or `60` to count one). `CX4_BENCH_FRAMES` sets the frames per
//! case (default 20,000).

use super::*;
use crate::ec::testing::bench_env;

/// Bytes of each frame mlx5e copies into the WQE on a ConnectX-4 (`MLX5_INLINE_MODE_L2`:
/// Ethernet header and a VLAN tag's room, `mlx5e_calc_min_inline`).
const INLINE: usize = 18;
/// WQEs posted before the completions are taken (mlx5e's NAPI budget polls up to 64 CQEs; the
/// harness's CQ holds 64).
const BATCH: u16 = 32;

/// An IPv4 frame of `len` bytes (TCP when `tcp`, else UDP) with its checksums left zero, as
/// the stack hands it to a driver that offloads them.
fn ip_frame(len: usize, tcp: bool) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (len - 14) as u16;
    let ip = &mut f[14..34];
    ip[..12].copy_from_slice(&[0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 0, 0, 0]);
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[9] = if tcp { 6 } else { 17 };
    ip[12..20].copy_from_slice(&[10, 99, 0, 1, 10, 99, 0, 2]);
    let l4 = &mut f[34..];
    l4[..4].copy_from_slice(&[0x13, 0x89, 0xa4, 0x10]);
    if tcp {
        l4[12] = 0x50; // data offset 5
        l4[13] = 0x18; // PSH ACK
        l4[16..18].fill(0);
    } else {
        l4[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes());
        l4[6..8].fill(0);
    }
    f
}

/// The mlx5e SEND WQE at index `idx` for `frame` (its bytes after the inline part at `addr`):
/// ctrl, Ethernet segment (L3 and L4 checksums, [`INLINE`] header bytes starting in it), one
/// data segment. Returns the doorbell's first 8 bytes.
fn eth_wqe(d: &Device, idx: u16, frame: &[u8], addr: u64) -> [u8; 8] {
    let mut w = [0u8; 64];
    let dw0 = (u32::from(idx) << 8) | u32::from(wqe_opcode::SEND);
    w[0..4].copy_from_slice(&dw0.to_be_bytes());
    w[4..8].copy_from_slice(&((SQN << 8) | 4).to_be_bytes());
    w[11] = 0x08; // CQ update
    w[20] = (cx4_hw::wqe::CsFlags::L3 | cx4_hw::wqe::CsFlags::L4).bits();
    w[28..30].copy_from_slice(&(INLINE as u16).to_be_bytes());
    w[30..30 + INLINE].copy_from_slice(&frame[..INLINE]);
    w[48..52].copy_from_slice(&((frame.len() - INLINE) as u32).to_be_bytes());
    w[52..56].copy_from_slice(&crate::fw::RESERVED_LKEY.to_be_bytes());
    w[56..64].copy_from_slice(&addr.to_be_bytes());
    d.bus
        .mem
        .write(SQ_RING + (u64::from(idx) % 64) * 64, &w)
        .unwrap();
    w[..8].try_into().unwrap()
}

/// Sends `frames` copies of `frame` (stored at [`DATA`]) as mlx5e would, [`BATCH`] WQEs at a
/// time, each with its own doorbell; after each batch takes the CQEs (advancing the CQ's
/// doorbell record) and the frames off the wire. Returns the frames that crossed.
#[inline(never)]
fn eth_send_rounds(d: &mut Device, port: &Loopback, frame: &[u8], frames: u32) -> usize {
    let mut sent = 0;
    let mut pc = 0u16;
    let mut cc = 0u32;
    let mut left = frames;
    while left > 0 {
        let n = left.min(u32::from(BATCH)) as u16;
        for _ in 0..n {
            let db = eth_wqe(d, pc, frame, DATA + INLINE as u64);
            pc = pc.wrapping_add(1);
            d.bus
                .mem
                .write(SQ_DBR + 4, &u32::from(pc).to_be_bytes())
                .unwrap();
            d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
                .unwrap();
        }
        for _ in 0..n {
            let c = cqe(d, u64::from(cc % 64));
            assert_eq!(c[63] >> 4, cx4_hw::cq::cqe::opcode::REQ, "CQE {cc}");
            cc += 1;
        }
        d.bus.mem.write(CQ_DBR, &cc.to_be_bytes()).unwrap();
        sent += port.take().len();
        left -= u32::from(n);
    }
    sent
}

#[test]
#[ignore = "host micro-benchmark (tools/bench/README.md)"]
fn send_bench() {
    let frames = bench_env("CX4_BENCH_FRAMES").unwrap_or(20_000u32);
    let only: Option<usize> = bench_env("CX4_BENCH_CASE");
    for (len, tcp) in [(1514, true), (60, false)] {
        if only.is_some_and(|o| o != len) {
            continue;
        }
        let f = ip_frame(len, tcp);
        // One frame first, checked: the card filled in both checksums.
        let (mut d, port) = device();
        d.bus.mem.write(DATA, &f).unwrap();
        let db = eth_wqe(&d, 0, &f, DATA + INLINE as u64);
        d.bus.mem.write(SQ_DBR + 4, &1u32.to_be_bytes()).unwrap();
        d.region_write(0, u64::from(UAR) * 4096 + 0x800, &db)
            .unwrap();
        let out = port.take();
        assert_eq!(out.len(), 1);
        let sum = |b: &[u8]| {
            let s: u32 = b
                .chunks(2)
                .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
                .sum();
            (s & 0xffff) + (s >> 16)
        };
        assert_eq!(sum(&out[0][14..34]), 0xffff, "IPv4 header checksum");
        assert_ne!(out[0][..len], f[..], "the L4 checksum was filled in");
        let (mut d, port) = device();
        d.bus.mem.write(DATA, &f).unwrap();
        let t0 = std::time::Instant::now();
        let sent = eth_send_rounds(&mut d, &port, &f, frames);
        let wall = t0.elapsed().as_nanos() as f64;
        assert_eq!(sent, frames as usize, "one frame per WQE");
        assert_eq!(d.path.tx_frames, u64::from(frames));
        assert_eq!(d.path.tx_errors, 0);
        eprintln!(
            "send_bench: {frames} frames of {len} B ({}, L3+L4 checksum offload, {INLINE} B \
             inline): {sent} frames on the wire; {:.0} ns per frame (wall)",
            if tcp { "TCP" } else { "UDP" },
            wall / f64::from(frames)
        );
    }
}
