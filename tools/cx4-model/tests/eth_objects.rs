//! The Ethernet firmware objects through the command interface, as mlx5e uses them: PD, TD,
//! mkey, TISes, queue counters, the drop RQ, RQTs, TIRs, NIC RX flow tables/groups/entries,
//! SQs, vport context lists, counters, PPCNT and VXLAN ports; each check failing with the
//! status a ConnectX-4 gives, and objects left at TEARDOWN_HCA reported and released.

mod common;

use common::{input, reg_input, view, Driver, UNMAPPED};
use cx4_hw::{
    caps::{cap_type, HcaCapUnion},
    command as cmds,
    counters::{
        AllocQCounterOut, Eth8023CntrsGrpDataLayout, PfccReg, QueryQCounterOut,
        QueryVportCounterOut,
    },
    flow::{
        action, dest_type, fte_counter_mut, fte_destination_mut, match_criteria, miss_action,
        table_type, AllocFlowCounterOut, CreateFlowGroupOut, CreateFlowTableOut,
        QueryFlowCounterOut, QueryFlowTableOut, SetFteIn, DEST_STRIDE,
    },
    mkey::{access_mode, mkey_from_index, CreateMkeyIn, CreateMkeyOut, QuerySpecialContextsOut},
    pd::{AllocPdOut, AllocTransportDomainOut},
    regs::{id, ppcnt_grp, AccessRegisterIn, PpcntReg},
    status,
    tir::{
        disp_type, rqt_msg_len, rqt_rq_num, rx_hash_fn, set_rqt_rq_num, CreateRqtIn, CreateRqtOut,
        CreateTirOut, CreateTisOut, ModifyRqtIn, QueryRqtOut, QueryTirOut,
    },
    vport::{list_type, ModifyNicVportContextIn, NicVportContext, QueryNicVportContextOut},
    wq::{
        rqc_state, sqc_state, wq_type, CreateRqIn, CreateRqOut, CreateSqIn, CreateSqOut,
        QueryRqOut, QuerySqOut, MODIFY_RQ_BITMASK_VSD,
    },
};
use zerocopy::{FromBytes, IntoBytes};

/// The objects mlx5e's resources and drop RQ need.
struct Base {
    pd: u32,
    td: u32,
    eqn: u8,
    cqn: u32,
}

fn base(d: &mut Driver) -> Base {
    let pd = view::<AllocPdOut>(&d.ok::<cmds::AllocPd>(|_| {})).pd();
    let td = view::<AllocTransportDomainOut>(&d.ok::<cmds::AllocTransportDomain>(|_| {}))
        .transport_domain();
    let eqn = d.create_eq(3, 1, 0);
    let cqn = d.create_cq(6, eqn);
    Base { pd, td, eqn, cqn }
}

/// A CREATE_SQ input as en_main.c mlx5e_create_sq builds it: 2^log_sz 64-byte WQEBBs in
/// fresh pages, doorbell record, TIS list of `tis` (0 or 1 entries).
fn sq_input(d: &mut Driver, b: &Base, tis: Option<u32>, log_sz: u8) -> Vec<u8> {
    let pages = ((64usize << log_sz) / 4096).max(1);
    let pas: Vec<u64> = (0..pages).map(|_| d.alloc_page()).collect();
    let dbr = d.alloc_page();
    let uar = d.uar.unwrap();
    let (pd, cqn) = (b.pd, b.cqn);
    let mut v = input::<cmds::CreateSq>(|i| {
        let c = i.ctx_mut();
        c.set_state(sqc_state::RST.into());
        c.set_cqn(cqn);
        c.set_flush_in_error_en(1);
        if let Some(t) = tis {
            c.set_tis_lst_sz(1);
            c.set_tis_num_0(t);
        }
        let w = c.wq_mut();
        w.set_wq_type(wq_type::CYCLIC.into());
        w.set_pd(pd);
        w.set_uar_page(uar);
        w.set_dbr_addr(dbr);
        w.set_log_wq_stride(6);
        w.set_log_wq_sz(log_sz.into());
    });
    v.resize(CreateSqIn::SIZE + pas.len() * 8, 0);
    for (i, &p) in pas.iter().enumerate() {
        CreateSqIn::set_wq_pas(&mut v, i, p).unwrap();
    }
    v
}

/// A CREATE_RQ input as mlx5e_create_rq builds it (legacy cyclic RQ, 16-byte strides).
fn rq_input(d: &mut Driver, b: &Base, counter: u32, log_sz: u8) -> Vec<u8> {
    let pages = ((16usize << log_sz) / 4096).max(1);
    let pas: Vec<u64> = (0..pages).map(|_| d.alloc_page()).collect();
    let dbr = d.alloc_page();
    let (pd, cqn) = (b.pd, b.cqn);
    let mut v = input::<cmds::CreateRq>(|i| {
        let c = i.ctx_mut();
        c.set_state(rqc_state::RST.into());
        c.set_cqn(cqn);
        c.set_counter_set_id(counter);
        c.set_vsd(0);
        let w = c.wq_mut();
        w.set_wq_type(wq_type::CYCLIC.into());
        w.set_pd(pd);
        w.set_dbr_addr(dbr);
        w.set_log_wq_stride(4);
        w.set_log_wq_sz(log_sz.into());
    });
    v.resize(CreateRqIn::SIZE + pas.len() * 8, 0);
    for (i, &p) in pas.iter().enumerate() {
        CreateRqIn::set_wq_pas(&mut v, i, p).unwrap();
    }
    v
}

fn create_rq(d: &mut Driver, b: &Base, counter: u32) -> u32 {
    let v = rq_input(d, b, counter, 6);
    view::<CreateRqOut>(&d.run_ok(&v, CreateRqOut::SIZE)).rqn()
}

fn rq_to(d: &mut Driver, rqn: u32, from: u8, to: u8) {
    d.ok::<cmds::ModifyRq>(|i| {
        i.set_rqn(rqn);
        i.set_rq_state(from.into());
        i.ctx_mut().set_state(to.into());
    });
}

fn sq_to(d: &mut Driver, sqn: u32, from: u8, to: u8) {
    d.ok::<cmds::ModifySq>(|i| {
        i.set_sqn(sqn);
        i.set_sq_state(from.into());
        i.ctx_mut().set_state(to.into());
    });
}

fn rqt_input(max: u32, rqns: &[u32]) -> Vec<u8> {
    let mut v = input::<cmds::CreateRqt>(|i| {
        let c = i.rqt_context_mut();
        c.set_rqt_max_size(max);
        c.set_rqt_actual_size(rqns.len() as u32);
    });
    v.resize(rqt_msg_len(rqns.len()), 0);
    for (i, &r) in rqns.iter().enumerate() {
        set_rqt_rq_num(&mut v, i, r).unwrap();
    }
    v
}

fn create_rqt(d: &mut Driver, max: u32, rqns: &[u32]) -> u32 {
    view::<CreateRqtOut>(&d.run_ok(&rqt_input(max, rqns), CreateRqtOut::SIZE)).rqtn()
}

fn create_tis(d: &mut Driver, td: u32, tc: u32) -> u32 {
    view::<CreateTisOut>(&d.ok::<cmds::CreateTis>(|i| {
        i.ctx_mut().set_transport_domain(td);
        i.ctx_mut().set_prio(tc << 1);
    }))
    .tisn()
}

/// An indirect Toeplitz TIR over `rqtn` hashing IPv4 TCP 4-tuples (en/tir.c build_rss).
fn create_rss_tir(d: &mut Driver, td: u32, rqtn: u32) -> u32 {
    view::<CreateTirOut>(&d.ok::<cmds::CreateTir>(|i| {
        let c = i.ctx_mut();
        c.set_transport_domain(td);
        c.set_disp_type(disp_type::INDIRECT.into());
        c.set_indirect_table(rqtn);
        c.set_rx_hash_fn(rx_hash_fn::TOEPLITZ.into());
        for k in 0..10 {
            c.set_rx_hash_toeplitz_key(k, 0x6d5a_56da ^ k as u32)
                .unwrap();
        }
        let s = c.rx_hash_field_selector_outer_mut();
        s.set_selected_fields(0xf);
    }))
    .tirn()
}

fn create_ft(d: &mut Driver, level: u32, log_size: u32, miss: Option<u32>) -> u32 {
    view::<CreateFlowTableOut>(&d.ok::<cmds::CreateFlowTable>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        let c = i.flow_table_context_mut();
        c.set_level(level);
        c.set_log_size(log_size);
        if let Some(t) = miss {
            c.set_table_miss_action(miss_action::FWD.into());
            c.set_table_miss_id(t);
        }
    }))
    .table_id()
}

/// A flow group over `start..=end` matching the outer ethertype.
fn create_fg_ethertype(d: &mut Driver, table: u32, start: u32, end: u32) -> u32 {
    view::<CreateFlowGroupOut>(&d.ok::<cmds::CreateFlowGroup>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(table);
        i.set_start_flow_index(start);
        i.set_end_flow_index(end);
        i.set_match_criteria_enable(match_criteria::OUTER_HEADERS.into());
        i.match_criteria_mut()
            .outer_headers_mut()
            .set_ethertype(0xffff);
    }))
    .group_id()
}

/// A SET_FLOW_TABLE_ENTRY input: `index` in `group` matching `ethertype`, forwarding to
/// `dests` and counting into `counters`.
fn fte_input(
    table: u32,
    group: u32,
    index: u32,
    ethertype: u16,
    dests: &[(u8, u32)],
    counters: &[u32],
) -> Vec<u8> {
    let mut v = input::<cmds::SetFlowTableEntry>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(table);
        i.set_flow_index(index);
        let c = i.flow_context_mut();
        c.set_group_id(group);
        let mut act = 0;
        if !dests.is_empty() {
            act |= action::FWD_DEST;
        }
        if !counters.is_empty() {
            act |= action::COUNT;
        }
        c.set_action(act);
        c.set_destination_list_size(dests.len() as u32);
        c.set_flow_counter_list_size(counters.len() as u32);
        c.match_value_mut()
            .outer_headers_mut()
            .set_ethertype(ethertype.into());
    });
    v.resize(
        SetFteIn::SIZE + (dests.len() + counters.len()) * DEST_STRIDE,
        0,
    );
    for (k, &(ty, id)) in dests.iter().enumerate() {
        let dd = fte_destination_mut(&mut v, k).unwrap();
        dd.set_destination_type(ty.into());
        dd.set_destination_id(id);
    }
    for (k, &c) in counters.iter().enumerate() {
        fte_counter_mut(&mut v, dests.len() + k)
            .unwrap()
            .set_flow_counter_id(c);
    }
    v
}

#[test]
fn mlx5e_bring_up_and_teardown_sequence_succeeds_without_leaks() {
    let mut d = Driver::up(&["--eth"]);
    let general = d.query_cap(cap_type::GENERAL, true);
    assert_eq!(
        view::<HcaCapUnion>(&general)
            .cmd_hca_cap()
            .eth_net_offloads(),
        1,
        "--eth advertises eth_net_offloads"
    );
    // VXLAN port 4789 at init_once; ADD is idempotent.
    d.ok::<cmds::AddVxlanUdpDport>(|i| i.set_vxlan_udp_port(4789));
    d.ok::<cmds::AddVxlanUdpDport>(|i| i.set_vxlan_udp_port(4789));
    // QUERY_SPECIAL_CONTEXTS: the reserved and terminate keys.
    let sc = view::<QuerySpecialContextsOut>(&d.ok::<cmds::QuerySpecialContexts>(|_| {}));
    assert_eq!(sc.terminate_scatter_list_mkey(), 0x100);
    assert_ne!(sc.resd_lkey(), sc.terminate_scatter_list_mkey());

    // mlx5e_create_mdev_resources: PD, TD, PA mkey, 8 TISes.
    let b = base(&mut d);
    let out = d.ok::<cmds::CreateMkey>(|i| {
        let c = i.memory_key_mkey_entry_mut();
        c.set_access_mode_1_0(access_mode::PA.into());
        c.set_lw(1);
        c.set_lr(1);
        c.set_pd(b.pd);
        c.set_length64(1);
        c.set_qpn(0xff_ffff);
        c.set_mkey_7_0(0x42);
    });
    let mkey_index = view::<CreateMkeyOut>(&out).mkey_index();
    let lkey = mkey_from_index(mkey_index, 0x42);
    assert!(lkey & 0xff == 0x42 && lkey >> 8 >= 3, "lkey {lkey:#x}");
    let tises: Vec<u32> = (0..8).map(|tc| create_tis(&mut d, b.td, tc)).collect();

    // init_rx: two queue counters, the drop RQ, RQTs and TIRs.
    let q1 = view::<AllocQCounterOut>(&d.ok::<cmds::AllocQCounter>(|_| {})).counter_set_id();
    let q2 = view::<AllocQCounterOut>(&d.ok::<cmds::AllocQCounter>(|_| {})).counter_set_id();
    assert!(q1 != 0 && q2 != 0 && q1 != q2, "Q counters {q1} {q2}");
    // The drop RQ as en/params.c builds it: 16-byte stride, one WQE, PD left 0.
    let mut v = rq_input(&mut d, &b, q1, 0);
    CreateRqIn::mut_from_prefix(&mut v[..])
        .unwrap()
        .0
        .ctx_mut()
        .wq_mut()
        .set_pd(0);
    let drop_rq = view::<CreateRqOut>(&d.run_ok(&v, CreateRqOut::SIZE)).rqn();
    rq_to(&mut d, drop_rq, rqc_state::RST, rqc_state::RDY);
    let rss_rqt = create_rqt(&mut d, 64, &[drop_rq]);
    let direct_rqt = create_rqt(&mut d, 1, &[drop_rq]);
    let rss_tir = create_rss_tir(&mut d, b.td, rss_rqt);
    let direct_tir = view::<CreateTirOut>(&d.ok::<cmds::CreateTir>(|i| {
        let c = i.ctx_mut();
        c.set_transport_domain(b.td);
        c.set_disp_type(disp_type::INDIRECT.into());
        c.set_indirect_table(direct_rqt);
        c.set_rx_hash_fn(rx_hash_fn::INVERTED_XOR8.into());
    }))
    .tirn();
    let q = view::<QueryTirOut>(&d.ok::<cmds::QueryTir>(|i| i.set_tirn(rss_tir)));
    assert_eq!(
        (
            q.tir_context().indirect_table(),
            q.tir_context().rx_hash_fn()
        ),
        (rss_rqt, u32::from(rx_hash_fn::TOEPLITZ)),
        "QUERY_TIR reads back the RSS TIR"
    );
    assert_eq!(q.tir_context().rx_hash_toeplitz_key(1), Some(0x6d5a_56db));

    // Flow steering: a TTC-like table (ethertype → TIRs) missing to the anchor, made root.
    let anchor = create_ft(&mut d, 64, 0, None);
    let ttc = create_ft(&mut d, 3, 4, Some(anchor));
    let fg = create_fg_ethertype(&mut d, ttc, 0, 7);
    let fc = view::<AllocFlowCounterOut>(&d.ok::<cmds::AllocFlowCounter>(|_| {})).flow_counter_id();
    d.run_ok(
        &fte_input(ttc, fg, 0, 0x0800, &[(dest_type::TIR, rss_tir)], &[fc]),
        0x10,
    );
    d.run_ok(
        &fte_input(ttc, fg, 1, 0x86dd, &[(dest_type::TIR, direct_tir)], &[]),
        0x10,
    );
    d.ok::<cmds::SetFlowTableRoot>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(ttc);
    });
    let q = view::<QueryFlowTableOut>(&d.ok::<cmds::QueryFlowTable>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(ttc);
    }));
    let c = q.flow_table_context();
    assert_eq!(
        (
            c.level(),
            c.log_size(),
            c.table_miss_action(),
            c.table_miss_id()
        ),
        (3, 4, u32::from(miss_action::FWD), anchor),
        "QUERY_FLOW_TABLE"
    );
    let qfc = d.run_ok(
        &input::<cmds::QueryFlowCounter>(|i| i.set_flow_counter_id(fc)),
        QueryFlowCounterOut::SIZE + 16,
    );
    let stats = QueryFlowCounterOut::flow_statistics(&qfc, 0).expect("one counter");
    assert_eq!((stats.packets(), stats.octets()), (0, 0));

    // enable: vport context MTU, UC/MC lists, promiscuous, min inline.
    let mac = [0x02, 0xc4, 0, 0, 0, 0x01];
    let mc = [0x01, 0x00, 0x5e, 0, 0, 1];
    for (ty, list) in [(list_type::UC, [mac]), (list_type::MC, [mc])] {
        let mut v = input::<cmds::ModifyNicVportContext>(|i| {
            i.field_select_mut().set_addresses_list(1);
            let c = i.nic_vport_context_mut();
            c.set_allowed_list_type(ty.into());
            c.set_allowed_list_size(1);
        });
        v.resize(ModifyNicVportContextIn::SIZE + 8, 0);
        v[ModifyNicVportContextIn::SIZE + 2..].copy_from_slice(&list[0]);
        d.run_ok(&v, 0x10);
    }
    let q = input::<cmds::QueryNicVportContext>(|i| i.set_allowed_list_type(list_type::MC.into()));
    let out = d.run_ok(&q, QueryNicVportContextOut::SIZE + 8 * 4);
    let ctx = view::<QueryNicVportContextOut>(&out);
    assert_eq!(ctx.nic_vport_context().allowed_list_size(), 1, "MC list");
    let at = 0x10 + NicVportContext::SIZE;
    assert_eq!(&out[at + 2..at + 8], &mc, "MC list entry");

    // ndo_open: channel CQ, SQ on TIS 0, RQ; SQ and RQ to ready; RQT redirected to them.
    let sq_in = sq_input(&mut d, &b, Some(tises[0]), 6);
    let sqn = view::<CreateSqOut>(&d.run_ok(&sq_in, CreateSqOut::SIZE)).sqn();
    sq_to(&mut d, sqn, sqc_state::RST, sqc_state::RDY);
    let icosq_in = sq_input(&mut d, &b, None, 6);
    let icosq = view::<CreateSqOut>(&d.run_ok(&icosq_in, CreateSqOut::SIZE)).sqn();
    let rq = create_rq(&mut d, &b, q2);
    rq_to(&mut d, rq, rqc_state::RST, rqc_state::RDY);
    let s = view::<QuerySqOut>(&d.ok::<cmds::QuerySq>(|i| i.set_sqn(sqn)));
    assert_eq!(
        (
            s.sq_context().state(),
            s.sq_context().tis_num_0(),
            s.sq_context().cqn()
        ),
        (u32::from(sqc_state::RDY), tises[0], b.cqn),
        "QUERY_SQ"
    );
    // VLAN strip off on the fly (RDY → RDY with the VSD bit).
    d.ok::<cmds::ModifyRq>(|i| {
        i.set_rqn(rq);
        i.set_rq_state(rqc_state::RDY.into());
        i.set_modify_bitmask(MODIFY_RQ_BITMASK_VSD);
        i.ctx_mut().set_state(rqc_state::RDY.into());
        i.ctx_mut().set_vsd(1);
    });
    let r = view::<QueryRqOut>(&d.ok::<cmds::QueryRq>(|i| i.set_rqn(rq)));
    assert_eq!(
        (r.rq_context().vsd(), r.rq_context().counter_set_id()),
        (1, q2)
    );
    let mut m = input::<cmds::ModifyRqt>(|i| {
        i.set_rqtn(rss_rqt);
        i.bitmask_mut().set_rqn_list(1);
        i.ctx_mut().set_rqt_actual_size(2);
    });
    m.resize(rqt_msg_len(2), 0);
    set_rqt_rq_num(&mut m, 0, rq).unwrap();
    set_rqt_rq_num(&mut m, 1, rq).unwrap();
    assert_eq!(ModifyRqtIn::SIZE, CreateRqtIn::SIZE);
    d.run_ok(&m, 0x10);
    let out = d.run_ok(
        &input::<cmds::QueryRqt>(|i| i.set_rqtn(rss_rqt)),
        rqt_msg_len(2),
    );
    assert_eq!(
        view::<QueryRqtOut>(&out).rqt_context().rqt_actual_size(),
        2,
        "QUERY_RQT size"
    );
    assert_eq!(rqt_rq_num(&out, 1), Some(rq), "QUERY_RQT list");
    // Self-loopback refresh on every TIR (mlx5e_modify_tirs_lb).
    for tir in [rss_tir, direct_tir] {
        d.ok::<cmds::ModifyTir>(|i| {
            i.set_tirn(tir);
            i.bitmask_mut().set_self_lb_en(1);
            i.ctx_mut().set_self_lb_block(3);
        });
    }

    // Stats: vport counters, queue counters, PPCNT groups ethtool -S reads, PFCC.
    let v = view::<QueryVportCounterOut>(&d.ok::<cmds::QueryVportCounter>(|_| {}));
    assert_eq!(v.received_eth_unicast().packets(), 0);
    let qc = view::<QueryQCounterOut>(&d.ok::<cmds::QueryQCounter>(|i| i.set_counter_set_id(q1)));
    assert_eq!(qc.out_of_buffer(), 0);
    for (grp, prio) in [
        (ppcnt_grp::IEEE_802_3, 0),
        (ppcnt_grp::RFC_2863, 0),
        (ppcnt_grp::RFC_2819, 0),
        (ppcnt_grp::PHYSICAL_LAYER, 0),
        (ppcnt_grp::PER_PRIORITY, 7),
    ] {
        let mut p = PpcntReg::new();
        p.set_local_port(1);
        p.set_grp(grp.into());
        p.set_prio_tc(prio);
        let out = d.run_ok(
            &reg_input(id::PPCNT, false, p.as_bytes()),
            AccessRegisterIn::SIZE + PpcntReg::SIZE,
        );
        let r = PpcntReg::read_from_bytes(&out[AccessRegisterIn::SIZE..]).unwrap();
        assert_eq!(
            (r.grp(), r.prio_tc()),
            (u32::from(grp), prio),
            "PPCNT group {grp:#x}"
        );
        if grp == ppcnt_grp::IEEE_802_3 {
            let g = Eth8023CntrsGrpDataLayout::read_from_prefix(r.counter_set())
                .unwrap()
                .0;
            assert_eq!(g.a_frames_received_ok_low(), 0);
        }
    }
    let mut pf = PfccReg::new();
    pf.set_local_port(1);
    pf.set_pptx(1);
    pf.set_pprx(1);
    d.run_ok(
        &reg_input(id::PFCC, true, pf.as_bytes()),
        0x10 + PfccReg::SIZE,
    );
    let out = d.run_ok(
        &reg_input(id::PFCC, false, PfccReg::new().as_bytes()),
        0x10 + PfccReg::SIZE,
    );
    let back = PfccReg::read_from_bytes(&out[0x10..]).unwrap();
    assert_eq!((back.pptx(), back.pprx()), (1, 1), "PFCC global pause");

    // close and remove, in mlx5e's order.
    sq_to(&mut d, sqn, sqc_state::RDY, sqc_state::RST);
    d.ok::<cmds::DestroySq>(|i| i.set_sqn(sqn));
    d.ok::<cmds::DestroySq>(|i| i.set_sqn(icosq));
    let mut back = input::<cmds::ModifyRqt>(|i| {
        i.set_rqtn(rss_rqt);
        i.bitmask_mut().set_rqn_list(1);
        i.ctx_mut().set_rqt_actual_size(1);
    });
    back.resize(rqt_msg_len(1), 0);
    set_rqt_rq_num(&mut back, 0, drop_rq).unwrap();
    d.run_ok(&back, 0x10);
    d.ok::<cmds::DestroyRq>(|i| i.set_rqn(rq));
    for idx in [0, 1] {
        d.ok::<cmds::DeleteFlowTableEntry>(|i| {
            i.set_table_type(table_type::NIC_RX.into());
            i.set_table_id(ttc);
            i.set_flow_index(idx);
        });
    }
    d.ok::<cmds::DestroyFlowGroup>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(ttc);
        i.set_group_id(fg);
    });
    d.ok::<cmds::DeallocFlowCounter>(|i| i.set_flow_counter_id(fc));
    d.ok::<cmds::DestroyFlowTable>(|i| i.set_table_id(ttc));
    d.ok::<cmds::DestroyFlowTable>(|i| i.set_table_id(anchor));
    for tir in [rss_tir, direct_tir] {
        d.ok::<cmds::DestroyTir>(|i| i.set_tirn(tir));
    }
    for rqt in [rss_rqt, direct_rqt] {
        d.ok::<cmds::DestroyRqt>(|i| i.set_rqtn(rqt));
    }
    d.ok::<cmds::DestroyRq>(|i| i.set_rqn(drop_rq));
    for q in [q1, q2] {
        d.ok::<cmds::DeallocQCounter>(|i| i.set_counter_set_id(q));
    }
    for t in tises {
        d.ok::<cmds::DestroyTis>(|i| i.set_tisn(t));
    }
    d.ok::<cmds::DestroyMkey>(|i| i.set_mkey_index(mkey_index));
    d.ok::<cmds::DeallocTransportDomain>(|i| i.set_transport_domain(b.td));
    d.ok::<cmds::DeallocPd>(|i| i.set_pd(b.pd));
    d.ok::<cmds::DeleteVxlanUdpDport>(|i| i.set_vxlan_udp_port(4789));
    let _ = b.eqn;
    d.shut_down();
    let log = d.model.log();
    assert!(
        !log.contains("objects alive"),
        "a clean mlx5e teardown leaves no objects; log:\n{}",
        d.model.log_tail(20)
    );
}

#[test]
fn objects_left_at_teardown_are_reported_and_released() {
    let mut d = Driver::up(&[]);
    let b = base(&mut d);
    let tis = create_tis(&mut d, b.td, 0);
    let rq = create_rq(&mut d, &b, 0);
    let rqt = create_rqt(&mut d, 4, &[rq]);
    create_rss_tir(&mut d, b.td, rqt);
    let sq_in = sq_input(&mut d, &b, Some(tis), 6);
    d.run_ok(&sq_in, CreateSqOut::SIZE);
    d.ok::<cmds::AllocQCounter>(|_| {});
    d.ok::<cmds::TeardownHca>(|_| {});
    assert!(
        d.model
            .wait_log("objects alive", std::time::Duration::from_secs(2)),
        "TEARDOWN_HCA with live objects is logged"
    );
    let log = d.model.log();
    for what in [
        "1 TISes",
        "1 SQs",
        "1 RQs",
        "1 RQTs",
        "1 TIRs",
        "1 Q counters",
    ] {
        assert!(
            log.contains(what),
            "teardown report names {what:?}; log:\n{}",
            d.model.log_tail(5)
        );
    }
    d.reclaim_pages();
    d.ok::<cmds::DisableHca>(|_| {});
    // A new life starts with no objects: the old numbers are gone.
    d.bring_up();
    d.err::<cmds::QueryRq>(status::BAD_RES, |i| i.set_rqn(rq));
    d.err::<cmds::QueryTis>(status::BAD_RES, |i| i.set_tisn(tis));
}

#[test]
fn ethernet_commands_before_init_hca_are_state_errors() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.err::<cmds::CreateTis>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::CreateSq>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::CreateRq>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::CreateRqt>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::CreateTir>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::CreateFlowGroup>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::CreateMkey>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::AllocQCounter>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::AllocFlowCounter>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::AddVxlanUdpDport>(status::BAD_SYS_STATE, |_| {});
}

#[test]
fn sq_state_machine_follows_modify_sq_and_refuses_wrong_transitions() {
    let mut d = Driver::up(&[]);
    let b = base(&mut d);
    let tis = create_tis(&mut d, b.td, 0);
    let sq_in = sq_input(&mut d, &b, Some(tis), 6);
    let sqn = view::<CreateSqOut>(&d.run_ok(&sq_in, CreateSqOut::SIZE)).sqn();
    let modify = |d: &mut Driver, from: u8, to: u8, want: u8| {
        d.err::<cmds::ModifySq>(want, |i| {
            i.set_sqn(sqn);
            i.set_sq_state(from.into());
            i.ctx_mut().set_state(to.into());
        })
    };
    // Current state named wrongly: BAD_RES_STATE; unreachable target: BAD_PARAM.
    modify(
        &mut d,
        sqc_state::RDY,
        sqc_state::ERR,
        status::BAD_RES_STATE,
    );
    modify(&mut d, sqc_state::RST, 2, status::BAD_PARAM);
    // A raw packet QP's SQ (mlx5_ib qp.c modify_raw_packet_qp): RST → RST on RST2INIT,
    // RST → ERR on 2ERR before RTS; ERR → ERR is not a transition.
    sq_to(&mut d, sqn, sqc_state::RST, sqc_state::RST);
    sq_to(&mut d, sqn, sqc_state::RST, sqc_state::ERR);
    modify(&mut d, sqc_state::ERR, sqc_state::ERR, status::BAD_PARAM);
    sq_to(&mut d, sqn, sqc_state::ERR, sqc_state::RST);
    sq_to(&mut d, sqn, sqc_state::RST, sqc_state::RDY);
    sq_to(&mut d, sqn, sqc_state::RDY, sqc_state::ERR);
    // Recovery (en/reporter_tx.c): ERR → RST → RDY; ERR → RDY is allowed too.
    sq_to(&mut d, sqn, sqc_state::ERR, sqc_state::RST);
    sq_to(&mut d, sqn, sqc_state::RST, sqc_state::RDY);
    sq_to(&mut d, sqn, sqc_state::RDY, sqc_state::ERR);
    sq_to(&mut d, sqn, sqc_state::ERR, sqc_state::RDY);
    d.err::<cmds::ModifySq>(status::BAD_PARAM, |i| {
        i.set_sqn(sqn);
        i.set_sq_state(sqc_state::RDY.into());
        i.set_modify_bitmask(1);
        i.ctx_mut().set_state(sqc_state::RDY.into());
    });
    d.err::<cmds::ModifySq>(status::BAD_RES, |i| i.set_sqn(0x77_7777));
    // The SQ pins its CQ, TIS, PD and UAR.
    d.err::<cmds::DestroyCq>(status::BAD_RES_STATE, |i| i.set_cqn(b.cqn));
    d.err::<cmds::DestroyTis>(status::BAD_RES_STATE, |i| i.set_tisn(tis));
    d.err::<cmds::DeallocPd>(status::BAD_RES_STATE, |i| i.set_pd(b.pd));
    let uar = d.uar.unwrap();
    d.err::<cmds::DeallocUar>(status::BAD_RES_STATE, |i| i.set_uar(uar));
    d.ok::<cmds::DestroySq>(|i| i.set_sqn(sqn));
    d.err::<cmds::DestroySq>(status::BAD_RES, |i| i.set_sqn(sqn));
    d.ok::<cmds::DestroyTis>(|i| i.set_tisn(tis));
    d.err::<cmds::DestroyTis>(status::BAD_RES, |i| i.set_tisn(tis));
}

#[test]
fn create_sq_checks_cq_tis_ring_and_doorbell() {
    let mut d = Driver::up(&[]);
    let b = base(&mut d);
    let tis = create_tis(&mut d, b.td, 0);
    let patch = |d: &mut Driver, f: &dyn Fn(&mut CreateSqIn)| {
        let mut v = sq_input(d, &b, Some(tis), 6);
        f(CreateSqIn::mut_from_prefix(&mut v[..]).unwrap().0);
        v
    };
    let cases: Vec<(&str, Vec<u8>, u8)> = vec![
        (
            "unknown CQ",
            patch(&mut d, &|i| i.ctx_mut().set_cqn(0x55_5555)),
            status::BAD_RES,
        ),
        (
            "unknown TIS",
            patch(&mut d, &|i| i.ctx_mut().set_tis_num_0(0x55_5555)),
            status::BAD_RES,
        ),
        (
            "two TISes",
            patch(&mut d, &|i| i.ctx_mut().set_tis_lst_sz(2)),
            status::BAD_PARAM,
        ),
        (
            "not in RST",
            patch(&mut d, &|i| i.ctx_mut().set_state(1)),
            status::BAD_PARAM,
        ),
        (
            "min inline without the VPORT_CONTEXT cap",
            patch(&mut d, &|i| i.ctx_mut().set_min_wqe_inline_mode(1)),
            status::BAD_PARAM,
        ),
        (
            "software parser",
            patch(&mut d, &|i| i.ctx_mut().set_allow_swp(1)),
            status::BAD_PARAM,
        ),
        (
            "32-byte stride",
            patch(&mut d, &|i| i.ctx_mut().wq_mut().set_log_wq_stride(5)),
            status::BAD_PARAM,
        ),
        (
            "linked list",
            patch(&mut d, &|i| i.ctx_mut().wq_mut().set_wq_type(0)),
            status::BAD_PARAM,
        ),
        (
            "ring above log_max_wq_sz",
            patch(&mut d, &|i| i.ctx_mut().wq_mut().set_log_wq_sz(17)),
            status::BAD_PARAM,
        ),
        (
            "unknown PD",
            patch(&mut d, &|i| i.ctx_mut().wq_mut().set_pd(0x55_5555)),
            status::BAD_RES,
        ),
        (
            "unknown UAR",
            patch(&mut d, &|i| i.ctx_mut().wq_mut().set_uar_page(200)),
            status::BAD_RES,
        ),
        (
            "unmapped doorbell record",
            patch(&mut d, &|i| i.ctx_mut().wq_mut().set_dbr_addr(UNMAPPED)),
            status::BAD_PARAM,
        ),
        (
            "misaligned doorbell record",
            patch(&mut d, &|i| {
                let a = i.ctx().wq().dbr_addr();
                i.ctx_mut().wq_mut().set_dbr_addr(a + 4)
            }),
            status::BAD_PARAM,
        ),
        (
            "ring needs 2 pages, 1 given",
            patch(&mut d, &|i| i.ctx_mut().wq_mut().set_log_wq_sz(7)),
            status::BAD_INP_LEN,
        ),
    ];
    for (what, v, want) in cases {
        let out = d.run(&v, CreateSqOut::SIZE);
        assert_eq!(
            common::out_status(&out),
            want,
            "CREATE_SQ with {what}: expected {}, seen {}",
            status::status_name(want),
            status::status_name(common::out_status(&out))
        );
    }
    let mut v = sq_input(&mut d, &b, Some(tis), 6);
    CreateSqIn::set_wq_pas(&mut v, 0, UNMAPPED).unwrap();
    d.run_err(&v, CreateSqOut::SIZE, status::BAD_PARAM);
}

#[test]
fn rq_rqt_and_tir_checks() {
    let mut d = Driver::up(&[]);
    let b = base(&mut d);
    // RQ: unknown CQ or queue counter, state machine.
    let mut v = rq_input(&mut d, &b, 0, 6);
    CreateRqIn::mut_from_prefix(&mut v[..])
        .unwrap()
        .0
        .ctx_mut()
        .set_cqn(0x44_4444);
    d.run_err(&v, CreateRqOut::SIZE, status::BAD_RES);
    let v = rq_input(&mut d, &b, 99, 6);
    d.run_err(&v, CreateRqOut::SIZE, status::BAD_RES);
    let rq = create_rq(&mut d, &b, 0);
    d.err::<cmds::ModifyRq>(status::BAD_RES_STATE, |i| {
        i.set_rqn(rq);
        i.set_rq_state(rqc_state::RDY.into());
        i.ctx_mut().set_state(rqc_state::RST.into());
    });
    d.err::<cmds::ModifyRq>(status::BAD_PARAM, |i| {
        i.set_rqn(rq);
        i.set_rq_state(rqc_state::RST.into());
        i.ctx_mut().set_state(2);
    });
    // A raw packet QP's RQ on 2RST / 2ERR of a QP in RESET (mlx5_ib modify_raw_packet_qp):
    // RST → RST and RST → ERR; ERR → ERR and ERR → RDY are not transitions.
    rq_to(&mut d, rq, rqc_state::RST, rqc_state::RST);
    rq_to(&mut d, rq, rqc_state::RST, rqc_state::ERR);
    for to in [rqc_state::ERR, rqc_state::RDY] {
        d.err::<cmds::ModifyRq>(status::BAD_PARAM, |i| {
            i.set_rqn(rq);
            i.set_rq_state(rqc_state::ERR.into());
            i.ctx_mut().set_state(to.into());
        });
    }
    rq_to(&mut d, rq, rqc_state::ERR, rqc_state::RST);
    rq_to(&mut d, rq, rqc_state::RST, rqc_state::RDY);
    rq_to(&mut d, rq, rqc_state::RDY, rqc_state::ERR);
    rq_to(&mut d, rq, rqc_state::ERR, rqc_state::RST);

    // RQT: larger than log_max_rqt_size (8 in the profiles), empty, unknown RQ, short input.
    d.run_err(&rqt_input(512, &[rq]), 0x10, status::BAD_PARAM);
    d.run_err(&rqt_input(4, &[]), 0x10, status::BAD_PARAM);
    d.run_err(&rqt_input(4, &[rq, 0x33_3333]), 0x10, status::BAD_RES);
    let mut short = rqt_input(4, &[rq, rq]);
    short.truncate(rqt_msg_len(1));
    d.run_err(&short, 0x10, status::BAD_INP_LEN);
    let rqt = create_rqt(&mut d, 2, &[rq]);
    let mut grow = input::<cmds::ModifyRqt>(|i| {
        i.set_rqtn(rqt);
        i.bitmask_mut().set_rqn_list(1);
        i.ctx_mut().set_rqt_actual_size(3);
    });
    grow.resize(rqt_msg_len(3), 0);
    for k in 0..3 {
        set_rqt_rq_num(&mut grow, k, rq).unwrap();
    }
    d.run_err(&grow, 0x10, status::BAD_PARAM);

    // TIR: unknown TD, RQT or inline RQ; inner hash without tunnel offloads; hash on a field
    // that does not exist (SPI is one: mlx5e's AH/ESP TIRs select it).
    d.err::<cmds::CreateTir>(status::BAD_RES, |i| {
        i.ctx_mut().set_transport_domain(0x22_2222);
    });
    d.err::<cmds::CreateTir>(status::BAD_RES, |i| {
        let c = i.ctx_mut();
        c.set_transport_domain(b.td);
        c.set_disp_type(disp_type::INDIRECT.into());
        c.set_indirect_table(0x22_2222);
    });
    d.err::<cmds::CreateTir>(status::BAD_RES, |i| {
        let c = i.ctx_mut();
        c.set_transport_domain(b.td);
        c.set_inline_rqn(0x22_2222);
    });
    d.err::<cmds::CreateTir>(status::BAD_PARAM, |i| {
        let c = i.ctx_mut();
        c.set_transport_domain(b.td);
        c.set_disp_type(disp_type::INDIRECT.into());
        c.set_indirect_table(rqt);
        c.rx_hash_field_selector_inner_mut()
            .set_selected_fields(0x3);
    });
    d.err::<cmds::CreateTir>(status::BAD_PARAM, |i| {
        let c = i.ctx_mut();
        c.set_transport_domain(b.td);
        c.set_disp_type(disp_type::INDIRECT.into());
        c.set_indirect_table(rqt);
        c.rx_hash_field_selector_outer_mut()
            .set_selected_fields(0x20);
    });
    let tir = create_rss_tir(&mut d, b.td, rqt);
    // Objects in use cannot go: RQ under an RQT, RQT under a TIR, TD under a TIR.
    d.err::<cmds::DestroyRq>(status::BAD_RES_STATE, |i| i.set_rqn(rq));
    d.err::<cmds::DestroyRqt>(status::BAD_RES_STATE, |i| i.set_rqtn(rqt));
    d.err::<cmds::DeallocTransportDomain>(status::BAD_RES_STATE, |i| i.set_transport_domain(b.td));
    d.ok::<cmds::DestroyTir>(|i| i.set_tirn(tir));
    d.err::<cmds::DestroyTir>(status::BAD_RES, |i| i.set_tirn(tir));
    d.ok::<cmds::DestroyRqt>(|i| i.set_rqtn(rqt));
    d.err::<cmds::DestroyRqt>(status::BAD_RES, |i| i.set_rqtn(rqt));
    d.ok::<cmds::DestroyRq>(|i| i.set_rqn(rq));
    d.err::<cmds::DestroyRq>(status::BAD_RES, |i| i.set_rqn(rq));
}

#[test]
fn flow_groups_entries_and_counters_are_checked() {
    let mut d = Driver::up(&[]);
    let b = base(&mut d);
    let rq = create_rq(&mut d, &b, 0);
    let rqt = create_rqt(&mut d, 1, &[rq]);
    let tir = create_rss_tir(&mut d, b.td, rqt);
    let low = create_ft(&mut d, 1, 4, None);
    let high = create_ft(&mut d, 2, 4, None);
    let fg = create_fg_ethertype(&mut d, high, 0, 3);
    // Groups: overlapping, outside the table, on unsupported sections.
    d.err::<cmds::CreateFlowGroup>(status::BAD_PARAM, |i| {
        i.set_table_id(high);
        i.set_start_flow_index(3);
        i.set_end_flow_index(5);
    });
    d.err::<cmds::CreateFlowGroup>(status::BAD_PARAM, |i| {
        i.set_table_id(high);
        i.set_start_flow_index(8);
        i.set_end_flow_index(16);
    });
    d.err::<cmds::CreateFlowGroup>(status::BAD_PARAM, |i| {
        i.set_table_id(high);
        i.set_start_flow_index(4);
        i.set_end_flow_index(4);
        i.set_match_criteria_enable(match_criteria::MISC_PARAMETERS_2.into());
    });
    d.err::<cmds::CreateFlowGroup>(status::BAD_RES, |i| i.set_table_id(0x11_1111));
    // Entries: outside every group, wrong group, index in use, backwards to a lower level,
    // unknown TIR, unknown counter, drop with forward.
    d.run_err(
        &fte_input(high, fg, 9, 0x800, &[(dest_type::TIR, tir)], &[]),
        0x10,
        status::BAD_PARAM,
    );
    d.run_err(
        &fte_input(high, fg + 1, 0, 0x800, &[(dest_type::TIR, tir)], &[]),
        0x10,
        status::BAD_PARAM,
    );
    d.run_ok(
        &fte_input(high, fg, 0, 0x800, &[(dest_type::TIR, tir)], &[]),
        0x10,
    );
    d.run_err(
        &fte_input(high, fg, 0, 0x800, &[(dest_type::TIR, tir)], &[]),
        0x10,
        status::BAD_PARAM,
    );
    d.run_err(
        &fte_input(high, fg, 1, 0x800, &[(dest_type::FLOW_TABLE, low)], &[]),
        0x10,
        status::BAD_PARAM,
    );
    d.run_err(
        &fte_input(high, fg, 1, 0x800, &[(dest_type::TIR, 0x11_1111)], &[]),
        0x10,
        status::BAD_RES,
    );
    d.run_err(
        &fte_input(high, fg, 1, 0x800, &[(dest_type::TIR, tir)], &[0x11_1111]),
        0x10,
        status::BAD_RES,
    );
    let mut both = fte_input(high, fg, 1, 0x800, &[(dest_type::TIR, tir)], &[]);
    let act = action::FWD_DEST | action::DROP;
    SetFteIn::mut_from_prefix(&mut both[..])
        .unwrap()
        .0
        .flow_context_mut()
        .set_action(act);
    d.run_err(&both, 0x10, status::BAD_PARAM);
    let mut short = fte_input(high, fg, 1, 0x800, &[(dest_type::TIR, tir)], &[]);
    short.truncate(SetFteIn::SIZE);
    d.run_err(&short, 0x10, status::BAD_INP_LEN);
    // A table missing backwards is refused too.
    d.err::<cmds::CreateFlowTable>(status::BAD_PARAM, |i| {
        let c = i.flow_table_context_mut();
        c.set_level(5);
        c.set_table_miss_action(miss_action::FWD.into());
        c.set_table_miss_id(high);
    });
    // In-use objects: the TIR under an entry, the group with entries, the table with groups.
    d.err::<cmds::DestroyTir>(status::BAD_RES_STATE, |i| i.set_tirn(tir));
    d.err::<cmds::DestroyFlowGroup>(status::BAD_RES_STATE, |i| {
        i.set_table_id(high);
        i.set_group_id(fg);
    });
    d.err::<cmds::DestroyFlowTable>(status::BAD_RES_STATE, |i| i.set_table_id(high));
    d.err::<cmds::DeleteFlowTableEntry>(status::BAD_RES, |i| {
        i.set_table_id(high);
        i.set_flow_index(3);
    });
    // Counters: double free, query of a freed one.
    let fc = view::<AllocFlowCounterOut>(&d.ok::<cmds::AllocFlowCounter>(|_| {})).flow_counter_id();
    d.ok::<cmds::DeallocFlowCounter>(|i| i.set_flow_counter_id(fc));
    d.err::<cmds::DeallocFlowCounter>(status::BAD_RES, |i| i.set_flow_counter_id(fc));
    d.err::<cmds::QueryFlowCounter>(status::BAD_RES, |i| i.set_flow_counter_id(fc));
    let _ = low;
}

#[test]
fn mkeys_check_pd_mode_and_translation_size() {
    let mut d = Driver::up(&[]);
    let b = base(&mut d);
    d.err::<cmds::CreateMkey>(status::BAD_RES, |i| {
        let c = i.memory_key_mkey_entry_mut();
        c.set_pd(0x66_6666);
        c.set_qpn(0xff_ffff);
    });
    d.err::<cmds::CreateMkey>(status::BAD_PARAM, |i| {
        let c = i.memory_key_mkey_entry_mut();
        c.set_pd(b.pd);
        c.set_qpn(0xff_ffff);
        // Mode 4 (MEMIC/SW ICM): not a mode the model maps.
        c.set_access_mode_4_2(1);
    });
    d.err::<cmds::CreateMkey>(status::BAD_PARAM, |i| {
        // An indirect list longer than 2^log_max_klm_list_size.
        let c = i.memory_key_mkey_entry_mut();
        c.set_pd(b.pd);
        c.set_qpn(0xff_ffff);
        c.set_access_mode_1_0(access_mode::KLMS.into());
        c.set_translations_octword_size(1 << 20);
    });
    // A KSM table is not bounded by it: mlx5_ib's implicit ODP MR, a free KSM mkey of 2^17
    // entries (odp.c mlx5_imr_ksm_entries on x86-64) filled later by UMR.
    d.ok::<cmds::CreateMkey>(|i| {
        let c = i.memory_key_mkey_entry_mut();
        c.set_pd(b.pd);
        c.set_qpn(0xff_ffff);
        c.set_free(1);
        c.set_umr_en(1);
        c.set_access_mode_1_0(access_mode::KSM.into());
        c.set_log_page_size(30);
        c.set_translations_octword_size(1 << 17);
    });
    // MTT: two 4 KiB pages for 0x1800 bytes starting 0x800 into a page.
    let pages = [d.alloc_page(), d.alloc_page()];
    let mtt = |start: u64, len: u64, entries: &[u64]| {
        let mut v = input::<cmds::CreateMkey>(|i| {
            i.set_translations_octword_actual_size(1);
            let c = i.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::MTT.into());
            c.set_pd(b.pd);
            c.set_qpn(0xff_ffff);
            c.set_lr(1);
            c.set_lw(1);
            c.set_start_addr(start);
            c.set_len(len);
            c.set_log_page_size(12);
            c.set_translations_octword_size(1);
            c.set_mkey_7_0(7);
        });
        v.resize(CreateMkeyIn::SIZE + entries.len() * 8, 0);
        for (k, &p) in entries.iter().enumerate() {
            CreateMkeyIn::set_mtt(&mut v, k, p).unwrap();
        }
        v
    };
    let idx =
        view::<CreateMkeyOut>(&d.run_ok(&mtt(0x7000_0800, 0x1800, &pages), CreateMkeyOut::SIZE))
            .mkey_index();
    d.run_err(
        &mtt(0x7000_0800, 0x1800, &pages[..1]),
        CreateMkeyOut::SIZE,
        status::BAD_INP_LEN,
    );
    d.run_err(
        &mtt(0x7000_0800, 0x1800, &[pages[0] + 8, pages[1]]),
        CreateMkeyOut::SIZE,
        status::BAD_PARAM,
    );
    d.run_err(
        &mtt(0x7000_0800, 0x3000, &pages),
        CreateMkeyOut::SIZE,
        status::BAD_PARAM,
    );
    d.err::<cmds::DeallocPd>(status::BAD_RES_STATE, |i| i.set_pd(b.pd));
    d.ok::<cmds::DestroyMkey>(|i| i.set_mkey_index(idx));
    d.err::<cmds::DestroyMkey>(status::BAD_RES, |i| i.set_mkey_index(idx));
}

#[test]
fn vport_lists_counters_and_vxlan_ports_are_bounded() {
    let mut d = Driver::up(&[]);
    // log_max_current_uc_list 12 in the profiles: 4097 entries is too many.
    d.err::<cmds::ModifyNicVportContext>(status::BAD_PARAM, |i| {
        i.field_select_mut().set_addresses_list(1);
        i.nic_vport_context_mut().set_allowed_list_size(4097);
    });
    d.err::<cmds::ModifyNicVportContext>(status::BAD_INP_LEN, |i| {
        i.field_select_mut().set_addresses_list(1);
        i.nic_vport_context_mut().set_allowed_list_size(2);
    });
    d.err::<cmds::QueryQCounter>(status::BAD_RES, |i| i.set_counter_set_id(5));
    d.err::<cmds::DeallocQCounter>(status::BAD_RES, |i| i.set_counter_set_id(5));
    d.err::<cmds::QueryVportCounter>(status::BAD_PARAM, |i| i.set_other_vport(1));
    // VXLAN ports need the VXLAN offload cap (ConnectX-4 Lx profile has it, see model.md).
    let caps = d.query_cap(cap_type::ETHERNET_OFFLOADS, true);
    let vxlan = view::<HcaCapUnion>(&caps)
        .per_protocol_networking_offload_caps()
        .tunnel_stateless_vxlan();
    if vxlan == 0 {
        d.err::<cmds::AddVxlanUdpDport>(status::BAD_OP, |i| i.set_vxlan_udp_port(4789));
        return;
    }
    d.ok::<cmds::AddVxlanUdpDport>(|i| i.set_vxlan_udp_port(4789));
    d.err::<cmds::AddVxlanUdpDport>(status::BAD_PARAM, |i| i.set_vxlan_udp_port(0));
    d.err::<cmds::DeleteVxlanUdpDport>(status::BAD_PARAM, |i| i.set_vxlan_udp_port(8472));
    for p in [8472, 4790, 4791] {
        d.ok::<cmds::AddVxlanUdpDport>(|i| i.set_vxlan_udp_port(p));
    }
    d.err::<cmds::AddVxlanUdpDport>(status::NO_RES, |i| i.set_vxlan_udp_port(5000));
}
