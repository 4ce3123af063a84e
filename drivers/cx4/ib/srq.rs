// SPDX-License-Identifier: GPL-2.0
//! Shared receive queues (mlx5_ib srq.c `mlx5_ib_create_srq`, srq_cmd.c `create_rmp_cmd`,
//! `create_xrc_srq_cmd`): with ISSI 1 a basic SRQ is a receive memory pool (RMP); an XRC SRQ
//! is the card's XRC SRQ object, in an XRC domain, with its own CQ and libmlx5's user index
//! (which its receive completions carry). The receive WQEs are a linked list (a 16-byte next
//! segment, then the scatter entries, rounded up to a power of two of at least 32 bytes)
//! with a doorbell record: for a process, libmlx5 allocates them in its memory and the driver
//! pins them; for a kernel user (a basic SRQ only, as mlx5_ib `create_srq_kernel`), the
//! driver allocates and posts them (ksrq.rs). The RMP (ready) or the XRC SRQ is created on
//! their pages.
//!
//! The limit (srq.c `mlx5_ib_modify_srq`, `mlx5_ib_query_srq`; srq_cmd.c `arm_rmp_cmd`,
//! `arm_xrc_srq_cmd`): `ibv_modify_srq` with `IBV_SRQ_LIMIT` arms it (MODIFY_RMP RDY → RDY with
//! `bitmask.lwm`, or ARM_XRC_SRQ), a limit of at least the SRQ's size and resizing are
//! `EINVAL`; the card raises `SRQ_RQ_LIMIT` once fewer WQEs are posted and disarms, which
//! reaches the SRQ's owner as `IB_EVENT_SRQ_LIMIT_REACHED` (the async EQ routes SRQ events by
//! number, `core/qp_events.rs`); `ibv_query_srq` reads the armed limit back from the card.

use cx4_hw::{
    command,
    eq::event_type,
    pages::PAGE_SIZE,
    srq::{
        rmpc_state,
        CreateRmpIn,
        CreateXrcSrqIn,
        ARM_XRC_SRQ_OP_MOD_XRC_SRQ, //
    },
};
use ib::{
    srq_attr_mask,
    Access,
    Pd,
    Srq,
    SrqAttr,
    SrqEvent,
    SrqEvents,
    SrqInitAttr,
    SrqType,
    Udata,
    Umem, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    ib::{
        abi::{
            self,
            CreateSrqReq,
            CreateSrqResp, //
        },
        cq::ADAPTER_PAGE,
        ksrq::KernelSrq,
        IbDev, //
    },
    mdev::Mdev,
    qp_events::{
        QpEventReg,
        QpHandler, //
    },
};

/// A receive WQE's next segment (`struct mlx5_wqe_srq_next_seg`) and a scatter entry
/// (`struct mlx5_wqe_data_seg`).
const NEXT_SEG: u32 = 16;
const DATA_SEG: u32 = 16;
/// The user index when the context has CQE version 0 (`MLX5_IB_DEFAULT_UIDX`).
const DEFAULT_UIDX: u32 = 0xff_ffff;
/// The request up to and including `uidx` (`offsetofend(struct mlx5_ib_create_srq, uidx)`).
const CREATE_SRQ_REQ_UIDX_LEN: usize = 28;

/// Which card object an SRQ is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A basic SRQ: a receive memory pool.
    Rmp,
    /// An XRC SRQ (`CREATE_XRC_SRQ`).
    Xrc,
}

/// A user SRQ (an RMP or an XRC SRQ). Dropping it stops its events, destroys it, then
/// unpins its memory.
pub(crate) struct IbSrq {
    /// Its entry in the async EQ's SRQ table (set once the SRQ exists).
    events: Option<QpEventReg>,
    mdev: Arc<Mdev>,
    kind: Kind,
    srqn: u32,
    /// WQEs in the ring (`msrq.max`: the requested count plus one, to a power of two).
    max: u32,
    /// Scatter entries per WQE (`msrq.max_gs`).
    max_gs: u32,
    mem: SrqMem,
}

/// Where an SRQ's WQEs live.
enum SrqMem {
    /// A process's: its pinned ring and doorbell record.
    User { _buf: Umem, _db: Umem },
    /// A kernel user's: the driver's ring (ksrq.rs), shared with the kernel QPs on it.
    Kernel(Arc<KernelSrq>),
}

/// Forwards the card's asynchronous events of one SRQ to ib_core (from the async EQ).
struct Notify(Arc<SrqEvents>);

impl QpHandler for Notify {
    fn event(&self, _srqn: u32, ty: u8) {
        let ev = match ty {
            event_type::SRQ_RQ_LIMIT => SrqEvent::LimitReached,
            event_type::SRQ_CATAS_ERROR => SrqEvent::Err,
            _ => return,
        };
        self.0.event(ev);
    }
}

impl IbSrq {
    /// The RMP number, which QPs on the SRQ name (`None` for an XRC SRQ, which receives
    /// for its domain's XRC target QPs only).
    pub(crate) fn rmpn(&self) -> Option<u32> {
        (self.kind == Kind::Rmp).then_some(self.srqn)
    }

    /// A kernel SRQ's ring (`None` for a process's SRQ).
    pub(crate) fn kernel_ring(&self) -> Option<&Arc<KernelSrq>> {
        match &self.mem {
            SrqMem::Kernel(k) => Some(k),
            SrqMem::User { .. } => None,
        }
    }

    /// Creates a user SRQ from libmlx5's request or a kernel user's basic SRQ; returns it
    /// and its number.
    pub(crate) fn create(
        pd: &Pd<IbDev>,
        attr: &SrqInitAttr<'_, IbDev>,
        udata: Option<&mut Udata<'_>>,
        events: &Arc<SrqEvents>,
    ) -> Result<(Self, u32)> {
        match udata {
            Some(u) => Self::create_user(pd, attr, u, events),
            None => Self::create_kernel(pd, attr, events),
        }
    }

    /// A kernel user's basic SRQ (mlx5_ib `create_srq_kernel`): an RMP on the driver's
    /// ring, WQEs of a next segment and `max_sge` scatter entries (at least one, to a power
    /// of two of at least 32 bytes), `max_wr + 1` of them to a power of two.
    fn create_kernel(
        pd: &Pd<IbDev>,
        attr: &SrqInitAttr<'_, IbDev>,
        events: &Arc<SrqEvents>,
    ) -> Result<(Self, u32)> {
        if attr.srq_type != SrqType::Basic {
            return Err(ib::eopnotsupp());
        }
        let dev = pd.device();
        let sh = dev.data();
        let g = sh.caps.gen();
        let sge = attr.max_sge.max(1);
        if attr.max_wr == 0
            || attr.max_wr >= 1u32 << g.log_max_srq_sz()
            || sge > g.max_wqe_sz_rq() / DATA_SEG
        {
            return Err(EINVAL);
        }
        let max = (attr.max_wr + 1).next_power_of_two();
        let desc = (NEXT_SEG + sge * DATA_SEG).next_power_of_two().max(32);
        let ring = Arc::new(KernelSrq::alloc(&sh.mdev, max, desc.ilog2())?, GFP_KERNEL)?;
        let (dma, pages) = ring.pages();
        let pas = (0..pages).map(|i| dma + (i * PAGE_SIZE) as u64);
        let srqn = create_rmp(
            &sh.mdev,
            pd.pdn(),
            max,
            desc,
            attr.srq_limit,
            ring.dbrec_dma(),
            pas,
        )?;
        let max_gs = ring.max_gs();
        Self::finish(
            &sh.mdev,
            Kind::Rmp,
            srqn,
            max,
            max_gs,
            SrqMem::Kernel(ring),
            events,
        )
    }

    /// Creates a basic or XRC user SRQ from libmlx5's request.
    fn create_user(
        pd: &Pd<IbDev>,
        attr: &SrqInitAttr<'_, IbDev>,
        udata: &mut Udata<'_>,
        events: &Arc<SrqEvents>,
    ) -> Result<(Self, u32)> {
        let kind = match attr.srq_type {
            SrqType::Basic => Kind::Rmp,
            SrqType::Xrc => Kind::Xrc,
            SrqType::Other(_) => return Err(ib::eopnotsupp()),
        };
        let dev = pd.device();
        let sh = dev.data();
        let g = sh.caps.gen();
        let max_wqes = 1u32 << g.log_max_srq_sz();
        if attr.max_wr >= max_wqes || attr.max_sge > g.max_wqe_sz_rq() / DATA_SEG {
            return Err(EINVAL);
        }
        // An XRC SRQ needs the XRC capability (the domain exists only then) and its CQ.
        let xrc = match kind {
            Kind::Xrc => Some((
                attr.xrcd().ok_or(EINVAL)?.xrcdn(),
                attr.cq().ok_or(EINVAL)?.cqn(),
            )),
            Kind::Rmp => None,
        };
        let req: CreateSrqReq = udata.read(abi::CREATE_SRQ_REQ_MIN_LEN)?;
        if req.flags != 0 || req.reserved0 != 0 || req.reserved1 != 0 {
            return Err(EINVAL);
        }
        // get_srq_user_index: an XRC SRQ's receive completions carry libmlx5's user index
        // (CQE version 1), or its number (version 0: the index is 0xffffff).
        let uidx = if kind == Kind::Xrc && g.cqe_version() == 1 {
            if udata.in_len() < CREATE_SRQ_REQ_UIDX_LEN || req.uidx > DEFAULT_UIDX {
                return Err(EINVAL);
            }
            req.uidx
        } else {
            DEFAULT_UIDX
        };
        let max = (attr.max_wr + 1).next_power_of_two();
        let desc = (NEXT_SEG + attr.max_sge * DATA_SEG)
            .next_power_of_two()
            .max(32);
        let bytes = usize::try_from(max)? * usize::try_from(desc)?;
        // The work queue's page offset is not offered: libmlx5's buffers are page aligned.
        if req.buf_addr % ADAPTER_PAGE as u64 != 0 || req.db_addr % 8 != 0 {
            return Err(EINVAL);
        }
        let buf = Umem::get(dev, req.buf_addr, bytes, Access::LOCAL_WRITE)?;
        let db = Umem::get(dev, req.db_addr, 8, Access::LOCAL_WRITE)?;
        let pas = buf.dma_blocks(ADAPTER_PAGE)?;
        let srqn = match xrc {
            None => create_rmp(
                &sh.mdev,
                pd.pdn(),
                max,
                desc,
                attr.srq_limit,
                db.start_dma(),
                pas.iter().copied(),
            )?,
            Some((xrcdn, cqn)) => {
                // srq_cmd.c create_xrc_srq_cmd with set_srqc: the SRQ context's geometry,
                // PD, domain, CQ, doorbell record and user index; the page list after it.
                let mut m = input::<command::CreateXrcSrq>(pas.len() * 8)?;
                {
                    let c = m.xrc_srq_context_entry_mut();
                    c.set_log_xrc_srq_size(max.ilog2());
                    c.set_log_rq_stride(desc.ilog2() - 4);
                    c.set_log_page_size(0);
                    c.set_page_offset(0);
                    c.set_lwm(attr.srq_limit);
                    c.set_pd(pd.pdn());
                    c.set_xrcd(xrcdn);
                    c.set_cqn(cqn);
                    c.set_user_index(uidx);
                    let dbr = db.start_dma();
                    c.set_db_record_addr_h((dbr >> 32) as u32);
                    c.set_db_record_addr_l((dbr as u32) >> 2);
                }
                for (i, pa) in pas.iter().enumerate() {
                    CreateXrcSrqIn::set_pas(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
                }
                sh.mdev
                    .cmdq
                    .exec::<command::CreateXrcSrq>(&m, 0)?
                    .xrc_srqn()
            }
        };
        let max_gs = (desc - NEXT_SEG) / DATA_SEG;
        let mem = SrqMem::User { _buf: buf, _db: db };
        let (srq, srqn) = Self::finish(&sh.mdev, kind, srqn, max, max_gs, mem, events)?;
        udata.respond(&CreateSrqResp { srqn, reserved: 0 })?;
        Ok((srq, srqn))
    }

    /// The SRQ the card created as `srqn`, with its events registered; a failure destroys
    /// it.
    fn finish(
        mdev: &Arc<Mdev>,
        kind: Kind,
        srqn: u32,
        max: u32,
        max_gs: u32,
        mem: SrqMem,
        events: &Arc<SrqEvents>,
    ) -> Result<(Self, u32)> {
        // From here on the SRQ exists: a failure drops `srq`, which destroys it.
        let mut srq = Self {
            events: None,
            mdev: mdev.clone(),
            kind,
            srqn,
            max,
            max_gs,
            mem,
        };
        let handler: Arc<dyn QpHandler> = Arc::new(Notify(events.clone()), GFP_KERNEL)?;
        srq.events = Some(QpEventReg::srq(mdev, srqn, handler)?);
        Ok((srq, srqn))
    }
}

/// `CREATE_RMP` (srq_cmd.c `create_rmp_cmd`): a ready RMP of `max` WQEs of `desc` bytes in
/// PD `pdn`, limit `lwm`, its doorbell record at `dbr` and its ring on the pages `pas`.
fn create_rmp(
    mdev: &Mdev,
    pdn: u32,
    max: u32,
    desc: u32,
    lwm: u32,
    dbr: u64,
    pas: impl ExactSizeIterator<Item = u64>,
) -> Result<u32> {
    let mut m = input::<command::CreateRmp>(pas.len() * 8)?;
    {
        let c = m.ctx_mut();
        c.set_state(rmpc_state::RDY.into());
        let wq = c.wq_mut();
        wq.set_log_wq_pg_sz(0);
        wq.set_log_wq_stride(desc.ilog2());
        wq.set_log_wq_sz(max.ilog2());
        wq.set_lwm(lwm);
        wq.set_pd(pdn);
        wq.set_dbr_addr(dbr);
    }
    for (i, pa) in pas.enumerate() {
        CreateRmpIn::set_wq_pas(m.bytes_mut(), i, pa).map_err(|_| EINVAL)?;
    }
    Ok(mdev.cmdq.exec::<command::CreateRmp>(&m, 0)?.rmpn())
}

impl IbSrq {
    /// `ibv_modify_srq`: arms the limit (mlx5_ib `mlx5_ib_modify_srq`: no resizing, a limit
    /// below the SRQ's size).
    pub(crate) fn modify(srq: &Srq<IbDev>, attr: &SrqAttr, mask: u32) -> Result {
        let this: &IbSrq = srq;
        if mask & srq_attr_mask::MAX_WR != 0 {
            return Err(EINVAL);
        }
        if mask & srq_attr_mask::LIMIT == 0 {
            return Ok(());
        }
        if attr.srq_limit >= this.max {
            return Err(EINVAL);
        }
        match this.kind {
            Kind::Rmp => {
                let mut m = input::<command::ModifyRmp>(0)?;
                m.set_rmp_state(rmpc_state::RDY.into());
                m.set_rmpn(this.srqn);
                m.bitmask_mut().set_lwm(1);
                let c = m.ctx_mut();
                c.set_state(rmpc_state::RDY.into());
                c.wq_mut().set_lwm(attr.srq_limit);
                this.mdev.cmdq.exec::<command::ModifyRmp>(&m, 0)?;
            }
            Kind::Xrc => {
                let mut m = input::<command::ArmXrcSrq>(0)?;
                m.set_op_mod(ARM_XRC_SRQ_OP_MOD_XRC_SRQ.into());
                m.set_xrc_srqn(this.srqn);
                m.set_lwm(attr.srq_limit);
                this.mdev.cmdq.exec::<command::ArmXrcSrq>(&m, 0)?;
            }
        }
        Ok(())
    }

    /// `ibv_query_srq`: the size and the limit as the card has it (0 once the event came).
    pub(crate) fn query(srq: &Srq<IbDev>) -> Result<SrqAttr> {
        let this: &IbSrq = srq;
        let lwm = match this.kind {
            Kind::Rmp => {
                let mut m = input::<command::QueryRmp>(0)?;
                m.set_rmpn(this.srqn);
                let out = this.mdev.cmdq.exec::<command::QueryRmp>(&m, 0)?;
                out.rmp_context().wq().lwm()
            }
            Kind::Xrc => {
                let mut m = input::<command::QueryXrcSrq>(0)?;
                m.set_xrc_srqn(this.srqn);
                let out = this.mdev.cmdq.exec::<command::QueryXrcSrq>(&m, 0)?;
                out.xrc_srq_context_entry().lwm()
            }
        };
        Ok(SrqAttr {
            max_wr: this.max - 1,
            max_sge: this.max_gs,
            srq_limit: lwm,
        })
    }
}

impl Drop for IbSrq {
    fn drop(&mut self) {
        // No more events for it (the layer revoked the sink already), then the card's object.
        drop(self.events.take());
        let r = match self.kind {
            Kind::Rmp => input::<command::DestroyRmp>(0).and_then(|mut m| {
                m.set_rmpn(self.srqn);
                self.mdev
                    .cmdq
                    .exec::<command::DestroyRmp>(&m, 0)
                    .map(|_| ())
            }),
            Kind::Xrc => input::<command::DestroyXrcSrq>(0).and_then(|mut m| {
                m.set_xrc_srqn(self.srqn);
                self.mdev
                    .cmdq
                    .exec::<command::DestroyXrcSrq>(&m, 0)
                    .map(|_| ())
            }),
        };
        if let Err(e) = r {
            let what = match self.kind {
                Kind::Rmp => "DESTROY_RMP",
                Kind::Xrc => "DESTROY_XRC_SRQ",
            };
            dev_warn!(self.mdev.dev.dev(), "{} {:#x}: {:?}\n", what, self.srqn, e);
        }
    }
}
