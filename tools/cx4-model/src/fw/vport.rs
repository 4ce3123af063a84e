//! The NIC vport: state, context (MAC, MTU, GUIDs, RoCE enable), P_Key table.

use cx4_hw::{
    opcode,
    vport::{
        vport_state, ModifyNicVportContextIn, QueryHcaVportPkeyIn, QueryHcaVportPkeyOut,
        QueryNicVportContextIn, QueryNicVportContextOut, QueryVportStateIn, QueryVportStateOut,
    },
};

use super::{fail, need_in, need_out, req, resp, CmdResult, Firmware};

/// The default P_Key (full membership).
pub const DEFAULT_PKEY: u32 = 0xffff;
/// Entries in the P_Key table.
pub const PKEY_TABLE_SIZE: u32 = 128;

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
}

impl Firmware {
    pub(super) fn vport_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        match op {
            opcode::QUERY_VPORT_STATE => {
                let inp = req::<QueryVportStateIn>(input)?;
                if inp.other_vport() != 0 {
                    fail!(
                        BAD_PARAM,
                        "QUERY_VPORT_STATE of another vport",
                        "vport {}",
                        inp.vport_number()
                    );
                }
                let up = self.regs.oper_up();
                let o = resp::<QueryVportStateOut>(out)?;
                let s = if up {
                    vport_state::UP
                } else {
                    vport_state::DOWN
                };
                o.set_state(s.into());
                o.set_admin_state(s.into());
                Ok(())
            }
            opcode::QUERY_NIC_VPORT_CONTEXT => {
                let inp = req::<QueryNicVportContextIn>(input)?;
                if inp.other_vport() != 0 {
                    fail!(
                        BAD_PARAM,
                        "QUERY_NIC_VPORT_CONTEXT of another vport",
                        "vport {}",
                        inp.vport_number()
                    );
                }
                let v = &self.vport;
                let o = resp::<QueryNicVportContextOut>(out)?;
                let c = o.nic_vport_context_mut();
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
            opcode::MODIFY_NIC_VPORT_CONTEXT => {
                let inp = req::<ModifyNicVportContextIn>(input)?;
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
                if sel.permanent_address() != 0 {
                    fail!(
                        BAD_PARAM,
                        "MODIFY_NIC_VPORT_CONTEXT: the permanent address is read-only"
                    );
                }
                Ok(())
            }
            opcode::QUERY_HCA_VPORT_PKEY => {
                let inp = req::<QueryHcaVportPkeyIn>(input)?;
                if inp.other_vport() != 0 || inp.port_num() > 1 {
                    fail!(
                        BAD_PARAM,
                        "QUERY_HCA_VPORT_PKEY of another vport or port",
                        "port {}",
                        inp.port_num()
                    );
                }
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
                    p.set_pkey(if first == 0 && i == 0 {
                        DEFAULT_PKEY
                    } else {
                        0
                    });
                }
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }
}
