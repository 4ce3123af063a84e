// SPDX-License-Identifier: GPL-2.0
//! [`Vma`]: a user context's mmap request (`ops.mmap`), and I/O mappings into it through
//! `rdma_user_mmap_io()`, which ib_core tracks so that it can zap them on disassociation;
//! read-only areas and kernel pages inserted into them (`vm_insert_page()`).

use kernel::{
    error::to_result,
    mm::virt::{
        VmaNew,
        VmaRef, //
    },
    page::Page,
    prelude::*, //
};

use crate::{
    driver::IbDriver,
    object::Ucontext, //
};

/// An mmap request on a uverbs file (`struct vm_area_struct`, mmap lock held for the op).
#[repr(transparent)]
pub struct Vma(VmaRef);

impl Vma {
    /// # Safety
    ///
    /// `vma` must be the area the core passes to `ops.mmap`, valid for `'a`, with the mmap
    /// lock held.
    pub(crate) unsafe fn from_raw<'a>(vma: *mut ksys::vm_area_struct) -> &'a Self {
        // SAFETY: The caller's guarantee; `Vma` is transparent over `VmaRef`, which the
        // kernel crate builds from the same pointer.
        unsafe { &*core::ptr::from_ref(VmaRef::from_raw(vma)).cast::<Self>() }
    }

    /// The requested length in bytes.
    pub fn len(&self) -> usize {
        self.0.end() - self.0.start()
    }

    /// Whether the area is empty (never, for an mmap request).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The page offset the process passed (the command and index a provider encodes).
    pub fn pgoff(&self) -> usize {
        // SAFETY: `vm_pgoff` is set before `mmap` is called and does not change under the
        // mmap lock.
        unsafe { (*self.0.as_ptr()).vm_pgoff }
    }

    /// The area as it is being set up: `ops.mmap` runs inside the uverbs file's
    /// `f_op->mmap`, before the area is inserted into the process's address space.
    fn setting_up(&self) -> &VmaNew {
        // SAFETY: `self` is the area of an `ops.mmap` call, which uverbs makes only from its
        // file's `f_op->mmap` (`ib_uverbs_mmap`) with the mmap lock held: the initial set-up
        // `VmaNew` stands for, valid for as long as `self`.
        unsafe { VmaNew::from_raw(self.0.as_ptr()) }
    }

    /// Whether the mapping is shared (`MAP_SHARED`), as every mapping of a device page must be.
    pub fn shared(&self) -> bool {
        self.0.flags() & kernel::mm::virt::flags::SHARED != 0
    }

    /// Whether the process asked for an executable mapping.
    pub fn executable(&self) -> bool {
        self.setting_up().executable()
    }

    /// Refuses a writable mapping (`EPERM`) and keeps the area from being made writable
    /// later (clears `VM_MAYWRITE`), for pages a process may only read (mlx5_ib's core-clock
    /// and clock-info pages).
    pub fn deny_write(&self) -> Result {
        let vma = self.setting_up();
        if vma.writable() {
            return Err(EPERM);
        }
        vma.try_clear_maywrite()
    }

    /// Maps `page` (kernel memory, not slab) at the area's start (`vm_insert_page()`); the
    /// mapping holds a reference to the page, so it stays while the process maps it.
    pub fn insert_page(&self, page: &Page) -> Result {
        self.setting_up()
            .set_mixedmap()
            .vm_insert_page(self.0.start(), page)
    }

    /// Maps the `len()` bytes of I/O memory at page frame `pfn` uncached into the area, on
    /// behalf of `uctx` (`rdma_user_mmap_io()`; the area must be shared, as the core checks).
    pub fn map_io_noncached<T: IbDriver>(&self, uctx: &Ucontext<T>, pfn: u64) -> Result {
        let vma = self.0.as_ptr();
        let pfn = usize::try_from(pfn).map_err(|_| EINVAL)?;
        // SAFETY: `vma` is the area of this op under the mmap lock; the helper only reads it.
        let prot = unsafe { ksys::ib_vma_prot_noncached(vma) };
        // SAFETY: `uctx` is the live context of this mmap; the core installs the PFN mapping
        // and records it against the context (NULL entry: no mmap entry object).
        to_result(unsafe {
            ksys::rdma_user_mmap_io(
                uctx.as_raw(),
                vma,
                pfn,
                self.len(),
                prot,
                core::ptr::null_mut(),
            )
        })
    }
}
