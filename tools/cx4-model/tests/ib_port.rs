//! The InfiniBand port (`--link ib`) through the command interface, as mlx5_core and mlx5_ib
//! read it: the capabilities, QUERY_HCA_VPORT_CONTEXT/GID, MAD_IFC to the firmware's SMA with
//! the PORT_CHANGE events an SM's Sets raise, PCAP, and QP0.

mod common;

use common::{input, reg_input, view, Driver};
use cx4_hw::{
    caps::{cap_type, HcaCapUnion},
    command as cmds,
    eq::{event_type, port_change_subtype as sub, EventMask},
    roce::MadIfcOut,
    status,
    vport::{QueryHcaVportContextOut, QueryHcaVportGidOut},
};

const IB: &[&str] = &["--link", "ib"];
/// The node GUID of `--seed 1` (vport.rs `with_seed`).
const GUID: u64 = 0x02c4_00ff_fe00_0001;

/// A MAD_IFC of an SMP (LID routed) `method` of `attr` with `data`; returns the reply MAD.
fn smp(d: &mut Driver, method: u8, attr: u16, attr_mod: u32, data: &[u8]) -> Vec<u8> {
    let out = d.ok::<cmds::MadIfc>(|i| {
        i.set_port(1);
        i.set_op_mod(1); // ignore M_Key, as mlx5_ib's local queries
        let m = i.mad_mut();
        m[..4].copy_from_slice(&[1, 0x01, 1, method]);
        m[16..18].copy_from_slice(&attr.to_be_bytes());
        m[20..24].copy_from_slice(&attr_mod.to_be_bytes());
        m[64..64 + data.len()].copy_from_slice(data);
    });
    view::<MadIfcOut>(&out).response_mad_packet().to_vec()
}

fn context(d: &mut Driver) -> QueryHcaVportContextOut {
    view::<QueryHcaVportContextOut>(&d.ok::<cmds::QueryHcaVportContext>(|_| {}))
}

#[test]
fn an_ib_port_reports_port_type_ib_and_its_vport_context() {
    let mut d = Driver::up(IB);
    let general = d.query_cap(cap_type::GENERAL, true);
    let g = view::<HcaCapUnion>(&general);
    assert_eq!(g.cmd_hca_cap().port_type(), 0, "port_type IB");
    let c = context(&mut d);
    let v = c.hca_vport_context();
    assert_eq!((v.has_smi(), v.grh_required()), (1, 0));
    assert_eq!(
        (v.port_state(), v.vport_state(), v.port_physical_state()),
        (2, 2, 5)
    );
    assert_eq!((v.lid(), v.sm_lid()), (0, 0));
    assert_eq!(
        (v.node_guid(), v.port_guid(), v.system_image_guid()),
        (GUID, GUID, GUID)
    );
    let all = input::<cmds::QueryHcaVportGid>(|i| i.set_gid_index(0xffff));
    let gids = d.run_ok(&all, 0x10 + 8 * 16);
    assert_eq!(view::<QueryHcaVportGidOut>(&gids).gids_num(), 8);
    let g0 = &gids[0x10..0x20];
    assert_eq!(g0[..8], 0xfe80_0000_0000_0000u64.to_be_bytes());
    assert_eq!(g0[8..], GUID.to_be_bytes());
    let bad = input::<cmds::QueryHcaVportGid>(|i| i.set_gid_index(8));
    assert_eq!(d.run(&bad, 0x30)[0], status::BAD_PARAM);
}

#[test]
fn an_sm_brings_the_port_active_through_mad_ifc_with_events() {
    let mut d = Driver::up(IB);
    let eqn = d.create_eq(3, 0, EventMask::PORT_CHANGE.bits());
    let events = |d: &mut Driver| -> Vec<u32> {
        std::iter::from_fn(|| d.eq_next(eqn))
            .inspect(|e| assert_eq!(e.event_type(), u32::from(event_type::PORT_CHANGE)))
            .map(|e| e.sub_type())
            .collect()
    };
    let r = smp(&mut d, 1, 0x0015, 1, &[]);
    assert_eq!((r[3], &r[4..6]), (0x81, &[0u8, 0][..]), "GetResp, status 0");
    let mut pi = r[64..128].to_vec();
    pi[32] &= 0xf0;
    pi[33] &= 0x0f;
    pi[16..18].copy_from_slice(&3u16.to_be_bytes());
    pi[18..20].copy_from_slice(&3u16.to_be_bytes());
    smp(&mut d, 2, 0x0015, 1, &pi);
    assert_eq!(events(&mut d), vec![u32::from(sub::LID)]);
    for (state, ev) in [(3u8, vec![]), (4, vec![u32::from(sub::ACTIVE)])] {
        pi[32] = (pi[32] & 0xf0) | state;
        let r = smp(&mut d, 2, 0x0015, 1, &pi);
        assert_eq!((r[5], r[64 + 32] & 0xf), (0, state));
        assert_eq!(events(&mut d), ev, "state {state}");
    }
    let v = context(&mut d);
    let v = v.hca_vport_context();
    assert_eq!((v.lid(), v.sm_lid(), v.port_state()), (3, 3, 4));
    // The link goes: Down, with an event; it comes back in Init.
    d.model.control_ok("link state=down");
    assert_eq!(events(&mut d), vec![u32::from(sub::DOWN)]);
    assert_eq!(context(&mut d).hca_vport_context().port_state(), 1);
    d.model.control_ok("link state=up");
    assert_eq!(context(&mut d).hca_vport_context().port_state(), 2);
    // A Set the SMA refuses: status 0x001C in the MAD, the command itself succeeds.
    pi[32] = (pi[32] & 0xf0) | 4;
    let r = smp(&mut d, 2, 0x0015, 1, &pi);
    assert_eq!(u16::from_be_bytes([r[4], r[5]]), 0x001c, "Active from Init");
}

#[test]
fn pcap_sets_the_capability_bits_software_owns() {
    let mut d = Driver::up(IB);
    let mut data = [0u8; 16];
    data[1] = 1;
    // IsSM and IsCM as ib_core's modify_port asks, and a bit the port does not let software
    // set (IsTrapSupported, bit 3).
    data[4..8].copy_from_slice(&((1u32 << 1) | (1 << 16) | (1 << 3)).to_be_bytes());
    d.run_ok(&reg_input(0x5001, true, &data), 0x20);
    let r = smp(&mut d, 1, 0x0015, 1, &[]);
    let caps = u32::from_be_bytes(r[64 + 20..64 + 24].try_into().unwrap());
    assert_eq!(
        caps & ((1 << 1) | (1 << 16) | (1 << 3)),
        (1 << 1) | (1 << 16)
    );
    // On an Ethernet port PCAP is no register.
    let mut e = Driver::up(&["--roce"]);
    assert_eq!(
        e.run(&reg_input(0x5001, true, &data), 0x20)[0],
        status::BAD_PARAM
    );
}
