// SPDX-License-Identifier: GPL-2.0
//! The work queues' and indirection tables' trampolines of [`OpsTable`]: `create_wq`,
//! `modify_wq`, `destroy_wq` (the layer allocates the `ib_wq`, [`Wq`]),
//! `create_rwq_ind_table` and `destroy_rwq_ind_table` (containers the core allocates,
//! [`RwqIndTable`]).

use kernel::{
    error::from_result,
    ffi::c_int,
    prelude::*, //
};

use super::OpsTable;
use crate::{
    driver::IbDriver,
    object::{
        Pd,
        RwqIndTable,
        Wq, //
    },
    udata::Udata,
    wq::{
        WqAttr,
        WqInitAttr, //
    },
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// uverbs calls it with a live PD of ours, the WQ's attributes (their CQ ours and live)
    /// and the call's udata.
    pub(super) unsafe extern "C" fn create_wq(
        pd: *mut ksys::ib_pd,
        attr: *mut ksys::ib_wq_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> *mut ksys::ib_wq {
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        // SAFETY: The attributes of this call (the caller's guarantee).
        let r = unsafe { WqInitAttr::<T>::from_raw(attr) }
            .and_then(|a| T::create_wq(pd, &a, udata.as_mut()))
            .and_then(|(wq, wqn)| Wq::<T>::into_raw(wq, wqn));
        r.unwrap_or_else(Error::to_ptr)
    }

    /// # Safety
    ///
    /// The core calls it with a live WQ `create_wq` made, valid attributes and the call's
    /// udata.
    pub(super) unsafe extern "C" fn modify_wq(
        wq: *mut ksys::ib_wq,
        attr: *mut ksys::ib_wq_attr,
        mask: u32,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Made by `create_wq`, live during the call.
        let wq = unsafe { Wq::<T>::from_raw(wq) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        from_result(|| {
            // SAFETY: The attributes of this call.
            let a = unsafe { WqAttr::from_raw(attr, mask) }?;
            T::modify_wq(wq, &a, udata.as_mut()).map(|()| 0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a WQ `create_wq` made, no indirection table listing it.
    pub(super) unsafe extern "C" fn destroy_wq(
        wq: *mut ksys::ib_wq,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Made by `create_wq`, destroyed once.
        unsafe { Wq::<T>::free(wq) };
        0
    }

    /// # Safety
    ///
    /// uverbs calls it with a fresh container of `size_ib_rwq_ind_table` bytes (its `device`
    /// set), attributes listing `2^log_size` live WQs of ours, and the call's udata.
    pub(super) unsafe extern "C" fn create_rwq_ind_table(
        table: *mut ksys::ib_rwq_ind_table,
        attr: *mut ksys::ib_rwq_ind_table_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        from_result(|| {
            let mut log = 0;
            // SAFETY: The attributes of this call.
            let list = unsafe { ksys::ib_rwq_ind_table_init_attr(attr, &mut log) };
            let n = 1usize.checked_shl(log).ok_or(EINVAL)?;
            let mut wqs = KVec::with_capacity(n, GFP_KERNEL)?;
            for i in 0..n {
                // SAFETY: The list holds `n` WQs of ours, live (uverbs holds them) during
                // the call.
                let wq = unsafe { Wq::<T>::from_raw(*list.add(i)) };
                wqs.push(wq, GFP_KERNEL)?;
            }
            // SAFETY: The fresh container's `device` is set by the core.
            let dev = unsafe { RwqIndTable::<T>::raw_device(table) };
            let (data, num) = T::create_rwq_ind_table(dev, &wqs, udata.as_mut())?;
            // SAFETY: The fresh container of `RwqIndTable::<T>::SIZE` bytes; the core
            // reports `ind_tbl_num`.
            unsafe {
                RwqIndTable::<T>::init(table, data);
                ksys::ib_rwq_ind_table_set_num(table, num);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a table `create_rwq_ind_table` initialised, no QP using it.
    pub(super) unsafe extern "C" fn destroy_rwq_ind_table(
        table: *mut ksys::ib_rwq_ind_table,
    ) -> c_int {
        // SAFETY: Initialised by `create_rwq_ind_table`, destroyed once.
        unsafe { RwqIndTable::<T>::destroy(table) };
        0
    }
}
