// SPDX-License-Identifier: GPL-2.0
//! Coherent DMA byte buffers shared with the device: the command queue page, mailbox pages,
//! firmware pages, EQ and CQ rings.
//!
//! The device may write the memory at any time, so every access is volatile (never a Rust
//! reference into the buffer): single bytes through the kernel's `dma_read!` / `dma_write!`,
//! longer copies eight bytes at a time through [`kapi::coherent_read`] /
//! [`kapi::coherent_write`].

use kernel::{
    device::{
        self,
        Bound, //
    },
    dma::Coherent,
    prelude::*, //
};

/// A zeroed, physically contiguous coherent DMA buffer.
pub(crate) struct DmaBuf {
    mem: Coherent<[u8]>,
}

impl DmaBuf {
    /// Allocates `len` zeroed bytes (page aligned: `dma_alloc_coherent` returns at least page
    /// alignment).
    pub(crate) fn alloc(dev: &device::Device<Bound>, len: usize) -> Result<Self> {
        Ok(Self {
            mem: Coherent::zeroed_slice(dev, len, GFP_KERNEL)?,
        })
    }

    /// The bus address of the first byte.
    pub(crate) fn dma(&self) -> u64 {
        self.mem.dma_handle()
    }

    /// Size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.mem.len()
    }

    fn check(&self, off: usize, len: usize) -> Result {
        match off.checked_add(len) {
            Some(end) if end <= self.len() => Ok(()),
            _ => Err(ERANGE),
        }
    }

    /// Copies `out.len()` bytes at `off` out of the buffer.
    pub(crate) fn read(&self, off: usize, out: &mut [u8]) -> Result {
        kapi::coherent_read(&self.mem, off, out)
    }

    /// Copies `data` into the buffer at `off`.
    pub(crate) fn write(&self, off: usize, data: &[u8]) -> Result {
        kapi::coherent_write(&self.mem, off, data)
    }

    /// Reads one byte.
    pub(crate) fn read_u8(&self, off: usize) -> Result<u8> {
        self.check(off, 1)?;
        Ok(kernel::dma_read!(self.mem, [panic: off]))
    }

    /// Writes one byte.
    pub(crate) fn write_u8(&self, off: usize, v: u8) -> Result {
        self.check(off, 1)?;
        kernel::dma_write!(self.mem, [panic: off], v);
        Ok(())
    }

    /// Writes a big-endian 32-bit word.
    pub(crate) fn write_be32(&self, off: usize, v: u32) -> Result {
        self.write(off, &v.to_be_bytes())
    }
}
