//! The vector-calc (erasure-coding) engine of the card, as pure functions with no queue state.
//!
//! ConnectX-4 firmware computes "output = coefficient matrix × input vectors" over a Galois
//! field when MLNX_OFED's libmlx5 posts a `SEND` with opmod 0xff carrying a vector-calc
//! segment on an RC QP connected to itself; the outputs come back as that SEND's payload,
//! interleaved per chunk, into the QP's own receive WQE (Documentation/ec.md).
//!
//! - [`gf`]: the fields, GF(2^4) with polynomial 0x13 applied to each nibble of a byte, and
//!   GF(2^8) with polynomial 0x11d, as table-driven region multiply-accumulate (the scalar
//!   reference);
//! - [`dot`]: the dot product of the inputs with the matrix at SIMD speed (split-table
//!   `pshufb`, GFNI affine, or portable byte tables, chosen at run time), one pass over the
//!   inputs for all the outputs;
//! - [`calc`]: one calculation — the matrix layout libmlx5 registers, the outputs, and the
//!   chunk-interleaved stream the card sends;
//! - [`segment`]: the WQE's vector-calc segment checked against the capability page, with the
//!   completion status of every refusal.
//!
//! The device integration (memory keys, the send and receive queues) is `roce/vector_calc.rs`.

pub mod calc;
pub mod dot;
pub mod gf;
pub mod segment;
#[cfg(test)]
mod speed;
#[cfg(test)]
pub(crate) mod testing;
