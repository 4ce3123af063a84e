//! Work queues of the Ethernet data path: CREATE/MODIFY/QUERY/DESTROY_SQ and _RQ.
//!
//! Both carry a `wq` (ring geometry, PD, doorbell record, page list) which is checked once
//! ([`WqDesc::parse`]). SQs move RST → RDY → ERR → RST/RDY with MODIFY_SQ; RQs RST → RDY → ERR →
//! RST, and RDY → RDY to change VLAN stripping, FCS scatter or the queue counter. Both also go
//! RST → RST and RST → ERR, as mlx5_ib's raw packet QPs move them. The data path
//! reads the state and ring through [`Firmware::sq`] / [`Firmware::rq`].

use cx4_hw::{
    caps::net::inline_mode as cap_inline_mode,
    command::{self as cmds, Command},
    wq::{
        inline_mode, rqc_state, sqc_state, wq_type, CreateRqIn, CreateSqIn, Rqc, Sqc, Wq,
        MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID, MODIFY_RQ_BITMASK_SCATTER_FCS, MODIFY_RQ_BITMASK_VSD,
    },
};

use super::{cmd_in, cmd_out, fail, need_out, ring_pas, Bus, CmdError, CmdResult, Firmware};

/// Bytes of a send WQE basic block (`MLX5_SEND_WQE_BB`): the SQ stride.
pub const SEND_WQE_BB_SHIFT: u32 = 6;
/// Smallest receive WQE stride: one 16-byte data segment.
pub const MIN_RQ_STRIDE_SHIFT: u32 = 4;

/// Queue state (the PRM's RST/RDY/ERR, shared by SQs and RQs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueState {
    /// Reset: no WQE is executed, the ring indices restart.
    Rst,
    /// Ready: doorbells execute WQEs.
    Rdy,
    /// Error: flushed; only MODIFY to RST (or RDY for SQs) leaves it.
    Err,
}

impl QueueState {
    fn from_prm(v: u32) -> Option<Self> {
        match u8::try_from(v).ok()? {
            sqc_state::RST => Some(QueueState::Rst),
            sqc_state::RDY => Some(QueueState::Rdy),
            sqc_state::ERR => Some(QueueState::Err),
            _ => None,
        }
    }

    /// The PRM encoding (same for `sqc.state` and `rqc.state`).
    pub fn prm(self) -> u8 {
        match self {
            QueueState::Rst => sqc_state::RST,
            QueueState::Rdy => sqc_state::RDY,
            QueueState::Err => sqc_state::ERR,
        }
    }
}

/// A checked `wq`: what the data path needs to find WQEs and the doorbell record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WqDesc {
    /// `wq_type` (cyclic for SQs and legacy RQs).
    pub wq_type: u8,
    /// log2 of the WQE stride in bytes.
    pub log_stride: u8,
    /// log2 of the number of WQEs.
    pub log_size: u8,
    /// log2 of the ring page size.
    pub page_shift: u8,
    /// Ring pages (guest addresses).
    pub pas: Vec<u64>,
    /// Offset of the ring in its first page, bytes (`page_offset` counts 64ths of a page:
    /// mlx5_ib places a user RMP's ring where its umem starts inside a large page).
    pub offset: u64,
    /// Doorbell record (receive counter at +0, send counter at +4).
    pub dbr: u64,
    /// Protection domain of the WQEs' lkeys.
    pub pd: u32,
    /// UAR page of the SQ doorbell (0 for RQs).
    pub uar_page: u32,
    /// End padding mode (RQ).
    pub end_padding_mode: u8,
}

impl WqDesc {
    /// Checks a `wq` whose page list is `pas(msg, i)`: type, stride and size within the caps,
    /// PD allocated, doorbell record in guest memory, one aligned mapped page per ring page.
    pub(super) fn parse(
        fw: &Firmware,
        ctx: &Bus,
        wq: &Wq,
        msg: &[u8],
        pas: impl Fn(&[u8], usize) -> Option<u64>,
        what: &'static str,
    ) -> Result<WqDesc, CmdError> {
        let log_size = wq.log_wq_sz();
        let max = fw.caps.general("log_max_wq_sz") as u32;
        if log_size > max {
            return Err(CmdError::new(
                cx4_hw::status::BAD_PARAM,
                "work queue larger than log_max_wq_sz",
                format!("{what}: log_wq_sz {log_size} (max {max})"),
            ));
        }
        let page_shift = 12 + wq.log_wq_pg_sz();
        if page_shift > 30 {
            return Err(CmdError::new(
                cx4_hw::status::BAD_PARAM,
                "work queue page geometry unsupported",
                format!(
                    "{what}: log_wq_pg_sz {} page_offset {}",
                    wq.log_wq_pg_sz(),
                    wq.page_offset()
                ),
            ));
        }
        let pd = wq.pd();
        // PD 0 is never allocated; mlx5e's drop RQ leaves it 0 (en/params.c
        // mlx5e_build_drop_rq_param), and its WQEs are never posted, so accept it as "no PD".
        if pd != 0 && !fw.pds.contains_key(&pd) {
            return Err(CmdError::new(
                cx4_hw::status::BAD_RES,
                "work queue in a PD that does not exist",
                format!("{what}: PD {pd:#x}"),
            ));
        }
        let dbr = wq.dbr_addr();
        let mut b = [0u8; 8];
        if !dbr.is_multiple_of(8) || ctx.mem.read(dbr, &mut b).is_err() {
            return Err(CmdError::new(
                cx4_hw::status::BAD_PARAM,
                "work queue doorbell record not in guest memory",
                format!("{what}: {dbr:#x}"),
            ));
        }
        let bytes = 1u64 << (log_size + wq.log_wq_stride());
        let offset = u64::from(wq.page_offset()) << (page_shift - 6);
        let list = ring_pas(&ctx.mem, msg, offset + bytes, page_shift, pas)?;
        Ok(WqDesc {
            wq_type: wq.wq_type() as u8,
            log_stride: wq.log_wq_stride() as u8,
            log_size: log_size as u8,
            page_shift: page_shift as u8,
            pas: list,
            offset,
            dbr,
            pd,
            uar_page: wq.uar_page(),
            end_padding_mode: wq.end_padding_mode() as u8,
        })
    }

    /// Guest address of WQE `idx` (wrapping), or `None` if the ring page is missing.
    pub fn wqe_addr(&self, idx: u32) -> Option<u64> {
        let off = u64::from(idx & ((1u32 << self.log_size) - 1)) << self.log_stride;
        super::ring_addr(&self.pas, self.page_shift, self.offset + off)
    }

    fn fill(&self, wq: &mut Wq) {
        wq.set_wq_type(self.wq_type.into());
        wq.set_end_padding_mode(self.end_padding_mode.into());
        wq.set_pd(self.pd);
        wq.set_uar_page(self.uar_page);
        wq.set_dbr_addr(self.dbr);
        wq.set_log_wq_stride(self.log_stride.into());
        wq.set_log_wq_pg_sz(u32::from(self.page_shift) - 12);
        wq.set_page_offset((self.offset >> (self.page_shift - 6)) as u32);
        wq.set_log_wq_sz(self.log_size.into());
    }
}

/// One send queue.
#[derive(Clone, Debug)]
pub struct Sq {
    /// SQ number.
    pub sqn: u32,
    /// State.
    pub state: QueueState,
    /// Completion queue of its CQEs.
    pub cqn: u32,
    /// Transport interface send (none for queues that never reach the wire, like mlx5e's
    /// ICOSQ).
    pub tisn: Option<u32>,
    /// Minimum inline mode the WQEs must honour (`MLX5_INLINE_MODE_*`).
    pub min_inline_mode: u8,
    /// Software parser offsets allowed in WQEs.
    pub allow_swp: bool,
    /// Flush outstanding WQEs with error CQEs on error.
    pub flush_in_error_en: bool,
    /// User index reported in CQEs.
    pub user_index: u32,
    /// May post UMR WQEs (`reg_umr`: mlx5e's ICOSQ, which maps striding RQ pages).
    pub reg_umr: bool,
    /// Ring.
    pub wq: WqDesc,
    /// The device's consumer counter: the next WQE (in basic blocks) the data path executes;
    /// back to 0 whenever the SQ leaves the reset state.
    pub cc: u32,
}

/// One receive queue.
#[derive(Clone, Debug)]
pub struct Rq {
    /// RQ number.
    pub rqn: u32,
    /// State.
    pub state: QueueState,
    /// Completion queue of its CQEs.
    pub cqn: u32,
    /// VLAN strip disable: when false the device strips the outer C-VLAN into the CQE.
    pub vsd: bool,
    /// Scatter the FCS too.
    pub scatter_fcs: bool,
    /// Queue counter counting its out-of-buffer drops (0: none).
    pub counter_set_id: u8,
    /// User index reported in CQEs.
    pub user_index: u32,
    /// Ring.
    pub wq: WqDesc,
    /// The device's consumer counter: the next WQE a frame lands in; back to 0 whenever the RQ
    /// leaves the reset state. A striding RQ counts the WQEs it has taken (the one being
    /// filled included).
    pub cc: u32,
    /// Striding (multi-packet) RQ: geometry and where the device is in it.
    pub striding: Option<Striding>,
}

/// A striding RQ (`MLX5_WQ_TYPE_LINKED_LIST_STRIDING_RQ`): each WQE (a next segment and one
/// data segment) is a buffer of `1 << log_num_strides` strides of `1 << log_stride` bytes;
/// a packet fills whole strides from the next free one, and the WQEs are taken in the order
/// of their `next_wqe_index` links, starting from WQE 0 after a reset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Striding {
    /// log2 of the strides per WQE (3..=16).
    pub log_num_strides: u8,
    /// log2 of the stride size in bytes (6..=13).
    pub log_stride: u8,
    /// The WQE being filled.
    pub cur: Option<StridingWqe>,
    /// The last WQE filled: its `next_wqe_index` names the next (none: WQE 0).
    pub last: Option<u16>,
}

/// The WQE a striding RQ is filling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridingWqe {
    /// Its index in the ring.
    pub index: u16,
    /// Strides used so far.
    pub used: u32,
    /// Its buffer: memory key and address of stride 0.
    pub lkey: u32,
    /// See `lkey`.
    pub addr: u64,
}

impl Striding {
    /// Strides per WQE.
    pub fn num_strides(&self) -> u32 {
        1 << self.log_num_strides
    }

    /// Bytes per stride.
    pub fn stride(&self) -> u32 {
        1 << self.log_stride
    }

    /// Back to the state after a reset: no WQE taken.
    pub fn reset(&mut self) {
        self.cur = None;
        self.last = None;
    }
}

impl Firmware {
    pub(super) fn wq_cmd(
        &mut self,
        ctx: &mut Bus,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            cmds::CreateSq::OPCODE => self.create_sq(ctx, input, out),
            cmds::ModifySq::OPCODE => self.modify_sq(input),
            cmds::QuerySq::OPCODE => {
                let sqn = cmd_in::<cmds::QuerySq>(input)?.sqn();
                let Some(sq) = self.nic.sqs.get(&sqn) else {
                    fail!(
                        BAD_RES,
                        "QUERY_SQ of an SQ that does not exist",
                        "SQ {sqn:#x}"
                    );
                };
                let c = cmd_out::<cmds::QuerySq>(out)?.sq_context_mut();
                fill_sqc(sq, c);
                Ok(())
            }
            cmds::DestroySq::OPCODE => {
                let sqn = cmd_in::<cmds::DestroySq>(input)?.sqn();
                if self.nic.sqs.remove(&sqn).is_none() {
                    fail!(
                        BAD_RES,
                        "DESTROY_SQ of an SQ that does not exist",
                        "SQ {sqn:#x}"
                    );
                }
                Ok(())
            }
            cmds::CreateRq::OPCODE => self.create_rq(ctx, input, out),
            cmds::ModifyRq::OPCODE => self.modify_rq(input),
            cmds::QueryRq::OPCODE => {
                let rqn = cmd_in::<cmds::QueryRq>(input)?.rqn();
                let Some(rq) = self.nic.rqs.get(&rqn) else {
                    fail!(
                        BAD_RES,
                        "QUERY_RQ of an RQ that does not exist",
                        "RQ {rqn:#x}"
                    );
                };
                let c = cmd_out::<cmds::QueryRq>(out)?.rq_context_mut();
                fill_rqc(rq, c);
                Ok(())
            }
            cmds::DestroyRq::OPCODE => {
                let rqn = cmd_in::<cmds::DestroyRq>(input)?.rqn();
                if !self.nic.rqs.contains_key(&rqn) {
                    fail!(
                        BAD_RES,
                        "DESTROY_RQ of an RQ that does not exist",
                        "RQ {rqn:#x}"
                    );
                }
                if let Some(user) = self.rq_user(rqn) {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_RQ of an RQ an RQT or TIR still uses",
                        "RQ {rqn:#x} used by {user}"
                    );
                }
                self.nic.rqs.remove(&rqn);
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    /// Which RQT or TIR refers to `rqn`, if any.
    fn rq_user(&self, rqn: u32) -> Option<String> {
        if let Some(t) = self.nic.rqts.values().find(|t| t.rqns.contains(&rqn)) {
            return Some(format!("RQT {:#x}", t.rqtn));
        }
        self.nic
            .tirs
            .values()
            .find(|t| t.inline_rqn() == Some(rqn))
            .map(|t| format!("TIR {:#x}", t.tirn))
    }

    fn create_sq(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateSq>(input)?;
        let c = inp.ctx();
        if c.state() != u32::from(sqc_state::RST) {
            fail!(
                BAD_PARAM,
                "CREATE_SQ not in the reset state",
                "state {}",
                c.state()
            );
        }
        if c.hairpin() != 0
            || c.non_wire() != 0
            || (c.reg_umr() != 0 && self.caps.eth("reg_umr_sq") == 0)
        {
            fail!(
                BAD_PARAM,
                "CREATE_SQ of an unsupported kind",
                "hairpin {} reg_umr {} non_wire {}",
                c.hairpin(),
                c.reg_umr(),
                c.non_wire()
            );
        }
        let cqn = c.cqn();
        if !self.cqs.contains_key(&cqn) {
            fail!(
                BAD_RES,
                "CREATE_SQ completing to a CQ that does not exist",
                "CQ {cqn:#x}"
            );
        }
        let max_tis = 1u32 << self.caps.general("log_max_tis_per_sq");
        let tisn = match c.tis_lst_sz() {
            0 => None,
            n if n > max_tis => fail!(
                BAD_PARAM,
                "CREATE_SQ with more TISes than log_max_tis_per_sq",
                "{n} (max {max_tis})"
            ),
            _ => {
                let t = c.tis_num_0();
                if !self.nic.tises.contains_key(&t) {
                    fail!(
                        BAD_RES,
                        "CREATE_SQ on a TIS that does not exist",
                        "TIS {t:#x}"
                    );
                }
                Some(t)
            }
        };
        let min_inline = c.min_wqe_inline_mode();
        if min_inline > u32::from(inline_mode::TCP_UDP)
            || (min_inline != 0
                && self.caps.eth("wqe_inline_mode") != u64::from(cap_inline_mode::VPORT_CONTEXT))
        {
            fail!(
                BAD_PARAM,
                "CREATE_SQ minimum inline mode not allowed by the capabilities",
                "min_wqe_inline_mode {min_inline}, cap wqe_inline_mode {}",
                self.caps.eth("wqe_inline_mode")
            );
        }
        if c.allow_swp() != 0 && self.caps.eth("swp") == 0 {
            fail!(
                BAD_PARAM,
                "CREATE_SQ with software parsing, which is not supported"
            );
        }
        let w = c.wq();
        if w.wq_type() != u32::from(wq_type::CYCLIC) || w.log_wq_stride() != SEND_WQE_BB_SHIFT {
            fail!(
                BAD_PARAM,
                "CREATE_SQ ring is not cyclic with 64-byte WQE basic blocks",
                "wq_type {} log_wq_stride {}",
                w.wq_type(),
                w.log_wq_stride()
            );
        }
        if !self.uars.contains_key(&w.uar_page()) {
            fail!(
                BAD_RES,
                "CREATE_SQ on a UAR not allocated",
                "UAR {}",
                w.uar_page()
            );
        }
        let wq = WqDesc::parse(self, ctx, w, input, CreateSqIn::wq_pas, "SQ")?;
        if self.nic.sqs.len() as u64 >= 1u64 << self.caps.general("log_max_sq") {
            fail!(NO_RES, "CREATE_SQ: no SQs left");
        }
        let sqn = self.alloc_id();
        self.nic.sqs.insert(
            sqn,
            Sq {
                sqn,
                state: QueueState::Rst,
                cqn,
                tisn,
                min_inline_mode: min_inline as u8,
                allow_swp: c.allow_swp() != 0,
                flush_in_error_en: c.flush_in_error_en() != 0,
                user_index: c.user_index(),
                reg_umr: c.reg_umr() != 0,
                wq,
                cc: 0,
            },
        );
        cmd_out::<cmds::CreateSq>(out)?.set_sqn(sqn);
        Ok(())
    }

    fn modify_sq(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::ModifySq>(input)?;
        let sqn = inp.sqn();
        let Some(sq) = self.nic.sqs.get_mut(&sqn) else {
            fail!(
                BAD_RES,
                "MODIFY_SQ of an SQ that does not exist",
                "SQ {sqn:#x}"
            );
        };
        let cur = QueueState::from_prm(inp.sq_state());
        if cur != Some(sq.state) {
            fail!(
                BAD_RES_STATE,
                "MODIFY_SQ from a state the SQ is not in",
                "SQ {sqn:#x} is {:?}, sq_state {}",
                sq.state,
                inp.sq_state()
            );
        }
        // Rate limit and QoS group (bits 0, 2) need packet pacing / QoS, which is not offered.
        if inp.modify_bitmask() != 0 {
            fail!(
                BAD_PARAM,
                "MODIFY_SQ of fields that cannot be modified",
                "modify_bitmask {:#x}",
                inp.modify_bitmask()
            );
        }
        let next = QueueState::from_prm(inp.ctx().state());
        use QueueState as Q;
        // RST → RST and RST → ERR: mlx5_ib moves a raw packet QP's SQ so on RST2INIT and on
        // 2RST / 2ERR before RTS (qp.c modify_raw_packet_qp).
        match (sq.state, next) {
            (Q::Rst, Some(Q::Rst | Q::Rdy | Q::Err))
            | (Q::Rdy, Some(Q::Rdy | Q::Err | Q::Rst))
            | (Q::Err, Some(Q::Rst | Q::Rdy)) => {}
            (from, to) => fail!(
                BAD_PARAM,
                "MODIFY_SQ to a state not reachable from the current one",
                "SQ {sqn:#x} {from:?} -> {to:?} ({})",
                inp.ctx().state()
            ),
        }
        let next = next.expect("matched above");
        if next != sq.state {
            log::debug!("SQ {sqn:#x}: {:?} -> {next:?}", sq.state);
        }
        // The ring restarts from index 0 after a reset (mlx5e zeroes its cc/pc with it).
        if next == Q::Rst || sq.state == Q::Rst {
            sq.cc = 0;
        }
        sq.state = next;
        Ok(())
    }

    fn create_rq(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateRq>(input)?;
        let c = inp.ctx();
        if c.state() != u32::from(rqc_state::RST) {
            fail!(
                BAD_PARAM,
                "CREATE_RQ not in the reset state",
                "state {}",
                c.state()
            );
        }
        if c.mem_rq_type() != 0 || c.hairpin() != 0 || c.delay_drop_en() != 0 {
            fail!(
                BAD_PARAM,
                "CREATE_RQ of an unsupported kind",
                "mem_rq_type {} hairpin {} delay_drop_en {}",
                c.mem_rq_type(),
                c.hairpin(),
                c.delay_drop_en()
            );
        }
        let cqn = c.cqn();
        if !self.cqs.contains_key(&cqn) {
            fail!(
                BAD_RES,
                "CREATE_RQ completing to a CQ that does not exist",
                "CQ {cqn:#x}"
            );
        }
        let counter = c.counter_set_id();
        if counter != 0 && !self.nic.q_counters.contains_key(&(counter as u8)) {
            fail!(
                BAD_RES,
                "CREATE_RQ counting into a queue counter that does not exist",
                "counter set {counter}"
            );
        }
        self.check_rq_offloads(c)?;
        let w = c.wq();
        let t = w.wq_type();
        let striding = if t == u32::from(wq_type::CYCLIC) {
            None
        } else if t == u32::from(wq_type::LINKED_LIST_STRIDING_RQ)
            && self.caps.general("striding_rq") != 0
        {
            Some(self.striding_geometry(w)?)
        } else {
            fail!(
                BAD_PARAM,
                "CREATE_RQ ring type not supported",
                "wq_type {t}"
            );
        };
        let max_stride = (self.caps.general("max_wqe_sz_rq") as u32).max(16).ilog2();
        if !(MIN_RQ_STRIDE_SHIFT..=max_stride).contains(&w.log_wq_stride()) {
            fail!(
                BAD_PARAM,
                "CREATE_RQ WQE stride out of range",
                "log_wq_stride {} (4..={max_stride})",
                w.log_wq_stride()
            );
        }
        let wq = WqDesc::parse(self, ctx, w, input, CreateRqIn::wq_pas, "RQ")?;
        if self.nic.rqs.len() as u64 >= 1u64 << self.caps.general("log_max_rq") {
            fail!(NO_RES, "CREATE_RQ: no RQs left");
        }
        let rqn = self.alloc_id();
        self.nic.rqs.insert(
            rqn,
            Rq {
                rqn,
                state: QueueState::Rst,
                cqn,
                vsd: c.vsd() != 0,
                scatter_fcs: c.scatter_fcs() != 0,
                counter_set_id: counter as u8,
                user_index: c.user_index(),
                wq,
                cc: 0,
                striding,
            },
        );
        cmd_out::<cmds::CreateRq>(out)?.set_rqn(rqn);
        Ok(())
    }

    /// The strides of a striding RQ's `wq`: `log_wqe_num_of_strides` counts from 2^9 (values
    /// 0..=7: 512 to 64Ki strides) or, with `ext_stride_num_range`, wraps below it (10..=15: 8
    /// to 256, the 4-bit field of `log - 9`); `log_wqe_stride_size` from 64 bytes (0..=7: up
    /// to 8 KiB). A WQE is a next segment and one data segment: a stride of at least 32 bytes.
    fn striding_geometry(&self, w: &Wq) -> Result<Striding, CmdError> {
        let v = w.log_wqe_num_of_strides();
        let log_num = ((v + 9) & 0xf) as u8;
        let ext = self.caps.general("ext_stride_num_range") != 0;
        if !((9..=16).contains(&log_num) || (ext && (3..=8).contains(&log_num))) {
            fail!(
                BAD_PARAM,
                "striding RQ with an unsupported number of strides",
                "log_wqe_num_of_strides {v} (ext_stride_num_range {})",
                u8::from(ext)
            );
        }
        if w.log_wq_stride() < 5 {
            fail!(
                BAD_PARAM,
                "striding RQ WQE stride too small for a next and a data segment",
                "log_wq_stride {}",
                w.log_wq_stride()
            );
        }
        Ok(Striding {
            log_num_strides: log_num,
            log_stride: (6 + w.log_wqe_stride_size()) as u8,
            ..Default::default()
        })
    }

    /// VLAN stripping needs `vlan_cap`; FCS scatter needs `scatter_fcs`.
    fn check_rq_offloads(&self, c: &Rqc) -> CmdResult {
        if c.vsd() == 0 && self.caps.eth("vlan_cap") == 0 {
            fail!(BAD_PARAM, "RQ with VLAN stripping, which is not supported");
        }
        if c.scatter_fcs() != 0 && self.caps.eth("scatter_fcs") == 0 {
            fail!(BAD_PARAM, "RQ scattering the FCS, which is not supported");
        }
        Ok(())
    }

    fn modify_rq(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::ModifyRq>(input)?;
        let rqn = inp.rqn();
        let c = inp.ctx();
        let Some(rq) = self.nic.rqs.get(&rqn) else {
            fail!(
                BAD_RES,
                "MODIFY_RQ of an RQ that does not exist",
                "RQ {rqn:#x}"
            );
        };
        if QueueState::from_prm(inp.rq_state()) != Some(rq.state) {
            fail!(
                BAD_RES_STATE,
                "MODIFY_RQ from a state the RQ is not in",
                "RQ {rqn:#x} is {:?}, rq_state {}",
                rq.state,
                inp.rq_state()
            );
        }
        let mask = inp.modify_bitmask();
        let known = MODIFY_RQ_BITMASK_VSD
            | MODIFY_RQ_BITMASK_SCATTER_FCS
            | MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID;
        if mask & !known != 0 {
            fail!(
                BAD_PARAM,
                "MODIFY_RQ of fields that cannot be modified",
                "modify_bitmask {mask:#x}"
            );
        }
        if mask & MODIFY_RQ_BITMASK_VSD != 0 && c.vsd() == 0 && self.caps.eth("vlan_cap") == 0 {
            fail!(BAD_PARAM, "RQ with VLAN stripping, which is not supported");
        }
        if mask & MODIFY_RQ_BITMASK_SCATTER_FCS != 0
            && c.scatter_fcs() != 0
            && self.caps.eth("scatter_fcs") == 0
        {
            fail!(BAD_PARAM, "RQ scattering the FCS, which is not supported");
        }
        let counter = c.counter_set_id() as u8;
        if mask & MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID != 0
            && counter != 0
            && !self.nic.q_counters.contains_key(&counter)
        {
            fail!(
                BAD_RES,
                "MODIFY_RQ to a queue counter that does not exist",
                "counter set {counter}"
            );
        }
        let next = QueueState::from_prm(c.state());
        use QueueState as Q;
        // RST → RST and RST → ERR: a raw packet QP's RQ on 2RST / 2ERR of a QP in RESET
        // (qp.c modify_raw_packet_qp).
        match (rq.state, next) {
            (Q::Rst, Some(Q::Rst | Q::Rdy | Q::Err))
            | (Q::Rdy, Some(Q::Rdy | Q::Err | Q::Rst))
            | (Q::Err, Some(Q::Rst)) => {}
            (from, to) => fail!(
                BAD_PARAM,
                "MODIFY_RQ to a state not reachable from the current one",
                "RQ {rqn:#x} {from:?} -> {to:?} ({})",
                c.state()
            ),
        }
        let rq = self.nic.rqs.get_mut(&rqn).expect("checked above");
        let next = next.expect("matched above");
        if next == QueueState::Rst || rq.state == QueueState::Rst {
            rq.cc = 0;
            if let Some(s) = &mut rq.striding {
                s.reset();
            }
        }
        rq.state = next;
        if mask & MODIFY_RQ_BITMASK_VSD != 0 {
            rq.vsd = c.vsd() != 0;
        }
        if mask & MODIFY_RQ_BITMASK_SCATTER_FCS != 0 {
            rq.scatter_fcs = c.scatter_fcs() != 0;
        }
        if mask & MODIFY_RQ_BITMASK_RQ_COUNTER_SET_ID != 0 {
            rq.counter_set_id = counter;
        }
        Ok(())
    }

    /// The SQ `sqn` (data path).
    pub fn sq(&self, sqn: u32) -> Option<&Sq> {
        self.nic.sqs.get(&sqn)
    }

    /// The RQ `rqn` (data path).
    pub fn rq(&self, rqn: u32) -> Option<&Rq> {
        self.nic.rqs.get(&rqn)
    }

    /// Moves an SQ to the error state, as the data path does on a bad WQE (the driver
    /// recovers it with MODIFY_SQ ERR → RST → RDY). False if there is no such SQ.
    pub fn sq_to_error(&mut self, sqn: u32) -> bool {
        match self.nic.sqs.get_mut(&sqn) {
            Some(sq) => {
                sq.state = QueueState::Err;
                true
            }
            None => false,
        }
    }

    /// Moves an RQ to the error state (data path). False if there is no such RQ.
    pub fn rq_to_error(&mut self, rqn: u32) -> bool {
        match self.nic.rqs.get_mut(&rqn) {
            Some(rq) => {
                rq.state = QueueState::Err;
                true
            }
            None => false,
        }
    }
}

fn fill_sqc(sq: &Sq, c: &mut Sqc) {
    c.set_state(sq.state.prm().into());
    c.set_cqn(sq.cqn);
    c.set_min_wqe_inline_mode(sq.min_inline_mode.into());
    c.set_allow_swp(sq.allow_swp.into());
    c.set_flush_in_error_en(sq.flush_in_error_en.into());
    c.set_user_index(sq.user_index);
    c.set_reg_umr(sq.reg_umr.into());
    if let Some(t) = sq.tisn {
        c.set_tis_lst_sz(1);
        c.set_tis_num_0(t);
    }
    sq.wq.fill(c.wq_mut());
}

fn fill_rqc(rq: &Rq, c: &mut Rqc) {
    c.set_state(rq.state.prm().into());
    c.set_cqn(rq.cqn);
    c.set_vsd(rq.vsd.into());
    c.set_scatter_fcs(rq.scatter_fcs.into());
    c.set_counter_set_id(rq.counter_set_id.into());
    c.set_user_index(rq.user_index);
    rq.wq.fill(c.wq_mut());
    if let Some(s) = &rq.striding {
        let w = c.wq_mut();
        w.set_log_wqe_num_of_strides(u32::from(s.log_num_strides).wrapping_sub(9) & 0xf);
        w.set_log_wqe_stride_size(u32::from(s.log_stride) - 6);
    }
}
