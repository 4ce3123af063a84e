// SPDX-License-Identifier: GPL-2.0
//! What a client asks of a channel (one `device_prep_dma_*` call), as the provider sees it,
//! and how a descriptor ends.

/// A bus address of the provider's device (`dma_addr_t`), as the client mapped it.
pub type DmaAddr = u64;

/// The most sources of one request this abstraction passes on (md's `MAX_DISKS` is 255, but
/// a provider advertises `max_xor`/`max_pq` well below; async_tx splits larger ones).
pub const MAX_SRCS: usize = 32;

/// One operation, as prepared by a client (`include/linux/dmaengine.h`, `device_prep_dma_*`).
/// Every address is `len` bytes long.
#[derive(Clone, Copy, Debug)]
pub enum Kind<'a> {
    /// `device_prep_dma_interrupt`: no data; completes after every earlier descriptor.
    Interrupt,
    /// `device_prep_dma_memcpy`: `dst = src`.
    Memcpy {
        /// Destination.
        dst: DmaAddr,
        /// Source.
        src: DmaAddr,
    },
    /// `device_prep_dma_xor`: `dst = XOR of srcs` (`dst` may be one of `srcs`).
    Xor {
        /// Destination.
        dst: DmaAddr,
        /// Sources.
        srcs: &'a [DmaAddr],
    },
    /// `device_prep_dma_xor_val`: is the XOR of `srcs` all zero? The descriptor ends with
    /// [`Status::Sum`]: `SUM_CHECK_P_RESULT` set when it is not.
    XorVal {
        /// Sources (the parity among them).
        srcs: &'a [DmaAddr],
    },
    /// `device_prep_dma_pq`: `P = XOR of srcs`, `Q = Σ scf[i]·srcs[i]` in GF(2^8)/0x11d;
    /// `p`/`q` are `None` when `DMA_PREP_PQ_DISABLE_P`/`_Q` is set. With `cont`
    /// (`DMA_PREP_CONTINUE`), the old P and Q are sources too: `P ^= old P`, `Q ^= old Q`
    /// (only the enabled ones).
    Pq {
        /// P, unless disabled.
        p: Option<DmaAddr>,
        /// Q, unless disabled.
        q: Option<DmaAddr>,
        /// Sources.
        srcs: &'a [DmaAddr],
        /// Q coefficient of each source.
        scf: &'a [u8],
        /// `DMA_PREP_CONTINUE`.
        cont: bool,
    },
    /// `device_prep_dma_pq_val`: do `p` and `q` hold P and Q of `srcs`? Ends with
    /// [`Status::Sum`]: `SUM_CHECK_P_RESULT` / `SUM_CHECK_Q_RESULT` set for a mismatch.
    PqVal {
        /// P to check, unless disabled.
        p: Option<DmaAddr>,
        /// Q to check, unless disabled.
        q: Option<DmaAddr>,
        /// Sources.
        srcs: &'a [DmaAddr],
        /// Q coefficient of each source.
        scf: &'a [u8],
    },
}

impl<'a> Kind<'a> {
    /// Every address the request names (sources and destinations).
    pub fn addrs(&self) -> impl Iterator<Item = DmaAddr> + 'a {
        let (dsts, srcs): ([Option<DmaAddr>; 2], &'a [DmaAddr]) = match *self {
            Kind::Interrupt => ([None, None], &[]),
            Kind::Memcpy { dst, src } => ([Some(dst), Some(src)], &[]),
            Kind::Xor { dst, srcs } => ([Some(dst), None], srcs),
            Kind::XorVal { srcs } => ([None, None], srcs),
            Kind::Pq { p, q, srcs, .. } | Kind::PqVal { p, q, srcs, .. } => ([p, q], srcs),
        };
        dsts.into_iter().flatten().chain(srcs.iter().copied())
    }
}

/// A prepared operation and its length.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The operation.
    pub kind: Kind<'a>,
    /// Bytes of every source and destination (0 for [`Kind::Interrupt`]).
    pub len: usize,
    /// `DMA_PREP_FENCE`: the descriptors after this one read what it writes; none of them
    /// may start before it has completed.
    pub fence: bool,
}

/// `SUM_CHECK_P_RESULT`: the XOR (P) check failed.
pub const SUM_CHECK_P: u32 = 1 << 0;
/// `SUM_CHECK_Q_RESULT`: the Reed-Solomon (Q) check failed.
pub const SUM_CHECK_Q: u32 = 1 << 1;

/// How a descriptor ended, set by the provider with [`crate::Entry::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Done; for a validation, every check passed.
    Ok,
    /// A validation done: the `SUM_CHECK_*` bits of the checks that failed (0: all passed).
    Sum(u32),
    /// Not done (the device failed or is gone): the client's `callback_result` sees
    /// `DMA_TRANS_ABORTED`; a validation reports every check as failed, so that a user such as
    /// md treats the parity as wrong rather than trusting it.
    Aborted,
}
