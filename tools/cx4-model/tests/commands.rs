//! The remaining firmware commands, each with its success and its errors: UARs, protection
//! and transport domains, ACCESS_REG, the NIC vport, P_Keys and flow tables.

mod common;

use common::{input, out_status, reg_input, view, Driver};
use cx4_hw::{
    caps::{cap_type, HcaCapUnion},
    command as cmds,
    flow::{miss_action, table_type, CreateFlowTableOut},
    mng::{
        mcam_group, mcqi_fw, mcqi_info_type, mcqs_identifier, mcqs_update_state, McamReg, McqiReg,
        McqiRegData, McqiVersion, McqsReg,
    },
    pd::{AllocPdOut, AllocTransportDomainOut},
    regs::{
        id, port_status, AccessRegisterIn, HostEndiannessReg, PaosReg, PmtuReg, PpcntReg,
        PtysProto, PtysReg,
    },
    status,
    uar::AllocUarOut,
    vport::{vport_state, QueryHcaVportPkeyOut, QueryNicVportContextOut, QueryVportStateOut},
};
use zerocopy::{FromBytes, IntoBytes};

fn up() -> Driver {
    Driver::up(&[])
}

fn reg_err(d: &mut Driver, reg: u16, write: bool, data: &[u8], want: u8) {
    d.run_err(
        &reg_input(reg, write, data),
        0x10 + data.len().max(16),
        want,
    );
}

#[test]
fn resource_commands_before_init_hca_are_state_errors() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.err::<cmds::AllocUar>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::AllocPd>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::AllocTransportDomain>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::QueryVportState>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::QueryNicVportContext>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::ModifyNicVportContext>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::QueryHcaVportPkey>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::CreateFlowTable>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::DestroyFlowTable>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::SetFlowTableRoot>(status::BAD_SYS_STATE, |_| {});
}

#[test]
fn uars_are_allocated_above_the_init_segment_and_freed_once() {
    let mut d = up();
    let first = d.uar.unwrap();
    assert_eq!(
        first, 8,
        "first UAR index: expected 8 (pages 0..2 hold the init segment)"
    );
    let second = view::<AllocUarOut>(&d.ok::<cmds::AllocUar>(|_| {})).uar();
    assert_eq!(second, 9, "second UAR index");
    d.ok::<cmds::DeallocUar>(|i| i.set_uar(second));
    d.err::<cmds::DeallocUar>(status::BAD_RES, |i| i.set_uar(second));
    d.err::<cmds::DeallocUar>(status::BAD_RES, |i| i.set_uar(3));
    let mut short = input::<cmds::AllocUar>(|_| {});
    short.truncate(8);
    d.run_err(&short, 0x10, status::BAD_INP_LEN);
    d.run_err(&input::<cmds::AllocUar>(|_| {}), 0xc, status::BAD_OUTP_LEN);
}

#[test]
fn protection_domains_are_distinct_and_freed_once() {
    let mut d = up();
    let a = view::<AllocPdOut>(&d.ok::<cmds::AllocPd>(|_| {})).pd();
    let b = view::<AllocPdOut>(&d.ok::<cmds::AllocPd>(|_| {})).pd();
    assert!(
        a != b && a != 0 && b != 0,
        "PDs: expected two distinct non-zero, seen {a} {b}"
    );
    d.ok::<cmds::DeallocPd>(|i| i.set_pd(a));
    d.err::<cmds::DeallocPd>(status::BAD_RES, |i| i.set_pd(a));
    d.err::<cmds::DeallocPd>(status::BAD_RES, |i| i.set_pd(0xfffff));
}

#[test]
fn transport_domains_are_distinct_and_freed_once() {
    let mut d = up();
    let a = view::<AllocTransportDomainOut>(&d.ok::<cmds::AllocTransportDomain>(|_| {}))
        .transport_domain();
    assert_ne!(a, 0, "transport domain 0 handed out");
    d.ok::<cmds::DeallocTransportDomain>(|i| i.set_transport_domain(a));
    d.err::<cmds::DeallocTransportDomain>(status::BAD_RES, |i| i.set_transport_domain(a));
}

#[test]
fn host_endianness_register_reads_back_what_was_written() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let mut he = HostEndiannessReg::new();
    he.set_he(cx4_hw::regs::HOST_ENDIANNESS_BIG.into());
    d.reg_ok(id::HOST_ENDIANNESS, true, &he);
    let back = d.reg_ok(id::HOST_ENDIANNESS, false, &HostEndiannessReg::new());
    assert_eq!(
        back.he(),
        u32::from(cx4_hw::regs::HOST_ENDIANNESS_BIG),
        "HOST_ENDIANNESS: expected 0x80 back"
    );
    // A write without the register data is an input length error.
    reg_err(&mut d, id::HOST_ENDIANNESS, true, &[], status::BAD_INP_LEN);
}

#[test]
fn ptys_reports_the_port_and_refuses_other_ports_and_protocols() {
    let mut d = up();
    let mut q = PtysReg::new();
    q.set_local_port(1);
    q.set_proto_mask(PtysProto::EN.bits().into());
    let r = d.reg_ok(id::PTYS, false, &q);
    assert_eq!(
        (r.eth_proto_capability(), r.eth_proto_oper()),
        (cx4_model::fw::ETH_100GBASE_CR4, 0),
        "PTYS on a down port: expected 100GBASE_CR4 capable, nothing operational"
    );
    let mut bad = q;
    bad.set_local_port(2);
    reg_err(&mut d, id::PTYS, false, bad.as_bytes(), status::BAD_PARAM);
    let mut ib = q;
    ib.set_proto_mask(PtysProto::IB.bits().into());
    reg_err(&mut d, id::PTYS, false, ib.as_bytes(), status::BAD_PARAM);
    let mut w = q;
    w.set_eth_proto_admin(1 << 3);
    reg_err(&mut d, id::PTYS, true, w.as_bytes(), status::BAD_PARAM);
    w.set_eth_proto_admin(cx4_model::fw::ETH_100GBASE_CR4);
    d.reg_ok(id::PTYS, true, &w);
}

#[test]
fn paos_brings_the_port_up_and_the_vport_follows() {
    let mut d = up();
    let st = view::<QueryVportStateOut>(&d.ok::<cmds::QueryVportState>(|_| {}));
    assert_eq!(
        st.state(),
        u32::from(vport_state::DOWN),
        "vport down at start"
    );
    let mut p = PaosReg::new();
    p.set_local_port(1);
    p.set_ase(1);
    p.set_admin_status(port_status::UP.into());
    d.reg_ok(id::PAOS, true, &p);
    let back = d.reg_ok(id::PAOS, false, &PaosReg::new());
    assert_eq!(
        back.admin_status(),
        u32::from(port_status::UP),
        "PAOS admin up"
    );
    let st = view::<QueryVportStateOut>(&d.ok::<cmds::QueryVportState>(|_| {}));
    assert_eq!(
        (st.state(), st.admin_state()),
        (u32::from(vport_state::UP), u32::from(vport_state::UP)),
        "QUERY_VPORT_STATE after PAOS up"
    );
    p.set_admin_status(7);
    reg_err(&mut d, id::PAOS, true, p.as_bytes(), status::BAD_PARAM);
    d.err::<cmds::QueryVportState>(status::BAD_PARAM, |i| {
        i.set_other_vport(1);
        i.set_vport_number(1);
    });
}

#[test]
fn pmtu_takes_mtus_within_the_port_maximum() {
    let mut d = up();
    let mut m = PmtuReg::new();
    m.set_local_port(1);
    m.set_admin_mtu(9000);
    d.reg_ok(id::PMTU, true, &m);
    let back = d.reg_ok(id::PMTU, false, &PmtuReg::new());
    assert_eq!(
        (back.admin_mtu(), back.max_mtu()),
        (9000, 9978),
        "PMTU: expected admin 9000 and max 9978"
    );
    m.set_admin_mtu(10_000);
    reg_err(&mut d, id::PMTU, true, m.as_bytes(), status::BAD_PARAM);
    m.set_admin_mtu(10);
    reg_err(&mut d, id::PMTU, true, m.as_bytes(), status::BAD_PARAM);
}

#[test]
fn ppcnt_and_node_desc_answer_and_unknown_registers_or_op_mods_are_refused() {
    let mut d = up();
    let mut q = PpcntReg::new();
    q.set_grp(cx4_hw::regs::ppcnt_grp::RFC_2863.into());
    let r = d.reg_ok(id::PPCNT, false, &q);
    assert_eq!(
        (r.local_port(), r.grp()),
        (1, u32::from(cx4_hw::regs::ppcnt_grp::RFC_2863)),
        "PPCNT echoes port 1 and the group"
    );
    let mut nd = cx4_hw::regs::NodeDescReg::new();
    nd.desc_mut()[..9].copy_from_slice(b"test node");
    d.reg_ok(id::NODE_DESC, true, &nd);
    let back = d.reg_ok(id::NODE_DESC, false, &cx4_hw::regs::NodeDescReg::new());
    assert!(
        back.desc().starts_with(b"test node\0"),
        "NODE_DESC read back"
    );
    reg_err(&mut d, id::PCAM, false, &[0; 16], status::BAD_PARAM);
    reg_err(&mut d, id::PPCNT, true, &[0; 16], status::BAD_PARAM);
    let mut v = reg_input(id::PAOS, false, &[0; 16]);
    AccessRegisterIn::mut_from_prefix(&mut v[..])
        .unwrap()
        .0
        .set_op_mod(2);
    d.run_err(&v, 0x20, status::BAD_PARAM);
}

#[test]
fn nic_vport_context_reports_the_seeded_mac_and_takes_an_mtu() {
    let mut d = Driver::up(&["--seed", "16909060"]); // 0x01020304
    let q = view::<QueryNicVportContextOut>(&d.ok::<cmds::QueryNicVportContext>(|_| {}));
    let c = q.nic_vport_context();
    assert_eq!(
        c.permanent_address().mac(),
        [0x02, 0xc4, 0x01, 0x02, 0x03, 0x04],
        "permanent MAC: expected 02:c4 then the seed"
    );
    assert_eq!(c.mtu(), 1522, "default vport MTU");
    d.ok::<cmds::ModifyNicVportContext>(|i| {
        i.field_select_mut().set_mtu(1);
        i.field_select_mut().set_promisc(1);
        i.nic_vport_context_mut().set_mtu(4000);
        i.nic_vport_context_mut().set_promisc_all(1);
    });
    let q = view::<QueryNicVportContextOut>(&d.ok::<cmds::QueryNicVportContext>(|_| {}));
    let c = q.nic_vport_context();
    assert_eq!(
        (c.mtu(), c.promisc_all()),
        (4000, 1),
        "after MODIFY: expected MTU 4000 and promisc_all"
    );
    d.err::<cmds::QueryNicVportContext>(status::BAD_PARAM, |i| i.set_other_vport(1));
    d.run_err(
        &input::<cmds::QueryNicVportContext>(|_| {}),
        0x20,
        status::BAD_OUTP_LEN,
    );
}

#[test]
fn modify_nic_vport_context_refuses_bad_mtu_roce_and_the_permanent_address() {
    let mut d = up();
    d.err::<cmds::ModifyNicVportContext>(status::BAD_PARAM, |i| {
        i.field_select_mut().set_mtu(1);
        i.nic_vport_context_mut().set_mtu(20_000);
    });
    d.err::<cmds::ModifyNicVportContext>(status::BAD_PARAM, |i| {
        i.field_select_mut().set_roce_en(1);
        i.nic_vport_context_mut().set_roce_en(1);
    });
    d.err::<cmds::ModifyNicVportContext>(status::BAD_PARAM, |i| {
        i.field_select_mut().set_permanent_address(1)
    });
    d.err::<cmds::ModifyNicVportContext>(status::BAD_PARAM, |i| i.set_other_vport(1));
    let mut short = input::<cmds::ModifyNicVportContext>(|_| {});
    short.truncate(0x100);
    d.run_err(&short, 0x10, status::BAD_INP_LEN);
}

#[test]
fn pkey_table_has_the_default_key_first() {
    let mut d = up();
    let one = input::<cmds::QueryHcaVportPkey>(|i| i.set_port_num(1));
    let out = d.run_ok(&one, QueryHcaVportPkeyOut::SIZE + 4);
    let k = QueryHcaVportPkeyOut::pkey(&out, 0).expect("one entry");
    assert_eq!(k.pkey(), 0xffff, "P_Key 0: expected the default 0xffff");
    let all = input::<cmds::QueryHcaVportPkey>(|i| i.set_pkey_index(0xffff));
    let out = d.run_ok(&all, QueryHcaVportPkeyOut::SIZE + 128 * 4);
    assert_eq!(
        QueryHcaVportPkeyOut::pkey(&out, 127).map(|k| k.pkey()),
        Some(0),
        "the whole table has 128 entries"
    );
    d.run_err(&all, QueryHcaVportPkeyOut::SIZE + 4, status::BAD_OUTP_LEN);
    d.run_err(&one, QueryHcaVportPkeyOut::SIZE, status::BAD_OUTP_LEN);
    d.err::<cmds::QueryHcaVportPkey>(status::BAD_PARAM, |i| i.set_pkey_index(200));
    d.err::<cmds::QueryHcaVportPkey>(status::BAD_PARAM, |i| i.set_port_num(2));
}

fn create_ft(d: &mut Driver, level: u32, miss_to: Option<u32>) -> u32 {
    let out = d.ok::<cmds::CreateFlowTable>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        let c = i.flow_table_context_mut();
        c.set_level(level);
        if let Some(t) = miss_to {
            c.set_table_miss_action(miss_action::FWD.into());
            c.set_table_miss_id(t);
        }
    });
    view::<CreateFlowTableOut>(&out).table_id()
}

#[test]
fn flow_tables_are_created_rooted_and_destroyed() {
    let mut d = up();
    let anchor = create_ft(&mut d, 64, None);
    let t = create_ft(&mut d, 1, Some(anchor));
    assert!(anchor != 0 && t != anchor, "distinct non-zero table ids");
    d.ok::<cmds::SetFlowTableRoot>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(t);
    });
    d.ok::<cmds::SetFlowTableRoot>(|i| i.set_table_id(0));
    d.ok::<cmds::DestroyFlowTable>(|i| i.set_table_id(t));
    d.ok::<cmds::DestroyFlowTable>(|i| i.set_table_id(anchor));
    d.err::<cmds::DestroyFlowTable>(status::BAD_RES, |i| i.set_table_id(anchor));
}

#[test]
fn flow_table_commands_refuse_bad_types_levels_and_unknown_tables() {
    let mut d = up();
    d.err::<cmds::CreateFlowTable>(status::BAD_PARAM, |i| {
        i.set_table_type(table_type::FDB.into())
    });
    d.err::<cmds::CreateFlowTable>(status::BAD_PARAM, |i| {
        i.flow_table_context_mut().set_level(129)
    });
    d.err::<cmds::CreateFlowTable>(status::BAD_PARAM, |i| {
        i.flow_table_context_mut().set_log_size(17)
    });
    d.err::<cmds::CreateFlowTable>(status::BAD_RES, |i| {
        let c = i.flow_table_context_mut();
        c.set_table_miss_action(miss_action::FWD.into());
        c.set_table_miss_id(0x4242);
    });
    let t = create_ft(&mut d, 1, None);
    d.err::<cmds::SetFlowTableRoot>(status::BAD_RES, |i| i.set_table_id(0x4242));
    d.err::<cmds::SetFlowTableRoot>(status::BAD_RES, |i| {
        i.set_table_type(table_type::NIC_TX.into());
        i.set_table_id(t);
    });
    let mut short = input::<cmds::CreateFlowTable>(|_| {});
    short.truncate(0x20);
    d.run_err(&short, 0x10, status::BAD_INP_LEN);
    assert_eq!(out_status(&d.ok::<cmds::QueryIssi>(|_| {})), status::OK);
}

/// MCQI as fw.c `mlx5_reg_mcqi_query` sends it: the 24-byte header in, header + `data_size`
/// bytes out. Returns the output register (header and data).
fn mcqi(d: &mut Driver, f: impl FnOnce(&mut McqiReg)) -> Vec<u8> {
    let mut q = McqiReg::new();
    f(&mut q);
    let out = d.run_ok(
        &reg_input(id::MCQI, false, q.as_bytes()),
        AccessRegisterIn::SIZE + McqiReg::SIZE + q.data_size() as usize,
    );
    out[AccessRegisterIn::SIZE..].to_vec()
}

fn mcqi_err(d: &mut Driver, f: impl FnOnce(&mut McqiReg)) {
    let mut q = McqiReg::new();
    q.set_data_size(McqiVersion::SIZE as u32);
    f(&mut q);
    reg_err(d, id::MCQI, false, q.as_bytes(), status::BAD_PARAM);
}

#[test]
fn mcam_advertises_only_mcqs_and_mcqi_in_the_groups_mlx5_reads() {
    let mut d = up();
    let general = d.query_cap(cap_type::GENERAL, true);
    assert_eq!(
        view::<HcaCapUnion>(&general).cmd_hca_cap().mcam_reg(),
        1,
        "cmd_hca_cap.mcam_reg"
    );
    for group in 0..4u32 {
        let mut q = McamReg::new();
        q.set_access_reg_group(group);
        let r = d.reg_ok(id::MCAM, false, &q);
        let mut want = McamReg::new();
        want.set_access_reg_group(group);
        if group == u32::from(mcam_group::FIRST_128) {
            want.access_regs_mut().set_mcqs(1);
            want.access_regs_mut().set_mcqi(1);
        }
        // Nothing else: no tracer, MFRL, MTMP, MRTC, MTUTC, MCC/MCDA, no enhanced features.
        assert_eq!(r, want, "MCAM group {group}");
    }
    let mut q = McamReg::new();
    q.set_feature_group(1);
    reg_err(&mut d, id::MCAM, false, q.as_bytes(), status::BAD_PARAM);
    let mut q = McamReg::new();
    q.set_access_reg_group(4);
    reg_err(&mut d, id::MCAM, false, q.as_bytes(), status::BAD_PARAM);
    reg_err(
        &mut d,
        id::MCAM,
        true,
        McamReg::new().as_bytes(),
        status::BAD_PARAM,
    );
}

#[test]
fn mcqs_lists_the_boot_image_as_the_only_idle_component() {
    let mut d = up();
    let r = d.reg_ok(id::MCQS, false, &McqsReg::new());
    assert_eq!(
        (
            r.last_index_flag(),
            r.component_index(),
            r.identifier(),
            r.component_update_state()
        ),
        (
            1,
            0,
            u32::from(mcqs_identifier::BOOT_IMG),
            u32::from(mcqs_update_state::IDLE)
        ),
        "MCQS component 0: the boot image, last, no update pending"
    );
    let mut q = McqsReg::new();
    q.set_component_index(1);
    reg_err(&mut d, id::MCQS, false, q.as_bytes(), status::BAD_PARAM);
    let mut q = McqsReg::new();
    q.set_fw_device(1);
    reg_err(&mut d, id::MCQS, false, q.as_bytes(), status::BAD_PARAM);
    reg_err(
        &mut d,
        id::MCQS,
        true,
        McqsReg::new().as_bytes(),
        status::BAD_PARAM,
    );
}

#[test]
fn mcqi_reports_the_running_firmware_version_as_devlink_decodes_it() {
    let mut d = Driver::up(&["--fw-version", "12.27.1016"]);
    for pending in [mcqi_fw::RUNNING_VERSION, mcqi_fw::STORED_VERSION] {
        let out = mcqi(&mut d, |q| {
            q.set_read_pending_component(pending.into());
            q.set_info_type(mcqi_info_type::VERSION.into());
            q.set_data_size(McqiVersion::SIZE as u32);
        });
        let hdr = McqiReg::read_from_prefix(&out[..]).unwrap().0;
        assert_eq!(
            (hdr.info_size(), hdr.data_size(), hdr.offset()),
            (McqiVersion::SIZE as u32, McqiVersion::SIZE as u32, 0),
            "MCQI VERSION sizes"
        );
        let v = McqiReg::data(&out, 0).expect("data").mcqi_version();
        // devlink.c: "%d.%d.%04d" of version >> 24, (version >> 16) & 0xff, version & 0xffff.
        assert_eq!(v.version(), 12 << 24 | 27 << 16 | 1016, "MCQI version");
        assert_eq!(v.version_string_length(), 10);
        assert!(
            v.version_string().starts_with(b"12.27.1016\0"),
            "version string {:?}",
            String::from_utf8_lossy(v.version_string())
        );
    }
    // A dword-aligned window: bytes 4..12 of the VERSION information start with `version`.
    let out = mcqi(&mut d, |q| {
        q.set_info_type(mcqi_info_type::VERSION.into());
        q.set_offset(4);
        q.set_data_size(8);
    });
    let hdr = McqiReg::read_from_prefix(&out[..]).unwrap().0;
    assert_eq!((hdr.offset(), hdr.data_size()), (4, 8));
    assert_eq!(
        &out[McqiReg::SIZE..McqiReg::SIZE + 4],
        &[12, 27, 0x03, 0xf8]
    );
    // CAPABILITIES: VERSION supported, nothing to flash.
    let out = mcqi(&mut d, |q| {
        q.set_info_type(mcqi_info_type::CAPABILITIES.into());
        q.set_data_size(McqiRegData::SIZE as u32);
    });
    let c = McqiReg::data(&out, 0).expect("data").mcqi_caps();
    assert_eq!(c.supported_info_bitmask(), 1 << mcqi_info_type::VERSION);
    assert_eq!(
        McqiReg::read_from_prefix(&out[..]).unwrap().0.data_size(),
        0x14
    );

    mcqi_err(&mut d, |q| {
        q.set_component_index(1);
        q.set_info_type(mcqi_info_type::VERSION.into());
    });
    mcqi_err(&mut d, |q| {
        q.set_info_type(mcqi_info_type::ACTIVATION_METHOD.into())
    });
    mcqi_err(&mut d, |q| q.set_info_type(0x1f));
    mcqi_err(&mut d, |q| {
        q.set_info_type(mcqi_info_type::VERSION.into());
        q.set_offset(2);
    });
    mcqi_err(&mut d, |q| {
        q.set_info_type(mcqi_info_type::VERSION.into());
        q.set_offset(McqiVersion::SIZE as u32 + 4);
    });
}

#[test]
fn cx4lx_mcqi_reports_its_default_firmware() {
    let mut d = Driver::up(&["--chip", "cx4lx"]);
    let out = mcqi(&mut d, |q| {
        q.set_info_type(mcqi_info_type::VERSION.into());
        q.set_data_size(McqiVersion::SIZE as u32);
    });
    let v = McqiReg::data(&out, 0).expect("data").mcqi_version();
    assert_eq!(v.version(), 14 << 24 | 32 << 16 | 1010);
    assert!(v.version_string().starts_with(b"14.32.1010\0"));
}

#[test]
fn port_state_changes_raise_port_change_events() {
    use cx4_hw::eq::{event_type, port_change_subtype, EventMask};
    let mut d = up();
    let eqn = d.create_eq(3, 0, EventMask::PORT_CHANGE.bits());
    let paos = |admin: u8| {
        let mut p = PaosReg::new();
        p.set_local_port(1);
        p.set_ase(1);
        p.set_admin_status(admin.into());
        p
    };
    let events = |d: &mut Driver| -> Vec<(u32, u32, u32)> {
        std::iter::from_fn(|| d.eq_next(eqn))
            .map(|e| (e.event_type(), e.sub_type(), e.port().port()))
            .collect()
    };
    let port_change = u32::from(event_type::PORT_CHANGE);
    d.reg_ok(id::PAOS, true, &paos(port_status::UP));
    assert_eq!(
        events(&mut d),
        vec![(port_change, port_change_subtype::ACTIVE.into(), 1)],
        "admin up with the cable in: expected one PORT_CHANGE ACTIVE for port 1"
    );
    d.reg_ok(id::PAOS, true, &paos(port_status::UP));
    assert!(
        events(&mut d).is_empty(),
        "no event when the state does not change"
    );
    d.model.control_ok("link state=down");
    assert_eq!(
        events(&mut d),
        vec![(port_change, port_change_subtype::DOWN.into(), 1)],
        "cable pulled: expected PORT_CHANGE DOWN"
    );
    let st = d.reg_ok(id::PAOS, false, &paos(0));
    assert_eq!(
        (st.admin_status(), st.oper_status()),
        (port_status::UP.into(), port_status::DOWN.into()),
        "PAOS: admin up, operationally down without a link"
    );
    let vs = view::<QueryVportStateOut>(&d.ok::<cmds::QueryVportState>(|_| {}));
    assert_eq!(
        vs.state(),
        u32::from(vport_state::DOWN),
        "vport follows the link"
    );
    d.model.control_ok("link state=up");
    assert_eq!(
        events(&mut d),
        vec![(port_change, port_change_subtype::ACTIVE.into(), 1)],
        "cable back: expected PORT_CHANGE ACTIVE"
    );
    assert!(d.model.control("link state=sideways").starts_with("error:"));
}
