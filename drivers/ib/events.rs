// SPDX-License-Identifier: GPL-2.0
//! [`CqEvents`], [`QpEvents`], [`SrqEvents`]: what a driver calls from its event interrupt to
//! deliver a CQ's completion and error events and a QP's or an SRQ's asynchronous events to
//! ib_core (`cq->comp_handler`, `cq->event_handler`, `qp->event_handler`,
//! `srq->event_handler`).
//!
//! A driver keeps these handles in its event dispatch tables (by CQ or QP number), which
//! outlive the objects; the layer revokes a handle before the object's destroy op drops the
//! driver's object, so a late interrupt on another CPU finds the handle empty instead of a
//! freed `ib_cq`. Revoking waits (spins) for a call in flight: the calls are short (the
//! core's handlers only schedule work or wake a waiter), and destroy runs in process context.

use crate::wr::QpHandle;

use core::sync::atomic::{
    AtomicPtr,
    AtomicU32,
    Ordering, //
};

/// A revocable pointer to a core object, called from interrupt context.
struct Revocable<O> {
    obj: AtomicPtr<O>,
    busy: AtomicU32,
}

impl<O> Revocable<O> {
    fn new(obj: *mut O) -> Self {
        Self {
            obj: AtomicPtr::new(obj),
            busy: AtomicU32::new(0),
        }
    }

    /// Runs `f` on the object unless revoked. Every access is sequentially consistent, so
    /// `revoke` either sees this call's `busy` increment or this call sees the null pointer.
    fn with(&self, f: impl FnOnce(*mut O)) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let p = self.obj.load(Ordering::SeqCst);
        if !p.is_null() {
            f(p);
        }
        self.busy.fetch_sub(1, Ordering::SeqCst);
    }

    /// Makes later calls no-ops and waits for the ones in flight.
    fn revoke(&self) {
        self.obj.store(core::ptr::null_mut(), Ordering::SeqCst);
        while self.busy.load(Ordering::SeqCst) != 0 {
            core::hint::spin_loop();
        }
    }
}

/// The event sink of one CQ. Callable from any context, including hard interrupts.
pub struct CqEvents(Revocable<ksys::ib_cq>);

// SAFETY: The pointer is only dereferenced by the core's handlers while not revoked; the
// layer revokes it before the CQ's memory can go (see the module documentation).
unsafe impl Send for CqEvents {}
// SAFETY: As for `Send`; the state is atomics.
unsafe impl Sync for CqEvents {}

impl CqEvents {
    pub(crate) fn new(cq: *mut ksys::ib_cq) -> Self {
        Self(Revocable::new(cq))
    }

    pub(crate) fn revoke(&self) {
        self.0.revoke()
    }

    /// A completion event: the CQ was armed and got a CQE (`cq->comp_handler`).
    pub fn completion(&self) {
        // SAFETY: Not revoked, so the CQ is live (its destroy op has not started dropping).
        self.0.with(|cq| unsafe { ksys::ib_cq_comp(cq) });
    }

    /// A CQ error (overrun, bad access): `IB_EVENT_CQ_ERR` to the CQ's event handler.
    pub fn error(&self) {
        // SAFETY: As in `completion`.
        self.0
            .with(|cq| unsafe { ksys::ib_cq_event(cq, ksys::ib_event_type_IB_EVENT_CQ_ERR) });
    }
}

/// An asynchronous event of a QP (`enum ib_event_type`, the QP kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum QpEvent {
    /// `IB_EVENT_QP_FATAL`: a work queue catastrophic error.
    Fatal = ksys::ib_event_type_IB_EVENT_QP_FATAL,
    /// `IB_EVENT_QP_REQ_ERR`: an invalid request.
    ReqErr = ksys::ib_event_type_IB_EVENT_QP_REQ_ERR,
    /// `IB_EVENT_QP_ACCESS_ERR`: a local access violation.
    AccessErr = ksys::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
    /// `IB_EVENT_COMM_EST`: the first packet arrived in RTR.
    CommEst = ksys::ib_event_type_IB_EVENT_COMM_EST,
    /// `IB_EVENT_SQ_DRAINED`.
    SqDrained = ksys::ib_event_type_IB_EVENT_SQ_DRAINED,
    /// `IB_EVENT_PATH_MIG`.
    PathMig = ksys::ib_event_type_IB_EVENT_PATH_MIG,
    /// `IB_EVENT_PATH_MIG_ERR`.
    PathMigErr = ksys::ib_event_type_IB_EVENT_PATH_MIG_ERR,
    /// `IB_EVENT_QP_LAST_WQE_REACHED`.
    LastWqeReached = ksys::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
}

/// The event sink of one QP. Callable from any context, including hard interrupts.
pub struct QpEvents(Revocable<ksys::ib_qp>, QpHandle);

// SAFETY: As for `CqEvents`.
unsafe impl Send for QpEvents {}
// SAFETY: As for `CqEvents`.
unsafe impl Sync for QpEvents {}

impl QpEvents {
    pub(crate) fn new(qp: *mut ksys::ib_qp) -> Self {
        Self(Revocable::new(qp), QpHandle::from_raw(qp))
    }

    pub(crate) fn revoke(&self) {
        self.0.revoke()
    }

    /// The handle the QP's work completions carry (known at create, before the QP is
    /// initialised).
    pub fn handle(&self) -> QpHandle {
        self.1
    }

    /// Delivers `ev` to the QP's event handler (uverbs queues it for the process).
    pub fn event(&self, ev: QpEvent) {
        // SAFETY: Not revoked, so the QP is live.
        self.0
            .with(|qp| unsafe { ksys::ib_qp_event(qp, ev as ksys::ib_event_type) });
    }
}

/// An asynchronous event of an SRQ (`enum ib_event_type`, the SRQ kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SrqEvent {
    /// `IB_EVENT_SRQ_LIMIT_REACHED`: fewer WQEs than the armed limit are posted.
    LimitReached = ksys::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
    /// `IB_EVENT_SRQ_ERR`: the SRQ is in error.
    Err = ksys::ib_event_type_IB_EVENT_SRQ_ERR,
}

/// The event sink of one SRQ. Callable from any context, including hard interrupts.
pub struct SrqEvents(Revocable<ksys::ib_srq>);

// SAFETY: As for `CqEvents`.
unsafe impl Send for SrqEvents {}
// SAFETY: As for `CqEvents`.
unsafe impl Sync for SrqEvents {}

impl SrqEvents {
    pub(crate) fn new(srq: *mut ksys::ib_srq) -> Self {
        Self(Revocable::new(srq))
    }

    pub(crate) fn revoke(&self) {
        self.0.revoke()
    }

    /// Delivers `ev` to the SRQ's event handler (uverbs queues it for the process).
    pub fn event(&self, ev: SrqEvent) {
        // SAFETY: Not revoked, so the SRQ is live.
        self.0
            .with(|srq| unsafe { ksys::ib_srq_event(srq, ev as ksys::ib_event_type) });
    }
}
