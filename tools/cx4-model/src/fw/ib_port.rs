//! The InfiniBand side of the port (`--link ib`, ConnectX-4 only): the logical port state the
//! subnet manager drives through the SMA (`sma.rs`), and the commands that read it —
//! MAD_IFC, QUERY_HCA_VPORT_CONTEXT, QUERY_HCA_VPORT_GID — and the PCAP register that
//! sets the capability bits software owns (IsSM from opening `issm`, IsCM from ib_cm).
//!
//! mlx5 reads an IB port through MAD_IFC when the card has no `ib_virt` (the model's case:
//! `mlx5_ib_port_link_layer`'s MAD access method, `ib/main.c`); QUERY_HCA_VPORT_CONTEXT is
//! still read for `grh_required` (`mlx5_port_immutable`) and the system image GUID
//! (`mlx5_query_nic_system_image_guid`), and reports what the SMA does, so there is one truth.

use cx4_hw::{
    command::{self as cmds, Command},
    eq::port_change_subtype as sub,
    vport::QueryHcaVportGidOut,
};

use super::{
    cmd_in, cmd_out, fail,
    sma::{self, NodeIdentity, MAD_LEN},
    vport::own_hca_vport,
    Bus, CmdResult, Firmware,
};

/// GUIDs in the port's GUIDInfo (one block): entry 0 is the port GUID, the rest aliases.
pub const GUID_CAP: usize = 8;
/// P_KeyTable blocks of 32 entries (PartitionCap 128, `pkey_table_size` code 0).
pub const PKEY_BLOCKS: usize = 4;
/// The default (full-member) P_Key in entry 0.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// PortInfo capability-mask bits (IBA 14.2.5.6, `enum ib_port_capability_mask_bits`).
pub mod cap {
    /// IsSM: a subnet manager runs behind the port (set through PCAP).
    pub const IS_SM: u32 = 1 << 1;
    /// IsSystemImageGUIDsupported.
    pub const SYS_IMAGE_GUID: u32 = 1 << 11;
    /// IsExtendedSpeedsSupported (LinkSpeedExt* are valid).
    pub const EXT_SPEEDS: u32 = 1 << 14;
    /// IsCommunicationManagementSupported (set by ib_cm through PCAP).
    pub const CM: u32 = 1 << 16;
    /// IsSNMPTunnelingSupported.
    pub const SNMP: u32 = 1 << 18;
    /// IsDeviceManagementSupported.
    pub const DEV_MGMT: u32 = 1 << 19;
    /// IsVendorClassSupported.
    pub const VENDOR_CLASS: u32 = 1 << 20;
    /// IsBootManagementSupported.
    pub const BOOT_MGMT: u32 = 1 << 23;
    /// IsClientReregistrationSupported.
    pub const CLIENT_REREG: u32 = 1 << 25;
    /// The bits the port has whatever software says.
    pub const FIXED: u32 = SYS_IMAGE_GUID | EXT_SPEEDS | CLIENT_REREG;
    /// The bits PCAP may set or clear (the ones that say what software runs on the port).
    pub const SETTABLE: u32 = IS_SM | CM | SNMP | DEV_MGMT | VENDOR_CLASS | BOOT_MGMT;
}

/// The logical port state (PortInfo.PortState).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// No link, or the SM took the port down.
    Down = 1,
    /// The link is up; only subnet management (VL15) flows.
    Init = 2,
    /// Configured by the SM, not yet active.
    Armed = 3,
    /// All traffic flows.
    Active = 4,
}

/// PortPhysicalState: Polling (looking for a peer).
pub const PHYS_POLLING: u8 = 2;
/// PortPhysicalState: Disabled.
pub const PHYS_DISABLED: u8 = 3;
/// PortPhysicalState: LinkUp.
pub const PHYS_LINK_UP: u8 = 5;

/// The IB port: PortInfo's writable components and the port's tables.
#[derive(Clone, Debug)]
pub struct IbPort {
    /// M_Key (kept, not enforced).
    pub mkey: u64,
    /// GID prefix (GID = prefix, port GUID).
    pub gid_prefix: u64,
    /// Base LID (0: not assigned).
    pub lid: u16,
    /// The master SM's LID.
    pub sm_lid: u16,
    /// The master SM's SL.
    pub sm_sl: u8,
    /// LID mask count.
    pub lmc: u8,
    /// Logical state.
    pub state: PortState,
    /// PortPhysicalState.
    pub phys_state: u8,
    /// The link is there (the wire's carrier and the cable).
    pub link: bool,
    /// The SM disabled the port (PortPhysicalState Disabled).
    pub disabled: bool,
    /// A Set(Down) happened: the link retrains before the next access sees the port.
    pub retrain: bool,
    /// Capability bits set through PCAP ([`cap::SETTABLE`]).
    pub sw_caps: u32,
    /// M_KeyLeasePeriod.
    pub mkey_lease: u16,
    /// M_KeyProtectBits.
    pub mkey_protect: u8,
    /// LinkWidthEnabled.
    pub width_enabled: u8,
    /// LinkSpeedEnabled.
    pub speed_enabled: u8,
    /// LinkSpeedExtEnabled.
    pub speed_ext_enabled: u8,
    /// LinkDownDefaultState.
    pub link_down_default: u8,
    /// NeighborMTU (code).
    pub neighbor_mtu: u8,
    /// OperationalVLs (code).
    pub op_vls: u8,
    /// VLHighLimit.
    pub vl_high_limit: u8,
    /// VLStallCount.
    pub vl_stall_count: u8,
    /// HOQLife.
    pub hoq_life: u8,
    /// Partition enforcement and raw filtering bits (byte 43, bits 3:0).
    pub enforcement: u8,
    /// M_KeyViolations.
    pub mkey_violations: u16,
    /// P_KeyViolations.
    pub pkey_violations: u16,
    /// Q_KeyViolations.
    pub qkey_violations: u16,
    /// SubnetTimeOut.
    pub subnet_timeout: u8,
    /// LocalPhyErrors threshold.
    pub local_phy_errors: u8,
    /// OverrunErrors threshold.
    pub overrun_errors: u8,
    /// GUIDInfo (entry 0 unused: the port GUID).
    pub alias_guids: [u64; GUID_CAP],
    /// P_KeyTable.
    pub pkeys: [u16; PKEY_BLOCKS * 32],
    /// SLtoVLMappingTable (two SLs per byte, SL 0 in the high nibble).
    pub sl2vl: [u8; 8],
    /// VLArbitrationTable blocks 1..=4.
    pub vl_arb: [[u8; 64]; 4],
}

impl IbPort {
    /// LinkWidthSupported: 1X and 4X.
    pub const WIDTH_SUPPORTED: u8 = 0x3;
    /// LinkWidthActive: 4X.
    pub const WIDTH_ACTIVE: u8 = 0x2;
    /// LinkSpeedSupported: SDR, DDR, QDR.
    pub const SPEED_SUPPORTED: u8 = 0x7;
    /// LinkSpeedActive: QDR (the extended speed below is what runs).
    pub const SPEED_ACTIVE: u8 = 0x4;
    /// LinkSpeedExtSupported: FDR, EDR.
    pub const SPEED_EXT_SUPPORTED: u8 = 0x3;
    /// LinkSpeedExtActive: EDR (4X EDR, 100 Gb/s, as the ConnectX-4).
    pub const SPEED_EXT_ACTIVE: u8 = 0x2;
    /// MTUCap: 4096.
    pub const MTU_CAP: u8 = 5;
    /// VLCap: VL0-VL7.
    pub const VL_CAP: u8 = 4;
    /// VLArbitrationHighCap and LowCap.
    pub const VL_ARB_CAP: u8 = 8;
    /// RespTimeValue.
    pub const RESP_TIME_VALUE: u8 = 8;

    /// The port at power-on: link up, Init, no LID, NeighborMTU = MTUCap and OpVLs = VLCap
    /// (so opensm's LID manager finds nothing to bounce the link for), P_Key 0xFFFF.
    pub fn new() -> IbPort {
        let mut pkeys = [0u16; PKEY_BLOCKS * 32];
        pkeys[0] = DEFAULT_PKEY;
        IbPort {
            mkey: 0,
            gid_prefix: 0xfe80_0000_0000_0000,
            lid: 0,
            sm_lid: 0,
            sm_sl: 0,
            lmc: 0,
            state: PortState::Init,
            phys_state: PHYS_LINK_UP,
            link: true,
            disabled: false,
            retrain: false,
            sw_caps: 0,
            mkey_lease: 0,
            mkey_protect: 0,
            width_enabled: IbPort::WIDTH_SUPPORTED,
            speed_enabled: IbPort::SPEED_SUPPORTED,
            speed_ext_enabled: IbPort::SPEED_EXT_SUPPORTED,
            link_down_default: PHYS_POLLING,
            neighbor_mtu: IbPort::MTU_CAP,
            op_vls: IbPort::VL_CAP,
            vl_high_limit: 0,
            vl_stall_count: 0,
            hoq_life: 0,
            enforcement: 0,
            mkey_violations: 0,
            pkey_violations: 0,
            qkey_violations: 0,
            subnet_timeout: 0,
            local_phy_errors: 8,
            overrun_errors: 8,
            alias_guids: [0; GUID_CAP],
            pkeys,
            sl2vl: [0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67],
            vl_arb: [[0; 64]; 4],
        }
    }

    /// PortInfo.CapabilityMask.
    pub fn cap_mask(&self) -> u32 {
        cap::FIXED | (self.sw_caps & cap::SETTABLE)
    }

    /// The link went (or was taken) down: Down, and Polling unless disabled.
    pub fn go_down(&mut self) {
        self.state = PortState::Down;
        self.phys_state = if self.disabled {
            PHYS_DISABLED
        } else {
            PHYS_POLLING
        };
        self.retrain = self.link && !self.disabled;
    }

    /// A retrain due (after Set(Down)) completes: the link comes back up in Init.
    pub fn settle(&mut self) {
        if self.retrain && self.link && !self.disabled {
            self.retrain = false;
            self.state = PortState::Init;
            self.phys_state = PHYS_LINK_UP;
        }
    }

    /// The wire's link changed; returns the PORT_CHANGE sub-type to post, if any.
    pub fn set_link(&mut self, up: bool) -> Option<u8> {
        self.link = up;
        if up {
            if self.state == PortState::Down && !self.disabled {
                self.retrain = true;
                self.settle();
            }
            None
        } else {
            let was_active = self.state == PortState::Active;
            self.retrain = false;
            self.go_down();
            was_active.then_some(sub::DOWN)
        }
    }

    /// Whether the port passes data traffic (Active; Armed takes only VL15).
    pub fn active(&self) -> bool {
        self.settled_state() == PortState::Active
    }

    /// The state the next access sees.
    pub fn settled_state(&self) -> PortState {
        if self.retrain && self.link && !self.disabled {
            PortState::Init
        } else {
            self.state
        }
    }

    /// GID `index` of the port: the prefix and the port GUID at 0, aliases after.
    pub fn gid(&self, port_guid: u64, index: usize) -> [u8; 16] {
        let mut g = [0u8; 16];
        let guid = if index == 0 {
            port_guid
        } else {
            self.alias_guids[index]
        };
        if index == 0 || guid != 0 {
            g[..8].copy_from_slice(&self.gid_prefix.to_be_bytes());
            g[8..].copy_from_slice(&guid.to_be_bytes());
        }
        g
    }
}

impl Default for IbPort {
    fn default() -> Self {
        IbPort::new()
    }
}

impl Firmware {
    /// Whether the port runs InfiniBand (`port_type` 0 in the general capabilities).
    pub fn ib_mode(&self) -> bool {
        self.caps.general("port_type") == 0
    }

    /// MAD_IFC on an InfiniBand port: the SMA's answer, then the PORT_CHANGE events it
    /// caused.
    pub(super) fn ib_mad_ifc(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::MadIfc>(input)?;
        let port = inp.port();
        if port != 1 {
            fail!(
                BAD_PARAM,
                "MAD_IFC on a port the card does not have",
                "port {port}"
            );
        }
        let mut mad = [0u8; MAD_LEN];
        mad.copy_from_slice(inp.mad());
        let v = self.regs.fw_version;
        let id = NodeIdentity {
            guid: self.vport.guid,
            device_id: cx4_hw::pci::DEVICE_CONNECTX4,
            revision: (u32::from(v.major) << 16) | u32::from(v.minor),
            node_desc: &self.regs.node_desc,
        };
        let (reply, events) = sma::process(&mut self.ib, &id, 1, &mad);
        log::debug!(
            "MAD_IFC class {:#04x} method {:#04x} attr {:#06x} mod {:#x}: status {:#06x}",
            mad[1],
            mad[3],
            u16::from_be_bytes([mad[16], mad[17]]),
            u32::from_be_bytes([mad[20], mad[21], mad[22], mad[23]]),
            u16::from_be_bytes([reply[4], reply[5]]) & 0x7fff
        );
        cmd_out::<cmds::MadIfc>(out)?
            .response_mad_packet_mut()
            .copy_from_slice(&reply);
        for s in events {
            self.ib_port_event(ctx, s);
        }
        Ok(())
    }

    /// Posts a PORT_CHANGE event of sub-type `s` for port 1.
    pub fn ib_port_event(&mut self, ctx: &mut Bus, s: u8) {
        let mut eqe = super::new_event(cx4_hw::eq::event_type::PORT_CHANGE, s);
        eqe.port_mut().set_port(1);
        let n = self.post_event(ctx, &eqe);
        log::info!(
            "IB port 1: {} (state {:?}, LID {:#x}, SM LID {:#x}): PORT_CHANGE to {n} EQ(s)",
            sub::port_change_subtype_name(s),
            self.ib.state,
            self.ib.lid,
            self.ib.sm_lid
        );
    }

    /// The wire's link on an IB port changed: Down (with an event when it was Active) or a
    /// retrain to Init.
    pub fn ib_link_changed(&mut self, ctx: &mut Bus) {
        let up = self.regs.link_up && self.regs.carrier;
        if let Some(s) = self.ib.set_link(up) {
            self.ib_port_event(ctx, s);
        }
    }

    /// QUERY_HCA_VPORT_CONTEXT and QUERY_HCA_VPORT_GID of the function's own vport.
    pub(super) fn hca_vport_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        self.ib.settle();
        let guid = self.vport.guid;
        match op {
            cmds::QueryHcaVportContext::OPCODE => {
                let inp = cmd_in::<cmds::QueryHcaVportContext>(input)?;
                own_hca_vport(
                    inp.other_vport(),
                    inp.port_num(),
                    "QUERY_HCA_VPORT_CONTEXT of another vport or port",
                )?;
                let p = &self.ib;
                let o = cmd_out::<cmds::QueryHcaVportContext>(out)?;
                let c = o.hca_vport_context_mut();
                c.set_has_smi(1);
                c.set_port_physical_state(p.phys_state.into());
                c.set_port_state(p.state as u32);
                c.set_vport_state(p.state as u32);
                c.set_system_image_guid(guid);
                c.set_port_guid(guid);
                c.set_node_guid(guid);
                c.set_cap_mask1(p.cap_mask());
                c.set_cap_mask1_field_select(cap::SETTABLE);
                c.set_lid(p.lid.into());
                c.set_lmc(p.lmc.into());
                c.set_subnet_timeout(p.subnet_timeout.into());
                c.set_sm_lid(p.sm_lid.into());
                c.set_sm_sl(p.sm_sl.into());
                c.set_qkey_violation_counter(p.qkey_violations.into());
                c.set_pkey_violation_counter(p.pkey_violations.into());
                Ok(())
            }
            cmds::QueryHcaVportGid::OPCODE => {
                let inp = cmd_in::<cmds::QueryHcaVportGid>(input)?;
                own_hca_vport(
                    inp.other_vport(),
                    inp.port_num(),
                    "QUERY_HCA_VPORT_GID of another vport or port",
                )?;
                let idx = inp.gid_index() as usize;
                // 0xffff asks for the whole table.
                let (first, count) = if idx == 0xffff {
                    (0, GUID_CAP)
                } else {
                    (idx, 1)
                };
                if first >= GUID_CAP {
                    fail!(BAD_PARAM, "QUERY_HCA_VPORT_GID index out of range", "{idx}");
                }
                cmd_out::<cmds::QueryHcaVportGid>(out)?.set_gids_num(count as u32);
                for i in 0..count {
                    let g = self.ib.gid(guid, first + i);
                    let Some(e) = QueryHcaVportGidOut::gid_mut(out, i) else {
                        fail!(
                            BAD_OUTP_LEN,
                            "QUERY_HCA_VPORT_GID: output too short for the table"
                        );
                    };
                    e.array128_auto_mut().copy_from_slice(&g);
                }
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    /// PCAP write (`mlx5_set_port_caps`): the capability mask software asks for, of which
    /// the port takes the bits software owns.
    pub(super) fn pcap_write(&mut self, data: &[u8]) -> CmdResult {
        if data.len() < 8 {
            fail!(BAD_INP_LEN, "PCAP register data too short");
        }
        let caps = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
        self.ib.sw_caps = caps & cap::SETTABLE;
        Ok(())
    }

    /// PCAP read: the port's capability mask.
    pub(super) fn pcap_read(&self, reply: &mut [u8]) {
        if reply.len() >= 8 {
            reply[1] = 1;
            reply[4..8].copy_from_slice(&self.ib.cap_mask().to_be_bytes());
        }
    }
}
