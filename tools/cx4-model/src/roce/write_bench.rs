//! A host micro-benchmark of the RoCE engine (the harness of `device_tests.rs`), ignored by
//! `cargo test`: what `make bench`'s ib_write_bw runs between two VMs — RDMA WRITEs of 64 KiB
//! at path MTU 1024, 16 posted at a time, every one signaled — between two cards whose frames
//! are shuttled in memory, through the real doorbell, WQE, gather, frame build, ICRC, parse,
//! R_Key, placement, ACK and CQE paths. Only the time spent inside the card is measured: no
//! TAP, no vfio-user, no VM.
//!
//! ```text
//! cargo test --release -p cx4-model --lib -- --ignored --nocapture write_bench
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*write_bench_rounds*' \
//!     target/release/deps/cx4_model-<hash> --ignored --exact roce::device_tests::write_bench::write_bench
//! ```
//!
//! The first prints the (wall) time per RoCE packet (sent and received, both cards);
//! under callgrind, divide the instructions counted by the packets it prints.
//! `CX4_BENCH_MESSAGES` sets the number of messages (default 64: 4096 data packets).

use super::*;
use crate::ec::testing::bench_env;

/// The message size, as perftest's ib_write_bw `-s 65536`.
const MSG: u32 = 64 * 1024;
/// WQEs posted per round (perftest's default `--tx-depth` is 128; the harness's CQs hold 64).
const BATCH: u32 = 16;

/// Posts `messages` 64 KiB RDMA WRITEs from `a` to `b`, [`BATCH`] at a time, and runs each
/// batch to completion (both sides quiet, every CQE taken); returns the frames that crossed.
#[inline(never)]
fn write_bench_rounds(a: &mut Card, b: &mut Card, messages: u32) -> usize {
    let mut frames = 0;
    let mut left = messages;
    while left > 0 {
        let n = left.min(BATCH);
        for _ in 0..n {
            a.post_send(
                wop::RDMA_WRITE,
                &[raddr(VA + 0x10000, b.lkey), data(MSG, a.lkey, VA)],
                0,
                true,
            );
        }
        frames += run(a, b);
        for k in 0..n {
            let c = a
                .next_cqe(false)
                .unwrap_or_else(|| panic!("requester CQE {k} of {n}"));
            assert_eq!(c[63] >> 4, cqe_op::REQ);
        }
        left -= n;
    }
    frames
}

#[test]
#[ignore = "host micro-benchmark (tools/bench/README.md)"]
fn write_bench() {
    let messages = bench_env("CX4_BENCH_MESSAGES").unwrap_or(64u32);
    // ACK timeout 2^22 × 4.096 µs (17 s): no retransmission however slow the host (callgrind).
    let (mut a, mut b) = pair(qpc_st::RC, 22);
    let msg: Vec<u8> = (0..MSG).map(|i| (i * 7 + i / 4096) as u8).collect();
    a.write(VA, &msg);
    let t0 = std::time::Instant::now();
    let frames = write_bench_rounds(&mut a, &mut b, messages);
    let wall = t0.elapsed().as_nanos() as f64;
    assert_eq!(b.read(VA + 0x10000, MSG as usize), msg, "the data landed");
    let data_packets = messages as usize * MSG.div_ceil(1024) as usize;
    assert!(
        frames > data_packets,
        "{frames} frames for {data_packets} data packets"
    );
    for c in [&a, &b] {
        assert_eq!(c.d.roce.state.stats.timer_runs, 0, "no retransmission");
        assert_eq!(c.d.roce.state.stats.rx_dropped, 0, "no packet dropped");
    }
    // Each frame is sent by one card and received by the other: two packets of `make bench`'s
    // count (sent + received).
    let packets = 2 * frames;
    eprintln!(
        "write_bench: {messages} WRITEs of {MSG} B at MTU 1024: {frames} frames \
         ({data_packets} data), {packets} packets sent + received; \
         {:.0} ns per packet (wall)",
        wall / packets as f64
    );
}
