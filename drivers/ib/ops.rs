// SPDX-License-Identifier: GPL-2.0
//! [`IbDriver`]: a driver's ib_device operations, and the `ib_device_ops` table built from
//! them with the trampolines that turn the core's pointers into the layer's types.

use core::marker::PhantomData;

use kernel::{
    build_error,
    error::{
        from_result,
        VTABLE_DEFAULT_ERROR, //
    },
    ffi::{
        c_int,
        c_uint,
        c_void, //
    },
    prelude::*,
    ThisModule,
};

use kernel::sync::Arc;

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
        QpEvents, //
    },
    gid::GidAttr,
    mmap::Vma,
    object::{
        Ah,
        Cq,
        Mr,
        Pd,
        Qp,
        Srq,
        Ucontext,
        Xrcd, //
    },
    qp_attr::{
        AhAttr,
        CqInitAttr,
        QpAttr,
        QpInitAttr,
        SrqInitAttr, //
    },
    stats::{
        StatDesc,
        LIFESPAN_MS, //
    },
    udata::Udata,
    umem::{
        Access,
        Rereg,
        ReregFlags, //
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

    /// `mmap`: a process maps part of the device through its context (`vma.pgoff()` says
    /// what, in the provider's encoding).
    fn mmap(_uctx: &Ucontext<Self>, _vma: &Vma) -> Result {
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
    /// the new PD with [`ReregFlags::PD`], `mr`'s own otherwise. Returns a new MR, its lkey
    /// and rkey: uverbs swaps it in under the same handle and deregisters `mr` (the layer
    /// sets the new `ib_mr`'s address and length; changing an MR in place is not offered).
    /// On an error `mr` stays as it was.
    fn rereg_user_mr(
        _mr: &Mr<Self>,
        _rereg: &Rereg,
        _pd: &Pd<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<(Self::Mr, u32, u32)> {
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
    /// what senders name in their XRC segment).
    fn create_srq(
        _pd: &Pd<Self>,
        _attr: &SrqInitAttr<'_, Self>,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result<(Self::Srq, u32)> {
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

/// Expands to `Some(callback)` if the driver implements it, `None` otherwise.
macro_rules! op {
    ($has:expr, $f:expr) => {
        if $has {
            Some($f)
        } else {
            None
        }
    };
}

/// The `ib_device_ops` of `T` and its trampolines.
pub(crate) struct OpsTable<T>(PhantomData<T>);

impl<T: IbDriver> OpsTable<T> {
    pub(crate) const OPS: ksys::ib_device_ops = ksys::ib_device_ops {
        driver_id: T::DRIVER_ID as ksys::rdma_driver_id,
        uverbs_abi_ver: T::UVERBS_ABI_VER,
        query_device: Some(Self::query_device),
        query_port: Some(Self::query_port),
        get_port_immutable: Some(Self::get_port_immutable),
        get_link_layer: op!(T::HAS_LINK_LAYER, Self::get_link_layer),
        query_pkey: op!(T::HAS_QUERY_PKEY, Self::query_pkey),
        add_gid: op!(T::HAS_ADD_GID, Self::add_gid),
        del_gid: op!(T::HAS_DEL_GID, Self::del_gid),
        alloc_ucontext: op!(T::HAS_ALLOC_UCONTEXT, Self::alloc_ucontext),
        dealloc_ucontext: op!(T::HAS_ALLOC_UCONTEXT, Self::dealloc_ucontext),
        disassociate_ucontext: op!(T::HAS_ALLOC_UCONTEXT, Self::disassociate_ucontext),
        mmap: op!(T::HAS_MMAP, Self::mmap),
        alloc_pd: op!(T::HAS_ALLOC_PD, Self::alloc_pd),
        dealloc_pd: op!(T::HAS_ALLOC_PD, Self::dealloc_pd),
        create_cq: op!(T::HAS_CREATE_CQ, Self::create_cq),
        destroy_cq: op!(T::HAS_CREATE_CQ, Self::destroy_cq),
        resize_user_cq: op!(T::HAS_RESIZE_CQ, Self::resize_user_cq),
        modify_cq: op!(T::HAS_MODIFY_CQ, Self::modify_cq),
        reg_user_mr: op!(T::HAS_REG_USER_MR, Self::reg_user_mr),
        reg_user_mr_dmabuf: op!(T::HAS_REG_USER_MR_DMABUF, Self::reg_user_mr_dmabuf),
        rereg_user_mr: op!(T::HAS_REREG_USER_MR, Self::rereg_user_mr),
        get_dma_mr: op!(T::HAS_GET_DMA_MR, Self::get_dma_mr),
        dereg_mr: op!(
            T::HAS_REG_USER_MR || T::HAS_REG_USER_MR_DMABUF || T::HAS_GET_DMA_MR || T::HAS_ALLOC_MR,
            Self::dereg_mr
        ),
        alloc_mr: op!(T::HAS_ALLOC_MR, Self::alloc_mr),
        map_mr_sg: op!(T::HAS_MR_MAP_BEGIN, Self::map_mr_sg),
        create_qp: op!(T::HAS_CREATE_QP, Self::create_qp),
        destroy_qp: op!(T::HAS_CREATE_QP, Self::destroy_qp),
        modify_qp: op!(T::HAS_MODIFY_QP, Self::modify_qp),
        query_qp: op!(T::HAS_QUERY_QP, Self::query_qp),
        attach_mcast: op!(T::HAS_ATTACH_MCAST, Self::attach_mcast),
        detach_mcast: op!(T::HAS_DETACH_MCAST, Self::detach_mcast),
        size_ib_ucontext: Ucontext::<T>::SIZE,
        size_ib_pd: Pd::<T>::SIZE,
        create_user_ah: op!(T::HAS_CREATE_USER_AH, Self::create_user_ah),
        create_ah: op!(T::HAS_CREATE_AH, Self::create_ah),
        destroy_ah: op!(T::HAS_CREATE_USER_AH || T::HAS_CREATE_AH, Self::destroy_ah),
        post_send: op!(T::HAS_POST_SEND, Self::post_send),
        post_recv: op!(T::HAS_POST_RECV, Self::post_recv),
        poll_cq: op!(T::HAS_POLL_CQ, Self::poll_cq),
        req_notify_cq: op!(T::HAS_REQ_NOTIFY_CQ, Self::req_notify_cq),
        create_srq: op!(T::HAS_CREATE_SRQ, Self::create_srq),
        destroy_srq: op!(T::HAS_CREATE_SRQ, Self::destroy_srq),
        alloc_hw_port_stats: op!(T::HAS_PORT_COUNTERS, Self::alloc_hw_port_stats),
        get_hw_stats: op!(T::HAS_PORT_COUNTERS, Self::get_hw_stats),
        alloc_xrcd: op!(T::HAS_ALLOC_XRCD, Self::alloc_xrcd),
        dealloc_xrcd: op!(T::HAS_ALLOC_XRCD, Self::dealloc_xrcd),
        size_ib_xrcd: Xrcd::<T>::SIZE,
        size_ib_srq: Srq::<T>::SIZE,
        size_ib_ah: Ah::<T>::SIZE,
        size_ib_cq: Cq::<T>::SIZE,
        size_ib_qp: Qp::<T>::SIZE,
        ..pin_init::zeroed()
    };

    /// The table for a device of `module` (`ib_set_device_ops()` copies it; `owner` makes
    /// uverbs hold the module while a user context is open).
    pub(crate) fn build(module: &'static ThisModule) -> ksys::ib_device_ops {
        let mut ops = Self::OPS;
        ops.owner = module.as_ptr();
        ops
    }

    /// # Safety
    ///
    /// The core calls it with a device registered by `Registration<T>` and a zeroed or
    /// cached attribute struct.
    unsafe extern "C" fn query_device(
        dev: *mut ksys::ib_device,
        attr: *mut ksys::ib_device_attr,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: A device of `Registration<T>`, live for the op.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let mut a = DeviceAttr::default();
            T::query_device(dev, &mut a)?;
            // SAFETY: The core passes a valid struct only this op writes.
            a.write_to(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `query_device`; `attr` is zeroed by the core.
    unsafe extern "C" fn query_port(
        dev: *mut ksys::ib_device,
        port: u32,
        attr: *mut ksys::ib_port_attr,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let mut a = PortAttr::default();
            T::query_port(dev, port, &mut a)?;
            // SAFETY: As in `query_device`.
            a.write_to(unsafe { &mut *attr });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `query_device`.
    unsafe extern "C" fn get_port_immutable(
        dev: *mut ksys::ib_device,
        port: u32,
        imm: *mut ksys::ib_port_immutable,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let p = T::port_immutable(dev, port)?;
            // SAFETY: As in `query_device`.
            p.write_to(unsafe { &mut *imm });
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// As for `query_device`.
    unsafe extern "C" fn get_link_layer(
        dev: *mut ksys::ib_device,
        port: u32,
    ) -> ksys::rdma_link_layer {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        T::link_layer(dev, port) as ksys::rdma_link_layer
    }

    /// # Safety
    ///
    /// As for `query_device`; `pkey` is writable.
    unsafe extern "C" fn query_pkey(
        dev: *mut ksys::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        from_result(|| {
            let k = T::query_pkey(dev, port, index)?;
            // SAFETY: The core passes a writable `u16`.
            unsafe { *pkey = k };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The GID cache calls it with an entry of a device registered by `Registration<T>`.
    unsafe extern "C" fn add_gid(attr: *const ksys::ib_gid_attr, _ctx: *mut *mut c_void) -> c_int {
        // SAFETY: The entry is valid for the op, its device is ours and live.
        let (dev, attr) = unsafe {
            (
                Device::<T>::from_raw((*attr).device),
                GidAttr::from_raw(attr),
            )
        };
        from_result(|| T::add_gid(dev, attr).map(|()| 0))
    }

    /// # Safety
    ///
    /// As for `add_gid`.
    unsafe extern "C" fn del_gid(attr: *const ksys::ib_gid_attr, _ctx: *mut *mut c_void) -> c_int {
        // SAFETY: As in `add_gid`.
        let (dev, attr) = unsafe {
            (
                Device::<T>::from_raw((*attr).device),
                GidAttr::from_raw(attr),
            )
        };
        from_result(|| T::del_gid(dev, attr).map(|()| 0))
    }

    /// # Safety
    ///
    /// uverbs calls it with a freshly allocated container of `size_ib_ucontext` bytes whose
    /// `device` is ours, and the call's udata.
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut ksys::ib_ucontext,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        from_result(|| {
            let data = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: The fresh container of `Ucontext::<T>::SIZE` bytes.
            unsafe { Ucontext::<T>::init(uctx, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// uverbs calls it once for a context `alloc_ucontext` initialised, after every object
    /// and mapping of the context is gone.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut ksys::ib_ucontext) {
        // SAFETY: Initialised by `alloc_ucontext`, destroyed once.
        unsafe { Ucontext::<T>::destroy(uctx) };
    }

    /// `disassociate_ucontext`: the device is going away while a process still has the
    /// context open. Nothing to do here: uverbs destroys the context's objects (their
    /// destroy ops drop them), zaps the mappings made with `rdma_user_mmap_io()` and then
    /// deallocates the context, all before unregistration returns. Having the op lets
    /// unregistration go ahead instead of waiting for every process to close the device (and
    /// uverbs then does not pin the module while a context is open).
    ///
    /// # Safety
    ///
    /// uverbs calls it with a live context of ours.
    unsafe extern "C" fn disassociate_ucontext(_uctx: *mut ksys::ib_ucontext) {}

    /// # Safety
    ///
    /// uverbs calls it with a live context of ours and the area under the mmap lock.
    unsafe extern "C" fn mmap(
        uctx: *mut ksys::ib_ucontext,
        vma: *mut ksys::vm_area_struct,
    ) -> c_int {
        // SAFETY: A context initialised by `alloc_ucontext`, live during the op.
        let uctx = unsafe { Ucontext::<T>::from_raw(uctx) };
        // SAFETY: The area of this op.
        let vma = unsafe { Vma::from_raw(vma) };
        from_result(|| T::mmap(uctx, vma).map(|()| 0))
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_pd` bytes whose `device` is ours;
    /// `udata` is NULL for a kernel PD.
    unsafe extern "C" fn alloc_pd(pd: *mut ksys::ib_pd, udata: *mut ksys::ib_udata) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw((*pd).device) };
        let mut udata = if udata.is_null() {
            None
        } else {
            // SAFETY: The core's udata for this call.
            Some(unsafe { Udata::from_raw(udata) })
        };
        from_result(|| {
            let data = T::alloc_pd(dev, udata.as_mut())?;
            // SAFETY: The fresh container of `Pd::<T>::SIZE` bytes.
            unsafe { Pd::<T>::init(pd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a PD `alloc_pd` initialised, with no object left on it.
    unsafe extern "C" fn dealloc_pd(pd: *mut ksys::ib_pd, _udata: *mut ksys::ib_udata) -> c_int {
        // SAFETY: Initialised by `alloc_pd`, destroyed once.
        unsafe { Pd::<T>::destroy(pd) };
        0
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_cq` bytes whose `device` is
    /// ours, valid attributes and, for a user CQ, the call's attribute bundle.
    unsafe extern "C" fn create_cq(
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
        let mut udata = if udata.is_null() {
            None
        } else {
            // SAFETY: The core's udata for this call.
            Some(unsafe { Udata::from_raw(udata) })
        };
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
    unsafe extern "C" fn destroy_cq(cq: *mut ksys::ib_cq, _udata: *mut ksys::ib_udata) -> c_int {
        // SAFETY: Initialised by `create_cq`, destroyed once.
        unsafe { Cq::<T>::destroy(cq) };
        0
    }

    /// # Safety
    ///
    /// uverbs calls it (`ib_uverbs_resize_cq`) with a live user CQ of ours and the call's
    /// driver udata.
    unsafe extern "C" fn resize_user_cq(
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
    unsafe extern "C" fn modify_cq(cq: *mut ksys::ib_cq, cq_count: u16, cq_period: u16) -> c_int {
        // SAFETY: Initialised by `create_cq`, live during the call.
        let ib_cq = unsafe { Cq::<T>::from_raw(cq) };
        from_result(|| T::modify_cq(ib_cq, cq_count, cq_period).map(|()| 0))
    }

    /// # Safety
    ///
    /// uverbs calls it with a live PD of ours and the call's udata.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn reg_user_mr(
        pd: *mut ksys::ib_pd,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: c_int,
        _dmah: *mut ksys::ib_dmah,
        udata: *mut ksys::ib_udata,
    ) -> *mut ksys::ib_mr {
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        let r = T::reg_user_mr(
            pd,
            start,
            length,
            virt_addr,
            Access(access as u32),
            &mut udata,
        )
        .and_then(|(mr, lkey, rkey)| Mr::<T>::into_raw(mr, lkey, rkey));
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// uverbs calls it with a live PD of ours and the call's attribute bundle.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn reg_user_mr_dmabuf(
        pd: *mut ksys::ib_pd,
        offset: u64,
        length: u64,
        virt_addr: u64,
        fd: c_int,
        access: c_int,
        _dmah: *mut ksys::ib_dmah,
        attrs: *mut ksys::uverbs_attr_bundle,
    ) -> *mut ksys::ib_mr {
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: The call's bundle; its driver udata lives as long.
        let mut udata = unsafe { Udata::from_raw(ksys::ib_attrs_udata(attrs)) };
        let r = T::reg_user_mr_dmabuf(
            pd,
            offset,
            length,
            virt_addr,
            fd,
            Access(access as u32),
            &mut udata,
        )
        .and_then(|(mr, lkey, rkey)| {
            let p = Mr::<T>::into_raw(mr, lkey, rkey)?;
            // SAFETY: The fresh `ib_mr` the core does not see yet (unlike `reg_user_mr`,
            // uverbs does not set the range here).
            unsafe { ksys::ib_mr_set_range(p, virt_addr, length) };
            Ok(p)
        });
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// uverbs calls it, holding the MR's handle for writing, with a live user MR of ours, a
    /// live PD of ours (the MR's own without `IB_MR_REREG_PD`) and the call's udata.
    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn rereg_user_mr(
        mr: *mut ksys::ib_mr,
        flags: c_int,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: c_int,
        pd: *mut ksys::ib_pd,
        udata: *mut ksys::ib_udata,
    ) -> *mut ksys::ib_mr {
        // SAFETY: Made by `Mr::into_raw`, live during the call.
        let m = unsafe { Mr::<T>::from_raw(mr) };
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        let rereg = Rereg::new(
            ReregFlags(flags as u32),
            start,
            length,
            virt_addr,
            Access(access as u32),
        );
        let r = T::rereg_user_mr(m, &rereg, pd, &mut udata).and_then(|(new, lkey, rkey)| {
            let (iova, len) = match rereg.trans() {
                Some((_, len, iova)) => (iova, len),
                None => (m.iova(), m.length()),
            };
            let p = Mr::<T>::into_raw(new, lkey, rkey)?;
            // SAFETY: The fresh `ib_mr` the core does not see yet.
            unsafe { ksys::ib_mr_set_range(p, iova, len) };
            Ok(p)
        });
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// The core calls it with a live PD of ours.
    unsafe extern "C" fn get_dma_mr(pd: *mut ksys::ib_pd, access: c_int) -> *mut ksys::ib_mr {
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        let r = T::get_dma_mr(pd, Access(access as u32))
            .and_then(|(mr, lkey, rkey)| Mr::<T>::into_raw(mr, lkey, rkey));
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// The core calls it with a live PD of ours.
    unsafe extern "C" fn alloc_mr(
        pd: *mut ksys::ib_pd,
        mr_type: ksys::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut ksys::ib_mr {
        if mr_type != ksys::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return crate::eopnotsupp().to_ptr();
        }
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        let r = T::alloc_mr(pd, max_num_sg)
            .and_then(|(mr, lkey, rkey)| Mr::<T>::into_raw(mr, lkey, rkey));
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// The user calls it (`ib_map_mr_sg`) with a live MR of ours from `alloc_mr` and a
    /// DMA-mapped scatter list of `n` entries.
    unsafe extern "C" fn map_mr_sg(
        mr: *mut ksys::ib_mr,
        sg: *mut kernel::bindings::scatterlist,
        n: c_int,
        offset: *mut core::ffi::c_uint,
    ) -> c_int {
        // SAFETY: Made by `Mr::into_raw`, live during the call.
        let m = unsafe { Mr::<T>::from_raw(mr) };
        if let Err(e) = T::mr_map_begin(m, m.page_size()) {
            return e.to_errno();
        }
        // SAFETY: The caller's MR and list; `set_page` is called with this MR only.
        unsafe { ksys::ib_sg_to_pages(mr, sg, n, offset, Some(Self::set_page)) }
    }

    /// # Safety
    ///
    /// `ib_sg_to_pages` calls it with the MR `map_mr_sg` passed.
    unsafe extern "C" fn set_page(mr: *mut ksys::ib_mr, addr: u64) -> c_int {
        // SAFETY: As in `map_mr_sg`.
        let m = unsafe { Mr::<T>::from_raw(mr) };
        match T::mr_set_page(m, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// The core calls it once for an MR `reg_user_mr`/`get_dma_mr`/`alloc_mr` returned.
    unsafe extern "C" fn dereg_mr(mr: *mut ksys::ib_mr, _udata: *mut ksys::ib_udata) -> c_int {
        // SAFETY: Made by `Mr::into_raw`, not used after.
        unsafe { Mr::<T>::free(mr) };
        0
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_qp` bytes whose `device`, `pd`
    /// and CQs are set (ours, live; an XRC target QP has no PD and no CQs, but an XRC
    /// domain of ours in the attributes), valid attributes and the call's udata (NULL for a
    /// kernel or XRC target QP).
    unsafe extern "C" fn create_qp(
        qp: *mut ksys::ib_qp,
        attr: *mut ksys::ib_qp_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The attributes of this call; its CQs, SRQ and XRC domain are ours and live.
        let attr = unsafe { QpInitAttr::<T>::from_raw(attr) };
        // SAFETY: The core sets `pd` (NULL or a live PD of ours) before the call.
        let pd = unsafe { ksys::ib_qp_pd(qp) };
        let mut udata = if udata.is_null() {
            None
        } else {
            // SAFETY: The core's udata for this call.
            Some(unsafe { Udata::from_raw(udata) })
        };
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
    unsafe extern "C" fn destroy_qp(qp: *mut ksys::ib_qp, _udata: *mut ksys::ib_udata) -> c_int {
        // SAFETY: Initialised by `create_qp`, destroyed once.
        unsafe { Qp::<T>::destroy(qp) };
        0
    }

    /// # Safety
    ///
    /// The core calls it with a live QP of ours, valid attributes and the call's udata
    /// (NULL for a kernel caller).
    unsafe extern "C" fn modify_qp(
        qp: *mut ksys::ib_qp,
        attr: *mut ksys::ib_qp_attr,
        mask: c_int,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        let mut udata = if udata.is_null() {
            None
        } else {
            // SAFETY: The core's udata for this call.
            Some(unsafe { Udata::from_raw(udata) })
        };
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
    unsafe extern "C" fn query_qp(
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
    unsafe extern "C" fn attach_mcast(
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
    unsafe extern "C" fn detach_mcast(
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
    /// uverbs calls it with a fresh container of `size_ib_ah` bytes whose `device` is ours,
    /// valid attributes (their GID entry held) and the call's udata.
    unsafe extern "C" fn create_user_ah(
        ah: *mut ksys::ib_ah,
        init: *mut ksys::rdma_ah_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw(ksys::ib_ah_device(ah)) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        from_result(|| {
            // SAFETY: Valid attributes of this call.
            let attr = unsafe { AhAttr::from_raw(&*(*init).ah_attr) };
            let data = T::create_user_ah(dev, &attr, &mut udata)?;
            // SAFETY: The fresh container of `Ah::<T>::SIZE` bytes.
            unsafe { Ah::<T>::init(ah, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_ah` bytes whose `device` is ours
    /// and valid attributes (their GID entry held); `udata` is not used (user AHs come
    /// through `create_user_ah`).
    unsafe extern "C" fn create_ah(
        ah: *mut ksys::ib_ah,
        init: *mut ksys::rdma_ah_init_attr,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw(ksys::ib_ah_device(ah)) };
        from_result(|| {
            // SAFETY: Valid attributes of this call.
            let (attr, flags) = unsafe { (AhAttr::from_raw(&*(*init).ah_attr), (*init).flags) };
            let sleepable = flags & ksys::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0;
            let data = T::create_ah(dev, &attr, sleepable)?;
            // SAFETY: The fresh container of `Ah::<T>::SIZE` bytes.
            unsafe { Ah::<T>::init(ah, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The poster calls it with a live QP of ours and a chain of requests valid for the call;
    /// `bad` is writable.
    unsafe extern "C" fn post_send(
        qp: *mut ksys::ib_qp,
        wr: *const ksys::ib_send_wr,
        bad: *mut *const ksys::ib_send_wr,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The chain is valid for the call.
        let mut wrs = unsafe { SendWrs::<T>::new(wr) };
        match T::post_send(qp, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad.is_null() {
                    // SAFETY: The caller's writable pointer.
                    unsafe { *bad = wrs.failed() };
                }
                e.to_errno()
            }
        }
    }

    /// # Safety
    ///
    /// As for `post_send`.
    unsafe extern "C" fn post_recv(
        qp: *mut ksys::ib_qp,
        wr: *const ksys::ib_recv_wr,
        bad: *mut *const ksys::ib_recv_wr,
    ) -> c_int {
        // SAFETY: Initialised by `create_qp`, live during the call.
        let qp = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The chain is valid for the call.
        let mut wrs = unsafe { RecvWrs::new(wr) };
        match T::post_recv(qp, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad.is_null() {
                    // SAFETY: The caller's writable pointer.
                    unsafe { *bad = wrs.failed() };
                }
                e.to_errno()
            }
        }
    }

    /// # Safety
    ///
    /// The core calls it with a live kernel CQ of ours and an array of `n` writable entries.
    unsafe extern "C" fn poll_cq(cq: *mut ksys::ib_cq, n: c_int, wc: *mut ksys::ib_wc) -> c_int {
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
    unsafe extern "C" fn req_notify_cq(
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

    /// # Safety
    ///
    /// The core calls it once for an AH `create_user_ah` or `create_ah` initialised.
    unsafe extern "C" fn destroy_ah(ah: *mut ksys::ib_ah, _flags: u32) -> c_int {
        // SAFETY: Initialised by `create_user_ah` or `create_ah`, destroyed once.
        unsafe { Ah::<T>::destroy(ah) };
        0
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_srq` bytes whose `device` and
    /// `pd` are set (ours, live), valid attributes and the call's udata (NULL for a kernel
    /// SRQ).
    unsafe extern "C" fn create_srq(
        srq: *mut ksys::ib_srq,
        attr: *mut ksys::ib_srq_init_attr,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `pd` to a live PD of ours.
        let pd = unsafe { Pd::<T>::from_raw(ksys::ib_srq_pd(srq)) };
        // SAFETY: Valid for the call; an XRC SRQ's domain and CQ are ours and live.
        let attr = unsafe { SrqInitAttr::<T>::from_raw(&*attr) };
        let mut udata = if udata.is_null() {
            None
        } else {
            // SAFETY: The core's udata for this call.
            Some(unsafe { Udata::from_raw(udata) })
        };
        from_result(|| {
            let (data, srqn) = T::create_srq(pd, &attr, udata.as_mut())?;
            // SAFETY: The fresh container of `Srq::<T>::SIZE` bytes; `set_xrc_srq_num` only
            // for an XRC SRQ.
            unsafe {
                Srq::<T>::init(srq, data);
                if attr.srq_type == crate::SrqType::Xrc {
                    Srq::<T>::set_xrc_srq_num(srq, srqn);
                }
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it with a fresh container of `size_ib_xrcd` bytes whose `device` is
    /// ours.
    unsafe extern "C" fn alloc_xrcd(
        xrcd: *mut ksys::ib_xrcd,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `device` to our registered device.
        let dev = unsafe { Device::<T>::from_raw((*xrcd).device) };
        from_result(|| {
            let data = T::alloc_xrcd(dev)?;
            // SAFETY: The fresh container of `Xrcd::<T>::SIZE` bytes.
            unsafe { Xrcd::<T>::init(xrcd, data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a domain `alloc_xrcd` initialised, when no QP or SRQ uses
    /// it any more.
    unsafe extern "C" fn dealloc_xrcd(
        xrcd: *mut ksys::ib_xrcd,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Initialised by `alloc_xrcd`, destroyed once.
        unsafe { Xrcd::<T>::destroy(xrcd) };
        0
    }

    /// # Safety
    ///
    /// The core calls it once for an SRQ `create_srq` initialised, with no QP left on it.
    unsafe extern "C" fn destroy_srq(srq: *mut ksys::ib_srq, _udata: *mut ksys::ib_udata) -> c_int {
        // SAFETY: Initialised by `create_srq`, destroyed once.
        unsafe { Srq::<T>::destroy(srq) };
        0
    }

    /// # Safety
    ///
    /// As for `query_device`.
    unsafe extern "C" fn alloc_hw_port_stats(
        _dev: *mut ksys::ib_device,
        _port: u32,
    ) -> *mut ksys::rdma_hw_stats {
        let table = T::PORT_COUNTERS;
        let Ok(n) = c_int::try_from(table.len()) else {
            return core::ptr::null_mut();
        };
        // SAFETY: `table` is `'static` (the core keeps pointing to it while the stats
        // exist) and holds `n` descriptors.
        unsafe {
            ksys::rdma_alloc_hw_stats_struct(
                StatDesc::as_raw(table),
                n,
                kernel::time::msecs_to_jiffies(LIFESPAN_MS),
            )
        }
    }

    /// # Safety
    ///
    /// As for `query_device`; `stats` is one `alloc_hw_port_stats` returned, its lock held
    /// by the core.
    unsafe extern "C" fn get_hw_stats(
        dev: *mut ksys::ib_device,
        stats: *mut ksys::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        // SAFETY: The core passes the stats of this port under their lock: nothing else
        // touches them during the call.
        let stats = unsafe { &mut *stats };
        let n = usize::try_from(stats.num_counters)
            .unwrap_or(0)
            .min(T::PORT_COUNTERS.len());
        // SAFETY: `value` has `num_counters` elements (allocated by
        // `rdma_alloc_hw_stats_struct()` for that many), `n` is no more.
        let values = unsafe { stats.value.as_mut_slice(n) };
        // All counters are read at once, whichever `index` the core asked for.
        from_result(|| {
            T::port_counters(dev, port, values)?;
            Ok(n as c_int)
        })
    }
}
