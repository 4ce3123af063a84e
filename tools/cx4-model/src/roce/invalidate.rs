//! Remote invalidation: a SEND with invalidate (`MLX5_OPCODE_SEND_INVAL`, the IETH carrying
//! an R_Key) frees the named mkey at the responder when its last packet is received.
//!
//! The responder invalidates only an mkey that exists under that exact key, is valid, is in
//! the QP's PD, allows remote invalidation (`mkc.en_rinval`, which mlx5_ib's fast
//! registration sets through `MLX5_MKEY_REMOTE_INVAL`; plain `ibv_reg_mr` MRs do not) and is
//! bound to this QP or to none. Anything else is the IBTA's invalid request: the requester is
//! NAKed (its WQE completes with `REMOTE_INVAL_REQ_ERR`), the receive WQE completes in error
//! with the same status (as Linux's soft-RoCE reports it) and the QP goes to error. On
//! success the receive CQE is `MLX5_CQE_RESP_SEND_INV` with the R_Key in `imm_inval_pkey`,
//! which libmlx5 (`cq.c`, `IBV_WC_WITH_INV`) and mlx5_ib return as the invalidated key.

use cx4_hw::mkey::mkey_index;

use super::Roce;
use crate::fw::MKEY_QPN_NONE;

use super::qp_view::QpView;

impl Roce<'_> {
    /// Invalidates `rkey` for a SEND with invalidate received on QP `v`; why not, if it may
    /// not be.
    pub(super) fn remote_invalidate(&mut self, v: &QpView, rkey: u32) -> Result<(), String> {
        let m = self
            .fw
            .nic
            .mkeys
            .get_mut(&mkey_index(rkey))
            .filter(|m| m.key == rkey && !m.free)
            .ok_or_else(|| format!("R_Key {rkey:#x} names no valid mkey"))?;
        if m.pd != v.pd {
            return Err(format!(
                "R_Key {rkey:#x} is in PD {:#x}, the QP in {:#x}",
                m.pd, v.pd
            ));
        }
        if !m.remote_inval {
            return Err(format!(
                "R_Key {rkey:#x} does not allow remote invalidation"
            ));
        }
        if m.qpn != MKEY_QPN_NONE && m.qpn != v.qpn {
            return Err(format!("R_Key {rkey:#x} is bound to QP {:#x}", m.qpn));
        }
        m.free = true;
        self.roce.stats.remote_invalidations += 1;
        Ok(())
    }
}
