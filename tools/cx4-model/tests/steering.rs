//! Steering decisions and data-path lookups against the firmware state, in-process: the
//! commands build the NIC RX tables as mlx5e does (VLAN table → L2 table → TTC → TIRs, the
//! anchor at the end) and [`Firmware::steer`] decides for parsed frames; TIR → RQ resolution
//! and lkey translation are checked on the same state.

mod common;

use common::{input, view, Driver};
use cx4_hw::{
    command::{self as cmds, Command},
    cq::CreateCqOut,
    eq::CreateEqOut,
    flow::{
        action, dest_type, fte_counter_mut, fte_destination_mut, match_criteria, miss_action,
        table_type, AllocFlowCounterOut, CreateFlowGroupIn, CreateFlowGroupOut, CreateFlowTableOut,
        FteMatchParam, SetFteIn, DEST_STRIDE,
    },
    mkey::{access_mode, mkey_from_index, CreateMkeyIn, CreateMkeyOut},
    pd::{AllocPdOut, AllocTransportDomainOut},
    status,
    tir::{disp_type, rqt_msg_len, rx_hash_fn, set_rqt_rq_num, CreateRqtOut, CreateTirOut},
    uar::AllocUarOut,
    wq::{rqc_state, wq_type, CreateRqIn, CreateRqOut},
};
use cx4_model::{
    bus::Bus,
    fw::{
        CapProfile, DropReason, Firmware, Headers, IpFields, L4Fields, RxFrame, RxVerdict, Tunnel,
        VlanTag, XlateError, RESERVED_LKEY,
    },
    pages::Pages,
};

const RAM: u64 = 0x1000_0000;
const RAM_SIZE: u64 = 4 << 20;
const OWN_MAC: [u8; 6] = [0x02, 0xc4, 0, 0, 0, 1];

/// A function brought up in-process, with guest RAM and a page allocator.
struct Fn {
    fw: Firmware,
    bus: Bus,
    next: u64,
}

impl Fn {
    fn new() -> Fn {
        let caps = CapProfile::parse(include_str!("../profiles/connectx4.caps")).unwrap();
        let mut bus = Bus::new(4);
        let ram = vfio_user_proto::memfd("steering-test", RAM_SIZE).unwrap();
        bus.mem.map(RAM, RAM_SIZE, 0, Some(ram)).unwrap();
        let mut f = Fn {
            fw: Firmware::new(caps, Pages::new(0, 0, 0), "MT_TEST"),
            bus,
            next: RAM,
        };
        f.ok::<cmds::EnableHca>(|_| {});
        f.ok::<cmds::InitHca>(|_| {});
        f
    }

    fn page(&mut self) -> u64 {
        let p = self.next;
        self.next += 4096;
        p
    }

    fn run(&mut self, inp: &[u8], out_len: usize) -> Vec<u8> {
        self.fw
            .execute(&mut self.bus, inp, out_len)
            .expect("answered")
    }

    fn run_ok(&mut self, inp: &[u8], out_len: usize) -> Vec<u8> {
        let out = self.run(inp, out_len);
        assert_eq!(
            common::out_status(&out),
            status::OK,
            "{:#x}",
            common::in_opcode(inp)
        );
        out
    }

    fn ok<C: Command>(&mut self, f: impl FnOnce(&mut C::In)) -> Vec<u8> {
        self.run_ok(&input::<C>(f), <C::Out as cx4_hw::bits::Layout>::SIZE)
    }
}

/// mlx5e's RX objects: PD, TD, a CQ, two RQs, TIRs per traffic type.
struct Rx {
    rqs: [u32; 2],
    tcp4: u32,
    udp4: u32,
    any: u32,
    vxlan: u32,
}

fn rx_objects(f: &mut Fn) -> Rx {
    let uar = view::<AllocUarOut>(&f.ok::<cmds::AllocUar>(|_| {})).uar();
    let pd = view::<AllocPdOut>(&f.ok::<cmds::AllocPd>(|_| {})).pd();
    let td = view::<AllocTransportDomainOut>(&f.ok::<cmds::AllocTransportDomain>(|_| {}))
        .transport_domain();
    let ring = [f.page()];
    let eq = Driver::create_eq_input(uar, 3, 0, 0, &ring);
    let eqn = view::<CreateEqOut>(&f.run_ok(&eq, CreateEqOut::SIZE)).eq_number() as u8;
    let (ring, dbr) = ([f.page()], f.page());
    let cq = Driver::create_cq_input(uar, eqn, 6, dbr, &ring);
    let cqn = view::<CreateCqOut>(&f.run_ok(&cq, CreateCqOut::SIZE)).cqn();
    let mut rq = || {
        let (ring, dbr) = (f.page(), f.page());
        let mut v = input::<cmds::CreateRq>(|i| {
            let c = i.ctx_mut();
            c.set_state(rqc_state::RST.into());
            c.set_cqn(cqn);
            let w = c.wq_mut();
            w.set_wq_type(wq_type::CYCLIC.into());
            w.set_pd(pd);
            w.set_dbr_addr(dbr);
            w.set_log_wq_stride(4);
            w.set_log_wq_sz(6);
        });
        v.resize(CreateRqIn::SIZE + 8, 0);
        CreateRqIn::set_wq_pas(&mut v, 0, ring).unwrap();
        view::<CreateRqOut>(&f.run_ok(&v, CreateRqOut::SIZE)).rqn()
    };
    let rqs = [rq(), rq()];
    let mut v = input::<cmds::CreateRqt>(|i| {
        i.rqt_context_mut().set_rqt_max_size(2);
        i.rqt_context_mut().set_rqt_actual_size(2);
    });
    v.resize(rqt_msg_len(2), 0);
    set_rqt_rq_num(&mut v, 0, rqs[0]).unwrap();
    set_rqt_rq_num(&mut v, 1, rqs[1]).unwrap();
    let rqt = view::<CreateRqtOut>(&f.run_ok(&v, CreateRqtOut::SIZE)).rqtn();
    let mut tir = |fields: u32, udp: bool| {
        view::<CreateTirOut>(&f.ok::<cmds::CreateTir>(|i| {
            let c = i.ctx_mut();
            c.set_transport_domain(td);
            c.set_disp_type(disp_type::INDIRECT.into());
            c.set_indirect_table(rqt);
            c.set_rx_hash_fn(rx_hash_fn::TOEPLITZ.into());
            let s = c.rx_hash_field_selector_outer_mut();
            s.set_l4_prot_type(udp.into());
            s.set_selected_fields(fields);
        }))
        .tirn()
    };
    let (tcp4, udp4, any, vxlan) = (
        tir(0xf, false),
        tir(0xf, true),
        tir(0, false),
        tir(0x3, true),
    );
    Rx {
        rqs,
        tcp4,
        udp4,
        any,
        vxlan,
    }
}

fn table(f: &mut Fn, level: u32, miss: Option<u32>) -> u32 {
    view::<CreateFlowTableOut>(&f.ok::<cmds::CreateFlowTable>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        let c = i.flow_table_context_mut();
        c.set_level(level);
        c.set_log_size(4);
        if let Some(t) = miss {
            c.set_table_miss_action(miss_action::FWD.into());
            c.set_table_miss_id(t);
        }
    }))
    .table_id()
}

fn group(
    f: &mut Fn,
    t: u32,
    range: (u32, u32),
    enable: u8,
    mask: impl FnOnce(&mut FteMatchParam),
) -> u32 {
    view::<CreateFlowGroupOut>(&f.ok::<cmds::CreateFlowGroup>(|i: &mut CreateFlowGroupIn| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(t);
        i.set_start_flow_index(range.0);
        i.set_end_flow_index(range.1);
        i.set_match_criteria_enable(enable.into());
        mask(i.match_criteria_mut());
    }))
    .group_id()
}

/// An entry forwarding to `dests` (dest type, id), counting into `counters`; no destination
/// and no counter means DROP.
fn entry(
    f: &mut Fn,
    t: u32,
    g: u32,
    index: u32,
    dests: &[(u8, u32)],
    counters: &[u32],
    value: impl FnOnce(&mut FteMatchParam),
) {
    let mut v = input::<cmds::SetFlowTableEntry>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(t);
        i.set_flow_index(index);
        let c = i.flow_context_mut();
        c.set_group_id(g);
        let mut act = if dests.is_empty() {
            action::DROP
        } else {
            action::FWD_DEST
        };
        if !counters.is_empty() {
            act |= action::COUNT;
        }
        c.set_action(act);
        c.set_destination_list_size(dests.len() as u32);
        c.set_flow_counter_list_size(counters.len() as u32);
        value(c.match_value_mut());
    });
    v.resize(
        SetFteIn::SIZE + (dests.len() + counters.len()) * DEST_STRIDE,
        0,
    );
    for (k, &(ty, id)) in dests.iter().enumerate() {
        let d = fte_destination_mut(&mut v, k).unwrap();
        d.set_destination_type(ty.into());
        d.set_destination_id(id);
    }
    for (k, &c) in counters.iter().enumerate() {
        fte_counter_mut(&mut v, dests.len() + k)
            .unwrap()
            .set_flow_counter_id(c);
    }
    f.run_ok(&v, 0x10);
}

fn set_dmac(m: &mut FteMatchParam, mac: [u8; 6]) {
    let o = m.outer_headers_mut();
    o.set_dmac_47_16(u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]));
    o.set_dmac_15_0(u32::from(u16::from_be_bytes([mac[4], mac[5]])));
}

/// The tables mlx5e builds, as ids.
struct Tables {
    vlan: u32,
    l2: u32,
    l2_promisc_group: u32,
    counter: u32,
}

/// VLAN table (untagged, VID 10) → L2 table (own MAC, broadcast) → TTC (IPv4 TCP/UDP, IPv6,
/// any; VXLAN by outer UDP port and VNI) → TIRs; the anchor last. Root: the VLAN table.
fn mlx5e_tables(f: &mut Fn, rx: &Rx) -> Tables {
    let anchor = table(f, 64, None);
    let ttc = table(f, 3, Some(anchor));
    let l2 = table(f, 2, Some(anchor));
    let vlan = table(f, 1, Some(anchor));
    let counter =
        view::<AllocFlowCounterOut>(&f.ok::<cmds::AllocFlowCounter>(|_| {})).flow_counter_id();
    // TTC: {ethertype, ip_protocol, udp_dport} + misc VNI for VXLAN, {ethertype, ip_protocol},
    // {ethertype}, {}.
    let outer_misc = match_criteria::OUTER_HEADERS | match_criteria::MISC_PARAMETERS;
    let g_vx = group(f, ttc, (0, 0), outer_misc, |m| {
        m.outer_headers_mut().set_ethertype(0xffff);
        m.outer_headers_mut().set_ip_protocol(0xff);
        m.outer_headers_mut().set_udp_dport(0xffff);
        m.misc_parameters_mut().set_vxlan_vni(0xff_ffff);
    });
    let g_l4 = group(f, ttc, (1, 4), match_criteria::OUTER_HEADERS, |m| {
        m.outer_headers_mut().set_ethertype(0xffff);
        m.outer_headers_mut().set_ip_protocol(0xff);
    });
    let g_l3 = group(f, ttc, (5, 6), match_criteria::OUTER_HEADERS, |m| {
        m.outer_headers_mut().set_ethertype(0xffff);
    });
    let g_any = group(f, ttc, (7, 7), 0, |_| {});
    entry(f, ttc, g_vx, 0, &[(dest_type::TIR, rx.vxlan)], &[], |m| {
        m.outer_headers_mut().set_ethertype(0x0800);
        m.outer_headers_mut().set_ip_protocol(17);
        m.outer_headers_mut().set_udp_dport(4789);
        m.misc_parameters_mut().set_vxlan_vni(42);
    });
    entry(
        f,
        ttc,
        g_l4,
        1,
        &[(dest_type::TIR, rx.tcp4)],
        &[counter],
        |m| {
            m.outer_headers_mut().set_ethertype(0x0800);
            m.outer_headers_mut().set_ip_protocol(6);
        },
    );
    entry(f, ttc, g_l4, 2, &[(dest_type::TIR, rx.udp4)], &[], |m| {
        m.outer_headers_mut().set_ethertype(0x0800);
        m.outer_headers_mut().set_ip_protocol(17);
    });
    // IPv6 ICMP is dropped by a rule (to see rule drops).
    entry(f, ttc, g_l4, 3, &[], &[], |m| {
        m.outer_headers_mut().set_ethertype(0x86dd);
        m.outer_headers_mut().set_ip_protocol(58);
    });
    entry(f, ttc, g_l3, 5, &[(dest_type::TIR, rx.any)], &[], |m| {
        m.outer_headers_mut().set_ethertype(0x86dd);
    });
    entry(f, ttc, g_any, 7, &[(dest_type::TIR, rx.any)], &[], |_| {});
    // L2: full destination MAC; the promiscuous group (no mask) stays empty until needed.
    let g_mac = group(f, l2, (0, 7), match_criteria::OUTER_HEADERS, |m| {
        set_dmac(m, [0xff; 6])
    });
    let l2_promisc_group = group(f, l2, (8, 8), 0, |_| {});
    entry(f, l2, g_mac, 0, &[(dest_type::FLOW_TABLE, ttc)], &[], |m| {
        set_dmac(m, OWN_MAC)
    });
    entry(f, l2, g_mac, 1, &[(dest_type::FLOW_TABLE, ttc)], &[], |m| {
        set_dmac(m, [0xff; 6])
    });
    // VLAN: untagged, and C-VLAN 10.
    let g_tag = group(f, vlan, (0, 0), match_criteria::OUTER_HEADERS, |m| {
        m.outer_headers_mut().set_cvlan_tag(1);
    });
    let g_vid = group(f, vlan, (1, 3), match_criteria::OUTER_HEADERS, |m| {
        m.outer_headers_mut().set_cvlan_tag(1);
        m.outer_headers_mut().set_first_vid(0xfff);
    });
    entry(
        f,
        vlan,
        g_tag,
        0,
        &[(dest_type::FLOW_TABLE, l2)],
        &[],
        |_| {},
    );
    entry(
        f,
        vlan,
        g_vid,
        1,
        &[(dest_type::FLOW_TABLE, l2)],
        &[],
        |m| {
            m.outer_headers_mut().set_cvlan_tag(1);
            m.outer_headers_mut().set_first_vid(10);
        },
    );
    Tables {
        vlan,
        l2,
        l2_promisc_group,
        counter,
    }
}

fn ipv4(proto: u8, l4: Option<L4Fields>) -> Headers {
    let mut ip = IpFields {
        version: 4,
        protocol: proto,
        ttl: 64,
        ihl: 5,
        ..Default::default()
    };
    ip.src[12..].copy_from_slice(&[10, 0, 0, 1]);
    ip.dst[12..].copy_from_slice(&[10, 0, 0, 2]);
    Headers {
        dmac: OWN_MAC,
        smac: [0x02, 0xc4, 0, 0, 0, 2],
        ethertype: 0x0800,
        ip: Some(ip),
        l4,
        ..Default::default()
    }
}

fn frame(outer: Headers) -> RxFrame {
    RxFrame {
        outer,
        ..Default::default()
    }
}

fn tcp() -> Option<L4Fields> {
    Some(L4Fields::Tcp {
        sport: 40000,
        dport: 5201,
        flags: 0x18,
    })
}

#[test]
fn steering_follows_the_tables_mlx5e_builds() {
    let mut f = Fn::new();
    let rx = rx_objects(&mut f);
    let no_root = f.fw.steer(&frame(ipv4(6, tcp())));
    assert_eq!(no_root.verdict, RxVerdict::Drop(DropReason::NoRoot));
    let t = mlx5e_tables(&mut f, &rx);
    f.ok::<cmds::SetFlowTableRoot>(|i| {
        i.set_table_type(table_type::NIC_RX.into());
        i.set_table_id(t.vlan);
    });

    // Own MAC, IPv4 TCP: VLAN (untagged) → L2 (own MAC) → TTC (TCP) → the TCP TIR, counted.
    let s = f.fw.steer(&frame(ipv4(6, tcp())));
    assert_eq!(
        (s.verdict, s.tirs.clone()),
        (RxVerdict::Deliver, vec![rx.tcp4]),
        "{s:?}"
    );
    assert_eq!(s.counters, vec![t.counter]);
    assert_eq!(s.path.len(), 3, "VLAN, L2, TTC: {:?}", s.path);
    // IPv4 UDP, ARP, broadcast, IPv6.
    let udp = Some(L4Fields::Udp {
        sport: 1,
        dport: 53,
    });
    assert_eq!(f.fw.steer(&frame(ipv4(17, udp))).tirs, vec![rx.udp4]);
    let arp = Headers {
        ethertype: 0x0806,
        ip: None,
        ..ipv4(0, None)
    };
    assert_eq!(
        f.fw.steer(&frame(arp)).tirs,
        vec![rx.any],
        "ARP to the catch-all"
    );
    let bcast = Headers {
        dmac: [0xff; 6],
        ..arp
    };
    assert_eq!(f.fw.steer(&frame(bcast)).tirs, vec![rx.any], "broadcast");
    let mut v6 = ipv4(6, tcp());
    v6.ethertype = 0x86dd;
    v6.ip.as_mut().unwrap().version = 6;
    assert_eq!(
        f.fw.steer(&frame(v6)).tirs,
        vec![rx.any],
        "IPv6 TCP to the L3 entry"
    );
    v6.ip.as_mut().unwrap().protocol = 58;
    v6.l4 = None;
    assert_eq!(
        f.fw.steer(&frame(v6)).verdict,
        RxVerdict::Drop(DropReason::Rule {
            table: f.fw.steer(&frame(v6)).path[2].0,
            index: 3
        }),
        "ICMPv6 dropped by its rule"
    );

    // Foreign unicast: the L2 table misses to the anchor, which misses (default): drop.
    let foreign = Headers {
        dmac: [0x02, 0xaa, 0, 0, 0, 9],
        ..ipv4(6, tcp())
    };
    let s = f.fw.steer(&frame(foreign));
    assert!(
        matches!(s.verdict, RxVerdict::Drop(DropReason::Miss { .. })),
        "foreign unicast dropped: {s:?}"
    );
    // VLAN 10 passes, VLAN 20 does not.
    let tagged = |vid| Headers {
        vlan: Some(VlanTag {
            vid,
            ..Default::default()
        }),
        ..ipv4(6, tcp())
    };
    assert_eq!(f.fw.steer(&frame(tagged(10))).tirs, vec![rx.tcp4], "VID 10");
    assert!(matches!(
        f.fw.steer(&frame(tagged(20))).verdict,
        RxVerdict::Drop(DropReason::Miss { .. })
    ));
    // VXLAN VNI 42 on UDP 4789 goes to its TIR; VNI 43 is plain UDP.
    let vx = |vni| RxFrame {
        outer: ipv4(
            17,
            Some(L4Fields::Udp {
                sport: 999,
                dport: 4789,
            }),
        ),
        tunnel: Some(Tunnel::Vxlan { vni }),
        inner: Some(ipv4(6, tcp())),
    };
    assert_eq!(f.fw.steer(&vx(42)).tirs, vec![rx.vxlan], "VXLAN VNI 42");
    assert_eq!(f.fw.steer(&vx(43)).tirs, vec![rx.udp4], "VXLAN VNI 43");

    // Promiscuous: an entry in the empty-mask group of the L2 table takes foreign unicast.
    let ttc = f.fw.steer(&frame(ipv4(6, tcp()))).path[2].0;
    entry(
        &mut f,
        t.l2,
        t.l2_promisc_group,
        8,
        &[(dest_type::FLOW_TABLE, ttc)],
        &[],
        |_| {},
    );
    assert_eq!(
        f.fw.steer(&frame(foreign)).tirs,
        vec![rx.tcp4],
        "promiscuous"
    );

    // The decision is pure; counting is the caller's.
    f.fw.count_flow(&[t.counter], 1514);
    let out = f.run_ok(
        &input::<cmds::QueryFlowCounter>(|i| i.set_flow_counter_id(t.counter)),
        0x20,
    );
    let c = cx4_hw::flow::QueryFlowCounterOut::flow_statistics(&out, 0).unwrap();
    assert_eq!((c.packets(), c.octets()), (1, 1514));

    // TIR → RQ: the RQT entry the hash selects.
    assert_eq!(f.fw.rqt_pick(rx.tcp4, 0), Some(rx.rqs[0]));
    assert_eq!(f.fw.rqt_pick(rx.tcp4, 7), Some(rx.rqs[1]));
    assert_eq!(f.fw.rqt_pick(0x99_9999, 0), None);
    let tir = f.fw.tir(rx.udp4).unwrap();
    assert!(tir.hash.outer.udp && tir.hash.outer.fields == 0xf);
    assert_eq!(f.fw.rq(rx.rqs[0]).unwrap().wq.log_size, 6);
}

#[test]
fn lkeys_translate_through_pa_and_mtt_mkeys_with_checks() {
    let mut f = Fn::new();
    let pd = view::<AllocPdOut>(&f.ok::<cmds::AllocPd>(|_| {})).pd();
    let other_pd = view::<AllocPdOut>(&f.ok::<cmds::AllocPd>(|_| {})).pd();
    let pa = view::<CreateMkeyOut>(&f.ok::<cmds::CreateMkey>(|i| {
        let c = i.memory_key_mkey_entry_mut();
        c.set_access_mode_1_0(access_mode::PA.into());
        c.set_lr(1);
        c.set_lw(1);
        c.set_pd(pd);
        c.set_length64(1);
        c.set_qpn(0xff_ffff);
        c.set_mkey_7_0(0x11);
    }))
    .mkey_index();
    let pa_key = mkey_from_index(pa, 0x11);
    let pages = [f.page(), f.page()];
    let mut v = input::<cmds::CreateMkey>(|i| {
        let c = i.memory_key_mkey_entry_mut();
        c.set_access_mode_1_0(access_mode::MTT.into());
        c.set_lr(1);
        c.set_pd(pd);
        c.set_qpn(0xff_ffff);
        c.set_start_addr(0x7000_0800);
        c.set_len(0x1800);
        c.set_log_page_size(12);
        c.set_translations_octword_size(1);
    });
    v.resize(CreateMkeyIn::SIZE + 16, 0);
    // Virtual pages in reverse guest order, to see the translation.
    CreateMkeyIn::set_mtt(&mut v, 0, pages[1]).unwrap();
    CreateMkeyIn::set_mtt(&mut v, 1, pages[0]).unwrap();
    let mtt = view::<CreateMkeyOut>(&f.run_ok(&v, CreateMkeyOut::SIZE)).mkey_index();
    let mtt_key = mkey_from_index(mtt, 0);
    let x =
        |f: &Fn, key, pd, addr, len, write| f.fw.translate(&f.bus.mem, key, pd, addr, len, write);

    assert_eq!(
        x(&f, pa_key, pd, RAM + 0x10, 64, false),
        Ok(vec![(RAM + 0x10, 64)])
    );
    assert_eq!(
        x(&f, pa_key, pd, RAM + 0x10, 64, true),
        Ok(vec![(RAM + 0x10, 64)])
    );
    assert_eq!(
        x(&f, pa_key, other_pd, RAM, 64, false),
        Err(XlateError::Protection)
    );
    assert_eq!(
        x(&f, pa_key ^ 1, pd, RAM, 64, false),
        Err(XlateError::BadKey),
        "stale variant"
    );
    assert_eq!(
        x(&f, pa_key, pd, 0x7f00_0000_0000, 64, false),
        Err(XlateError::NotMapped)
    );
    assert_eq!(x(&f, 0x100, pd, RAM, 64, false), Err(XlateError::Terminate));
    assert_eq!(x(&f, RESERVED_LKEY, 0, RAM, 64, true), Ok(vec![(RAM, 64)]));
    // MTT: 0x7000_0f00 is page 0 (guest page 1) + 0xf00; 0x200 bytes cross into page 1.
    assert_eq!(
        x(&f, mtt_key, pd, 0x7000_0f00, 0x200, false),
        Ok(vec![(pages[1] + 0xf00, 0x100), (pages[0], 0x100)])
    );
    assert_eq!(
        x(&f, mtt_key, pd, 0x7000_0f00, 0x200, true),
        Err(XlateError::Protection),
        "no lw"
    );
    assert_eq!(
        x(&f, mtt_key, pd, 0x7000_07ff, 2, false),
        Err(XlateError::Protection),
        "before start"
    );
    assert_eq!(
        x(&f, mtt_key, pd, 0x7000_1fff, 2, false),
        Err(XlateError::Protection),
        "past end"
    );
    f.ok::<cmds::DestroyMkey>(|i| i.set_mkey_index(mtt));
    assert_eq!(
        x(&f, mtt_key, pd, 0x7000_0f00, 1, false),
        Err(XlateError::BadKey),
        "destroyed"
    );
}
