// SPDX-License-Identifier: GPL-2.0
//! [`SharedPage`]: a zeroed page of kernel memory that processes map read-only and the kernel
//! updates in place, one aligned 4- or 8-byte store per value: values published to user
//! space, such as mlx5's clock-info page (mlx5_core lib/clock.c `mdev->clock_info`, a
//! `get_zeroed_page()` that mlx5_ib maps with `vm_insert_page()`).

use kernel::{
    bindings,
    page::{
        Page,
        PAGE_SIZE, //
    },
    prelude::*, //
};

/// A zeroed page the kernel writes and processes read through their mappings. It is not
/// slab memory, so `vm_insert_page()` takes it; a mapping holds a reference of its own, so the
/// page outlives this owner as long as a process still maps it.
pub struct SharedPage {
    page: Page,
}

impl SharedPage {
    /// Allocates the page, zeroed.
    pub fn new() -> Result<Self> {
        Ok(Self {
            page: Page::alloc_page(GFP_KERNEL | __GFP_ZERO)?,
        })
    }

    /// The page, to map into a process.
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// Stores `v` at byte offset `off` (aligned, inside the page) in one 32-bit store
    /// (`WRITE_ONCE`).
    pub fn write32(&self, off: usize, v: u32) -> Result {
        self.store(off, |p: *mut u32| {
            // SAFETY: `store` checked that `p` is aligned and inside the mapped page.
            unsafe { p.write_volatile(v) }
        })
    }

    /// Stores `v` at byte offset `off` (aligned, inside the page) in one 64-bit store.
    pub fn write64(&self, off: usize, v: u64) -> Result {
        self.store(off, |p: *mut u64| {
            // SAFETY: `store` checked that `p` is aligned and inside the mapped page.
            unsafe { p.write_volatile(v) }
        })
    }

    /// Maps the page, gives `f` the `T`-aligned pointer at `off` (checked to lie inside the
    /// page) and unmaps it again.
    fn store<T>(&self, off: usize, f: impl FnOnce(*mut T)) -> Result {
        if off % size_of::<T>() != 0 || off + size_of::<T>() > PAGE_SIZE {
            return Err(EINVAL);
        }
        // SAFETY: `self.page` is a live page this object owns; the local mapping is undone
        // below, in the same context, with nothing mapped in between.
        let base = unsafe { bindings::kmap_local_page(self.page.as_ptr()) }.cast::<u8>();
        // Processes read the page concurrently through their own mappings, outside the Rust
        // memory model (as a device reads coherent memory); the kernel writes it only here,
        // with volatile stores the compiler neither tears nor elides. Writers serialise
        // themselves and order their stores with barriers, as the page's protocol says.
        f(base.wrapping_add(off).cast::<T>());
        // SAFETY: `base` is the address `kmap_local_page` returned above, the last mapping
        // made in this context.
        unsafe { bindings::kunmap_local(base.cast()) };
        Ok(())
    }
}
