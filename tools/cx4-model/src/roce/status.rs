//! The completion status of a work request, as the transport decides it, and the mlx5 error
//! CQE syndrome (`MLX5_CQE_SYNDROME_*`) the integrator writes for it.

use cx4_hw::cq::cqe::syndrome;

/// How a send or receive work request completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WcStatus {
    /// Completed successfully (a normal CQE, no syndrome).
    Success,
    /// A message longer than the QP allows, or than the receive buffer holds.
    LocalLengthErr,
    /// An internal inconsistency of the local QP (e.g. an opcode the service does not carry).
    LocalQpOpErr,
    /// The local buffer failed its protection check.
    LocalProtErr,
    /// Flushed: the QP was in (or went to) the error state before the request completed.
    WrFlushErr,
    /// A memory registration (UMR, local invalidate) the mkey's state or rights forbid
    /// (ib_core's "memory management operation error").
    MwBindErr,
    /// The responder answered with an unexpected opcode or length.
    BadRespErr,
    /// A local access violation at the responder (e.g. an invalidated key).
    LocalAccessErr,
    /// The responder NAKed the request as invalid (NAK code 1).
    RemoteInvalReqErr,
    /// The responder NAKed an R_Key, bounds or rights violation (NAK code 2).
    RemoteAccessErr,
    /// The responder could not complete the request (NAK code 3).
    RemoteOpErr,
    /// The transport retry counter (local ACK timeouts and PSN sequence NAKs) ran out.
    TransportRetryExcErr,
    /// The RNR retry counter ran out.
    RnrRetryExcErr,
}

impl WcStatus {
    /// The error CQE syndrome, `None` for [`WcStatus::Success`].
    pub const fn syndrome(self) -> Option<u8> {
        Some(match self {
            WcStatus::Success => return None,
            WcStatus::LocalLengthErr => syndrome::LOCAL_LENGTH_ERR,
            WcStatus::LocalQpOpErr => syndrome::LOCAL_QP_OP_ERR,
            WcStatus::LocalProtErr => syndrome::LOCAL_PROT_ERR,
            WcStatus::WrFlushErr => syndrome::WR_FLUSH_ERR,
            WcStatus::MwBindErr => syndrome::MW_BIND_ERR,
            WcStatus::BadRespErr => syndrome::BAD_RESP_ERR,
            WcStatus::LocalAccessErr => syndrome::LOCAL_ACCESS_ERR,
            WcStatus::RemoteInvalReqErr => syndrome::REMOTE_INVAL_REQ_ERR,
            WcStatus::RemoteAccessErr => syndrome::REMOTE_ACCESS_ERR,
            WcStatus::RemoteOpErr => syndrome::REMOTE_OP_ERR,
            WcStatus::TransportRetryExcErr => syndrome::TRANSPORT_RETRY_EXC_ERR,
            WcStatus::RnrRetryExcErr => syndrome::RNR_RETRY_EXC_ERR,
        })
    }

    /// Whether this is an error status.
    pub const fn is_error(self) -> bool {
        !matches!(self, WcStatus::Success)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndromes_are_the_mlx5_ones() {
        use WcStatus::*;
        let all = [
            (LocalLengthErr, "LOCAL_LENGTH_ERR"),
            (LocalQpOpErr, "LOCAL_QP_OP_ERR"),
            (LocalProtErr, "LOCAL_PROT_ERR"),
            (WrFlushErr, "WR_FLUSH_ERR"),
            (MwBindErr, "MW_BIND_ERR"),
            (BadRespErr, "BAD_RESP_ERR"),
            (LocalAccessErr, "LOCAL_ACCESS_ERR"),
            (RemoteInvalReqErr, "REMOTE_INVAL_REQ_ERR"),
            (RemoteAccessErr, "REMOTE_ACCESS_ERR"),
            (RemoteOpErr, "REMOTE_OP_ERR"),
            (TransportRetryExcErr, "TRANSPORT_RETRY_EXC_ERR"),
            (RnrRetryExcErr, "RNR_RETRY_EXC_ERR"),
        ];
        for (status, name) in all {
            let code = status.syndrome().expect("an error has a syndrome");
            assert_eq!(syndrome::syndrome_name(code), name);
            assert!(status.is_error());
        }
        assert_eq!(Success.syndrome(), None);
        assert!(!Success.is_error());
        assert_eq!(RemoteAccessErr.syndrome(), Some(0x13));
        assert_eq!(TransportRetryExcErr.syndrome(), Some(0x15));
        assert_eq!(RnrRetryExcErr.syndrome(), Some(0x16));
    }
}
