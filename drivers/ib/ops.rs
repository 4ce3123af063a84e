// SPDX-License-Identifier: GPL-2.0
//! The `ib_device_ops` table of an [`IbDriver`] (`OpsTable<T>`), and the trampolines that
//! turn the core's pointers into the layer's types and call the driver, one file per kind
//! of object:
//!
//! - `ops/device.rs`: device and port queries, the GID table, the port's hardware counters;
//! - `ops/ucontext.rs`: user contexts and their mappings;
//! - `ops/domain.rs`: protection and XRC domains;
//! - `ops/cq.rs`: completion queues (control);
//! - `ops/mr.rs`: memory regions;
//! - `ops/qp.rs`: queue pairs, multicast attachment and shared receive queues (control);
//! - `ops/ah.rs`: address handles;
//! - `ops/flow.rs`: steering rules;
//! - `ops/wq.rs`: receive work queues and their indirection tables;
//! - `ops/datapath.rs`: the kernel data path (post, poll, arm).
//!
//! Each file adds its trampolines to `OpsTable<T>` (`pub(super)`, for the table below).
//! The driver's side, the [`IbDriver`] trait, is in `driver.rs`.

use core::marker::PhantomData;

use kernel::ThisModule;

use ksys::op;

use crate::{
    driver::IbDriver,
    object::{
        Ah,
        Cq,
        Mw,
        Pd,
        Qp,
        RwqIndTable,
        Srq,
        Ucontext,
        Xrcd, //
    },
};

mod ah;
mod cq;
mod datapath;
mod device;
mod domain;
mod flow;
mod mr;
mod qp;
mod ucontext;
mod wq;

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
        query_ucontext: op!(T::HAS_QUERY_UCONTEXT, Self::query_ucontext),
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
        alloc_mw: op!(T::HAS_ALLOC_MW, Self::alloc_mw),
        dealloc_mw: op!(T::HAS_ALLOC_MW, Self::dealloc_mw),
        map_mr_sg: op!(T::HAS_MR_MAP_BEGIN, Self::map_mr_sg),
        create_qp: op!(T::HAS_CREATE_QP, Self::create_qp),
        destroy_qp: op!(T::HAS_CREATE_QP, Self::destroy_qp),
        modify_qp: op!(T::HAS_MODIFY_QP, Self::modify_qp),
        query_qp: op!(T::HAS_QUERY_QP, Self::query_qp),
        attach_mcast: op!(T::HAS_ATTACH_MCAST, Self::attach_mcast),
        create_flow: op!(T::HAS_CREATE_FLOW, Self::create_flow),
        create_wq: op!(T::HAS_CREATE_WQ, Self::create_wq),
        modify_wq: op!(T::HAS_MODIFY_WQ, Self::modify_wq),
        destroy_wq: op!(T::HAS_CREATE_WQ, Self::destroy_wq),
        create_rwq_ind_table: op!(T::HAS_CREATE_RWQ_IND_TABLE, Self::create_rwq_ind_table),
        destroy_rwq_ind_table: op!(T::HAS_CREATE_RWQ_IND_TABLE, Self::destroy_rwq_ind_table),
        size_ib_rwq_ind_table: RwqIndTable::<T>::SIZE,
        destroy_flow: op!(T::HAS_CREATE_FLOW, Self::destroy_flow),
        detach_mcast: op!(T::HAS_DETACH_MCAST, Self::detach_mcast),
        size_ib_ucontext: Ucontext::<T>::SIZE,
        size_ib_pd: Pd::<T>::SIZE,
        create_user_ah: op!(T::HAS_CREATE_USER_AH, Self::create_user_ah),
        create_ah: op!(T::HAS_CREATE_AH, Self::create_ah),
        destroy_ah: op!(T::HAS_CREATE_USER_AH || T::HAS_CREATE_AH, Self::destroy_ah),
        post_send: op!(T::HAS_POST_SEND, Self::post_send),
        post_recv: op!(T::HAS_POST_RECV, Self::post_recv),
        post_srq_recv: op!(T::HAS_POST_SRQ_RECV, Self::post_srq_recv),
        poll_cq: op!(T::HAS_POLL_CQ, Self::poll_cq),
        req_notify_cq: op!(T::HAS_REQ_NOTIFY_CQ, Self::req_notify_cq),
        create_srq: op!(T::HAS_CREATE_SRQ, Self::create_srq),
        destroy_srq: op!(T::HAS_CREATE_SRQ, Self::destroy_srq),
        modify_srq: op!(T::HAS_MODIFY_SRQ, Self::modify_srq),
        query_srq: op!(T::HAS_QUERY_SRQ, Self::query_srq),
        alloc_hw_port_stats: op!(T::HAS_PORT_COUNTERS, Self::alloc_hw_port_stats),
        get_hw_stats: op!(T::HAS_PORT_COUNTERS, Self::get_hw_stats),
        alloc_xrcd: op!(T::HAS_ALLOC_XRCD, Self::alloc_xrcd),
        dealloc_xrcd: op!(T::HAS_ALLOC_XRCD, Self::dealloc_xrcd),
        size_ib_xrcd: Xrcd::<T>::SIZE,
        size_ib_mw: Mw::<T>::SIZE,
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
        if T::HAS_ALLOC_UAR {
            ops.mmap_free = Some(Self::mmap_free);
        }
        ops
    }
}
