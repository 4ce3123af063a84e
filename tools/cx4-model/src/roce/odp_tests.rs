//! On-demand paging (`odp.rs`): page faults of the RC requester and responder on pages whose
//! MTT enables are clear, the PAGE_FAULT EQE as mlx5_ib parses it (odp.c
//! `mlx5_ib_eq_pf_process`), the queue held until PAGE_FAULT_RESUME, and a resume with error.
//! The "driver" here sets the enables directly where mlx5_ib would post a UMR (the UMR path
//! is `umr_tests.rs`'s).

use super::*;
use crate::fw::MkeyMap;
use cx4_hw::eq::{event_type as ev, pfault_subtype, pfault_wqe_type};
use cx4_hw::mkey::mkey_index;

impl Card {
    /// Sets the enables of every page of the card's MR (0: zapped, 3: present).
    fn set_enables(&mut self, en: u8) {
        let m = self.d.fw.nic.mkeys.get_mut(&mkey_index(self.lkey)).unwrap();
        let MkeyMap::Mtt { enables, .. } = &mut m.map else {
            panic!("an MTT mkey")
        };
        enables.iter_mut().for_each(|e| *e = en);
    }

    /// The EQ takes page faults (mlx5_ib's ODP EQ).
    fn take_page_faults(&mut self) {
        self.d.fw.eqs.get_mut(&5).unwrap().mask[0] |= 1 << ev::PAGE_FAULT;
    }

    /// The PAGE_FAULT EQEs so far.
    fn page_faults(&self) -> Vec<[u8; 64]> {
        eqes(self)
            .into_iter()
            .filter(|e| e[1] == ev::PAGE_FAULT)
            .collect()
    }

    /// PAGE_FAULT_RESUME of a fault of `ty` on the card's QP.
    fn resume(&mut self, ty: u8, error: bool) {
        let qpn = self.qpn;
        ok::<cmds::PageFaultResume>(&mut self.d, |i| {
            let p = i.page_fault_info_mut();
            p.set_page_fault_type(ty.into());
            p.set_wq_number(qpn);
            p.set_error(error.into());
        });
    }
}

#[test]
fn a_send_from_a_missing_page_waits_for_the_resume_then_goes_out() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    a.take_page_faults();
    a.write(VA, b"paged in later");
    a.set_enables(0);
    b.post_recv(VA + 0x40, 64);
    a.post_send(wop::SEND, &[data(14, a.lkey, VA)], 0, true);
    assert_eq!(
        run(&mut a, &mut b),
        0,
        "nothing sent while the page is missing"
    );
    let f = a.page_faults();
    assert_eq!(f.len(), 1);
    // sub_type WQE; wqe_index at 0x26; pftype_wq at 0x38: REQ_SEND_OR_WRITE << 24 | QPN.
    assert_eq!(f[0][3], pfault_subtype::WQE);
    assert_eq!(be16(&f[0], 0x26), 0);
    assert_eq!(
        be32(&f[0], 0x38),
        u32::from(pfault_wqe_type::REQ_SEND_OR_WRITE) << 24 | a.qpn
    );
    // A doorbell while held changes nothing.
    a.post_send(wop::SEND, &[data(14, a.lkey, VA)], 0, true);
    assert_eq!(run(&mut a, &mut b), 0);
    assert_eq!(a.page_faults().len(), 1, "one fault per hold");
    a.set_enables(3);
    a.resume(pfault_wqe_type::REQ_SEND_OR_WRITE, false);
    b.post_recv(VA + 0x80, 64);
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(b.read(VA + 0x40, 14), b"paged in later");
    assert_eq!(b.read(VA + 0x80, 14), b"paged in later");
}

#[test]
fn a_receive_into_a_missing_page_is_rnr_naked_until_the_resume() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    b.take_page_faults();
    b.post_recv(VA + 0x40, 64);
    b.set_enables(0);
    a.write(VA, b"0123456789");
    a.post_send(wop::SEND, &[data(10, a.lkey, VA)], 0, true);
    run(&mut a, &mut b);
    assert!(a.next_cqe(false).is_none(), "RNR NAKed, waiting");
    assert!(b.next_cqe(true).is_none(), "the receive WQE was put back");
    let f = b.page_faults();
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0][3], be16(&f[0], 0x26), be32(&f[0], 0x38)),
        (
            pfault_subtype::WQE,
            0,
            u32::from(pfault_wqe_type::RESP) << 24 | b.qpn
        )
    );
    // The retry while held: RNR NAKed again, no second fault.
    a.d.roce_tick_at(crate::roce::engine::now_ns() + 1_000_000_000);
    run(&mut a, &mut b);
    assert!(a.next_cqe(false).is_none());
    assert_eq!(b.page_faults().len(), 1);
    b.set_enables(3);
    b.resume(pfault_wqe_type::RESP, false);
    a.d.roce_tick_at(crate::roce::engine::now_ns() + 2_000_000_000);
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(b.read(VA + 0x40, 10), b"0123456789");
    let r = b.next_cqe(true).unwrap();
    assert_eq!((r[63] >> 4, be16(&r, 0x3c)), (cqe_op::RESP_SEND, 0));
}

#[test]
fn an_rdma_write_fault_names_the_rkey_and_an_error_resume_fails_the_write() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    b.take_page_faults();
    b.set_enables(1); // readable, not writable
    a.write(VA, b"write me");
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x100, b.lkey), data(8, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let f = b.page_faults();
    assert_eq!(f.len(), 1);
    // RDMA: r_key at 0x24, packet_length 0x2a, rdma_op_len 0x2c, rdma_va 0x30, pftype_token
    // 0x38 = (MLX5_PFAULT_RDMA | MLX5_PFAULT_WRITE) << 24 | QPN.
    let va = u64::from(be32(&f[0], 0x30)) << 32 | u64::from(be32(&f[0], 0x34));
    assert_eq!(
        (
            f[0][3],
            be32(&f[0], 0x24),
            be16(&f[0], 0x2a),
            be32(&f[0], 0x2c),
            va
        ),
        (pfault_subtype::RDMA, b.lkey, 8, 8, VA + 0x100)
    );
    assert_eq!(be32(&f[0], 0x38), 6 << 24 | b.qpn);
    assert!(a.next_cqe(false).is_none(), "RNR NAKed, waiting");
    b.resume(6, true);
    a.d.roce_tick_at(crate::roce::engine::now_ns() + 1_000_000_000);
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::REMOTE_ACCESS_ERR)
    );
    assert_eq!(b.state(), qpc_state::ERR);
    assert_ne!(b.read(VA + 0x100, 8), b"write me");
}

#[test]
fn a_page_zapped_under_a_posted_send_stalls_the_queue_without_spending_retries() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    a.take_page_faults();
    a.write(VA, b"zapped in flight");
    b.post_recv(VA + 0x40, 64);
    a.post_send(wop::SEND, &[data(16, a.lkey, VA)], 0, true);
    // The request leaves and is lost; then an invalidation zaps the page under the WQE.
    assert_eq!(shuttle(&mut a, &mut b, &mut |from_a, _| from_a), 1);
    a.set_enables(0);
    let retries = |c: &Card| match &c.d.roce.state.qps[&c.qpn].req {
        Some(crate::roce::engine::ReqSide::Rc(r)) => r.retries_left(),
        _ => panic!("an RC requester"),
    };
    let before = retries(&a);
    // The ACK timer's retransmission (the loss costs one retry) meets the missing page:
    // a WQE page fault, nothing sent.
    let t0 = crate::roce::engine::now_ns();
    a.d.roce_tick_at(t0 + 1_000_000_000);
    assert_eq!(
        run(&mut a, &mut b),
        0,
        "nothing sent while the page is missing"
    );
    assert_eq!(retries(&a), before - 1);
    let f = a.page_faults();
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0][3], be16(&f[0], 0x26), be32(&f[0], 0x38)),
        (
            pfault_subtype::WQE,
            0,
            u32::from(pfault_wqe_type::REQ_SEND_OR_WRITE) << 24 | a.qpn
        )
    );
    // The driver takes its time: the send queue stands still, its ACK timer with it.
    for k in 2..20u64 {
        a.d.roce_tick_at(t0 + k * 1_000_000_000);
        assert_eq!(run(&mut a, &mut b), 0);
    }
    assert_eq!(retries(&a), before - 1, "no retry spent while stalled");
    assert!(a.next_cqe(false).is_none());
    assert_eq!(a.page_faults().len(), 1, "one fault per hold");
    // The resume sends the packet again at once.
    a.set_enables(3);
    a.resume(pfault_wqe_type::REQ_SEND_OR_WRITE, false);
    assert_eq!(run(&mut a, &mut b), 2, "the request and its ACK");
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    assert_eq!(b.read(VA + 0x40, 16), b"zapped in flight");
    assert_eq!(retries(&a), before, "an ACK restores the retry count");
}

#[test]
fn a_read_response_into_a_page_zapped_after_the_fetch_waits_for_the_resume() {
    let (mut a, mut b) = pair(qpc_st::RC, 14);
    a.take_page_faults();
    b.write(VA + 0x200, b"read me back, all of it");
    a.write(VA + 0x40, &[0u8; 23]);
    // The READ is fetched and sent; then the page it lands in is zapped.
    a.post_send(
        wop::RDMA_READ,
        &[raddr(VA + 0x200, b.lkey), data(23, a.lkey, VA + 0x40)],
        0,
        true,
    );
    a.set_enables(0);
    run(&mut a, &mut b);
    assert!(a.next_cqe(false).is_none(), "the response was not placed");
    let f = a.page_faults();
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0][3], be16(&f[0], 0x26), be32(&f[0], 0x38)),
        (
            pfault_subtype::WQE,
            0,
            u32::from(pfault_wqe_type::REQ_READ_OR_ATOMIC) << 24 | a.qpn
        )
    );
    // Long past the ACK timeout: still waiting, no retry spent.
    a.d.roce_tick_at(crate::roce::engine::now_ns() + 10_000_000_000);
    assert_eq!(run(&mut a, &mut b), 0);
    a.set_enables(3);
    a.resume(pfault_wqe_type::REQ_READ_OR_ATOMIC, false);
    assert_eq!(
        run(&mut a, &mut b),
        2,
        "the READ asked again and its response"
    );
    let c = a.next_cqe(false).unwrap();
    assert_eq!(c[63] >> 4, cqe_op::REQ);
    assert_eq!(a.read(VA + 0x40, 23), b"read me back, all of it");
}
