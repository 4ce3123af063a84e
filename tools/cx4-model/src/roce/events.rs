//! Affiliated asynchronous events of RoCE QPs: what the card tells the driver on an event
//! queue when a QP's responder fails without a receive WQE to report it in (an RDMA WRITE,
//! READ or atomic the R_Key does not allow, an invalid request, a DMA fault). mlx5_core
//! routes them by QP number to mlx5_ib, which raises `IB_EVENT_QP_ACCESS_ERR`,
//! `IB_EVENT_QP_REQ_ERR` or `IB_EVENT_QP_FATAL` to the QP's owner (`ibv_get_async_event`).
//! Failures a receive completion reports (local length and protection errors) raise no
//! event, and neither do requester failures: their error CQE is the report.
//!
//! The SRQ limit event is the other kind here: an SRQ (ISSI-0 SRQ, RMP or XRC SRQ) whose
//! limit is armed (`lwm`, by ARM_RQ, MODIFY_RMP with `bitmask.lwm` or ARM_XRC_SRQ) raises one
//! `SRQ_RQ_LIMIT` event naming it when a WQE taken leaves fewer posted WQEs than the limit,
//! and disarms (the limit reads 0 again); mlx5_ib raises `IB_EVENT_SRQ_LIMIT_REACHED`. Arming
//! checks nothing by itself: the next WQE taken does (as rxe does).

use cx4_hw::{
    eq::{event_queue_type, event_type},
    uar::DBR_RCV,
};

use super::Roce;
use crate::{bus::Bus, fw};

use super::headers::NakCode;

/// The event type of a responder failure that NAKed with `code`.
pub(super) fn responder_event(code: NakCode) -> u8 {
    match code {
        NakCode::RemoteAccessError => event_type::WQ_ACCESS_ERROR,
        NakCode::InvalidRequest => event_type::WQ_INVAL_REQ_ERROR,
        _ => event_type::WQ_CATAS_ERROR,
    }
}

impl Roce<'_> {
    /// Posts the affiliated event of QP `qpn`'s responder failure (NAK `code`) to the EQ that
    /// takes it.
    pub(super) fn responder_error_event(&mut self, bus: &mut Bus, qpn: u32, code: NakCode) {
        let ty = responder_event(code);
        if self.fw.rdma.dcts.contains_key(&qpn) {
            // A DCT is not a QP: the failed connection is closed, nothing is reported.
            return;
        }
        let mut eqe = fw::new_event(ty, 0);
        eqe.qp_srq_mut().set_queue_type(event_queue_type::QP.into());
        eqe.qp_srq_mut().set_qp_srq_n(qpn);
        let n = self.fw.post_event(bus, &eqe);
        log::info!(
            "QP {qpn:#x}: {} event to {n} EQ(s)",
            event_type::event_type_name(ty)
        );
    }

    /// After SRQ `srqn`'s `taken`-th WQE was taken: the limit event if the SRQ is armed and
    /// fewer WQEs than its limit remain posted (the doorbell record's counter less those
    /// taken), the limit then disarmed.
    pub(super) fn srq_limit_check(&mut self, bus: &mut Bus, srqn: u32, taken: u32) {
        let Some(s) = self.fw.rdma.srqs.get(&srqn).filter(|s| s.lwm != 0) else {
            return;
        };
        let (lwm, dbr) = (u32::from(s.lwm), s.dbr);
        let Some(pc) = self.read_be32_mem(bus, dbr + DBR_RCV as u64) else {
            return;
        };
        let posted = pc.wrapping_sub(taken) & 0xffff;
        if posted >= lwm {
            return;
        }
        if let Some(s) = self.fw.rdma.srqs.get_mut(&srqn) {
            s.lwm = 0;
        }
        let mut eqe = fw::new_event(event_type::SRQ_RQ_LIMIT, 0);
        eqe.qp_srq_mut().set_qp_srq_n(srqn);
        let n = self.fw.post_event(bus, &eqe);
        log::info!(
            "SRQ {srqn:#x}: {posted} WQEs left, below the limit {lwm}: limit event to {n} EQ(s)"
        );
    }
}
