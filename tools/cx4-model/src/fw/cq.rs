//! Completion queues: CREATE/DESTROY/QUERY/MODIFY_CQ (moderation and resize), the arm
//! doorbell, and CQE delivery with ownership, doorbell-record consumer index, overrun
//! detection and completion events.

use cx4_hw::{
    command::{self as cmds, Command},
    cq::cqe::{self, cqe_owner_for, Cqe64, OWNER_MASK},
    cq::{CqModifyFields, CqResizeFields, CreateCqIn, ModifyCqIn, MODIFY_CQ_OP_MOD_RESIZE},
    eq::event_type,
    uar::{CqArmDoorbell, CQ_DB_REQ_NOT_SOL},
};

use zerocopy::{FromBytes, IntoBytes};

use super::{
    cmd_in, cmd_out, fail,
    moderation::{ModState, Moderation, PERIOD_FROM_CQE, PERIOD_FROM_EQE},
    need_out, new_event, ring_pas, Bus, CmdResult, Firmware,
};
use crate::clock::{device_cycles, now_ns};

use super::caps::GeneralCap;

/// The card's clock frequency, which completion timestamps count in.
static DEVICE_FREQUENCY_KHZ: GeneralCap = GeneralCap::new("device_frequency_khz");

/// How a CQ is armed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arm {
    /// Not armed.
    None,
    /// Next completion raises an event.
    Next,
    /// Next solicited completion raises an event.
    Solicited,
}

/// One completion queue.
#[derive(Debug)]
pub struct Cq {
    /// CQ number.
    pub cqn: u32,
    /// log2 of the entry count.
    pub log_size: u8,
    /// CQE stride (64 or 128).
    pub cqe_size: usize,
    /// Ring pages.
    pub pas: Vec<u64>,
    /// log2 of the ring page size.
    pub page_shift: u8,
    /// EQ receiving completion events.
    pub eqn: u8,
    /// UAR page of the arm doorbell.
    pub uar_page: u32,
    /// Doorbell record (set_ci at +0, arm at +4).
    pub dbr: u64,
    /// Producer index.
    pub pi: u32,
    /// Arm state.
    pub arm: Arm,
    /// Last arm sequence number.
    pub arm_sn: u8,
    /// Overrun detected; the CQ stops.
    pub overrun: bool,
    /// Event moderation (CREATE_CQ, MODIFY_CQ; `moderation.rs`).
    pub moderation: Moderation,
    /// Where the moderation stands.
    pub mod_state: ModState,
    /// Completions written.
    pub cqes: u64,
}

impl Cq {
    fn slot_addr(&self, idx: u32) -> Option<u64> {
        let off = u64::from(idx & ((1 << self.log_size) - 1)) * self.cqe_size as u64;
        super::ring_addr(&self.pas, self.page_shift, off)
    }

    /// Writes `e` with the ownership bit of index `pi` into the slot at `addr`: the body first,
    /// the byte with the ownership bit last.
    fn write_cqe(&self, ctx: &Bus, addr: u64, pi: u32, mut e: Cqe64) -> Result<(), String> {
        let owner = cqe_owner_for(pi, self.log_size.into());
        e.set_op_own((e.op_own() & !u32::from(OWNER_MASK)) | u32::from(owner));
        // For 128-byte CQEs the 64-byte CQE sits in the second half.
        let at = if self.cqe_size == 128 {
            addr + 64
        } else {
            addr
        };
        let (body, op_own) = e.as_bytes().split_at(Cqe64::SIZE - 1);
        ctx.mem.write(at, body).map_err(|e| e.to_string())?;
        ctx.mem
            .write(at + body.len() as u64, op_own)
            .map_err(|e| e.to_string())
    }

    fn consumer_index(&self, ctx: &Bus) -> Option<u32> {
        let mut b = [0u8; 4];
        ctx.mem.read(self.dbr, &mut b).ok()?;
        Some(u32::from_be_bytes(b) & 0xff_ffff)
    }
}

impl Firmware {
    pub(super) fn cq_cmd(
        &mut self,
        ctx: &mut Bus,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            cmds::CreateCq::OPCODE => self.create_cq(ctx, input, out),
            cmds::DestroyCq::OPCODE => {
                let cqn = cmd_in::<cmds::DestroyCq>(input)?.cqn();
                if let Some(q) = self.cq_user(cqn) {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_CQ of a CQ a work queue still completes to",
                        "CQ {cqn:#x} used by {q}"
                    );
                }
                match self.cqs.remove(&cqn) {
                    Some(_) => {
                        self.cq_forget_timer(cqn);
                        Ok(())
                    }
                    None => fail!(
                        BAD_RES,
                        "DESTROY_CQ of a CQ that does not exist",
                        "CQ {cqn:#x}"
                    ),
                }
            }
            cmds::QueryCq::OPCODE => {
                let cqn = cmd_in::<cmds::QueryCq>(input)?.cqn();
                let ci = self.cqs.get(&cqn).and_then(|c| c.consumer_index(ctx));
                let Some(cq) = self.cqs.get(&cqn) else {
                    fail!(
                        BAD_RES,
                        "QUERY_CQ of a CQ that does not exist",
                        "CQ {cqn:#x}"
                    );
                };
                let o = cmd_out::<cmds::QueryCq>(out)?;
                let c = o.cq_context_mut();
                c.set_log_cq_size(cq.log_size.into());
                c.set_cqe_sz(if cq.cqe_size == 128 { 1 } else { 0 });
                c.set_uar_page(cq.uar_page);
                c.set_c_eqn_or_apu_element(cq.eqn.into());
                c.set_log_page_size(u32::from(cq.page_shift) - 12);
                c.set_dbr_addr(cq.dbr);
                c.set_producer_counter(cq.pi & 0xff_ffff);
                c.set_consumer_counter(ci.unwrap_or(0));
                c.set_cq_period(cq.moderation.period_us);
                c.set_cq_max_count(cq.moderation.max_count);
                c.set_cq_period_mode(cq.moderation.mode);
                c.set_status(if cq.overrun { 0x9 } else { 0 });
                Ok(())
            }
            cmds::ModifyCq::OPCODE => {
                let inp = cmd_in::<cmds::ModifyCq>(input)?;
                match inp.op_mod() {
                    0 => {}
                    m if m == u32::from(MODIFY_CQ_OP_MOD_RESIZE) => {
                        return self.resize_cq(ctx, inp, input);
                    }
                    m => fail!(BAD_PARAM, "MODIFY_CQ with an unknown op_mod", "op_mod {m}"),
                }
                self.modify_moderation(inp)
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    /// `MODIFY_CQ` op_mod 0: the fields its field-select names (period, count, period mode)
    /// replace the CQ's moderation; it applies from the CQ's next event decision.
    fn modify_moderation(&mut self, inp: &ModifyCqIn) -> CmdResult {
        if self.caps.general("cq_moderation") == 0 {
            fail!(BAD_PARAM, "MODIFY_CQ: CQ moderation is not supported");
        }
        let raw = inp.modify_field_select_resize_field_select();
        let Some(select) = CqModifyFields::from_bits(raw) else {
            fail!(
                BAD_PARAM,
                "MODIFY_CQ with unknown field-select bits",
                "{raw:#x}"
            );
        };
        if select.contains(CqModifyFields::OVERRUN) {
            fail!(
                BAD_PARAM,
                "MODIFY_CQ of the overrun-ignore bit (not supported)"
            );
        }
        let c = inp.cq_context();
        let mode = if select.contains(CqModifyFields::PERIOD_MODE) {
            if self.caps.general("cq_period_mode_modify") == 0 {
                fail!(
                    BAD_PARAM,
                    "MODIFY_CQ of the period mode (cq_period_mode_modify is 0)"
                );
            }
            Some(self.period_mode(c.cq_period_mode(), "MODIFY_CQ")?)
        } else {
            None
        };
        let cqn = inp.cqn();
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            fail!(
                BAD_RES,
                "MODIFY_CQ of a CQ that does not exist",
                "CQ {cqn:#x}"
            );
        };
        let m = &mut cq.moderation;
        if select.contains(CqModifyFields::PERIOD) {
            m.period_us = c.cq_period();
        }
        if select.contains(CqModifyFields::COUNT) {
            m.max_count = c.cq_max_count();
        }
        if let Some(mode) = mode {
            m.mode = mode;
        }
        log::debug!(
            "CQ {cqn:#x} moderation: {} us, {} CQEs, from {}",
            m.period_us,
            m.max_count,
            if m.mode == PERIOD_FROM_CQE {
                "CQE"
            } else {
                "EQE"
            }
        );
        Ok(())
    }

    /// A `cq_period_mode` the card supports.
    fn period_mode(&self, mode: u32, cmd: &str) -> Result<u32, super::CmdError> {
        match mode {
            PERIOD_FROM_EQE => Ok(mode),
            PERIOD_FROM_CQE if self.caps.general("cq_period_start_from_cqe") != 0 => Ok(mode),
            m => Err(super::CmdError::new(
                cx4_hw::status::BAD_PARAM,
                "CQ period mode not supported",
                format!("{cmd}: cq_period_mode {m}"),
            )),
        }
    }

    /// `MODIFY_CQ` with op_mod RESIZE (mlx5_ib `mlx5_ib_resize_cq`): the selected fields of
    /// the context (log size, page offset, page size) and a new page list replace the ring.
    /// The card writes a RESIZE_CQ CQE into the old ring at the producer index, then goes on
    /// producing into the new ring with the same counter, so software copies the CQEs it has
    /// not consumed (old index `i` → new index `i + 1`, libmlx5 `mlx5_cq_resize_copy_cqes`)
    /// and steps over the RESIZE_CQ CQE. The new ring must hold the outstanding CQEs with
    /// room for one more (BAD_SIZE_OUTS_CQES otherwise); the CQE size cannot change.
    fn resize_cq(&mut self, ctx: &mut Bus, inp: &ModifyCqIn, input: &[u8]) -> CmdResult {
        if self.caps.general("cq_resize") == 0 {
            fail!(BAD_PARAM, "MODIFY_CQ resize: CQ resize is not supported");
        }
        let raw = inp.modify_field_select_resize_field_select();
        let Some(select) = CqResizeFields::from_bits(raw) else {
            fail!(
                BAD_PARAM,
                "MODIFY_CQ resize with unknown field-select bits",
                "{raw:#x}"
            );
        };
        if inp.cq_umem_valid() != 0 {
            fail!(BAD_PARAM, "MODIFY_CQ resize with a umem (no DEVX umems)");
        }
        let cqn = inp.cqn();
        let max = self.caps.general("log_max_cq_sz") as u32;
        let ci = self.cqs.get(&cqn).map(|c| c.consumer_index(ctx));
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            fail!(
                BAD_RES,
                "MODIFY_CQ resize of a CQ that does not exist",
                "CQ {cqn:#x}"
            );
        };
        if cq.overrun {
            fail!(
                BAD_RES_STATE,
                "MODIFY_CQ resize of a CQ in error after an overrun",
                "CQ {cqn:#x}"
            );
        }
        let c = inp.cq_context();
        let log_size = if select.contains(CqResizeFields::LOG_SIZE) {
            c.log_cq_size()
        } else {
            cq.log_size.into()
        };
        if log_size > max {
            fail!(
                BAD_PARAM,
                "MODIFY_CQ resize: size out of range",
                "log_cq_size {log_size} (max {max})"
            );
        }
        let stride = if cq.cqe_size == 128 { 1 } else { 0 };
        if c.cqe_sz() != stride {
            fail!(
                BAD_PARAM,
                "MODIFY_CQ resize cannot change the CQE size",
                "cqe_sz {} (CQ has {})",
                c.cqe_sz(),
                stride
            );
        }
        let page_shift = if select.contains(CqResizeFields::PG_SIZE) {
            12 + c.log_page_size()
        } else {
            cq.page_shift.into()
        };
        let offset = if select.contains(CqResizeFields::PG_OFFSET) {
            c.page_offset()
        } else {
            0
        };
        if page_shift > 30 || offset != 0 {
            fail!(
                BAD_PARAM,
                "MODIFY_CQ resize: page geometry unsupported",
                "log_page_size {} offset {offset}",
                page_shift.saturating_sub(12)
            );
        }
        let pas = ring_pas(
            &ctx.mem,
            input,
            (cq.cqe_size as u64) << log_size,
            page_shift,
            ModifyCqIn::pas,
        )?;
        let Some(Some(ci)) = ci else {
            fail!(
                BAD_RES_STATE,
                "MODIFY_CQ resize: the CQ's doorbell record is unreachable",
                "CQ {cqn:#x} DBR {:#x}",
                cq.dbr
            );
        };
        let outstanding = (cq.pi & 0xff_ffff).wrapping_sub(ci) & 0xff_ffff;
        if outstanding >= 1 << cq.log_size || outstanding >= 1 << log_size {
            fail!(
                BAD_SIZE_OUTS_CQES,
                "MODIFY_CQ resize: more outstanding CQEs than the rings hold",
                "CQ {cqn:#x}: {outstanding} outstanding, old size {}, new size {}",
                1u32 << cq.log_size,
                1u32 << log_size
            );
        }
        // The RESIZE_CQ CQE in the old ring, its ownership byte last; no completion event.
        let at = cq.slot_addr(cq.pi).ok_or_else(|| {
            super::CmdError::new(
                cx4_hw::status::INT_ERR,
                "MODIFY_CQ resize: CQ ring page missing",
                format!("CQ {cqn:#x}"),
            )
        })?;
        let at = if cq.cqe_size == 128 { at + 64 } else { at };
        let mut e = Cqe64::new();
        let owner = cqe_owner_for(cq.pi, cq.log_size.into());
        e.set_op_own(cqe::op_own(cqe::opcode::RESIZE_CQ, 0, owner).into());
        let (body, op_own) = e.as_bytes().split_at(Cqe64::SIZE - 1);
        if ctx.mem.write(at, body).is_err()
            || ctx.mem.write(at + body.len() as u64, op_own).is_err()
        {
            fail!(
                BAD_RES_STATE,
                "MODIFY_CQ resize: the old ring is not in guest memory",
                "CQ {cqn:#x} at {at:#x}"
            );
        }
        log::info!(
            "CQ {cqn:#x} resized from {} to {} entries at pi {} ({outstanding} outstanding)",
            1u32 << cq.log_size,
            1u32 << log_size,
            cq.pi & 0xff_ffff
        );
        cq.pi = cq.pi.wrapping_add(1);
        cq.cqes += 1;
        cq.log_size = log_size as u8;
        cq.pas = pas;
        cq.page_shift = page_shift as u8;
        Ok(())
    }

    /// The SQ or RQ completing to `cqn`, if any.
    fn cq_user(&self, cqn: u32) -> Option<String> {
        if let Some(sq) = self.nic.sqs.values().find(|s| s.cqn == cqn) {
            return Some(format!("SQ {:#x}", sq.sqn));
        }
        if let Some(qpn) = self.rdma.cq_user(cqn) {
            return Some(format!("QP {qpn:#x}"));
        }
        self.nic
            .rqs
            .values()
            .find(|r| r.cqn == cqn)
            .map(|r| format!("RQ {:#x}", r.rqn))
    }

    fn create_cq(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateCq>(input)?;
        let c = inp.cq_context();
        let log_size = c.log_cq_size();
        let max = self.caps.general("log_max_cq_sz") as u32;
        if log_size > max {
            fail!(
                BAD_PARAM,
                "CREATE_CQ size out of range",
                "log_cq_size {log_size} (max {max})"
            );
        }
        let cqe_size = match c.cqe_sz() {
            0 => 64,
            1 => 128,
            s => fail!(
                BAD_PARAM,
                "CREATE_CQ with an unknown CQE size",
                "cqe_sz {s}"
            ),
        };
        let moderation = Moderation {
            period_us: c.cq_period(),
            max_count: c.cq_max_count(),
            mode: self.period_mode(c.cq_period_mode(), "CREATE_CQ")?,
        };
        let page_shift = 12 + c.log_page_size();
        if page_shift > 30 || c.page_offset() != 0 {
            fail!(
                BAD_PARAM,
                "CREATE_CQ page geometry unsupported",
                "log_page_size {} offset {}",
                c.log_page_size(),
                c.page_offset()
            );
        }
        let pas = ring_pas(
            &ctx.mem,
            input,
            (cqe_size as u64) << log_size,
            page_shift,
            CreateCqIn::pas,
        )?;
        let mut b = [0u8; 8];
        let dbr = c.dbr_addr();
        if dbr % 8 != 0 || ctx.mem.read(dbr, &mut b).is_err() {
            fail!(
                BAD_PARAM,
                "CREATE_CQ: doorbell record not in guest memory",
                "{dbr:#x}"
            );
        }
        let eqn = c.c_eqn_or_apu_element();
        if !u8::try_from(eqn).is_ok_and(|n| self.eqs.contains_key(&n)) {
            fail!(
                BAD_RES,
                "CREATE_CQ reporting to an EQ that does not exist",
                "EQ {eqn}"
            );
        }
        let uar = c.uar_page();
        if !self.uars.contains_key(&uar) {
            fail!(BAD_RES, "CREATE_CQ on a UAR not allocated", "UAR {uar}");
        }
        let max_cqs = 1u64 << self.caps.general("log_max_cq");
        if self.cqs.len() as u64 >= max_cqs {
            fail!(NO_RES, "CREATE_CQ: no CQs left");
        }
        let cqn = self.alloc_id();
        self.cqs.insert(
            cqn,
            Cq {
                cqn,
                log_size: log_size as u8,
                cqe_size,
                pas,
                page_shift: page_shift as u8,
                eqn: eqn as u8,
                uar_page: uar,
                dbr,
                pi: 0,
                arm: Arm::None,
                arm_sn: 0,
                overrun: false,
                moderation,
                mod_state: ModState::default(),
                cqes: 0,
            },
        );
        cmd_out::<cmds::CreateCq>(out)?.set_cqn(cqn);
        Ok(())
    }

    /// The 64-bit arm doorbell at UAR +0x20: `sn << 28 | cmd | ci`, then the CQ number.
    pub(super) fn cq_arm_doorbell(&mut self, ctx: &mut Bus, page: u32, db: CqArmDoorbell) {
        let cqn = db.cqn;
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            log::warn!("CQ arm doorbell for CQ {cqn:#x} that does not exist, ignored");
            return;
        };
        if cq.uar_page != page {
            log::warn!(
                "CQ {cqn:#x} armed through UAR {page}, not its UAR {}",
                cq.uar_page
            );
        }
        cq.arm_sn = db.sn;
        cq.arm = if db.cmd == CQ_DB_REQ_NOT_SOL {
            Arm::Solicited
        } else {
            Arm::Next
        };
        let ci = db.ci;
        // Completions already written past the armed index earn the event (at once, or when
        // the CQ's moderation lets it go).
        if cq.pi & 0xff_ffff != ci && cq.arm == Arm::Next {
            self.cq_event_due(ctx, cqn, now_ns());
        }
    }

    pub(super) fn completion_event(&mut self, ctx: &mut Bus, eqn: u8, cqn: u32) {
        let mut eqe = new_event(event_type::COMP, 0);
        eqe.comp_mut().set_cqn(cqn);
        if let Some(eq) = self.eqs.get_mut(&eqn) {
            eq.post(&ctx.mem, &mut ctx.msix, &mut ctx.faults, &eqe);
        }
    }

    /// Writes one CQE (64 bytes, its op_own byte's owner bit set for the current pass) to `cqn`;
    /// `solicited` marks a solicited completion. Detects overrun from the doorbell record. An
    /// armed CQ's event goes out as its moderation says (`moderation.rs`).
    pub fn post_cqe(
        &mut self,
        ctx: &mut Bus,
        cqn: u32,
        cqe: &[u8; 64],
        solicited: bool,
    ) -> Result<(), String> {
        self.post_cqe_at(ctx, cqn, cqe, solicited, now_ns())
    }

    /// [`Firmware::post_cqe`] at `now` (ns, the model's clock).
    pub fn post_cqe_at(
        &mut self,
        ctx: &mut Bus,
        cqn: u32,
        cqe: &[u8; 64],
        solicited: bool,
        now: u64,
    ) -> Result<(), String> {
        let Some(cq) = self.cqs.get_mut(&cqn) else {
            return Err(format!("no CQ {cqn:#x}"));
        };
        if cq.overrun {
            return Err(format!("CQ {cqn:#x} is in error after an overrun"));
        }
        let ci = cq
            .consumer_index(ctx)
            .ok_or("doorbell record unreachable")?;
        let size = 1u32 << cq.log_size;
        if (cq.pi & 0xff_ffff).wrapping_sub(ci) & 0xff_ffff >= size {
            cq.overrun = true;
            log::error!(
                "CQ {cqn:#x}: overrun (pi {} ci {ci}), CQ error event",
                cq.pi
            );
            let mut eqe = new_event(event_type::CQ_ERROR, 0);
            eqe.cq_err_mut().set_cqn(cqn);
            eqe.cq_err_mut().set_syndrome(0x1); // MLX5_CQ_ERROR_SYNDROME_CQ_OVERRUN
            self.post_event(ctx, &eqe);
            return Err(format!("CQ {cqn:#x} overrun"));
        }
        let addr = cq.slot_addr(cq.pi).ok_or("CQ ring page missing")?;
        let mut e = Cqe64::read_from_bytes(cqe).expect("a CQE is 64 bytes");
        // Every completion carries the card's free-running clock when it is written, but an
        // error CQE, whose syndrome bytes are where the timestamp would be (mlx5_err_cqe).
        let op = (e.op_own() >> 4) as u8;
        if op != cqe::opcode::REQ_ERR && op != cqe::opcode::RESP_ERR {
            let khz = self.caps.general_cap(&DEVICE_FREQUENCY_KHZ);
            e.set_timestamp(device_cycles(now, khz));
        }
        ctx.faults.liar.cqe(cqn, e.as_mut_bytes());
        cq.write_cqe(ctx, addr, cq.pi, e)?;
        cq.pi = cq.pi.wrapping_add(1);
        cq.cqes += 1;
        // The hostile card's write behind the driver's back: a completion it never produced,
        // valid for the next slot (the next real one lands on it).
        if let Some(phantom) = ctx.faults.liar.ring(cqn) {
            let e = Cqe64::read_from_bytes(&phantom).expect("a CQE is 64 bytes");
            if let Some(next) = cq.slot_addr(cq.pi) {
                cq.write_cqe(ctx, next, cq.pi, e)?;
            }
        }
        cq.mod_state.since_event = cq.mod_state.since_event.saturating_add(1);
        if cq.arm == Arm::Next || (cq.arm == Arm::Solicited && solicited) {
            self.cq_event_due(ctx, cqn, now);
        }
        Ok(())
    }
}
