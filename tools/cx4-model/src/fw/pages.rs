//! QUERY_PAGES, MANAGE_PAGES and page-request events.

use cx4_hw::{
    bits::tail_count,
    command::{self as cmds},
    eq::event_type,
    pages::{manage_pages_op_mod, ManagePagesIn, ManagePagesOut},
};

use super::{cmd_in, cmd_out, fail, new_event, Bus, CmdResult, Firmware, HcaState};
use crate::pages::{PageError, Stage};

impl Firmware {
    pub(super) fn query_pages(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::QueryPages>(input)?;
        if inp.function_id() != 0 || inp.embedded_cpu_function() != 0 {
            fail!(
                BAD_PARAM,
                "QUERY_PAGES for another function",
                "function {}",
                inp.function_id()
            );
        }
        let Some(stage) = Stage::from_op_mod(inp.op_mod() as u16) else {
            fail!(
                BAD_PARAM,
                "QUERY_PAGES with an unknown op_mod",
                "op_mod {:#x}",
                inp.op_mod()
            );
        };
        let n = self.pages.query(stage);
        let o = cmd_out::<cmds::QueryPages>(out)?;
        o.set_function_id(0);
        o.set_num_pages(n);
        Ok(())
    }

    pub(super) fn manage_pages(
        &mut self,
        ctx: &mut Bus,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        let inp = cmd_in::<cmds::ManagePages>(input)?;
        if inp.function_id() != 0 || inp.embedded_cpu_function() != 0 {
            fail!(
                BAD_PARAM,
                "MANAGE_PAGES for another function",
                "function {}",
                inp.function_id()
            );
        }
        let n = inp.input_num_entries() as usize;
        match inp.op_mod() as u16 {
            manage_pages_op_mod::GIVE => {
                if tail_count(input.len(), ManagePagesIn::SIZE, 8) < n {
                    fail!(
                        BAD_INP_LEN,
                        "MANAGE_PAGES give: fewer addresses than input_num_entries",
                        "{n} entries"
                    );
                }
                let pas: Vec<u64> = (0..n)
                    .map(|i| ManagePagesIn::pas(input, i).unwrap_or(0))
                    .collect();
                match self.pages.give(&ctx.mem, &pas) {
                    Ok(()) => {
                        log::debug!("{} pages given (now {} held)", n, self.pages.held());
                        Ok(())
                    }
                    Err(PageError::Misaligned(pa)) => {
                        fail!(BAD_PARAM, "MANAGE_PAGES give: misaligned page", "{pa:#x}")
                    }
                    Err(PageError::Unmapped(pa)) => {
                        fail!(
                            BAD_PARAM,
                            "MANAGE_PAGES give: page outside guest memory",
                            "{pa:#x}"
                        )
                    }
                    Err(PageError::Duplicate(pa)) => {
                        log::error!("driver gave page {pa:#x} twice");
                        fail!(BAD_PARAM, "MANAGE_PAGES give: page already held", "{pa:#x}")
                    }
                }
            }
            manage_pages_op_mod::CANT_GIVE => {
                log::warn!("driver could not give {n} pages");
                Ok(())
            }
            manage_pages_op_mod::TAKE => {
                let room = tail_count(out.len(), ManagePagesOut::SIZE, 8);
                let want = n.min(room) as u32;
                let pas = self
                    .pages
                    .take_for(want, self.state == HcaState::Initialized);
                for (i, &pa) in pas.iter().enumerate() {
                    ManagePagesOut::set_pas(out, i, pa).expect("room checked");
                }
                let o = cmd_out::<cmds::ManagePages>(out)?;
                o.set_output_num_entries(pas.len() as u32);
                log::debug!(
                    "{} pages returned (now {} held)",
                    pas.len(),
                    self.pages.held()
                );
                Ok(())
            }
            m => fail!(
                BAD_PARAM,
                "MANAGE_PAGES with an unknown op_mod",
                "op_mod {m:#x}"
            ),
        }
    }

    /// Asks the driver for the regular pages not yet given, if a pages EQ exists.
    pub(super) fn request_regular_pages(&mut self, ctx: &mut Bus) {
        let n = self.pages.query(Stage::Regular);
        if n > 0 {
            self.page_request(ctx, n as i32);
        }
    }

    /// Posts a page request event (positive: give, negative: take back).
    pub fn page_request(&mut self, ctx: &mut Bus, n: i32) -> bool {
        let mut eqe = new_event(event_type::PAGE_REQUEST, 0);
        let req = eqe.req_pages_mut();
        req.set_func_id(0);
        req.set_num_pages(n as u32);
        let posted = self.post_event(ctx, &eqe) > 0;
        if posted {
            log::info!("page request event: {n} pages");
        } else {
            log::debug!("page request for {n} pages pending: no EQ takes page requests yet");
        }
        posted
    }
}
