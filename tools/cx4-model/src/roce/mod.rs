//! The RoCE engine: RDMA over Converged Ethernet v2 (IBTA Annex A17) on the modelled port.
//!
//! The engine — queue pairs, their send and receive state machines, retransmission, the
//! DCQCN congestion reaction to ECN marks and CNPs — will live here. This is its wire layer,
//! pure functions with no queue state:
//!
//! - [`headers`]: the InfiniBand transport headers (BTH and the extension headers) and the
//!   opcode table of the RC, UC and UD services and the CNP;
//! - [`packet`]: a whole RoCEv2 frame, Ethernet / IP / UDP 4791 / transport headers /
//!   payload / pad / ICRC — [`packet::build`] and [`packet::parse`];
//! - [`icrc`]: the invariant CRC, computed as Linux's soft-RoCE (rxe) does;
//! - [`error`]: [`WireError`], why bytes were rejected.

pub mod error;
pub mod headers;
pub mod icrc;
pub mod packet;

pub use error::WireError;
