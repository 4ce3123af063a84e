// SPDX-License-Identifier: GPL-2.0
//! The steering rules' trampolines of [`OpsTable`]: `create_flow` and `destroy_flow`. The
//! layer allocates the `ib_flow` ([`Flow`]).

use kernel::prelude::*;

use super::OpsTable;
use crate::{
    driver::IbDriver,
    flow::FlowAttr,
    object::{
        Flow,
        Qp, //
    },
    udata::Udata,
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// uverbs calls it with a live QP of ours, the rule's attributes (specs checked to lie
    /// within them) and the call's udata.
    pub(super) unsafe extern "C" fn create_flow(
        qp: *mut ksys::ib_qp,
        attr: *mut ksys::ib_flow_attr,
        udata: *mut ksys::ib_udata,
    ) -> *mut ksys::ib_flow {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        // SAFETY: The attributes of this call (the caller's guarantee).
        let r = unsafe { FlowAttr::from_raw(attr) }
            .and_then(|a| T::create_flow(qp, &a, udata.as_mut()))
            .and_then(Flow::<T>::boxed);
        r.unwrap_or_else(Error::to_ptr)
    }

    /// # Safety
    ///
    /// The core calls it once for a rule `create_flow` returned.
    pub(super) unsafe extern "C" fn destroy_flow(flow: *mut ksys::ib_flow) -> kernel::ffi::c_int {
        // SAFETY: Made by `create_flow`, destroyed once.
        unsafe { Flow::<T>::free(flow) };
        0
    }
}
