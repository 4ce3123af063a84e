// SPDX-License-Identifier: GPL-2.0
//! Raw packet QPs of processes (mlx5_ib qp.c `create_raw_packet_qp`, `modify_raw_packet_qp`,
//! `destroy_raw_packet_qp`): not a QP on the card but Ethernet objects in the user context's
//! transport domain — a TIS and an SQ sending through it (the QP number is the SQN), an RQ,
//! and a direct TIR to the RQ that steering rules (flow.rs) forward to.
//!
//! - Create: libmlx5's request names the RQ ring (`buf_addr`, `rq_wqe_count <<
//!   rq_wqe_shift`), a separate SQ ring (`sq_buf_addr`, 64-byte basic blocks) and one doorbell
//!   record (RQ counter at +0, SQ counter at +4, as both queues read it). Both queues are
//!   created in RST with `flush_in_error_en` and the QP's `user_index` (libmlx5 finds the QP
//!   of a CQE by it); the RQ strips no VLAN (`vsd`).
//! - Modify: RST2INIT moves the RQ RST→RDY (with the port's queue counter) and the SQ RST→RST;
//!   INIT2RTR changes nothing; RTR2RTS moves the SQ to RDY; 2ERR and 2RST move both queues
//!   from wherever they are.
//! - Destroy: out of RESET, both queues to RST first (`destroy_qp_common`); then TIR, RQ,
//!   SQ, TIS, and the memory.

use cx4_hw::{
    command,
    wq::{
        rqc_state,
        sqc_state,
        wq_type,
        CreateRqIn,
        CreateSqIn, //
    },
};
use ib::{
    Access,
    QpInitAttr,
    QpState,
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

use crate::{
    cmd::input,
    hwq::{
        HwRq,
        HwSq,
        RqChange, //
    },
    ib::{
        abi::{
            self,
            CreateQpReq,
            CreateQpResp, //
        },
        cq::{
            ADAPTER_PAGE,
            PAGE_OFFSET_UNIT, //
        },
        ucontext::UarUse,
        IbDev, //
    },
    mdev::Mdev,
    qp::DEFAULT_UIDX,
    tir::Tir,
    tis::Tis,
};

/// log2 of a send WQE basic block (`MLX5_SEND_WQE_BB`).
const LOG_SEND_WQE_BB: u32 = 6;

/// What an RQ in a process's memory is made of (mlx5_ib `create_raw_packet_qp_rq`,
/// `create_rq`).
pub(crate) struct UserRq<'a> {
    /// The ring, `1 << log_size` WQEs of `1 << log_stride` bytes.
    pub(crate) buf: &'a Umem,
    /// Its start address in the process (for the offset into the first page).
    pub(crate) addr: u64,
    pub(crate) log_size: u32,
    pub(crate) log_stride: u32,
    pub(crate) pdn: u32,
    pub(crate) cqn: u32,
    /// The doorbell record (the receive counter at +0).
    pub(crate) dbr: u64,
    pub(crate) user_index: u32,
    /// Whether C-VLAN tags stay in the frames (`vsd`; else they are stripped into the CQE).
    pub(crate) vsd: bool,
}

/// Creates an RQ over a process's ring `p`, in RST.
pub(crate) fn create_user_rq(mdev: &Arc<Mdev>, p: &UserRq<'_>) -> Result<HwRq> {
    let pas = p.buf.dma_blocks(ADAPTER_PAGE)?;
    let mut m = input::<command::CreateRq>(pas.len() * 8)?;
    {
        let c = m.ctx_mut();
        c.set_vsd(p.vsd.into());
        c.set_state(rqc_state::RST.into());
        c.set_flush_in_error_en(1);
        c.set_user_index(p.user_index);
        c.set_cqn(p.cqn);
        let w = c.wq_mut();
        w.set_wq_type(wq_type::CYCLIC.into());
        w.set_page_offset(((p.addr % ADAPTER_PAGE as u64) / PAGE_OFFSET_UNIT) as u32);
        w.set_pd(p.pdn);
        w.set_dbr_addr(p.dbr);
        w.set_log_wq_stride(p.log_stride);
        w.set_log_wq_pg_sz(0);
        w.set_log_wq_sz(p.log_size);
    }
    for (i, pa) in pas.iter().enumerate() {
        CreateRqIn::set_wq_pas(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
    }
    HwRq::create(mdev, &m)
}

/// The queues' states as last set (mlx5_ib's `rq->state`, `sq->state`).
struct States {
    qp: QpState,
    rq: u8,
    sq: u8,
}

/// A raw packet QP. Dropping it destroys the TIR, the RQ, the SQ and the TIS in that order,
/// then releases the process's memory.
pub(crate) struct RawQp {
    // Field order is drop order.
    tir: Option<Tir>,
    rq: Option<HwRq>,
    sq: Option<HwSq>,
    _tis: Option<Tis>,
    states: Pin<KBox<Mutex<States>>>,
    _rq_buf: Option<Umem>,
    _sq_buf: Option<Umem>,
    _db: Umem,
    _uar: UarUse,
}

/// The numbers of a new raw packet QP: its QP number (the SQN, else the RQN) and its queue
/// sizes.
pub(crate) struct RawCreated {
    pub(crate) qp: RawQp,
    pub(crate) qpn: u32,
    pub(crate) sq_wqes: u32,
    pub(crate) rq_wqes: u32,
}

/// log2 of a power-of-two count up to `max`, `EINVAL` otherwise.
fn log2_of(n: u32, max: u32) -> Result<u32> {
    if n.is_power_of_two() && n <= max {
        Ok(n.ilog2())
    } else {
        Err(EINVAL)
    }
}

impl RawQp {
    /// A raw packet QP of a process from libmlx5's request (`create_raw_packet_qp`).
    pub(crate) fn create(
        pd: &ib::Pd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        udata: &mut Udata<'_>,
    ) -> Result<RawCreated> {
        if attr.has_xrcd_or_rwq_table()
            || attr.create_flags() & !ib::QP_CREATE_CVLAN_STRIPPING != 0
            || attr.srq().is_some()
        {
            return Err(ib::eopnotsupp());
        }
        let dev = pd.device();
        let sh = dev.data();
        let uctx = udata.ucontext::<IbDev>().ok_or(EINVAL)?;
        let tdn = uctx.tdn().ok_or(ib::eopnotsupp())?;
        let req: CreateQpReq = udata.read(abi::CREATE_QP_REQ_MIN_LEN)?;
        if req.flags & !(abi::QP_FLAG_SCATTER_CQE | abi::QP_FLAG_UAR_PAGE_INDEX) != 0
            || req.dci_streams != 0
            || req.reserved != 0
            || (req.uidx != DEFAULT_UIDX && req.uidx > 0xff_ffff)
            || req.db_addr % 8 != 0
        {
            return Err(EINVAL);
        }
        let g = sh.caps.gen();
        let max = 1u32 << g.log_max_wq_sz();
        let uidx = if g.cqe_version() == 1 { req.uidx } else { 0 };
        let send_cq = attr.send_cq().ok_or(EINVAL)?;
        let recv_cq = attr.recv_cq().ok_or(EINVAL)?;
        if req.sq_wqe_count == 0 && req.rq_wqe_count == 0 {
            return Err(EINVAL);
        }
        let named = req.flags & abi::QP_FLAG_UAR_PAGE_INDEX != 0;
        let uar = uctx.uar_for(named.then_some(req.bfreg_index))?;
        let db = Umem::get(dev, req.db_addr, 8, Access::LOCAL_WRITE)?;
        let mdev = &sh.mdev;
        // Declared so that on an error each queue goes before its TIS and memory.
        let (mut sq_buf, mut tis, mut sq) = (None, None, None);
        if req.sq_wqe_count > 0 {
            let log_sq = log2_of(req.sq_wqe_count, max)?;
            if req.sq_buf_addr % PAGE_OFFSET_UNIT != 0 {
                return Err(EINVAL);
            }
            let bytes = (req.sq_wqe_count as usize) << LOG_SEND_WQE_BB;
            let buf = Umem::get(dev, req.sq_buf_addr, bytes, Access::LOCAL_WRITE)?;
            let t = Tis::create(mdev, tdn, 0)?;
            let pas = buf.dma_blocks(ADAPTER_PAGE)?;
            let mut m = input::<command::CreateSq>(pas.len() * 8)?;
            {
                let c = m.ctx_mut();
                c.set_flush_in_error_en(1);
                c.set_state(sqc_state::RST.into());
                c.set_user_index(uidx);
                c.set_cqn(send_cq.cqn());
                c.set_tis_lst_sz(1);
                c.set_tis_num_0(t.tisn());
                let w = c.wq_mut();
                w.set_wq_type(wq_type::CYCLIC.into());
                w.set_pd(pd.pdn());
                w.set_uar_page(uar.index());
                w.set_dbr_addr(db.start_dma());
                w.set_log_wq_stride(LOG_SEND_WQE_BB);
                w.set_log_wq_sz(log_sq);
                w.set_log_wq_pg_sz(0);
                w.set_page_offset(
                    ((req.sq_buf_addr % ADAPTER_PAGE as u64) / PAGE_OFFSET_UNIT) as u32,
                );
            }
            for (i, pa) in pas.iter().enumerate() {
                CreateSqIn::set_wq_pas(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
            }
            sq = Some(HwSq::create(mdev, &m)?);
            tis = Some(t);
            sq_buf = Some(buf);
        }
        let (mut rq_buf, mut rq, mut tir) = (None, None, None);
        if req.rq_wqe_count > 0 {
            let log_rq = log2_of(req.rq_wqe_count, max)?;
            if !(4..=g.max_wqe_sz_rq().max(16).ilog2()).contains(&req.rq_wqe_shift)
                || req.buf_addr % PAGE_OFFSET_UNIT != 0
            {
                return Err(EINVAL);
            }
            let bytes = (req.rq_wqe_count as usize) << req.rq_wqe_shift;
            let buf = Umem::get(dev, req.buf_addr, bytes, Access::LOCAL_WRITE)?;
            let r = create_user_rq(
                mdev,
                &UserRq {
                    buf: &buf,
                    addr: req.buf_addr,
                    log_size: log_rq,
                    log_stride: req.rq_wqe_shift,
                    pdn: pd.pdn(),
                    cqn: recv_cq.cqn(),
                    dbr: db.start_dma(),
                    user_index: uidx,
                    vsd: attr.create_flags() & ib::QP_CREATE_CVLAN_STRIPPING == 0,
                },
            )?;
            tir = Some(Tir::create_direct(mdev, tdn, r.rqn())?);
            rq = Some(r);
            rq_buf = Some(buf);
        }
        let qpn = sq
            .as_ref()
            .map(HwSq::sqn)
            .or(rq.as_ref().map(HwRq::rqn))
            .ok_or(EINVAL)?;
        let states = KBox::pin_init(
            new_mutex!(
                States {
                    qp: QpState::Reset,
                    rq: rqc_state::RST,
                    sq: sqc_state::RST,
                },
                "cx4::raw_qp"
            ),
            GFP_KERNEL,
        )?;
        let qp = RawQp {
            tir,
            rq,
            sq,
            _tis: tis,
            states,
            _rq_buf: rq_buf,
            _sq_buf: sq_buf,
            _db: db,
            _uar: uar,
        };
        // No DEVX: the response carries only the bfreg (mlx5_ib fills the TIR, TIS, RQ and
        // SQ numbers in for DEVX contexts only).
        udata.respond(&CreateQpResp {
            bfreg_index: if named { abi::INVALID_BFREG } else { 0 },
            ..Default::default()
        })?;
        Ok(RawCreated {
            qp,
            qpn,
            sq_wqes: req.sq_wqe_count,
            rq_wqes: req.rq_wqe_count,
        })
    }

    /// The TIR steering rules forward to (none without a receive queue).
    pub(crate) fn tirn(&self) -> Option<u32> {
        self.tir.as_ref().map(Tir::tirn)
    }

    /// Moves the QP from `cur` to `new` (`modify_raw_packet_qp`), the RQ naming queue counter
    /// `counter` when it becomes ready.
    pub(crate) fn modify(&self, cur: QpState, new: QpState, counter: u8) -> Result {
        use QpState as S;
        let (rq_to, sq_to) = match (cur, new) {
            (S::Reset, S::Init) => (Some(rqc_state::RDY), Some(sqc_state::RST)),
            (S::Init, S::Init) | (S::Init, S::Rtr) => (None, None),
            (S::Rtr, S::Rts) | (S::Rts, S::Rts) => (None, Some(sqc_state::RDY)),
            (_, S::Err) => (Some(rqc_state::ERR), Some(sqc_state::ERR)),
            (_, S::Reset) => (Some(rqc_state::RST), Some(sqc_state::RST)),
            _ => return Err(EINVAL),
        };
        let mut st = self.states.lock();
        if let (Some(to), Some(rq)) = (rq_to, &self.rq) {
            let ctr = (cur == S::Reset && new == S::Init).then_some(counter);
            rq.modify(
                st.rq,
                to,
                RqChange {
                    counter: ctr,
                    ..Default::default()
                },
            )?;
            st.rq = to;
        }
        if let (Some(to), Some(sq)) = (sq_to, &self.sq) {
            sq.modify(st.sq, to)?;
            st.sq = to;
        }
        st.qp = new;
        Ok(())
    }
}

impl Drop for RawQp {
    fn drop(&mut self) {
        // `destroy_qp_common`: a raw packet QP out of RESET is moved to RESET first (both
        // queues to RST), then its objects go.
        let cur = self.states.lock().qp;
        if cur != QpState::Reset {
            let _ = self.modify(cur, QpState::Reset, 0);
        }
    }
}
