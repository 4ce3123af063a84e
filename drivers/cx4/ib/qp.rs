// SPDX-License-Identifier: GPL-2.0
//! Queue pairs (mlx5_ib qp.c `create_user_qp`, `create_kernel_qp`, `create_xrc_tgt_qp`,
//! `__mlx5_ib_modify_qp`, `mlx5_ib_query_qp`): RC, UC, UD and XRC initiator QPs whose work
//! queues and doorbell record libmlx5 allocates in the process's memory, kernel users' RC,
//! UC, UD and GSI QPs on the driver's rings (kqp.rs), and XRC target QPs (no queues: their
//! messages land in the XRC SRQs of their domain). XRC QPs are service type XRC and move
//! through the states like RC ones.
//!
//! - Create: the buffer (receive queue first, then send queue: `rq_wqe_count << rq_wqe_shift`
//!   plus `sq_wqe_count` 64-byte basic blocks) is pinned, its 4 KiB pages `CREATE_QP`'s page
//!   list; the doorbell register is the context's bfreg 0 (static UARs: libmlx5 sends no UAR
//!   flag, mlx5_ib's index `bfregn / 2 * 4 + bfregn % 2` goes back, the QP context names that
//!   bfreg's page), or the dynamic UAR page libmlx5 names (`MLX5_QP_FLAG_UAR_PAGE_INDEX`).
//! - Modify: each IB transition is the PRM command of the (current, next) state pair with a
//!   QP context built from the attributes exactly as mlx5_ib builds it for RoCE (address
//!   path: GID index → `src_addr_index`, the destination MAC the core resolved, the RoCE v2
//!   UDP source port from the flow label, hop limit, traffic class, DSCP, priority), and the
//!   optional-parameter mask of the attributes the transition may change (mlx5_ib's
//!   `opt_mask` table).
//! - Raw packet QPs are Ethernet objects rather than a QP on the card: rawqp.rs.

use cx4_hw::{
    command,
    qp::{
        atomic_mode,
        pm_state,
        qpc_st,
        qpc_state,
        rq_type,
        CreateQpIn,
        OptParam,
        Qpc, //
    },
};
use ib::{
    qp_attr_mask as m,
    Access,
    Pd,
    Qp,
    QpAttr,
    QpCap,
    QpEvent,
    QpEvents,
    QpInitAttr,
    QpState,
    QpType,
    Udata,
    Umem, //
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};
use zerocopy::FromZeros;

use kapi::IrqSafeLock;

use crate::{
    cmd::input,
    cq::Cq,
    ib::{
        abi::{
            self,
            CreateQpReq,
            CreateQpResp,
            ModifyQpReq, //
        },
        ah::set_path,
        cq::IbCq,
        cq::{
            ADAPTER_PAGE,
            PAGE_OFFSET_UNIT, //
        },
        dc::{
            check_dci,
            check_dci_modify,
            dc_type,
            DcType,
            Dct, //
        },
        device::gid_table_len,
        kcq::KqpTable,
        kqp::{
            KernelWq,
            SendKind,
            WqLayout, //
        },
        qp_opt::{
            merge,
            opt_of,
            transition, //
        },
        rawqp::RawQp,
        ucontext::UarUse,
        wq::create_rss_tir,
        IbDev, //
    },
    mdev::Mdev,
    qp::{
        destroy,
        KernelQp,
        KernelRq,
        Transition,
        DEFAULT_UIDX, //
    },
    qp_events::{
        QpEventReg,
        QpHandler, //
    },
    tir::Tir,
};
use cx4_hw::eq::event_type;

/// The number ib_core knows the GSI QP by.
const GSI_QPN: u32 = 1;
/// A send queue basic block (`MLX5_SEND_WQE_BB`).
const SEND_WQE_BB: u32 = 64;
/// `MLX5_IB_ACK_REQ_FREQ`: the requester asks for an ACK every 2^8 packets.
const ACK_REQ_FREQ: u32 = 8;

/// What modify and query need to remember (mlx5_ib's `trans_qp` fields).
#[derive(Default)]
struct Soft {
    state: QpState,
    port: u32,
    /// Remote access rights, and the responder depth they are gated on.
    access: u32,
    resp_depth: u8,
    /// The last attributes set, for query.
    attr: QpAttr,
}

/// Where a QP's work queues live.
enum QpMem {
    /// A process's: its pinned buffer, doorbell record and UAR page (kept past `IbQp::drop`).
    User { _buf: Umem, db: Umem, _uar: UarUse },
    /// None: an XRC target QP has neither a send nor a receive queue of its own.
    None,
    /// A raw packet QP's Ethernet objects and memory.
    Raw(RawQp),
    /// An RSS QP's indirect TIR (wq.rs).
    Rss(Tir),
    /// A DC target (dc.rs): no QP on the card, a DCT from RTR on.
    Dct(Dct),
    /// A kernel user's: the driver's rings, also in the device's kernel QP table, and the
    /// rings of its CQs (cleaned of its CQEs when it is reset).
    Kernel {
        wq: Arc<KernelWq>,
        table: Arc<KqpTable>,
        cqs: KVec<Arc<IrqSafeLock<Cq>>>,
    },
}

impl QpMem {
    fn db_dma(&self) -> u64 {
        match self {
            Self::User { db, .. } => db.start_dma(),
            Self::Kernel { wq, .. } => wq.dbrec_dma(),
            Self::None | Self::Raw(_) | Self::Rss(_) | Self::Dct(_) => 0,
        }
    }
}

/// A QP of a process or a kernel user. Dropping it destroys it, then releases its memory.
pub(crate) struct IbQp {
    mdev: Arc<Mdev>,
    qpn: u32,
    st: u8,
    /// The PD the QP context names (an XRC target QP's is its domain's, see xrcd.rs).
    pdn: u32,
    cqn_snd: u32,
    cqn_rcv: u32,
    rq_wqe_count: u32,
    cap: QpCap,
    soft: Pin<KBox<Mutex<Soft>>>,
    /// The card's events of the QP (none for a raw packet QP: it is no QP on the card).
    _events: Option<QpEventReg>,
    mem: QpMem,
}

fn st_of(t: QpType) -> Result<u8> {
    match t {
        QpType::Rc => Ok(qpc_st::RC),
        QpType::Uc => Ok(qpc_st::UC),
        QpType::Ud => Ok(qpc_st::UD),
        QpType::XrcIni => Ok(qpc_st::XRC),
        QpType::Gsi | QpType::XrcTgt | QpType::RawPacket | QpType::Driver | QpType::Other(_) => {
            Err(ib::eopnotsupp())
        }
    }
}

/// log2 of a power-of-two count (0 for 0), `EINVAL` otherwise.
fn log2_exact(n: u32) -> Result<u32> {
    match n {
        0 => Ok(0),
        n if n.is_power_of_two() => Ok(n.ilog2()),
        _ => Err(EINVAL),
    }
}

impl IbQp {
    /// Creates a user QP from libmlx5's request (`udata`) or a kernel QP; returns it and its
    /// number (1 for the GSI QP).
    pub(crate) fn create(
        pd: &Pd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        udata: Option<&mut Udata<'_>>,
        events: &Arc<QpEvents>,
    ) -> Result<(Self, u32)> {
        match udata {
            Some(u) => Self::create_user(pd, attr, u, events),
            None => Self::create_kernel(pd, attr, events),
        }
    }

    /// A kernel user's QP (mlx5_ib `create_kernel_qp`): RC, UC, UD, or the port's GSI QP
    /// (`MLX5_IB_QPT_HW_GSI`: service type QP1, QP number 1 to ib_core), on the driver's
    /// rings (kqp.rs) and the device's kernel UAR page, with fast registration and the
    /// reserved lkey enabled as mlx5_ib sets them for all kernel QPs.
    fn create_kernel(
        pd: &Pd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        events: &Arc<QpEvents>,
    ) -> Result<(Self, u32)> {
        let qt = attr.qp_type();
        let (st, kind) = match qt {
            QpType::Rc => (qpc_st::RC, SendKind::Rc),
            QpType::Uc => (qpc_st::UC, SendKind::Uc),
            QpType::Ud => (qpc_st::UD, SendKind::Datagram),
            QpType::Gsi => (qpc_st::QP1, SendKind::Datagram),
            QpType::XrcIni
            | QpType::XrcTgt
            | QpType::RawPacket
            | QpType::Driver
            | QpType::Other(_) => return Err(ib::eopnotsupp()),
        };
        if attr.has_xrcd_or_rwq_table() || attr.create_flags() != 0 {
            return Err(ib::eopnotsupp());
        }
        let dev = pd.device();
        let sh = dev.data();
        let g = sh.caps.gen();
        let layout = WqLayout::new(
            kind,
            &attr.cap(),
            attr.srq().is_none(),
            1 << g.log_max_qp_sz(),
            g.max_wqe_sz_sq(),
            g.max_wqe_sz_rq(),
        )?;
        let send_cq = attr.send_cq().ok_or(EINVAL)?;
        let recv_cq = attr.recv_cq().ok_or(EINVAL)?;
        // A kernel QP receives from a kernel SRQ (ib_core gives it no process's).
        let srq_ring = attr
            .srq()
            .map(|s| s.kernel_ring().cloned().ok_or(EINVAL))
            .transpose()?;
        let mut wq = KernelWq::alloc(
            &sh.mdev,
            layout,
            kind,
            attr.sq_sig_all(),
            sh.kuar,
            events.handle(),
            srq_ring,
        )?;
        let l = wq.layout();
        let (sq_wqes, bbs, rq_wqes, rq_shift) = (l.sq_wqes, l.bbs, l.rq_wqes, l.rq_shift);
        let (send_sge, recv_sge, max_inline) = (l.send_sge, l.recv_sge, l.max_inline);
        let rq = if let Some(srq) = attr.srq() {
            KernelRq::Srq(srq.rmpn().ok_or(EINVAL)?)
        } else if rq_wqes > 0 {
            KernelRq::Ring {
                wqes: rq_wqes,
                log_stride: rq_shift,
            }
        } else {
            KernelRq::Zero
        };
        let qpn = KernelQp {
            st,
            pdn: pd.pdn(),
            uar: sh.kuar,
            rq,
            sq_bbs: sq_wqes * bbs,
            cqn_snd: send_cq.cqn(),
            cqn_rcv: recv_cq.cqn(),
            cqe_v1: g.cqe_version() == 1,
            dbr: wq.dbrec_dma(),
            pages: wq.pages(),
        }
        .create(&sh.mdev)?;
        let created = CreatedQp::new(&sh.mdev, qpn);
        wq.bind(qpn);
        let mut cqs = KVec::new();
        for c in [send_cq, recv_cq] {
            if let IbCq::Kernel(k) = &**c {
                cqs.push(k.ring(), GFP_KERNEL)?;
            }
        }
        let wq = Arc::new(wq, GFP_KERNEL)?;
        let soft = KBox::pin_init(new_mutex!(Soft::default(), "cx4::ib_qp"), GFP_KERNEL)?;
        let reg = QpEventReg::new(&sh.mdev, qpn, Arc::new(Notify(events.clone()), GFP_KERNEL)?)?;
        sh.kqps.insert(qpn, wq.clone())?;
        // From here `Self`'s drop destroys the QP.
        created.disarm();
        let qp = Self {
            mdev: sh.mdev.clone(),
            qpn,
            st,
            pdn: pd.pdn(),
            cqn_snd: send_cq.cqn(),
            cqn_rcv: recv_cq.cqn(),
            rq_wqe_count: rq_wqes,
            cap: QpCap {
                max_send_wr: sq_wqes,
                max_recv_wr: rq_wqes,
                max_send_sge: send_sge,
                max_recv_sge: recv_sge,
                max_inline_data: max_inline,
            },
            soft,
            _events: Some(reg),
            mem: QpMem::Kernel {
                wq,
                table: sh.kqps.clone(),
                cqs,
            },
        };
        Ok((qp, if qt == QpType::Gsi { GSI_QPN } else { qpn }))
    }

    /// A kernel QP's work queues (`None` for a process's QP).
    pub(crate) fn kernel_wq(&self) -> Option<&KernelWq> {
        match &self.mem {
            QpMem::Kernel { wq, .. } => Some(wq),
            _ => None,
        }
    }

    /// The TIR steering rules forward the QP's frames to (a raw packet QP's).
    pub(crate) fn tirn(&self) -> Option<u32> {
        match &self.mem {
            QpMem::Raw(r) => r.tirn(),
            QpMem::Rss(t) => Some(t.tirn()),
            _ => None,
        }
    }

    /// A raw packet QP of a process (rawqp.rs), or an RSS QP (wq.rs: QP number 0).
    fn create_raw(
        pd: &Pd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        udata: &mut Udata<'_>,
    ) -> Result<(Self, u32)> {
        let (mem, qpn, cap) = if attr.has_rwq_table() {
            (
                QpMem::Rss(create_rss_tir(pd, attr, udata)?),
                0,
                QpCap::default(),
            )
        } else {
            let r = RawQp::create(pd, attr, udata)?;
            let cap = QpCap {
                max_send_wr: r.sq_wqes,
                max_recv_wr: r.rq_wqes,
                ..attr.cap()
            };
            (QpMem::Raw(r.qp), r.qpn, cap)
        };
        Ok((Self::plain(pd, attr, qpn, cap, mem)?, qpn))
    }

    /// A QP that is no QP on the card (a raw packet or RSS QP's Ethernet objects, a DCT):
    /// numbered `qpn`, with no events of its own.
    fn plain(
        pd: &Pd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        qpn: u32,
        cap: QpCap,
        mem: QpMem,
    ) -> Result<Self> {
        let soft = KBox::pin_init(new_mutex!(Soft::default(), "cx4::ib_qp"), GFP_KERNEL)?;
        Ok(Self {
            mdev: pd.device().data().mdev.clone(),
            qpn,
            st: 0,
            pdn: pd.pdn(),
            cqn_snd: attr.send_cq().map_or(0, |c| c.cqn()),
            cqn_rcv: attr.recv_cq().map_or(0, |c| c.cqn()),
            rq_wqe_count: cap.max_recv_wr,
            cap,
            soft,
            _events: None,
            mem,
        })
    }

    /// A process's QP from libmlx5's request.
    fn create_user(
        pd: &Pd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        udata: &mut Udata<'_>,
        events: &Arc<QpEvents>,
    ) -> Result<(Self, u32)> {
        if attr.qp_type() == QpType::RawPacket {
            return Self::create_raw(pd, attr, udata);
        }
        let dev = pd.device();
        let sh = dev.data();
        // `IB_QPT_DRIVER`: a DC initiator or target (dc.rs), on a card with DC.
        let driver = attr.qp_type() == QpType::Driver;
        if driver && sh.caps.gen().dct() == 0 {
            return Err(ib::eopnotsupp());
        }
        let st = if driver {
            qpc_st::DCI
        } else {
            st_of(attr.qp_type())?
        };
        if attr.has_xrcd_or_rwq_table() {
            return Err(ib::eopnotsupp());
        }
        // An XRC initiator only sends: no receive queue, no receive CQ (the core passes
        // none) and no SRQ; only on a card with the XRC transport.
        let ini = st == qpc_st::XRC;
        if ini && sh.caps.gen().xrc() == 0 {
            return Err(ib::eopnotsupp());
        }
        let uctx = udata.ucontext::<IbDev>().ok_or(EINVAL)?;
        let req: CreateQpReq = udata.read(abi::CREATE_QP_REQ_MIN_LEN)?;
        let dc = driver.then(|| dc_type(req.flags)).transpose()?;
        let dc_flags = if driver {
            abi::QP_FLAG_TYPE_DCT | abi::QP_FLAG_TYPE_DCI
        } else {
            0
        };
        if req.flags
            & !(abi::QP_FLAG_SCATTER_CQE
                | abi::QP_FLAG_ALLOW_SCATTER_CQE
                | abi::QP_FLAG_UAR_PAGE_INDEX
                | dc_flags)
            != 0
            || (req.sq_buf_addr != 0 && dc != Some(DcType::Dct))
            || req.dci_streams != 0
            || req.reserved != 0
            || (req.uidx != DEFAULT_UIDX && req.uidx > 0xff_ffff)
        {
            return Err(EINVAL);
        }
        let g = sh.caps.gen();
        let uidx = if g.cqe_version() == 1 {
            req.uidx
        } else {
            DEFAULT_UIDX
        };
        match dc {
            Some(DcType::Dct) => {
                let dct = Dct::create(pd, attr, &req, uidx)?;
                // mlx5_ib answers a DCT's create with a zeroed response.
                udata.respond(&CreateQpResp::default())?;
                return Ok((
                    Self::plain(pd, attr, 0, QpCap::default(), QpMem::Dct(dct))?,
                    0,
                ));
            }
            Some(DcType::Dci) => check_dci(attr, &req)?,
            None => {}
        }
        if attr.create_flags() != 0 {
            return Err(ib::eopnotsupp());
        }
        let max_wqes = 1u32 << g.log_max_qp_sz();
        let log_rq = log2_exact(req.rq_wqe_count)?;
        let log_sq = log2_exact(req.sq_wqe_count)?;
        if req.rq_wqe_count > max_wqes
            || req.sq_wqe_count > max_wqes
            || (ini && (req.rq_wqe_count > 0 || req.sq_wqe_count == 0))
        {
            return Err(EINVAL);
        }
        if req.rq_wqe_count > 0
            && !(4..=g.max_wqe_sz_rq().max(16).ilog2()).contains(&req.rq_wqe_shift)
        {
            return Err(EINVAL);
        }
        let rq_bytes = if req.rq_wqe_count > 0 {
            req.rq_wqe_count << req.rq_wqe_shift
        } else {
            0
        };
        let bytes = rq_bytes as usize + (req.sq_wqe_count * SEND_WQE_BB) as usize;
        if bytes == 0 || req.buf_addr % PAGE_OFFSET_UNIT != 0 || req.db_addr % 8 != 0 {
            return Err(EINVAL);
        }
        let send_cq = attr.send_cq().ok_or(EINVAL)?;
        let cqn_rcv = match attr.recv_cq() {
            Some(c) => c.cqn(),
            None if ini => 0,
            None => return Err(EINVAL),
        };
        let srqn = match attr.srq() {
            Some(srq) => Some(srq.rmpn().ok_or(EINVAL)?),
            None => None,
        };
        // The context's UAR page the library names (dynamic layout), else bfreg 0 on the
        // context's first static page (see the module documentation).
        let named = req.flags & abi::QP_FLAG_UAR_PAGE_INDEX != 0;
        let uar = uctx.uar_for(named.then_some(req.bfreg_index))?;
        let buf = Umem::get(dev, req.buf_addr, bytes, Access::LOCAL_WRITE)?;
        let db = Umem::get(dev, req.db_addr, 8, Access::LOCAL_WRITE)?;
        let pas = buf.dma_blocks(ADAPTER_PAGE)?;
        let mut msg = input::<command::CreateQp>(pas.len() * 8)?;
        {
            let c = msg.qpc_mut();
            c.set_st(st.into());
            c.set_pm_state(pm_state::MIGRATED.into());
            c.set_pd(pd.pdn());
            c.set_uar_page(uar.index());
            if let Some(n) = srqn {
                c.set_rq_type(rq_type::SRQ_RQ.into());
                c.set_srqn_rmpn_xrqn(n);
            } else if req.rq_wqe_count > 0 {
                c.set_rq_type(rq_type::NON_ZERO_RQ.into());
                c.set_log_rq_size(log_rq);
                c.set_log_rq_stride(req.rq_wqe_shift - 4);
            } else {
                c.set_rq_type(rq_type::ZERO_LEN_RQ.into());
            }
            if req.sq_wqe_count > 0 {
                c.set_log_sq_size(log_sq);
            } else {
                c.set_no_sq(1);
            }
            c.set_cqn_snd(send_cq.cqn());
            c.set_cqn_rcv(cqn_rcv);
            if g.cqe_version() == 1 {
                c.set_user_index(uidx);
            }
            c.set_log_page_size(0);
            c.set_page_offset(((req.buf_addr % ADAPTER_PAGE as u64) / PAGE_OFFSET_UNIT) as u32);
            c.set_dbr_addr(db.start_dma());
        }
        for (i, pa) in pas.iter().enumerate() {
            CreateQpIn::set_pas(msg.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
        }
        let qpn = sh.mdev.cmdq.exec::<command::CreateQp>(&msg, 0)?.qpn();
        let created = CreatedQp::new(&sh.mdev, qpn);
        let soft = KBox::pin_init(new_mutex!(Soft::default(), "cx4::ib_qp"), GFP_KERNEL)?;
        let reg = QpEventReg::new(&sh.mdev, qpn, Arc::new(Notify(events.clone()), GFP_KERNEL)?)?;
        // From here `Self`'s drop destroys the QP (also if the response cannot be written).
        created.disarm();
        let qp = Self {
            mdev: sh.mdev.clone(),
            qpn,
            st,
            pdn: pd.pdn(),
            cqn_snd: send_cq.cqn(),
            cqn_rcv,
            rq_wqe_count: req.rq_wqe_count,
            cap: QpCap {
                max_send_wr: req.sq_wqe_count,
                max_recv_wr: req.rq_wqe_count,
                ..attr.cap()
            },
            soft,
            _events: Some(reg),
            mem: QpMem::User {
                _buf: buf,
                db,
                _uar: uar,
            },
        };
        // bfregn 0: index 0 in mlx5_ib's encoding; no bfreg for a named page.
        udata.respond(&CreateQpResp {
            bfreg_index: if named { abi::INVALID_BFREG } else { 0 },
            ..Default::default()
        })?;
        Ok((qp, qpn))
    }

    /// An XRC target QP (mlx5_ib `create_xrc_tgt_qp`), which the core creates for a process
    /// with no PD, CQs or driver data: service type XRC in the domain `xrcd`, no send queue
    /// and no receive queue of its own (its messages go to the XRC SRQ each one names, and
    /// complete to that SRQ's CQ). mlx5_ib names its internal PD, CQ and XRC SRQ
    /// (`devr->p0`, `c0`, `s0`, `rq_type` SRQ) in the context; here the PD is the domain's
    /// and the context has a zero-length receive queue and no CQs.
    pub(crate) fn create_xrc_tgt(
        xrcd: &ib::Xrcd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        events: &Arc<QpEvents>,
    ) -> Result<(Self, u32)> {
        if attr.create_flags() != 0 || attr.has_rwq_table() || attr.srq().is_some() {
            return Err(ib::eopnotsupp());
        }
        let sh = xrcd.device().data();
        let mut msg = input::<command::CreateQp>(0)?;
        {
            let c = msg.qpc_mut();
            c.set_st(qpc_st::XRC.into());
            c.set_pm_state(pm_state::MIGRATED.into());
            c.set_pd(xrcd.tgt_pdn());
            c.set_rq_type(rq_type::ZERO_LEN_RQ.into());
            c.set_no_sq(1);
            c.set_xrcd(xrcd.xrcdn());
            if sh.caps.gen().cqe_version() == 1 {
                c.set_user_index(DEFAULT_UIDX);
            }
        }
        let qpn = sh.mdev.cmdq.exec::<command::CreateQp>(&msg, 0)?.qpn();
        let created = CreatedQp::new(&sh.mdev, qpn);
        let soft = KBox::pin_init(new_mutex!(Soft::default(), "cx4::ib_qp"), GFP_KERNEL)?;
        let reg = QpEventReg::new(&sh.mdev, qpn, Arc::new(Notify(events.clone()), GFP_KERNEL)?)?;
        created.disarm();
        let qp = Self {
            mdev: sh.mdev.clone(),
            qpn,
            st: qpc_st::XRC,
            pdn: xrcd.tgt_pdn(),
            cqn_snd: 0,
            cqn_rcv: 0,
            rq_wqe_count: 0,
            cap: QpCap::default(),
            soft,
            _events: Some(reg),
            mem: QpMem::None,
        };
        Ok((qp, qpn))
    }

    /// Moves the QP through one transition (`__mlx5_ib_modify_qp`).
    pub(crate) fn modify(
        qp: &Qp<IbDev>,
        attr: &QpAttr,
        mask: u32,
        udata: Option<&mut Udata<'_>>,
    ) -> Result {
        let this: &IbQp = qp;
        if let Some(u) = udata.as_deref() {
            if u.in_len() > 0 {
                let r: ModifyQpReq = u.read(0)?;
                if r.comp_mask != 0 || r.max_burst_sz != 0 || r.typical_pkt_sz != 0 {
                    return Err(ib::eopnotsupp());
                }
            }
        }
        let dev = qp.device();
        let sh = dev.data();
        let mut soft = this.soft.lock();
        let cur = if mask & m::CUR_STATE != 0 {
            attr.cur_qp_state
        } else {
            soft.state
        };
        let new = if mask & m::STATE != 0 {
            attr.qp_state
        } else {
            cur
        };
        let port = if mask & m::PORT != 0 {
            attr.port_num
        } else {
            soft.port.max(1)
        };
        if let QpMem::Dct(d) = &this.mem {
            return d.modify(sh, attr, mask, udata);
        }
        if this.st == qpc_st::DCI {
            check_dci_modify(&sh.caps, cur, new, attr, mask)?;
        }
        if let QpMem::Raw(_) | QpMem::Rss(_) = &this.mem {
            // An RSS QP has no queues to move (`modify_raw_packet_qp` is not called for it).
            if let QpMem::Raw(r) = &this.mem {
                r.modify(cur, new, sh.qcounter)?;
            }
            soft.state = new;
            soft.port = port;
            return Ok(());
        }
        let op = transition(cur, new).ok_or(EINVAL)?;
        let mut c = Qpc::new_zeroed();
        c.set_st(this.st.into());
        c.set_pm_state(
            if mask & m::PATH_MIG_STATE != 0 {
                match attr.path_mig_state {
                    ksys_mig::REARM => pm_state::REARM,
                    ksys_mig::ARMED => pm_state::ARMED,
                    _ => pm_state::MIGRATED,
                }
            } else {
                pm_state::MIGRATED
            }
            .into(),
        );
        if this.st == qpc_st::QP1 {
            // is_sqp: MADs are 256 bytes.
            c.set_mtu(1);
            c.set_log_msg_max(8);
        } else if this.st == qpc_st::UD {
            c.set_mtu(5);
            c.set_log_msg_max(12);
        } else if mask & m::PATH_MTU != 0 {
            if !(1..=5).contains(&attr.path_mtu) {
                return Err(EINVAL);
            }
            c.set_mtu(attr.path_mtu);
            c.set_log_msg_max(sh.caps.gen().log_max_msg());
        }
        if mask & m::DEST_QPN != 0 {
            c.set_remote_qpn(attr.dest_qp_num);
        }
        {
            let p = c.primary_address_path_mut();
            if mask & m::PKEY_INDEX != 0 {
                p.set_pkey_index(attr.pkey_index.into());
            }
            if mask & m::PORT != 0 {
                p.set_vhca_port_num(attr.port_num);
            }
            if mask & m::AV != 0 {
                set_path(
                    p,
                    &attr.ah_attr,
                    port,
                    this.st,
                    mask,
                    this.qpn,
                    attr.dest_qp_num,
                    gid_table_len(&sh.caps),
                )?;
            }
            if mask & m::TIMEOUT != 0 {
                p.set_ack_timeout(attr.timeout.into());
            }
            if op == Transition::Rst2Init || this.st == qpc_st::QP1 {
                p.set_vhca_port_num(port);
            }
        }
        if op == Transition::Rst2Init {
            // The device's queue counter set counts this QP's transport events.
            c.set_counter_set_id(sh.qcounter.into());
        }
        if mask & m::ALT_PATH != 0 {
            // No alternate paths on RoCE (no path migration).
            return Err(EINVAL);
        }
        c.set_pd(this.pdn);
        c.set_cqn_snd(this.cqn_snd);
        c.set_cqn_rcv(this.cqn_rcv);
        c.set_log_ack_req_freq(ACK_REQ_FREQ);
        if mask & m::RNR_RETRY != 0 {
            c.set_rnr_retry(attr.rnr_retry.into());
        }
        if mask & m::RETRY_CNT != 0 {
            c.set_retry_count(attr.retry_cnt.into());
        }
        if mask & m::MAX_QP_RD_ATOMIC != 0 && attr.max_rd_atomic != 0 {
            c.set_log_sra_max(fls(u32::from(attr.max_rd_atomic) - 1));
        }
        if mask & m::SQ_PSN != 0 {
            c.set_next_send_psn(attr.sq_psn);
        }
        if mask & m::MAX_DEST_RD_ATOMIC != 0 && attr.max_dest_rd_atomic != 0 {
            c.set_log_rra_max(fls(u32::from(attr.max_dest_rd_atomic) - 1));
        }
        let (mut access, mut depth) = (soft.access, soft.resp_depth);
        if mask & (m::ACCESS_FLAGS | m::MAX_DEST_RD_ATOMIC) != 0 {
            // set_qpc_atomic_flags: without a responder depth only writes are allowed.
            if mask & m::MAX_DEST_RD_ATOMIC != 0 {
                depth = attr.max_dest_rd_atomic;
            }
            if mask & m::ACCESS_FLAGS != 0 {
                access = attr.qp_access_flags;
            }
            let mut a = Access(access);
            if depth == 0 {
                a = Access(a.0 & Access::REMOTE_WRITE.0);
            }
            c.set_rre(a.contains(Access::REMOTE_READ).into());
            c.set_rwe(a.contains(Access::REMOTE_WRITE).into());
            if a.contains(Access::REMOTE_ATOMIC) {
                c.set_rae(1);
                c.set_atomic_mode(atomic_mode::IB_SPEC.into());
            }
        }
        if mask & m::MIN_RNR_TIMER != 0 {
            c.set_min_rnr_nak(attr.min_rnr_timer.into());
        }
        if mask & m::RQ_PSN != 0 {
            c.set_next_rcv_psn(attr.rq_psn);
        }
        if mask & m::QKEY != 0 {
            c.set_q_key(attr.qkey);
        }
        if op == Transition::Rst2Init && this.rq_wqe_count > 0 {
            c.set_dbr_addr(this.mem.db_dma());
        }
        let opt = OptParam::from_bits_retain(opt_of(mask)) & op.allowed(this.st);
        op.run(&this.mdev, this.qpn, opt.bits(), &c)?;
        if let (QpState::Reset, QpMem::Kernel { wq, cqs, .. }) = (new, &this.mem) {
            // mlx5_ib: the CQs lose the QP's completions, its rings start again.
            wq.clean(cqs);
            wq.reset();
        }
        soft.state = new;
        soft.port = port;
        soft.access = access;
        soft.resp_depth = depth;
        merge(&mut soft.attr, attr, mask);
        if new == QpState::Reset {
            soft.attr = QpAttr::default();
            soft.access = 0;
            soft.resp_depth = 0;
        }
        Ok(())
    }

    /// The QP's attributes: its state from the card, the rest as last set.
    pub(crate) fn query(qp: &Qp<IbDev>) -> Result<QpAttr> {
        let this: &IbQp = qp;
        if let QpMem::Dct(d) = &this.mem {
            return d.query(this.cap);
        }
        if let QpMem::Raw(_) | QpMem::Rss(_) = &this.mem {
            let soft = this.soft.lock();
            let mut a = soft.attr;
            (a.qp_state, a.cur_qp_state) = (soft.state, soft.state);
            a.port_num = soft.port;
            a.cap = this.cap;
            return Ok(a);
        }
        let mut q = input::<command::QueryQp>(0)?;
        q.set_qpn(this.qpn);
        let out = this.mdev.cmdq.exec::<command::QueryQp>(&q, 0)?;
        let c = out.qpc();
        let soft = this.soft.lock();
        let mut a = soft.attr;
        a.qp_state = match c.state() as u8 {
            qpc_state::RST => QpState::Reset,
            qpc_state::INIT => QpState::Init,
            qpc_state::RTR => QpState::Rtr,
            qpc_state::RTS => QpState::Rts,
            qpc_state::SQER => QpState::Sqe,
            qpc_state::SQD => QpState::Sqd,
            _ => QpState::Err,
        };
        a.cur_qp_state = a.qp_state;
        a.sq_psn = c.next_send_psn();
        a.rq_psn = c.next_rcv_psn();
        a.qp_access_flags = soft.access;
        a.max_dest_rd_atomic = soft.resp_depth;
        a.port_num = soft.port;
        a.cap = this.cap;
        Ok(a)
    }
}

impl Drop for IbQp {
    fn drop(&mut self) {
        // A raw packet or RSS QP's objects and a DCT go with `mem`.
        if !matches!(self.mem, QpMem::Raw(_) | QpMem::Rss(_) | QpMem::Dct(_)) {
            destroy(&self.mdev, self.qpn, "");
        }
        // `destroy_qp_common`: its CQs lose its CQEs (SRQ WQEs go back), then the table it.
        if let QpMem::Kernel { wq, table, cqs } = &self.mem {
            wq.clean(cqs);
            table.remove(self.qpn);
        }
    }
}

/// A QP the card has created and no [`IbQp`] owns yet: dropping it destroys it, so every
/// error on the way to the `IbQp` gives the QP back to the card (the parts built for it after
/// it go first). [`CreatedQp::disarm`] hands it to the `IbQp`.
struct CreatedQp<'a> {
    mdev: &'a Mdev,
    qpn: u32,
    armed: bool,
}

impl<'a> CreatedQp<'a> {
    fn new(mdev: &'a Mdev, qpn: u32) -> Self {
        Self {
            mdev,
            qpn,
            armed: true,
        }
    }

    /// The QP now belongs to the [`IbQp`] built from it, whose drop destroys it.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CreatedQp<'_> {
    fn drop(&mut self) {
        if self.armed {
            destroy(self.mdev, self.qpn, "");
        }
    }
}

/// Forwards the card's asynchronous events of one QP to ib_core (from the async EQ).
struct Notify(Arc<QpEvents>);

impl QpHandler for Notify {
    fn event(&self, _qpn: u32, ty: u8) {
        let ev = match ty {
            event_type::PATH_MIG => QpEvent::PathMig,
            event_type::COMM_EST => QpEvent::CommEst,
            event_type::SQ_DRAINED => QpEvent::SqDrained,
            event_type::SRQ_LAST_WQE => QpEvent::LastWqeReached,
            event_type::WQ_CATAS_ERROR => QpEvent::Fatal,
            event_type::PATH_MIG_FAILED => QpEvent::PathMigErr,
            event_type::WQ_INVAL_REQ_ERROR => QpEvent::ReqErr,
            event_type::WQ_ACCESS_ERROR => QpEvent::AccessErr,
            _ => return,
        };
        self.0.event(ev);
    }
}

/// `enum ib_mig_state`.
mod ksys_mig {
    pub(super) const REARM: u32 = 1;
    pub(super) const ARMED: u32 = 2;
}

/// `fls()`: the 1-based index of the highest set bit, 0 for 0.
fn fls(x: u32) -> u32 {
    32 - x.leading_zeros()
}
