//! [`Dma`] over the firmware's memory keys and guest memory: what a queue of protection
//! domain `pd` reaches through its data segments' lkeys.

use crate::{
    fw::{Copy, Firmware, XlateError},
    guest_mem::GuestMem,
};

use super::dma::{Dma, DmaError};

/// Guest memory through the memory keys of one protection domain.
pub struct MkeyDma<'a> {
    /// The firmware holding the mkeys.
    pub fw: &'a Firmware,
    /// Guest memory.
    pub mem: &'a GuestMem,
    /// Protection domain of the queue.
    pub pd: u32,
}

impl MkeyDma<'_> {
    /// The guest physical pieces of `len` bytes at `addr` through `lkey`, in order, checked
    /// as [`Dma::read`] (`write` false) or [`Dma::write`] check them.
    pub fn pieces(
        &self,
        lkey: u32,
        addr: u64,
        len: usize,
        write: bool,
    ) -> Result<Vec<(u64, u32)>, DmaError> {
        let n = u32::try_from(len).map_err(|_| DmaError::Protection {
            lkey,
            addr,
            len: len as u64,
        })?;
        self.fw
            .translate(self.mem, lkey, self.pd, addr, n, write)
            .map_err(|e| xlate_error(e, lkey, addr, len))
    }
}

/// The DMA error of a failed translation.
fn xlate_error(e: XlateError, lkey: u32, addr: u64, len: usize) -> DmaError {
    match e {
        XlateError::BadKey | XlateError::Terminate => DmaError::BadLkey { lkey },
        // The Ethernet queues take no page faults: a missing page is a protection error.
        XlateError::Protection | XlateError::PageFault => DmaError::Protection {
            lkey,
            addr,
            len: len as u64,
        },
        XlateError::NotMapped => DmaError::Fault {
            addr,
            len: len as u64,
        },
    }
}

impl MkeyDma<'_> {
    /// The copies that place `len` bytes written at `addr` through `lkey`
    /// ([`crate::fw::Firmware::translate_write`]), every check made.
    pub fn write_copies(&self, lkey: u32, addr: u64, len: usize) -> Result<Vec<Copy>, DmaError> {
        let n = u32::try_from(len).map_err(|_| DmaError::Protection {
            lkey,
            addr,
            len: len as u64,
        })?;
        self.fw
            .translate_write(self.mem, lkey, self.pd, addr, n)
            .map_err(|e| xlate_error(e, lkey, addr, len))
    }
}

impl Dma for MkeyDma<'_> {
    fn read(&self, lkey: u32, addr: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let mut at = 0;
        for (pa, n) in self.pieces(lkey, addr, out.len(), false)? {
            let n = n as usize;
            let dst = out.get_mut(at..at + n).ok_or(DmaError::Fault {
                addr: pa,
                len: n as u64,
            })?;
            self.mem.read(pa, dst).map_err(|_| DmaError::Fault {
                addr: pa,
                len: n as u64,
            })?;
            at += n;
        }
        Ok(())
    }

    fn write(&self, lkey: u32, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let len = data.len();
        for c in self.write_copies(lkey, addr, len)? {
            let (pa, r) = match c {
                Copy::Piece { at, pa, n } => (
                    pa,
                    data.get(at..at + n as usize)
                        .map(|src| self.mem.write(pa, src).is_ok()),
                ),
                Copy::Strided {
                    at,
                    step,
                    chunk,
                    count,
                    dst,
                } => (
                    dst.first().map_or(0, |d| d.0),
                    Some(self.mem.write_strided(
                        &dst,
                        data,
                        (at, step, chunk as usize, count as usize),
                    )),
                ),
                Copy::Repeated {
                    at,
                    step,
                    count,
                    dst,
                    ..
                } => (
                    dst.first().map_or(0, |d| d.0),
                    Some((0..count as usize).all(|r| {
                        let mut from = at + r * step;
                        dst.iter().all(|&(pa, n)| {
                            from += n as usize;
                            data.get(from - n as usize..from)
                                .is_some_and(|src| self.mem.write(pa, src).is_ok())
                        })
                    })),
                ),
            };
            if r != Some(true) {
                return Err(DmaError::Fault {
                    addr: pa,
                    len: len as u64,
                });
            }
        }
        Ok(())
    }

    fn guest(&self) -> Option<&GuestMem> {
        Some(self.mem)
    }
}
