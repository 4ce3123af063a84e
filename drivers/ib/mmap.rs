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
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*,
    types::Opaque, //
};

use crate::{
    driver::IbDriver,
    object::Ucontext, //
};

/// The kind of UAR page a process asks for (`enum mlx5_ib_uapi_uar_alloc_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UarKind {
    /// `MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF`: BlueFlame, mapped write-combining.
    BlueFlame,
    /// `MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC`: doorbells only, mapped uncached.
    NonCached,
}

impl UarKind {
    /// The kind of the uapi value `v`; `EOPNOTSUPP` for another (mlx5_ib).
    pub(crate) fn from_raw(v: u32) -> Result<Self> {
        match v {
            ksys::KSYS_CONST_MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF => Ok(Self::BlueFlame),
            ksys::KSYS_CONST_MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC => Ok(Self::NonCached),
            _ => Err(crate::eopnotsupp()),
        }
    }
}

/// The page offsets of mlx5's driver objects (`MLX5_IB_MMAP_OFFSET_START` to `_END` in the
/// command byte, any 16-bit index): where ib_core places their entries.
const ENTRY_PGOFF_MIN: u32 = 9 << 16;
const ENTRY_PGOFF_MAX: u32 = (255 << 16) | 0xffff;

/// A driver's mmap entry: ib_core's `rdma_user_mmap_entry` (first, so the core's pointer is
/// the container's) and what it maps. Boxed by the layer, inserted into a context's table,
/// freed by `ops.mmap_free` when ib_core drops its last reference.
#[repr(C)]
pub(crate) struct MmapEntry<T: IbDriver> {
    entry: Opaque<ksys::rdma_user_mmap_entry>,
    data: T::MmapEntry,
}

impl<T: IbDriver> MmapEntry<T> {
    /// Boxes `data` and inserts the entry, one page long, into `uctx`'s table at a free
    /// driver-object offset (`rdma_user_mmap_entry_insert_range()`); from then on ib_core
    /// owns it.
    pub(crate) fn insert(
        uctx: &Ucontext<T>,
        data: T::MmapEntry,
    ) -> Result<*mut ksys::rdma_user_mmap_entry> {
        let b = KBox::new(
            Self {
                entry: Opaque::zeroed(),
                data,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(b);
        // SAFETY: `raw` is the live box just leaked.
        let e = unsafe { (*raw).entry.get() };
        // SAFETY: A live context and a zeroed entry of ours; on success ib_core holds it until
        // `rdma_user_mmap_entry_remove()` and the mappings' references are gone, then calls
        // `ops.mmap_free` with it.
        let r = to_result(unsafe {
            ksys::rdma_user_mmap_entry_insert_range(
                uctx.as_raw(),
                e,
                PAGE_SIZE,
                ENTRY_PGOFF_MIN,
                ENTRY_PGOFF_MAX,
            )
        });
        if let Err(err) = r {
            // SAFETY: Not inserted: the box is still only ours.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(err);
        }
        Ok(e)
    }

    /// Drops the entry (`ops.mmap_free`).
    ///
    /// # Safety
    ///
    /// `e` must be an entry [`Self::insert`] made, whose last reference ib_core dropped.
    pub(crate) unsafe fn free(e: *mut ksys::rdma_user_mmap_entry) {
        // SAFETY: The entry is the first field of the box `insert` leaked (the caller's
        // guarantee); nothing refers to it any more.
        drop(unsafe { KBox::from_raw(e.cast::<Self>()) });
    }
}

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

    /// Maps the driver's mmap entry at page offset `key` (ib_core's `start_pgoff`; `EINVAL`
    /// if the context has none there), the I/O memory at the page frame `pfn` gives for it,
    /// uncached, on behalf of `uctx` (`rdma_user_mmap_io()` with the entry: the mapping holds
    /// it, and ib_core zaps it on disassociation).
    pub fn map_entry_noncached<T: IbDriver>(
        &self,
        uctx: &Ucontext<T>,
        key: usize,
        pfn: impl FnOnce(&T::MmapEntry) -> u64,
    ) -> Result {
        // SAFETY: A live context; the lookup takes a reference on the entry it returns.
        let e = unsafe { ksys::rdma_user_mmap_entry_get_pgoff(uctx.as_raw(), key) };
        if e.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: Every entry in a context of `T`'s device was made by `MmapEntry::<T>::insert`
        // (the layer is the only one inserting), so `e` is the first field of a live
        // `MmapEntry<T>`, kept by the reference taken above.
        let data = unsafe { &(*e.cast::<MmapEntry<T>>()).data };
        let r = usize::try_from(pfn(data))
            .map_err(|_| EINVAL)
            .and_then(|pfn| {
                let vma = self.0.as_ptr();
                // SAFETY: `vma` is the area of this op under the mmap lock.
                let prot = unsafe { ksys::ib_vma_prot_noncached(vma) };
                // SAFETY: As in `map_io_noncached`; the core takes its own reference on `e`.
                to_result(unsafe {
                    ksys::rdma_user_mmap_io(uctx.as_raw(), vma, pfn, self.len(), prot, e)
                })
            });
        // SAFETY: The reference the lookup took.
        unsafe { ksys::rdma_user_mmap_entry_put(e) };
        r
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
