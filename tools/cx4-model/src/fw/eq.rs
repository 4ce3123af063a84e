//! CREATE/DESTROY/QUERY_EQ and GEN_EQE.

use cx4_hw::{
    command::{self as cmds, Command},
    eq::{eqe::Eqe, event_type, CreateEqIn},
};
use zerocopy::FromBytes;

use super::{cmd_in, cmd_out, fail, need_out, ring_pas, Bus, CmdResult, Firmware};
use crate::eq::Eq;

impl Firmware {
    pub(super) fn eq_cmd(
        &mut self,
        ctx: &mut Bus,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            cmds::CreateEq::OPCODE => self.create_eq(ctx, input, out),
            cmds::DestroyEq::OPCODE => {
                let eqn = cmd_in::<cmds::DestroyEq>(input)?.eq_number();
                if self.cqs.values().any(|c| u32::from(c.eqn) == eqn) {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_EQ of an EQ CQs still report to",
                        "EQ {eqn}"
                    );
                }
                match u8::try_from(eqn).ok().and_then(|n| self.eqs.remove(&n)) {
                    Some(eq) => {
                        log::debug!(
                            "EQ {eqn} destroyed after {} events, {} interrupts",
                            eq.events,
                            eq.interrupts
                        );
                        Ok(())
                    }
                    None => fail!(
                        BAD_RES,
                        "DESTROY_EQ of an EQ that does not exist",
                        "EQ {eqn}"
                    ),
                }
            }
            cmds::QueryEq::OPCODE => {
                let eqn = cmd_in::<cmds::QueryEq>(input)?.eq_number();
                let Some(eq) = u8::try_from(eqn).ok().and_then(|n| self.eqs.get(&n)) else {
                    fail!(BAD_RES, "QUERY_EQ of an EQ that does not exist", "EQ {eqn}");
                };
                let o = cmd_out::<cmds::QueryEq>(out)?;
                let c = o.eq_context_entry_mut();
                c.set_log_eq_size(eq.log_size.into());
                c.set_uar_page(eq.uar_page);
                c.set_intr(eq.vector.into());
                c.set_log_page_size(u32::from(eq.page_shift) - 12);
                c.set_consumer_counter(eq.ci & 0xff_ffff);
                c.set_producer_counter(eq.pi & 0xff_ffff);
                // EQ state: 0x9 armed, 0xa fired, 0xb overrun (eqc.st).
                c.set_st(if eq.overrun {
                    0xb
                } else if eq.armed {
                    0x9
                } else {
                    0xa
                });
                Ok(())
            }
            cmds::GenEqe::OPCODE => {
                let inp = cmd_in::<cmds::GenEqe>(input)?;
                let eqn = inp.eq_number();
                let Some(eq) = u8::try_from(eqn).ok().and_then(|n| self.eqs.get_mut(&n)) else {
                    fail!(BAD_RES, "GEN_EQE on an EQ that does not exist", "EQ {eqn}");
                };
                let eqe = Eqe::ref_from_bytes(inp.eqe()).expect("an EQE is 64 bytes");
                if !eq.post(&ctx.mem, &mut ctx.msix, &mut ctx.faults, eqe) {
                    fail!(BAD_RES_STATE, "GEN_EQE on an EQ in error", "EQ {eqn}");
                }
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    fn create_eq(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateEq>(input)?;
        let c = inp.eq_context_entry();
        let log_size = c.log_eq_size();
        let max_log = self.caps.general("log_max_eq_sz") as u32;
        if log_size > max_log || log_size == 0 {
            fail!(
                BAD_PARAM,
                "CREATE_EQ size out of range",
                "log_eq_size {log_size} (max {max_log})"
            );
        }
        let page_shift = 12 + c.log_page_size();
        if page_shift > 30 {
            fail!(
                BAD_PARAM,
                "CREATE_EQ page size out of range",
                "log_page_size {}",
                c.log_page_size()
            );
        }
        if c.page_offset() != 0 {
            fail!(
                BAD_PARAM,
                "CREATE_EQ with a page offset",
                "{}",
                c.page_offset()
            );
        }
        let pas = ring_pas(
            &ctx.mem,
            input,
            64u64 << log_size,
            page_shift,
            CreateEqIn::pas,
        )?;
        let uar = c.uar_page();
        if !self.uars.contains_key(&uar) {
            fail!(BAD_RES, "CREATE_EQ on a UAR not allocated", "UAR {uar}");
        }
        let vector = c.intr();
        if vector as usize >= ctx.msix.len() {
            fail!(
                BAD_PARAM,
                "CREATE_EQ on an MSI-X vector that does not exist",
                "vector {vector}"
            );
        }
        let max_eqs = 1usize << self.caps.general("log_max_eq");
        let Some(eqn) = (0..=255u8)
            .find(|n| !self.eqs.contains_key(n))
            .filter(|&n| (n as usize) < max_eqs)
        else {
            fail!(
                NO_RES,
                "CREATE_EQ: no EQs left",
                "{} in use",
                self.eqs.len()
            );
        };
        let mut mask = [0u64; 4];
        for (i, m) in mask.iter_mut().enumerate() {
            *m = inp.event_bitmask(i).unwrap_or(0);
        }
        // event_bitmask[0] holds event types 0..63 in its low bits (mlx5_ifc: u8[4][0x40]; the
        // driver sets bit n of the first u64 for type n).
        let eq = Eq {
            eqn,
            log_size: log_size as u8,
            pas,
            page_shift: page_shift as u8,
            uar_page: uar,
            vector: vector as u16,
            mask,
            pi: 0,
            ci: 0,
            armed: false,
            overrun: false,
            events: 0,
            interrupts: 0,
        };
        log::info!(
            "EQ {eqn} created: {} entries, vector {vector}, UAR {uar}, events {:#x}",
            1u32 << log_size,
            mask[0]
        );
        let wants_pages = eq.wants(event_type::PAGE_REQUEST);
        self.eqs.insert(eqn, eq);
        cmd_out::<cmds::CreateEq>(out)?.set_eq_number(eqn.into());
        if wants_pages {
            self.request_regular_pages(ctx);
        }
        Ok(())
    }

    /// A doorbell write on UAR page `page` at `off` (EQ and CQ doorbells).
    pub fn uar_doorbell(&mut self, ctx: &mut Bus, page: u32, off: u64, data: &[u8]) {
        use cx4_hw::uar::{EqDoorbell, CQ_DOORBELL, EQ_DOORBELL_UPDATE, EQ_DOORBELL_UPDATE_ARM};
        if !self.uars.contains_key(&page) {
            log::warn!("doorbell on UAR page {page} that is not allocated, ignored");
            return;
        }
        let off = off as usize;
        match (off, data.len()) {
            (EQ_DOORBELL_UPDATE_ARM | EQ_DOORBELL_UPDATE, 4) => {
                let db = EqDoorbell::from_bytes([data[0], data[1], data[2], data[3]]);
                match self.eqs.get_mut(&db.eqn) {
                    Some(eq) if eq.uar_page == page => {
                        let arm = off == EQ_DOORBELL_UPDATE_ARM;
                        eq.doorbell(db.ci, arm, &mut ctx.msix, &mut ctx.faults)
                    }
                    _ => log::warn!("EQ doorbell for EQ {} not on UAR {page}, ignored", db.eqn),
                }
            }
            (CQ_DOORBELL, 8) => {
                let mut b = [0u8; 8];
                b.copy_from_slice(data);
                self.cq_arm_doorbell(ctx, page, cx4_hw::uar::CqArmDoorbell::from_bytes(b))
            }
            _ => log::debug!(
                "UAR {page} write at {off:#x} ({} bytes) ignored",
                data.len()
            ),
        }
    }
}
