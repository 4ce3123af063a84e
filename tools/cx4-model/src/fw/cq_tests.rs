//! Completions as the firmware writes them: the card's clock in every CQE but an error CQE.

use cx4_hw::cq::cqe::{opcode, Cqe64};
use zerocopy::FromBytes;

use crate::{
    clock::device_cycles,
    datapath::tests::{device, CQN, CQ_RING},
};

/// A CQE carries the free-running clock — device cycles at `device_frequency_khz` (156.25 MHz
/// on both profiles) of the moment it is written, the clock the initialization segment's
/// internal timer shows — and an error CQE keeps its syndrome bytes where the timestamp is.
#[test]
fn completions_carry_the_cards_clock_and_error_cqes_their_syndrome() {
    let (mut d, _wire) = device();
    let khz = d.fw.caps.general("device_frequency_khz");
    assert_eq!(khz, 156_250);
    let mut req = [0u8; 64];
    req[63] = opcode::REQ << 4;
    let mut err = [0u8; 64];
    err[0x36] = 0x12; // vendor syndrome
    err[0x37] = 0x05; // WR_FLUSH_ERR
    err[63] = opcode::REQ_ERR << 4;
    let at = [2_000_000_000u64, 2_000_000_064, 9_000_000_000];
    for (i, (now, cqe)) in at.iter().zip([&req, &req, &err]).enumerate() {
        d.hca
            .fw
            .post_cqe_at(&mut d.bus, CQN, cqe, false, *now)
            .unwrap();
        let mut got = [0u8; 64];
        d.bus.mem.read(CQ_RING + 64 * i as u64, &mut got).unwrap();
        let c = Cqe64::read_from_bytes(&got).unwrap();
        if i < 2 {
            assert_eq!(c.timestamp(), device_cycles(*now, khz), "CQE {i}");
        } else {
            assert_eq!((got[0x36], got[0x37]), (0x12, 0x05), "the error CQE");
        }
    }
    // 2 s of 156.25 MHz cycles; 64 ns later, 10 cycles more.
    assert_eq!(device_cycles(at[0], khz), 312_500_000);
    assert_eq!(device_cycles(at[1], khz) - device_cycles(at[0], khz), 10);
}
