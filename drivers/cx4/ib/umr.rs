// SPDX-License-Identifier: GPL-2.0
//! The RDMA layer's UMR QP (mlx5_ib umr.c `mlx5r_umr_resource_init`, `mlx5r_umr_qp_rst2rts`,
//! `mlx5r_umr_post_send_wait`, `mlx5r_umr_rereg_pd_access`): a privileged `REG_UMR` QP of the
//! driver's own PD, with a polled CQ, through which the driver changes an mkey in place — a
//! user MR's rights and PD on `ibv_rereg_mr`, so that the keys the process (and its peers)
//! hold stay valid. One UMR at a time: the caller's WQE is posted signaled and waited for;
//! an error completion leaves the QP in error, and it is reset and brought up again before
//! the next one.

use cx4_hw::{
    cq::cqe::{
        opcode as cqe_op,
        ErrCqe, //
    },
    qp::{
        qpc_st,
        Qpc, //
    },
    wqe::{
        fm_ce_se,
        opcode,
        opmod_idx_opcode,
        qpn_ds,
        rdma::{
            MkeyMask,
            MkeySeg,
            Perm,
            WqeUmrCtrlSeg,
            UMR_CHECK_FREE,
            UMR_INLINE, //
        },
        WqeCtrlSeg,
        SEND_WQE_BB,
        SEND_WQE_DS, //
    },
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    time::{
        delay::fsleep,
        Delta,
        Instant,
        Monotonic, //
    },
};
use zerocopy::FromBytes;

use crate::{
    cq::{
        Cq,
        CqParams, //
    },
    dmabuf::DmaBuf,
    mdev::Mdev,
    pd::Pd,
    qp::{
        destroy,
        KernelQp,
        KernelRq,
        Transition, //
    },
    wq::DbRecord,
};

/// Send-queue basic blocks (one UMR in flight at a time; a rights change takes two).
const SQ_BBS: u32 = 8;
/// log2 of the CQ's entries.
const LOG_CQ: u32 = 3;
/// How long a UMR may take before the driver gives up on it (mlx5_ib waits without limit
/// for its completion; a lost completion here must not hang `ibv_rereg_mr`).
const TIMEOUT_MS: i64 = 5000;

/// A UMR that changes an mkey's rights and PD (mlx5_ib `mlx5r_umr_rereg_pd_access`): the
/// mkey must not be free; its key, translation and range stay.
pub(crate) struct RightsUmr {
    /// The mkey (its variant byte included).
    pub(crate) key: u32,
    /// The new rights (mkey context bits; local read always).
    pub(crate) perm: Perm,
    /// Whether the card has atomics (`MLX5_MKEY_MASK_A` only then).
    pub(crate) atomic: bool,
    /// The new PD.
    pub(crate) pdn: u32,
}

/// The QP number; dropping it destroys the QP (before the CQ and the rings it uses: the
/// first field of [`Ring`]).
struct Qpn {
    mdev: Arc<Mdev>,
    qpn: u32,
}

impl Drop for Qpn {
    fn drop(&mut self) {
        destroy(&self.mdev, self.qpn, "UMR QP: ");
    }
}

struct Ring {
    qp: Qpn,
    cq: Cq,
    buf: DmaBuf,
    dbrec: DbRecord,
    /// The send producer counter (basic blocks).
    pc: u16,
    /// The QP must be reset and brought up again before the next UMR.
    broken: bool,
}

/// The UMR QP. Dropping it destroys the QP, then its CQ, then its PD (field order).
#[pin_data]
pub(crate) struct UmrQp {
    mdev: Arc<Mdev>,
    uar: u32,
    #[pin]
    ring: Mutex<Ring>,
    pd: Pd,
}

impl UmrQp {
    /// Creates the QP (in its own PD, doorbells on UAR page `uar`, completions on a CQ of
    /// completion EQ `eqn` that is never armed) and brings it to RTS.
    pub(crate) fn new(mdev: &Arc<Mdev>, uar: u32, eqn: u8, cqe_v1: bool) -> Result<Arc<Self>> {
        let pd = Pd::alloc(mdev)?;
        let cq = Cq::create(
            mdev,
            &CqParams {
                log_size: LOG_CQ,
                eqn,
                uar,
            },
            None,
        )?;
        let buf = DmaBuf::alloc(mdev.dev.get(), SQ_BBS as usize * SEND_WQE_BB)?;
        let dbrec = DbRecord::alloc(mdev.dev.get())?;
        let qpn = KernelQp {
            st: qpc_st::REG_UMR,
            pdn: pd.pdn(),
            uar,
            rq: KernelRq::Zero,
            sq_bbs: SQ_BBS,
            cqn_snd: cq.cqn(),
            cqn_rcv: cq.cqn(),
            cqe_v1,
            dbr: dbrec.dma(),
            pages: (buf.dma(), 1),
        }
        .create(mdev)?;
        let ring = Ring {
            qp: Qpn {
                mdev: mdev.clone(),
                qpn,
            },
            cq,
            buf,
            dbrec,
            pc: 0,
            broken: false,
        };
        let this = Arc::pin_init(
            try_pin_init!(Self {
                mdev: mdev.clone(),
                uar,
                ring <- new_mutex!(ring, "cx4::umr_qp"),
                pd,
            }),
            GFP_KERNEL,
        )?;
        this.to_rts(&this.ring.lock())?;
        Ok(this)
    }

    /// RESET → INIT (port 1, the QP's PD) → RTR → RTS (mlx5_ib `mlx5r_umr_qp_rst2rts`).
    fn to_rts(&self, r: &Ring) -> Result {
        let base = || {
            let mut c = Qpc::new();
            c.set_st(qpc_st::REG_UMR.into());
            c.set_pd(self.pd.pdn());
            c.set_cqn_snd(r.cq.cqn());
            c.set_cqn_rcv(r.cq.cqn());
            c
        };
        let mut c = base();
        c.primary_address_path_mut().set_vhca_port_num(1);
        c.set_dbr_addr(r.dbrec.dma());
        Transition::Rst2Init.run(&self.mdev, r.qp.qpn, 0, &c)?;
        Transition::Init2Rtr.run(&self.mdev, r.qp.qpn, 0, &base())?;
        Transition::Rtr2Rts.run(&self.mdev, r.qp.qpn, 0, &base())
    }

    /// Posts the rights change and waits for its completion (mlx5_ib
    /// `mlx5r_umr_post_send_wait`). A UMR the card refuses is `EINVAL`.
    pub(crate) fn rereg_rights(&self, u: &RightsUmr) -> Result {
        let mut r = self.ring.lock();
        if r.broken {
            Transition::ToRst.run(&self.mdev, r.qp.qpn, 0, &Qpc::new())?;
            r.dbrec.reset_send()?;
            r.pc = 0;
            r.cq.poll(1 << LOG_CQ, |_| {});
            self.to_rts(&r)?;
            r.broken = false;
        }
        let mut w = [0u8; 2 * SEND_WQE_BB];
        let ctrl = rights_wqe(&mut w, r.pc, r.qp.qpn, u)?;
        let slot = (u32::from(r.pc) % SQ_BBS) as usize;
        // The ring holds a whole number of these two-block WQEs: it never wraps inside one.
        r.buf.write(slot * SEND_WQE_BB, &w)?;
        r.pc = r.pc.wrapping_add(2);
        r.dbrec
            .ring_send(&self.mdev.bar, self.uar, None, r.pc, ctrl)?;
        let start = Instant::<Monotonic>::now();
        loop {
            let mut done = None;
            r.cq.poll(1, |cqe| {
                let op = cqe.opcode() as u8;
                done = Some(if op == cqe_op::REQ {
                    Ok(())
                } else {
                    let synd = ErrCqe::ref_from_bytes(&cqe.0[..]).map_or(0, |e| e.syndrome());
                    Err(synd)
                });
            });
            match done {
                Some(Ok(())) => return Ok(()),
                Some(Err(synd)) => {
                    r.broken = true;
                    dev_warn!(
                        self.mdev.dev.dev(),
                        "UMR on mkey {:#x} failed (syndrome {:#x})\n",
                        u.key,
                        synd
                    );
                    return Err(EINVAL);
                }
                None if start.elapsed().as_millis() > TIMEOUT_MS => {
                    r.broken = true;
                    dev_warn!(
                        self.mdev.dev.dev(),
                        "UMR on mkey {:#x}: no completion\n",
                        u.key
                    );
                    return Err(ETIMEDOUT);
                }
                None => fsleep(Delta::from_micros(20)),
            }
        }
    }
}

/// Writes the rights-and-PD UMR at producer counter `pc` into `w` (two basic blocks): the
/// control segment (signaled, `imm` the mkey), the UMR control (inline, "fail if free", the
/// mask of the rights and the PD) and the mkey segment. Returns the doorbell's eight bytes.
fn rights_wqe(w: &mut [u8; 2 * SEND_WQE_BB], pc: u16, qpn: u32, u: &RightsUmr) -> Result<[u8; 8]> {
    let (c, rest) = w.split_at_mut(WqeCtrlSeg::SIZE);
    let c = WqeCtrlSeg::mut_from_bytes(c).map_err(|_| EINVAL)?;
    c.set_opmod_idx_opcode(opmod_idx_opcode(0, pc, opcode::UMR));
    c.set_qpn_ds(qpn_ds(qpn, (2 * SEND_WQE_BB / SEND_WQE_DS) as u8));
    c.set_fm_ce_se(fm_ce_se::CQ_UPDATE.into());
    c.set_imm(u.key);
    let (uc, rest) = rest.split_at_mut(WqeUmrCtrlSeg::SIZE);
    let uc = WqeUmrCtrlSeg::mut_from_bytes(uc).map_err(|_| EINVAL)?;
    uc.set_flags((UMR_CHECK_FREE | UMR_INLINE).into());
    let mut mask = MkeyMask::LR | MkeyMask::LW | MkeyMask::RR | MkeyMask::RW | MkeyMask::PD;
    if u.atomic {
        mask |= MkeyMask::A;
    }
    uc.set_mkey_mask(mask.bits());
    let k = MkeySeg::mut_from_bytes(rest.get_mut(..MkeySeg::SIZE).ok_or(EINVAL)?)
        .map_err(|_| EINVAL)?;
    k.set_flags(u32::from((u.perm | Perm::LOCAL_READ).bits()));
    k.set_qpn_mkey7_0(0xffff_ff00 | (u.key & 0xff));
    k.set_flags_pd(u.pdn);
    let mut db = [0u8; 8];
    db.copy_from_slice(&w[..8]);
    Ok(db)
}
