// SPDX-License-Identifier: GPL-2.0
//! The in-kernel erasure-coding engine: the card's vector-calc engine (Documentation/ec.md)
//! driven as MLNX_OFED's libmlx5 drives it, for kernel users (the dmaengine provider, the
//! debugfs test hook).
//!
//! One [`EcEngine`] per function, created by the composition root (layers.rs) once the ib
//! device is registered, on the values the RDMA layer hands it (its port's kernel UAR page,
//! queue counter and default GID), when the card has `vector_calc` and the vector-calc capability page has
//! `calc_matrix` with XOR in output slot 0; shut down before the ib device goes. Files:
//!
//! - engine.rs: the engine (slots, submit, completions, recovery, shutdown);
//! - qp.rs: its RC QP connected to itself (the slots' indirect mkeys are core/mkey.rs
//!   `Mkey::create_indirect`);
//! - wqe.rs: the WQEs of a calculation (receive, UMR with a KLM list or a repeat block,
//!   vector-calc SEND);
//! - gf.rs: GF(2^4)/GF(2^8) arithmetic and matrix inversion on the host CPU, and
//!   ops.rs: `encode`, `decode`, `update` on top of [`EcEngine::submit`] (both only with
//!   `CX4_TEST_HOOKS=y`: the test hook is their only in-tree user);
//! - slot.rs: where the function's engine is found ([`EcSlot`]), with its DMA channel;
//! - dma.rs: the engine as a DMA engine provider (memcpy, XOR, P+Q, validations) for
//!   async_tx (md raid456) and dmatest, over the `dmaengine` abstraction;
//! - testhook.rs, crc.rs (only with `CX4_TEST_HOOKS=y`): the debugfs `ec` file
//!   (tests/ec_kernel.py).
//!
//! # API (all crate-internal)
//!
//! ```ignore
//! let eng: Arc<EcEngine> = ...;               // EcSlot::get()
//! let c = eng.caps();                         // EcCaps: gf256, max_srcs 16, max_outputs 4,
//!                                             // max_len, len_align 64, max_inflight 64
//! eng.submit(&Calc { field: Field::Gf16, srcs: &[a, b], dsts: &[p], coef: &[[1, 0, 0, 0],
//!     [1, 0, 0, 0]], len: 4096 }, &done, tag)?;  // p = a ^ b; done.done(tag, Ok(())) later
//! ```
//!
//! - `out[j] = XOR_i coef[i][j] · srcs[i]` in the field (column j of row i; columns ≥ N
//!   ignored): coefficient 1 is plain XOR, so k = 1 with coefficient 1 is a copy, and P of
//!   RAID-6 is all ones. [`Field::Gf16`] treats each nibble of a byte as a GF(2^4)/0x13 symbol
//!   (coefficients 0..=15; ConnectX-4); [`Field::Gf256`] is GF(2^8)/0x11d (coefficients
//!   0..=255; only with [`EcCaps::gf256`]), the field of lib/raid6 and ISA-L.
//! - Addresses are **bus addresses of the function's PCI device** (`dma_map_*`, coherent
//!   allocations), each `len` bytes; the card reads and writes them through a physical-address
//!   mkey. Sources may be scattered (a KLM UMR gathers them; one contiguous run needs none),
//!   outputs too (a repeat-block UMR spreads the result). Outputs must not overlap sources
//!   except an output that is exactly a source (the card works chunk by chunk: in-place
//!   update is fine).
//! - `len`: a multiple of [`EcCaps::len_align`] (64, the interleaving chunk) up to
//!   [`EcCaps::max_len`]. k = 1..=`max_srcs`, N = 1..=`max_outputs`.
//! - [`EcEngine::submit`] runs in any context (atomic too: no sleeping, no allocation).
//!   `Err(EINVAL)` for bad parameters, `Err(EBUSY)` when every slot is in flight, the send
//!   queue is full, or the engine is recovering from an error (retry later), `Err(ENODEV)`
//!   after shutdown, `Err(EIO)` if the QP could not be recovered. On `Err` the callback is
//!   never called.
//! - [`EcDone::done`] is called exactly once per accepted calculation, in submission order,
//!   from the CQ's interrupt handler (hard IRQ, the CQ table lock held: it must not sleep and
//!   must not call [`EcEngine::shutdown`]; it may submit). `Ok(())` when the card's result
//!   arrived in full; `Err(EIO)` after an error CQE (the first of a burst is logged; every
//!   calculation in flight then fails, the QP is reset and reconnected by a work item, and
//!   the engine takes calculations again: submit is `EBUSY` meanwhile);
//!   `Err(ENODEV)` for calculations in flight at shutdown.
//! - There is no timeout: a calculation the card never answers stays in flight.
//!
//! The types are `pub(crate)`; `DmaAddr` is `u64`; the engine is
//! found through the function's [`EcSlot`] (`get()` → `Option<Arc<EcEngine>>`), which the
//! composition root fills and empties.
//!
//! # Helpers (ops.rs, built with `CX4_TEST_HOOKS=y`)
//!
//! A `CodeMatrix` is the m × k coding matrix in ISA-L/Jerasure orientation (row j, entry i:
//! the coefficient of data block i in code block j), over a field:
//!
//! - `encode`: k data blocks → m code blocks, one calculation;
//! - `decode`: blocks 0..k+m (data, then code) with up to m of them erased: the first k
//!   survivors' rows of the generator `[I; M]` are inverted on the CPU, multiplied by the
//!   erased blocks' rows, and one calculation rebuilds every erased block from the survivors;
//!   `EINVAL` if the pattern is not decodable (singular) or too many are erased;
//! - `update`: new code blocks from the old ones and the old and new contents of the
//!   changed data blocks (`new_j = old_j + Σ M[j][c] · (old_c + new_c)`; m + 2·changes ≤
//!   `max_srcs`), one calculation; old and new code may be the same buffers.
//!
//! They complete through the same callback as [`EcEngine::submit`] and run in any context.

#[cfg(cx4_test_hooks)]
mod crc;
mod dma;
mod engine;
// The helpers (and their GF arithmetic)' only in-tree user is the test hook: built with it
// (a kernel user of encode/decode/update would lift the cfg).
#[cfg(cx4_test_hooks)]
mod gf;
#[cfg(cx4_test_hooks)]
mod ops;
mod qp;
mod slot;
#[cfg(cx4_test_hooks)]
mod testhook;
mod wqe;

pub(crate) use engine::{
    EcEngine,
    EcSetup, //
};
#[cfg(cx4_test_hooks)]
pub(crate) use ops::{
    decode,
    encode,
    update,
    CodeMatrix, //
};
pub(crate) use qp::LoopAddr;
#[cfg(not(cx4_test_hooks))]
pub(crate) use slot::EcFile;
pub(crate) use slot::{
    EcOwner,
    EcSlot, //
};
#[cfg(cx4_test_hooks)]
pub(crate) use testhook::EcFile;

use kernel::{
    prelude::*,
    sync::Arc, //
};

/// The most sources of one calculation the driver uses (ConnectX-4's `max_vec_count`).
pub(crate) const MAX_SRCS: usize = 16;
/// The most outputs of one calculation (four `calc_op` slots).
pub(crate) const MAX_OUTPUTS: usize = 4;

/// A bus address of the function's device.
pub(crate) type DmaAddr = u64;

/// What the engine can do.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EcCaps {
    /// GF(2^8)/0x11d matrices (`calc_matrix_type_8bit`): RAID-6 Q possible.
    pub(crate) gf256: bool,
    /// Most sources (`max_vec_count`, at most 16).
    pub(crate) max_srcs: usize,
    /// Most outputs (output slots with XOR, at most 4).
    pub(crate) max_outputs: usize,
    /// Largest block.
    pub(crate) max_len: u32,
    /// Block length granularity (the 64-byte interleaving chunk).
    pub(crate) len_align: u32,
    /// Calculations in flight at most.
    pub(crate) max_inflight: usize,
}

/// The field of a calculation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    /// Each nibble a GF(2^4)/0x13 symbol (ConnectX-4; libmlx5's w ∈ {1, 2, 4}).
    Gf16,
    /// GF(2^8)/0x11d (libmlx5's w = 8; `calc_matrix_type_8bit`).
    Gf256,
}

impl Field {
    /// The largest symbol (15 or 255).
    pub(crate) fn max_symbol(self) -> u8 {
        match self {
            Field::Gf16 => 0xf,
            Field::Gf256 => 0xff,
        }
    }
}

/// One calculation: `dsts[j] = XOR_i coef[i][j] · srcs[i]`.
pub(crate) struct Calc<'a> {
    pub(crate) field: Field,
    /// k sources, 1..=`max_srcs`; may be scattered.
    pub(crate) srcs: &'a [DmaAddr],
    /// N outputs, 1..=`max_outputs`.
    pub(crate) dsts: &'a [DmaAddr],
    /// k rows; column j for output j (columns ≥ N ignored).
    pub(crate) coef: &'a [[u8; MAX_OUTPUTS]],
    /// Bytes of every source and output.
    pub(crate) len: u32,
}

/// The completion of a submitted calculation.
pub(crate) trait EcDone: Send + Sync {
    /// Called once, with the tag given at submit (see the module documentation).
    fn done(&self, tag: u64, res: Result);
}

/// Creates the function's engine if the card has one; `None` (logged) otherwise. The caller
/// owns it through [`EcSlot::install`] / [`EcSlot::remove`].
pub(crate) fn probe(
    mdev: &Arc<crate::mdev::Mdev>,
    caps: &crate::caps::Caps,
    s: EcSetup,
) -> Option<Arc<EcEngine>> {
    engine::caps_of(caps)?;
    match EcEngine::create(mdev, caps, s) {
        Ok(e) => Some(e),
        Err(e) => {
            dev_warn!(mdev.dev.dev(), "no EC engine: {:?}\n", e);
            None
        }
    }
}
