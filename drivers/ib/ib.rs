// SPDX-License-Identifier: GPL-2.0
//! RDMA devices (`include/rdma/ib_verbs.h`): a safe abstraction over the `ksys` bindings of
//! ib_core, written as a future `kernel::rdma` module would be. The 7.2 `kernel` crate has
//! none of it.
//!
//! - [`Registration`]: an `ib_device` allocated with `_ib_alloc_device()` together with the
//!   driver data ([`IbDriver::Data`]), its ops table built from [`IbDriver`], its RoCE port's
//!   netdev, `ib_register_device()`; dropping it unregisters and frees.
//! - [`Device`]: the `ib_device` as the ops see it (`&Device<T>`), with the driver data.
//! - [`IbDriver`]: the device, port, GID, user-context, mmap, PD, CQ, MR, QP and AH
//!   operations, with the objects' types ([`IbDriver::Ucontext`], [`IbDriver::Pd`], ...).
//! - [`Ucontext`], [`Pd`], [`Cq`], [`Qp`], [`Srq`], [`Ah`], [`Xrcd`]: the containers ib_core
//!   allocates for the objects (`size_ib_*`), holding the `ib_*` struct and the driver's object; [`Mr`], which
//!   the layer allocates; handled once, in `object.rs`.
//! - [`CqEvents`], [`QpEvents`], [`SrqEvents`]: the CQ, QP and SRQ event sinks the driver's interrupt handlers
//!   call, revoked by the layer before the object goes.
//! - [`Umem`]: user memory pinned for the device, with its DMA blocks.
//! - [`CqInitAttr`], [`QpInitAttr`], [`SrqInitAttr`], [`QpAttr`], [`AhAttr`]: the objects'
//!   attributes as plain values (an XRC target QP's or XRC SRQ's domain and CQ as the
//!   driver's objects).
//! - [`FlowAttr`] with its [`FlowSpec`]s: a process's steering rule, which the driver turns
//!   into its [`IbDriver::Flow`] ([`Flow`], allocated by the layer).
//! - [`WqInitAttr`], [`WqAttr`]: a process's receive work queue ([`Wq`], allocated by the
//!   layer) and its changes; [`RwqIndTable`]: a container of WQs an RSS QP hashes over.
//! - [`Udata`]: the driver-private request and response of a uverbs call.
//! - [`GidAttr`]: a GID table entry the core adds or deletes; [`Vma`]: an mmap request.
//! - The kernel data path: [`SendWrs`] / [`RecvWrs`] over a posted chain of work requests
//!   ([`SendWr`], [`RecvWr`], [`Sge`]), and [`WcWriter`] over the caller's completion array
//!   ([`WorkCompletion`], naming its QP by a [`QpHandle`]).
//! - [`StatDesc`]: the names of a port's hardware counters (`rdma statistic`), which
//!   [`IbDriver::port_counters`] fills.
//! - [`DeviceAttr`], [`PortAttr`], [`PortImmutable`] and their enums: what the query ops
//!   answer, as plain Rust values that the layer copies into the C structs.
//!
//! # Lifetimes
//!
//! The driver data lives from [`Registration::new`] until after `ib_unregister_device()` has
//! returned in [`Registration`]'s drop, so every op sees it. Objects live in the memory
//! ib_core allocated for them, from the create op's success to the destroy op, which drops
//! them in place (destroy is infallible: the object's `Drop` releases what it holds).
//! Unregistering under an open user context disassociates it (uverbs destroys its objects
//! and zaps its mappings), so dropping a [`Registration`] never waits for user space.
//!
//! # Contexts
//!
//! The ops of this layer run in process context and may sleep, except the data path
//! (`post_send`, `post_recv`, `poll_cq`, `req_notify_cq`) and `create_ah` without
//! `sleepable`, which kernel users call from any context (softirq, with locks held): they
//! must not sleep and take only IRQ-safe locks. The event sinks may be called from any
//! context, hard interrupts included.

mod attr;
mod build_check;
mod device;
mod driver;
mod events;
mod flow;
mod gid;
mod mmap;
mod object;
mod ops;
mod qp_attr;
mod stats;
mod udata;
mod umem;
mod wq;
mod wr;

pub use attr::{
    mtu_of,
    AtomicCap,
    DeviceAttr,
    GidType,
    LinkLayer,
    Mtu,
    PhysState,
    PortAttr,
    PortImmutable,
    PortState,
    CORE_PORT_IBA_ROCE,
    CORE_PORT_IBA_ROCE_UDP_ENCAP,
    DEVICE_MANAGED_FLOW_STEERING,
    DEVICE_MEM_MGT_EXTENSIONS,
    DEVICE_MEM_WINDOW,
    DEVICE_MEM_WINDOW_TYPE_2B,
    DEVICE_RAW_IP_CSUM,
    DEVICE_XRC,
    MGMT_MAD_SIZE,
    PORT_CM_SUP,
    RAW_PACKET_CAP_CVLAN_STRIPPING,
    RAW_PACKET_CAP_IP_CSUM, //
};
pub use device::{
    Device,
    Registration, //
};
pub use driver::{
    DriverId,
    IbDriver, //
};
pub use events::{
    CqEvents,
    QpEvent,
    QpEvents,
    SrqEvent,
    SrqEvents, //
};
pub use flow::{
    EthFilter,
    FlowAttr,
    FlowSpec,
    Ipv4Filter,
    Ipv6Filter,
    L4Filter,
    FLOW_ATTR_FLAGS_DONT_TRAP,
    FLOW_ATTR_FLAGS_EGRESS,
    FLOW_ATTR_NORMAL, //
};
pub use gid::GidAttr;
pub use mmap::{
    UarKind,
    Vma, //
};
pub use object::{
    Ah,
    Cq,
    Flow,
    Mr,
    Mw,
    Pd,
    Qp,
    RwqIndTable,
    Srq,
    Ucontext,
    Wq,
    Xrcd, //
};
pub use qp_attr::{
    qp_attr_mask,
    AhAttr,
    CqInitAttr,
    QpAttr,
    QpCap,
    QpInitAttr,
    QpState,
    QpType,
    QPT_RAW_PACKET,
    QP_CREATE_CVLAN_STRIPPING,
    srq_attr_mask,
    SrqAttr,
    SrqInitAttr,
    SrqType,
    AH_GRH, //
};
pub use stats::StatDesc;
pub use udata::{
    eopnotsupp,
    Udata, //
};
pub use umem::{
    Access,
    Rereg,
    ReregFlags,
    Umem, //
};
pub use wq::{
    WqAttr,
    WqInitAttr,
    WqState,
    WQ_CUR_STATE,
    WQ_FLAGS_CVLAN_STRIPPING,
    WQ_FLAGS,
    WQ_STATE, //
};
pub use wr::{
    send_flags,
    wc_flags,
    NetworkType,
    QpHandle,
    RecvWr,
    RecvWrs,
    RegWr,
    Remote,
    SendWr,
    SendWrs,
    Sge,
    UdDest,
    WcOpcode,
    WcStatus,
    WcWriter,
    WorkCompletion,
    WrOpcode, //
};
