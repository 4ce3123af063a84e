// SPDX-License-Identifier: GPL-2.0
//! The kernel data path's trampolines of [`OpsTable`]: `post_send`, `post_recv`,
//! `post_srq_recv`, `poll_cq`, `req_notify_cq`, over the work-request cursors and completion writer of `wr.rs`. Kernel
//! users call them in any context: they must not sleep.

use kernel::{
    ffi::c_int,
    prelude::*, //
};

use super::OpsTable;
use crate::{
    driver::IbDriver,
    object::{
        Cq,
        Qp,
        Srq, //
    },
    wr::{
        RecvWrs,
        SendWrs,
        WcWriter, //
    },
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// The poster calls it with a live QP of ours and a chain of requests valid for the call;
    /// `bad` is writable.
    pub(super) unsafe extern "C" fn post_send(
        qp: *mut ksys::ib_qp,
        wr: *const ksys::ib_send_wr,
        bad: *mut *const ksys::ib_send_wr,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The chain is valid for the call; a kernel poster's inline requests point
        // at its kernel buffers (`ib_post_send`'s contract, which uverbs' posts, the only
        // ones with process addresses, reach on a process's QP).
        let mut wrs = unsafe { SendWrs::<T>::new(wr) };
        let r = T::post_send(qp, &mut wrs);
        // SAFETY: `bad` is the caller's, NULL or writable.
        unsafe { posted(r, bad, wrs.failed()) }
    }

    /// # Safety
    ///
    /// As for `post_send`.
    pub(super) unsafe extern "C" fn post_recv(
        qp: *mut ksys::ib_qp,
        wr: *const ksys::ib_recv_wr,
        bad: *mut *const ksys::ib_recv_wr,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The caller's guarantees.
        unsafe { post_recv_chain(wr, bad, |wrs| T::post_recv(qp, wrs)) }
    }

    /// # Safety
    ///
    /// The poster calls it with a live SRQ of ours and a chain of requests valid for the
    /// call; `bad` is writable.
    pub(super) unsafe extern "C" fn post_srq_recv(
        srq: *mut ksys::ib_srq,
        wr: *const ksys::ib_recv_wr,
        bad: *mut *const ksys::ib_recv_wr,
    ) -> c_int {
        // SAFETY: Initialised by `create_srq`, live during the call.
        let srq = unsafe { Srq::<T>::from_raw(srq) };
        // SAFETY: The caller's guarantees.
        unsafe { post_recv_chain(wr, bad, |wrs| T::post_srq_recv(srq, wrs)) }
    }

    /// # Safety
    ///
    /// The core calls it with a live kernel CQ of ours and an array of `n` writable entries.
    pub(super) unsafe extern "C" fn poll_cq(
        cq: *mut ksys::ib_cq,
        n: c_int,
        wc: *mut ksys::ib_wc,
    ) -> c_int {
        // SAFETY: Initialised by `create_cq`, live during the call.
        let cq = unsafe { Cq::<T>::from_raw(cq) };
        // SAFETY: `n` writable entries for the call.
        let mut w = unsafe { WcWriter::new(wc, n) };
        match T::poll_cq(cq, &mut w) {
            Ok(()) => w.len() as c_int,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// The core calls it with a live kernel CQ of ours.
    pub(super) unsafe extern "C" fn req_notify_cq(
        cq: *mut ksys::ib_cq,
        flags: ksys::ib_cq_notify_flags,
    ) -> c_int {
        // SAFETY: Initialised by `create_cq`, live during the call.
        let cq = unsafe { Cq::<T>::from_raw(cq) };
        let solicited = flags & ksys::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == ksys::ib_cq_notify_flags_IB_CQ_SOLICITED;
        let report = flags & ksys::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
        match T::req_notify_cq(cq, solicited, report) {
            Ok(missed) => missed.into(),
            Err(e) => e.to_errno(),
        }
    }
}

/// Hands a chain of receive requests to `post` (the driver's `post_recv` or `post_srq_recv`)
/// and returns what the poster gets.
///
/// # Safety
///
/// `wr` is the head of a chain valid for the call; `bad` is NULL or writable.
unsafe fn post_recv_chain(
    wr: *const ksys::ib_recv_wr,
    bad: *mut *const ksys::ib_recv_wr,
    post: impl FnOnce(&mut RecvWrs<'_>) -> Result,
) -> c_int {
    // SAFETY: The chain is valid for the call.
    let mut wrs = unsafe { RecvWrs::new(wr) };
    let r = post(&mut wrs);
    // SAFETY: `bad` is the caller's, NULL or writable.
    unsafe { posted(r, bad, wrs.failed()) }
}

/// What `post_send` and `post_recv` return: 0, or the errno with the request to report as
/// failed (`failed`: the last one the driver took) in `*bad`.
///
/// # Safety
///
/// `bad` is NULL or writable.
unsafe fn posted<W>(r: Result, bad: *mut *const W, failed: *const W) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            if !bad.is_null() {
                // SAFETY: The caller's writable pointer.
                unsafe { *bad = failed };
            }
            e.to_errno()
        }
    }
}
