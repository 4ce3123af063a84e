// SPDX-License-Identifier: GPL-2.0
//! A build-time check, not code that runs: a driver implementing every operation, whose ops
//! table is evaluated here, so that each trampoline and the `const` table of the crate are
//! instantiated (and type- and const-checked) even before a driver uses them.

use kernel::prelude::*;

use crate::{
    AhAttr,
    Cq,
    Device,
    DeviceAttr,
    DriverId,
    GidAttr,
    IbDriver,
    LinkLayer,
    Mr,
    Pd,
    PortAttr,
    PortImmutable,
    Qp,
    QpEvents,
    QpInitAttr,
    RecvWrs,
    SendWrs,
    UarKind,
    Ucontext,
    Udata,
    Vma,
    WcWriter,
    Xrcd, //
};

use kernel::sync::Arc;

struct Check;

#[vtable]
impl IbDriver for Check {
    type Data = ();
    type Ucontext = ();
    type MmapEntry = ();
    type Mw = ();
    type Pd = ();
    type Cq = ();
    type Qp = ();
    type Mr = ();
    type Ah = ();
    type Srq = ();
    type Xrcd = ();
    type Flow = ();
    type Wq = ();
    type RwqIndTable = ();

    const DRIVER_ID: DriverId = DriverId::Mlx5;
    const UVERBS_ABI_VER: u32 = 1;

    fn query_device(_dev: &Device<Self>, _attr: &mut DeviceAttr) -> Result {
        Ok(())
    }

    fn query_port(_dev: &Device<Self>, _port: u32, _attr: &mut PortAttr) -> Result {
        Ok(())
    }

    fn port_immutable(_dev: &Device<Self>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable::default())
    }

    fn link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn query_pkey(_dev: &Device<Self>, _port: u32, _index: u16) -> Result<u16> {
        Ok(0xffff)
    }

    fn add_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        Ok(())
    }

    fn del_gid(_dev: &Device<Self>, _attr: &GidAttr) -> Result {
        Ok(())
    }

    fn alloc_ucontext(_dev: &Device<Self>, _udata: &mut Udata<'_>) -> Result {
        Ok(())
    }

    fn mmap(_uctx: &Ucontext<Self>, _vma: &Vma) -> Result {
        Err(EINVAL)
    }

    fn alloc_uar(_uctx: &Ucontext<Self>, _kind: UarKind) -> Result<((), u32)> {
        Err(EINVAL)
    }

    fn alloc_mw(_pd: &Pd<Self>, _type_2: bool, _udata: &mut Udata<'_>) -> Result<((), u32)> {
        Err(EINVAL)
    }

    fn alloc_pd(_dev: &Device<Self>, _udata: Option<&mut Udata<'_>>) -> Result {
        Ok(())
    }

    fn post_send(_qp: &Qp<Self>, wrs: &mut SendWrs<'_, Self>) -> Result {
        wrs.next().map_or(Ok(()), |_| Err(EINVAL))
    }

    fn post_recv(_qp: &Qp<Self>, wrs: &mut RecvWrs<'_>) -> Result {
        wrs.next().map_or(Ok(()), |_| Err(EINVAL))
    }

    fn poll_cq(_cq: &Cq<Self>, _wc: &mut WcWriter<'_>) -> Result {
        Ok(())
    }

    fn req_notify_cq(_cq: &Cq<Self>, _solicited: bool, _report_missed: bool) -> Result<bool> {
        Ok(false)
    }

    fn resize_cq(_cq: &Cq<Self>, _cqe: u32, _udata: &mut Udata<'_>) -> Result<u32> {
        Err(EINVAL)
    }

    fn modify_cq(_cq: &Cq<Self>, _count: u16, _period: u16) -> Result {
        Err(EINVAL)
    }

    fn create_ah(_dev: &Device<Self>, _attr: &AhAttr, _sleepable: bool) -> Result {
        Ok(())
    }

    fn alloc_mr(_pd: &Pd<Self>, _max_num_sg: u32) -> Result<((), u32, u32)> {
        Err(EINVAL)
    }

    fn reg_user_mr_dmabuf(
        _pd: &Pd<Self>,
        _offset: u64,
        _len: u64,
        _iova: u64,
        _fd: i32,
        _access: crate::Access,
        _udata: &mut Udata<'_>,
    ) -> Result<((), u32, u32)> {
        Err(EINVAL)
    }

    fn rereg_user_mr(
        _mr: &Mr<Self>,
        _rereg: &crate::Rereg,
        _pd: &Pd<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<Option<((), u32, u32)>> {
        Err(EINVAL)
    }

    fn mr_map_begin(_mr: &Mr<Self>, _page_size: u32) -> Result {
        Err(EINVAL)
    }

    fn mr_set_page(_mr: &Mr<Self>, _addr: u64) -> Result {
        Err(EINVAL)
    }

    fn attach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16], _lid: u16) -> Result {
        Ok(())
    }

    fn detach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16], _lid: u16) -> Result {
        Ok(())
    }

    fn alloc_xrcd(_dev: &Device<Self>) -> Result {
        Ok(())
    }

    fn create_xrc_tgt_qp(
        _xrcd: &Xrcd<Self>,
        _attr: &QpInitAttr<'_, Self>,
        _events: &Arc<QpEvents>,
    ) -> Result<((), u32)> {
        Err(EINVAL)
    }

    fn create_srq(
        _pd: &Pd<Self>,
        _attr: &crate::SrqInitAttr<'_, Self>,
        _udata: Option<&mut Udata<'_>>,
        _events: &Arc<crate::SrqEvents>,
    ) -> Result<((), u32)> {
        Err(EINVAL)
    }

    fn modify_srq(
        _srq: &crate::Srq<Self>,
        _attr: &crate::SrqAttr,
        _mask: u32,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        Err(EINVAL)
    }

    fn query_srq(_srq: &crate::Srq<Self>) -> Result<crate::SrqAttr> {
        Err(EINVAL)
    }
}

// The table, evaluated at build time.
const _: ksys::ib_device_ops = crate::ops::OpsTable::<Check>::OPS;
