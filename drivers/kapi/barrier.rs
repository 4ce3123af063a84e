// SPDX-License-Identifier: GPL-2.0
//! Memory barriers against a device: `dma_wmb()`, `dma_rmb()` and `wmb()` (<asm/barrier.h>,
//! Documentation/memory-barriers.txt "Device operations" and "Kernel I/O barrier effects").
//!
//! The `kernel` crate's `sync::barrier` has only the SMP barriers (`smp_mb`, `smp_wmb`,
//! `smp_rmb`), which order memory accesses between CPUs. When the other party is a device
//! reading or writing coherent DMA memory (a ring, a doorbell record, an owner bit), they are
//! not enough: with `CONFIG_SMP=n` they are compiler barriers only, and on arm64 they order
//! within the inner-shareable domain (`dmb ish*`) while the device observes from the
//! outer-shareable one. These are the barriers drivers use for that, as in C; their upstream
//! home is `kernel::sync::barrier`.
//!
//! Each is one call of a C shim (drivers/ksys/helpers.c), so KCSAN sees it as it sees the C
//! macro (`kcsan_wmb()`/`kcsan_rmb()`); a hand-written `asm!` would lose that.
//!
//! | barrier | orders | x86-64 | arm64 |
//! |---|---|---|---|
//! | [`dma_wmb`] | earlier before later stores to coherent memory, as a device sees them | compiler barrier | `dmb oshst` |
//! | [`dma_rmb`] | earlier before later loads from coherent memory written by a device | compiler barrier | `dmb oshld` |
//! | [`wmb`] | every earlier store (MMIO included) before every later one | `sfence` | `dsb st` |
//!
//! An ordered MMIO write (`writel`, `writeq`, the `kernel::io` accessors without `_relaxed`)
//! already comes after every earlier store to memory (memory-barriers.txt, I/O rule 3): a
//! doorbell record published before such a write needs no [`wmb`] in between. [`wmb`] is for
//! relaxed or raw MMIO writes and write-combining mappings.

// The C shims in drivers/ksys/helpers.c (declared in drivers/ksys/helpers.h); the module
// links them in.
unsafe extern "C" {
    fn ksys_helper_dma_wmb();
    fn ksys_helper_dma_rmb();
    fn ksys_helper_wmb();
}

/// `dma_wmb()`: stores to coherent DMA memory before this call are visible to the device
/// before stores after it.
///
/// Use it between writing a descriptor (a WQE, a rewritten CQE) and publishing it (a doorbell
/// record, an owner bit, a producer or consumer index the device reads). It does not order
/// MMIO writes: for that, an ordered MMIO accessor or [`wmb`].
#[inline]
pub fn dma_wmb() {
    // SAFETY: `dma_wmb()` has no preconditions; the shim only executes the barrier.
    unsafe { ksys_helper_dma_wmb() }
}

/// `dma_rmb()`: loads from coherent DMA memory before this call complete before loads after
/// it.
///
/// Use it after reading the field that says the device has written an entry (a CQE or EQE
/// owner bit, a command's ownership bit) and before reading the rest of that entry: without it
/// the CPU may read the body from before the device's write.
#[inline]
pub fn dma_rmb() {
    // SAFETY: `dma_rmb()` has no preconditions; the shim only executes the barrier.
    unsafe { ksys_helper_dma_rmb() }
}

/// `wmb()`: every store before this call (to memory or MMIO) is visible before any store
/// after it.
///
/// Needed before a relaxed or raw MMIO doorbell write (or a write-combining mapping) that must
/// follow a doorbell record in memory. An ordered `writel`/`writeq` already includes this
/// ordering: no `wmb` before it.
#[inline]
pub fn wmb() {
    // SAFETY: `wmb()` has no preconditions; the shim only executes the barrier.
    unsafe { ksys_helper_wmb() }
}
