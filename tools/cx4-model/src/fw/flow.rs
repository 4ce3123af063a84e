//! NIC RX flow steering objects: flow tables (with their level, size and miss behaviour), the
//! root pointer, flow groups (an index range sharing one match mask), flow table entries
//! (match value, action, forward destinations, counters) and flow counters.
//!
//! The decision a received frame gets from these objects is [`Firmware::steer`] (steer.rs).

use std::collections::BTreeMap;

use cx4_hw::{
    command::{self as cmds, Command},
    flow::{
        action, dest_type, fte_counter, fte_destination, fte_modify, match_criteria, miss_action,
        table_type, FteMatchParam, QueryFlowCounterOut, SetFteIn, DEST_STRIDE,
        MODIFY_FLOW_TABLE_MISS_TABLE_ID, SET_FTE_OP_MOD_MODIFY,
    },
};

use super::{cmd_in, cmd_out, fail, need_out, CmdError, CmdResult, Firmware};

/// What a table does with a packet no entry matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// The table type's default: drop, on NIC RX.
    Default,
    /// Continue in another table.
    Forward(u32),
}

/// A forward destination of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// Continue in a flow table.
    Table(u32),
    /// Deliver through a TIR.
    Tir(u32),
}

/// A flow group: entries `start..=end` of its table share `criteria` as their mask.
#[derive(Clone, Debug)]
pub struct FlowGroup {
    /// Group id.
    pub id: u32,
    /// First entry index.
    pub start: u32,
    /// Last entry index.
    pub end: u32,
    /// `MLX5_MATCH_*` sections the mask uses.
    pub criteria_enable: u8,
    /// The mask (bits of disabled sections cleared).
    pub criteria: Box<FteMatchParam>,
}

/// A flow table entry.
#[derive(Clone, Debug)]
pub struct Fte {
    /// Index in the table.
    pub index: u32,
    /// Its group.
    pub group: u32,
    /// `MLX5_FLOW_CONTEXT_ACTION_*` bits.
    pub action: u32,
    /// Flow tag reported in the CQE.
    pub flow_tag: u32,
    /// Forward destinations (action FWD_DEST).
    pub dests: Vec<Dest>,
    /// Flow counters (action COUNT).
    pub counters: Vec<u32>,
    /// The match value.
    pub value: Box<FteMatchParam>,
}

/// A flow table.
#[derive(Clone, Debug)]
pub struct FlowTable {
    /// Table id.
    pub id: u32,
    /// `FS_FT_*` table type.
    pub ty: u8,
    /// Level: forwarding goes to strictly higher levels.
    pub level: u8,
    /// log2 of the number of entries.
    pub log_size: u8,
    /// Miss behaviour.
    pub miss: Miss,
    /// Groups by id.
    pub groups: BTreeMap<u32, FlowGroup>,
    /// Entries by index.
    pub entries: BTreeMap<u32, Fte>,
}

/// Sections a NIC RX group may match on: outer headers, misc parameters, inner headers.
const SUPPORTED_CRITERIA: u8 =
    match_criteria::OUTER_HEADERS | match_criteria::MISC_PARAMETERS | match_criteria::INNER_HEADERS;

/// Actions the model executes on NIC RX.
const SUPPORTED_ACTIONS: u32 = action::ALLOW | action::DROP | action::FWD_DEST | action::COUNT;

/// Clears the sections of `m` that `enable` (`MLX5_MATCH_*`) does not select.
fn mask_sections(m: &mut FteMatchParam, enable: u8) {
    if enable & match_criteria::OUTER_HEADERS == 0 {
        *m.outer_headers_mut() = Default::default();
    }
    if enable & match_criteria::MISC_PARAMETERS == 0 {
        *m.misc_parameters_mut() = Default::default();
    }
    if enable & match_criteria::INNER_HEADERS == 0 {
        *m.inner_headers_mut() = Default::default();
    }
    m.misc_parameters_2_mut().fill(0);
    m.misc_parameters_3_mut().fill(0);
    m.misc_parameters_4_mut().fill(0);
    m.misc_parameters_5_mut().fill(0);
}

impl Firmware {
    /// A field of the NIC RX flow table capabilities (`flow_table_properties_nic_receive.*`).
    pub(super) fn nic_rx_cap(&self, name: &str) -> u64 {
        self.caps.flow_nic_rx(name)
    }

    pub(super) fn flow_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            cmds::CreateFlowTable::OPCODE => self.create_flow_table(input, out),
            cmds::DestroyFlowTable::OPCODE => {
                let inp = cmd_in::<cmds::DestroyFlowTable>(input)?;
                let id = inp.table_id();
                let Some(t) = self.flow_tables.get(&id) else {
                    fail!(
                        BAD_RES,
                        "DESTROY_FLOW_TABLE of a table that does not exist",
                        "{id:#x}"
                    );
                };
                if !t.groups.is_empty() {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_FLOW_TABLE of a table that still has flow groups",
                        "table {id:#x}: {} groups",
                        t.groups.len()
                    );
                }
                self.flow_tables.remove(&id);
                self.flow_root.retain(|_, r| *r != id);
                Ok(())
            }
            cmds::SetFlowTableRoot::OPCODE => {
                let inp = cmd_in::<cmds::SetFlowTableRoot>(input)?;
                let ty = inp.table_type() as u8;
                let id = inp.table_id();
                // op_mod 1 disconnects the root (fs_cmd.c mlx5_cmd_update_root_ft).
                if id == 0 || inp.op_mod() == 1 {
                    self.flow_root.remove(&ty);
                    return Ok(());
                }
                match self.flow_tables.get(&id) {
                    Some(t) if t.ty == ty => {
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
            cmds::QueryFlowTable::OPCODE => {
                let inp = cmd_in::<cmds::QueryFlowTable>(input)?;
                let t = self.table(inp.table_id(), inp.table_type(), "QUERY_FLOW_TABLE")?;
                let (level, log_size, miss) = (t.level, t.log_size, t.miss);
                let c = cmd_out::<cmds::QueryFlowTable>(out)?.flow_table_context_mut();
                c.set_level(level.into());
                c.set_log_size(log_size.into());
                if let Miss::Forward(to) = miss {
                    c.set_table_miss_action(miss_action::FWD.into());
                    c.set_table_miss_id(to);
                }
                Ok(())
            }
            cmds::ModifyFlowTable::OPCODE => {
                let inp = cmd_in::<cmds::ModifyFlowTable>(input)?;
                let id = inp.table_id();
                let level = self.table(id, inp.table_type(), "MODIFY_FLOW_TABLE")?.level;
                if self.nic_rx_cap("flow_table_modify") == 0 {
                    fail!(
                        BAD_OP,
                        "MODIFY_FLOW_TABLE without flow_table_modify",
                        "table {id:#x}"
                    );
                }
                if inp.modify_field_select() != MODIFY_FLOW_TABLE_MISS_TABLE_ID {
                    fail!(
                        BAD_PARAM,
                        "MODIFY_FLOW_TABLE of fields other than the miss table",
                        "modify_field_select {:#x}",
                        inp.modify_field_select()
                    );
                }
                let c = inp.flow_table_context();
                let miss = self.parse_miss(c.table_miss_action(), c.table_miss_id(), level)?;
                self.flow_tables.get_mut(&id).expect("checked").miss = miss;
                Ok(())
            }
            cmds::CreateFlowGroup::OPCODE => self.create_flow_group(input, out),
            cmds::DestroyFlowGroup::OPCODE => {
                let inp = cmd_in::<cmds::DestroyFlowGroup>(input)?;
                let gid = inp.group_id();
                let t = self.table_mut(inp.table_id(), inp.table_type(), "DESTROY_FLOW_GROUP")?;
                if !t.groups.contains_key(&gid) {
                    fail!(
                        BAD_RES,
                        "DESTROY_FLOW_GROUP of a group that does not exist",
                        "group {gid:#x}"
                    );
                }
                if let Some(e) = t.entries.values().find(|e| e.group == gid) {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_FLOW_GROUP of a group that still has entries",
                        "group {gid:#x}, entry {}",
                        e.index
                    );
                }
                t.groups.remove(&gid);
                Ok(())
            }
            cmds::SetFlowTableEntry::OPCODE => self.set_fte(input),
            cmds::DeleteFlowTableEntry::OPCODE => {
                let inp = cmd_in::<cmds::DeleteFlowTableEntry>(input)?;
                let idx = inp.flow_index();
                let t =
                    self.table_mut(inp.table_id(), inp.table_type(), "DELETE_FLOW_TABLE_ENTRY")?;
                if t.entries.remove(&idx).is_none() {
                    fail!(
                        BAD_RES,
                        "DELETE_FLOW_TABLE_ENTRY of an entry that does not exist",
                        "index {idx}"
                    );
                }
                Ok(())
            }
            cmds::AllocFlowCounter::OPCODE => {
                let inp = cmd_in::<cmds::AllocFlowCounter>(input)?;
                if inp.flow_counter_bulk() != 0 || inp.flow_counter_bulk_log_size() != 0 {
                    fail!(
                        BAD_PARAM,
                        "ALLOC_FLOW_COUNTER in bulk, which is not supported"
                    );
                }
                let max = 1u64 << self.nic_rx_cap("log_max_flow_counter").max(16);
                if self.nic.flow_counters.len() as u64 >= max {
                    fail!(NO_RES, "ALLOC_FLOW_COUNTER: no flow counters left");
                }
                let id = self.alloc_id();
                self.nic.flow_counters.insert(id, Default::default());
                cmd_out::<cmds::AllocFlowCounter>(out)?.set_flow_counter_id(id);
                Ok(())
            }
            cmds::DeallocFlowCounter::OPCODE => {
                let id = cmd_in::<cmds::DeallocFlowCounter>(input)?.flow_counter_id();
                if !self.nic.flow_counters.contains_key(&id) {
                    fail!(
                        BAD_RES,
                        "DEALLOC_FLOW_COUNTER of a counter not allocated",
                        "{id:#x}"
                    );
                }
                if let Some((t, i)) = self.counter_user(id) {
                    fail!(
                        BAD_RES_STATE,
                        "DEALLOC_FLOW_COUNTER of a counter an entry still counts into",
                        "counter {id:#x}, table {t:#x} entry {i}"
                    );
                }
                self.nic.flow_counters.remove(&id);
                Ok(())
            }
            cmds::QueryFlowCounter::OPCODE => {
                let inp = cmd_in::<cmds::QueryFlowCounter>(input)?;
                let base = inp.flow_counter_id();
                let n = inp.num_of_counters().max(1);
                let ids: Vec<u32> = (0..n).map(|i| base.wrapping_add(i)).collect();
                if let Some(bad) = ids.iter().find(|i| !self.nic.flow_counters.contains_key(i)) {
                    fail!(
                        BAD_RES,
                        "QUERY_FLOW_COUNTER of a counter not allocated",
                        "{bad:#x}"
                    );
                }
                if out.len() < QueryFlowCounterOut::SIZE + n as usize * 16 {
                    fail!(
                        BAD_OUTP_LEN,
                        "QUERY_FLOW_COUNTER output too short for the counters",
                        "{n} counters in {} bytes",
                        out.len()
                    );
                }
                for (i, id) in ids.iter().enumerate() {
                    let c = self.nic.flow_counters.get_mut(id).expect("checked");
                    let s = QueryFlowCounterOut::flow_statistics_mut(out, i).expect("sized");
                    s.set_packets(c.packets);
                    s.set_octets(c.octets);
                    if inp.clear() != 0 {
                        *c = Default::default();
                    }
                }
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    fn table(&self, id: u32, ty: u32, what: &'static str) -> Result<&FlowTable, CmdError> {
        match self.flow_tables.get(&id) {
            Some(t) if u32::from(t.ty) == ty => Ok(t),
            _ => Err(CmdError::new(
                cx4_hw::status::BAD_RES,
                "flow table command on a table that does not exist",
                format!("{what}: table {id:#x} type {ty}"),
            )),
        }
    }

    fn table_mut(
        &mut self,
        id: u32,
        ty: u32,
        what: &'static str,
    ) -> Result<&mut FlowTable, CmdError> {
        self.table(id, ty, what)?;
        Ok(self.flow_tables.get_mut(&id).expect("checked"))
    }

    /// Checks a miss action of a table at `level`: forward only to an existing NIC RX table
    /// of a higher level.
    fn parse_miss(&self, act: u32, id: u32, level: u8) -> Result<Miss, CmdError> {
        match act as u8 {
            miss_action::DEF => Ok(Miss::Default),
            miss_action::FWD => match self.flow_tables.get(&id) {
                Some(t) if t.level > level => Ok(Miss::Forward(id)),
                Some(t) => fail!(
                    BAD_PARAM,
                    "flow table missing to a table that is not at a higher level",
                    "table {id:#x} at level {} <= {level}",
                    t.level
                ),
                None => fail!(
                    BAD_RES,
                    "CREATE_FLOW_TABLE missing to a table that does not exist",
                    "{id:#x}"
                ),
            },
            a => fail!(BAD_PARAM, "flow table miss action not supported", "{a}"),
        }
    }

    fn create_flow_table(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateFlowTable>(input)?;
        let ty = inp.table_type() as u8;
        if ty != table_type::NIC_RX || inp.other_vport() != 0 || inp.op_mod() != 0 {
            fail!(
                BAD_PARAM,
                "CREATE_FLOW_TABLE of an unsupported table type",
                "type {ty} op_mod {}",
                inp.op_mod()
            );
        }
        let c = inp.flow_table_context();
        let max_level = self.nic_rx_cap("max_ft_level").max(1) as u32;
        let max_size = self.nic_rx_cap("log_max_ft_size").max(1) as u32;
        if c.level() > max_level || c.log_size() > max_size {
            fail!(
                BAD_PARAM,
                "CREATE_FLOW_TABLE level or size out of range",
                "level {} (max {max_level}) log_size {} (max {max_size})",
                c.level(),
                c.log_size()
            );
        }
        if c.decap_en() != 0
            || c.reformat_en() != 0
            || c.termination_table() != 0
            || c.sw_owner() != 0
        {
            fail!(
                BAD_PARAM,
                "CREATE_FLOW_TABLE with decap, reformat, termination or SW ownership"
            );
        }
        let level = c.level() as u8;
        let miss = self.parse_miss(c.table_miss_action(), c.table_miss_id(), level)?;
        let max_tables = 1u64 << self.nic_rx_cap("log_max_ft_num").max(1);
        if self.flow_tables.len() as u64 >= max_tables {
            fail!(NO_RES, "CREATE_FLOW_TABLE: no flow tables left");
        }
        let id = self.alloc_id();
        self.flow_tables.insert(
            id,
            FlowTable {
                id,
                ty,
                level,
                log_size: c.log_size() as u8,
                miss,
                groups: BTreeMap::new(),
                entries: BTreeMap::new(),
            },
        );
        cmd_out::<cmds::CreateFlowTable>(out)?.set_table_id(id);
        Ok(())
    }

    fn create_flow_group(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateFlowGroup>(input)?;
        let (start, end) = (inp.start_flow_index(), inp.end_flow_index());
        let enable = inp.match_criteria_enable() as u8;
        let mut criteria = Box::new(*inp.match_criteria());
        mask_sections(&mut criteria, enable);
        if inp.group_type() != 0 || inp.other_vport() != 0 {
            fail!(
                BAD_PARAM,
                "CREATE_FLOW_GROUP of an unsupported group type",
                "{}",
                inp.group_type()
            );
        }
        if enable & !SUPPORTED_CRITERIA != 0 {
            fail!(
                BAD_PARAM,
                "CREATE_FLOW_GROUP matching on sections NIC RX does not support",
                "match_criteria_enable {enable:#x}"
            );
        }
        let size = {
            let t = self.table(inp.table_id(), inp.table_type(), "CREATE_FLOW_GROUP")?;
            if let Some(g) = t.groups.values().find(|g| start <= g.end && g.start <= end) {
                fail!(
                    BAD_PARAM,
                    "CREATE_FLOW_GROUP overlapping another group",
                    "{start}..={end} overlaps group {:#x} {}..={}",
                    g.id,
                    g.start,
                    g.end
                );
            }
            1u64 << t.log_size
        };
        if start > end || u64::from(end) >= size {
            fail!(
                BAD_PARAM,
                "CREATE_FLOW_GROUP index range outside the table",
                "{start}..={end} in a table of {size}"
            );
        }
        let id = self.alloc_id();
        let t = self.flow_tables.get_mut(&inp.table_id()).expect("checked");
        t.groups.insert(
            id,
            FlowGroup {
                id,
                start,
                end,
                criteria_enable: enable,
                criteria,
            },
        );
        cmd_out::<cmds::CreateFlowGroup>(out)?.set_group_id(id);
        Ok(())
    }

    fn set_fte(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::SetFlowTableEntry>(input)?;
        let tid = inp.table_id();
        let idx = inp.flow_index();
        let c = inp.flow_context();
        let modify = inp.op_mod() as u16 == SET_FTE_OP_MOD_MODIFY;
        if inp.op_mod() > 1 {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY with an unknown op_mod",
                "{}",
                inp.op_mod()
            );
        }
        if modify && self.nic_rx_cap("flow_modify_en") == 0 {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY modify without flow_modify_en"
            );
        }
        let t = self.table(tid, inp.table_type(), "SET_FLOW_TABLE_ENTRY")?;
        let level = t.level;
        let Some(group) = t.groups.values().find(|g| (g.start..=g.end).contains(&idx)) else {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY index outside every flow group",
                "index {idx}"
            );
        };
        if c.group_id() != group.id {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY in another group than its index's",
                "index {idx} is in group {:#x}, entry names {:#x}",
                group.id,
                c.group_id()
            );
        }
        let gid = group.id;
        match (modify, t.entries.contains_key(&idx)) {
            (false, true) => fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY of an index already in use",
                "index {idx}"
            ),
            (true, false) => fail!(
                BAD_RES,
                "SET_FLOW_TABLE_ENTRY modify of an entry that does not exist",
                "index {idx}"
            ),
            _ => {}
        }
        let act = c.action();
        if act & !SUPPORTED_ACTIONS != 0 {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY with unsupported actions",
                "action {act:#x}"
            );
        }
        if act & action::DROP != 0 && act & (action::FWD_DEST | action::ALLOW) != 0 {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY both dropping and forwarding",
                "action {act:#x}"
            );
        }
        if c.extended_destination() != 0 || c.packet_reformat_id() != 0 || c.modify_header_id() != 0
        {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY with extended destinations, reformat or header rewrite"
            );
        }
        let ndest = if act & action::FWD_DEST != 0 {
            c.destination_list_size()
        } else {
            0
        };
        let ncnt = if act & action::COUNT != 0 {
            c.flow_counter_list_size()
        } else {
            0
        };
        let max_dest = 1u32 << self.nic_rx_cap("log_max_destination").min(16);
        if (act & action::FWD_DEST != 0 && !(1..=max_dest).contains(&ndest))
            || (act & action::COUNT != 0 && ncnt == 0)
        {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY destination or counter list size out of range",
                "{ndest} destinations (max {max_dest}), {ncnt} counters"
            );
        }
        let need = SetFteIn::SIZE + (ndest + ncnt) as usize * DEST_STRIDE;
        if input.len() < need {
            fail!(
                BAD_INP_LEN,
                "SET_FLOW_TABLE_ENTRY shorter than its destination list",
                "{} < {need}",
                input.len()
            );
        }
        let ignore_level = inp.ignore_flow_level() != 0;
        if ignore_level && self.nic_rx_cap("ignore_flow_level") == 0 {
            fail!(
                BAD_PARAM,
                "SET_FLOW_TABLE_ENTRY ignoring flow levels, which is not supported"
            );
        }
        let mut dests = Vec::with_capacity(ndest as usize);
        for i in 0..ndest as usize {
            let d = fte_destination(input, i).expect("length checked");
            let id = d.destination_id();
            dests.push(match d.destination_type() as u8 {
                dest_type::FLOW_TABLE => match self.flow_tables.get(&id) {
                    Some(to)
                        if to.ty == table_type::NIC_RX && (to.level > level || ignore_level) =>
                    {
                        Dest::Table(id)
                    }
                    Some(to) => fail!(
                        BAD_PARAM,
                        "flow table entry forwarding to a table that is not at a higher level",
                        "table {id:#x} at level {} <= {level}",
                        to.level
                    ),
                    None => fail!(
                        BAD_RES,
                        "flow table entry forwarding to a table that does not exist",
                        "{id:#x}"
                    ),
                },
                dest_type::TIR => {
                    if !self.nic.tirs.contains_key(&id) {
                        fail!(
                            BAD_RES,
                            "flow table entry forwarding to a TIR that does not exist",
                            "TIR {id:#x}"
                        );
                    }
                    Dest::Tir(id)
                }
                ty => fail!(
                    BAD_PARAM,
                    "flow table entry destination type not supported on NIC RX",
                    "type {ty}"
                ),
            });
        }
        let mut counters = Vec::with_capacity(ncnt as usize);
        for i in 0..ncnt as usize {
            let id = fte_counter(input, ndest as usize + i)
                .expect("length checked")
                .flow_counter_id();
            if !self.nic.flow_counters.contains_key(&id) {
                fail!(
                    BAD_RES,
                    "flow table entry counting into a counter not allocated",
                    "{id:#x}"
                );
            }
            counters.push(id);
        }
        let mut value = Box::new(*c.match_value());
        let enable = self.flow_tables[&tid].groups[&gid].criteria_enable;
        mask_sections(&mut value, enable);
        let new = Fte {
            index: idx,
            group: gid,
            action: act,
            flow_tag: c.flow_tag(),
            dests,
            counters,
            value,
        };
        let t = self.flow_tables.get_mut(&tid).expect("checked");
        if modify {
            let mask = inp.modify_enable_mask();
            let e = t.entries.get_mut(&idx).expect("checked");
            if mask & (1 << fte_modify::ACTION) != 0 {
                e.action = new.action;
            }
            if mask & (1 << fte_modify::FLOW_TAG) != 0 {
                e.flow_tag = new.flow_tag;
            }
            if mask & (1 << fte_modify::DESTINATION_LIST) != 0 {
                e.dests = new.dests;
            }
            if mask & (1 << fte_modify::FLOW_COUNTERS) != 0 {
                e.counters = new.counters;
            }
        } else {
            t.entries.insert(idx, new);
        }
        Ok(())
    }

    /// The first flow table entry forwarding to `(dest_type, id)`, as (table, index).
    pub(super) fn flow_ref_to(&self, ty: u8, id: u32) -> Option<(u32, u32)> {
        let want = match ty {
            dest_type::TIR => Dest::Tir(id),
            _ => Dest::Table(id),
        };
        self.flow_tables.values().find_map(|t| {
            t.entries
                .values()
                .find(|e| e.dests.contains(&want))
                .map(|e| (t.id, e.index))
        })
    }

    fn counter_user(&self, id: u32) -> Option<(u32, u32)> {
        self.flow_tables.values().find_map(|t| {
            t.entries
                .values()
                .find(|e| e.counters.contains(&id))
                .map(|e| (t.id, e.index))
        })
    }

    /// Adds one packet of `bytes` bytes to each flow counter in `ids` (the counters a
    /// steering decision lists); unknown ids are ignored.
    pub fn count_flow(&mut self, ids: &[u32], bytes: u64) {
        for id in ids {
            if let Some(c) = self.nic.flow_counters.get_mut(id) {
                c.packets += 1;
                c.octets += bytes;
            }
        }
    }
}

/// A flow counter's packets and octets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCount {
    /// Packets.
    pub packets: u64,
    /// Octets.
    pub octets: u64,
}
