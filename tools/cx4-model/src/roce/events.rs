//! Affiliated asynchronous events of RoCE QPs: what the card tells the driver on an event
//! queue when a QP's responder fails without a receive WQE to report it in (an RDMA WRITE,
//! READ or atomic the R_Key does not allow, an invalid request, a DMA fault). mlx5_core
//! routes them by QP number to mlx5_ib, which raises `IB_EVENT_QP_ACCESS_ERR`,
//! `IB_EVENT_QP_REQ_ERR` or `IB_EVENT_QP_FATAL` to the QP's owner (`ibv_get_async_event`).
//! Failures a receive completion reports (local length and protection errors) raise no
//! event, and neither do requester failures: their error CQE is the report.

use cx4_hw::eq::{event_queue_type, event_type};

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
        let mut eqe = fw::new_event(ty, 0);
        eqe.qp_srq_mut().set_queue_type(event_queue_type::QP.into());
        eqe.qp_srq_mut().set_qp_srq_n(qpn);
        let n = self.fw.post_event(bus, &eqe);
        log::info!(
            "QP {qpn:#x}: {} event to {n} EQ(s)",
            event_type::event_type_name(ty)
        );
    }
}
