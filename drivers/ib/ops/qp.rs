// SPDX-License-Identifier: GPL-2.0
//! The queue pairs' and shared receive queues' control trampolines of [`OpsTable`]:
//! `create_qp` (XRC target QPs included), `destroy_qp`, `modify_qp`, `query_qp`, multicast
//! (`attach_mcast`, `detach_mcast`), `create_srq`, `destroy_srq`, `modify_srq`, `query_srq`
//! (posting is the data path, `datapath.rs`).

use kernel::{
    error::from_result,
    ffi::c_int,
    prelude::*,
    sync::Arc, //
};

use super::OpsTable;
use crate::{
    driver::IbDriver,
    events::{
        QpEvents,
        SrqEvents, //
    },
    object::{
        Pd,
        Qp,
        Srq, //
    },
    qp_attr::{
        QpAttr,
        QpInitAttr,
        SrqAttr,
        SrqInitAttr, //
    },
    udata::Udata,
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_qp` bytes whose `device`, `pd`
    /// and CQs are set (ours, live; an XRC target QP has no PD and no CQs, but an XRC
    /// domain of ours in the attributes), valid attributes and the call's udata (NULL for a
    /// kernel or XRC target QP).
    pub(super) unsafe extern "C" fn create_qp(
        qp: *mut ksys::ib_qp,
        attr: *mut ksys::ib_qp_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The attributes of this call; its CQs, SRQ and XRC domain are ours and live.
        let attr = unsafe { QpInitAttr::<T>::from_raw(attr) };
        // SAFETY: The core sets `pd` (NULL or a live PD of ours) before the call.
        let pd = unsafe { ksys::ib_qp_pd(qp) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        from_result(|| {
            let events = Arc::new(QpEvents::new(qp), GFP_KERNEL)?;
            let (data, qpn) = if attr.qp_type() == crate::QpType::XrcTgt {
                let xrcd = attr.xrcd().ok_or(EINVAL)?;
                if !T::HAS_CREATE_XRC_TGT_QP {
                    return Err(crate::eopnotsupp());
                }
                T::create_xrc_tgt_qp(xrcd, &attr, &events)?
            } else {
                if pd.is_null() {
                    return Err(EINVAL);
                }
                // SAFETY: Not NULL: a live PD of ours (see above).
                let pd = unsafe { Pd::<T>::from_raw(pd) };
                T::create_qp(pd, &attr, udata.as_mut(), &events)?
            };
            // SAFETY: The fresh container of `Qp::<T>::SIZE` bytes; `qp_num` is the core's
            // field for the QP number it reports.
            unsafe {
                Qp::<T>::init(qp, data, events);
                ksys::ib_qp_set_num(qp, qpn);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a QP `create_qp` initialised.
    pub(super) unsafe extern "C" fn destroy_qp(
        qp: *mut ksys::ib_qp,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, destroyed once.
        unsafe { Qp::<T>::destroy(qp) };
        0
    }

    /// # Safety
    ///
    /// The core calls it with a live QP of ours, valid attributes and the call's udata
    /// (NULL for a kernel caller).
    pub(super) unsafe extern "C" fn modify_qp(
        qp: *mut ksys::ib_qp,
        attr: *mut ksys::ib_qp_attr,
        mask: c_int,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        from_result(|| {
            // SAFETY: The attributes of this call; the address vectors the mask selects have
            // their GID entries held by the core.
            let a = unsafe { QpAttr::from_raw(&*attr, mask as u32) }?;
            T::modify_qp(qp, &a, mask as u32, udata.as_mut()).map(|()| 0)
        })
    }

    /// # Safety
    ///
    /// The core calls it with a live QP of ours and writable attribute structs.
    pub(super) unsafe extern "C" fn query_qp(
        qp: *mut ksys::ib_qp,
        attr: *mut ksys::ib_qp_attr,
        _mask: c_int,
        init: *mut ksys::ib_qp_init_attr,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        from_result(|| {
            let a = T::query_qp(qp)?;
            // SAFETY: Writable structs of this call.
            unsafe {
                a.write_to(&mut *attr);
                (*init).cap.max_send_wr = a.cap.max_send_wr;
                (*init).cap.max_recv_wr = a.cap.max_recv_wr;
                (*init).cap.max_send_sge = a.cap.max_send_sge;
                (*init).cap.max_recv_sge = a.cap.max_recv_sge;
                (*init).cap.max_inline_data = a.cap.max_inline_data;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it (`ib_attach_mcast`) with a live UD QP of ours and a GID valid for
    /// the call.
    pub(super) unsafe extern "C" fn attach_mcast(
        qp: *mut ksys::ib_qp,
        gid: *mut ksys::ib_gid,
        lid: u16,
    ) -> c_int {
        // SAFETY: The caller's guarantee.
        unsafe { Self::mcast(qp, gid, lid, T::attach_mcast) }
    }

    /// # Safety
    ///
    /// As for `attach_mcast` (`ib_detach_mcast`).
    pub(super) unsafe extern "C" fn detach_mcast(
        qp: *mut ksys::ib_qp,
        gid: *mut ksys::ib_gid,
        lid: u16,
    ) -> c_int {
        // SAFETY: The caller's guarantee.
        unsafe { Self::mcast(qp, gid, lid, T::detach_mcast) }
    }

    /// `attach_mcast` and `detach_mcast`: `op` on the QP and the GID's bytes.
    ///
    /// # Safety
    ///
    /// `qp` must be a live QP of ours, `gid` valid for the call.
    unsafe fn mcast(
        qp: *mut ksys::ib_qp,
        gid: *mut ksys::ib_gid,
        lid: u16,
        op: fn(&Qp<T>, &[u8; 16], u16) -> Result,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: Valid for the call; every member of `union ib_gid` is plain bytes.
        let gid = unsafe { *(*gid).raw.as_ref() };
        from_result(|| op(qp, &gid, lid).map(|()| 0))
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_srq` bytes whose `device` and
    /// `pd` are set (ours, live), valid attributes and the call's udata (NULL for a kernel
    /// SRQ).
    pub(super) unsafe extern "C" fn create_srq(
        srq: *mut ksys::ib_srq,
        attr: *mut ksys::ib_srq_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `pd` to a live PD of ours.
        let pd = unsafe { Pd::<T>::from_raw(ksys::ib_srq_pd(srq)) };
        // SAFETY: Valid for the call; an XRC SRQ's domain and CQ are ours and live.
        let attr = unsafe { SrqInitAttr::<T>::from_raw(&*attr) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        from_result(|| {
            let events = Arc::new(SrqEvents::new(srq), GFP_KERNEL)?;
            let (data, srqn) = T::create_srq(pd, &attr, udata.as_mut(), &events)?;
            // SAFETY: The fresh container of `Srq::<T>::SIZE` bytes; `set_xrc_srq_num` only
            // for an XRC SRQ.
            unsafe {
                Srq::<T>::init(srq, data, events);
                if attr.srq_type == crate::SrqType::Xrc {
                    Srq::<T>::set_xrc_srq_num(srq, srqn);
                }
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for an SRQ `create_srq` initialised, with no QP left on it.
    pub(super) unsafe extern "C" fn destroy_srq(
        srq: *mut ksys::ib_srq,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `create_srq`, destroyed once.
        unsafe { Srq::<T>::destroy(srq) };
        0
    }

    /// # Safety
    ///
    /// uverbs (or a kernel user) calls it with a live SRQ of ours, valid attributes and the
    /// call's udata (NULL for a kernel caller).
    pub(super) unsafe extern "C" fn modify_srq(
        srq: *mut ksys::ib_srq,
        attr: *mut ksys::ib_srq_attr,
        mask: ksys::ib_srq_attr_mask,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `create_srq`, live during the call.
        let srq = unsafe { Srq::<T>::from_raw(srq) };
        // SAFETY: The core's udata for this call, or NULL.
        let mut udata = unsafe { Udata::from_raw_opt(udata) };
        // SAFETY: Valid for the call.
        let a = SrqAttr::from_raw(unsafe { &*attr });
        from_result(|| T::modify_srq(srq, &a, mask, udata.as_mut()).map(|()| 0))
    }

    /// # Safety
    ///
    /// The core calls it with a live SRQ of ours and a writable attribute struct.
    pub(super) unsafe extern "C" fn query_srq(
        srq: *mut ksys::ib_srq,
        attr: *mut ksys::ib_srq_attr,
    ) -> c_int {
        // SAFETY: Initialised by `create_srq`, live during the call.
        let srq = unsafe { Srq::<T>::from_raw(srq) };
        from_result(|| {
            let a = T::query_srq(srq)?;
            // SAFETY: Valid and writable for the call.
            a.write_raw(unsafe { &mut *attr });
            Ok(0)
        })
    }
}
