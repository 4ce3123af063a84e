// SPDX-License-Identifier: GPL-2.0
//! The domains' trampolines of [`OpsTable`]: protection domains (`alloc_pd`, `dealloc_pd`)
//! and XRC domains (`alloc_xrcd`, `dealloc_xrcd`), which the other objects belong to.

use kernel::{
    error::from_result,
    ffi::c_int, //
};

use super::OpsTable;
use crate::{
    device::Device,
    driver::IbDriver,
    object::{
        Pd,
        Xrcd, //
    },
    udata::Udata,
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_pd` bytes whose `device` is ours;
    /// `udata` is NULL for a kernel PD.
    pub(super) unsafe extern "C" fn alloc_pd(
        pd: *mut ksys::ib_pd,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw((*pd).device) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        from_result(|| {
            let data = T::alloc_pd(dev, udata.as_mut())?;
            // SAFETY: The fresh container of `Pd::<T>::SIZE` bytes.
            unsafe { Pd::<T>::init(pd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a PD `alloc_pd` initialised, with no object left on it.
    pub(super) unsafe extern "C" fn dealloc_pd(
        pd: *mut ksys::ib_pd,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `alloc_pd`, destroyed once.
        unsafe { Pd::<T>::destroy(pd) };
        0
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_xrcd` bytes whose `device` is
    /// ours.
    pub(super) unsafe extern "C" fn alloc_xrcd(
        xrcd: *mut ksys::ib_xrcd,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw((*xrcd).device) };
        from_result(|| {
            let data = T::alloc_xrcd(dev)?;
            // SAFETY: The fresh container of `Xrcd::<T>::SIZE` bytes.
            unsafe { Xrcd::<T>::init(xrcd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a domain `alloc_xrcd` initialised, when no QP or SRQ uses
    /// it any more.
    pub(super) unsafe extern "C" fn dealloc_xrcd(
        xrcd: *mut ksys::ib_xrcd,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `alloc_xrcd`, destroyed once.
        unsafe { Xrcd::<T>::destroy(xrcd) };
        0
    }
}
