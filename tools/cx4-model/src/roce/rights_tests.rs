//! The responder's QP rights (`qpc.rre`, `rwe`, `rae`): a READ, WRITE or atomic the
//! responder's QP does not grant is NAKed with a remote access error even though the R_Key
//! would allow it, and the rights follow the transitions' optional-parameter mask (mlx5_ib's
//! `set_qpc_atomic_flags` and `opt_mask`: an RTS2RTS with RRE/RWE/RAE named changes them,
//! without the bits it does not).

use super::*;
use cx4_hw::eq::event_type as ev;
use cx4_hw::qp::OptParam;

impl Card {
    /// RTS2RTS with the rights `rre`, `rwe`, `rae` in the context and `opt` as the mask.
    fn set_rights(&mut self, (rre, rwe, rae): (bool, bool, bool), opt: OptParam) {
        let qpn = self.qpn;
        ok::<cmds::Rts2RtsQp>(&mut self.d, |i| {
            i.set_qpn(qpn);
            i.set_opt_param_mask(opt.bits());
            let c = i.qpc_mut();
            c.set_rre(rre.into());
            c.set_rwe(rwe.into());
            c.set_rae(rae.into());
        });
    }
}

/// The responder refused the request: the requester's completion is a remote access error,
/// both QPs are in error, and the responder's card raised the QP access error event.
fn refused(a: &mut Card, b: &mut Card, what: &str) {
    let c = a.next_cqe(false).unwrap();
    assert_eq!(
        (c[63] >> 4, c[0x37]),
        (cqe_op::REQ_ERR, syndrome::REMOTE_ACCESS_ERR),
        "{what}: requester's completion"
    );
    assert_eq!(a.state(), qpc_state::ERR, "{what}: requester in error");
    assert_eq!(b.state(), qpc_state::ERR, "{what}: responder in error");
    let events: Vec<_> = eqes(b).into_iter().filter(|e| e[1] != ev::COMP).collect();
    assert_eq!(events.len(), 1, "{what}: one QP event: {events:02x?}");
    assert_eq!(events[0][1], ev::WQ_ACCESS_ERROR, "{what}");
    assert_eq!(be32(&events[0], 0x38) & 0xff_ffff, b.qpn, "{what}");
}

/// A connected pair whose responder (`b`) takes QP error events on its EQ, as mlx5_core's
/// async EQ does.
fn watched_pair() -> (Card, Card) {
    let (a, mut b) = pair(qpc_st::RC, 14);
    b.d.fw.eqs.get_mut(&5).unwrap().mask[0] |= 1 << ev::WQ_ACCESS_ERROR;
    (a, b)
}

#[test]
fn an_atomic_the_responder_qp_does_not_allow_is_a_remote_access_error() {
    let (mut a, mut b) = watched_pair();
    b.write(VA + 0x800, &100u64.to_be_bytes());
    // ibv_modify_qp(IBV_QP_ACCESS_FLAGS = REMOTE_WRITE | REMOTE_READ): RAE cleared.
    b.set_rights(
        (true, true, false),
        OptParam::RRE | OptParam::RWE | OptParam::RAE,
    );
    a.post_send(
        wop::ATOMIC_FA,
        &[
            raddr(VA + 0x800, b.lkey),
            atomic(5, 0),
            data(8, a.lkey, VA + 0x10),
        ],
        0,
        true,
    );
    run(&mut a, &mut b);
    refused(&mut a, &mut b, "fetch-add");
    assert_eq!(b.read(VA + 0x800, 8), 100u64.to_be_bytes(), "not executed");
}

#[test]
fn read_and_write_need_the_qp_rights_and_the_mask_gates_changes() {
    // Without RRE a READ is refused; WRITEs (RWE kept) still land first.
    let (mut a, mut b) = watched_pair();
    b.set_rights((false, true, false), OptParam::RRE | OptParam::RAE);
    a.write(VA, &[0x5a; 64]);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x1000, b.lkey), data(64, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    let c = a.next_cqe(false).unwrap();
    assert_eq!(c[63] >> 4, cqe_op::REQ, "the WRITE completes");
    assert_eq!(b.read(VA + 0x1000, 64), vec![0x5a; 64]);
    b.write(VA + 0x2000, &[0xa5; 32]);
    a.post_send(
        wop::RDMA_READ,
        &[raddr(VA + 0x2000, b.lkey), data(32, a.lkey, VA + 0x3000)],
        0,
        true,
    );
    run(&mut a, &mut b);
    refused(&mut a, &mut b, "READ");
    assert_eq!(a.read(VA + 0x3000, 32), vec![0; 32], "no data came back");

    // Clearing RWE in the context without its mask bit changes nothing; with it, WRITEs
    // are refused.
    let (mut a, mut b) = watched_pair();
    b.set_rights((false, false, false), OptParam::empty());
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x1000, b.lkey), data(64, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    assert_eq!(a.next_cqe(false).unwrap()[63] >> 4, cqe_op::REQ);
    b.set_rights((true, false, true), OptParam::RWE);
    a.write(VA, &[0x77; 64]);
    a.post_send(
        wop::RDMA_WRITE,
        &[raddr(VA + 0x4000, b.lkey), data(64, a.lkey, VA)],
        0,
        true,
    );
    run(&mut a, &mut b);
    refused(&mut a, &mut b, "WRITE");
    assert_eq!(b.read(VA + 0x4000, 64), vec![0; 64], "nothing written");
}
