// SPDX-License-Identifier: GPL-2.0
//! CQE decoding shared by the Ethernet rings: the opcode of a CQE and the error form
//! (`struct mlx5_err_cqe`, device.h) that requester and responder errors use
//! (en/health.c `mlx5e_health_cqe_dump`, en_rx.c `mlx5e_handle_rx_err_cqe`).

use core::fmt;

use cx4_hw::cq::cqe::{
    opcode,
    syndrome::syndrome_name,
    Cqe64,
    ErrCqe, //
};
use zerocopy::FromBytes;

/// What an error CQE says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CqeError {
    /// The CQE opcode (`REQ_ERR` or `RESP_ERR`).
    pub(crate) opcode: u8,
    /// The error syndrome (`MLX5_CQE_SYNDROME_*`).
    pub(crate) syndrome: u8,
    /// The vendor-specific syndrome.
    pub(crate) vendor_syndrome: u8,
    /// The opcode of the failed send WQE (requester errors).
    pub(crate) wqe_opcode: u8,
    /// The SQ or RQ number.
    pub(crate) qn: u32,
    /// The counter of the failed WQE.
    pub(crate) wqe_counter: u16,
}

impl CqeError {
    /// Whether the WQE was only flushed (the queue was already in error).
    pub(crate) fn is_flush(&self) -> bool {
        self.syndrome == cx4_hw::cq::cqe::syndrome::WR_FLUSH_ERR
    }
}

impl fmt::Display for CqeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on queue {:#x} wqe {:#x} (opcode {:#x}): syndrome {:#x} ({}), vendor syndrome {:#x}",
            cx4_hw::cq::cqe::opcode::cqe_opcode_name(self.opcode),
            self.qn,
            self.wqe_counter,
            self.wqe_opcode,
            self.syndrome,
            syndrome_name(self.syndrome),
            self.vendor_syndrome
        )
    }
}

/// The CQE opcode (bits 7:4 of `op_own`).
pub(crate) fn cqe_opcode(cqe: &Cqe64) -> u8 {
    cqe.opcode() as u8
}

/// The error a CQE reports, if it is an error CQE.
pub(crate) fn cqe_error(cqe: &Cqe64) -> Option<CqeError> {
    let op = cqe_opcode(cqe);
    if op != opcode::REQ_ERR && op != opcode::RESP_ERR {
        return None;
    }
    // Both layouts are 64 bytes; `ref_from_bytes` cannot fail on the same size.
    let e = ErrCqe::ref_from_bytes(&cqe.0[..]).ok()?;
    Some(CqeError {
        opcode: op,
        syndrome: e.syndrome() as u8,
        vendor_syndrome: e.vendor_err_synd() as u8,
        wqe_opcode: e.s_wqe_opcode() as u8,
        qn: e.qpn(),
        wqe_counter: e.wqe_counter() as u16,
    })
}
