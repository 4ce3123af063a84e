// SPDX-License-Identifier: GPL-2.0
//! The completion queues' control trampolines of [`OpsTable`]: `create_cq`, `destroy_cq`,
//! `resize_user_cq`, `modify_cq` (polling and arming are the data path, `datapath.rs`).

use kernel::{
    error::from_result,
    ffi::{
        c_int,
        c_uint, //
    },
    prelude::*,
    sync::Arc,
};

use super::OpsTable;
use crate::{
    device::Device,
    driver::IbDriver,
    events::CqEvents,
    object::Cq,
    qp_attr::CqInitAttr,
    udata::Udata, //
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_cq` bytes whose `device` is
    /// ours, valid attributes and, for a user CQ, the call's attribute bundle.
    pub(super) unsafe extern "C" fn create_cq(
        cq: *mut ksys::ib_cq,
        attr: *const ksys::ib_cq_init_attr,
        attrs: *mut ksys::uverbs_attr_bundle,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw(ksys::ib_cq_device(cq)) };
        // SAFETY: Valid for the call.
        let attr = CqInitAttr::from_raw(unsafe { &*attr });
        // SAFETY: The bundle of this call (or NULL).
        let udata = unsafe { ksys::ib_attrs_udata(attrs) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        from_result(|| {
            let events = Arc::new(CqEvents::new(cq), GFP_KERNEL)?;
            let (data, cqe) = T::create_cq(dev, &attr, udata.as_mut(), &events)?;
            let cqe = i32::try_from(cqe).map_err(|_| EINVAL)?;
            // SAFETY: The fresh container of `Cq::<T>::SIZE` bytes; `cqe` is the core's
            // field for the size it reports.
            unsafe {
                Cq::<T>::init(cq, data, events);
                ksys::ib_cq_set_cqe(cq, cqe);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a CQ `create_cq` initialised, with no QP left on it.
    pub(super) unsafe extern "C" fn destroy_cq(
        cq: *mut ksys::ib_cq,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `create_cq`, destroyed once.
        unsafe { Cq::<T>::destroy(cq) };
        0
    }

    /// # Safety
    ///
    /// uverbs calls it (`ib_uverbs_resize_cq`) with a live user CQ of ours and the call's
    /// driver udata.
    pub(super) unsafe extern "C" fn resize_user_cq(
        cq: *mut ksys::ib_cq,
        cqe: c_uint,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `create_cq`, live during the call.
        let ib_cq = unsafe { Cq::<T>::from_raw(cq) };
        if udata.is_null() {
            return EINVAL.to_errno();
        }
        // SAFETY: The core's udata for this call (a bundle's `driver_udata`).
        let mut udata = unsafe { Udata::from_raw(udata) };
        from_result(|| {
            let n = T::resize_cq(ib_cq, cqe, &mut udata)?;
            let n = i32::try_from(n).map_err(|_| EINVAL)?;
            // SAFETY: A live CQ; `cqe` is the core's field for the size it reports.
            unsafe { ksys::ib_cq_set_cqe(cq, n) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it (uverbs' `MODIFY_CQ`, `rdma_set_cq_moderation`) with a live CQ of
    /// ours.
    pub(super) unsafe extern "C" fn modify_cq(
        cq: *mut ksys::ib_cq,
        cq_count: u16,
        cq_period: u16,
    ) -> c_int {
        // SAFETY: Initialised by `create_cq`, live during the call.
        let ib_cq = unsafe { Cq::<T>::from_raw(cq) };
        from_result(|| T::modify_cq(ib_cq, cq_count, cq_period).map(|()| 0))
    }
}
