// SPDX-License-Identifier: GPL-2.0
//! The user contexts' trampolines of [`OpsTable`]: `alloc_ucontext`, `dealloc_ucontext`,
//! `query_ucontext`, `disassociate_ucontext`, `mmap` (a context's mappings) and `mmap_free` (a driver mmap
//! entry's end), and the handler drivers/ksys/uapi.c calls for mlx5's UAR object
//! (`uar_alloc`, in the device's `ksys_ib_dev_head`).

use kernel::{
    error::from_result,
    ffi::c_int, //
};

use super::OpsTable;
use crate::{
    device::Device,
    driver::IbDriver,
    mmap::{
        MmapEntry,
        UarKind,
        Vma, //
    },
    object::Ucontext,
    udata::Udata, //
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// uverbs calls it with a freshly allocated container of `size_ib_ucontext` bytes whose
    /// `device` is ours, and the call's udata.
    pub(super) unsafe extern "C" fn alloc_ucontext(
        uctx: *mut ksys::ib_ucontext,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        from_result(|| {
            let data = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: The fresh container of `Ucontext::<T>::SIZE` bytes.
            unsafe { Ucontext::<T>::init(uctx, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// uverbs calls it once for a context `alloc_ucontext` initialised, after every object
    /// and mapping of the context is gone.
    pub(super) unsafe extern "C" fn dealloc_ucontext(uctx: *mut ksys::ib_ucontext) {
        // SAFETY: Initialised by `alloc_ucontext`, destroyed once.
        unsafe { Ucontext::<T>::destroy(uctx) };
    }

    /// `query_ucontext` (UVERBS_METHOD_QUERY_CONTEXT, with the mlx5 response attribute that
    /// drivers/ksys/uapi.c declares): the context's alloc response again, for a library
    /// importing the context from a command FD.
    ///
    /// # Safety
    ///
    /// uverbs calls it with a live context of ours and the method's attribute bundle.
    pub(super) unsafe extern "C" fn query_ucontext(
        uctx: *mut ksys::ib_ucontext,
        attrs: *mut ksys::uverbs_attr_bundle,
    ) -> c_int {
        // SAFETY: Initialised by `alloc_ucontext`, live during the call.
        let u = unsafe { Ucontext::<T>::from_raw(uctx) };
        from_result(|| {
            let resp = T::query_ucontext(u)?;
            // SAFETY: The call's bundle, which has the response attribute; `resp` is valid
            // for its length.
            let r =
                unsafe { ksys::mlx5_query_context_resp(attrs, resp.as_ptr().cast(), resp.len()) };
            kernel::error::to_result(r).map(|()| 0)
        })
    }

    /// `disassociate_ucontext`: the device is going away while a process still has the
    /// context open. Nothing to do here: uverbs destroys the context's objects (their
    /// destroy ops drop them), zaps the mappings made with `rdma_user_mmap_io()` and then
    /// deallocates the context, all before unregistration returns. Having the op lets
    /// unregistration go ahead instead of waiting for every process to close the device (and
    /// uverbs then does not pin the module while a context is open).
    ///
    /// # Safety
    ///
    /// uverbs calls it with a live context of ours.
    pub(super) unsafe extern "C" fn disassociate_ucontext(_uctx: *mut ksys::ib_ucontext) {}

    /// # Safety
    ///
    /// uverbs calls it with a live context of ours and the area under the mmap lock.
    pub(super) unsafe extern "C" fn mmap(
        uctx: *mut ksys::ib_ucontext,
        vma: *mut ksys::vm_area_struct,
    ) -> c_int {
        // SAFETY: A context initialised by `alloc_ucontext`, live during the op.
        let uctx = unsafe { Ucontext::<T>::from_raw(uctx) };
        // SAFETY: The area of this op.
        let vma = unsafe { Vma::from_raw(vma) };
        from_result(|| T::mmap(uctx, vma).map(|()| 0))
    }

    /// `mmap_free`: ib_core dropped the last reference to a driver mmap entry (its object
    /// destroyed, no mapping left).
    ///
    /// # Safety
    ///
    /// ib_core calls it once per entry inserted into a context of ours, all of which
    /// `MmapEntry::<T>::insert` made.
    pub(super) unsafe extern "C" fn mmap_free(entry: *mut ksys::rdma_user_mmap_entry) {
        // SAFETY: The caller's guarantee.
        unsafe { MmapEntry::<T>::free(entry) };
    }

    /// `MLX5_IB_METHOD_UAR_OBJ_ALLOC` for drivers/ksys/uapi.c: the driver's UAR of the uapi
    /// `kind` for `uctx`, inserted as an mmap entry; the entry and the page index go back
    /// through `entry` and `page_id`.
    ///
    /// # Safety
    ///
    /// uapi.c calls it in the method's handler, with a live context of a device of ours
    /// and writable outputs.
    pub(crate) unsafe extern "C" fn uar_alloc(
        uctx: *mut ksys::ib_ucontext,
        kind: u32,
        entry: *mut *mut ksys::rdma_user_mmap_entry,
        page_id: *mut u32,
    ) -> c_int {
        // SAFETY: A context initialised by `alloc_ucontext`, live during the call.
        let uctx = unsafe { Ucontext::<T>::from_raw(uctx) };
        from_result(|| {
            let (data, id) = T::alloc_uar(uctx, UarKind::from_raw(kind)?)?;
            let e = MmapEntry::<T>::insert(uctx, data)?;
            // SAFETY: The caller's writable outputs.
            unsafe {
                entry.write(e);
                page_id.write(id);
            }
            Ok(0)
        })
    }
}
