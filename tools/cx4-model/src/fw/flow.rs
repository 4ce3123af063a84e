//! Flow tables, as far as the core needs them: the anchor table and the root pointer.

use cx4_hw::{
    flow::table_type,
    flow::{CreateFlowTableIn, CreateFlowTableOut, DestroyFlowTableIn, SetFlowTableRootIn},
    opcode,
};

use super::{fail, need_out, req, resp, CmdResult, Firmware};

impl Firmware {
    pub(super) fn flow_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            opcode::CREATE_FLOW_TABLE => {
                let inp = req::<CreateFlowTableIn>(input)?;
                let ty = inp.table_type() as u8;
                if u16::from(ty) != u16::from(table_type::NIC_RX) || inp.other_vport() != 0 {
                    fail!(
                        BAD_PARAM,
                        "CREATE_FLOW_TABLE of an unsupported table type",
                        "type {ty}"
                    );
                }
                let c = inp.flow_table_context();
                if c.level() > 64 || c.log_size() > 16 {
                    fail!(
                        BAD_PARAM,
                        "CREATE_FLOW_TABLE level or size out of range",
                        "level {} log_size {}",
                        c.level(),
                        c.log_size()
                    );
                }
                if c.table_miss_action() == 1 && !self.flow_tables.contains_key(&c.table_miss_id())
                {
                    fail!(
                        BAD_RES,
                        "CREATE_FLOW_TABLE missing to a table that does not exist",
                        "{:#x}",
                        c.table_miss_id()
                    );
                }
                let id = self.alloc_id();
                self.flow_tables.insert(id, (ty, c.level() as u8));
                resp::<CreateFlowTableOut>(out)?.set_table_id(id);
                Ok(())
            }
            opcode::DESTROY_FLOW_TABLE => {
                let inp = req::<DestroyFlowTableIn>(input)?;
                let id = inp.table_id();
                if self.flow_tables.remove(&id).is_none() {
                    fail!(
                        BAD_RES,
                        "DESTROY_FLOW_TABLE of a table that does not exist",
                        "{id:#x}"
                    );
                }
                self.flow_root.retain(|_, r| *r != id);
                Ok(())
            }
            opcode::SET_FLOW_TABLE_ROOT => {
                let inp = req::<SetFlowTableRootIn>(input)?;
                let ty = inp.table_type() as u8;
                let id = inp.table_id();
                if id == 0 {
                    self.flow_root.remove(&ty);
                    return Ok(());
                }
                match self.flow_tables.get(&id) {
                    Some(&(t, _)) if t == ty => {
                        self.flow_root.insert(ty, id);
                        Ok(())
                    }
                    _ => fail!(
                        BAD_RES,
                        "SET_FLOW_TABLE_ROOT to a table that does not exist",
                        "{id:#x}"
                    ),
                }
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }
}
