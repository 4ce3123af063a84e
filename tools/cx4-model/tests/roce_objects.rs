//! The RoCE firmware objects through the command interface, as mlx5_ib and libmlx5 use them
//! (`--roce`): the RoCE address table, XRC domains, QPs through their state machine with each
//! transition's fields read back by QUERY_QP, multicast attachment, and the PRM statuses for
//! bad states, bad values and missing objects.

mod common;

use common::{input, view, Driver};
use cx4_hw::{
    command as cmds,
    pd::AllocPdOut,
    qp::{mtu, qpc_st, qpc_state, rq_type, CreateQpIn, CreateQpOut, OptParam, QueryQpOut},
    roce::{roce_l3_type, roce_version, AllocXrcdOut, QueryRoceAddressOut},
    status,
};

const MAC: [u8; 6] = [0x02, 0xc4, 0, 0, 0, 0x01];

fn v4_gid(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&ip);
    g
}

fn set_gid(d: &mut Driver, idx: u32, gid: [u8; 16], version: u8, l3: u8) -> Vec<u8> {
    d.run(
        &input::<cmds::SetRoceAddress>(|i| {
            i.set_roce_address_index(idx);
            i.set_vhca_port_num(1);
            let a = i.roce_address_mut();
            a.source_l3_address_mut().copy_from_slice(&gid);
            a.set_source_mac(MAC);
            a.set_roce_version(version.into());
            a.set_roce_l3_type(l3.into());
        }),
        16,
    )
}

struct Base {
    pd: u32,
    cqn: u32,
}

fn base(d: &mut Driver) -> Base {
    let pd = view::<AllocPdOut>(&d.ok::<cmds::AllocPd>(|_| {})).pd();
    let eqn = d.create_eq(3, 1, 0);
    let cqn = d.create_cq(6, eqn);
    Base { pd, cqn }
}

/// A CREATE_QP input as mlx5_ib builds a kernel QP: 2^4 receive WQEs of 64 bytes, then 2^4
/// send basic blocks, in one page.
fn qp_input(
    d: &mut Driver,
    b: &Base,
    st: u8,
    pages: usize,
    f: impl FnOnce(&mut CreateQpIn),
) -> Vec<u8> {
    let pas: Vec<u64> = (0..pages).map(|_| d.alloc_page()).collect();
    let dbr = d.alloc_page();
    let uar = d.uar.unwrap();
    let (pd, cqn) = (b.pd, b.cqn);
    let mut v = input::<cmds::CreateQp>(|i| {
        let c = i.qpc_mut();
        c.set_st(st.into());
        c.set_pd(pd);
        c.set_uar_page(uar);
        c.set_cqn_snd(cqn);
        c.set_cqn_rcv(cqn);
        c.set_log_rq_size(4);
        c.set_log_rq_stride(2);
        c.set_log_sq_size(4);
        c.set_rq_type(rq_type::NON_ZERO_RQ.into());
        c.set_dbr_addr(dbr);
        f(i);
    });
    v.resize(CreateQpIn::SIZE + pas.len() * 8, 0);
    for (i, &p) in pas.iter().enumerate() {
        CreateQpIn::set_pas(&mut v, i, p).unwrap();
    }
    v
}

fn create_qp(d: &mut Driver, b: &Base, st: u8) -> u32 {
    let v = qp_input(d, b, st, 1, |_| {});
    view::<CreateQpOut>(&d.run_ok(&v, CreateQpOut::SIZE)).qpn()
}

fn query(d: &mut Driver, qpn: u32) -> QueryQpOut {
    view::<QueryQpOut>(&d.ok::<cmds::QueryQp>(|i| i.set_qpn(qpn)))
}

/// RST → INIT → RTR → RTS for a connected QP looped back to itself through GID 0.
fn to_rts(d: &mut Driver, qpn: u32) {
    d.ok::<cmds::Rst2InitQp>(|i| {
        i.set_qpn(qpn);
        let c = i.qpc_mut();
        c.set_rre(1);
        c.set_rwe(1);
        let p = c.primary_address_path_mut();
        p.set_vhca_port_num(1);
        p.set_pkey_index(0);
    });
    d.ok::<cmds::Init2RtrQp>(|i| {
        i.set_qpn(qpn);
        let c = i.qpc_mut();
        c.set_mtu(mtu::MTU_1K.into());
        c.set_log_msg_max(20);
        c.set_remote_qpn(qpn);
        c.set_next_rcv_psn(0x4242);
        c.set_log_rra_max(2);
        c.set_min_rnr_nak(12);
        let p = c.primary_address_path_mut();
        p.set_src_addr_index(0);
        p.set_hop_limit(64);
        p.set_udp_sport(0xc123);
        p.set_rmac_47_32(0x02c4);
        p.set_rmac_31_0(0x0000_0001);
        p.set_vhca_port_num(1);
        // Not this transition's: ignored.
        c.set_next_send_psn(0x999);
    });
    d.ok::<cmds::Rtr2RtsQp>(|i| {
        i.set_qpn(qpn);
        let c = i.qpc_mut();
        c.set_next_send_psn(0x5151);
        c.set_retry_count(7);
        c.set_rnr_retry(6);
        c.set_log_sra_max(1);
        c.primary_address_path_mut().set_ack_timeout(14);
    });
}

#[test]
fn rc_qp_walks_its_states_and_queries_back_what_each_transition_took() {
    let mut d = Driver::up(&["--roce"]);
    let b = base(&mut d);
    assert_eq!(
        set_gid(
            &mut d,
            0,
            v4_gid([10, 99, 0, 1]),
            roce_version::V2,
            roce_l3_type::IPV4
        )[0],
        0
    );
    let qpn = create_qp(&mut d, &b, qpc_st::RC);
    assert_eq!(query(&mut d, qpn).qpc().state() as u8, qpc_state::RST);
    to_rts(&mut d, qpn);
    let q = query(&mut d, qpn);
    let c = q.qpc();
    assert_eq!(c.state() as u8, qpc_state::RTS);
    assert_eq!(
        (
            c.remote_qpn(),
            c.next_rcv_psn(),
            c.next_send_psn(),
            c.mtu() as u8
        ),
        (qpn, 0x4242, 0x5151, mtu::MTU_1K)
    );
    assert_eq!(
        (
            c.retry_count(),
            c.rnr_retry(),
            c.log_sra_max(),
            c.log_rra_max()
        ),
        (7, 6, 1, 2)
    );
    assert_eq!((c.rre(), c.rwe(), c.rae(), c.min_rnr_nak()), (1, 1, 0, 12));
    let p = c.primary_address_path();
    assert_eq!(
        (
            p.ack_timeout(),
            p.hop_limit(),
            p.udp_sport(),
            p.vhca_port_num()
        ),
        (14, 64, 0xc123, 1)
    );
    assert!(d
        .model
        .control("roce")
        .contains(&format!("qp={qpn:#x}/RC/RTS")));

    // RTS → RTS with an optional field named in the mask takes it; without, ignores it.
    d.ok::<cmds::Rts2RtsQp>(|i| {
        i.set_qpn(qpn);
        i.set_opt_param_mask(OptParam::RNR_TIMEOUT.bits());
        i.qpc_mut().set_min_rnr_nak(3);
        i.qpc_mut().set_rre(0);
    });
    let c = *query(&mut d, qpn).qpc();
    assert_eq!((c.min_rnr_nak(), c.rre()), (3, 1));

    // Transitions from the wrong state.
    d.err::<cmds::Rtr2RtsQp>(status::BAD_QP_STATE, |i| i.set_qpn(qpn));
    d.err::<cmds::Rst2InitQp>(status::BAD_QP_STATE, |i| i.set_qpn(qpn));
    // The QP holds its CQ and PD.
    d.err::<cmds::DestroyCq>(status::BAD_RES_STATE, |i| i.set_cqn(b.cqn));
    d.err::<cmds::DeallocPd>(status::BAD_RES_STATE, |i| i.set_pd(b.pd));

    d.ok::<cmds::ToErrQp>(|i| i.set_qpn(qpn));
    assert_eq!(query(&mut d, qpn).qpc().state() as u8, qpc_state::ERR);
    d.ok::<cmds::ToRstQp>(|i| i.set_qpn(qpn));
    assert_eq!(query(&mut d, qpn).qpc().state() as u8, qpc_state::RST);
    // From RESET the walk starts over.
    to_rts(&mut d, qpn);
    d.ok::<cmds::DestroyQp>(|i| i.set_qpn(qpn));
    d.err::<cmds::DestroyQp>(status::BAD_RES, |i| i.set_qpn(qpn));
    d.err::<cmds::QueryQp>(status::BAD_RES, |i| i.set_qpn(qpn));
    d.ok::<cmds::DeallocPd>(|i| i.set_pd(b.pd));
    d.shut_down();
}

#[test]
fn transitions_check_their_fields() {
    let mut d = Driver::up(&["--roce"]);
    let b = base(&mut d);
    let qpn = create_qp(&mut d, &b, qpc_st::RC);
    // Port 0 does not exist.
    d.err::<cmds::Rst2InitQp>(status::BAD_PARAM, |i| i.set_qpn(qpn));
    d.ok::<cmds::Rst2InitQp>(|i| {
        i.set_qpn(qpn);
        i.qpc_mut().primary_address_path_mut().set_vhca_port_num(1);
    });
    let rtr = |d: &mut Driver, want: u8, gid_idx: u32, rqpn: u32, m: u8| {
        let inp = input::<cmds::Init2RtrQp>(|i| {
            i.set_qpn(qpn);
            let c = i.qpc_mut();
            c.set_mtu(m.into());
            c.set_remote_qpn(rqpn);
            c.primary_address_path_mut().set_src_addr_index(gid_idx);
            c.primary_address_path_mut().set_vhca_port_num(1);
        });
        let out = d.run(&inp, 16);
        assert_eq!(
            out[0],
            want,
            "gid {gid_idx} rqpn {rqpn} mtu {m}: {}",
            d.model.log_tail(3)
        );
    };
    // No GID at index 0 yet.
    rtr(&mut d, status::BAD_PARAM, 0, qpn, mtu::MTU_1K);
    assert_eq!(
        set_gid(
            &mut d,
            0,
            v4_gid([10, 99, 0, 1]),
            roce_version::V2,
            roce_l3_type::IPV4
        )[0],
        0
    );
    rtr(&mut d, status::BAD_PARAM, 0, 0, mtu::MTU_1K);
    rtr(&mut d, status::BAD_PARAM, 0, qpn, 7);
    rtr(&mut d, status::BAD_PARAM, 3, qpn, mtu::MTU_1K);
    // A failed transition leaves the QP where it was.
    assert_eq!(query(&mut d, qpn).qpc().state() as u8, qpc_state::INIT);
    rtr(&mut d, status::OK, 0, qpn, mtu::MTU_4K);
    assert_eq!(query(&mut d, qpn).qpc().state() as u8, qpc_state::RTR);
    d.ok::<cmds::DestroyQp>(|i| i.set_qpn(qpn));
    d.shut_down();
}

#[test]
fn create_qp_checks_objects_and_sizes() {
    let mut d = Driver::up(&["--roce"]);
    let b = base(&mut d);
    let run = |d: &mut Driver, v: &[u8]| d.run(v, CreateQpOut::SIZE)[0];
    let v = qp_input(&mut d, &b, qpc_st::RC, 1, |i| i.qpc_mut().set_pd(0x7777));
    assert_eq!(run(&mut d, &v), status::BAD_RES);
    let v = qp_input(&mut d, &b, qpc_st::RC, 1, |i| {
        i.qpc_mut().set_cqn_snd(0x7777)
    });
    assert_eq!(run(&mut d, &v), status::BAD_RES);
    // Receive WQEs of 2 KiB: beyond max_wqe_sz_rq.
    let v = qp_input(&mut d, &b, qpc_st::RC, 1, |i| {
        i.qpc_mut().set_log_rq_stride(7)
    });
    assert_eq!(run(&mut d, &v), status::BAD_PARAM);
    let v = qp_input(&mut d, &b, 0x6, 1, |_| {});
    assert_eq!(run(&mut d, &v), status::BAD_PARAM);
    // 2^8 receive WQEs of 64 bytes and 2^8 send blocks need 8 pages; one is given.
    let v = qp_input(&mut d, &b, qpc_st::RC, 1, |i| {
        i.qpc_mut().set_log_rq_size(8);
        i.qpc_mut().set_log_sq_size(8);
    });
    assert_eq!(run(&mut d, &v), status::BAD_INP_LEN);
    let v = qp_input(&mut d, &b, qpc_st::RC, 1, |i| {
        i.qpc_mut().set_rq_type(rq_type::SRQ_RQ.into());
        i.qpc_mut().set_srqn_rmpn_xrqn(0x55);
    });
    assert_eq!(run(&mut d, &v), status::BAD_RES);
    // One QP1 per port.
    let gsi = create_qp(&mut d, &b, qpc_st::QP1);
    let v = qp_input(&mut d, &b, qpc_st::QP1, 1, |_| {});
    assert_eq!(run(&mut d, &v), status::BAD_PARAM);
    d.ok::<cmds::DestroyQp>(|i| i.set_qpn(gsi));
    // mlx5_ib's UMR QP comes without a PD and gets one at RST2INIT (an existing one).
    let v = qp_input(&mut d, &b, qpc_st::REG_UMR, 1, |i| i.qpc_mut().set_pd(0));
    let umr = view::<CreateQpOut>(&d.run_ok(&v, CreateQpOut::SIZE)).qpn();
    let v = qp_input(&mut d, &b, qpc_st::RC, 1, |i| i.qpc_mut().set_pd(0));
    assert_eq!(run(&mut d, &v), status::BAD_RES);
    d.err::<cmds::Rst2InitQp>(status::BAD_RES, |i| {
        i.set_qpn(umr);
        i.qpc_mut().set_pd(0x7777);
        i.qpc_mut().primary_address_path_mut().set_vhca_port_num(1);
    });
    let pd = b.pd;
    d.ok::<cmds::Rst2InitQp>(|i| {
        i.set_qpn(umr);
        i.qpc_mut().set_pd(pd);
        i.qpc_mut().primary_address_path_mut().set_vhca_port_num(1);
    });
    assert_eq!(query(&mut d, umr).qpc().pd(), pd);
    d.err::<cmds::DeallocPd>(status::BAD_RES_STATE, |i| i.set_pd(pd));
    d.ok::<cmds::DestroyQp>(|i| i.set_qpn(umr));
    // The port may have its QP1 again.
    let gsi = create_qp(&mut d, &b, qpc_st::QP1);
    d.ok::<cmds::DestroyQp>(|i| i.set_qpn(gsi));
    d.shut_down();
}

#[test]
fn roce_address_table_set_query_clear() {
    let mut d = Driver::up(&["--roce"]);
    let g = v4_gid([10, 99, 0, 1]);
    assert_eq!(
        set_gid(&mut d, 1, g, roce_version::V2, roce_l3_type::IPV4)[0],
        status::OK
    );
    assert_eq!(
        set_gid(&mut d, 2, g, roce_version::V1, roce_l3_type::IPV4)[0],
        status::OK
    );
    let q = view::<QueryRoceAddressOut>(&d.ok::<cmds::QueryRoceAddress>(|i| {
        i.set_roce_address_index(1);
        i.set_vhca_port_num(1);
    }));
    let a = q.roce_address();
    assert_eq!(
        (
            a.source_l3_address(),
            a.source_mac(),
            a.roce_version() as u8
        ),
        (&g[..], MAC, roce_version::V2)
    );
    let line = d.model.control("roce");
    assert!(
        line.contains("gid=1/v2/::ffff:10.99.0.1/02:c4:00:00:00:01"),
        "{line}"
    );
    assert!(line.contains("gid=2/v1/::ffff:10.99.0.1/"), "{line}");
    // Bad entries.
    assert_eq!(
        set_gid(&mut d, 16, g, roce_version::V2, roce_l3_type::IPV4)[0],
        status::BAD_PARAM
    );
    assert_eq!(
        set_gid(&mut d, 3, g, 1, roce_l3_type::IPV4)[0],
        status::BAD_PARAM
    );
    assert_eq!(
        set_gid(&mut d, 3, g, roce_version::V2, 5)[0],
        status::BAD_PARAM
    );
    let mut v6 = [0u8; 16];
    v6[0] = 0xfd;
    v6[15] = 1;
    assert_eq!(
        set_gid(&mut d, 3, v6, roce_version::V2, roce_l3_type::IPV4)[0],
        status::BAD_PARAM
    );
    assert_eq!(
        set_gid(&mut d, 3, v6, roce_version::V2, roce_l3_type::IPV6)[0],
        status::OK
    );
    // An all-zero entry clears.
    d.ok::<cmds::SetRoceAddress>(|i| {
        i.set_roce_address_index(1);
        i.set_vhca_port_num(1);
    });
    let line = d.model.control("roce");
    assert!(
        line.starts_with("gids=2 ") && !line.contains("gid=1/"),
        "{line}"
    );
    d.shut_down();
}

#[test]
fn xrc_domains_and_multicast_groups() {
    let mut d = Driver::up(&["--roce"]);
    let b = base(&mut d);
    let x = view::<AllocXrcdOut>(&d.ok::<cmds::AllocXrcd>(|_| {})).xrcd();
    assert_ne!(x, 0);
    d.ok::<cmds::DeallocXrcd>(|i| i.set_xrcd(x));
    d.err::<cmds::DeallocXrcd>(status::BAD_RES, |i| i.set_xrcd(x));

    let ud = create_qp(&mut d, &b, qpc_st::UD);
    let rc = create_qp(&mut d, &b, qpc_st::RC);
    let mut mgid = [0u8; 16];
    mgid[..2].copy_from_slice(&[0xff, 0x0e]);
    mgid[15] = 7;
    d.ok::<cmds::AttachToMcg>(|i| {
        i.set_qpn(ud);
        i.multicast_gid_mut().copy_from_slice(&mgid);
    });
    d.err::<cmds::AttachToMcg>(status::BAD_PARAM, |i| {
        i.set_qpn(ud);
        i.multicast_gid_mut().copy_from_slice(&mgid);
    });
    d.err::<cmds::AttachToMcg>(status::BAD_PARAM, |i| {
        i.set_qpn(rc);
        i.multicast_gid_mut().copy_from_slice(&mgid);
    });
    assert!(d.model.control("roce").contains("mcg=ff0e::7/1"));
    d.ok::<cmds::DetachFromMcg>(|i| {
        i.set_qpn(ud);
        i.multicast_gid_mut().copy_from_slice(&mgid);
    });
    d.err::<cmds::DetachFromMcg>(status::BAD_PARAM, |i| {
        i.set_qpn(ud);
        i.multicast_gid_mut().copy_from_slice(&mgid);
    });
    for q in [ud, rc] {
        d.ok::<cmds::DestroyQp>(|i| i.set_qpn(q));
    }
    d.shut_down();
}

#[test]
fn qps_exist_without_the_roce_cap() {
    // QPs are plain firmware objects (mlx5_core's own users create UD QPs without RoCE).
    let mut d = Driver::up(&[]);
    let b = base(&mut d);
    let qpn = create_qp(&mut d, &b, qpc_st::UD);
    d.ok::<cmds::DestroyQp>(|i| i.set_qpn(qpn));
    d.shut_down();
}

#[test]
fn srqs_rmps_and_xrc_srqs() {
    use cx4_hw::srq::{
        rmpc_state, CreateRmpIn, CreateRmpOut, CreateXrcSrqIn, CreateXrcSrqOut, QueryRmpOut,
        QueryXrcSrqOut,
    };
    let mut d = Driver::up(&["--roce"]);
    let b = base(&mut d);
    // An RMP as mlx5_ib's create_rmp_cmd builds it: 2^6 WQEs of 64 bytes.
    let page = d.alloc_page();
    let dbr = d.alloc_page();
    let pd = b.pd;
    let rmp_at = |pages: &[u64], page_offset: u32| {
        let mut v = input::<cmds::CreateRmp>(|i| {
            let c = i.ctx_mut();
            c.set_state(rmpc_state::RDY.into());
            let w = c.wq_mut();
            w.set_pd(pd);
            w.set_dbr_addr(dbr);
            w.set_log_wq_stride(6);
            w.set_log_wq_sz(6);
            w.set_page_offset(page_offset);
        });
        v.resize(CreateRmpIn::SIZE + 8 * pages.len(), 0);
        for (k, &p) in pages.iter().enumerate() {
            CreateRmpIn::set_wq_pas(&mut v, k, p).unwrap();
        }
        v
    };
    let v = rmp_at(&[page], 0);
    let rmpn = view::<CreateRmpOut>(&d.run_ok(&v, CreateRmpOut::SIZE)).rmpn();
    let q = view::<QueryRmpOut>(&d.ok::<cmds::QueryRmp>(|i| i.set_rmpn(rmpn)));
    assert_eq!(q.rmp_context().wq().log_wq_sz(), 6);
    // MODIFY_RMP from the state it is in, with the limit watermark.
    d.ok::<cmds::ModifyRmp>(|i| {
        i.set_rmpn(rmpn);
        i.set_rmp_state(rmpc_state::RDY.into());
        i.bitmask_mut().set_lwm(1);
        i.ctx_mut().set_state(rmpc_state::RDY.into());
        i.ctx_mut().wq_mut().set_lwm(8);
    });
    let q = view::<QueryRmpOut>(&d.ok::<cmds::QueryRmp>(|i| i.set_rmpn(rmpn)));
    assert_eq!(q.rmp_context().wq().lwm(), 8);
    d.err::<cmds::ModifyRmp>(status::BAD_RES_STATE, |i| {
        i.set_rmpn(rmpn);
        i.set_rmp_state(rmpc_state::ERR.into());
    });

    // A ring that starts inside its first page (mlx5_ib's user RMP in a large page):
    // page_offset counts 64ths of a page, the ring then reaches into a second page.
    let one = rmp_at(&[page], 8);
    d.run_err(&one, CreateRmpOut::SIZE, status::BAD_INP_LEN);
    let page2 = d.alloc_page();
    let two = rmp_at(&[page, page2], 8);
    let off_rmpn = view::<CreateRmpOut>(&d.run_ok(&two, CreateRmpOut::SIZE)).rmpn();
    let q = view::<QueryRmpOut>(&d.ok::<cmds::QueryRmp>(|i| i.set_rmpn(off_rmpn)));
    assert_eq!(q.rmp_context().wq().page_offset(), 8, "page_offset kept");
    d.ok::<cmds::DestroyRmp>(|i| i.set_rmpn(off_rmpn));

    // A QP receiving from it holds it.
    let v = qp_input(&mut d, &b, qpc_st::RC, 1, |i| {
        i.qpc_mut().set_rq_type(rq_type::SRQ_RQ.into());
        i.qpc_mut().set_srqn_rmpn_xrqn(rmpn);
    });
    let qpn = view::<CreateQpOut>(&d.run_ok(&v, CreateQpOut::SIZE)).qpn();
    d.err::<cmds::DestroyRmp>(status::BAD_RES_STATE, |i| i.set_rmpn(rmpn));
    d.ok::<cmds::DestroyQp>(|i| i.set_qpn(qpn));
    // Each family destroys its own.
    d.err::<cmds::DestroyXrcSrq>(status::BAD_RES, |i| i.set_xrc_srqn(rmpn));
    d.ok::<cmds::DestroyRmp>(|i| i.set_rmpn(rmpn));

    // An XRC SRQ needs its domain; the domain is held while it lives.
    let x = view::<AllocXrcdOut>(&d.ok::<cmds::AllocXrcd>(|_| {})).xrcd();
    let (page, dbr, cqn) = (d.alloc_page(), d.alloc_page(), b.cqn);
    let xrc = |xrcd: u32| {
        let mut v = input::<cmds::CreateXrcSrq>(|i| {
            let c = i.xrc_srq_context_entry_mut();
            c.set_log_xrc_srq_size(5);
            c.set_log_rq_stride(2);
            c.set_xrcd(xrcd);
            c.set_pd(pd);
            c.set_cqn(cqn);
            c.set_user_index(77);
            c.set_db_record_addr_h((dbr >> 32) as u32);
            c.set_db_record_addr_l((dbr as u32) >> 2);
        });
        v.resize(CreateXrcSrqIn::SIZE + 8, 0);
        CreateXrcSrqIn::set_pas(&mut v, 0, page).unwrap();
        v
    };
    assert_eq!(d.run(&xrc(0x7777), 16)[0], status::BAD_RES);
    let n = view::<CreateXrcSrqOut>(&d.run_ok(&xrc(x), CreateXrcSrqOut::SIZE)).xrc_srqn();
    let q = view::<QueryXrcSrqOut>(&d.ok::<cmds::QueryXrcSrq>(|i| i.set_xrc_srqn(n)));
    let c = q.xrc_srq_context_entry();
    assert_eq!(
        (c.xrcd(), c.user_index(), c.log_xrc_srq_size(), c.cqn()),
        (x, 77, 5, cqn)
    );
    d.err::<cmds::DeallocXrcd>(status::BAD_RES_STATE, |i| i.set_xrcd(x));
    d.err::<cmds::DestroyCq>(status::BAD_RES_STATE, |i| i.set_cqn(cqn));
    d.ok::<cmds::DestroyXrcSrq>(|i| i.set_xrc_srqn(n));
    d.ok::<cmds::DeallocXrcd>(|i| i.set_xrcd(x));
    d.shut_down();
}

#[test]
fn mad_ifc_on_an_ethernet_port_answers_unsupported() {
    let mut d = Driver::up(&["--roce"]);
    let out = d.ok::<cmds::MadIfc>(|i| {
        i.set_port(1);
        i.set_op_mod(3);
        let m = i.mad_mut();
        m[0] = 1; // base version
        m[1] = 0x81; // directed-route SMP class
        m[3] = 0x01; // Get
    });
    let r = view::<cx4_hw::roce::MadIfcOut>(&out);
    let m = r.response_mad_packet();
    assert_eq!(
        (m[1], m[3], u16::from_be_bytes([m[4], m[5]])),
        (0x81, 0x81, 0x000c)
    );
    d.err::<cmds::MadIfc>(status::BAD_PARAM, |i| i.set_port(2));
    d.shut_down();
}
