//! The NIC vport: state, context (MAC, MTU, GUIDs, RoCE enable), P_Key table.

use cx4_hw::{
    command::{self as cmds, Command},
    vport::{list_type, vport_state, MacAddressLayout, NicVportContext, QueryHcaVportPkeyOut},
};

use super::{cmd_in, cmd_out, fail, need_in, need_out, CmdResult, Firmware};

/// Entries in the P_Key table.
pub const PKEY_TABLE_SIZE: u32 = (super::ib_port::PKEY_BLOCKS * 32) as u32;

/// NIC vport state kept by the firmware.
#[derive(Debug, Clone)]
pub struct VportState {
    /// Permanent MAC address.
    pub mac: [u8; 6],
    /// MTU (vport context).
    pub mtu: u32,
    /// RoCE enabled on the vport.
    pub roce_en: bool,
    /// Local loopback disabled (unicast, multicast).
    pub disable_lb: (bool, bool),
    /// Promiscuous modes (uc, mc, all).
    pub promisc: (bool, bool, bool),
    /// Node and system image GUID.
    pub guid: u64,
    /// Unicast MAC list (allowed list type UC).
    pub uc_list: Vec<[u8; 6]>,
    /// Multicast MAC list (allowed list type MC).
    pub mc_list: Vec<[u8; 6]>,
    /// VLAN list (allowed list type VLAN).
    pub vlan_list: Vec<u16>,
    /// Minimum WQE inline mode (`MLX5_INLINE_MODE_*`), reported when the ETH capability
    /// `wqe_inline_mode` is VPORT_CONTEXT.
    pub min_inline: u8,
}

impl Default for VportState {
    fn default() -> Self {
        VportState {
            mac: [0x02, 0xc4, 0x00, 0x00, 0x00, 0x01],
            mtu: 1500 + 22,
            roce_en: false,
            disable_lb: (false, false),
            promisc: (false, false, false),
            guid: 0x02c4_00ff_fe00_0001,
            uc_list: Vec::new(),
            mc_list: Vec::new(),
            vlan_list: Vec::new(),
            min_inline: cx4_hw::wq::inline_mode::L2,
        }
    }
}

impl VportState {
    /// A vport whose MAC and GUID derive from `seed` (so two VMs' cards differ).
    pub fn with_seed(seed: u32) -> Self {
        let b = seed.to_be_bytes();
        VportState {
            mac: [0x02, 0xc4, b[0], b[1], b[2], b[3]],
            guid: 0x02c4_00ff_fe00_0000 | u64::from(seed),
            ..Default::default()
        }
    }

    /// Whether the vport context lets a frame to `dmac` in: broadcast, a listed address, or a
    /// promiscuous mode covering it. (mlx5e filters again in its L2 flow table; this is the
    /// vport-level view for the data path, which may choose to apply it.)
    pub fn accepts(&self, dmac: &[u8; 6]) -> bool {
        let (uc, mc, all) = self.promisc;
        if all || *dmac == [0xff; 6] || *dmac == self.mac {
            return true;
        }
        if dmac[0] & 1 != 0 {
            mc || self.mc_list.contains(dmac)
        } else {
            uc || self.uc_list.contains(dmac)
        }
    }
}

/// Offset of the address list in a QUERY_NIC_VPORT_CONTEXT output (context at 0x10, list at
/// its end).
const LIST_OFFSET_OUT: usize = 0x10 + NicVportContext::SIZE;
/// Offset of the address list in a MODIFY_NIC_VPORT_CONTEXT input (context at 0x100).
const LIST_OFFSET_IN: usize = 0x100 + NicVportContext::SIZE;

/// A MAC as a list entry (`mac_address_layout`: the address in the last six bytes).
fn mac_entry(m: &[u8; 6]) -> [u8; 8] {
    let mut l = MacAddressLayout::new();
    l.set_mac(*m);
    l.0
}

/// A VLAN id as a list entry (`vlan_layout`: 12 bits at bit 0x14).
fn vlan_entry(id: u16) -> [u8; 8] {
    let mut e = [0u8; 8];
    e[..4].copy_from_slice(&u32::from(id & 0xfff).to_be_bytes());
    e
}

fn mac_of(e: &[u8]) -> [u8; 6] {
    let mut m = [0u8; 6];
    m.copy_from_slice(&e[2..8]);
    m
}

/// Refuses an HCA vport command (QUERY_HCA_VPORT_*) for another vport or a port the card
/// does not have: the function reads its own vport only (no SR-IOV).
pub(super) fn own_hca_vport(other_vport: u32, port_num: u32, site: &'static str) -> CmdResult {
    if other_vport != 0 || port_num > 1 {
        return Err(super::CmdError::new(
            cx4_hw::status::BAD_PARAM,
            site,
            format!("port {port_num}"),
        ));
    }
    Ok(())
}

impl Firmware {
    pub(super) fn vport_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        match op {
            cmds::QueryVportState::OPCODE => {
                let inp = cmd_in::<cmds::QueryVportState>(input)?;
                if inp.other_vport() != 0 {
                    fail!(
                        BAD_PARAM,
                        "QUERY_VPORT_STATE of another vport",
                        "vport {}",
                        inp.vport_number()
                    );
                }
                let up = self.regs.oper_up();
                let o = cmd_out::<cmds::QueryVportState>(out)?;
                let s = if up {
                    vport_state::UP
                } else {
                    vport_state::DOWN
                };
                o.set_state(s.into());
                o.set_admin_state(s.into());
                Ok(())
            }
            cmds::QueryNicVportContext::OPCODE => {
                let inp = cmd_in::<cmds::QueryNicVportContext>(input)?;
                if inp.other_vport() != 0 {
                    fail!(
                        BAD_PARAM,
                        "QUERY_NIC_VPORT_CONTEXT of another vport",
                        "vport {}",
                        inp.vport_number()
                    );
                }
                let list = inp.allowed_list_type() as u8;
                let v = &self.vport;
                let entries: Vec<[u8; 8]> = match list {
                    list_type::UC => v.uc_list.iter().map(mac_entry).collect(),
                    list_type::MC => v.mc_list.iter().map(mac_entry).collect(),
                    list_type::VLAN => v.vlan_list.iter().map(|&id| vlan_entry(id)).collect(),
                    t => fail!(
                        BAD_PARAM,
                        "QUERY_NIC_VPORT_CONTEXT of an unknown list type",
                        "{t}"
                    ),
                };
                let room = out.len().saturating_sub(LIST_OFFSET_OUT) / 8;
                if entries.len() > room && list != list_type::UC {
                    fail!(
                        BAD_OUTP_LEN,
                        "QUERY_NIC_VPORT_CONTEXT output too short for the address list",
                        "{} entries, room for {room}",
                        entries.len()
                    );
                }
                for (i, e) in entries.iter().enumerate().take(room) {
                    out[LIST_OFFSET_OUT + i * 8..LIST_OFFSET_OUT + i * 8 + 8].copy_from_slice(e);
                }
                let n = entries.len().min(room);
                let o = cmd_out::<cmds::QueryNicVportContext>(out)?;
                let c = o.nic_vport_context_mut();
                c.set_allowed_list_type(list.into());
                c.set_allowed_list_size(n as u32);
                c.set_min_wqe_inline_mode(v.min_inline.into());
                c.set_mtu(v.mtu);
                c.set_roce_en(v.roce_en.into());
                c.set_disable_uc_local_lb(v.disable_lb.0.into());
                c.set_disable_mc_local_lb(v.disable_lb.1.into());
                c.set_promisc_uc(v.promisc.0.into());
                c.set_promisc_mc(v.promisc.1.into());
                c.set_promisc_all(v.promisc.2.into());
                c.set_system_image_guid(v.guid);
                c.set_node_guid(v.guid);
                c.set_port_guid(v.guid);
                let mac = c.permanent_address_mut();
                mac.set_mac_addr_47_32(u32::from(u16::from_be_bytes([v.mac[0], v.mac[1]])));
                mac.set_mac_addr_31_0(u32::from_be_bytes([v.mac[2], v.mac[3], v.mac[4], v.mac[5]]));
                Ok(())
            }
            cmds::ModifyNicVportContext::OPCODE => {
                let inp = cmd_in::<cmds::ModifyNicVportContext>(input)?;
                if inp.other_vport() != 0 {
                    fail!(
                        BAD_PARAM,
                        "MODIFY_NIC_VPORT_CONTEXT of another vport",
                        "vport {}",
                        inp.vport_number()
                    );
                }
                let sel = inp.field_select();
                let c = inp.nic_vport_context();
                let v = &mut self.vport;
                if sel.mtu() != 0 {
                    if !(68..=super::regs::MAX_MTU).contains(&c.mtu()) {
                        fail!(
                            BAD_PARAM,
                            "MODIFY_NIC_VPORT_CONTEXT: MTU out of range",
                            "{}",
                            c.mtu()
                        );
                    }
                    v.mtu = c.mtu();
                }
                if sel.roce_en() != 0 {
                    if self.caps.general("roce") == 0 && c.roce_en() != 0 {
                        fail!(BAD_PARAM, "MODIFY_NIC_VPORT_CONTEXT: RoCE is not supported");
                    }
                    v.roce_en = c.roce_en() != 0;
                }
                if sel.disable_uc_local_lb() != 0 {
                    v.disable_lb.0 = c.disable_uc_local_lb() != 0;
                }
                if sel.disable_mc_local_lb() != 0 {
                    v.disable_lb.1 = c.disable_mc_local_lb() != 0;
                }
                if sel.promisc() != 0 {
                    v.promisc = (
                        c.promisc_uc() != 0,
                        c.promisc_mc() != 0,
                        c.promisc_all() != 0,
                    );
                }
                if sel.min_inline() != 0 {
                    if c.min_wqe_inline_mode() > u32::from(cx4_hw::wq::inline_mode::TCP_UDP) {
                        fail!(
                            BAD_PARAM,
                            "MODIFY_NIC_VPORT_CONTEXT: minimum inline mode unknown",
                            "{}",
                            c.min_wqe_inline_mode()
                        );
                    }
                    v.min_inline = c.min_wqe_inline_mode() as u8;
                }
                if sel.addresses_list() != 0 {
                    let n = c.allowed_list_size() as usize;
                    let (cap, what) = match c.allowed_list_type() as u8 {
                        list_type::UC => ("log_max_current_uc_list", "UC"),
                        list_type::MC => ("log_max_current_mc_list", "MC"),
                        list_type::VLAN => ("log_max_vlan_list", "VLAN"),
                        t => fail!(
                            BAD_PARAM,
                            "MODIFY_NIC_VPORT_CONTEXT: unknown list type",
                            "{t}"
                        ),
                    };
                    let max = 1usize << self.caps.general(cap);
                    if n > max {
                        fail!(
                            BAD_PARAM,
                            "MODIFY_NIC_VPORT_CONTEXT: address list longer than the capability",
                            "{what} list of {n} (max {max})"
                        );
                    }
                    if input.len() < LIST_OFFSET_IN + n * 8 {
                        fail!(
                            BAD_INP_LEN,
                            "MODIFY_NIC_VPORT_CONTEXT shorter than its address list",
                            "{n} entries in {} bytes",
                            input.len()
                        );
                    }
                    let e = |i: usize| &input[LIST_OFFSET_IN + i * 8..LIST_OFFSET_IN + i * 8 + 8];
                    let v = &mut self.vport;
                    match c.allowed_list_type() as u8 {
                        list_type::UC => v.uc_list = (0..n).map(|i| mac_of(e(i))).collect(),
                        list_type::MC => v.mc_list = (0..n).map(|i| mac_of(e(i))).collect(),
                        _ => {
                            v.vlan_list = (0..n)
                                .map(|i| {
                                    (u32::from_be_bytes([e(i)[0], e(i)[1], e(i)[2], e(i)[3]])
                                        & 0xfff) as u16
                                })
                                .collect()
                        }
                    }
                }
                if sel.permanent_address() != 0 {
                    fail!(
                        BAD_PARAM,
                        "MODIFY_NIC_VPORT_CONTEXT: the permanent address is read-only"
                    );
                }
                Ok(())
            }
            cmds::QueryHcaVportPkey::OPCODE => {
                let inp = cmd_in::<cmds::QueryHcaVportPkey>(input)?;
                own_hca_vport(
                    inp.other_vport(),
                    inp.port_num(),
                    "QUERY_HCA_VPORT_PKEY of another vport or port",
                )?;
                let idx = inp.pkey_index();
                // 0xffff asks for the whole table.
                let (first, count) = if idx == 0xffff {
                    (0, PKEY_TABLE_SIZE)
                } else {
                    (idx, 1)
                };
                if first >= PKEY_TABLE_SIZE {
                    fail!(
                        BAD_PARAM,
                        "QUERY_HCA_VPORT_PKEY index out of range",
                        "{idx}"
                    );
                }
                for i in 0..count as usize {
                    let Some(p) = QueryHcaVportPkeyOut::pkey_mut(out, i) else {
                        fail!(
                            BAD_OUTP_LEN,
                            "QUERY_HCA_VPORT_PKEY: output too short for the table"
                        );
                    };
                    // The port's P_Key table: the default P_Key in entry 0 until an SM
                    // writes the table (an IB port's P_KeyTable, `ib_port.rs`).
                    p.set_pkey(self.ib.pkeys[first as usize + i].into());
                }
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }
}

/// UDP ports the port parses as VXLAN when `max_vxlan_udp_ports` is 0 (lib/vxlan.h: 0 means 4).
pub const DEFAULT_MAX_VXLAN_PORTS: usize = 4;

impl Firmware {
    /// ADD/DELETE_VXLAN_UDP_DPORT: the set of UDP destination ports the parser treats as
    /// VXLAN (4789 is added by mlx5_core at probe). Adding a port twice is not an error
    /// (lib/vxlan.c ignores the result of its first ADD).
    pub(super) fn vxlan_cmd(&mut self, op: u16, input: &[u8]) -> CmdResult {
        need_in(input, 0x10)?;
        if self.caps.eth("tunnel_stateless_vxlan") == 0 {
            fail!(
                BAD_OP,
                "VXLAN UDP port command without VXLAN offloads",
                "opcode {op:#x}"
            );
        }
        let port = match op {
            cmds::AddVxlanUdpDport::OPCODE => {
                cmd_in::<cmds::AddVxlanUdpDport>(input)?.vxlan_udp_port()
            }
            _ => cmd_in::<cmds::DeleteVxlanUdpDport>(input)?.vxlan_udp_port(),
        } as u16;
        if port == 0 {
            fail!(BAD_PARAM, "VXLAN UDP port 0");
        }
        let ports = &mut self.nic.vxlan_ports;
        if op == cmds::AddVxlanUdpDport::OPCODE {
            let max = match self.caps.eth("max_vxlan_udp_ports") {
                0 => DEFAULT_MAX_VXLAN_PORTS,
                n => n as usize,
            };
            if !ports.contains(&port) && ports.len() >= max {
                fail!(
                    NO_RES,
                    "ADD_VXLAN_UDP_DPORT: the port table is full",
                    "{port} (max {max})"
                );
            }
            ports.insert(port);
        } else if !ports.remove(&port) {
            fail!(
                BAD_PARAM,
                "DELETE_VXLAN_UDP_DPORT of a port not added",
                "{port}"
            );
        }
        Ok(())
    }

    /// Whether UDP destination port `port` carries VXLAN (data path).
    pub fn is_vxlan_port(&self, port: u16) -> bool {
        self.nic.vxlan_ports.contains(&port)
    }
}
