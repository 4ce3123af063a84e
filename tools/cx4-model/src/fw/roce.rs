//! RoCE commands outside the QP: XRC domains, the RoCE address (GID) table and multicast
//! attachment.

use cx4_hw::{
    command::{self as cmds, Command},
    qp::qpc_st,
    roce::{roce_l3_type, roce_version},
};

use super::{cmd_in, cmd_out, fail, need_in, need_out, rdma::GidEntry, CmdResult, Firmware};

/// MAD status "unsupported method/attribute combination" (IBA 13.4.7.1).
const MAD_STATUS_UNSUPPORTED_ATTR: u16 = 0x000c;

impl Firmware {
    pub(super) fn roce_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        match op {
            cmds::AllocXrcd::OPCODE => {
                if self.caps.general("xrc") == 0 {
                    fail!(BAD_OP, "ALLOC_XRCD without the xrc capability");
                }
                let id = self.alloc_id();
                self.rdma.xrcds.insert(id);
                cmd_out::<cmds::AllocXrcd>(out)?.set_xrcd(id);
                Ok(())
            }
            cmds::DeallocXrcd::OPCODE => {
                let id = cmd_in::<cmds::DeallocXrcd>(input)?.xrcd();
                if self
                    .rdma
                    .qps
                    .values()
                    .any(|q| q.ctx.xrcd() == id && q.st() == qpc_st::XRC)
                    || self.rdma.srqs.values().any(|s| s.xrcd == id)
                {
                    fail!(
                        BAD_RES_STATE,
                        "DEALLOC_XRCD of a domain a QP or XRC SRQ still uses",
                        "XRCD {id:#x}"
                    );
                }
                if !self.rdma.xrcds.remove(&id) {
                    fail!(
                        BAD_RES,
                        "DEALLOC_XRCD of a domain not allocated",
                        "XRCD {id:#x}"
                    );
                }
                Ok(())
            }
            cmds::SetRoceAddress::OPCODE => self.set_roce_address(input),
            cmds::QueryRoceAddress::OPCODE => {
                let inp = cmd_in::<cmds::QueryRoceAddress>(input)?;
                let idx = self.gid_index(inp.roce_address_index(), inp.vhca_port_num())?;
                let o = cmd_out::<cmds::QueryRoceAddress>(out)?;
                if let Some(e) = self.rdma.gids.get(&idx) {
                    let a = o.roce_address_mut();
                    a.source_l3_address_mut().copy_from_slice(&e.gid);
                    a.set_source_mac(e.mac);
                    a.set_vlan_valid(e.vlan.into());
                    a.set_vlan_id(e.vlan_id.into());
                    a.set_roce_version(e.version.into());
                    a.set_roce_l3_type(e.l3_type.into());
                }
                Ok(())
            }
            cmds::AttachToMcg::OPCODE | cmds::DetachFromMcg::OPCODE => {
                // The two inputs share one layout.
                let inp = cmd_in::<cmds::AttachToMcg>(input)?;
                let qpn = inp.qpn();
                let mut gid = [0u8; 16];
                gid.copy_from_slice(inp.multicast_gid());
                if op == cmds::AttachToMcg::OPCODE {
                    let Some(qp) = self.rdma.qps.get(&qpn) else {
                        fail!(
                            BAD_RES,
                            "ATTACH_TO_MCG of a QP that does not exist",
                            "QP {qpn:#x}"
                        );
                    };
                    if qp.st() != qpc_st::UD {
                        fail!(
                            BAD_PARAM,
                            "ATTACH_TO_MCG of a QP that is not UD",
                            "QP {qpn:#x}"
                        );
                    }
                    let members = self.rdma.mcgs.entry(gid).or_default();
                    if members.len() as u64 >= self.caps.general("max_qp_mcg") {
                        fail!(NO_RES, "ATTACH_TO_MCG: group full (max_qp_mcg)");
                    }
                    if !members.insert(qpn) {
                        fail!(
                            BAD_PARAM,
                            "ATTACH_TO_MCG: QP already attached",
                            "QP {qpn:#x}"
                        );
                    }
                } else {
                    let _ = cmd_in::<cmds::DetachFromMcg>(input)?;
                    let removed = self.rdma.mcgs.get_mut(&gid).is_some_and(|m| m.remove(&qpn));
                    if !removed {
                        fail!(
                            BAD_PARAM,
                            "DETACH_FROM_MCG of a QP not attached",
                            "QP {qpn:#x}"
                        );
                    }
                    self.rdma.mcgs.retain(|_, m| !m.is_empty());
                }
                Ok(())
            }
            cmds::MadIfc::OPCODE => self.mad_ifc(input, out),
            _ => unreachable!("dispatched by opcode"),
        }
    }

    /// MAD_IFC: the port is Ethernet, so the device has no subnet management agent; like
    /// firmware, it answers every MAD with a GetResp whose MAD status says the method/attribute
    /// is unsupported (mlx5_ib's extended-port-info probe then turns the capability off
    /// without a command error).
    fn mad_ifc(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::MadIfc>(input)?;
        let port = inp.port();
        if port == 0 || u64::from(port) > self.caps.general("num_ports").max(1) {
            fail!(
                BAD_PARAM,
                "MAD_IFC on a port the card does not have",
                "port {port}"
            );
        }
        let mut mad = [0u8; 256];
        mad.copy_from_slice(inp.mad());
        let o = cmd_out::<cmds::MadIfc>(out)?;
        let r = o.response_mad_packet_mut();
        r.copy_from_slice(&mad);
        // MAD common header: method at byte 3 (GetResp = 0x81), status at bytes 4..6.
        r[3] = 0x81;
        r[4..6].copy_from_slice(&MAD_STATUS_UNSUPPORTED_ATTR.to_be_bytes());
        Ok(())
    }

    /// Checks a RoCE address table index and port number.
    fn gid_index(&self, idx: u32, port: u32) -> Result<u16, super::CmdError> {
        let size = self.caps.roce("roce_address_table_size") as u32;
        if idx >= size {
            fail!(
                BAD_PARAM,
                "RoCE address index beyond roce_address_table_size",
                "{idx} >= {size}"
            );
        }
        if port > 1 {
            fail!(
                BAD_PARAM,
                "RoCE address of a port the card does not have",
                "port {port}"
            );
        }
        Ok(idx as u16)
    }

    fn set_roce_address(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::SetRoceAddress>(input)?;
        let idx = self.gid_index(inp.roce_address_index(), inp.vhca_port_num())?;
        let a = inp.roce_address();
        let mut gid = [0u8; 16];
        gid.copy_from_slice(a.source_l3_address());
        let (version, l3) = (a.roce_version() as u8, a.roce_l3_type() as u8);
        let mac = a.source_mac();
        // An all-zero entry deletes.
        if gid == [0; 16] && mac == [0; 6] {
            if self.rdma.gids.remove(&idx).is_some() {
                log::debug!("GID {idx} cleared");
            }
            return Ok(());
        }
        let cap = self.caps.roce("roce_version") as u8;
        if version != roce_version::V1 && version != roce_version::V2 || cap & (1 << version) == 0 {
            fail!(
                BAD_PARAM,
                "SET_ROCE_ADDRESS: RoCE version not supported",
                "{version}"
            );
        }
        if l3 != roce_l3_type::IPV4 && l3 != roce_l3_type::IPV6 {
            fail!(BAD_PARAM, "SET_ROCE_ADDRESS: bad L3 type", "{l3}");
        }
        if mac[0] & 1 != 0 {
            fail!(BAD_PARAM, "SET_ROCE_ADDRESS: multicast source MAC");
        }
        let e = GidEntry {
            gid,
            mac,
            vlan_id: a.vlan_id() as u16,
            vlan: a.vlan_valid() != 0,
            version,
            l3_type: l3,
        };
        // mlx5_ib leaves the L3 type 0 (IPv4) for RoCE v1 entries, which carry any GID.
        if e.is_v2() && l3 == roce_l3_type::IPV4 && e.ipv4().is_none() {
            fail!(
                BAD_PARAM,
                "SET_ROCE_ADDRESS: IPv4 entry whose GID is not IPv4-mapped"
            );
        }
        log::debug!(
            "GID {idx}: v{} {} vlan {:?}",
            if e.is_v2() { 2 } else { 1 },
            std::net::Ipv6Addr::from(gid),
            e.vlan.then_some(e.vlan_id)
        );
        self.rdma.gids.insert(idx, e);
        Ok(())
    }
}
