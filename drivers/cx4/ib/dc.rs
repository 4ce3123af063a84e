// SPDX-License-Identifier: GPL-2.0
//! The DC transport of processes (`mlx5dv_create_qp` with `MLX5DV_QP_INIT_ATTR_MASK_DC`;
//! Documentation/dc.md): `IB_QPT_DRIVER` QPs whose vendor flags name a DC initiator or target
//! (mlx5_ib qp.c `process_vendor_flags`, `check_qp_attr`).
//!
//! - A DC initiator (`MLX5_QP_FLAG_TYPE_DCI`) is a QP of service type DCI on the process's
//!   send queue (qp.rs creates it like an RC QP, without a receive queue); its transitions
//!   take the attributes [`check_dci_modify`] lets through (`modify_dci_qp_is_ok`,
//!   `validate_rd_atomic` against the DC read/atomic limits) and no optional parameters.
//! - A DC target ([`Dct`], `MLX5_QP_FLAG_TYPE_DCT`: the access key where a QP's SQ buffer
//!   address would be) is not a QP on the card: the driver keeps its context (`create_dct`),
//!   fills it at RESET→INIT and INIT→RTR (`mlx5_ib_modify_dct`), and sends `CREATE_DCT` at
//!   RTR, answering libmlx5 with the DCT's number (`mlx5_ib_modify_qp_resp.dctn`, which
//!   libmlx5 takes as the QP number). Destroying it drains it: `DRAIN_DCT`, a wait for the
//!   card's `DCT_DRAINED` event, then `DESTROY_DCT` (qpc.c `mlx5_core_destroy_dct`).

use cx4_hw::{
    command,
    dct::Dctc,
    eq::event_type,
    qp::atomic_mode, //
};
use ib::{
    qp_attr_mask as m,
    Access,
    Pd,
    QpAttr,
    QpCap,
    QpInitAttr,
    QpState,
    Udata, //
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Completion,
        Mutex, //
    },
};
use zerocopy::FromZeros;

use crate::{
    caps::Caps,
    cmd::input,
    ib::{
        abi::{
            self,
            CreateQpReq,
            ModifyQpResp, //
        },
        IbDev,
        IbShared, //
    },
    mdev::Mdev,
    qp_events::{
        QpEventReg,
        QpHandler, //
    },
};

/// The DC type a process's `IB_QPT_DRIVER` QP is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DcType {
    /// DC initiator.
    Dci,
    /// DC target.
    Dct,
}

/// The DC type the create request's vendor flags name: exactly one of the two, else
/// `EINVAL` (`process_vendor_flags`).
pub(crate) fn dc_type(flags: u32) -> Result<DcType> {
    match flags & (abi::QP_FLAG_TYPE_DCT | abi::QP_FLAG_TYPE_DCI) {
        abi::QP_FLAG_TYPE_DCI => Ok(DcType::Dci),
        abi::QP_FLAG_TYPE_DCT => Ok(DcType::Dct),
        _ => Err(EINVAL),
    }
}

/// A DCI has no receive side of its own (`check_qp_attr`; `create_dci` with the request's
/// receive queue matching none).
pub(crate) fn check_dci(attr: &QpInitAttr<'_, IbDev>, req: &CreateQpReq) -> Result {
    let cap = attr.cap();
    if cap.max_recv_wr != 0
        || cap.max_recv_sge != 0
        || req.rq_wqe_count != 0
        || req.rq_wqe_shift != 0
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// `is_valid_mask`: every required attribute and nothing beyond the optional ones.
fn valid_mask(mask: u32, req: u32, opt: u32) -> bool {
    mask & req == req && mask & !(req | opt) == 0
}

/// The transitions of a DCI and the attributes each takes (`modify_dci_qp_is_ok`), its port
/// (one), and its read/atomic depth against the DC limits (`validate_rd_atomic`); `EINVAL`
/// otherwise.
pub(crate) fn check_dci_modify(
    caps: &Caps,
    cur: QpState,
    new: QpState,
    attr: &QpAttr,
    mask: u32,
) -> Result {
    use QpState as S;
    let req = m::STATE;
    let ok = match (cur, new) {
        (_, S::Reset) => valid_mask(mask, req, 0),
        (S::Reset, S::Init) => valid_mask(mask, req | m::PKEY_INDEX | m::PORT, 0),
        (S::Init, S::Init) => valid_mask(mask, req, m::PKEY_INDEX | m::PORT),
        (S::Init, S::Rtr) => valid_mask(mask, req | m::PATH_MTU, m::PKEY_INDEX | m::AV),
        (S::Rtr, S::Rts) => valid_mask(
            mask,
            req | m::TIMEOUT | m::RETRY_CNT | m::RNR_RETRY | m::MAX_QP_RD_ATOMIC | m::SQ_PSN,
            m::MIN_RNR_TIMER,
        ),
        (S::Rts, S::Rts) => valid_mask(mask, req, m::MIN_RNR_TIMER),
        (c, S::Err) => c != S::Reset && valid_mask(mask, req, 0),
        _ => false,
    };
    let g = caps.gen();
    if !ok
        || (mask & m::PORT != 0 && attr.port_num != 1)
        || (mask & m::MAX_QP_RD_ATOMIC != 0
            && u32::from(attr.max_rd_atomic) > 1 << g.log_max_ra_res_dc())
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// A DC target of a process (mlx5_ib's `mlx5_ib_dct`): its context until `CREATE_DCT`, then
/// the DCT on the card.
pub(crate) struct Dct {
    mdev: Arc<Mdev>,
    soft: Pin<KBox<Mutex<DctSoft>>>,
}

struct DctSoft {
    state: QpState,
    /// The context `CREATE_DCT` sends, filled in by the transitions.
    ctx: Dctc,
    /// The DCT on the card, from INIT→RTR on.
    card: Option<CardDct>,
}

/// A DCT the card created: its number, the registration of its `DCT_DRAINED` event and what
/// that event completes.
struct CardDct {
    mdev: Arc<Mdev>,
    dctn: u32,
    drained: Arc<Drained>,
    _reg: QpEventReg,
}

/// Completed by the DCT's `DCT_DRAINED` event (from the async EQ).
#[pin_data]
struct Drained {
    #[pin]
    done: Completion,
}

impl QpHandler for Drained {
    fn event(&self, _dctn: u32, ty: u8) {
        if ty == event_type::DCT_DRAINED {
            self.done.complete_all();
        }
    }
}

impl Dct {
    /// A DCT of `pd` from a process's request (`create_dct`; `check_qp_attr`,
    /// `process_create_flags`): an SRQ and a receive CQ, no create flags, else `EINVAL`.
    /// Nothing reaches the card yet.
    pub(crate) fn create(
        pd: &Pd<IbDev>,
        attr: &QpInitAttr<'_, IbDev>,
        req: &CreateQpReq,
        uidx: u32,
    ) -> Result<Self> {
        if attr.create_flags() != 0 {
            return Err(EINVAL);
        }
        let srq = attr.srq().ok_or(EINVAL)?;
        let cq = attr.recv_cq().ok_or(EINVAL)?;
        let mut ctx = Dctc::new_zeroed();
        ctx.set_pd(pd.pdn());
        ctx.set_srqn_xrqn(srq.rmpn().ok_or(EINVAL)?);
        ctx.set_cqn(cq.cqn());
        // The access key shares its place with a QP's SQ buffer address.
        ctx.set_dc_access_key(req.sq_buf_addr);
        ctx.set_user_index(uidx);
        let soft = DctSoft {
            state: QpState::Reset,
            ctx,
            card: None,
        };
        Ok(Self {
            mdev: pd.device().data().mdev.clone(),
            soft: KBox::pin_init(new_mutex!(soft, "cx4::ib_dct"), GFP_KERNEL)?,
        })
    }

    /// RESET→INIT (access rights, P_Key index, port) and INIT→RTR (responder timer, address,
    /// MTU, then `CREATE_DCT`), each with exactly those attributes; any other change is
    /// `EINVAL` (`mlx5_ib_modify_dct`).
    pub(crate) fn modify(
        &self,
        sh: &IbShared,
        attr: &QpAttr,
        mask: u32,
        udata: Option<&mut Udata<'_>>,
    ) -> Result {
        if mask & m::STATE == 0 {
            return Err(EINVAL);
        }
        let mut s = self.soft.lock();
        match (s.state, attr.qp_state) {
            (QpState::Reset, QpState::Init) => {
                let req = m::STATE | m::ACCESS_FLAGS | m::PKEY_INDEX | m::PORT;
                if !valid_mask(mask, req, 0) || attr.port_num != 1 {
                    return Err(EINVAL);
                }
                let a = Access(attr.qp_access_flags);
                let c = &mut s.ctx;
                c.set_rre(a.contains(Access::REMOTE_READ).into());
                c.set_rwe(a.contains(Access::REMOTE_WRITE).into());
                if a.contains(Access::REMOTE_ATOMIC) {
                    if sh.caps.gen().atomic() == 0 {
                        return Err(ib::eopnotsupp());
                    }
                    c.set_atomic_mode(atomic_mode::IB_SPEC.into());
                    c.set_rae(1);
                }
                c.set_pkey_index(attr.pkey_index.into());
                c.set_port(attr.port_num);
                c.set_counter_set_id(sh.qcounter.into());
            }
            (QpState::Init, QpState::Rtr) => {
                let u = udata.ok_or(EINVAL)?;
                let min_len = core::mem::offset_of!(ModifyQpResp, ece_options);
                if u.out_len() < min_len {
                    return Err(EINVAL);
                }
                let req = m::STATE | m::MIN_RNR_TIMER | m::AV | m::PATH_MTU;
                if !valid_mask(mask, req, 0) {
                    return Err(EINVAL);
                }
                let ah = &attr.ah_attr;
                let c = &mut s.ctx;
                c.set_min_rnr_nak(attr.min_rnr_timer.into());
                c.set_tclass(ah.traffic_class.into());
                c.set_flow_label(ah.flow_label);
                c.set_mtu(attr.path_mtu);
                c.set_my_addr_index(ah.sgid_index.into());
                c.set_hop_limit(ah.hop_limit.into());
                if ah.roce {
                    c.set_eth_prio((ah.sl & 7).into());
                }
                let card = self.create_on_card(&s.ctx)?;
                let resp = ModifyQpResp {
                    response_length: if u.out_len() < size_of::<ModifyQpResp>() {
                        min_len as u32
                    } else {
                        size_of::<ModifyQpResp>() as u32
                    },
                    dctn: card.dctn,
                    ..Default::default()
                };
                // Without its number the process cannot use the DCT: it goes again.
                u.respond(&resp)?;
                s.card = Some(card);
            }
            _ => return Err(EINVAL),
        }
        s.state = attr.qp_state;
        Ok(())
    }

    /// `mlx5_core_create_dct`: `CREATE_DCT` with the context, the number's `DCT_DRAINED`
    /// event routed to a fresh completion. If the route cannot be made the DCT is destroyed
    /// again (dropping a [`CardDct`] drains and destroys it).
    fn create_on_card(&self, ctx: &Dctc) -> Result<CardDct> {
        let mut msg = input::<command::CreateDct>(0)?;
        *msg.dct_context_entry_mut() = *ctx;
        let dctn = self.mdev.cmdq.exec::<command::CreateDct>(&msg, 0)?.dctn();
        let made = || -> Result<(Arc<Drained>, QpEventReg)> {
            let drained = Arc::pin_init(
                try_pin_init!(Drained {
                    done <- Completion::new(),
                }),
                GFP_KERNEL,
            )?;
            let reg = QpEventReg::dct(&self.mdev, dctn, drained.clone())?;
            Ok((drained, reg))
        };
        match made() {
            Ok((drained, reg)) => Ok(CardDct {
                mdev: self.mdev.clone(),
                dctn,
                drained,
                _reg: reg,
            }),
            Err(e) => {
                destroy_dct(&self.mdev, dctn);
                Err(e)
            }
        }
    }

    /// `mlx5_ib_dct_query_qp`: the card's context (`QUERY_DCT`) of a DCT in RTR (before,
    /// `EINVAL`): state RTR, rights, port, responder timer, address fields, MTU, P_Key index.
    pub(crate) fn query(&self, cap: QpCap) -> Result<QpAttr> {
        let s = self.soft.lock();
        let card = match (&s.card, s.state) {
            (Some(c), QpState::Rtr) => c,
            _ => return Err(EINVAL),
        };
        let mut q = input::<command::QueryDct>(0)?;
        q.set_dctn(card.dctn);
        let out = self.mdev.cmdq.exec::<command::QueryDct>(&q, 0)?;
        let c = out.dct_context_entry();
        let mut a = QpAttr {
            qp_state: QpState::Rtr,
            cur_qp_state: QpState::Rtr,
            port_num: c.port(),
            min_rnr_timer: c.min_rnr_nak() as u8,
            path_mtu: c.mtu(),
            pkey_index: c.pkey_index() as u16,
            cap,
            ..Default::default()
        };
        for (on, right) in [
            (c.rre(), Access::REMOTE_READ),
            (c.rwe(), Access::REMOTE_WRITE),
            (c.rae(), Access::REMOTE_ATOMIC),
        ] {
            if on != 0 {
                a.qp_access_flags |= right.0;
            }
        }
        let ah = &mut a.ah_attr;
        ah.traffic_class = c.tclass() as u8;
        ah.flow_label = c.flow_label();
        ah.sgid_index = c.my_addr_index() as u8;
        ah.hop_limit = c.hop_limit() as u8;
        Ok(a)
    }
}

impl Drop for CardDct {
    /// `mlx5_core_destroy_dct`: `DRAIN_DCT`, the wait for `DCT_DRAINED` (uninterruptible, as
    /// mlx5_core's), then `DESTROY_DCT`. A failed drain (the card in error) skips the wait.
    fn drop(&mut self) {
        let mut msg = match input::<command::DrainDct>(0) {
            Ok(m) => m,
            Err(_) => return,
        };
        msg.set_dctn(self.dctn);
        let mdev = &self.mdev;
        match mdev.cmdq.exec::<command::DrainDct>(&msg, 0) {
            Ok(_) => self.drained.done.wait_for_completion(),
            Err(e) => dev_warn!(mdev.dev.dev(), "DRAIN_DCT {:#x}: {:?}\n", self.dctn, e),
        }
        destroy_dct(mdev, self.dctn);
    }
}

/// `DESTROY_DCT` of DCT `dctn` (a failure is reported, the number lost).
fn destroy_dct(mdev: &Mdev, dctn: u32) {
    let Ok(mut msg) = input::<command::DestroyDct>(0) else {
        return;
    };
    msg.set_dctn(dctn);
    if let Err(e) = mdev.cmdq.exec::<command::DestroyDct>(&msg, 0) {
        dev_warn!(mdev.dev.dev(), "DESTROY_DCT {:#x}: {:?}\n", dctn, e);
    }
}
