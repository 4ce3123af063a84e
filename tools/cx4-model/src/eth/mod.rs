//! The Ethernet packet engine: pure functions from WQEs and frames to frames and CQEs, with
//! no queue state, doorbells or wire of its own. The device layer calls it:
//!
//! - send: [`txwqe::Ctrl::read`] the WQE at the SQ's consumer counter (through a
//!   [`dma::RingWqe`] over the SQ buffer), [`txwqe::execute`] it with the SQ's memory keys as
//!   [`dma::Dma`], put [`txwqe::Output`] on the wire, and post [`cqe::tx_cqe`] when the
//!   control segment asks for one — or [`cqe::err_cqe`] with the [`txwqe::TxFault`]'s
//!   syndromes, moving the SQ to error;
//! - receive: [`frame::parse`] the frame once, steer it to a TIR (`Firmware::steer` of
//!   [`classify::steer_view`]), [`rss::hash`] it and pick the RQ with [`rss::rqt_index`], read the RQ WQE with [`rx::rq_wqe_segments`], then
//!   [`rx::deliver`] it, which scatters it and returns the CQE (or an [`rx::RxFault`]).
//!
//! Files: [`frame`] (parser), [`csum`] (checksums and their offloads), [`lso`] (segmentation), [`lro`] (merging received TCP segments),
//! [`gso`] (LSO output as host superframes, superframes from the wire),
//! [`rss`] (Toeplitz hash), [`txwqe`] (send WQEs), [`rx`] (receive WQEs and delivery),
//! [`cqe`] (completions), [`dma`] (the memory seams), [`pause`] (MAC control frames and a
//! frame's priority); [`classify`] and [`mkeys`] adapt the
//! engine to the firmware's steering and memory keys ([`mkeys::MkeyDma`] is the [`dma::Dma`]
//! of a queue's protection domain).

pub mod classify;
pub mod cqe;
pub mod csum;
pub mod dma;
pub mod frame;
pub mod gso;
pub mod lro;
pub mod lso;
pub mod mkeys;
pub mod pause;
pub mod rss;
pub mod rx;
pub mod txwqe;
