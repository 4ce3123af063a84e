//! The firmware's subnet-management agent (SMA) of an InfiniBand port (IBA 14.2), answering
//! the subnet-management packets (SMPs) that MAD_IFC hands it: mlx5_ib's own queries (its MAD
//! access method, `ib/mad.c`) and the SMPs ib_mad takes off QP0 for the port (`process_mad`).
//!
//! The agent answers class 0x01 (LID routed) and 0x81 (directed route) Get and Set of
//! NodeDescription, NodeInfo, GUIDInfo, PortInfo, P_KeyTable, SLtoVLMappingTable and
//! VLArbitrationTable, the attributes opensm and infiniband-diags' smpquery ask a CA for. The
//! reply is the request with method GetResp (0x81), the attribute data and the MAD status a
//! real SMA gives (IBA 13.4.7.1): 0x0004 for a base or class version it does not speak, 0x0008
//! for a method it does not take, 0x000C for an attribute it does not have (SMInfo is left to
//! an SM; the Mellanox ExtendedPortInfo 0xFF90 is not modelled, which opensm and mlx5_ib
//! tolerate), a Set of a read-only attribute, 0x001C for a bad attribute modifier or value
//! (then nothing of the Set is applied). Other management classes (PerfMgt, vendor classes)
//! get 0x000C too: the model advertises no `vport_counters`, so nothing reads counters there.
//!
//! A Set of PortInfo moves the logical port state (Down → Init by the link, Init → Armed →
//! Active by the SM, Down from any state), sets the LID, LMC, SM LID and SL and the other
//! writable components; the changes the driver must hear of are returned as PORT_CHANGE
//! sub-types ([`SmaEvents`]), which the caller posts once the reply is written.
//!
//! M_Key checking is not modelled: the port's M_Key is kept and reported, and every SMP is
//! taken as if the key matched (opensm's default M_Key is 0, which disables the check).

use cx4_hw::eq::port_change_subtype as sub;

use super::ib_port::{IbPort, PortState, GUID_CAP, PKEY_BLOCKS};

/// MAD status: bad base or class version.
pub const STATUS_BAD_VERSION: u16 = 0x0004;
/// MAD status: method not supported.
pub const STATUS_BAD_METHOD: u16 = 0x0008;
/// MAD status: method/attribute combination not supported.
pub const STATUS_UNSUPPORTED_ATTR: u16 = 0x000c;
/// MAD status: invalid attribute value or modifier.
pub const STATUS_BAD_VALUE: u16 = 0x001c;

/// Management class: subnet management, LID routed.
pub const CLASS_SUBN_LID_ROUTED: u8 = 0x01;
/// Management class: subnet management, directed route.
pub const CLASS_SUBN_DIRECTED_ROUTE: u8 = 0x81;

/// Method Get.
pub const METHOD_GET: u8 = 0x01;
/// Method Set.
pub const METHOD_SET: u8 = 0x02;
/// Method GetResp.
pub const METHOD_GET_RESP: u8 = 0x81;

/// SMP attributes (IBA 14.2.5, `include/rdma/ib_smi.h`).
pub mod attr {
    /// NodeDescription.
    pub const NODE_DESC: u16 = 0x0010;
    /// NodeInfo.
    pub const NODE_INFO: u16 = 0x0011;
    /// SwitchInfo (a switch's; not a CA's).
    pub const SWITCH_INFO: u16 = 0x0012;
    /// GUIDInfo.
    pub const GUID_INFO: u16 = 0x0014;
    /// PortInfo.
    pub const PORT_INFO: u16 = 0x0015;
    /// P_KeyTable.
    pub const PKEY_TABLE: u16 = 0x0016;
    /// SLtoVLMappingTable.
    pub const SL_TO_VL_TABLE: u16 = 0x0017;
    /// VLArbitrationTable.
    pub const VL_ARB_TABLE: u16 = 0x0018;
    /// SMInfo (answered by an SM, not the SMA).
    pub const SM_INFO: u16 = 0x0020;
    /// Mellanox ExtendedPortInfo.
    pub const MLNX_EXT_PORT_INFO: u16 = 0xff90;
}

/// Offset of the attribute data in an SMP (both routings).
pub const SMP_DATA: usize = 64;
/// Bytes of SMP attribute data.
pub const SMP_DATA_LEN: usize = 64;
/// Bytes of a MAD.
pub const MAD_LEN: usize = 256;

/// A Set carried a value the SMA refuses (MAD status 0x001C; nothing of it applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadValue;

/// PORT_CHANGE sub-types a MAD caused, in the order they are to be posted.
pub type SmaEvents = Vec<u8>;

/// The identity the SMA reports besides the port: GUIDs, device, node description.
#[derive(Clone, Copy, Debug)]
pub struct NodeIdentity<'a> {
    /// Node GUID (also the system image GUID and port GUID: one port).
    pub guid: u64,
    /// PCI device id (0x1013).
    pub device_id: u16,
    /// The firmware version as NodeInfo's Revision.
    pub revision: u32,
    /// NodeDescription (the NODE_DESC register).
    pub node_desc: &'a [u8; 64],
}

/// The IEEE OUI of Mellanox, NodeInfo's VendorID.
pub const VENDOR_ID: u32 = 0x0002c9;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(a)
}

/// Answers `mad` (a full 256-byte MAD) for port `port_num` of the node `id`: returns the reply
/// and the PORT_CHANGE sub-types the MAD caused.
pub fn process(
    port: &mut IbPort,
    id: &NodeIdentity<'_>,
    port_num: u8,
    mad: &[u8; MAD_LEN],
) -> ([u8; MAD_LEN], SmaEvents) {
    let mut r = *mad;
    let mut events = SmaEvents::new();
    port.settle();
    let status = answer(port, id, port_num, mad, &mut r, &mut events);
    r[3] = METHOD_GET_RESP;
    // The directed-route D bit (status bit 15) stays as it came; mlx5_ib sets it on DR
    // replies itself (`mlx5_ib_process_mad`).
    let d = be16(mad, 4) & 0x8000;
    let st = if mad[1] == CLASS_SUBN_DIRECTED_ROUTE {
        d | status
    } else {
        status
    };
    r[4..6].copy_from_slice(&st.to_be_bytes());
    (r, events)
}

/// The status of `mad`'s answer written into `r`'s data.
fn answer(
    port: &mut IbPort,
    id: &NodeIdentity<'_>,
    port_num: u8,
    mad: &[u8; MAD_LEN],
    r: &mut [u8; MAD_LEN],
    events: &mut SmaEvents,
) -> u16 {
    if mad[0] != 1 {
        return STATUS_BAD_VERSION;
    }
    if !matches!(mad[1], CLASS_SUBN_LID_ROUTED | CLASS_SUBN_DIRECTED_ROUTE) {
        return STATUS_UNSUPPORTED_ATTR;
    }
    if mad[2] != 1 {
        return STATUS_BAD_VERSION;
    }
    let method = mad[3];
    if !matches!(method, METHOD_GET | METHOD_SET) {
        return STATUS_BAD_METHOD;
    }
    let set = method == METHOD_SET;
    let attr_id = be16(mad, 16);
    let attr_mod = be32(mad, 20);
    let mut data = [0u8; SMP_DATA_LEN];
    data.copy_from_slice(&mad[SMP_DATA..SMP_DATA + SMP_DATA_LEN]);
    let out: &mut [u8; SMP_DATA_LEN] = (&mut r[SMP_DATA..SMP_DATA + SMP_DATA_LEN])
        .try_into()
        .expect("64 bytes");
    match attr_id {
        attr::NODE_DESC if !set => {
            out.copy_from_slice(id.node_desc);
            0
        }
        attr::NODE_INFO if !set => {
            node_info(id, port_num, out);
            0
        }
        attr::GUID_INFO => {
            // 8 GUIDs per block; the port has GUID_CAP of them (one block).
            if attr_mod != 0 {
                return STATUS_BAD_VALUE;
            }
            if set {
                // Entry 0 is the port GUID, read-only; the others are alias GUIDs.
                for i in 1..GUID_CAP {
                    let g = be64(&data, i * 8);
                    if port.alias_guids[i] != g {
                        port.alias_guids[i] = g;
                        push(events, sub::GUID);
                    }
                }
            }
            for i in 0..GUID_CAP {
                let g = if i == 0 { id.guid } else { port.alias_guids[i] };
                out[i * 8..i * 8 + 8].copy_from_slice(&g.to_be_bytes());
            }
            0
        }
        attr::PORT_INFO => {
            // A CA takes 0 (the arrival port) or its own port number; bit 31 is the SM's
            // SMSupportsExtendedSpeeds flag, not part of the port number.
            let p = attr_mod & 0x7fff_ffff;
            if p != 0 && p != u32::from(port_num) {
                return STATUS_BAD_VALUE;
            }
            if set {
                match port.set_port_info(&data) {
                    Ok(ev) => events.extend(ev),
                    Err(BadValue) => {
                        port.port_info(id.guid, port_num, out);
                        return STATUS_BAD_VALUE;
                    }
                }
            }
            port.port_info(id.guid, port_num, out);
            0
        }
        attr::PKEY_TABLE => {
            // A CA's modifier is the block number (bits 15:0).
            let block = (attr_mod & 0xffff) as usize;
            if block >= PKEY_BLOCKS || attr_mod >> 16 != 0 {
                return STATUS_BAD_VALUE;
            }
            let first = block * 32;
            if set {
                let mut changed = false;
                for i in 0..32 {
                    let k = be16(&data, i * 2);
                    changed |= port.pkeys[first + i] != k;
                    port.pkeys[first + i] = k;
                }
                if changed {
                    push(events, sub::PKEY);
                }
            }
            for i in 0..32 {
                out[i * 2..i * 2 + 2].copy_from_slice(&port.pkeys[first + i].to_be_bytes());
            }
            0
        }
        attr::SL_TO_VL_TABLE => {
            // A CA has one table: modifier 0.
            if attr_mod != 0 {
                return STATUS_BAD_VALUE;
            }
            if set {
                if data[..8]
                    .iter()
                    .any(|b| b >> 4 == 15 || b & 0xf == 15 || (b >> 4).max(b & 0xf) >= 8)
                {
                    return STATUS_BAD_VALUE;
                }
                port.sl2vl.copy_from_slice(&data[..8]);
            }
            out[..8].copy_from_slice(&port.sl2vl);
            0
        }
        attr::VL_ARB_TABLE => {
            // Modifier: block (1 low 0-31, 2 low 32-63, 3 high 0-31, 4 high 32-63) << 16 |
            // port (smpquery's `block << 16 | port`).
            let block = (attr_mod >> 16) as usize;
            let p = attr_mod & 0xffff;
            if !(1..=4).contains(&block) || (p != 0 && p != u32::from(port_num)) {
                return STATUS_BAD_VALUE;
            }
            let t = &mut port.vl_arb[block - 1];
            if set {
                t.copy_from_slice(&data);
            }
            out.copy_from_slice(t);
            0
        }
        attr::NODE_DESC | attr::NODE_INFO => STATUS_UNSUPPORTED_ATTR,
        _ => STATUS_UNSUPPORTED_ATTR,
    }
}

fn push(events: &mut SmaEvents, s: u8) {
    if !events.contains(&s) {
        events.push(s);
    }
}

/// NodeInfo (IBA 14.2.5.3) of the one-port CA.
fn node_info(id: &NodeIdentity<'_>, port_num: u8, out: &mut [u8; SMP_DATA_LEN]) {
    out[0] = 1; // BaseVersion
    out[1] = 1; // ClassVersion
    out[2] = 1; // NodeType: channel adapter
    out[3] = 1; // NumPorts
    out[4..12].copy_from_slice(&id.guid.to_be_bytes()); // SystemImageGUID
    out[12..20].copy_from_slice(&id.guid.to_be_bytes()); // NodeGUID
    out[20..28].copy_from_slice(&id.guid.to_be_bytes()); // PortGUID
    out[28..30].copy_from_slice(&((PKEY_BLOCKS * 32) as u16).to_be_bytes()); // PartitionCap
    out[30..32].copy_from_slice(&id.device_id.to_be_bytes());
    out[32..36].copy_from_slice(&id.revision.to_be_bytes());
    // LocalPortNum (8 bits), VendorID (24 bits).
    out[36..40].copy_from_slice(&((u32::from(port_num) << 24) | VENDOR_ID).to_be_bytes());
}

impl IbPort {
    /// The PortInfo attribute (IBA 14.2.5.6) as the SMA reports it.
    pub fn port_info(&self, guid: u64, port_num: u8, out: &mut [u8; SMP_DATA_LEN]) {
        let _ = guid;
        out.fill(0);
        out[0..8].copy_from_slice(&self.mkey.to_be_bytes());
        out[8..16].copy_from_slice(&self.gid_prefix.to_be_bytes());
        out[16..18].copy_from_slice(&self.lid.to_be_bytes());
        out[18..20].copy_from_slice(&self.sm_lid.to_be_bytes());
        out[20..24].copy_from_slice(&self.cap_mask().to_be_bytes());
        out[26..28].copy_from_slice(&self.mkey_lease.to_be_bytes());
        out[28] = port_num;
        out[29] = self.width_enabled;
        out[30] = IbPort::WIDTH_SUPPORTED;
        out[31] = IbPort::WIDTH_ACTIVE;
        out[32] = (IbPort::SPEED_SUPPORTED << 4) | self.state as u8;
        out[33] = (self.phys_state << 4) | self.link_down_default;
        out[34] = (self.mkey_protect << 6) | self.lmc;
        out[35] = (IbPort::SPEED_ACTIVE << 4) | self.speed_enabled;
        out[36] = (self.neighbor_mtu << 4) | self.sm_sl;
        out[37] = IbPort::VL_CAP << 4;
        out[38] = self.vl_high_limit;
        out[39] = IbPort::VL_ARB_CAP;
        out[40] = IbPort::VL_ARB_CAP;
        out[41] = IbPort::MTU_CAP;
        out[42] = (self.vl_stall_count << 5) | self.hoq_life;
        out[43] = (self.op_vls << 4) | self.enforcement;
        out[44..46].copy_from_slice(&self.mkey_violations.to_be_bytes());
        out[46..48].copy_from_slice(&self.pkey_violations.to_be_bytes());
        out[48..50].copy_from_slice(&self.qkey_violations.to_be_bytes());
        out[50] = GUID_CAP as u8;
        // ClientReregister reads 0.
        out[51] = self.subnet_timeout;
        out[52] = IbPort::RESP_TIME_VALUE;
        out[53] = (self.local_phy_errors << 4) | self.overrun_errors;
        out[62] = (IbPort::SPEED_EXT_ACTIVE << 4) | IbPort::SPEED_EXT_SUPPORTED;
        out[63] = self.speed_ext_enabled;
    }

    /// A Set(PortInfo) of `d`: checks every component first, then applies them; returns the
    /// PORT_CHANGE sub-types to post, or [`BadValue`] (status 0x001C, nothing applied).
    pub fn set_port_info(&mut self, d: &[u8; SMP_DATA_LEN]) -> Result<SmaEvents, BadValue> {
        let lid = be16(d, 16);
        let sm_lid = be16(d, 18);
        let state = d[32] & 0xf;
        let phys = d[33] >> 4;
        let width = d[29];
        let speed = d[35] & 0xf;
        let mtu = d[36] >> 4;
        let op_vls = d[43] >> 4;
        let speed_ext = d[63] & 0x1f;
        // LIDs: unicast (a CA's base LID; 0 is "not assigned"), never multicast/permissive.
        if lid >= 0xc000 || sm_lid >= 0xc000 {
            return Err(BadValue);
        }
        let new_state = match (state, self.state) {
            (0, s) => s,
            (1, _) => PortState::Down,
            (2, PortState::Init) => PortState::Init,
            (3, PortState::Init | PortState::Armed) => PortState::Armed,
            (4, PortState::Armed | PortState::Active) => PortState::Active,
            _ => return Err(BadValue),
        };
        // PortPhysicalState: 0 no change, 2 Polling, 3 Disabled.
        if !matches!(phys, 0 | 2 | 3) {
            return Err(BadValue);
        }
        if width != 0 && width != 0xff && width & !IbPort::WIDTH_SUPPORTED != 0 {
            return Err(BadValue);
        }
        if speed != 0 && speed != 0xf && speed & !IbPort::SPEED_SUPPORTED != 0 {
            return Err(BadValue);
        }
        if mtu == 0 || mtu > IbPort::MTU_CAP {
            return Err(BadValue);
        }
        if op_vls > IbPort::VL_CAP {
            return Err(BadValue);
        }
        if !matches!(speed_ext, 0 | 0x1e | 0x1f) && speed_ext & !IbPort::SPEED_EXT_SUPPORTED != 0 {
            return Err(BadValue);
        }
        let mut ev = SmaEvents::new();
        let (old_lid, old_lmc, old_sm) = (self.lid, self.lmc, (self.sm_lid, self.sm_sl));
        let old_state = self.state;
        self.mkey = be64(d, 0);
        self.gid_prefix = be64(d, 8);
        self.lid = lid;
        self.sm_lid = sm_lid;
        self.mkey_lease = be16(d, 26);
        match width {
            0 => {}
            0xff => self.width_enabled = IbPort::WIDTH_SUPPORTED,
            w => self.width_enabled = w,
        }
        if d[33] & 0xf != 0 {
            self.link_down_default = d[33] & 0xf;
        }
        self.mkey_protect = d[34] >> 6;
        self.lmc = d[34] & 7;
        match speed {
            0 => {}
            0xf => self.speed_enabled = IbPort::SPEED_SUPPORTED,
            s => self.speed_enabled = s,
        }
        self.neighbor_mtu = mtu;
        self.sm_sl = d[36] & 0xf;
        self.vl_high_limit = d[38];
        self.vl_stall_count = d[42] >> 5;
        self.hoq_life = d[42] & 0x1f;
        if op_vls != 0 {
            self.op_vls = op_vls;
        }
        self.enforcement = d[43] & 0xf;
        self.mkey_violations = be16(d, 44);
        self.pkey_violations = be16(d, 46);
        self.qkey_violations = be16(d, 48);
        self.subnet_timeout = d[51] & 0x1f;
        self.local_phy_errors = d[53] >> 4;
        self.overrun_errors = d[53] & 0xf;
        match speed_ext {
            0 => {}
            0x1e | 0x1f => self.speed_ext_enabled = IbPort::SPEED_EXT_SUPPORTED,
            s => self.speed_ext_enabled = s,
        }
        if phys == 3 {
            // Disabled: the link goes down and stays down until Polling is set.
            self.disabled = true;
        } else if phys == 2 {
            self.disabled = false;
        }
        self.state = new_state;
        if phys == 3 || new_state == PortState::Down {
            self.go_down();
        }
        if old_state == PortState::Active && self.state != PortState::Active {
            push(&mut ev, sub::DOWN);
        }
        if (self.lid, self.lmc) != (old_lid, old_lmc) || (self.sm_lid, self.sm_sl) != old_sm {
            // mlx5 has no SM_CHANGE: a new SM LID or SL is told as a LID change, which
            // makes ib_sa rebuild its SM address handle.
            push(&mut ev, sub::LID);
        }
        if d[51] & 0x80 != 0 {
            push(&mut ev, sub::CLIENT_REREG);
        }
        if self.state == PortState::Active && old_state != PortState::Active {
            push(&mut ev, sub::ACTIVE);
        }
        Ok(ev)
    }
}
