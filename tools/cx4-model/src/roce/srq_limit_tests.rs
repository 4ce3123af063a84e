//! The SRQ limit event: an RMP armed by MODIFY_RMP with `bitmask.lwm` (mlx5_ib `arm_rmp_cmd`,
//! what `ibv_modify_srq(IBV_SRQ_LIMIT)` becomes with ISSI 1) raises one `SRQ_RQ_LIMIT` event
//! naming it when a WQE taken leaves fewer posted WQEs than the limit, then reads 0 (disarmed)
//! in QUERY_RMP; a limit set without the bitmask bit is ignored.

use super::*;
use cx4_hw::eq::event_type as ev;
use cx4_hw::srq::{rmpc_state, QueryRmpOut};

impl Card {
    /// MODIFY_RMP RDY → RDY with `lwm` in the context, `select` its bitmask bit.
    fn arm(&mut self, srqn: u32, lwm: u32, select: bool) {
        ok::<cmds::ModifyRmp>(&mut self.d, |i| {
            i.set_rmpn(srqn);
            i.set_rmp_state(rmpc_state::RDY.into());
            i.bitmask_mut().set_lwm(select.into());
            let c = i.ctx_mut();
            c.set_state(rmpc_state::RDY.into());
            c.wq_mut().set_lwm(lwm);
        });
    }

    fn lwm(&mut self, srqn: u32) -> u32 {
        let out = ok::<cmds::QueryRmp>(&mut self.d, |i| i.set_rmpn(srqn));
        view::<QueryRmpOut>(&out).rmp_context().wq().lwm()
    }

    /// The SRQ limit events on the card's EQ: the SRQ numbers they name.
    fn limit_events(&self) -> Vec<u32> {
        eqes(self)
            .into_iter()
            .filter(|e| e[1] == ev::SRQ_RQ_LIMIT)
            .map(|e| be32(&e, 0x38) & 0xff_ffff)
            .collect()
    }
}

#[test]
fn an_armed_srq_limit_fires_once_below_it_and_disarms() {
    let mut a = Card::new(1, qpc_st::RC);
    let mut b = Card::with_srq(2, qpc_st::RC, true);
    let (ia, ib) = (a.id(), b.id());
    a.connect(ib, 0x200, 0x100, 14);
    b.connect(ia, 0x100, 0x200, 14);
    // The EQ takes the SRQ events, as mlx5_core's async EQ does.
    b.d.fw.eqs.get_mut(&5).unwrap().mask[0] |= 1 << ev::SRQ_RQ_LIMIT;
    let srqn = b.d.fw.rdma.srqs.keys().copied().next().unwrap();
    for k in 0..8 {
        b.post_srq(VA + 0x1000 * (k + 1), 256);
    }
    // A limit without its bitmask bit changes nothing.
    b.arm(srqn, 7, false);
    assert_eq!(b.lwm(srqn), 0);
    b.arm(srqn, 5, true);
    assert_eq!(b.lwm(srqn), 5, "QUERY_RMP reads the armed limit");
    let send = |a: &mut Card, b: &mut Card, n: usize| {
        for _ in 0..n {
            a.post_send(wop::SEND, &[data(16, a.lkey, VA)], 0, true);
        }
        run(a, b);
    };
    // 8 posted, 3 taken: 5 left, not below the limit.
    send(&mut a, &mut b, 3);
    assert_eq!(b.limit_events(), Vec::<u32>::new(), "5 left is not below 5");
    assert_eq!(b.lwm(srqn), 5);
    // The fourth leaves 4: one event, the limit disarmed.
    send(&mut a, &mut b, 1);
    assert_eq!(b.limit_events(), vec![srqn]);
    assert_eq!(b.lwm(srqn), 0, "disarmed");
    send(&mut a, &mut b, 2);
    assert_eq!(
        b.limit_events(),
        vec![srqn],
        "no second event while disarmed"
    );
    // Armed again (2 left; the limit 3 is checked at the next WQE taken): one more event.
    b.arm(srqn, 3, true);
    send(&mut a, &mut b, 1);
    assert_eq!(b.limit_events(), vec![srqn, srqn]);
    for _ in 0..7 {
        assert_eq!(b.next_cqe(true).unwrap()[63] >> 4, cqe_op::RESP_SEND);
    }
}
