//! The LRO merges open on the receive queues (`RxMerges`): state only. What opens, extends and
//! closes them is `striding.rs`; the part that owns them, [`crate::hca::Hca`], imports this
//! file without importing the data path's behaviour.

use std::collections::BTreeMap;

use cx4_hw::cq::cqe::Cqe64;

use crate::{
    eth::{
        lro,
        rx::RxSeg, //
    },
    fw::StridingWqe,
};

/// Where an open merge's packet is.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    /// In a striding RQ's WQE, from its `used` stride on.
    Strides { wqe: StridingWqe, stride: u32 },
    /// In the cyclic RQ WQE of counter `counter` (which the device has not consumed yet),
    /// over its scatter list.
    Wqe { counter: u32, segs: Vec<RxSeg> },
}

/// A merge open on an RQ.
#[derive(Clone, Debug)]
pub struct OpenMerge {
    /// The merged packet so far.
    pub merge: lro::Merge,
    pub(crate) place: Place,
    /// The first segment's CQE.
    pub(crate) cqe: Cqe64,
    /// Bytes the packet may reach (to the end of the WQE, at most what a CQE can count).
    pub(crate) room: u32,
    /// The TIR's `lro_max_ip_payload_size` in bytes.
    pub(crate) max_ip_payload: u32,
    /// The RQ's CQ and PD.
    pub(crate) cqn: u32,
    pub(crate) pd: u32,
}

/// The device's open merges, by RQ.
#[derive(Debug, Default)]
pub struct RxMerges {
    /// Open merges.
    pub open: BTreeMap<u32, OpenMerge>,
    /// Merges stay open after a frame (the wire loop has more waiting); else each frame's
    /// delivery closes them.
    pub defer: bool,
}
