//! The DCB registers as mlx5e drives them (en_dcbnl.c through port.c): QCAM at load, the trust
//! state and DSCP map at probe, the default ETS, PFC and global pause, and the control socket's
//! `qos` line that shows the result; every bad value is refused with BAD_PARAM.

mod common;

use common::{reg_input, Driver};
use cx4_hw::{
    caps::{cap_type, general::CmdHcaCap, HcaCapUnion},
    counters::PfccReg,
    qos::{trust_state, QcamReg, QetcReg, QpdpmReg, QptsReg, QtctReg},
    regs::{id, AccessRegisterIn},
    status,
};
use zerocopy::FromBytes;

fn reg_err<T: cx4_hw::bits::Layout>(d: &mut Driver, reg: u16, write: bool, data: &T) {
    d.run_err(
        &reg_input(reg, write, data.as_bytes()),
        AccessRegisterIn::SIZE + T::SIZE,
        status::BAD_PARAM,
    );
}

/// The value of `key=` in the control socket's `qos` line.
fn qos_field(line: &str, key: &str) -> String {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
        .to_string()
}

#[test]
fn caps_offer_host_managed_dcb_with_dscp_trust() {
    let mut d = Driver::up(&[]);
    let g = d.query_cap(cap_type::GENERAL, true);
    let g = CmdHcaCap::read_from_prefix(&g).unwrap().0;
    assert_eq!(
        (g.qos(), g.ets(), g.vport_group_manager(), g.qcam_reg()),
        (1, 1, 1, 1),
        "qos, ets, vport_group_manager, qcam_reg"
    );
    assert_eq!((g.dcbx(), g.pcam_reg(), g.max_tc()), (0, 0, 8));
    // qos = 1 makes mlx5_core read the QoS cap page: it must exist (all zero).
    let q = d.query_cap(cap_type::QOS, true);
    assert_eq!(q.len(), HcaCapUnion::SIZE);
    assert!(q.iter().all(|b| *b == 0), "no packet pacing or scheduling");
    // mlx5_get_qcam_reg: feature group 0, access register group 0.
    let qcam = d.reg_ok(id::QCAM, false, &QcamReg::new());
    assert_eq!(
        (qcam.access_regs().qpts(), qcam.access_regs().qpdpm()),
        (1, 1)
    );
    assert_eq!(qcam.features().qetcr_qshr_max_bw_val_msb(), 0);
    let mut bad = QcamReg::new();
    bad.set_access_reg_group(1);
    reg_err(&mut d, id::QCAM, false, &bad);
}

#[test]
fn mlx5e_probe_sequence_round_trips() {
    let mut d = Driver::up(&[]);
    // mlx5e_trust_initialize: QPTS and QPDPM reads, defaults PCP and dscp >> 3.
    let mut q = QptsReg::new();
    q.set_local_port(1);
    let t = d.reg_ok(id::QPTS, false, &q);
    assert_eq!(
        t.trust_state(),
        u32::from(trust_state::PCP),
        "default trust"
    );
    let mut m = QpdpmReg::new();
    m.set_local_port(1);
    let map = d.reg_ok(id::QPDPM, false, &m);
    for dscp in 0..64 {
        assert_eq!(
            map.dscp_entry(dscp).unwrap().prio(),
            (dscp >> 3) as u32,
            "default dscp {dscp}"
        );
    }
    // mlx5e_ets_init → mlx5_set_port_prio_tc: one QTCT write per priority, port_number 0.
    let prio_tc = [1u32, 0, 2, 3, 4, 5, 6, 7];
    for (p, tc) in prio_tc.iter().enumerate() {
        let mut w = QtctReg::new();
        w.set_prio(p as u32);
        w.set_tclass(*tc);
        d.reg_ok(id::QTCT, true, &w);
    }
    // mlx5_set_port_tc_group then mlx5_set_port_tc_bw_alloc: g bits, then b bits.
    let mut w = QetcReg::new();
    for i in 0..8 {
        let e = w.tc_mut(i).unwrap();
        e.set_g(1);
        e.set_group(if i == 2 { 1 } else { 7 });
        e.set_bw_allocation(55); // ignored: b is clear
    }
    d.reg_ok(id::QETCR, true, &w);
    let mut w = QetcReg::new();
    for i in 0..8 {
        let e = w.tc_mut(i).unwrap();
        e.set_b(1);
        e.set_bw_allocation(if i == 2 { 40 } else { 100 });
        e.set_group(3); // ignored: g is clear
    }
    d.reg_ok(id::QETCR, true, &w);
    // ieee_getets: QTCT reads with port_number 1, QETCR read.
    for (p, tc) in prio_tc.iter().enumerate() {
        let mut r = QtctReg::new();
        r.set_port_number(1);
        r.set_prio(p as u32);
        assert_eq!(d.reg_ok(id::QTCT, false, &r).tclass(), *tc, "prio {p}");
    }
    let e = d.reg_ok(id::QETCR, false, &QetcReg::new());
    for i in 0..8 {
        let t = e.tc(i).unwrap();
        let want = if i == 2 { (1, 40) } else { (7, 100) };
        assert_eq!((t.group(), t.bw_allocation()), want, "tc {i}");
    }
    // ieee_setmaxrate: r bits.
    let mut w = QetcReg::new();
    w.set_port_number(1);
    for i in 0..8 {
        let e = w.tc_mut(i).unwrap();
        e.set_r(1);
        e.set_max_bw_units(if i == 3 { 4 } else { 0 });
        e.set_max_bw_value(if i == 3 { 10 } else { 0 });
    }
    d.reg_ok(id::QETCR, true, &w);
    let e = d.reg_ok(id::QETCR, false, &QetcReg::new());
    let t = e.tc(3).unwrap();
    assert_eq!((t.max_bw_units(), t.max_bw_value(), t.group()), (4, 10, 7));

    // dcb app dscp: mlx5_set_dscp2prio reads, sets e on one entry, writes back.
    let mut w = d.reg_ok(id::QPDPM, false, &m);
    w.set_local_port(1);
    w.dscp_entry_mut(46).unwrap().set_prio(5);
    w.dscp_entry_mut(46).unwrap().set_e(1);
    w.dscp_entry_mut(0).unwrap().set_prio(7); // e clear: ignored
    d.reg_ok(id::QPDPM, true, &w);
    let map = d.reg_ok(id::QPDPM, false, &m);
    assert_eq!(map.dscp_entry(46).unwrap().prio(), 5);
    assert_eq!(map.dscp_entry(0).unwrap().prio(), 0);
    let mut t = QptsReg::new();
    t.set_local_port(1);
    t.set_trust_state(trust_state::DSCP.into());
    d.reg_ok(id::QPTS, true, &t);
    assert_eq!(
        d.reg_ok(id::QPTS, false, &q).trust_state(),
        u32::from(trust_state::DSCP)
    );

    // dcb pfc set prio-pfc 3:on → mlx5_set_port_pfc(0x08, 0x08), masks all ones.
    let mut p = PfccReg::new();
    p.set_local_port(1);
    p.set_pfctx(0x08);
    p.set_pfcrx(0x08);
    p.set_prio_mask_tx(0xff);
    p.set_prio_mask_rx(0xff);
    d.reg_ok(id::PFCC, true, &p);
    let mut r = PfccReg::new();
    r.set_local_port(1);
    let back = d.reg_ok(id::PFCC, false, &r);
    assert_eq!((back.pfctx(), back.pfcrx()), (0x08, 0x08));
    // mlx5_set_port_pause: masks 0, PFC unchanged.
    let mut g = PfccReg::new();
    g.set_local_port(1);
    g.set_pprx(1);
    d.reg_ok(id::PFCC, true, &g);
    let back = d.reg_ok(id::PFCC, false, &r);
    assert_eq!(
        (back.pfctx(), back.pfcrx(), back.pptx(), back.pprx()),
        (0x08, 0x08, 0, 1)
    );

    let line = d.model.control("qos");
    assert!(
        line.starts_with("pfc tx=0x08 rx=0x08 pause tx=0 rx=1 "),
        "{line}"
    );
    assert_eq!(qos_field(&line, "trust"), "dscp", "{line}");
    assert_eq!(qos_field(&line, "prio_tc"), "1,0,2,3,4,5,6,7", "{line}");
    assert_eq!(qos_field(&line, "tc_group"), "7,7,1,7,7,7,7,7", "{line}");
    assert_eq!(qos_field(&line, "tc_bw"), "100,100,40,100,100,100,100,100");
    assert_eq!(qos_field(&line, "tc_maxrate_mbps"), "0,0,0,10000,0,0,0,0");
    assert!(qos_field(&line, "dscp2prio").starts_with("0,0,0,0,0,0,0,0,1,1,"));
}

#[test]
fn bad_qos_values_fail_with_bad_param_and_change_nothing() {
    let mut d = Driver::up(&[]);
    // Ports other than 0/1.
    let mut q = QptsReg::new();
    q.set_local_port(2);
    reg_err(&mut d, id::QPTS, false, &q);
    let mut q = QtctReg::new();
    q.set_port_number(3);
    reg_err(&mut d, id::QTCT, true, &q);
    let mut p = PfccReg::new();
    p.set_local_port(2);
    reg_err(&mut d, id::PFCC, true, &p);
    // Unknown trust states.
    for t in [0, 3, 7] {
        let mut q = QptsReg::new();
        q.set_local_port(1);
        q.set_trust_state(t);
        reg_err(&mut d, id::QPTS, true, &q);
    }
    // bw_allocation above 100 on one TC: the whole write is refused.
    let mut w = QetcReg::new();
    for i in 0..8 {
        let e = w.tc_mut(i).unwrap();
        e.set_b(1);
        e.set_bw_allocation(if i == 5 { 101 } else { 10 });
    }
    reg_err(&mut d, id::QETCR, true, &w);
    // An unknown rate unit.
    let mut w = QetcReg::new();
    w.tc_mut(0).unwrap().set_r(1);
    w.tc_mut(0).unwrap().set_max_bw_units(9);
    reg_err(&mut d, id::QETCR, true, &w);
    // A DSCP mapped to a priority above 7.
    let mut m = QpdpmReg::new();
    m.set_local_port(1);
    m.dscp_entry_mut(1).unwrap().set_e(1);
    m.dscp_entry_mut(1).unwrap().set_prio(2);
    m.dscp_entry_mut(9).unwrap().set_e(1);
    m.dscp_entry_mut(9).unwrap().set_prio(8);
    reg_err(&mut d, id::QPDPM, true, &m);

    let line = d.model.control("qos");
    assert_eq!(qos_field(&line, "trust"), "pcp", "{line}");
    assert_eq!(qos_field(&line, "tc_bw"), "100,100,100,100,100,100,100,100");
    assert!(qos_field(&line, "dscp2prio").starts_with("0,0,0,0,0,0,0,0,1,1,"));
    assert_eq!(qos_field(&line, "prio_tc"), "0,1,2,3,4,5,6,7");
}
