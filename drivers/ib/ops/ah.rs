// SPDX-License-Identifier: GPL-2.0
//! The address handles' trampolines of [`OpsTable`]: `create_user_ah` (uverbs),
//! `create_ah` (kernel users, possibly atomic) and `destroy_ah`.

use kernel::{
    error::from_result,
    ffi::c_int, //
};

use super::OpsTable;
use crate::{
    device::Device,
    driver::IbDriver,
    object::Ah,
    qp_attr::AhAttr,
    udata::Udata, //
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// uverbs calls it with a fresh container of `size_ib_ah` bytes whose `device` is ours,
    /// valid attributes (their GID entry held) and the call's udata.
    pub(super) unsafe extern "C" fn create_user_ah(
        ah: *mut ksys::ib_ah,
        init: *mut ksys::rdma_ah_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw(ksys::ib_ah_device(ah)) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        from_result(|| {
            // SAFETY: Valid attributes of this call.
            let attr = unsafe { AhAttr::from_raw(&*(*init).ah_attr) };
            let data = T::create_user_ah(dev, &attr, &mut udata)?;
            // SAFETY: The fresh container of `Ah::<T>::SIZE` bytes.
            unsafe { Ah::<T>::init(ah, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_ah` bytes whose `device` is ours
    /// and valid attributes (their GID entry held); `udata` is not used (user AHs come
    /// through `create_user_ah`).
    pub(super) unsafe extern "C" fn create_ah(
        ah: *mut ksys::ib_ah,
        init: *mut ksys::rdma_ah_init_attr,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw(ksys::ib_ah_device(ah)) };
        from_result(|| {
            // SAFETY: Valid attributes of this call.
            let (attr, flags) = unsafe { (AhAttr::from_raw(&*(*init).ah_attr), (*init).flags) };
            let sleepable = flags & ksys::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
            let data = T::create_ah(dev, &attr, sleepable)?;
            // SAFETY: The fresh container of `Ah::<T>::SIZE` bytes.
            unsafe { Ah::<T>::init(ah, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for an AH `create_user_ah` or `create_ah` initialised.
    pub(super) unsafe extern "C" fn destroy_ah(ah: *mut ksys::ib_ah, _flags: u32) -> c_int {
        // SAFETY: Initialised by `create_user_ah` or `create_ah`, destroyed once.
        unsafe { Ah::<T>::destroy(ah) };
        0
    }
}
