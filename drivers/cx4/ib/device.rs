// SPDX-License-Identifier: GPL-2.0
//! The ib device's operations (mlx5_ib main.c): attributes from the card's capabilities,
//! the port from the netdev (ACTIVE while it is running with carrier, its MTU), RoCE v1 and
//! v2 GIDs into the card's RoCE address table, user contexts and PDs, and the kernel data
//! path (post, poll, arm) that makes ib_core attach ib_mad, the CM and the ULPs.

use cx4_hw::roce::roce_version;
use ib::{
    Access,
    AhAttr,
    AtomicCap,
    CqEvents,
    CqInitAttr,
    Device,
    DeviceAttr,
    DriverId,
    GidAttr,
    LinkLayer,
    Mtu,
    PhysState,
    PortAttr,
    PortImmutable,
    PortState,
    QpAttr,
    QpEvents,
    QpInitAttr,
    RecvWrs,
    SendWrs,
    SrqAttr,
    SrqEvents,
    SrqInitAttr,
    Udata,
    WcWriter, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    caps::Caps,
    ib::{
        abi::{
            self,
            AllocPdResp,
            CreateAhResp, //
        },
        ah::IbAh,
        counters,
        cq::IbCq,
        flow::IbFlow,
        gid::{
            self,
            RoceAddr, //
        },
        mcg,
        mr::{
            IbMr,
            MAX_FAST_REG_PAGES, //
        },
        mw::IbMw,
        qp::IbQp,
        srq::IbSrq,
        ucontext::{
            DynUar,
            Ucontext, //
        },
        wq::{
            IbRwqIndTable,
            IbWq, //
        },
        xrcd::IbXrcd,
        IbShared, //
    },
    pd::Pd, //
};

/// The Mellanox vendor ID RDMA devices report (the IEEE OUI, not the PCI vendor ID).
const VENDOR_ID: u32 = 0x02c9;
/// The only P_Key of a RoCE port: the default full-membership key.
const DEFAULT_PKEY: u16 = 0xffff;
/// Send WQE segments (ctrl, remote address, data), 16 bytes each (mlx5_ib `max_sq_sg`).
const WQE_SEG: u32 = 16;
/// The longest CQ moderation period, µs (`cq_period` is 12 bits; `MLX5_MAX_CQ_PERIOD`).
const MAX_CQ_PERIOD: u32 = 0xfff;
/// The bits of a completion timestamp that count (mlx5_ib: 63; the card's timer is 64 bits).
const TIMESTAMP_MASK: u64 = (1 << 63) - 1;

/// The ib device type of cx4.
pub(crate) struct IbDev;

/// The GID table length: the card's RoCE address table.
pub(crate) fn gid_table_len(caps: &Caps) -> u32 {
    caps.roce().map_or(0, |r| r.roce_address_table_size())
}

/// The RoCE versions the card supports, as the core's port capability flags.
fn core_cap_flags(caps: &Caps) -> u32 {
    let versions = caps.roce().map_or(0, |r| r.roce_version());
    let mut flags = 0;
    if versions & (1 << roce_version::V1) != 0 {
        flags |= ib::CORE_PORT_IBA_ROCE;
    }
    if versions & (1 << roce_version::V2) != 0 {
        flags |= ib::CORE_PORT_IBA_ROCE_UDP_ENCAP;
    }
    flags
}

#[vtable]
impl ib::IbDriver for IbDev {
    type Data = IbShared;
    type Ucontext = Ucontext;
    type MmapEntry = DynUar;
    type Mw = IbMw;
    type Pd = Pd;
    type Cq = IbCq;
    type Qp = IbQp;
    type Mr = IbMr;
    type Ah = IbAh;
    type Srq = IbSrq;
    type Xrcd = IbXrcd;
    type Flow = IbFlow;
    type Wq = IbWq;
    type RwqIndTable = IbRwqIndTable;

    const DRIVER_ID: DriverId = DriverId::Mlx5;
    const UVERBS_ABI_VER: u32 = abi::UVERBS_ABI_VERSION;
    const PORT_COUNTERS: &'static [ib::StatDesc] = counters::PORT_COUNTERS;

    /// mlx5_ib `mlx5_ib_query_device`, from the general capabilities.
    fn query_device(dev: &Device<Self>, a: &mut DeviceAttr) -> Result {
        let sh = dev.data();
        let g = sh.caps.gen();
        let max_sq_sg = g.max_wqe_sz_sq().saturating_sub(2 * WQE_SEG) / WQE_SEG;
        let max_rq_sg = g.max_wqe_sz_rq() / WQE_SEG;
        a.fw_ver = sh.fw_ver;
        a.sys_image_guid = sh.node_guid;
        a.max_mr_size = u64::MAX;
        a.page_size_cap = !((1u64 << g.log_pg_sz().clamp(12, 63)) - 1);
        a.vendor_id = VENDOR_ID;
        a.vendor_part_id = sh.part_id;
        a.hw_ver = sh.hw_ver;
        a.max_qp = 1 << g.log_max_qp();
        a.max_qp_wr = 1 << g.log_max_qp_sz();
        a.max_send_sge = max_sq_sg;
        a.max_recv_sge = max_rq_sg;
        // MLX5_MAX_SGE_RD: what fits a 512-byte WQE after ctrl and remote address segments.
        a.max_sge_rd = (512 - 2 * WQE_SEG) / WQE_SEG;
        a.max_cq = 1 << g.log_max_cq();
        a.max_cqe = (1 << g.log_max_cq_sz()) - 1;
        if g.cq_moderation() != 0 {
            a.max_cq_moderation_count = u16::MAX;
            a.max_cq_moderation_period = MAX_CQ_PERIOD as u16;
        }
        a.max_mr = 1 << g.log_max_mkey();
        a.max_pd = 1 << g.log_max_pd();
        a.max_qp_rd_atom = 1 << g.log_max_ra_res_qp();
        a.max_qp_init_rd_atom = 1 << g.log_max_ra_req_qp();
        a.max_res_rd_atom = a.max_qp_rd_atom.saturating_mul(a.max_qp);
        a.atomic_cap = if g.atomic() != 0 {
            AtomicCap::Hca
        } else {
            AtomicCap::None
        };
        a.max_srq = 1 << g.log_max_srq();
        a.max_srq_wr = (1 << g.log_max_srq_sz()) - 1;
        a.max_srq_sge = max_rq_sg.saturating_sub(1);
        a.max_mcast_grp = 1 << g.log_max_mcg();
        a.max_mcast_qp_attach = g.max_qp_mcg();
        a.max_total_mcast_qp_attach = a.max_mcast_qp_attach.saturating_mul(a.max_mcast_grp);
        a.max_ah = i32::MAX as u32;
        a.max_pkeys = 1;
        a.local_ca_ack_delay = g.local_ca_ack_delay() as u8;
        // Fast registration by UMR work requests on kernel RC/UC QPs (kqp.rs).
        a.device_cap_flags |= ib::DEVICE_MEM_MGT_EXTENSIONS;
        a.max_fast_reg_page_list_len = MAX_FAST_REG_PAGES;
        // XRC domains, XRC SRQs and XRC QPs when the card has the transport.
        if g.xrc() != 0 {
            a.device_cap_flags |= ib::DEVICE_XRC;
        }
        // Memory windows of both types (mlx5_ib main.c: `imaicl`).
        if g.imaicl() != 0 {
            a.device_cap_flags |= ib::DEVICE_MEM_WINDOW | ib::DEVICE_MEM_WINDOW_TYPE_2B;
            a.max_mw = 1 << g.log_max_mkey();
        }
        // Completions carry the free-running internal timer (mlx5_ib main.c
        // `mlx5_ib_query_device`: 63 bits, the card's frequency).
        a.hca_core_clock = g.device_frequency_khz().into();
        a.timestamp_mask = TIMESTAMP_MASK;
        // Raw packet QPs, WQs, RSS QPs and steering rules on the Ethernet port (mlx5_ib
        // main.c: checksums and C-VLAN stripping as the card's Ethernet offloads say).
        a.device_cap_flags |= ib::DEVICE_MANAGED_FLOW_STEERING;
        if let Some(eth) = sh.caps.eth().filter(|_| g.eth_net_offloads() != 0) {
            if eth.csum_cap() != 0 {
                a.device_cap_flags |= ib::DEVICE_RAW_IP_CSUM;
                a.raw_packet_caps |= ib::RAW_PACKET_CAP_IP_CSUM;
            }
            if eth.vlan_cap() != 0 {
                a.raw_packet_caps |= ib::RAW_PACKET_CAP_CVLAN_STRIPPING;
            }
        }
        a.max_wq_type_rq = 1 << g.log_max_rq();
        a.rss_supported_qpts = 1 << ib::QPT_RAW_PACKET;
        a.max_rwq_indirection_tables = 1 << g.log_max_rqt();
        a.max_rwq_indirection_table_size = 1 << g.log_max_rqt_size();
        Ok(())
    }

    /// mlx5_ib `mlx5_query_port_roce`: the port follows its netdev.
    fn query_port(dev: &Device<Self>, port: u32, a: &mut PortAttr) -> Result {
        let sh = dev.data();
        let nd = sh.netdev.device();
        let up = nd.is_running() && nd.carrier_ok();
        a.state = if up {
            PortState::Active
        } else {
            PortState::Down
        };
        a.phys_state = if up {
            PhysState::LinkUp
        } else {
            PhysState::Disabled
        };
        a.max_mtu = Mtu::Mtu4096;
        a.active_mtu = ib::mtu_of(nd.mtu()).unwrap_or(Mtu::Mtu256);
        a.phys_mtu = nd.mtu();
        a.gid_tbl_len = gid_table_len(&sh.caps);
        a.ip_gids = true;
        a.port_cap_flags = ib::PORT_CM_SUP;
        a.max_msg_sz = 1 << sh.caps.gen().log_max_msg();
        a.pkey_tbl_len = 1;
        // The IB speed and width equivalent to the netdev's link (ethtool link settings).
        if let Ok((speed, width)) = dev.eth_speed(port) {
            a.active_speed = speed;
            a.active_width = width;
        }
        Ok(())
    }

    /// mlx5_ib `mlx5_port_immutable` for a RoCE port.
    fn port_immutable(dev: &Device<Self>, _port: u32) -> Result<PortImmutable> {
        let caps = &dev.data().caps;
        Ok(PortImmutable {
            pkey_tbl_len: 1,
            gid_tbl_len: gid_table_len(caps),
            core_cap_flags: core_cap_flags(caps),
            max_mad_size: ib::MGMT_MAD_SIZE,
        })
    }

    fn link_layer(_dev: &Device<Self>, _port: u32) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn query_pkey(_dev: &Device<Self>, _port: u32, index: u16) -> Result<u16> {
        if index == 0 {
            Ok(DEFAULT_PKEY)
        } else {
            Err(EINVAL)
        }
    }

    fn add_gid(dev: &Device<Self>, attr: &GidAttr) -> Result {
        gid::set(&dev.data().mdev, attr.index(), &RoceAddr::of(attr)?)
    }

    fn del_gid(dev: &Device<Self>, attr: &GidAttr) -> Result {
        gid::set(&dev.data().mdev, attr.index(), &RoceAddr::cleared(attr)?)
    }

    fn alloc_ucontext(dev: &Device<Self>, udata: &mut Udata<'_>) -> Result<Ucontext> {
        Ucontext::alloc(dev.data(), udata)
    }

    fn mmap(uctx: &ib::Ucontext<Self>, vma: &ib::Vma) -> Result {
        Ucontext::mmap(uctx, vma)
    }

    /// mlx5_ib `mlx5_ib_alloc_mw`.
    fn alloc_mw(pd: &ib::Pd<Self>, type_2: bool, udata: &mut Udata<'_>) -> Result<(IbMw, u32)> {
        IbMw::alloc(pd, type_2, udata)
    }

    /// mlx5_ib `MLX5_IB_METHOD_UAR_OBJ_ALLOC`: a dynamic UAR page of the context.
    fn alloc_uar(uctx: &ib::Ucontext<Self>, kind: ib::UarKind) -> Result<(DynUar, u32)> {
        Ucontext::alloc_uar(uctx, kind)
    }

    /// `ALLOC_PD`; a user PD's number goes back to libmlx5.
    fn alloc_pd(dev: &Device<Self>, udata: Option<&mut Udata<'_>>) -> Result<Pd> {
        let pd = Pd::alloc(&dev.data().mdev)?;
        if let Some(u) = udata {
            u.respond(&AllocPdResp { pdn: pd.pdn() })?;
        }
        Ok(pd)
    }

    fn create_cq(
        dev: &Device<Self>,
        attr: &CqInitAttr,
        udata: Option<&mut Udata<'_>>,
        events: &Arc<CqEvents>,
    ) -> Result<(IbCq, u32)> {
        IbCq::create(dev, attr, udata, events)
    }

    /// mlx5_ib `mlx5_ib_resize_cq` (user CQs; kernel CQs EOPNOTSUPP).
    fn resize_cq(cq: &ib::Cq<Self>, cqe: u32, udata: &mut Udata<'_>) -> Result<u32> {
        IbCq::resize(cq, cq.device(), cqe, udata)
    }

    /// mlx5_ib `mlx5_ib_modify_cq`: EOPNOTSUPP without `cq_moderation`, EINVAL for a period
    /// the context cannot hold, else `MODIFY_CQ` of the period and count.
    fn modify_cq(cq: &ib::Cq<Self>, count: u16, period: u16) -> Result {
        let sh = cq.device().data();
        if sh.caps.gen().cq_moderation() == 0 {
            return Err(ib::eopnotsupp());
        }
        if u32::from(period) > MAX_CQ_PERIOD {
            return Err(EINVAL);
        }
        crate::cq::modify_moderation(&sh.mdev, cq.cqn(), period.into(), count.into(), None)
    }

    fn reg_user_mr(
        pd: &ib::Pd<Self>,
        start: u64,
        len: u64,
        iova: u64,
        access: Access,
        _udata: &mut Udata<'_>,
    ) -> Result<(IbMr, u32, u32)> {
        IbMr::reg_user(pd, start, len, iova, access)
    }

    /// mlx5_ib `mlx5_ib_reg_user_mr_dmabuf` (pinned: the card has no page faults).
    fn reg_user_mr_dmabuf(
        pd: &ib::Pd<Self>,
        offset: u64,
        len: u64,
        iova: u64,
        fd: i32,
        access: Access,
        _udata: &mut Udata<'_>,
    ) -> Result<(IbMr, u32, u32)> {
        IbMr::reg_dmabuf(pd, offset, len, iova, fd, access)
    }

    /// mlx5_ib `mlx5_ib_rereg_user_mr`, always with a new mkey.
    fn rereg_user_mr(
        mr: &ib::Mr<Self>,
        rereg: &ib::Rereg,
        pd: &ib::Pd<Self>,
        _udata: &mut Udata<'_>,
    ) -> Result<Option<(IbMr, u32, u32)>> {
        IbMr::rereg(mr, rereg, pd)
    }

    fn get_dma_mr(pd: &ib::Pd<Self>, access: Access) -> Result<(IbMr, u32, u32)> {
        IbMr::dma(pd, access)
    }

    fn alloc_mr(pd: &ib::Pd<Self>, max_num_sg: u32) -> Result<(IbMr, u32, u32)> {
        IbMr::fast_reg(pd, max_num_sg)
    }

    fn mr_map_begin(mr: &ib::Mr<Self>, page_size: u32) -> Result {
        mr.map_begin(page_size)
    }

    fn mr_set_page(mr: &ib::Mr<Self>, addr: u64) -> Result {
        mr.set_page(addr)
    }

    fn create_qp(
        pd: &ib::Pd<Self>,
        attr: &QpInitAttr<'_, Self>,
        udata: Option<&mut Udata<'_>>,
        events: &Arc<QpEvents>,
    ) -> Result<(IbQp, u32)> {
        IbQp::create(pd, attr, udata, events)
    }

    fn create_xrc_tgt_qp(
        xrcd: &ib::Xrcd<Self>,
        attr: &QpInitAttr<'_, Self>,
        events: &Arc<QpEvents>,
    ) -> Result<(IbQp, u32)> {
        IbQp::create_xrc_tgt(xrcd, attr, events)
    }

    /// mlx5_ib `mlx5_ib_alloc_xrcd`: only with the card's `xrc` capability.
    fn alloc_xrcd(dev: &Device<Self>) -> Result<IbXrcd> {
        let sh = dev.data();
        if sh.caps.gen().xrc() == 0 {
            return Err(ib::eopnotsupp());
        }
        IbXrcd::alloc(&sh.mdev)
    }

    fn modify_qp(
        qp: &ib::Qp<Self>,
        attr: &QpAttr,
        mask: u32,
        udata: Option<&mut Udata<'_>>,
    ) -> Result {
        IbQp::modify(qp, attr, mask, udata)
    }

    fn query_qp(qp: &ib::Qp<Self>) -> Result<QpAttr> {
        IbQp::query(qp)
    }

    /// mlx5_ib `mlx5_ib_query_ucontext`: libmlx5's import of a context (DPDK's mlx5 PMD).
    fn query_ucontext(uctx: &ib::Ucontext<Self>) -> Result<KVec<u8>> {
        uctx.query()
    }

    /// mlx5_ib `mlx5_ib_create_flow`: a rule on a raw packet QP.
    fn create_flow(
        qp: &ib::Qp<Self>,
        attr: &ib::FlowAttr,
        udata: Option<&mut Udata<'_>>,
    ) -> Result<IbFlow> {
        IbFlow::create(qp, attr, udata)
    }

    /// mlx5_ib `mlx5_ib_create_wq`: a receive WQ of a process.
    fn create_wq(
        pd: &ib::Pd<Self>,
        attr: &ib::WqInitAttr<'_, Self>,
        udata: Option<&mut Udata<'_>>,
    ) -> Result<(IbWq, u32)> {
        IbWq::create(pd, attr, udata)
    }

    /// mlx5_ib `mlx5_ib_modify_wq`.
    fn modify_wq(wq: &ib::Wq<Self>, attr: &ib::WqAttr, udata: Option<&mut Udata<'_>>) -> Result {
        IbWq::modify(wq, attr, udata)
    }

    /// mlx5_ib `mlx5_ib_create_rwq_ind_table`.
    fn create_rwq_ind_table(
        dev: &Device<Self>,
        wqs: &[&ib::Wq<Self>],
        udata: Option<&mut Udata<'_>>,
    ) -> Result<(IbRwqIndTable, u32)> {
        IbRwqIndTable::create(dev.data(), wqs, udata)
    }

    /// mlx5_ib `mlx5_ib_mcg_attach` (the card's groups are the function's, no user ID).
    fn attach_mcast(qp: &ib::Qp<Self>, gid: &[u8; 16], _lid: u16) -> Result {
        mcg::attach(&qp.device().data().mdev, qp.qpn(), gid)
    }

    /// mlx5_ib `mlx5_ib_mcg_detach`.
    fn detach_mcast(qp: &ib::Qp<Self>, gid: &[u8; 16], _lid: u16) -> Result {
        mcg::detach(&qp.device().data().mdev, qp.qpn(), gid)
    }

    /// mlx5_ib `mlx5_ib_create_ah` for a process: a RoCE address must have a GRH; the
    /// answer is the destination MAC (libmlx5 builds the address vector in user space, the
    /// card keeps no AH object).
    fn create_user_ah(dev: &Device<Self>, attr: &AhAttr, udata: &mut Udata<'_>) -> Result<IbAh> {
        let ah = IbAh::new(attr, gid_table_len(&dev.data().caps))?;
        if udata.out_len() < abi::CREATE_AH_RESP_MIN_LEN {
            return Err(EINVAL);
        }
        udata.respond_prefix(
            &CreateAhResp {
                response_length: abi::CREATE_AH_RESP_MIN_LEN as u32,
                dmac: attr.dmac,
                reserved: [0; 6],
            },
            abi::CREATE_AH_RESP_MIN_LEN,
        )?;
        Ok(ah)
    }

    /// mlx5_ib `mlx5_ib_create_ah` for a kernel user: the address vector its UD sends copy.
    /// Nothing here sleeps.
    fn create_ah(dev: &Device<Self>, attr: &AhAttr, _sleepable: bool) -> Result<IbAh> {
        IbAh::new(attr, gid_table_len(&dev.data().caps))
    }

    /// mlx5_ib `mlx5_ib_post_send` on a kernel QP.
    fn post_send(qp: &ib::Qp<Self>, wrs: &mut SendWrs<'_, Self>) -> Result {
        qp.kernel_wq().ok_or(EINVAL)?.post_send(wrs, qp)
    }

    /// mlx5_ib `mlx5_ib_post_recv` on a kernel QP.
    fn post_recv(qp: &ib::Qp<Self>, wrs: &mut RecvWrs<'_>) -> Result {
        qp.kernel_wq().ok_or(EINVAL)?.post_recv(wrs)
    }

    /// mlx5_ib `mlx5_ib_post_srq_recv` on a kernel SRQ.
    fn post_srq_recv(srq: &ib::Srq<Self>, wrs: &mut RecvWrs<'_>) -> Result {
        srq.kernel_ring().ok_or(EINVAL)?.post(wrs)
    }

    /// mlx5_ib `mlx5_ib_poll_cq` on a kernel CQ.
    fn poll_cq(cq: &ib::Cq<Self>, wc: &mut WcWriter<'_>) -> Result {
        match &**cq {
            IbCq::Kernel(k) => {
                k.poll(&cq.device().data().kqps, wc);
                Ok(())
            }
            IbCq::User(_) => Err(EINVAL),
        }
    }

    /// mlx5_ib `mlx5_ib_arm_cq` on a kernel CQ.
    fn req_notify_cq(cq: &ib::Cq<Self>, solicited: bool, report_missed: bool) -> Result<bool> {
        match &**cq {
            IbCq::Kernel(k) => k.arm(solicited, report_missed),
            IbCq::User(_) => Err(EINVAL),
        }
    }

    /// mlx5_ib `mlx5_ib_get_hw_stats`: the queue counters and congestion statistics.
    fn port_counters(dev: &Device<Self>, _port: u32, values: &mut [u64]) -> Result {
        let sh = dev.data();
        counters::read(&sh.mdev, sh.qcounter, sh.cc_query, values)
    }

    fn create_srq(
        pd: &ib::Pd<Self>,
        attr: &SrqInitAttr<'_, Self>,
        udata: Option<&mut Udata<'_>>,
        events: &Arc<SrqEvents>,
    ) -> Result<(IbSrq, u32)> {
        IbSrq::create(pd, attr, udata, events)
    }

    /// mlx5_ib `mlx5_ib_modify_srq`.
    fn modify_srq(
        srq: &ib::Srq<Self>,
        attr: &SrqAttr,
        mask: u32,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        IbSrq::modify(srq, attr, mask)
    }

    /// mlx5_ib `mlx5_ib_query_srq`.
    fn query_srq(srq: &ib::Srq<Self>) -> Result<SrqAttr> {
        IbSrq::query(srq)
    }
}
