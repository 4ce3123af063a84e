// SPDX-License-Identifier: GPL-2.0
//! The user contexts' trampolines of [`OpsTable`]: `alloc_ucontext`, `dealloc_ucontext`,
//! `disassociate_ucontext` and `mmap` (a context's mappings).

use kernel::{
    error::from_result,
    ffi::c_int, //
};

use super::OpsTable;
use crate::{
    device::Device,
    driver::IbDriver,
    mmap::Vma,
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
}
