// SPDX-License-Identifier: GPL-2.0
//! Receive WQs, their indirection tables and RSS QPs of processes (mlx5_ib qp.c
//! `mlx5_ib_create_wq`, `mlx5_ib_modify_wq`, `mlx5_ib_create_rwq_ind_table`,
//! `create_rss_raw_qp_tir`):
//!
//! - a WQ is an RQ of the card in the process's memory (core hwq.rs [`HwRq`], made by rawqp.rs `create_user_rq`), created in RST
//!   with its user index, `flush_in_error_en` and no VLAN stripping; `ibv_modify_wq` moves it,
//!   RESET→RDY naming the port's queue counter when the card can (`modify_rq_counter_set_id`);
//! - an indirection table is an RQT listing the WQs' RQs;
//! - an RSS QP is an indirect TIR over the table in the context's transport domain, hashing
//!   the fields libmlx5 names with the Toeplitz key it gives (no send queue, QP number 0);
//!   steering rules (flow.rs) forward to it. As mlx5_ib: Toeplitz only (`EOPNOTSUPP`), a key of
//!   exactly 40 bytes, at most one L3 and one L4 protocol, and no fields only over a table of
//!   one WQ (`EINVAL`).

use cx4_hw::{
    tir::{
        hash_field_sel,
        l3_prot_type,
        l4_prot_type,
        TOEPLITZ_KEY_LEN, //
    },
    wq::rqc_state,
};
use ib::{
    Access,
    Pd,
    QpInitAttr,
    Udata,
    Umem,
    Wq,
    WqAttr,
    WqInitAttr,
    WqState, //
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::Mutex, //
};

use crate::{
    hwq::{
        HwRq,
        RqChange, //
    },
    ib::{
        abi::{
            self,
            rx_hash,
            CreateQpResp,
            CreateQpRssReq,
            CreateWqReq,
            LenResp,
            ModifyWqReq, //
        },
        cq::PAGE_OFFSET_UNIT,
        rawqp::{
            create_user_rq,
            UserRq, //
        },
        IbDev,
        IbShared, //
    },
    rqt::Rqt,
    tir::{
        Tir,
        TirHash, //
    },
};

/// A process's WQ. Dropping it destroys the RQ, then releases its memory.
pub(crate) struct IbWq {
    // Field order is drop order.
    rq: HwRq,
    state: Pin<KBox<Mutex<WqState>>>,
    /// The queue counter RESET→RDY names, if the card can (`modify_rq_counter_set_id`).
    counter: Option<u8>,
    _buf: Umem,
    _db: Umem,
}

fn rqc_of(s: WqState) -> u8 {
    match s {
        WqState::Reset => rqc_state::RST,
        WqState::Rdy => rqc_state::RDY,
        WqState::Err => rqc_state::ERR,
    }
}

impl IbWq {
    /// A WQ from libmlx5's request (`mlx5_ib_create_wq`); returns it and its number (the
    /// RQN).
    pub(crate) fn create(
        pd: &Pd<IbDev>,
        attr: &WqInitAttr<'_, IbDev>,
        udata: Option<&mut Udata<'_>>,
    ) -> Result<(Self, u32)> {
        let udata = udata.ok_or(ib::eopnotsupp())?;
        if attr.wq_type != 0 || attr.create_flags & !ib::WQ_FLAGS_CVLAN_STRIPPING != 0 {
            return Err(ib::eopnotsupp());
        }
        let dev = pd.device();
        let sh = dev.data();
        let req: CreateWqReq = udata.read(abi::CREATE_WQ_REQ_MIN_LEN)?;
        if req.comp_mask != 0 || req.flags != 0 {
            return Err(ib::eopnotsupp());
        }
        let g = sh.caps.gen();
        let max = 1u32 << g.log_max_wq_sz();
        if !req.rq_wqe_count.is_power_of_two()
            || req.rq_wqe_count > max
            || attr.max_wr > max
            || !(4..=g.max_wqe_sz_rq().max(16).ilog2()).contains(&req.rq_wqe_shift)
            || req.buf_addr % PAGE_OFFSET_UNIT != 0
            || req.db_addr % 8 != 0
            || req.user_index > 0xff_ffff
        {
            return Err(EINVAL);
        }
        let bytes = (req.rq_wqe_count as usize) << req.rq_wqe_shift;
        let buf = Umem::get(dev, req.buf_addr, bytes, Access::LOCAL_WRITE)?;
        let db = Umem::get(dev, req.db_addr, 8, Access::LOCAL_WRITE)?;
        let rq = create_user_rq(
            &sh.mdev,
            &UserRq {
                buf: &buf,
                addr: req.buf_addr,
                log_size: req.rq_wqe_count.ilog2(),
                log_stride: req.rq_wqe_shift,
                pdn: pd.pdn(),
                cqn: attr.cq().cqn(),
                dbr: db.start_dma(),
                user_index: if g.cqe_version() == 1 {
                    req.user_index
                } else {
                    0
                },
                vsd: attr.create_flags & ib::WQ_FLAGS_CVLAN_STRIPPING == 0,
            },
        )?;
        let wqn = rq.rqn();
        let wq = Self {
            rq,
            state: KBox::pin_init(new_mutex!(WqState::Reset, "cx4::ib_wq"), GFP_KERNEL)?,
            counter: (g.modify_rq_counter_set_id() != 0).then_some(sh.qcounter),
            _buf: buf,
            _db: db,
        };
        if udata.out_len() > 0 {
            udata.respond(&LenResp {
                response_length: 4,
                reserved: 0,
            })?;
        }
        Ok((wq, wqn))
    }

    /// Moves the WQ (`mlx5_ib_modify_wq`).
    pub(crate) fn modify(wq: &Wq<IbDev>, attr: &WqAttr, udata: Option<&mut Udata<'_>>) -> Result {
        if let Some(u) = udata {
            if u.in_len() > 0 {
                let r: ModifyWqReq = u.read(size_of::<ModifyWqReq>())?;
                if r.comp_mask != 0 || r.reserved != 0 {
                    return Err(ib::eopnotsupp());
                }
            }
        }
        if attr.flags_mask != 0 {
            return Err(ib::eopnotsupp());
        }
        let this: &IbWq = wq;
        let mut state = this.state.lock();
        let cur = attr.cur_state.unwrap_or(*state);
        let new = attr.state.unwrap_or(cur);
        let counter = this
            .counter
            .filter(|_| cur == WqState::Reset && new == WqState::Rdy);
        this.rq.modify(
            rqc_of(cur),
            rqc_of(new),
            RqChange {
                counter,
                ..Default::default()
            },
        )?;
        *state = new;
        Ok(())
    }
}

/// An indirection table: an RQT of the WQs' RQs. Dropping it destroys the RQT.
pub(crate) struct IbRwqIndTable {
    rqt: Rqt,
}

impl IbRwqIndTable {
    /// The table over `wqs` (`mlx5_ib_create_rwq_ind_table`); returns it and its number
    /// (the RQTN).
    pub(crate) fn create(
        sh: &IbShared,
        wqs: &[&Wq<IbDev>],
        udata: Option<&mut Udata<'_>>,
    ) -> Result<(Self, u32)> {
        let n = wqs.len();
        if n == 0 || n.ilog2() > sh.caps.gen().log_max_rqt_size() {
            return Err(EINVAL);
        }
        let mut rqns = KVec::with_capacity(n, GFP_KERNEL)?;
        for w in wqs {
            let w: &IbWq = w;
            rqns.push(w.rq.rqn(), GFP_KERNEL)?;
        }
        if let Some(u) = &udata {
            if u.in_len() > 0 {
                return Err(ib::eopnotsupp());
            }
            if u.out_len() > 0 && u.out_len() < size_of::<LenResp>() {
                return Err(EINVAL);
            }
        }
        let rqt = Rqt::create(&sh.mdev, n as u32, &rqns)?;
        let num = rqt.rqtn();
        if let Some(u) = udata {
            if u.out_len() > 0 {
                u.respond(&LenResp {
                    response_length: 4,
                    reserved: 0,
                })?;
            }
        }
        Ok((Self { rqt }, num))
    }
}

/// The Toeplitz hash an RSS QP asks for (`create_rss_raw_qp_tir`): no fields only over a
/// table of one WQ.
fn rss_hash(req: &CreateQpRssReq, log_table: u32) -> Result<TirHash> {
    use rx_hash as h;
    if req.rx_hash_function != abi::RX_HASH_FUNC_TOEPLITZ {
        return Err(ib::eopnotsupp());
    }
    if usize::from(req.rx_key_len) != TOEPLITZ_KEY_LEN {
        return Err(EINVAL);
    }
    let mut key = [0; TOEPLITZ_KEY_LEN];
    key.copy_from_slice(&req.rx_hash_key[..TOEPLITZ_KEY_LEN]);
    let f = req.rx_hash_fields_mask;
    if f == 0 {
        // Steering without hashing: every frame to the table's one WQ.
        return if log_table == 0 {
            Ok(TirHash {
                key,
                l3_prot_type: 0,
                l4_prot_type: 0,
                fields: 0,
            })
        } else {
            Err(EINVAL)
        };
    }
    let v4 = f & (h::SRC_IPV4 | h::DST_IPV4) != 0;
    let v6 = f & (h::SRC_IPV6 | h::DST_IPV6) != 0;
    let tcp = f & (h::SRC_PORT_TCP | h::DST_PORT_TCP) != 0;
    let udp = f & (h::SRC_PORT_UDP | h::DST_PORT_UDP) != 0;
    let spi = f & h::IPSEC_SPI != 0;
    if (v4 && v6) || u8::from(tcp) + u8::from(udp) + u8::from(spi) > 1 {
        return Err(EINVAL);
    }
    let mut fields = 0;
    if f & (h::SRC_IPV4 | h::SRC_IPV6) != 0 {
        fields |= hash_field_sel::SRC_IP;
    }
    if f & (h::DST_IPV4 | h::DST_IPV6) != 0 {
        fields |= hash_field_sel::DST_IP;
    }
    if f & (h::SRC_PORT_TCP | h::SRC_PORT_UDP) != 0 {
        fields |= hash_field_sel::L4_SPORT;
    }
    if f & (h::DST_PORT_TCP | h::DST_PORT_UDP) != 0 {
        fields |= hash_field_sel::L4_DPORT;
    }
    if spi {
        fields |= hash_field_sel::IPSEC_SPI;
    }
    Ok(TirHash {
        key,
        l3_prot_type: if v6 {
            l3_prot_type::IPV6
        } else {
            l3_prot_type::IPV4
        },
        l4_prot_type: if udp {
            l4_prot_type::UDP
        } else {
            l4_prot_type::TCP
        },
        fields,
    })
}

/// An RSS QP's TIR (`create_rss_raw_qp_tir`), from libmlx5's request.
pub(crate) fn create_rss_tir(
    pd: &Pd<IbDev>,
    attr: &QpInitAttr<'_, IbDev>,
    udata: &mut Udata<'_>,
) -> Result<Tir> {
    let table = attr.rwq_ind_table().ok_or(EINVAL)?;
    if attr.create_flags() != 0
        || attr.send_cq().is_some()
        || attr.recv_cq().is_some()
        || attr.srq().is_some()
    {
        return Err(EINVAL);
    }
    let uctx = udata.ucontext::<IbDev>().ok_or(EINVAL)?;
    let tdn = uctx.tdn().ok_or(ib::eopnotsupp())?;
    let req: CreateQpRssReq = udata.read(abi::CREATE_QP_RSS_REQ_MIN_LEN)?;
    if req.comp_mask != 0 || req.flags != 0 {
        return Err(ib::eopnotsupp());
    }
    let t: &IbRwqIndTable = table;
    let n = t.rqt.max_size();
    let hash = rss_hash(&req, n.ilog2())?;
    let sh = pd.device().data();
    let tir = Tir::create_indirect(&sh.mdev, tdn, t.rqt.rqtn(), &hash, None)?;
    udata.respond(&CreateQpResp::default())?;
    Ok(tir)
}
