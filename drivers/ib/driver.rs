// SPDX-License-Identifier: GPL-2.0
//! [`IbDriver`]: what an RDMA device driver implements, its ib_device operations and the
//! types of its objects, and [`DriverId`]. The C table built from it, with the trampolines
//! that call it, is in `ops.rs` and `ops/`.

use kernel::{
    build_error,
    error::VTABLE_DEFAULT_ERROR,
    prelude::*,
    sync::Arc, //
};

use crate::{
    attr::{
        DeviceAttr,
        LinkLayer,
        PortAttr,
        PortImmutable, //
    },
    device::Device,
    events::{
        CqEvents,
        QpEvents,
        SrqEvents, //
    },
    flow::FlowAttr,
    gid::GidAttr,
    mmap::{
        UarKind,
        Vma, //
    },
    object::{
        Cq,
        Mr,
        Pd,
        Qp,
        Srq,
        Ucontext,
        Wq,
        Xrcd, //
    },
    qp_attr::{
        AhAttr,
        CqInitAttr,
        QpAttr,
        QpInitAttr,
        SrqAttr,
        SrqInitAttr, //
    },
    stats::StatDesc,
    udata::Udata,
    wq::{
        WqAttr,
        WqInitAttr, //
    },
    umem::{
        Access,
        Rereg, //
    },
    wr::{
        RecvWrs,
        SendWrs,
        WcWriter, //
    },
};

/// Which user-space provider binds to the device (`enum rdma_driver_id`): libibverbs matches
/// it against its providers' tables before names and PCI IDs, and the ioctl path requires the
/// provider's ioctls to carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DriverId {
    /// `RDMA_DRIVER_MLX5`: rdma-core's mlx5 provider (libmlx5).
    Mlx5 = ksys::rdma_driver_id_RDMA_DRIVER_MLX5,
}

/// An RDMA device driver's operations (`struct ib_device_ops`).
///
/// The mandatory ones (device and port queries, immutable port data) must be implemented;
/// the others are set in the C table only when implemented. Objects are the associated
/// types: the create op returns one, the layer stores it in the container the core allocated
/// ([`Ucontext`], [`Pd`]), and the destroy op drops it there (its `Drop` releases what it
/// holds, so destroying cannot fail). All ops run in process context and may sleep.
#[vtable]
pub trait IbDriver: Sized + 'static {
    /// The device's driver data, owned by the [`crate::Registration`].
    type Data: Send + Sync;
    /// A user context's state ([`IbDriver::alloc_ucontext`]).
    type Ucontext: Send + Sync;
    /// A memory window's state ([`IbDriver::alloc_mw`]).
    type Mw: Send + Sync;
    /// What an mmap entry the driver handed out maps ([`IbDriver::alloc_uar`]); dropped when
    /// the entry's last reference goes (its object destroyed and no process mapping it).
    type MmapEntry: Send + Sync;
    /// A protection domain's state ([`IbDriver::alloc_pd`]).
    type Pd: Send + Sync;
    /// A completion queue's state ([`IbDriver::create_cq`]).
    type Cq: Send + Sync;
    /// A queue pair's state ([`IbDriver::create_qp`]).
    type Qp: Send + Sync;
    /// A memory region's state ([`IbDriver::reg_user_mr`], [`IbDriver::get_dma_mr`]).
    type Mr: Send + Sync;
    /// An address handle's state ([`IbDriver::create_user_ah`]).
    type Ah: Send + Sync;
    /// A shared receive queue's state ([`IbDriver::create_srq`]).
    type Srq: Send + Sync;
    /// An XRC domain's state ([`IbDriver::alloc_xrcd`]).
    type Xrcd: Send + Sync;
    /// A steering rule ([`crate::Flow`]).
    type Flow: Send + Sync;
    /// A receive work queue ([`crate::Wq`]).
    type Wq: Send + Sync;
    /// An indirection table of WQs ([`crate::RwqIndTable`]).
    type RwqIndTable: Send + Sync;

    /// The provider that binds in user space (`ops.driver_id`).
    const DRIVER_ID: DriverId;
    /// The provider ABI version (`ops.uverbs_abi_ver`), which the provider checks.
    const UVERBS_ABI_VER: u32;

    /// `query_device`: the device's attributes (cached by the core at registration and asked
    /// again by `ibv_query_device_ex`).
    fn query_device(dev: &Device<Self>, attr: &mut DeviceAttr) -> Result;

    /// `query_port`: the port's current attributes (`port` is 1-based).
    fn query_port(dev: &Device<Self>, port: u32, attr: &mut PortAttr) -> Result;

    /// `get_port_immutable`: the port's fixed properties, asked once at registration.
    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable>;

    /// `get_link_layer`: without it a CA port is InfiniBand.
    fn link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `query_pkey`: P_Key table entry `index`.
    fn query_pkey(_dev: &Device<Self>, _port: u32, _index: u16) -> Result<u16> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `add_gid`: program a GID table entry (RoCE: the core manages the table from the
    /// netdev's addresses and calls this on every change). Implement with `del_gid`.
    fn add_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `del_gid`: clear a GID table entry programmed by `add_gid`.
    fn del_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_ucontext`: a process opened the device; `udata` holds the provider's request
    /// and takes the driver's response. Implementing it creates the uverbs char device.
    fn alloc_ucontext(_dev: &Device<Self>, _udata: &mut Udata<'_>) -> Result<Self::Ucontext> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `query_ucontext`: the context's response to `alloc_ucontext` again (the bytes of the
    /// provider's response struct), for a library importing the context from its command FD
    /// (`ibv_import_device`).
    fn query_ucontext(_uctx: &Ucontext<Self>) -> Result<KVec<u8>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `mmap`: a process maps part of the device through its context (`vma.pgoff()` says
    /// what, in the provider's encoding).
    fn mmap(_uctx: &Ucontext<Self>, _vma: &Vma) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// mlx5's `MLX5_IB_METHOD_UAR_OBJ_ALLOC` (the driver's uverbs object `MLX5_IB_OBJECT_UAR`,
    /// drivers/ksys/uapi.c): a UAR page of `kind` for the context; returns what its mmap entry
    /// maps and the page's index. The layer inserts the entry into the context (the process
    /// maps it at the offset the method returns, through [`Vma::map_entry_noncached`]) and
    /// drops the entry data once the object is destroyed and no longer mapped.
    fn alloc_uar(_uctx: &Ucontext<Self>, _kind: UarKind) -> Result<(Self::MmapEntry, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_mw`: a memory window of `pd` (type 2 if `type_2`, else type 1) for a process
    /// (`udata` holds the provider's optional request); returns it and its initial rkey. The
    /// process binds and invalidates it with work requests; the drop frees it on the device.
    fn alloc_mw(_pd: &Pd<Self>, _type_2: bool, _udata: &mut Udata<'_>) -> Result<(Self::Mw, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_pd`: a protection domain, for a user context (`udata` is `Some`) or a kernel
    /// user (`None`).
    fn alloc_pd(_dev: &Device<Self>, _udata: Option<&mut Udata<'_>>) -> Result<Self::Pd> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_cq`: a completion queue, for a user context (`udata` is `Some`: the buffer
    /// and doorbell record are in the process's memory, as the provider's request says) or a
    /// kernel user. `events` is the CQ's event sink: the driver's interrupt handler calls it
    /// (it stays valid, as a no-op, after the CQ is destroyed). Returns the CQ and its
    /// actual number of CQEs (at least `attr.cqe`).
    fn create_cq(
        _dev: &Device<Self>,
        _attr: &CqInitAttr,
        _udata: Option<&mut Udata<'_>>,
        _events: &Arc<CqEvents>,
    ) -> Result<(Self::Cq, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `resize_user_cq` (`ibv_resize_cq`): gives the user CQ `cq` room for at least `cqe`
    /// completions (`cqe` ≥ 1: uverbs refuses 0), with the new buffer the provider's request
    /// in `udata` names. Returns the CQ's new number of CQEs, which the layer stores in
    /// `ib_cq.cqe` for uverbs to report. The core holds the CQ object only for reading, so
    /// concurrent resizes of one CQ must be serialised by the driver.
    fn resize_cq(_cq: &Cq<Self>, _cqe: u32, _udata: &mut Udata<'_>) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `modify_cq` (`ibv_modify_cq`, `rdma_set_cq_moderation`): moderates `cq`'s completion
    /// events — one after `count` completions or `period` µs, whichever comes first. The
    /// limits are the ones [`DeviceAttr`] reports (`max_cq_moderation_*`).
    fn modify_cq(_cq: &Cq<Self>, _count: u16, _period: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `reg_user_mr`: registers `len` bytes of the process's memory at `start`, addressed by
    /// the device as `iova`, with `access` rights, in `pd`. Returns the MR, its lkey and
    /// rkey.
    fn reg_user_mr(
        _pd: &Pd<Self>,
        _start: u64,
        _len: u64,
        _iova: u64,
        _access: Access,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Mr, u32, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `reg_user_mr_dmabuf`: registers `len` bytes at `offset` of the process's dma-buf
    /// `fd` (see [`crate::Umem::dmabuf`]), addressed by the device as `iova` (which shares
    /// `offset`'s place in a page: uverbs checks it), with `access` rights, in `pd`. Returns
    /// the MR, its lkey and rkey.
    #[allow(clippy::too_many_arguments)]
    fn reg_user_mr_dmabuf(
        _pd: &Pd<Self>,
        _offset: u64,
        _len: u64,
        _iova: u64,
        _fd: i32,
        _access: Access,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Mr, u32, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `rereg_user_mr`: a user MR `mr` (from `reg_user_mr` or `reg_user_mr_dmabuf`)
    /// registered again with what `rereg` selects changed, the rest as `mr` has it; `pd` is
    /// the new PD with [`crate::ReregFlags::PD`], `mr`'s own otherwise. Returns either a new
    /// MR, its lkey and rkey — uverbs swaps it in under the same handle and deregisters `mr`
    /// (the layer sets the new `ib_mr`'s address and length) — or `None` when `mr` itself was
    /// changed (its keys stay; uverbs moves it to the new PD). On an error `mr` stays as it
    /// was.
    fn rereg_user_mr(
        _mr: &Mr<Self>,
        _rereg: &Rereg,
        _pd: &Pd<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<Option<(Self::Mr, u32, u32)>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `get_dma_mr`: an MR over all of memory by bus address, for kernel users. Returns
    /// the MR, its lkey and rkey.
    fn get_dma_mr(_pd: &Pd<Self>, _access: Access) -> Result<(Self::Mr, u32, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_mr` (`IB_MR_TYPE_MEM_REG`): a fast-registration MR of up to `max_num_sg` pages
    /// in `pd`, invalid until a `REG_MR` request registers what `map_mr_sg` mapped. Returns
    /// the MR, its lkey and rkey.
    fn alloc_mr(_pd: &Pd<Self>, _max_num_sg: u32) -> Result<(Self::Mr, u32, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `map_mr_sg`, first step: the MR's page list starts empty, for pages of `page_size`
    /// bytes (the user's choice). Then the layer walks the scatter list (`ib_sg_to_pages`,
    /// which also sets the MR's `iova` and `length`) and hands each page to
    /// [`IbDriver::mr_set_page`]. Any context: must not sleep.
    fn mr_map_begin(_mr: &Mr<Self>, _page_size: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `map_mr_sg`: the next page's bus address; an error (the list is full) ends the
    /// mapping there.
    fn mr_set_page(_mr: &Mr<Self>, _addr: u64) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_qp`: a queue pair in `pd` (in RESET), for a user context (`udata`) or a
    /// kernel user. `events` is the QP's event sink (as for CQs). Returns the QP and its
    /// number.
    fn create_qp(
        _pd: &Pd<Self>,
        _attr: &QpInitAttr<'_, Self>,
        _udata: Option<&mut Udata<'_>>,
        _events: &Arc<QpEvents>,
    ) -> Result<(Self::Qp, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_qp` of an XRC target QP (`IB_QPT_XRC_TGT`): the core creates it for a
    /// process (`ibv_create_qp_ex` with an XRC domain, or the first `ibv_open_qp`) with no
    /// PD, no CQs and no driver data; it receives into the XRC SRQs of `xrcd` and is
    /// modified like other QPs. Returns the QP and its number.
    fn create_xrc_tgt_qp(
        _xrcd: &Xrcd<Self>,
        _attr: &QpInitAttr<'_, Self>,
        _events: &Arc<QpEvents>,
    ) -> Result<(Self::Qp, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_flow`: a steering rule of a process sending what `attr` matches to `qp` (a
    /// UD or raw packet QP; uverbs checked the type and `CAP_NET_RAW`), or dropping it.
    fn create_flow(
        _qp: &Qp<Self>,
        _attr: &FlowAttr,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result<Self::Flow> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_wq`: a receive work queue of a process in `pd` (in RESET). Returns it and its
    /// number.
    fn create_wq(
        _pd: &Pd<Self>,
        _attr: &WqInitAttr<'_, Self>,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result<(Self::Wq, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `modify_wq`: a WQ's state or flags change.
    fn modify_wq(_wq: &Wq<Self>, _attr: &WqAttr, _udata: Option<&mut Udata<'_>>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_rwq_ind_table`: an indirection table over `wqs` (a power of two of them, in
    /// order). Returns it and its number.
    fn create_rwq_ind_table(
        _dev: &Device<Self>,
        _wqs: &[&Wq<Self>],
        _udata: Option<&mut Udata<'_>>,
    ) -> Result<(Self::RwqIndTable, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `alloc_xrcd`: an XRC domain (a process opened one with `ibv_open_xrcd`, or a kernel
    /// user). Implementing it lets the core open XRC domains and create XRC QPs and SRQs.
    fn alloc_xrcd(_dev: &Device<Self>) -> Result<Self::Xrcd> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `modify_qp`: moves the QP to `attr.qp_state` setting the attributes `mask`
    /// (`qp_attr_mask`) selects. The core checked the transition and the mask are valid for
    /// the QP type (`ib_modify_qp_is_ok`) and resolved a RoCE destination's MAC.
    fn modify_qp(
        _qp: &Qp<Self>,
        _attr: &QpAttr,
        _mask: u32,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `query_qp`: the QP's current attributes.
    fn query_qp(_qp: &Qp<Self>) -> Result<QpAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `attach_mcast`: attaches the UD QP `qp` to the multicast group of `gid` (for
    /// `ibv_attach_mcast` and kernel users such as rdma_cm's joins). The core checked that the
    /// QP is UD and the GID a multicast address; `lid` is the group's IB multicast LID
    /// (unused on a RoCE port). While attached, the core keeps the QP from being destroyed.
    fn attach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16], _lid: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `detach_mcast`: detaches `qp` from the group `attach_mcast` attached it to (the
    /// core's checks as there). Implement with `attach_mcast`.
    fn detach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16], _lid: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `post_send`: the kernel user's chain of send requests on `qp`, in order. On an error
    /// the layer reports the last request taken from `wrs` as the failed one (the requests
    /// before it are posted). Called in any context: must not sleep.
    fn post_send(_qp: &Qp<Self>, _wrs: &mut SendWrs<'_, Self>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `post_recv`: the kernel user's chain of receive requests on `qp` (as `post_send`).
    fn post_recv(_qp: &Qp<Self>, _wrs: &mut RecvWrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `post_srq_recv`: the kernel user's chain of receive requests on a kernel SRQ (as
    /// `post_recv`). Called in any context: must not sleep.
    fn post_srq_recv(_srq: &Srq<Self>, _wrs: &mut RecvWrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `poll_cq`: moves completions of a kernel CQ into `wc`, oldest first, until it is full
    /// or the CQ is empty. Called in any context: must not sleep.
    fn poll_cq(_cq: &Cq<Self>, _wc: &mut WcWriter<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `req_notify_cq`: arms a kernel CQ for its next (or, with `solicited`, next solicited)
    /// completion. With `report_missed`, returns whether completions may already be waiting
    /// (the caller then polls again instead of waiting for the event). Any context.
    fn req_notify_cq(_cq: &Cq<Self>, _solicited: bool, _report_missed: bool) -> Result<bool> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_ah`: an address handle for a kernel user's UD sends (ib_mad's replies, the
    /// CM's). Without `sleepable` it is called in atomic context and must not sleep.
    fn create_ah(_dev: &Device<Self>, _attr: &AhAttr, _sleepable: bool) -> Result<Self::Ah> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_srq`: a shared receive queue in `pd`, for a user context (`udata`) or a
    /// kernel user. Returns the SRQ and its number (which the core reports for an XRC SRQ:
    /// what senders name in their XRC segment). `events` is the SRQ's event sink (the
    /// driver keeps it where its interrupt handler finds the SRQ's events).
    fn create_srq(
        _pd: &Pd<Self>,
        _attr: &SrqInitAttr<'_, Self>,
        _udata: Option<&mut Udata<'_>>,
        _events: &Arc<SrqEvents>,
    ) -> Result<(Self::Srq, u32)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `modify_srq` (`ibv_modify_srq`): the attributes `mask` ([`crate::srq_attr_mask`])
    /// names: arm the limit event, resize.
    fn modify_srq(
        _srq: &Srq<Self>,
        _attr: &SrqAttr,
        _mask: u32,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `query_srq` (`ibv_query_srq`): the SRQ's size and its armed limit.
    fn query_srq(_srq: &Srq<Self>) -> Result<SrqAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The names of each port's hardware counters, in the order [`IbDriver::port_counters`]
    /// fills them. Implementing `port_counters` gives the ports their `hw_counters`.
    const PORT_COUNTERS: &'static [StatDesc] = &[];

    /// `get_hw_stats` of a port: the current value of every counter of
    /// [`IbDriver::PORT_COUNTERS`], `values[i]` for entry `i`. Runs in process context
    /// (sysfs, netlink) and may sleep.
    fn port_counters(_dev: &Device<Self>, _port: u32, _values: &mut [u64]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// `create_user_ah`: an address handle for a process's UD sends (the core resolved a
    /// RoCE destination's MAC into `attr`); `udata` takes what the provider needs to build
    /// the address vector itself.
    fn create_user_ah(
        _dev: &Device<Self>,
        _attr: &AhAttr,
        _udata: &mut Udata<'_>,
    ) -> Result<Self::Ah> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}
