//! Queue pairs: CREATE/DESTROY/QUERY_QP and the state machine of the transition commands.
//!
//! A QP keeps the context the driver gave it, as the transitions left it: each transition
//! takes the fields it requires (per service type, as the PRM and the IB specification list
//! them) and the optional ones the driver names in `opt_param_mask`, and ignores everything
//! else in the context it carries, as firmware does (mlx5_ib sends a context built afresh on
//! every modify, with the PD and CQs filled in each time). QUERY_QP returns that context.
//! Bad states answer BAD_QP_STATE, bad values BAD_PARAM, missing objects BAD_RES.

use cx4_hw::{
    command::{self as cmds, Command},
    qp::{mtu, qpc_st, qpc_state, rq_type, CreateQpIn, OptParam, Qpc, QueryQpOut},
    status,
};
use std::collections::BTreeMap;

use super::rdma::GidEntry;
use super::{
    cmd_in, cmd_out, fail, need_in, need_out, ring_pas, Bus, CmdError, CmdResult, Firmware,
};

/// The page geometry of a QP's buffer: receive queue first, then the send queue.
#[derive(Clone, Debug, Default)]
pub struct QpBuf {
    /// Buffer pages (guest addresses); shared, so that the RoCE engine's per-packet view of
    /// the QP (`roce::qp_view::QpView`) copies no list.
    pub pas: std::sync::Arc<[u64]>,
    /// log2 of the page size.
    pub page_shift: u8,
    /// Offset of the buffer in its first page, bytes.
    pub offset: u64,
    /// log2 of the receive WQE count (no receive queue: `rq_stride` 0).
    pub log_rq_size: u8,
    /// log2 of the receive WQE stride in bytes (0: no receive queue).
    pub log_rq_stride: u8,
    /// log2 of the send queue size in 64-byte basic blocks (`None`: no send queue).
    pub log_sq_size: Option<u8>,
}

impl QpBuf {
    /// Bytes of the receive queue.
    pub fn rq_bytes(&self) -> u64 {
        if self.log_rq_stride == 0 {
            0
        } else {
            1u64 << (self.log_rq_size + self.log_rq_stride)
        }
    }

    /// Bytes of the send queue.
    pub fn sq_bytes(&self) -> u64 {
        self.log_sq_size.map_or(0, |l| 64u64 << l)
    }
}

/// One queue pair.
#[derive(Clone)]
pub struct Qp {
    /// QP number.
    pub qpn: u32,
    /// Buffer.
    pub buf: QpBuf,
    /// The context, as CREATE and the transitions left it (its `state` is the QP's); the
    /// accessors below read the fields the device works with from it.
    pub ctx: Qpc,
}

impl Qp {
    /// Service type (`qpc_st`).
    pub fn st(&self) -> u8 {
        self.ctx.st() as u8
    }

    /// State (`qpc_state`).
    pub fn state(&self) -> u8 {
        self.ctx.state() as u8
    }

    fn set_state(&mut self, state: u8) {
        self.ctx.set_state(state.into());
    }

    /// Moves the QP to the error state on the RoCE engine's behalf (a completion in error);
    /// QUERY_QP reports it.
    pub fn set_error(&mut self) {
        self.set_state(qpc_state::ERR);
    }

    /// The QP context's `user_index` (what CQEs carry when `cqe_version` is 1).
    pub fn user_index(&self) -> u32 {
        self.ctx.user_index()
    }

    /// Doorbell record address.
    pub fn dbr(&self) -> u64 {
        self.ctx.dbr_addr()
    }

    /// Protection domain (0 only for a UMR QP before RST2INIT).
    pub fn pd(&self) -> u32 {
        self.ctx.pd()
    }

    /// Send CQ (0: none).
    pub fn cqn_snd(&self) -> u32 {
        self.ctx.cqn_snd()
    }

    /// Receive CQ (0: none).
    pub fn cqn_rcv(&self) -> u32 {
        self.ctx.cqn_rcv()
    }

    /// UAR page of its doorbells.
    pub fn uar_page(&self) -> u32 {
        self.ctx.uar_page()
    }
}

/// A context field a transition may take.
#[derive(Clone, Copy, Debug)]
enum F {
    Pd,
    PkeyIndex,
    Port,
    Rre,
    Rwe,
    Rae,
    QKey,
    Path,
    AltPath,
    Mtu,
    RemoteQpn,
    RcvPsn,
    SndPsn,
    RraMax,
    SraMax,
    MinRnrNak,
    AckTimeout,
    RetryCount,
    RnrRetry,
    PmState,
    Srqn,
    CqnRcv,
    CounterSetId,
}

fn take(dst: &mut Qpc, src: &Qpc, f: F) {
    let sp = src.primary_address_path();
    match f {
        F::Pd => dst.set_pd(src.pd()),
        F::PkeyIndex => dst
            .primary_address_path_mut()
            .set_pkey_index(sp.pkey_index()),
        F::Port => dst
            .primary_address_path_mut()
            .set_vhca_port_num(sp.vhca_port_num()),
        F::Rre => dst.set_rre(src.rre()),
        F::Rwe => dst.set_rwe(src.rwe()),
        F::Rae => {
            dst.set_rae(src.rae());
            dst.set_atomic_mode(src.atomic_mode());
        }
        F::QKey => dst.set_q_key(src.q_key()),
        F::Path => {
            // The whole address vector; the P_Key index and ACK timeout have their own bits.
            let d = dst.primary_address_path_mut();
            let (pkey, timeout) = (d.pkey_index(), d.ack_timeout());
            *d = *sp;
            d.set_pkey_index(pkey);
            d.set_ack_timeout(timeout);
        }
        F::AltPath => *dst.secondary_address_path_mut() = *src.secondary_address_path(),
        F::Mtu => {
            dst.set_mtu(src.mtu());
            dst.set_log_msg_max(src.log_msg_max());
        }
        F::RemoteQpn => dst.set_remote_qpn(src.remote_qpn()),
        F::RcvPsn => dst.set_next_rcv_psn(src.next_rcv_psn()),
        F::SndPsn => dst.set_next_send_psn(src.next_send_psn()),
        F::RraMax => dst.set_log_rra_max(src.log_rra_max()),
        F::SraMax => dst.set_log_sra_max(src.log_sra_max()),
        F::MinRnrNak => dst.set_min_rnr_nak(src.min_rnr_nak()),
        F::AckTimeout => dst
            .primary_address_path_mut()
            .set_ack_timeout(sp.ack_timeout()),
        F::RetryCount => dst.set_retry_count(src.retry_count()),
        F::RnrRetry => dst.set_rnr_retry(src.rnr_retry()),
        F::PmState => dst.set_pm_state(src.pm_state()),
        F::Srqn => dst.set_srqn_rmpn_xrqn(src.srqn_rmpn_xrqn()),
        F::CqnRcv => dst.set_cqn_rcv(src.cqn_rcv()),
        F::CounterSetId => dst.set_counter_set_id(src.counter_set_id()),
    }
}

/// The optional fields an `opt_param_mask` bit stands for.
fn optional_fields(mask: OptParam) -> impl Iterator<Item = F> {
    const TABLE: [(OptParam, F); 18] = [
        (OptParam::ALT_ADDR_PATH, F::AltPath),
        (OptParam::RRE, F::Rre),
        (OptParam::RAE, F::Rae),
        (OptParam::RWE, F::Rwe),
        (OptParam::PKEY_INDEX, F::PkeyIndex),
        (OptParam::Q_KEY, F::QKey),
        (OptParam::RNR_TIMEOUT, F::MinRnrNak),
        (OptParam::PRIMARY_ADDR_PATH, F::Path),
        (OptParam::SRA_MAX, F::SraMax),
        (OptParam::RRA_MAX, F::RraMax),
        (OptParam::PM_STATE, F::PmState),
        (OptParam::RETRY_COUNT, F::RetryCount),
        (OptParam::RNR_RETRY, F::RnrRetry),
        (OptParam::ACK_TIMEOUT, F::AckTimeout),
        (OptParam::PRI_PORT, F::Port),
        (OptParam::SRQN, F::Srqn),
        (OptParam::CQN_RCV, F::CqnRcv),
        (OptParam::COUNTER_SET_ID, F::CounterSetId),
    ];
    TABLE
        .into_iter()
        .filter(move |(b, _)| mask.contains(*b))
        .map(|(_, f)| f)
}

/// Connected service types (a remote QP, PSNs, an address path).
fn connected(st: u8) -> bool {
    matches!(st, qpc_st::RC | qpc_st::UC | qpc_st::XRC)
}

/// Reliable service types (ACKs, retries, RDMA reads and atomics).
fn reliable(st: u8) -> bool {
    matches!(st, qpc_st::RC | qpc_st::XRC)
}

/// A DC initiator: reliable requests to the DCT each WQE names (no remote QP, no responder;
/// mlx5_ib `modify_dci_qp_is_ok`).
fn dci(st: u8) -> bool {
    st == qpc_st::DCI
}

/// A transition: the states it leaves, the state it enters, and the fields it requires of a
/// QP of service type `st`.
struct Transition {
    name: &'static str,
    from: &'static [u8],
    to: u8,
    required: fn(u8) -> Vec<F>,
}

fn transition(op: u16) -> Option<Transition> {
    use qpc_state::*;
    let t = |name, from, to, required| {
        Some(Transition {
            name,
            from,
            to,
            required,
        })
    };
    match op {
        cmds::Rst2InitQp::OPCODE => t("RST2INIT_QP", &[RST], INIT, |st| match st {
            qpc_st::RC | qpc_st::XRC => {
                vec![
                    F::PkeyIndex,
                    F::Port,
                    F::Rre,
                    F::Rwe,
                    F::Rae,
                    F::CounterSetId,
                ]
            }
            qpc_st::UC => vec![F::PkeyIndex, F::Port, F::Rwe, F::CounterSetId],
            qpc_st::DCI => vec![F::PkeyIndex, F::Port, F::CounterSetId],
            qpc_st::REG_UMR => vec![F::Port, F::Pd],
            _ => vec![F::PkeyIndex, F::Port, F::QKey, F::CounterSetId],
        }),
        cmds::Init2InitQp::OPCODE => t("INIT2INIT_QP", &[INIT], INIT, |_| vec![]),
        cmds::Init2RtrQp::OPCODE => t("INIT2RTR_QP", &[INIT], RTR, |st| {
            let mut v = vec![F::Mtu];
            if connected(st) {
                v.extend([F::Path, F::RemoteQpn, F::RcvPsn]);
            }
            if reliable(st) {
                v.extend([F::RraMax, F::MinRnrNak]);
            }
            v
        }),
        cmds::Rtr2RtsQp::OPCODE => t("RTR2RTS_QP", &[RTR], RTS, |st| {
            let mut v = vec![F::SndPsn];
            if reliable(st) || dci(st) {
                v.extend([F::AckTimeout, F::RetryCount, F::RnrRetry, F::SraMax]);
            }
            v
        }),
        cmds::Rts2RtsQp::OPCODE => t("RTS2RTS_QP", &[RTS], RTS, |_| vec![]),
        cmds::Sqerr2RtsQp::OPCODE => t("SQERR2RTS_QP", &[SQER], RTS, |_| vec![]),
        cmds::Sqd2RtsQp::OPCODE => t("SQD_RTS_QP", &[SQD], RTS, |_| vec![]),
        _ => None,
    }
}

impl Firmware {
    pub(super) fn qp_cmd(
        &mut self,
        ctx: &mut Bus,
        op: u16,
        input: &[u8],
        out: &mut [u8],
    ) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        match op {
            cmds::CreateQp::OPCODE => self.create_qp(ctx, input, out),
            cmds::DestroyQp::OPCODE => {
                let qpn = cmd_in::<cmds::DestroyQp>(input)?.qpn();
                let Some(qp) = self.rdma.qps.remove(&qpn) else {
                    fail!(
                        BAD_RES,
                        "DESTROY_QP of a QP that does not exist",
                        "QP {qpn:#x}"
                    );
                };
                for members in self.rdma.mcgs.values_mut() {
                    members.remove(&qpn);
                }
                self.rdma.mcgs.retain(|_, m| !m.is_empty());
                if self.rdma.gsi == Some(qpn) {
                    self.rdma.gsi = None;
                }
                if self.rdma.smi == Some(qpn) {
                    self.rdma.smi = None;
                }
                self.rdma.qp_events.push((qpn, super::QP_DESTROYED));
                log::debug!("QP {qpn:#x} ({}) destroyed", qpc_st::qpc_st_name(qp.st()));
                Ok(())
            }
            cmds::QueryQp::OPCODE => {
                let inp = cmd_in::<cmds::QueryQp>(input)?;
                let (qpn, ext) = (inp.qpn(), inp.qpc_ext() != 0);
                let Some(qp) = self.rdma.qps.get(&qpn) else {
                    fail!(
                        BAD_RES,
                        "QUERY_QP of a QP that does not exist",
                        "QP {qpn:#x}"
                    );
                };
                let (ctx, pas) = (qp.ctx, qp.buf.pas.clone());
                *cmd_out::<cmds::QueryQp>(out)?.qpc_mut() = ctx;
                // As many page addresses as the output has room for.
                for (i, &pa) in pas.iter().enumerate() {
                    if QueryQpOut::set_pas(out, ext, i, pa).is_err() {
                        break;
                    }
                }
                Ok(())
            }
            cmds::ToErrQp::OPCODE => {
                let qpn = cmd_in::<cmds::ToErrQp>(input)?.qpn();
                let Some(qp) = self.rdma.qps.get_mut(&qpn) else {
                    fail!(
                        BAD_RES,
                        "2ERR_QP of a QP that does not exist",
                        "QP {qpn:#x}"
                    );
                };
                qp.set_state(qpc_state::ERR);
                self.rdma.qp_events.push((qpn, qpc_state::ERR));
                Ok(())
            }
            cmds::ToRstQp::OPCODE => {
                let qpn = cmd_in::<cmds::ToRstQp>(input)?.qpn();
                let Some(qp) = self.rdma.qps.get_mut(&qpn) else {
                    fail!(
                        BAD_RES,
                        "2RST_QP of a QP that does not exist",
                        "QP {qpn:#x}"
                    );
                };
                qp.set_state(qpc_state::RST);
                self.rdma.qp_events.push((qpn, qpc_state::RST));
                Ok(())
            }
            _ => self.modify_qp(op, input),
        }
    }

    fn create_qp(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::CreateQp>(input)?;
        let c = inp.qpc();
        let st = c.st() as u8;
        let cap = match st {
            qpc_st::RC => "rc",
            qpc_st::UC => "uc",
            qpc_st::UD | qpc_st::QP1 | qpc_st::REG_UMR => "ud",
            // The SMI QP exists on an InfiniBand port only (mlx5_ib creates it when the
            // port has an SMI, `has_smi`).
            qpc_st::QP0 if self.ib_mode() => "ud",
            qpc_st::XRC => "xrc",
            qpc_st::DCI => "dct",
            _ => fail!(
                BAD_PARAM,
                "CREATE_QP: unsupported service type",
                "st {st:#x}"
            ),
        };
        if self.caps.general(cap) == 0 {
            fail!(BAD_PARAM, "CREATE_QP: service type not enabled", "{cap}");
        }
        if inp.input_qpn() != 0 {
            fail!(BAD_PARAM, "CREATE_QP: input_qpn without the capability");
        }
        if st == qpc_st::QP1 && self.rdma.gsi.is_some() {
            fail!(BAD_PARAM, "CREATE_QP: the port already has its QP1");
        }
        if st == qpc_st::QP0 && self.rdma.smi.is_some() {
            fail!(BAD_PARAM, "CREATE_QP: the port already has its QP0");
        }
        if self.rdma.qps.len() as u64 >= 1u64 << self.caps.general("log_max_qp") {
            fail!(NO_RES, "CREATE_QP: log_max_qp QPs exist");
        }
        let pd = c.pd();
        // mlx5_ib creates its UMR QP without a PD (qp.c create_kernel_qp) and gives it one at
        // RST2INIT.
        let umr_without_pd = st == qpc_st::REG_UMR && pd == 0;
        if !umr_without_pd && !self.pds.contains_key(&pd) {
            fail!(
                BAD_RES,
                "CREATE_QP in a PD that does not exist",
                "PD {pd:#x}"
            );
        }
        for (what, cqn) in [("send", c.cqn_snd()), ("receive", c.cqn_rcv())] {
            if cqn != 0 && !self.cqs.contains_key(&cqn) {
                fail!(
                    BAD_RES,
                    "CREATE_QP with a CQ that does not exist",
                    "{what} CQ {cqn:#x}"
                );
            }
        }
        if st != qpc_st::XRC && c.cqn_snd() == 0 && c.no_sq() == 0 {
            fail!(BAD_PARAM, "CREATE_QP: a send queue without a send CQ");
        }
        // The UAR page is where the send queue's doorbells ring: a QP without one (an XRC
        // target, `no_sq`; mlx5_ib's create_xrc_tgt_qp leaves it 0) names none.
        let uar = c.uar_page();
        if c.no_sq() == 0 && !self.uars.contains_key(&uar) {
            fail!(
                BAD_RES,
                "CREATE_QP with a UAR page not allocated",
                "UAR {uar}"
            );
        }
        if st == qpc_st::XRC && c.xrcd() != 0 && !self.rdma.xrcds.contains(&c.xrcd()) {
            fail!(
                BAD_RES,
                "CREATE_QP in an XRC domain that does not exist",
                "XRCD {:#x}",
                c.xrcd()
            );
        }
        let rqt = c.rq_type() as u8;
        let max_sz = self.caps.general("log_max_qp_sz") as u32;
        let mut buf = QpBuf {
            page_shift: 12 + c.log_page_size() as u8,
            ..QpBuf::default()
        };
        match rqt {
            rq_type::NON_ZERO_RQ => {
                if c.log_rq_size() > max_sz {
                    fail!(
                        BAD_PARAM,
                        "CREATE_QP: RQ larger than log_max_qp_sz",
                        "{}",
                        c.log_rq_size()
                    );
                }
                let stride = c.log_rq_stride() + 4;
                let max_rq = (self.caps.general("max_wqe_sz_rq") as u32).max(16);
                if 1u32 << stride > max_rq {
                    fail!(
                        BAD_PARAM,
                        "CREATE_QP: RQ WQE larger than max_wqe_sz_rq",
                        "{}",
                        1u32 << stride
                    );
                }
                buf.log_rq_size = c.log_rq_size() as u8;
                buf.log_rq_stride = stride as u8;
            }
            rq_type::SRQ_RQ => {
                let n = c.srqn_rmpn_xrqn();
                if !self.rdma.srqs.contains_key(&n) {
                    fail!(
                        BAD_RES,
                        "CREATE_QP with an SRQ that does not exist",
                        "SRQ {n:#x}"
                    );
                }
            }
            rq_type::ZERO_LEN_RQ => {}
            _ => fail!(BAD_PARAM, "CREATE_QP: unsupported rq_type", "{rqt}"),
        }
        if c.no_sq() == 0 {
            if c.log_sq_size() > max_sz {
                fail!(
                    BAD_PARAM,
                    "CREATE_QP: SQ larger than log_max_qp_sz",
                    "{}",
                    c.log_sq_size()
                );
            }
            buf.log_sq_size = Some(c.log_sq_size() as u8);
        }
        if buf.page_shift > 30 {
            fail!(
                BAD_PARAM,
                "CREATE_QP: page size unsupported",
                "log_page_size {}",
                c.log_page_size()
            );
        }
        // page_offset counts 64ths of a page.
        buf.offset = u64::from(c.page_offset()) << (buf.page_shift - 6);
        let bytes = buf.offset + buf.rq_bytes() + buf.sq_bytes();
        if bytes > buf.offset {
            buf.pas = ring_pas(
                &ctx.mem,
                input,
                bytes,
                buf.page_shift.into(),
                CreateQpIn::pas,
            )?
            .into();
        }
        let dbr = c.dbr_addr();
        let mut probe = [0u8; 8];
        if buf.rq_bytes() + buf.sq_bytes() > 0
            && (!dbr.is_multiple_of(4) || ctx.mem.read(dbr, &mut probe).is_err())
        {
            fail!(
                BAD_PARAM,
                "CREATE_QP: doorbell record not in guest memory",
                "{dbr:#x}"
            );
        }
        // QP numbers 0 and 1 are the BTH's special QPs (SMI, GSI): never a real QP's number.
        let mut qpn = self.alloc_id();
        while qpn <= 1 {
            qpn = self.alloc_id();
        }
        let mut qp = Qp { qpn, buf, ctx: *c };
        qp.set_state(qpc_state::RST);
        if st == qpc_st::QP1 {
            self.rdma.gsi = Some(qpn);
        }
        if st == qpc_st::QP0 {
            self.rdma.smi = Some(qpn);
        }
        log::debug!(
            "QP {qpn:#x}: {} sq 2^{:?} rq 2^{}x{}",
            qpc_st::qpc_st_name(st),
            qp.buf.log_sq_size,
            qp.buf.log_rq_size,
            qp.buf.log_rq_stride
        );
        self.rdma.qps.insert(qpn, qp);
        cmd_out::<cmds::CreateQp>(out)?.set_qpn(qpn);
        Ok(())
    }

    /// The transitions that carry a context: INIT2INIT … SQD_RTS. Their inputs share
    /// RST2INIT_QP's layout (qpn, opt_param_mask, qpc at the same offsets).
    fn modify_qp(&mut self, op: u16, input: &[u8]) -> CmdResult {
        let Some(t) = transition(op) else {
            unreachable!("dispatched by opcode")
        };
        let inp = cmd_in::<cmds::Rst2InitQp>(input)?;
        let (qpn, mask) = (inp.qpn(), OptParam::from_bits_retain(inp.opt_param_mask()));
        let src = *inp.qpc();
        let caps = Limits::of(self);
        let pd_ok = self.pds.contains_key(&src.pd());
        let gids = &self.rdma.gids;
        let Some(qp) = self.rdma.qps.get_mut(&qpn) else {
            return Err(CmdError::new(
                status::BAD_RES,
                "QP transition of a QP that does not exist",
                format!("{} QP {qpn:#x}", t.name),
            ));
        };
        if !t.from.contains(&qp.state()) {
            return Err(CmdError::new(
                status::BAD_QP_STATE,
                "QP transition from the wrong state",
                format!(
                    "{} on QP {qpn:#x} in {}",
                    t.name,
                    qpc_state::qpc_state_name(qp.state())
                ),
            ));
        }
        let mut next = qp.ctx;
        for f in (t.required)(qp.st())
            .into_iter()
            .chain(optional_fields(mask))
        {
            take(&mut next, &src, f);
        }
        check_context(qp.st(), t.to, &next, &caps, gids).map_err(|why| {
            CmdError::new(
                status::BAD_PARAM,
                "QP transition: bad context",
                format!("{} on QP {qpn:#x}: {why}", t.name),
            )
        })?;
        // Only a UMR QP's RST2INIT takes a PD (it was created without one).
        if next.pd() != qp.pd() && !pd_ok {
            fail!(
                BAD_RES,
                "QP transition: PD does not exist",
                "{} on QP {qpn:#x}: PD {:#x}",
                t.name,
                next.pd()
            );
        }
        next.set_state(t.to.into());
        qp.ctx = next;
        self.rdma.qp_events.push((qpn, t.to));
        Ok(())
    }
}

/// The capability limits a context is checked against.
struct Limits {
    ports: u32,
    pkeys: u32,
    log_max_msg: u32,
    log_rra: u32,
    log_sra: u32,
    log_sra_dc: u32,
    /// The port is InfiniBand (paths by LID, not by the RoCE address table).
    ib: bool,
}

impl Limits {
    fn of(fw: &Firmware) -> Self {
        Limits {
            ports: fw.caps.general("num_ports").max(1) as u32,
            // pkey_table_size is encoded: 0 means 128 entries.
            pkeys: 128 << fw.caps.general("pkey_table_size"),
            log_max_msg: fw.caps.general("log_max_msg") as u32,
            log_rra: fw.caps.general("log_max_ra_res_qp") as u32,
            log_sra: fw.caps.general("log_max_ra_req_qp") as u32,
            log_sra_dc: fw.caps.general("log_max_ra_req_dc") as u32,
            ib: fw.ib_mode(),
        }
    }
}

/// Checks the context a QP of type `st` would have in state `to`.
fn check_context(
    st: u8,
    to: u8,
    c: &Qpc,
    l: &Limits,
    gids: &BTreeMap<u16, GidEntry>,
) -> Result<(), String> {
    let p = c.primary_address_path();
    let port = p.vhca_port_num();
    if to == qpc_state::INIT && (port == 0 || port > l.ports) {
        return Err(format!("port {port}"));
    }
    if p.pkey_index() >= l.pkeys {
        return Err(format!("P_Key index {}", p.pkey_index()));
    }
    if to == qpc_state::RTR || to == qpc_state::RTS {
        let m = c.mtu() as u8;
        if (connected(st) || dci(st)) && mtu::mtu_bytes(m).is_none() {
            return Err(format!("path MTU code {m}"));
        }
        if c.log_msg_max() > l.log_max_msg {
            return Err(format!(
                "log_msg_max {} > {}",
                c.log_msg_max(),
                l.log_max_msg
            ));
        }
        if connected(st) {
            if c.remote_qpn() == 0 {
                return Err("remote QPN 0".into());
            }
            let idx = p.src_addr_index() as u16;
            // On an IB port the source GID (of a GRH path) is one of the port's GUIDInfo
            // GIDs; a local path (no GRH) names none.
            if l.ib {
                if p.grh() != 0 && usize::from(idx) >= super::ib_port::GUID_CAP {
                    return Err(format!("source GID index {idx} beyond the port's GIDs"));
                }
            } else if !gids.contains_key(&idx) {
                return Err(format!(
                    "source GID index {idx} not in the RoCE address table"
                ));
            }
        }
        if reliable(st) && c.log_rra_max() > l.log_rra {
            return Err(format!("log_rra_max {}", c.log_rra_max()));
        }
    }
    if to == qpc_state::RTS && reliable(st) && c.log_sra_max() > l.log_sra {
        return Err(format!("log_sra_max {}", c.log_sra_max()));
    }
    if to == qpc_state::RTS && dci(st) && c.log_sra_max() > l.log_sra_dc {
        return Err(format!("log_sra_max {} (DCI)", c.log_sra_max()));
    }
    Ok(())
}
