//! Dynamically connected targets: CREATE_DCT, DRAIN_DCT (and its `DCT_DRAINED` event),
//! DESTROY_DCT, QUERY_DCT and ARM_DCT_FOR_KEY_VIOLATION. A DCT is the responder half of the DC
//! transport: any DC initiator (a `qpc_st::DCI` QP, `qp.rs`) that names its number and access
//! key reaches it; what it receives goes to its SRQ and its CQ (`crate::roce::dc` runs it).
//!
//! mlx5_ib creates the DCT at its QP's INIT→RTR transition with the whole context
//! (qp.c `mlx5_ib_modify_dct`), so the DCT is active from CREATE_DCT on; it destroys it with
//! DRAIN_DCT, a wait for `DCT_DRAINED` (EQE data `dct.dctn`), then DESTROY_DCT (qpc.c
//! `mlx5_core_destroy_dct`), or DESTROY_DCT alone when the response could not be given back
//! (`mlx5_core_create_dct`'s error path). DCT numbers come from the QP number space.
//!
//! The model drains at once: the DCT's open connections (the RoCE engine's per-initiator
//! responder contexts) are closed when DRAIN_DCT runs, so `DCT_DRAINED` is posted before
//! the command completes (the driver's completion is initialised at create and waited for
//! after the command: either order works).

use cx4_hw::{
    command::{self as cmds, Command},
    dct::{dctc_state, Dctc},
    eq::{event_queue_type, event_type},
    qp::mtu,
};

use super::{cmd_in, cmd_out, fail, need_in, need_out, new_event, Bus, CmdResult, Firmware};

/// One DCT.
#[derive(Clone, Debug)]
pub struct Dct {
    /// Number (QP number space).
    pub dctn: u32,
    /// Its context as created (state and the violation count kept current).
    pub ctx: Dctc,
    /// ARM_DCT_FOR_KEY_VIOLATION armed the `DCT_KEY_VIOLATION` event.
    pub armed: bool,
}

impl Dct {
    /// Whether the DCT accepts requests (not draining or drained).
    pub fn active(&self) -> bool {
        self.ctx.state() as u8 == dctc_state::ACTIVE
    }
}

impl Firmware {
    pub(super) fn dct_cmd(
        &mut self,
        ctx: &mut Bus,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        if self.caps.general("dct") == 0 {
            fail!(BAD_OP, "DCT command without the dct capability");
        }
        match op {
            cmds::CreateDct::OPCODE => self.create_dct(input, out),
            cmds::DrainDct::OPCODE => {
                let dctn = cmd_in::<cmds::DrainDct>(input)?.dctn();
                let d = self.dct_mut(dctn, "DRAIN_DCT")?;
                if !d.active() {
                    fail!(
                        BAD_RES_STATE,
                        "DRAIN_DCT of a DCT already drained",
                        "DCT {dctn:#x}"
                    );
                }
                d.ctx.set_state(dctc_state::DRAINED.into());
                // The engine closes the DCT's connections when it next syncs (it sees the
                // state); no request is taken meanwhile.
                let mut eqe = new_event(event_type::DCT_DRAINED, 0);
                eqe.qp_srq_mut()
                    .set_queue_type(event_queue_type::DCT.into());
                // mlx5_eqe_dct.dctn sits where mlx5_eqe_qp_srq.qp_srq_n does (data + 24).
                eqe.qp_srq_mut().set_qp_srq_n(dctn);
                let n = self.post_event(ctx, &eqe);
                log::debug!("DCT {dctn:#x} drained: DCT_DRAINED to {n} EQ(s)");
                Ok(())
            }
            cmds::DestroyDct::OPCODE => {
                let dctn = cmd_in::<cmds::DestroyDct>(input)?.dctn();
                self.dct_mut(dctn, "DESTROY_DCT")?;
                self.rdma.dcts.remove(&dctn);
                log::debug!("DCT {dctn:#x} destroyed");
                Ok(())
            }
            cmds::QueryDct::OPCODE => {
                let dctn = cmd_in::<cmds::QueryDct>(input)?.dctn();
                let c = self.dct_mut(dctn, "QUERY_DCT")?.ctx;
                *cmd_out::<cmds::QueryDct>(out)?.dct_context_entry_mut() = c;
                Ok(())
            }
            cmds::ArmDctForKeyViolation::OPCODE => {
                let dctn = cmd_in::<cmds::ArmDctForKeyViolation>(input)?.dct_number();
                self.dct_mut(dctn, "ARM_DCT_FOR_KEY_VIOLATION")?.armed = true;
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    fn dct_mut(&mut self, dctn: u32, what: &str) -> Result<&mut Dct, super::CmdError> {
        match self.rdma.dcts.get_mut(&dctn) {
            Some(d) => Ok(d),
            None => Err(super::CmdError::new(
                cx4_hw::status::BAD_RES,
                "DCT command on a DCT that does not exist",
                format!("{what} DCT {dctn:#x}"),
            )),
        }
    }

    fn create_dct(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let c = *cmd_in::<cmds::CreateDct>(input)?.dct_context_entry();
        if !self.pds.contains_key(&c.pd()) {
            fail!(
                BAD_RES,
                "CREATE_DCT in a PD that does not exist",
                "PD {:#x}",
                c.pd()
            );
        }
        if !self.cqs.contains_key(&c.cqn()) {
            fail!(
                BAD_RES,
                "CREATE_DCT with a CQ that does not exist",
                "CQ {:#x}",
                c.cqn()
            );
        }
        let srqn = c.srqn_xrqn();
        match self.rdma.srqs.get(&srqn) {
            None => fail!(
                BAD_RES,
                "CREATE_DCT with an SRQ that does not exist",
                "SRQ {srqn:#x}"
            ),
            Some(s) if s.kind == super::SrqKind::Xrc => {
                fail!(BAD_PARAM, "CREATE_DCT with an XRC SRQ", "SRQ {srqn:#x}")
            }
            Some(_) => {}
        }
        let ports = self.caps.general("num_ports").max(1) as u32;
        if c.port() == 0 || c.port() > ports {
            fail!(BAD_PARAM, "CREATE_DCT: bad port", "port {}", c.port());
        }
        if mtu::mtu_bytes(c.mtu() as u8).is_none() {
            fail!(BAD_PARAM, "CREATE_DCT: bad MTU", "code {}", c.mtu());
        }
        let idx = c.my_addr_index() as u16;
        if !self.ib_mode() && !self.rdma.gids.contains_key(&idx) {
            fail!(
                BAD_PARAM,
                "CREATE_DCT: source GID index not in the RoCE address table",
                "{idx}"
            );
        }
        if self.rdma.qps.len() + self.rdma.dcts.len() >= 1usize << self.caps.general("log_max_qp") {
            fail!(NO_RES, "CREATE_DCT: log_max_qp QPs and DCTs exist");
        }
        let mut dctn = self.alloc_id();
        while dctn <= 1 {
            dctn = self.alloc_id();
        }
        let mut ctx = c;
        ctx.set_state(dctc_state::ACTIVE.into());
        ctx.set_dc_access_key_violation_count(0);
        self.rdma.dcts.insert(
            dctn,
            Dct {
                dctn,
                ctx,
                armed: false,
            },
        );
        log::debug!(
            "DCT {dctn:#x}: pd {:#x} srq {srqn:#x} cq {:#x} key {:#x}",
            c.pd(),
            c.cqn(),
            c.dc_access_key()
        );
        cmd_out::<cmds::CreateDct>(out)?.set_dctn(dctn);
        Ok(())
    }

    /// A request reached DCT `dctn` with the wrong access key: counted in the context, and
    /// the `DCT_KEY_VIOLATION` event posted if armed (then disarmed).
    pub fn dct_key_violation(&mut self, ctx: &mut Bus, dctn: u32) {
        let Some(d) = self.rdma.dcts.get_mut(&dctn) else {
            return;
        };
        let n = d.ctx.dc_access_key_violation_count().wrapping_add(1);
        d.ctx.set_dc_access_key_violation_count(n);
        if !std::mem::take(&mut d.armed) {
            return;
        }
        let mut eqe = new_event(event_type::DCT_KEY_VIOLATION, 0);
        eqe.qp_srq_mut()
            .set_queue_type(event_queue_type::DCT.into());
        eqe.qp_srq_mut().set_qp_srq_n(dctn);
        self.post_event(ctx, &eqe);
    }
}
