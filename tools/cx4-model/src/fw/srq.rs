//! Shared receive queues in their three forms: the ISSI-0 SRQ (CREATE_SRQ), the receive memory
//! pool that replaces it from ISSI 1 (CREATE_RMP, what mlx5_ib uses for a basic SRQ), and the
//! XRC SRQ (CREATE_XRC_SRQ). A QP whose `rq_type` is SRQ receives from one of them
//! (`srqn_rmpn_xrqn`). The limit event is armed by ARM_RQ, ARM_XRC_SRQ or MODIFY_RMP.

use cx4_hw::{
    command::{self as cmds, Command},
    qp::rq_type,
    srq::{rmpc_state, srqc_state, CreateRmpIn, CreateSrqIn, CreateXrcSrqIn},
};

use super::{
    cmd_in, cmd_out, fail, need_in, need_out, qp::QpBuf, ring_pas, wq::WqDesc, Bus, CmdError,
    CmdResult, Firmware,
};

/// Which command family created an SRQ (each is queried and destroyed by its own family).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqKind {
    /// CREATE_SRQ (ISSI 0).
    Srq,
    /// CREATE_RMP.
    Rmp,
    /// CREATE_XRC_SRQ.
    Xrc,
}

/// One shared receive queue.
#[derive(Clone, Debug)]
pub struct Srq {
    /// Number.
    pub srqn: u32,
    /// Family.
    pub kind: SrqKind,
    /// Protection domain of its WQEs' lkeys.
    pub pd: u32,
    /// Completion queue (XRC SRQs complete to their own CQ; 0: the QP's).
    pub cqn: u32,
    /// XRC domain (XRC SRQs).
    pub xrcd: u32,
    /// User index reported in CQEs.
    pub user_index: u32,
    /// Ring: receive WQEs (each starting with a 16-byte next segment).
    pub buf: QpBuf,
    /// Doorbell record (the producer counter at +0).
    pub dbr: u64,
    /// Limit watermark; the limit event fires once when fewer WQEs remain, if armed.
    pub lwm: u16,
    /// In error (a WQE the device could not use).
    pub error: bool,
}

impl Firmware {
    pub(super) fn srq_cmd(
        &mut self,
        ctx: &mut Bus,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        match op {
            cmds::CreateSrq::OPCODE => {
                let c = cmd_in::<cmds::CreateSrq>(input)?.srq_context_entry();
                let s = self.new_srq(
                    ctx,
                    input,
                    SrqKind::Srq,
                    Geometry {
                        log_size: c.log_srq_size(),
                        log_stride: c.log_rq_stride(),
                        log_page_size: c.log_page_size(),
                        page_offset: c.page_offset(),
                        pd: c.pd(),
                        cqn: c.cqn(),
                        xrcd: 0,
                        user_index: 0,
                        dbr: c.dbr_addr(),
                    },
                    CreateSrqIn::pas,
                )?;
                cmd_out::<cmds::CreateSrq>(out)?.set_srqn(s);
                Ok(())
            }
            cmds::CreateXrcSrq::OPCODE => {
                let c = cmd_in::<cmds::CreateXrcSrq>(input)?.xrc_srq_context_entry();
                let xrcd = c.xrcd();
                if !self.rdma.xrcds.contains(&xrcd) {
                    fail!(
                        BAD_RES,
                        "CREATE_XRC_SRQ in an XRC domain that does not exist",
                        "XRCD {xrcd:#x}"
                    );
                }
                let dbr = (u64::from(c.db_record_addr_h()) << 32)
                    | (u64::from(c.db_record_addr_l()) << 2);
                let s = self.new_srq(
                    ctx,
                    input,
                    SrqKind::Xrc,
                    Geometry {
                        log_size: c.log_xrc_srq_size(),
                        log_stride: c.log_rq_stride(),
                        log_page_size: c.log_page_size(),
                        page_offset: c.page_offset(),
                        pd: c.pd(),
                        cqn: c.cqn(),
                        xrcd,
                        user_index: c.user_index(),
                        dbr,
                    },
                    CreateXrcSrqIn::pas,
                )?;
                cmd_out::<cmds::CreateXrcSrq>(out)?.set_xrc_srqn(s);
                Ok(())
            }
            cmds::CreateRmp::OPCODE => {
                let inp = cmd_in::<cmds::CreateRmp>(input)?;
                let c = inp.ctx();
                if c.state() as u8 != rmpc_state::RDY {
                    fail!(
                        BAD_PARAM,
                        "CREATE_RMP not in the ready state",
                        "state {}",
                        c.state()
                    );
                }
                let wq = WqDesc::parse(self, ctx, c.wq(), input, CreateRmpIn::wq_pas, "RMP")?;
                if wq.log_stride < 4 {
                    fail!(
                        BAD_PARAM,
                        "CREATE_RMP: WQE stride below 16 bytes",
                        "{}",
                        wq.log_stride
                    );
                }
                if self.rdma.srqs.len() as u64 >= 1u64 << self.caps.general("log_max_rmp") {
                    fail!(NO_RES, "CREATE_RMP: log_max_rmp RMPs exist");
                }
                let srqn = self.alloc_id();
                self.rdma.srqs.insert(
                    srqn,
                    Srq {
                        srqn,
                        kind: SrqKind::Rmp,
                        pd: wq.pd,
                        cqn: 0,
                        xrcd: 0,
                        user_index: 0,
                        buf: QpBuf {
                            pas: wq.pas.as_slice().into(),
                            page_shift: wq.page_shift,
                            offset: wq.offset,
                            log_rq_size: wq.log_size,
                            log_rq_stride: wq.log_stride,
                            log_sq_size: None,
                        },
                        dbr: wq.dbr,
                        lwm: c.wq().lwm() as u16,
                        error: false,
                    },
                );
                cmd_out::<cmds::CreateRmp>(out)?.set_rmpn(srqn);
                Ok(())
            }
            cmds::DestroySrq::OPCODE => {
                self.destroy_srq(SrqKind::Srq, cmd_in::<cmds::DestroySrq>(input)?.srqn())
            }
            cmds::DestroyXrcSrq::OPCODE => self.destroy_srq(
                SrqKind::Xrc,
                cmd_in::<cmds::DestroyXrcSrq>(input)?.xrc_srqn(),
            ),
            cmds::DestroyRmp::OPCODE => {
                self.destroy_srq(SrqKind::Rmp, cmd_in::<cmds::DestroyRmp>(input)?.rmpn())
            }
            cmds::QuerySrq::OPCODE => {
                let s = self
                    .srq(SrqKind::Srq, cmd_in::<cmds::QuerySrq>(input)?.srqn())?
                    .clone();
                let c = cmd_out::<cmds::QuerySrq>(out)?.srq_context_entry_mut();
                c.set_state(
                    if s.error {
                        srqc_state::ERROR
                    } else {
                        srqc_state::GOOD
                    }
                    .into(),
                );
                c.set_log_srq_size(s.buf.log_rq_size.into());
                c.set_log_rq_stride(u32::from(s.buf.log_rq_stride) - 4);
                c.set_log_page_size(u32::from(s.buf.page_shift) - 12);
                c.set_page_offset((s.buf.offset >> (s.buf.page_shift - 6)) as u32);
                c.set_pd(s.pd);
                c.set_cqn(s.cqn);
                c.set_lwm(s.lwm.into());
                c.set_dbr_addr(s.dbr);
                Ok(())
            }
            cmds::QueryXrcSrq::OPCODE => {
                let s = self
                    .srq(SrqKind::Xrc, cmd_in::<cmds::QueryXrcSrq>(input)?.xrc_srqn())?
                    .clone();
                let c = cmd_out::<cmds::QueryXrcSrq>(out)?.xrc_srq_context_entry_mut();
                c.set_state(
                    if s.error {
                        srqc_state::ERROR
                    } else {
                        srqc_state::GOOD
                    }
                    .into(),
                );
                c.set_log_xrc_srq_size(s.buf.log_rq_size.into());
                c.set_log_rq_stride(u32::from(s.buf.log_rq_stride) - 4);
                c.set_log_page_size(u32::from(s.buf.page_shift) - 12);
                c.set_page_offset((s.buf.offset >> (s.buf.page_shift - 6)) as u32);
                c.set_pd(s.pd);
                c.set_cqn(s.cqn);
                c.set_xrcd(s.xrcd);
                c.set_user_index(s.user_index);
                c.set_lwm(s.lwm.into());
                c.set_db_record_addr_h((s.dbr >> 32) as u32);
                c.set_db_record_addr_l((s.dbr as u32) >> 2);
                Ok(())
            }
            cmds::QueryRmp::OPCODE => {
                let s = self
                    .srq(SrqKind::Rmp, cmd_in::<cmds::QueryRmp>(input)?.rmpn())?
                    .clone();
                let c = cmd_out::<cmds::QueryRmp>(out)?.rmp_context_mut();
                c.set_state(
                    if s.error {
                        rmpc_state::ERR
                    } else {
                        rmpc_state::RDY
                    }
                    .into(),
                );
                c.set_basic_cyclic_rcv_wqe(0);
                let w = c.wq_mut();
                w.set_pd(s.pd);
                w.set_dbr_addr(s.dbr);
                w.set_log_wq_stride(s.buf.log_rq_stride.into());
                w.set_log_wq_pg_sz(u32::from(s.buf.page_shift) - 12);
                w.set_page_offset((s.buf.offset >> (s.buf.page_shift - 6)) as u32);
                w.set_log_wq_sz(s.buf.log_rq_size.into());
                w.set_lwm(s.lwm.into());
                Ok(())
            }
            cmds::ArmRq::OPCODE => {
                let inp = cmd_in::<cmds::ArmRq>(input)?;
                // mlx5_ib arms RMPs through MODIFY_RMP; ARM_RQ reaches ISSI-0 SRQs.
                let (n, lwm) = (inp.srq_number(), inp.lwm());
                self.srq_mut(SrqKind::Srq, n)?.lwm = lwm as u16;
                Ok(())
            }
            cmds::ArmXrcSrq::OPCODE => {
                let inp = cmd_in::<cmds::ArmXrcSrq>(input)?;
                let lwm = inp.lwm();
                self.srq_mut(SrqKind::Xrc, inp.xrc_srqn())?.lwm = lwm as u16;
                Ok(())
            }
            cmds::ModifyRmp::OPCODE => {
                let inp = cmd_in::<cmds::ModifyRmp>(input)?;
                let (n, from, to) = (inp.rmpn(), inp.rmp_state() as u8, inp.ctx().state() as u8);
                let lwm_sel = inp.bitmask().lwm() != 0;
                let lwm = inp.ctx().wq().lwm();
                let s = self.srq_mut(SrqKind::Rmp, n)?;
                let cur = if s.error {
                    rmpc_state::ERR
                } else {
                    rmpc_state::RDY
                };
                if from != cur {
                    fail!(
                        BAD_RES_STATE,
                        "MODIFY_RMP from a state the RMP is not in",
                        "RMP {n:#x} is {cur}, not {from}"
                    );
                }
                if to != rmpc_state::RDY && to != rmpc_state::ERR {
                    fail!(BAD_PARAM, "MODIFY_RMP to an unknown state", "{to}");
                }
                s.error = to == rmpc_state::ERR;
                if lwm_sel {
                    s.lwm = lwm as u16;
                }
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    fn srq(&self, kind: SrqKind, n: u32) -> Result<&Srq, CmdError> {
        match self.rdma.srqs.get(&n) {
            Some(s) if s.kind == kind => Ok(s),
            _ => Err(CmdError::new(
                cx4_hw::status::BAD_RES,
                "SRQ command on an SRQ that does not exist",
                format!("{kind:?} {n:#x}"),
            )),
        }
    }

    fn srq_mut(&mut self, kind: SrqKind, n: u32) -> Result<&mut Srq, CmdError> {
        match self.rdma.srqs.get_mut(&n) {
            Some(s) if s.kind == kind => Ok(s),
            _ => Err(CmdError::new(
                cx4_hw::status::BAD_RES,
                "SRQ command on an SRQ that does not exist",
                format!("{kind:?} {n:#x}"),
            )),
        }
    }

    fn destroy_srq(&mut self, kind: SrqKind, n: u32) -> CmdResult {
        self.srq(kind, n)?;
        if let Some(q) = self
            .rdma
            .qps
            .values()
            .find(|q| q.ctx.rq_type() as u8 == rq_type::SRQ_RQ && q.ctx.srqn_rmpn_xrqn() == n)
        {
            fail!(
                BAD_RES_STATE,
                "destroying an SRQ a QP still receives from",
                "{kind:?} {n:#x} used by QP {:#x}",
                q.qpn
            );
        }
        if let Some(d) = self.rdma.dcts.values().find(|d| d.ctx.srqn_xrqn() == n) {
            fail!(
                BAD_RES_STATE,
                "destroying an SRQ a DCT still receives from",
                "{kind:?} {n:#x} used by DCT {:#x}",
                d.dctn
            );
        }
        self.rdma.srqs.remove(&n);
        Ok(())
    }

    /// Creates an ISSI-0 or XRC SRQ from its context's geometry and the input's page list.
    fn new_srq(
        &mut self,
        ctx: &mut Bus,
        input: &[u8],
        kind: SrqKind,
        g: Geometry,
        pas: impl Fn(&[u8], usize) -> Option<u64>,
    ) -> Result<u32, CmdError> {
        let what = match kind {
            SrqKind::Srq => "CREATE_SRQ",
            SrqKind::Xrc => "CREATE_XRC_SRQ",
            SrqKind::Rmp => "CREATE_RMP",
        };
        if g.log_size > self.caps.general("log_max_srq_sz") as u32 {
            fail!(
                BAD_PARAM,
                "SRQ larger than log_max_srq_sz",
                "{what}: {}",
                g.log_size
            );
        }
        let stride = g.log_stride + 4;
        if 1u32 << stride > (self.caps.general("max_wqe_sz_rq") as u32).max(16) {
            fail!(
                BAD_PARAM,
                "SRQ WQE larger than max_wqe_sz_rq",
                "{what}: {}",
                1u32 << stride
            );
        }
        if !self.pds.contains_key(&g.pd) {
            fail!(
                BAD_RES,
                "SRQ in a PD that does not exist",
                "{what}: PD {:#x}",
                g.pd
            );
        }
        if g.cqn != 0 && !self.cqs.contains_key(&g.cqn) {
            fail!(
                BAD_RES,
                "SRQ with a CQ that does not exist",
                "{what}: CQ {:#x}",
                g.cqn
            );
        }
        if self.rdma.srqs.len() as u64 >= 1u64 << self.caps.general("log_max_srq") {
            fail!(NO_RES, "log_max_srq SRQs exist", "{what}");
        }
        let page_shift = 12 + g.log_page_size;
        if page_shift > 30 {
            fail!(
                BAD_PARAM,
                "SRQ page size unsupported",
                "{what}: log_page_size {}",
                g.log_page_size
            );
        }
        let mut buf = QpBuf {
            page_shift: page_shift as u8,
            log_rq_size: g.log_size as u8,
            log_rq_stride: stride as u8,
            ..QpBuf::default()
        };
        buf.offset = u64::from(g.page_offset) << (page_shift - 6);
        buf.pas = ring_pas(
            &ctx.mem,
            input,
            buf.offset + buf.rq_bytes(),
            page_shift,
            pas,
        )?
        .into();
        let mut probe = [0u8; 4];
        if !g.dbr.is_multiple_of(4) || ctx.mem.read(g.dbr, &mut probe).is_err() {
            fail!(
                BAD_PARAM,
                "SRQ doorbell record not in guest memory",
                "{what}: {:#x}",
                g.dbr
            );
        }
        let srqn = self.alloc_id();
        self.rdma.srqs.insert(
            srqn,
            Srq {
                srqn,
                kind,
                pd: g.pd,
                cqn: g.cqn,
                xrcd: g.xrcd,
                user_index: g.user_index,
                buf,
                dbr: g.dbr,
                lwm: 0,
                error: false,
            },
        );
        Ok(srqn)
    }
}

/// The fields an SRQ context gives, whichever its family.
struct Geometry {
    log_size: u32,
    log_stride: u32,
    log_page_size: u32,
    page_offset: u32,
    pd: u32,
    cqn: u32,
    xrcd: u32,
    user_index: u32,
    dbr: u64,
}
