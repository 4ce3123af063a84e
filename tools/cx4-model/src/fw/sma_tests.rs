//! The subnet-management agent, attribute by attribute, as opensm and smpquery use it: Get and
//! Set, the state machine of PortInfo, the events a Set raises, and the MAD status of what a
//! real SMA refuses.

use cx4_hw::eq::port_change_subtype as sub;

use super::ib_port::{IbPort, PortState, DEFAULT_PKEY, PHYS_LINK_UP, PHYS_POLLING};
use super::sma::{
    attr, process, NodeIdentity, CLASS_SUBN_DIRECTED_ROUTE, CLASS_SUBN_LID_ROUTED, MAD_LEN,
    METHOD_GET, METHOD_GET_RESP, METHOD_SET, SMP_DATA, STATUS_BAD_METHOD, STATUS_BAD_VALUE,
    STATUS_BAD_VERSION, STATUS_UNSUPPORTED_ATTR,
};

const GUID: u64 = 0x02c4_00ff_fe00_0007;

fn node_desc() -> [u8; 64] {
    let mut d = [0u8; 64];
    d[..9].copy_from_slice(b"vm0 mlx5_");
    d
}

/// An SMP of `class`, `method`, `attr_id`, `attr_mod` with `data`, TID 0x1234.
fn smp(class: u8, method: u8, attr_id: u16, attr_mod: u32, data: &[u8]) -> [u8; MAD_LEN] {
    let mut m = [0u8; MAD_LEN];
    m[0] = 1;
    m[1] = class;
    m[2] = 1;
    m[3] = method;
    m[8..16].copy_from_slice(&0x1234u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr_id.to_be_bytes());
    m[20..24].copy_from_slice(&attr_mod.to_be_bytes());
    m[SMP_DATA..SMP_DATA + data.len()].copy_from_slice(data);
    m
}

struct Sma {
    port: IbPort,
    desc: [u8; 64],
}

struct Reply {
    mad: [u8; MAD_LEN],
    events: Vec<u8>,
}

impl Reply {
    fn status(&self) -> u16 {
        u16::from_be_bytes([self.mad[4], self.mad[5]])
    }
    fn data(&self) -> &[u8] {
        &self.mad[SMP_DATA..SMP_DATA + 64]
    }
    fn u16_at(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.data()[at], self.data()[at + 1]])
    }
}

impl Sma {
    fn new() -> Sma {
        Sma {
            port: IbPort::new(),
            desc: node_desc(),
        }
    }

    fn run(&mut self, m: &[u8; MAD_LEN]) -> Reply {
        let id = NodeIdentity {
            guid: GUID,
            device_id: 0x1013,
            revision: 0x000c_001c,
            node_desc: &self.desc,
        };
        let (mad, events) = process(&mut self.port, &id, 1, m);
        // Every answer is a GetResp of the same transaction and attribute.
        assert_eq!(mad[3], METHOD_GET_RESP);
        assert_eq!(mad[8..24], m[8..24], "TID and attribute echoed");
        Reply { mad, events }
    }

    fn get(&mut self, attr_id: u16, attr_mod: u32) -> Reply {
        self.run(&smp(
            CLASS_SUBN_DIRECTED_ROUTE,
            METHOD_GET,
            attr_id,
            attr_mod,
            &[],
        ))
    }

    fn set(&mut self, attr_id: u16, attr_mod: u32, data: &[u8]) -> Reply {
        self.run(&smp(
            CLASS_SUBN_LID_ROUTED,
            METHOD_SET,
            attr_id,
            attr_mod,
            data,
        ))
    }

    /// The current PortInfo.
    fn port_info(&mut self) -> [u8; 64] {
        let r = self.get(attr::PORT_INFO, 1);
        assert_eq!(r.status(), 0);
        r.data().try_into().unwrap()
    }

    /// The current PortInfo to edit for a Set, as opensm starts one: PortState and
    /// PortPhysicalState NoChange (a Get's LinkUp is no value to set).
    fn port_info_to_set(&mut self) -> [u8; 64] {
        let mut d = self.port_info();
        d[32] &= 0xf0;
        d[33] &= 0x0f;
        d
    }
}

#[test]
fn node_info_and_description_describe_a_one_port_mellanox_ca() {
    let mut s = Sma::new();
    let r = s.get(attr::NODE_INFO, 0);
    assert_eq!(r.status(), 0);
    let d = r.data();
    assert_eq!(d[..4], [1, 1, 1, 1], "versions, CA, one port");
    for at in [4, 12, 20] {
        assert_eq!(d[at..at + 8], GUID.to_be_bytes(), "GUID at {at}");
    }
    assert_eq!(r.u16_at(28), 128, "PartitionCap");
    assert_eq!(r.u16_at(30), 0x1013, "DeviceID");
    assert_eq!(d[32..36], 0x000c_001cu32.to_be_bytes(), "Revision");
    assert_eq!(d[36..40], [1, 0x00, 0x02, 0xc9], "LocalPortNum, VendorID");
    let r = s.get(attr::NODE_DESC, 0);
    assert_eq!((r.status(), &r.data()[..9]), (0, &b"vm0 mlx5_"[..]));
    // Both are read-only.
    for a in [attr::NODE_INFO, attr::NODE_DESC] {
        assert_eq!(s.set(a, 0, &[0; 64]).status(), STATUS_UNSUPPORTED_ATTR);
    }
}

#[test]
fn port_info_at_power_on_is_an_init_port_without_lid() {
    let mut s = Sma::new();
    let d = s.port_info();
    assert_eq!(u16::from_be_bytes([d[16], d[17]]), 0, "LID");
    assert_eq!(
        d[8..16],
        0xfe80_0000_0000_0000u64.to_be_bytes(),
        "GidPrefix"
    );
    assert_eq!(d[32] & 0xf, PortState::Init as u8);
    assert_eq!(d[33] >> 4, PHYS_LINK_UP);
    let caps = u32::from_be_bytes([d[20], d[21], d[22], d[23]]);
    assert_eq!(
        caps,
        (1 << 11) | (1 << 14) | (1 << 25),
        "SysImageGUID, ExtSpeeds, ClientRereg"
    );
    assert_eq!((d[28], d[31], d[62] >> 4), (1, 2, 2), "port 1, 4X, EDR");
    // NeighborMTU = MTUCap (4096) and OpVLs = VLCap: opensm has no reason to bounce the link.
    assert_eq!((d[36] >> 4, d[41] & 0xf), (5, 5));
    assert_eq!((d[43] >> 4, d[37] >> 4), (4, 4));
    assert_eq!(d[50], 8, "GUIDCap");
    // The SM's SMSupportsExtendedSpeeds bit is no port number.
    assert_eq!(s.get(attr::PORT_INFO, 0x8000_0001).status(), 0);
    assert_eq!(s.get(attr::PORT_INFO, 0).status(), 0, "0: the arrival port");
    assert_eq!(s.get(attr::PORT_INFO, 2).status(), STATUS_BAD_VALUE);
}

#[test]
fn set_port_info_assigns_lids_and_walks_init_armed_active() {
    let mut s = Sma::new();
    let mut d = s.port_info_to_set();
    d[16..18].copy_from_slice(&5u16.to_be_bytes());
    d[18..20].copy_from_slice(&1u16.to_be_bytes());
    d[34] = 0; // LMC 0
    d[36] = (5 << 4) | 3; // NeighborMTU 4096, SMSL 3
    d[51] = 0x80 | 18; // ClientReregister, SubnetTimeOut 18
    let r = s.set(attr::PORT_INFO, 1, &d);
    assert_eq!(r.status(), 0);
    assert_eq!(r.events, vec![sub::LID, sub::CLIENT_REREG]);
    assert_eq!((r.u16_at(16), r.u16_at(18)), (5, 1));
    assert_eq!(r.data()[51], 18, "ClientReregister reads 0");
    assert_eq!(r.data()[36] & 0xf, 3);
    // Active straight from Init is refused, and nothing of that Set is applied.
    let mut d = s.port_info_to_set();
    d[32] = (d[32] & 0xf0) | 4;
    d[16..18].copy_from_slice(&9u16.to_be_bytes());
    let r = s.set(attr::PORT_INFO, 1, &d);
    assert_eq!(r.status(), STATUS_BAD_VALUE);
    assert_eq!(
        (r.u16_at(16), r.data()[32] & 0xf),
        (5, 2),
        "LID and state kept"
    );
    // NoChange, Armed, Active.
    for (state, want, events) in [
        (0u8, 2u8, vec![]),
        (3, 3, vec![]),
        (4, 4, vec![sub::ACTIVE]),
    ] {
        let mut d = s.port_info_to_set();
        d[32] = (d[32] & 0xf0) | state;
        let r = s.set(attr::PORT_INFO, 1, &d);
        assert_eq!((r.status(), r.data()[32] & 0xf), (0, want), "state {state}");
        assert_eq!(r.events, events, "state {state}");
    }
    assert!(s.port.active());
    // Same LID again: no event; a new SM LID is told as a LID change.
    let mut d = s.port_info_to_set();
    assert!(s.set(attr::PORT_INFO, 1, &d).events.is_empty());
    d[18..20].copy_from_slice(&7u16.to_be_bytes());
    assert_eq!(s.set(attr::PORT_INFO, 1, &d).events, vec![sub::LID]);
}

#[test]
fn set_port_info_refuses_bad_values() {
    let mut s = Sma::new();
    let good = s.port_info_to_set();
    type Edit = fn(&mut [u8; 64]);
    let bad: [(&str, Edit); 6] = [
        ("multicast LID", |d| {
            d[16..18].copy_from_slice(&0xc001u16.to_be_bytes())
        }),
        ("NeighborMTU over MTUCap", |d| d[36] = 6 << 4),
        ("NeighborMTU 0", |d| d[36] = 0),
        ("OpVLs over VLCap", |d| d[43] = 5 << 4),
        ("PhysState LinkUp", |d| d[33] = 5 << 4),
        ("PortState 5", |d| d[32] = 5),
    ];
    for (what, f) in bad {
        let mut d = good;
        f(&mut d);
        let r = s.set(attr::PORT_INFO, 1, &d);
        assert_eq!(r.status(), STATUS_BAD_VALUE, "{what}");
        assert!(r.events.is_empty(), "{what}");
        assert_eq!(r.data()[..32], good[..32], "{what}: nothing applied");
        assert_eq!(r.data()[34..], good[34..], "{what}: nothing applied");
    }
}

#[test]
fn set_down_takes_an_active_port_down_and_the_link_retrains_to_init() {
    let mut s = Sma::new();
    for state in [3u8, 4] {
        let mut d = s.port_info_to_set();
        d[32] = (d[32] & 0xf0) | state;
        assert_eq!(s.set(attr::PORT_INFO, 1, &d).status(), 0);
    }
    let mut d = s.port_info_to_set();
    d[32] = (d[32] & 0xf0) | 1;
    let r = s.set(attr::PORT_INFO, 1, &d);
    assert_eq!(r.events, vec![sub::DOWN]);
    assert_eq!(
        (r.data()[32] & 0xf, r.data()[33] >> 4),
        (1, PHYS_POLLING),
        "the reply: Down, Polling"
    );
    let d = s.port_info();
    assert_eq!((d[32] & 0xf, d[33] >> 4), (2, PHYS_LINK_UP), "retrained");
    // Without a link the port stays Down.
    assert_eq!(s.port.set_link(false), None);
    let d = s.port_info();
    assert_eq!((d[32] & 0xf, d[33] >> 4), (1, PHYS_POLLING));
    s.port.set_link(true);
    assert_eq!(s.port_info()[32] & 0xf, 2);
}

#[test]
fn pkey_table_blocks_get_and_set() {
    let mut s = Sma::new();
    let r = s.get(attr::PKEY_TABLE, 0);
    assert_eq!((r.status(), r.u16_at(0), r.u16_at(2)), (0, DEFAULT_PKEY, 0));
    let mut block = [0u8; 64];
    block[0..2].copy_from_slice(&0x8001u16.to_be_bytes());
    block[62..64].copy_from_slice(&0x7fffu16.to_be_bytes());
    let r = s.set(attr::PKEY_TABLE, 3, &block);
    assert_eq!((r.status(), r.events.clone()), (0, vec![sub::PKEY]));
    assert_eq!((s.port.pkeys[96], s.port.pkeys[127]), (0x8001, 0x7fff));
    assert_eq!(s.get(attr::PKEY_TABLE, 3).data(), &block[..]);
    assert!(
        s.set(attr::PKEY_TABLE, 3, &block).events.is_empty(),
        "unchanged"
    );
    assert_eq!(s.get(attr::PKEY_TABLE, 4).status(), STATUS_BAD_VALUE);
    assert_eq!(s.get(attr::PKEY_TABLE, 1 << 16).status(), STATUS_BAD_VALUE);
}

#[test]
fn guid_info_holds_the_port_guid_and_writable_aliases() {
    let mut s = Sma::new();
    let r = s.get(attr::GUID_INFO, 0);
    assert_eq!((r.status(), &r.data()[..8]), (0, &GUID.to_be_bytes()[..]));
    assert!(r.data()[8..].iter().all(|&b| b == 0));
    let mut d = [0u8; 64];
    d[..8].copy_from_slice(&1u64.to_be_bytes()); // entry 0: read-only
    d[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    let r = s.set(attr::GUID_INFO, 0, &d);
    assert_eq!((r.status(), r.events.clone()), (0, vec![sub::GUID]));
    assert_eq!(r.data()[..8], GUID.to_be_bytes(), "the port GUID stays");
    assert_eq!(r.data()[8..16], d[8..16]);
    assert_eq!(s.port.gid(GUID, 1)[8..], d[8..16]);
    assert_eq!(s.get(attr::GUID_INFO, 1).status(), STATUS_BAD_VALUE);
}

#[test]
fn sl_to_vl_and_vl_arbitration_tables() {
    let mut s = Sma::new();
    let r = s.get(attr::SL_TO_VL_TABLE, 0);
    assert_eq!(
        r.data()[..8],
        [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67]
    );
    let map = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77];
    assert_eq!(s.set(attr::SL_TO_VL_TABLE, 0, &map).status(), 0);
    assert_eq!(s.get(attr::SL_TO_VL_TABLE, 0).data()[..8], map);
    // VL15 is no data VL, VL8 above VLCap.
    for bad in [[0xf0u8; 8], [0x80; 8]] {
        assert_eq!(
            s.set(attr::SL_TO_VL_TABLE, 0, &bad).status(),
            STATUS_BAD_VALUE
        );
    }
    assert_eq!(s.get(attr::SL_TO_VL_TABLE, 1).status(), STATUS_BAD_VALUE);
    let mut arb = [0u8; 64];
    arb[0] = 0;
    arb[1] = 0x40;
    arb[2] = 1;
    arb[3] = 0x20;
    assert_eq!(s.set(attr::VL_ARB_TABLE, (3 << 16) | 1, &arb).status(), 0);
    assert_eq!(s.get(attr::VL_ARB_TABLE, 3 << 16).data(), &arb[..]);
    assert!(s
        .get(attr::VL_ARB_TABLE, 1 << 16)
        .data()
        .iter()
        .all(|&b| b == 0));
    for bad in [0, 5 << 16, (1 << 16) | 2] {
        assert_eq!(
            s.get(attr::VL_ARB_TABLE, bad).status(),
            STATUS_BAD_VALUE,
            "{bad:#x}"
        );
    }
}

#[test]
fn what_a_ca_sma_refuses_gets_the_right_mad_status() {
    let mut s = Sma::new();
    // SMInfo is an SM's; SwitchInfo a switch's; ExtendedPortInfo is not modelled.
    for a in [
        attr::SM_INFO,
        attr::SWITCH_INFO,
        attr::MLNX_EXT_PORT_INFO,
        0x7777,
    ] {
        assert_eq!(s.get(a, 0).status(), STATUS_UNSUPPORTED_ATTR, "{a:#x}");
    }
    let mut m = smp(CLASS_SUBN_LID_ROUTED, 0x05, attr::PORT_INFO, 1, &[]);
    assert_eq!(s.run(&m).status(), STATUS_BAD_METHOD, "Trap");
    m[3] = METHOD_GET;
    m[0] = 2;
    assert_eq!(s.run(&m).status(), STATUS_BAD_VERSION, "base version");
    m[0] = 1;
    m[2] = 2;
    assert_eq!(s.run(&m).status(), STATUS_BAD_VERSION, "class version");
    // PerfMgt is not the SMA's (no counters through MAD_IFC).
    let pma = smp(0x04, METHOD_GET, 0x12, 0, &[]);
    assert_eq!(s.run(&pma).status(), STATUS_UNSUPPORTED_ATTR);
    // A directed-route reply keeps the D bit it came with.
    let mut dr = smp(CLASS_SUBN_DIRECTED_ROUTE, METHOD_GET, attr::SM_INFO, 0, &[]);
    dr[4] = 0x80;
    assert_eq!(s.run(&dr).status(), 0x8000 | STATUS_UNSUPPORTED_ATTR);
}
