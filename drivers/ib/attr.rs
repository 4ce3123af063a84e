// SPDX-License-Identifier: GPL-2.0
//! What the query ops answer (`struct ib_device_attr`, `struct ib_port_attr`,
//! `struct ib_port_immutable`), as plain Rust values with typed enums; the layer copies them
//! into the C structs the core passes, so drivers never touch those.

/// The port's state (`enum ib_port_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u32)]
pub enum PortState {
    /// `IB_PORT_DOWN`.
    #[default]
    Down = ksys::ib_port_state_IB_PORT_DOWN,
    /// `IB_PORT_INIT`.
    Init = ksys::ib_port_state_IB_PORT_INIT,
    /// `IB_PORT_ARMED`.
    Armed = ksys::ib_port_state_IB_PORT_ARMED,
    /// `IB_PORT_ACTIVE`.
    Active = ksys::ib_port_state_IB_PORT_ACTIVE,
}

/// The port's physical state (`enum ib_port_phys_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum PhysState {
    /// `IB_PORT_PHYS_STATE_DISABLED`.
    #[default]
    Disabled = ksys::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8,
    /// `IB_PORT_PHYS_STATE_POLLING`.
    Polling = ksys::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING as u8,
    /// `IB_PORT_PHYS_STATE_LINK_UP`.
    LinkUp = ksys::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8,
}

/// An IB MTU (`enum ib_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
#[repr(u32)]
pub enum Mtu {
    /// 256 bytes.
    #[default]
    Mtu256 = ksys::ib_mtu_IB_MTU_256,
    /// 512 bytes.
    Mtu512 = ksys::ib_mtu_IB_MTU_512,
    /// 1024 bytes.
    Mtu1024 = ksys::ib_mtu_IB_MTU_1024,
    /// 2048 bytes.
    Mtu2048 = ksys::ib_mtu_IB_MTU_2048,
    /// 4096 bytes.
    Mtu4096 = ksys::ib_mtu_IB_MTU_4096,
}

/// The largest IB MTU whose RoCE packets fit in an Ethernet MTU of `netdev_mtu` bytes
/// (`iboe_get_mtu()`: room for the GRH, the UDP header, the BTH, the largest extended header
/// (XRC + atomic) and the ICRC), `None` when not even 256 bytes fit.
pub fn mtu_of(netdev_mtu: u32) -> Option<Mtu> {
    // IB_GRH_BYTES + IB_UDP_BYTES + IB_BTH_BYTES + IB_EXT_XRC_BYTES + IB_EXT_ATOMICETH_BYTES
    // + IB_ICRC_BYTES.
    const OVERHEAD: u32 = 40 + 8 + 12 + 4 + 28 + 4;
    let room = netdev_mtu.checked_sub(OVERHEAD)?;
    [
        (4096, Mtu::Mtu4096),
        (2048, Mtu::Mtu2048),
        (1024, Mtu::Mtu1024),
        (512, Mtu::Mtu512),
        (256, Mtu::Mtu256),
    ]
    .into_iter()
    .find(|&(bytes, _)| room >= bytes)
    .map(|(_, m)| m)
}

/// The link layer of a port (`enum rdma_link_layer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum LinkLayer {
    /// `IB_LINK_LAYER_INFINIBAND`.
    Infiniband = ksys::rdma_link_layer_IB_LINK_LAYER_INFINIBAND,
    /// `IB_LINK_LAYER_ETHERNET` (RoCE).
    Ethernet = ksys::rdma_link_layer_IB_LINK_LAYER_ETHERNET,
}

/// The atomic operations' guarantees (`enum ib_atomic_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u32)]
pub enum AtomicCap {
    /// `IB_ATOMIC_NONE`.
    #[default]
    None = ksys::ib_atomic_cap_IB_ATOMIC_NONE,
    /// `IB_ATOMIC_HCA`: atomic within the HCA.
    Hca = ksys::ib_atomic_cap_IB_ATOMIC_HCA,
    /// `IB_ATOMIC_GLOB`: atomic with the CPUs too.
    Glob = ksys::ib_atomic_cap_IB_ATOMIC_GLOB,
}

/// The kind of a GID table entry (`enum ib_gid_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidType {
    /// `IB_GID_TYPE_IB` (InfiniBand; also RoCE v1 on RoCE ports, where it reads `IB/RoCE v1`).
    Ib,
    /// `IB_GID_TYPE_ROCE`: RoCE v1 (Ethertype 0x8915).
    RoceV1,
    /// `IB_GID_TYPE_ROCE_UDP_ENCAP`: RoCE v2 (UDP port 4791).
    RoceV2,
}

impl GidType {
    pub(crate) fn from_raw(t: ksys::ib_gid_type) -> Option<Self> {
        match t {
            ksys::ib_gid_type_IB_GID_TYPE_IB => Some(Self::Ib),
            ksys::ib_gid_type_IB_GID_TYPE_ROCE => Some(Self::RoceV1),
            ksys::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP => Some(Self::RoceV2),
            _ => None,
        }
    }
}

/// `RDMA_CORE_PORT_IBA_ROCE`: a RoCE v1 port (core capability flags).
pub const CORE_PORT_IBA_ROCE: u32 = ksys::KSYS_CONST_RDMA_CORE_PORT_IBA_ROCE;
/// `RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`: a RoCE v2 port.
pub const CORE_PORT_IBA_ROCE_UDP_ENCAP: u32 = ksys::KSYS_CONST_RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
/// `IB_MGMT_MAD_SIZE`: the MAD size of a port that is not OPA.
pub const MGMT_MAD_SIZE: u32 = ksys::KSYS_CONST_IB_MGMT_MAD_SIZE;
/// `IB_PORT_CM_SUP`: the port supports connection management (port capability flags).
pub const PORT_CM_SUP: u32 = ksys::KSYS_CONST_IB_PORT_CM_SUP;
/// `IB_DEVICE_MEM_MGT_EXTENSIONS`: fast registration and local invalidation work requests
/// (what nvme-rdma, NFS/RDMA and RDS require).
pub const DEVICE_MEM_MGT_EXTENSIONS: u64 =
    ksys::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
/// `IB_DEVICE_MEM_WINDOW`: memory windows (type 1).
pub const DEVICE_MEM_WINDOW: u64 = ksys::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW as u64;
/// `IB_DEVICE_MEM_WINDOW_TYPE_2B`: type 2 memory windows (bound to a QP, remotely
/// invalidatable).
pub const DEVICE_MEM_WINDOW_TYPE_2B: u64 =
    ksys::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B as u64;
/// `IB_DEVICE_XRC`: XRC domains, XRC SRQs and XRC initiator/target QPs.
pub const DEVICE_XRC: u64 = ksys::ib_device_cap_flags_IB_DEVICE_XRC as u64;
/// `IB_DEVICE_MANAGED_FLOW_STEERING`: steering rules (`ibv_create_flow`).
pub const DEVICE_MANAGED_FLOW_STEERING: u64 =
    ksys::ib_device_cap_flags_IB_DEVICE_MANAGED_FLOW_STEERING as u64;
/// `IB_DEVICE_RAW_IP_CSUM`: IP checksums on raw packet QPs (the older flag).
pub const DEVICE_RAW_IP_CSUM: u64 = ksys::ib_device_cap_flags_IB_DEVICE_RAW_IP_CSUM as u64;
/// `IB_RAW_PACKET_CAP_CVLAN_STRIPPING`: raw packet QPs and WQs can strip C-VLAN tags.
pub const RAW_PACKET_CAP_CVLAN_STRIPPING: u32 =
    ksys::ib_raw_packet_caps_IB_RAW_PACKET_CAP_CVLAN_STRIPPING;
/// `IB_RAW_PACKET_CAP_IP_CSUM`: raw packet QPs check and compute IP checksums.
pub const RAW_PACKET_CAP_IP_CSUM: u32 = ksys::ib_raw_packet_caps_IB_RAW_PACKET_CAP_IP_CSUM;

/// A device's attributes (`struct ib_device_attr`), the subset a verbs device reports; the
/// rest stays zero. Counts are `u32` here and clamped to the C `int`s.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceAttr {
    /// Firmware version, `major << 32 | minor << 16 | sub_minor` as mlx5 packs it.
    pub fw_ver: u64,
    /// System image GUID (host byte order; stored big-endian).
    pub sys_image_guid: u64,
    /// Largest MR.
    pub max_mr_size: u64,
    /// Page sizes MRs may use (bitmap).
    pub page_size_cap: u64,
    /// PCI vendor ID.
    pub vendor_id: u32,
    /// PCI device ID.
    pub vendor_part_id: u32,
    /// Hardware revision.
    pub hw_ver: u32,
    /// `IB_DEVICE_*` capability flags.
    pub device_cap_flags: u64,
    /// QPs, WRs per QP, SGEs per WR.
    pub max_qp: u32,
    /// Work requests per queue.
    pub max_qp_wr: u32,
    /// Scatter/gather entries per send WR.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive WR.
    pub max_recv_sge: u32,
    /// Scatter/gather entries per RDMA read.
    pub max_sge_rd: u32,
    /// CQs.
    pub max_cq: u32,
    /// Entries per CQ.
    pub max_cqe: u32,
    /// MRs.
    pub max_mr: u32,
    /// Memory windows.
    pub max_mw: u32,
    /// PDs.
    pub max_pd: u32,
    /// Outstanding RDMA reads / atomics a QP responds to.
    pub max_qp_rd_atom: u32,
    /// Outstanding RDMA reads / atomics a QP initiates.
    pub max_qp_init_rd_atom: u32,
    /// Responder resources of the device.
    pub max_res_rd_atom: u32,
    /// Atomic operations' guarantees.
    pub atomic_cap: AtomicCap,
    /// Multicast groups.
    pub max_mcast_grp: u32,
    /// QPs per multicast group.
    pub max_mcast_qp_attach: u32,
    /// QP attachments to multicast groups in total.
    pub max_total_mcast_qp_attach: u32,
    /// Address handles.
    pub max_ah: u32,
    /// SRQs.
    pub max_srq: u32,
    /// WRs per SRQ.
    pub max_srq_wr: u32,
    /// SGEs per SRQ WR.
    pub max_srq_sge: u32,
    /// P_Keys.
    pub max_pkeys: u16,
    /// Local CA ACK delay (log2 of 4.096 µs units).
    pub local_ca_ack_delay: u8,
    /// Pages of one fast registration.
    pub max_fast_reg_page_list_len: u32,
    /// Largest completion count of CQ moderation (`modify_cq`); 0 without moderation.
    pub max_cq_moderation_count: u16,
    /// Largest CQ moderation period (µs).
    pub max_cq_moderation_period: u16,
    /// The bits of the completion timestamps that count (`timestamp_mask`; 0: none).
    pub timestamp_mask: u64,
    /// The frequency of the clock completion timestamps count, kHz (`hca_core_clock`).
    pub hca_core_clock: u64,
    /// `IB_RAW_PACKET_CAP_*`.
    pub raw_packet_caps: u32,
    /// Receive WQs (`max_wq_type_rq`).
    pub max_wq_type_rq: u32,
    /// The QP types that can be RSS QPs (`rss_caps.supported_qpts`, bits by `ib_qp_type`).
    pub rss_supported_qpts: u32,
    /// Indirection tables (`rss_caps.max_rwq_indirection_tables`).
    pub max_rwq_indirection_tables: u32,
    /// WQs in one table (`rss_caps.max_rwq_indirection_table_size`).
    pub max_rwq_indirection_table_size: u32,
}

fn int(v: u32) -> ffi::c_int {
    ffi::c_int::try_from(v).unwrap_or(ffi::c_int::MAX)
}

use kernel::ffi;

impl DeviceAttr {
    /// Writes the attributes into the C struct (the core zeroed it).
    pub(crate) fn write_to(&self, a: &mut ksys::ib_device_attr) {
        a.fw_ver = self.fw_ver;
        a.sys_image_guid = self.sys_image_guid.to_be();
        a.max_mr_size = self.max_mr_size;
        a.page_size_cap = self.page_size_cap;
        a.vendor_id = self.vendor_id;
        a.vendor_part_id = self.vendor_part_id;
        a.hw_ver = self.hw_ver;
        a.device_cap_flags = self.device_cap_flags;
        a.max_qp = int(self.max_qp);
        a.max_qp_wr = int(self.max_qp_wr);
        a.max_send_sge = int(self.max_send_sge);
        a.max_recv_sge = int(self.max_recv_sge);
        a.max_sge_rd = int(self.max_sge_rd);
        a.max_cq = int(self.max_cq);
        a.max_cqe = int(self.max_cqe);
        a.cq_caps.max_cq_moderation_count = self.max_cq_moderation_count;
        a.cq_caps.max_cq_moderation_period = self.max_cq_moderation_period;
        a.timestamp_mask = self.timestamp_mask;
        a.hca_core_clock = self.hca_core_clock;
        a.max_mr = int(self.max_mr);
        a.max_mw = int(self.max_mw);
        a.max_pd = int(self.max_pd);
        a.max_qp_rd_atom = int(self.max_qp_rd_atom);
        a.max_qp_init_rd_atom = int(self.max_qp_init_rd_atom);
        a.max_res_rd_atom = int(self.max_res_rd_atom);
        a.atomic_cap = self.atomic_cap as ksys::ib_atomic_cap;
        a.max_mcast_grp = int(self.max_mcast_grp);
        a.max_mcast_qp_attach = int(self.max_mcast_qp_attach);
        a.max_total_mcast_qp_attach = int(self.max_total_mcast_qp_attach);
        a.max_ah = int(self.max_ah);
        a.max_srq = int(self.max_srq);
        a.max_srq_wr = int(self.max_srq_wr);
        a.max_srq_sge = int(self.max_srq_sge);
        a.max_pkeys = self.max_pkeys;
        a.local_ca_ack_delay = self.local_ca_ack_delay;
        a.max_fast_reg_page_list_len = self.max_fast_reg_page_list_len;
        a.raw_packet_caps = self.raw_packet_caps;
        a.max_wq_type_rq = self.max_wq_type_rq;
        a.rss_caps.supported_qpts = self.rss_supported_qpts;
        a.rss_caps.max_rwq_indirection_tables = self.max_rwq_indirection_tables;
        a.rss_caps.max_rwq_indirection_table_size = self.max_rwq_indirection_table_size;
    }
}

/// A port's attributes (`struct ib_port_attr`), the subset a RoCE port reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct PortAttr {
    /// Logical state.
    pub state: PortState,
    /// Physical state.
    pub phys_state: PhysState,
    /// Largest MTU the port supports.
    pub max_mtu: Mtu,
    /// MTU in use (from the netdev's MTU, see [`mtu_of`]).
    pub active_mtu: Mtu,
    /// The Ethernet MTU behind it (`phys_mtu`).
    pub phys_mtu: u32,
    /// GID table entries.
    pub gid_tbl_len: u32,
    /// The GIDs are IP addresses (RoCE v2 capable ports).
    pub ip_gids: bool,
    /// `IB_PORT_*` capability flags (for example [`PORT_CM_SUP`]).
    pub port_cap_flags: u32,
    /// Largest message.
    pub max_msg_sz: u32,
    /// P_Key table entries.
    pub pkey_tbl_len: u16,
    /// Active link width (`IB_WIDTH_*`).
    pub active_width: u8,
    /// Active link speed (`IB_SPEED_*`).
    pub active_speed: u16,
    /// Virtual lanes (`IB_VL_*` count encoding).
    pub max_vl_num: u8,
}

impl PortAttr {
    /// Writes the attributes into the C struct (the core zeroed it).
    pub(crate) fn write_to(&self, a: &mut ksys::ib_port_attr) {
        a.state = self.state as ksys::ib_port_state;
        a.phys_state = self.phys_state as u8;
        a.max_mtu = self.max_mtu as ksys::ib_mtu;
        a.active_mtu = self.active_mtu as ksys::ib_mtu;
        a.phys_mtu = self.phys_mtu;
        a.gid_tbl_len = int(self.gid_tbl_len);
        a.set_ip_gids(self.ip_gids.into());
        a.port_cap_flags = self.port_cap_flags;
        a.max_msg_sz = self.max_msg_sz;
        a.pkey_tbl_len = self.pkey_tbl_len;
        a.active_width = self.active_width;
        a.active_speed = self.active_speed;
        a.max_vl_num = self.max_vl_num;
    }
}

/// What never changes about a port (`struct ib_port_immutable`), asked once at registration.
#[derive(Clone, Copy, Debug, Default)]
pub struct PortImmutable {
    /// P_Key table entries.
    pub pkey_tbl_len: u32,
    /// GID table entries.
    pub gid_tbl_len: u32,
    /// `RDMA_CORE_PORT_*` flags (for example [`CORE_PORT_IBA_ROCE_UDP_ENCAP`]).
    pub core_cap_flags: u32,
    /// MAD size ([`MGMT_MAD_SIZE`]).
    pub max_mad_size: u32,
}

impl PortImmutable {
    pub(crate) fn write_to(&self, p: &mut ksys::ib_port_immutable) {
        p.pkey_tbl_len = int(self.pkey_tbl_len);
        p.gid_tbl_len = int(self.gid_tbl_len);
        p.core_cap_flags = self.core_cap_flags;
        p.max_mad_size = self.max_mad_size;
    }
}
