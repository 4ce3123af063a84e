//! Simple resources: UARs, protection domains, transport domains.

use cx4_hw::command::{self as cmds, Command};

use super::{cmd_in, cmd_out, fail, need_in, need_out, CmdResult, Firmware};

/// First UAR index handed out: pages 0..2 of BAR0 hold the initialization segment.
pub const FIRST_UAR: u32 = 8;
/// Last UAR index: the pages below the MSI-X table at the end of BAR0.
pub const LAST_UAR: u32 = (crate::pci_cfg::MSIX_TABLE_OFFSET / 4096) - 1;

impl Firmware {
    pub(super) fn resource(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        match op {
            cmds::AllocUar::OPCODE => {
                let Some(idx) = (FIRST_UAR..=LAST_UAR).find(|i| !self.uars.contains_key(i)) else {
                    fail!(NO_RES, "ALLOC_UAR: no UAR pages left");
                };
                self.uars.insert(idx, ());
                cmd_out::<cmds::AllocUar>(out)?.set_uar(idx);
            }
            cmds::DeallocUar::OPCODE => {
                let idx = cmd_in::<cmds::DeallocUar>(input)?.uar();
                if self.eqs.values().any(|e| e.uar_page == idx)
                    || self.cqs.values().any(|c| c.uar_page == idx)
                    || self.nic.sqs.values().any(|s| s.wq.uar_page == idx)
                    || self.rdma.uar_in_use(idx)
                {
                    fail!(
                        BAD_RES_STATE,
                        "DEALLOC_UAR of a UAR an EQ or CQ still uses",
                        "UAR {idx}"
                    );
                }
                if self.uars.remove(&idx).is_none() {
                    fail!(BAD_RES, "DEALLOC_UAR of a UAR not allocated", "UAR {idx}");
                }
            }
            cmds::AllocPd::OPCODE => {
                let id = self.alloc_id();
                self.pds.insert(id, ());
                cmd_out::<cmds::AllocPd>(out)?.set_pd(id);
            }
            cmds::DeallocPd::OPCODE => {
                let id = cmd_in::<cmds::DeallocPd>(input)?.pd();
                if self.pds.contains_key(&id) && self.pd_in_use(id) {
                    fail!(
                        BAD_RES_STATE,
                        "DEALLOC_PD of a PD an SQ, RQ or mkey still uses",
                        "PD {id:#x}"
                    );
                }
                if self.pds.remove(&id).is_none() {
                    fail!(BAD_RES, "DEALLOC_PD of a PD not allocated", "PD {id:#x}");
                }
            }
            cmds::AllocTransportDomain::OPCODE => {
                let id = self.alloc_id();
                self.tds.insert(id, ());
                cmd_out::<cmds::AllocTransportDomain>(out)?.set_transport_domain(id);
            }
            cmds::DeallocTransportDomain::OPCODE => {
                let id = cmd_in::<cmds::DeallocTransportDomain>(input)?.transport_domain();
                if self.nic.tises.values().any(|t| t.transport_domain == id)
                    || self.nic.tirs.values().any(|t| t.transport_domain == id)
                {
                    fail!(
                        BAD_RES_STATE,
                        "DEALLOC_TRANSPORT_DOMAIN of a domain a TIS or TIR still uses",
                        "TD {id:#x}"
                    );
                }
                if self.tds.remove(&id).is_none() {
                    fail!(
                        BAD_RES,
                        "DEALLOC_TRANSPORT_DOMAIN of a domain not allocated",
                        "TD {id:#x}"
                    );
                }
            }
            _ => unreachable!("dispatched by opcode"),
        }
        Ok(())
    }
}

impl Firmware {
    fn pd_in_use(&self, pd: u32) -> bool {
        self.nic.sqs.values().any(|s| s.wq.pd == pd)
            || self.nic.rqs.values().any(|r| r.wq.pd == pd)
            || self.nic.mkeys.values().any(|m| m.pd == pd)
            || self.rdma.pd_in_use(pd)
    }
}
