// SPDX-License-Identifier: GPL-2.0
//! NIC RX flow tables, groups and entries (fs_cmd.c), and the chain of the tables at the
//! NIC RX root (fs_core.c `connect_prev_fts`, `update_root_ft`): the function's receive
//! steering is one chain in level order, the RDMA layer's BYPASS tables (its users'
//! `ibv_create_flow` rules, one table per priority) ahead of the Ethernet layer's first
//! table. The first table of the chain is the root (`SET_FLOW_TABLE_ROOT`), each table misses
//! to the next (`MODIFY_FLOW_TABLE`), and a table joining or leaving the chain relinks its
//! neighbours before it exists or after it is unlinked, so a frame never meets a destroyed
//! table. Each table, group and entry is an owner that removes itself from the device in
//! `Drop`.

use cx4_hw::{
    command,
    flow::{
        action,
        dest_type,
        fte_destination_mut,
        match_criteria,
        miss_action,
        table_type,
        FteMatchSetLyr24,
        DEST_STRIDE, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// The levels of the BYPASS tables (mlx5_core's `MLX5_BY_PASS_NUM_PRIOS` priorities of one
/// level each): the kernel's (the Ethernet layer's) tables come after them.
pub(crate) const BYPASS_LEVELS: u32 = 33;

/// `modify_field_select` of `MODIFY_FLOW_TABLE`: the miss table (`MLX5_MODIFY_FLOW_TABLE_MISS_TABLE_ID`).
const MODIFY_MISS_TABLE_ID: u32 = 1 << 0;

/// Where an entry forwards to.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dest {
    /// Another flow table (of a higher level).
    Table(u32),
    /// A TIR.
    Tir(u32),
    /// No forwarding: the frame is dropped.
    Drop,
}

/// A NIC RX flow table. Dropping it destroys it (its groups must be gone).
pub(crate) struct FlowTable {
    mdev: Arc<Mdev>,
    id: u32,
}

impl FlowTable {
    /// A table at `level` of `2^log_size` entries; a frame no entry matches goes on to table
    /// `miss` if given, else is dropped.
    pub(crate) fn create(
        mdev: &Arc<Mdev>,
        level: u32,
        log_size: u32,
        miss: Option<u32>,
    ) -> Result<Self> {
        let mut m = input::<command::CreateFlowTable>(0)?;
        m.set_table_type(table_type::NIC_RX.into());
        let c = m.flow_table_context_mut();
        c.set_level(level);
        c.set_log_size(log_size);
        if let Some(id) = miss {
            c.set_table_miss_action(miss_action::FWD.into());
            c.set_table_miss_id(id);
        }
        let out = mdev.cmdq.exec::<command::CreateFlowTable>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            id: out.table_id(),
        })
    }

    /// The table id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// A flow group over entries `start..=end` matching the outer header fields `criteria`
    /// sets (none: every frame).
    pub(crate) fn group(
        &self,
        start: u32,
        end: u32,
        criteria: Option<&dyn Fn(&mut FteMatchSetLyr24)>,
    ) -> Result<FlowGroup> {
        let mut m = input::<command::CreateFlowGroup>(0)?;
        m.set_table_type(table_type::NIC_RX.into());
        m.set_table_id(self.id);
        m.set_start_flow_index(start);
        m.set_end_flow_index(end);
        if let Some(f) = criteria {
            m.set_match_criteria_enable(match_criteria::OUTER_HEADERS.into());
            f(m.match_criteria_mut().outer_headers_mut());
        }
        let out = self.mdev.cmdq.exec::<command::CreateFlowGroup>(&m, 0)?;
        Ok(FlowGroup {
            mdev: self.mdev.clone(),
            table: self.id,
            id: out.group_id(),
        })
    }

    /// An entry at `index` of `group` matching the outer header values `value` sets,
    /// forwarding to `dest` (or dropping).
    pub(crate) fn entry(
        &self,
        group: &FlowGroup,
        index: u32,
        value: &dyn Fn(&mut FteMatchSetLyr24),
        dest: Dest,
    ) -> Result<Fte> {
        self.tagged_entry(group, index, value, dest, 0)
    }

    /// As [`FlowTable::entry`], with the flow tag `tag` in the CQEs of the frames it
    /// forwards (0: none; the tag is 24 bits).
    pub(crate) fn tagged_entry(
        &self,
        group: &FlowGroup,
        index: u32,
        value: &dyn Fn(&mut FteMatchSetLyr24),
        dest: Dest,
        tag: u32,
    ) -> Result<Fte> {
        if tag >= 1 << 24 {
            return Err(EINVAL);
        }
        let mut m = input::<command::SetFlowTableEntry>(DEST_STRIDE)?;
        m.set_table_type(table_type::NIC_RX.into());
        m.set_table_id(self.id);
        m.set_flow_index(index);
        let to = match dest {
            Dest::Table(id) => Some((dest_type::FLOW_TABLE, id)),
            Dest::Tir(id) => Some((dest_type::TIR, id)),
            Dest::Drop => None,
        };
        {
            let c = m.flow_context_mut();
            c.set_group_id(group.id);
            c.set_flow_tag(tag);
            c.set_action(if to.is_some() {
                action::FWD_DEST
            } else {
                action::DROP
            });
            c.set_destination_list_size(to.is_some().into());
            value(c.match_value_mut().outer_headers_mut());
        }
        if let Some((ty, id)) = to {
            let d = fte_destination_mut(m.bytes_mut(), 0).ok_or(EINVAL)?;
            d.set_destination_type(ty.into());
            d.set_destination_id(id);
        }
        self.mdev.cmdq.exec::<command::SetFlowTableEntry>(&m, 0)?;
        Ok(Fte {
            mdev: self.mdev.clone(),
            table: self.id,
            index,
        })
    }
}

impl Drop for FlowTable {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyFlowTable>(0) {
            m.set_table_type(table_type::NIC_RX.into());
            m.set_table_id(self.id);
            let _ = self.mdev.cmdq.exec::<command::DestroyFlowTable>(&m, 0);
        }
    }
}

/// A flow group. Dropping it destroys it (its entries must be gone).
pub(crate) struct FlowGroup {
    mdev: Arc<Mdev>,
    table: u32,
    id: u32,
}

impl Drop for FlowGroup {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyFlowGroup>(0) {
            m.set_table_type(table_type::NIC_RX.into());
            m.set_table_id(self.table);
            m.set_group_id(self.id);
            let _ = self.mdev.cmdq.exec::<command::DestroyFlowGroup>(&m, 0);
        }
    }
}

/// A flow table entry. Dropping it deletes it.
pub(crate) struct Fte {
    mdev: Arc<Mdev>,
    table: u32,
    index: u32,
}

impl Fte {
    /// Its index in the table.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }
}

impl Drop for Fte {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DeleteFlowTableEntry>(0) {
            m.set_table_type(table_type::NIC_RX.into());
            m.set_table_id(self.table);
            m.set_flow_index(self.index);
            let _ = self.mdev.cmdq.exec::<command::DeleteFlowTableEntry>(&m, 0);
        }
    }
}

/// Points table `id` (at `level`) at `next` on a miss (`mlx5_cmd_modify_flow_table`), or
/// makes a miss drop the frame.
fn set_miss(mdev: &Mdev, id: u32, level: u32, next: Option<u32>) -> Result {
    let mut m = input::<command::ModifyFlowTable>(0)?;
    m.set_table_type(table_type::NIC_RX.into());
    m.set_table_id(id);
    m.set_modify_field_select(MODIFY_MISS_TABLE_ID);
    let c = m.flow_table_context_mut();
    c.set_level(level);
    if let Some(n) = next {
        c.set_table_miss_action(miss_action::FWD.into());
        c.set_table_miss_id(n);
    }
    mdev.cmdq
        .exec::<command::ModifyFlowTable>(&m, 0)
        .map(|_| ())
}

/// Makes table `id` the NIC RX root, or disconnects the root (`mlx5_cmd_update_root_ft`).
fn set_root(mdev: &Mdev, id: Option<u32>) -> Result {
    let mut m = input::<command::SetFlowTableRoot>(0)?;
    m.set_table_type(table_type::NIC_RX.into());
    match id {
        Some(id) => m.set_table_id(id),
        None => m.set_op_mod(1),
    }
    mdev.cmdq
        .exec::<command::SetFlowTableRoot>(&m, 0)
        .map(|_| ())
}

/// The chain of NIC RX tables at the root (in the [`Mdev`]): the BYPASS tables in level
/// order, then the kernel's first table if it has one.
#[derive(Default)]
pub(crate) struct RxChain {
    /// (level, table id) of the BYPASS tables, ascending.
    bypass: KVec<(u32, u32)>,
    /// The kernel's (the Ethernet layer's) first table.
    kernel: Option<u32>,
}

impl RxChain {
    /// What a table at position `i` of the BYPASS list misses to.
    fn next(&self, i: usize) -> Option<u32> {
        self.bypass.get(i).map(|&(_, id)| id).or(self.kernel)
    }

    /// Points what comes before position `i` (the root, or the BYPASS table before it) at
    /// `to`.
    fn link_before(&self, mdev: &Mdev, i: usize, to: Option<u32>) -> Result {
        match i.checked_sub(1).and_then(|p| self.bypass.get(p)) {
            Some(&(level, id)) => set_miss(mdev, id, level, to),
            None => set_root(mdev, to),
        }
    }
}

/// The kernel's first NIC RX table, made the root or linked behind the BYPASS tables until
/// this is dropped (before the table is destroyed).
pub(crate) struct KernelRoot {
    mdev: Arc<Mdev>,
}

impl KernelRoot {
    /// Places `table` at the end of the chain (en_fs.c: the kernel priorities after the
    /// BYPASS ones).
    pub(crate) fn link(mdev: &Arc<Mdev>, table: &FlowTable) -> Result<Self> {
        let mut c = mdev.rx_chain.lock();
        c.link_before(mdev, c.bypass.len(), Some(table.id))?;
        c.kernel = Some(table.id);
        Ok(Self { mdev: mdev.clone() })
    }
}

impl Drop for KernelRoot {
    fn drop(&mut self) {
        let mut c = self.mdev.rx_chain.lock();
        c.kernel = None;
        // With no BYPASS table the root goes with the table itself.
        if !c.bypass.is_empty() {
            let _ = c.link_before(&self.mdev, c.bypass.len(), None);
        }
    }
}

/// A BYPASS table in the chain: unlinked (its neighbours relinked), then destroyed, on drop.
pub(crate) struct BypassTable {
    table: FlowTable,
}

impl BypassTable {
    /// A table at `level` (below [`BYPASS_LEVELS`]) of `2^log_size` entries, linked into the
    /// chain (fs_core.c `__mlx5_create_flow_table`: create, missing to the next table, then
    /// `connect_prev_fts` or `update_root_ft`). `EEXIST` if the level has a table.
    pub(crate) fn create(mdev: &Arc<Mdev>, level: u32, log_size: u32) -> Result<Self> {
        if level >= BYPASS_LEVELS {
            return Err(EINVAL);
        }
        let mut c = mdev.rx_chain.lock();
        let i = c.bypass.partition_point(|&(l, _)| l < level);
        if c.bypass.get(i).is_some_and(|&(l, _)| l == level) {
            return Err(EEXIST);
        }
        c.bypass.reserve(1, GFP_KERNEL)?;
        let table = FlowTable::create(mdev, level, log_size, c.next(i))?;
        c.link_before(mdev, i, Some(table.id))?;
        c.bypass
            .insert_within_capacity(i, (level, table.id))
            .map_err(|_| ENOMEM)?;
        Ok(Self { table })
    }

    /// The table.
    pub(crate) fn table(&self) -> &FlowTable {
        &self.table
    }
}

impl Drop for BypassTable {
    fn drop(&mut self) {
        let mdev = self.table.mdev.clone();
        let mut c = mdev.rx_chain.lock();
        if let Some(i) = c.bypass.iter().position(|&(_, id)| id == self.table.id) {
            let next = c.next(i + 1);
            let _ = c.link_before(&mdev, i, next);
            let _ = c.bypass.remove(i);
        }
        // `table` is destroyed after this, unlinked.
    }
}
