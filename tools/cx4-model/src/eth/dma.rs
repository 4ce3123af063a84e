//! The engine's two memory seams: [`Dma`], guest memory reached through memory keys (lkey
//! translation and bounds are the implementer's), and [`WqeReader`], the bytes of one work
//! queue entry (ring wrap-around is the implementer's; [`RingWqe`] does it over a
//! [`RingMemory`]).

use std::fmt;

/// A failed access through a memory key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaError {
    /// The lkey names no valid memory key (or one of another protection domain).
    BadLkey {
        /// The lkey.
        lkey: u32,
    },
    /// The range lies outside the memory key or its access rights do not allow the access.
    Protection {
        /// The lkey.
        lkey: u32,
        /// First address of the access.
        addr: u64,
        /// Length of the access.
        len: u64,
    },
    /// The translated address is not mapped guest memory (or a queue buffer is unreachable).
    Fault {
        /// First address of the access.
        addr: u64,
        /// Length of the access.
        len: u64,
    },
}

impl fmt::Display for DmaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DmaError::BadLkey { lkey } => write!(f, "bad lkey {lkey:#x}"),
            DmaError::Protection { lkey, addr, len } => {
                write!(f, "lkey {lkey:#x} does not cover {addr:#x}+{len:#x}")
            }
            DmaError::Fault { addr, len } => write!(f, "unmapped memory {addr:#x}+{len:#x}"),
        }
    }
}

impl std::error::Error for DmaError {}

/// Guest memory through memory keys: the lkeys of data segments.
pub trait Dma {
    /// Fills `out` from `addr` of memory key `lkey`.
    fn read(&self, lkey: u32, addr: u64, out: &mut [u8]) -> Result<(), DmaError>;

    /// Writes `data` to `addr` of memory key `lkey`.
    fn write(&self, lkey: u32, addr: u64, data: &[u8]) -> Result<(), DmaError>;

    /// The guest memory behind the keys, for data the device computes from it (a
    /// vector calculation's result); `None` where there is none.
    fn guest(&self) -> Option<&crate::guest_mem::GuestMem> {
        None
    }
}

/// The bytes of one work queue entry, addressed from its first byte.
pub trait WqeReader {
    /// Fills `out` with the WQE's bytes from `offset`.
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), DmaError>;
}

/// A WQE held in a byte slice (tests, or a WQE already copied out of the ring).
impl WqeReader for [u8] {
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), DmaError> {
        let src = offset
            .checked_add(out.len())
            .and_then(|end| self.get(offset..end))
            .ok_or(DmaError::Fault {
                addr: offset as u64,
                len: out.len() as u64,
            })?;
        out.copy_from_slice(src);
        Ok(())
    }
}

/// A queue buffer, addressed by byte offset from its start (the implementer resolves the
/// queue's page list).
pub trait RingMemory {
    /// Fills `out` from byte `offset` of the buffer; `offset + out.len()` never exceeds the
    /// ring size [`RingWqe`] was given.
    fn read_ring(&self, offset: u64, out: &mut [u8]) -> Result<(), DmaError>;
}

/// One WQE of a cyclic queue whose entries may wrap from the end of the buffer to its start.
pub struct RingWqe<'a, M: RingMemory + ?Sized> {
    mem: &'a M,
    ring_bytes: u64,
    start: u64,
}

impl<'a, M: RingMemory + ?Sized> RingWqe<'a, M> {
    /// The WQE at `index` (a producer/consumer counter, taken modulo the ring) of a ring of
    /// `1 << log_entries` entries of `1 << log_stride` bytes.
    pub fn new(mem: &'a M, log_entries: u32, log_stride: u32, index: u32) -> Self {
        let log_bytes = (log_entries + log_stride).min(40);
        let ring_bytes = 1u64 << log_bytes;
        let start = (u64::from(index) << log_stride) & (ring_bytes - 1);
        RingWqe {
            mem,
            ring_bytes,
            start,
        }
    }
}

impl<M: RingMemory + ?Sized> WqeReader for RingWqe<'_, M> {
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), DmaError> {
        if offset as u64 + out.len() as u64 > self.ring_bytes {
            return Err(DmaError::Fault {
                addr: offset as u64,
                len: out.len() as u64,
            });
        }
        let at = (self.start + offset as u64) & (self.ring_bytes - 1);
        let first = ((self.ring_bytes - at) as usize).min(out.len());
        let (a, b) = out.split_at_mut(first);
        self.mem.read_ring(at, a)?;
        if !b.is_empty() {
            self.mem.read_ring(0, b)?;
        }
        Ok(())
    }
}
