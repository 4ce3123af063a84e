// SPDX-License-Identifier: GPL-2.0
//! [`Umem`]: user memory pinned and DMA-mapped for a device (`struct ib_umem`): the buffers and
//! doorbell records of user CQs and QPs, the pages of user MRs. Dropping it unpins.

use core::ptr::NonNull;

use kernel::{
    error::from_err_ptr,
    prelude::*, //
};

use crate::{
    device::Device,
    driver::IbDriver, //
};

/// Access rights of a memory registration (`enum ib_access_flags`), as the verbs pass them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Access(pub u32);

impl Access {
    /// `IB_ACCESS_LOCAL_WRITE`.
    pub const LOCAL_WRITE: Self = Self(ksys::ib_access_flags_IB_ACCESS_LOCAL_WRITE);
    /// `IB_ACCESS_REMOTE_WRITE`.
    pub const REMOTE_WRITE: Self = Self(ksys::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    /// `IB_ACCESS_REMOTE_READ`.
    pub const REMOTE_READ: Self = Self(ksys::ib_access_flags_IB_ACCESS_REMOTE_READ);
    /// `IB_ACCESS_REMOTE_ATOMIC`.
    pub const REMOTE_ATOMIC: Self = Self(ksys::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);
    /// `IB_ACCESS_MW_BIND`.
    pub const MW_BIND: Self = Self(ksys::ib_access_flags_IB_ACCESS_MW_BIND);
    /// `IB_ZERO_BASED`.
    pub const ZERO_BASED: Self = Self(ksys::ib_access_flags_IB_ZERO_BASED);
    /// `IB_ACCESS_ON_DEMAND`.
    pub const ON_DEMAND: Self = Self(ksys::ib_access_flags_IB_ACCESS_ON_DEMAND);
    /// `IB_ACCESS_RELAXED_ORDERING`.
    pub const RELAXED_ORDERING: Self = Self(ksys::ib_access_flags_IB_ACCESS_RELAXED_ORDERING);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the device may write the memory (`ib_access_writable()`: the pages are pinned
    /// for writing).
    pub fn writable(self) -> bool {
        self.0
            & (Self::LOCAL_WRITE.0 | Self::REMOTE_WRITE.0 | Self::REMOTE_ATOMIC.0 | Self::MW_BIND.0)
            != 0
    }
}

/// What an MR re-registration changes (`enum ib_mr_rereg_flags`); uverbs passes only these
/// bits, at least one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ReregFlags(pub u32);

impl ReregFlags {
    /// `IB_MR_REREG_TRANS`: a new user range and I/O virtual address.
    pub const TRANS: Self = Self(ksys::ib_mr_rereg_flags_IB_MR_REREG_TRANS);
    /// `IB_MR_REREG_PD`: another protection domain.
    pub const PD: Self = Self(ksys::ib_mr_rereg_flags_IB_MR_REREG_PD);
    /// `IB_MR_REREG_ACCESS`: new access rights.
    pub const ACCESS: Self = Self(ksys::ib_mr_rereg_flags_IB_MR_REREG_ACCESS);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

/// An MR re-registration request (`rereg_user_mr`): each part is `Some` only when its flag
/// selects it (uverbs passes garbage-free but meaningless values otherwise).
#[derive(Clone, Copy, Debug)]
pub struct Rereg {
    flags: ReregFlags,
    start: u64,
    len: u64,
    iova: u64,
    access: Access,
}

impl Rereg {
    pub(crate) fn new(flags: ReregFlags, start: u64, len: u64, iova: u64, access: Access) -> Self {
        Self {
            flags,
            start,
            len,
            iova,
            access,
        }
    }

    /// The flags as the user passed them.
    pub fn flags(&self) -> ReregFlags {
        self.flags
    }

    /// With `TRANS`: the new user address, length and I/O virtual address.
    pub fn trans(&self) -> Option<(u64, u64, u64)> {
        self.flags
            .contains(ReregFlags::TRANS)
            .then_some((self.start, self.len, self.iova))
    }

    /// With `ACCESS`: the new access rights.
    pub fn access(&self) -> Option<Access> {
        self.flags
            .contains(ReregFlags::ACCESS)
            .then_some(self.access)
    }
}

/// Pinned, DMA-mapped user memory.
///
/// # Invariants
///
/// `raw` is an `ib_umem` returned by `ib_umem_get_va()` or embedded in an `ib_umem_dmabuf`
/// returned by `ib_umem_dmabuf_get_pinned()`, released once (`ib_umem_release()` takes both),
/// on drop.
pub struct Umem {
    raw: NonNull<ksys::ib_umem>,
    addr: u64,
    len: usize,
}

// SAFETY: The umem is owned; its release may happen on any thread (process context).
unsafe impl Send for Umem {}
// SAFETY: `&Umem` only reads the mapping's DMA addresses, which do not change.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `len` bytes of the calling process's memory at `addr` for `dev`, writable by the
    /// device if `access` has `LOCAL_WRITE` (or a remote write right). Fails with `EFAULT`
    /// (or what `pin_user_pages` says) if the range is not mapped, `ENOMEM` past the pinning
    /// limit, `EINVAL` for an empty or wrapping range.
    pub fn get<T: IbDriver>(
        dev: &Device<T>,
        addr: u64,
        len: usize,
        access: Access,
    ) -> Result<Self> {
        if len == 0 || addr.checked_add(len as u64).is_none() {
            return Err(EINVAL);
        }
        let a = usize::try_from(addr).map_err(|_| EINVAL)?;
        // SAFETY: A live device; the core checks the range against the calling process's
        // address space (this runs in a uverbs call, in that process).
        let raw =
            from_err_ptr(unsafe { ksys::ib_umem_get_va(dev.as_raw(), a, len, access.0 as i32) })?;
        let raw = NonNull::new(raw).ok_or(EINVAL)?;
        // INVARIANT: returned by `ib_umem_get_va()`.
        Ok(Self { raw, addr, len })
    }

    /// Pins `len` bytes at `offset` of the dma-buf `fd` (of the calling process) and maps
    /// them for `dev` (`ib_umem_dmabuf_get_pinned()`: attached to the device's DMA device,
    /// pinned by the exporter, mapped until dropped). `iova` is the address the device will
    /// use for `offset`: its blocks are counted from it, so it must share `offset`'s place
    /// in a page. Fails with `EBADF` for a bad fd, `EINVAL` for one that is no dma-buf, an
    /// empty range or one past the buffer's end, what the exporter says otherwise.
    pub fn dmabuf<T: IbDriver>(
        dev: &Device<T>,
        offset: u64,
        len: usize,
        fd: i32,
        access: Access,
        iova: u64,
    ) -> Result<Self> {
        if len == 0 || offset.checked_add(len as u64).is_none() {
            return Err(EINVAL);
        }
        let off = usize::try_from(offset).map_err(|_| EINVAL)?;
        // SAFETY: A live device; the core resolves `fd` in the calling process (a uverbs
        // call) and checks the range against the buffer.
        let raw = from_err_ptr(unsafe {
            ksys::ib_umem_dmabuf_get_pinned(dev.as_raw(), off, len, fd, access.0 as i32, iova)
        })?;
        let raw = NonNull::new(raw).ok_or(EINVAL)?;
        // INVARIANT: the `ib_umem` of a pinned dma-buf umem.
        Ok(Self {
            raw,
            addr: offset,
            len,
        })
    }

    /// The user address it starts at (for a dma-buf, the offset in the buffer).
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: `get` refuses empty ranges).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bus address of its first byte (a doorbell record's address for the device).
    pub fn start_dma(&self) -> u64 {
        // SAFETY: A live umem (type invariant); mapped, so its first entry exists.
        unsafe { ksys::ib_umem_start_dma_addr(self.raw.as_ptr()) }
    }

    /// The bus addresses of the `page_size`-aligned blocks covering it, in order (the page
    /// list a device's context or translation table takes). `page_size` must be a power of
    /// two no larger than `PAGE_SIZE`.
    pub fn dma_blocks(&self, page_size: usize) -> Result<KVec<u64>> {
        if !page_size.is_power_of_two() || page_size > kernel::page::PAGE_SIZE {
            return Err(EINVAL);
        }
        // SAFETY: A live umem.
        let n = unsafe { ksys::ib_umem_num_dma_blocks(self.raw.as_ptr(), page_size) };
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut it = ksys::ib_block_iter::default();
        // SAFETY: A live umem; the iterator is ours and only used in this loop.
        unsafe { ksys::rdma_umem_block_iter_start(&mut it, self.raw.as_ptr(), page_size) };
        // SAFETY: As above.
        while unsafe { ksys::rdma_umem_block_iter_next(&mut it) } {
            // SAFETY: The iterator is on a block.
            let a = unsafe { ksys::rdma_block_iter_dma_address(&mut it) };
            v.push(a, GFP_KERNEL)?;
        }
        Ok(v)
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: Returned by `ib_umem_get_va()` or `ib_umem_dmabuf_get_pinned()`, released
        // once (type invariant).
        unsafe { ksys::ib_umem_release(self.raw.as_ptr()) };
    }
}
