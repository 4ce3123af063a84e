// SPDX-License-Identifier: GPL-2.0
//! Receive work queues of processes (`ibv_create_wq`, uverbs `create_wq`): their attributes
//! ([`WqInitAttr`], [`WqAttr`]); the WQ object is [`crate::Wq`] (object.rs), which the layer
//! allocates in ib_core's model. Their indirection tables ([`crate::RwqIndTable`],
//! `ibv_create_rwq_ind_table`) are containers the core allocates (object.rs); an RSS QP names
//! one in its attributes.

use kernel::prelude::*;

use crate::{
    driver::IbDriver,
    object::Cq, //
};

/// `IB_WQ_STATE`: [`WqAttr::state`] is to be set.
pub const WQ_STATE: u32 = ksys::ib_wq_attr_mask_IB_WQ_STATE;
/// `IB_WQ_CUR_STATE`: [`WqAttr::cur_state`] is the caller's view of the current state.
pub const WQ_CUR_STATE: u32 = ksys::ib_wq_attr_mask_IB_WQ_CUR_STATE;
/// `IB_WQ_FLAGS`: the flags in [`WqAttr::flags_mask`] are to be set to [`WqAttr::flags`].
pub const WQ_FLAGS: u32 = ksys::ib_wq_attr_mask_IB_WQ_FLAGS;

/// `IB_WQ_FLAGS_CVLAN_STRIPPING`: the WQ strips C-VLAN tags (create flag).
pub const WQ_FLAGS_CVLAN_STRIPPING: u32 = ksys::ib_wq_flags_IB_WQ_FLAGS_CVLAN_STRIPPING;

/// A WQ's state (`enum ib_wq_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqState {
    /// `IB_WQS_RESET`.
    Reset,
    /// `IB_WQS_RDY`.
    Rdy,
    /// `IB_WQS_ERR`.
    Err,
}

impl WqState {
    fn from_raw(s: u32) -> Result<Self> {
        match s {
            ksys::ib_wq_state_IB_WQS_RESET => Ok(Self::Reset),
            ksys::ib_wq_state_IB_WQS_RDY => Ok(Self::Rdy),
            ksys::ib_wq_state_IB_WQS_ERR => Ok(Self::Err),
            _ => Err(EINVAL),
        }
    }
}

/// A new WQ's attributes (`struct ib_wq_init_attr`).
pub struct WqInitAttr<'a, T: IbDriver> {
    /// `IB_WQT_RQ` (0) is the only type.
    pub wq_type: u32,
    /// Work requests.
    pub max_wr: u32,
    /// Scatter entries per request.
    pub max_sge: u32,
    /// `IB_WQ_FLAGS_*`.
    pub create_flags: u32,
    cq: &'a Cq<T>,
}

impl<'a, T: IbDriver> WqInitAttr<'a, T> {
    /// Decodes the attributes of a `create_wq` call.
    ///
    /// # Safety
    ///
    /// `raw` must be the call's attributes, whose CQ is a live CQ of this driver during `'a`.
    pub(crate) unsafe fn from_raw(raw: *const ksys::ib_wq_init_attr) -> Result<Self> {
        let (mut wq_type, mut max_wr, mut max_sge, mut create_flags) = (0, 0, 0, 0);
        let mut cq = core::ptr::null_mut();
        // SAFETY: Valid attributes (the caller's guarantee); the outputs are locals.
        unsafe {
            ksys::ib_wq_init_attr(
                raw,
                &mut wq_type,
                &mut max_wr,
                &mut max_sge,
                &mut cq,
                &mut create_flags,
            )
        };
        if cq.is_null() {
            return Err(EINVAL);
        }
        Ok(Self {
            wq_type,
            max_wr,
            max_sge,
            create_flags,
            // SAFETY: A live CQ of ours during the call (the caller's guarantee).
            cq: unsafe { Cq::<T>::from_raw(cq) },
        })
    }

    /// The CQ the WQ completes to.
    pub fn cq(&self) -> &'a Cq<T> {
        self.cq
    }
}

/// A WQ change (`struct ib_wq_attr`).
#[derive(Clone, Copy, Debug)]
pub struct WqAttr {
    /// The state to move to ([`WQ_STATE`]).
    pub state: Option<WqState>,
    /// The current state as the caller sees it ([`WQ_CUR_STATE`]).
    pub cur_state: Option<WqState>,
    /// Flag values.
    pub flags: u32,
    /// The flags to change ([`WQ_FLAGS`]).
    pub flags_mask: u32,
}

impl WqAttr {
    /// Decodes the attributes of a `modify_wq` call under `mask`.
    ///
    /// # Safety
    ///
    /// `raw` must be the call's attributes.
    pub(crate) unsafe fn from_raw(raw: *const ksys::ib_wq_attr, mask: u32) -> Result<Self> {
        let (mut state, mut cur, mut flags, mut flags_mask) = (0, 0, 0, 0);
        // SAFETY: Valid attributes (the caller's guarantee); the outputs are locals.
        unsafe { ksys::ib_wq_attr(raw, &mut state, &mut cur, &mut flags, &mut flags_mask) };
        Ok(Self {
            state: (mask & WQ_STATE != 0)
                .then(|| WqState::from_raw(state))
                .transpose()?,
            cur_state: (mask & WQ_CUR_STATE != 0)
                .then(|| WqState::from_raw(cur))
                .transpose()?,
            flags: if mask & WQ_FLAGS != 0 { flags } else { 0 },
            flags_mask: if mask & WQ_FLAGS != 0 { flags_mask } else { 0 },
        })
    }
}
