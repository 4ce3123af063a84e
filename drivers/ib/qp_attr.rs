// SPDX-License-Identifier: GPL-2.0
//! What the CQ, QP and AH ops are asked for (`struct ib_cq_init_attr`, `ib_qp_init_attr`,
//! `ib_qp_attr`, `rdma_ah_attr`), as plain Rust values the layer copies out of the C structs
//! (unions and the GID entry pointer resolved here), and back for `query_qp`.

use core::marker::PhantomData;

use crate::{
    attr::GidType,
    driver::IbDriver,
    object::{
        Cq,
        RwqIndTable,
        Srq,
        Xrcd, //
    },
};

/// A CQ's creation attributes (`struct ib_cq_init_attr`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CqInitAttr {
    /// The number of CQEs asked for (the driver may round up).
    pub cqe: u32,
    /// The completion vector (< the device's `num_comp_vectors`, checked by the core).
    pub comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_*`.
    pub flags: u32,
}

impl CqInitAttr {
    pub(crate) fn from_raw(a: &ksys::ib_cq_init_attr) -> Self {
        Self {
            cqe: a.cqe,
            comp_vector: a.comp_vector,
            flags: a.flags,
        }
    }
}

/// A QP's transport service type (`enum ib_qp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpType {
    /// `IB_QPT_RC`: reliable connected.
    Rc,
    /// `IB_QPT_UC`: unreliable connected.
    Uc,
    /// `IB_QPT_UD`: unreliable datagram.
    Ud,
    /// `IB_QPT_GSI`: the port's general services QP (QP1), which ib_mad creates.
    Gsi,
    /// `IB_QPT_XRC_INI`: an XRC initiator (sends only, to the XRC SRQ each request names).
    XrcIni,
    /// `IB_QPT_XRC_TGT`: an XRC target (receives only, into the SRQs of its XRC domain);
    /// created by the core for a process, with no PD, CQs or driver data.
    XrcTgt,
    /// `IB_QPT_RAW_PACKET`: Ethernet frames as they are on the wire (uverbs allows it only
    /// to `CAP_NET_RAW`).
    RawPacket,
    /// `IB_QPT_DRIVER`: a type of the driver's own, which its user data names (mlx5's DC
    /// initiators and targets).
    Driver,
    /// Any other (SMI): the raw value.
    Other(u32),
}

impl QpType {
    pub(crate) fn from_raw(t: ksys::ib_qp_type) -> Self {
        match t {
            ksys::ib_qp_type_IB_QPT_RC => Self::Rc,
            ksys::ib_qp_type_IB_QPT_UC => Self::Uc,
            ksys::ib_qp_type_IB_QPT_UD => Self::Ud,
            ksys::ib_qp_type_IB_QPT_GSI => Self::Gsi,
            ksys::ib_qp_type_IB_QPT_XRC_INI => Self::XrcIni,
            ksys::ib_qp_type_IB_QPT_XRC_TGT => Self::XrcTgt,
            ksys::ib_qp_type_IB_QPT_RAW_PACKET => Self::RawPacket,
            ksys::ib_qp_type_IB_QPT_DRIVER => Self::Driver,
            t => Self::Other(t),
        }
    }
}

/// `IB_QPT_RAW_PACKET`, as a bit number ([`crate::DeviceAttr::rss_supported_qpts`]).
pub const QPT_RAW_PACKET: u32 = ksys::ib_qp_type_IB_QPT_RAW_PACKET;

/// `IB_QP_CREATE_CVLAN_STRIPPING`: a raw packet QP strips C-VLAN tags (create flag).
pub const QP_CREATE_CVLAN_STRIPPING: u32 =
    ksys::ib_qp_create_flags_IB_QP_CREATE_CVLAN_STRIPPING as u32;

/// A QP's queue sizes (`struct ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Send work requests.
    pub max_send_wr: u32,
    /// Receive work requests.
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send request.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive request.
    pub max_recv_sge: u32,
    /// Inline data per send request.
    pub max_inline_data: u32,
}

impl QpCap {
    fn from_raw(c: &ksys::ib_qp_cap) -> Self {
        Self {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    fn write_to(&self, c: &mut ksys::ib_qp_cap) {
        c.max_send_wr = self.max_send_wr;
        c.max_recv_wr = self.max_recv_wr;
        c.max_send_sge = self.max_send_sge;
        c.max_recv_sge = self.max_recv_sge;
        c.max_inline_data = self.max_inline_data;
    }
}

/// A QP's creation attributes (`struct ib_qp_init_attr`), with its CQs as the driver's
/// objects.
pub struct QpInitAttr<'a, T: IbDriver> {
    raw: &'a ksys::ib_qp_init_attr,
    _t: PhantomData<T>,
}

impl<'a, T: IbDriver> QpInitAttr<'a, T> {
    /// # Safety
    ///
    /// `raw` must be the attributes the core passes to `create_qp` of a `T` device, valid
    /// for `'a`; its CQs, SRQ and XRC domain are containers of `T`'s, alive during the op
    /// (the QP holds references to them).
    pub(crate) unsafe fn from_raw(raw: *const ksys::ib_qp_init_attr) -> Self {
        Self {
            // SAFETY: The caller's guarantee.
            raw: unsafe { &*raw },
            _t: PhantomData,
        }
    }

    /// The service type.
    pub fn qp_type(&self) -> QpType {
        QpType::from_raw(self.raw.qp_type)
    }

    /// The sizes asked for.
    pub fn cap(&self) -> QpCap {
        QpCap::from_raw(&self.raw.cap)
    }

    /// Whether every send request is signalled (`IB_SIGNAL_ALL_WR`).
    pub fn sq_sig_all(&self) -> bool {
        self.raw.sq_sig_type == ksys::ib_sig_type_IB_SIGNAL_ALL_WR
    }

    /// `IB_QP_CREATE_*` flags.
    pub fn create_flags(&self) -> u32 {
        self.raw.create_flags
    }

    /// The shared receive queue the QP receives through, if any.
    pub fn srq(&self) -> Option<&'a Srq<T>> {
        let p = self.raw.srq;
        // SAFETY: An SRQ of this device, alive during the op (the caller's guarantee).
        (!p.is_null()).then(|| unsafe { Srq::<T>::from_raw(p) })
    }

    /// Whether it is an XRC target QP or an RSS QP (an XRC domain or indirection table).
    pub fn has_xrcd_or_rwq_table(&self) -> bool {
        !self.raw.xrcd.is_null() || !self.raw.rwq_ind_tbl.is_null()
    }

    /// Whether it is an RSS QP (receives through an indirection table of WQs).
    pub fn has_rwq_table(&self) -> bool {
        !self.raw.rwq_ind_tbl.is_null()
    }

    /// The indirection table of an RSS QP.
    pub fn rwq_ind_table(&self) -> Option<&'a RwqIndTable<T>> {
        let p = self.raw.rwq_ind_tbl;
        // SAFETY: A table of this device, alive during the op (the caller of `from_raw`
        // guarantees it; the core holds the table while the QP exists).
        (!p.is_null()).then(|| unsafe { RwqIndTable::<T>::from_raw(p) })
    }

    /// The XRC domain of an XRC target QP.
    pub fn xrcd(&self) -> Option<&'a Xrcd<T>> {
        let p = self.raw.xrcd;
        // SAFETY: An XRC domain of this device, alive during the op (the caller of
        // `from_raw` guarantees it; the core holds the domain while the QP exists).
        (!p.is_null()).then(|| unsafe { Xrcd::<T>::from_raw(p) })
    }

    /// The send CQ.
    pub fn send_cq(&self) -> Option<&'a Cq<T>> {
        let p = self.raw.send_cq;
        // SAFETY: A CQ of this device, alive during the op (the caller's guarantee).
        (!p.is_null()).then(|| unsafe { Cq::<T>::from_raw(p) })
    }

    /// The receive CQ.
    pub fn recv_cq(&self) -> Option<&'a Cq<T>> {
        let p = self.raw.recv_cq;
        // SAFETY: As in `send_cq`.
        (!p.is_null()).then(|| unsafe { Cq::<T>::from_raw(p) })
    }
}

/// An SRQ's type (`enum ib_srq_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqType {
    /// `IB_SRQT_BASIC`: receives for the QPs attached to it.
    Basic,
    /// `IB_SRQT_XRC`: receives for the XRC target QPs of its XRC domain, completing to its
    /// own CQ.
    Xrc,
    /// Any other (tag matching): the raw value.
    Other(u32),
}

impl SrqType {
    fn from_raw(t: ksys::ib_srq_type) -> Self {
        match t {
            ksys::ib_srq_type_IB_SRQT_BASIC => Self::Basic,
            ksys::ib_srq_type_IB_SRQT_XRC => Self::Xrc,
            t => Self::Other(t),
        }
    }
}

/// An SRQ's attributes (`struct ib_srq_attr`): what `modify_srq` changes (the fields its
/// mask names, [`srq_attr_mask`]) and `query_srq` reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Receive work requests the SRQ holds.
    pub max_wr: u32,
    /// Scatter entries per request.
    pub max_sge: u32,
    /// The limit event's watermark (0: not armed).
    pub srq_limit: u32,
}

impl SrqAttr {
    pub(crate) fn from_raw(a: &ksys::ib_srq_attr) -> Self {
        Self {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }

    pub(crate) fn write_raw(&self, a: &mut ksys::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.srq_limit;
    }
}

/// The bits of `enum ib_srq_attr_mask` (`modify_srq`'s mask).
pub mod srq_attr_mask {
    /// `IB_SRQ_MAX_WR`: resize.
    pub const MAX_WR: u32 = ksys::ib_srq_attr_mask_IB_SRQ_MAX_WR;
    /// `IB_SRQ_LIMIT`: arm the limit event.
    pub const LIMIT: u32 = ksys::ib_srq_attr_mask_IB_SRQ_LIMIT;
}

/// An SRQ's creation attributes (`struct ib_srq_init_attr`), with an XRC SRQ's domain and
/// CQ as the driver's objects.
pub struct SrqInitAttr<'a, T: IbDriver> {
    /// The SRQ's type.
    pub srq_type: SrqType,
    /// Receive work requests.
    pub max_wr: u32,
    /// Scatter entries per request.
    pub max_sge: u32,
    /// The limit event's watermark.
    pub srq_limit: u32,
    xrcd: Option<&'a Xrcd<T>>,
    cq: Option<&'a Cq<T>>,
}

impl<'a, T: IbDriver> SrqInitAttr<'a, T> {
    /// # Safety
    ///
    /// `a` must be the attributes the core passes to `create_srq` of a `T` device, valid
    /// for `'a`: for an XRC SRQ, its XRC domain (if set) and CQ are containers of `T`'s,
    /// alive during the op (the SRQ holds references to them).
    pub(crate) unsafe fn from_raw(a: &'a ksys::ib_srq_init_attr) -> Self {
        let srq_type = SrqType::from_raw(a.srq_type);
        let (xrcd, cq) = if srq_type == SrqType::Xrc {
            // SAFETY: The union's `xrc` member is the one in use for an XRC SRQ.
            let x = unsafe { a.ext.__bindgen_anon_1.xrc.as_ref().xrcd };
            let c = a.ext.cq;
            (
                // SAFETY: The caller's guarantee.
                (!x.is_null()).then(|| unsafe { Xrcd::<T>::from_raw(x) }),
                // SAFETY: As above.
                (!c.is_null()).then(|| unsafe { Cq::<T>::from_raw(c) }),
            )
        } else {
            (None, None)
        };
        Self {
            srq_type,
            max_wr: a.attr.max_wr,
            max_sge: a.attr.max_sge,
            srq_limit: a.attr.srq_limit,
            xrcd,
            cq,
        }
    }

    /// An XRC SRQ's XRC domain (`None` for other SRQs, or a kernel XRC SRQ without one).
    pub fn xrcd(&self) -> Option<&'a Xrcd<T>> {
        self.xrcd
    }

    /// An XRC SRQ's CQ, where its receives complete (`None` for other SRQs).
    pub fn cq(&self) -> Option<&'a Cq<T>> {
        self.cq
    }
}

/// QP states (`enum ib_qp_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QpState {
    /// `IB_QPS_RESET`.
    #[default]
    Reset,
    /// `IB_QPS_INIT`.
    Init,
    /// `IB_QPS_RTR`.
    Rtr,
    /// `IB_QPS_RTS`.
    Rts,
    /// `IB_QPS_SQD`.
    Sqd,
    /// `IB_QPS_SQE`.
    Sqe,
    /// `IB_QPS_ERR`.
    Err,
}

impl QpState {
    fn from_raw(s: ksys::ib_qp_state) -> Option<Self> {
        Some(match s {
            ksys::ib_qp_state_IB_QPS_RESET => Self::Reset,
            ksys::ib_qp_state_IB_QPS_INIT => Self::Init,
            ksys::ib_qp_state_IB_QPS_RTR => Self::Rtr,
            ksys::ib_qp_state_IB_QPS_RTS => Self::Rts,
            ksys::ib_qp_state_IB_QPS_SQD => Self::Sqd,
            ksys::ib_qp_state_IB_QPS_SQE => Self::Sqe,
            ksys::ib_qp_state_IB_QPS_ERR => Self::Err,
            _ => return None,
        })
    }

    fn to_raw(self) -> ksys::ib_qp_state {
        match self {
            Self::Reset => ksys::ib_qp_state_IB_QPS_RESET,
            Self::Init => ksys::ib_qp_state_IB_QPS_INIT,
            Self::Rtr => ksys::ib_qp_state_IB_QPS_RTR,
            Self::Rts => ksys::ib_qp_state_IB_QPS_RTS,
            Self::Sqd => ksys::ib_qp_state_IB_QPS_SQD,
            Self::Sqe => ksys::ib_qp_state_IB_QPS_SQE,
            Self::Err => ksys::ib_qp_state_IB_QPS_ERR,
        }
    }
}

/// Which [`QpAttr`] fields a modify sets (`enum ib_qp_attr_mask`).
pub mod qp_attr_mask {
    /// `IB_QP_STATE`.
    pub const STATE: u32 = ksys::ib_qp_attr_mask_IB_QP_STATE;
    /// `IB_QP_CUR_STATE`.
    pub const CUR_STATE: u32 = ksys::ib_qp_attr_mask_IB_QP_CUR_STATE;
    /// `IB_QP_EN_SQD_ASYNC_NOTIFY`.
    pub const EN_SQD_ASYNC_NOTIFY: u32 = ksys::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY;
    /// `IB_QP_ACCESS_FLAGS`.
    pub const ACCESS_FLAGS: u32 = ksys::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS;
    /// `IB_QP_PKEY_INDEX`.
    pub const PKEY_INDEX: u32 = ksys::ib_qp_attr_mask_IB_QP_PKEY_INDEX;
    /// `IB_QP_PORT`.
    pub const PORT: u32 = ksys::ib_qp_attr_mask_IB_QP_PORT;
    /// `IB_QP_QKEY`.
    pub const QKEY: u32 = ksys::ib_qp_attr_mask_IB_QP_QKEY;
    /// `IB_QP_AV`.
    pub const AV: u32 = ksys::ib_qp_attr_mask_IB_QP_AV;
    /// `IB_QP_PATH_MTU`.
    pub const PATH_MTU: u32 = ksys::ib_qp_attr_mask_IB_QP_PATH_MTU;
    /// `IB_QP_TIMEOUT`.
    pub const TIMEOUT: u32 = ksys::ib_qp_attr_mask_IB_QP_TIMEOUT;
    /// `IB_QP_RETRY_CNT`.
    pub const RETRY_CNT: u32 = ksys::ib_qp_attr_mask_IB_QP_RETRY_CNT;
    /// `IB_QP_RNR_RETRY`.
    pub const RNR_RETRY: u32 = ksys::ib_qp_attr_mask_IB_QP_RNR_RETRY;
    /// `IB_QP_RQ_PSN`.
    pub const RQ_PSN: u32 = ksys::ib_qp_attr_mask_IB_QP_RQ_PSN;
    /// `IB_QP_MAX_QP_RD_ATOMIC`.
    pub const MAX_QP_RD_ATOMIC: u32 = ksys::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC;
    /// `IB_QP_ALT_PATH`.
    pub const ALT_PATH: u32 = ksys::ib_qp_attr_mask_IB_QP_ALT_PATH;
    /// `IB_QP_MIN_RNR_TIMER`.
    pub const MIN_RNR_TIMER: u32 = ksys::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER;
    /// `IB_QP_SQ_PSN`.
    pub const SQ_PSN: u32 = ksys::ib_qp_attr_mask_IB_QP_SQ_PSN;
    /// `IB_QP_MAX_DEST_RD_ATOMIC`.
    pub const MAX_DEST_RD_ATOMIC: u32 = ksys::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC;
    /// `IB_QP_PATH_MIG_STATE`.
    pub const PATH_MIG_STATE: u32 = ksys::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE;
    /// `IB_QP_CAP`.
    pub const CAP: u32 = ksys::ib_qp_attr_mask_IB_QP_CAP;
    /// `IB_QP_DEST_QPN`.
    pub const DEST_QPN: u32 = ksys::ib_qp_attr_mask_IB_QP_DEST_QPN;
    /// `IB_QP_RATE_LIMIT`.
    pub const RATE_LIMIT: u32 = ksys::ib_qp_attr_mask_IB_QP_RATE_LIMIT;
}

/// `IB_AH_GRH`: the address has a global route header.
pub const AH_GRH: u8 = ksys::ib_ah_flags_IB_AH_GRH as u8;

/// An address vector (`struct rdma_ah_attr`): for RoCE the GRH fields, the destination MAC
/// the core resolved and the type of the source GID.
#[derive(Clone, Copy, Debug, Default)]
pub struct AhAttr {
    /// Whether it is a RoCE address (`RDMA_AH_ATTR_TYPE_ROCE`).
    pub roce: bool,
    /// `IB_AH_*` flags ([`AH_GRH`]).
    pub ah_flags: u8,
    /// Service level (RoCE: the Ethernet priority).
    pub sl: u8,
    /// `enum ib_rate`, 0 for the port's rate.
    pub static_rate: u8,
    /// The port.
    pub port_num: u32,
    /// The source GID index.
    pub sgid_index: u8,
    /// The source GID's type (from the GID entry the core resolved), if any.
    pub sgid_type: Option<GidType>,
    /// Hop limit (TTL).
    pub hop_limit: u8,
    /// Traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Flow label.
    pub flow_label: u32,
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Destination MAC (RoCE).
    pub dmac: [u8; 6],
}

impl AhAttr {
    /// # Safety
    ///
    /// `a` must be an attribute struct the core passes (its `sgid_attr`, if set, valid).
    pub(crate) unsafe fn from_raw(a: &ksys::rdma_ah_attr) -> Self {
        let roce = a.type_ == ksys::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
        let g = &a.grh;
        let sgid_type = if g.sgid_attr.is_null() {
            None
        } else {
            // SAFETY: The core holds the entry while the AH attribute is in use.
            GidType::from_raw(unsafe { (*g.sgid_attr).gid_type })
        };
        Self {
            roce,
            ah_flags: a.ah_flags,
            sl: a.sl,
            static_rate: a.static_rate,
            port_num: a.port_num,
            sgid_index: g.sgid_index,
            sgid_type,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
            flow_label: g.flow_label,
            // SAFETY: Every member of `union ib_gid` is plain bytes.
            dgid: unsafe { *g.dgid.raw.as_ref() },
            dmac: if roce {
                // SAFETY: The union's RoCE member is plain bytes, the one in use for a RoCE
                // address.
                unsafe { a.__bindgen_anon_1.roce.as_ref().dmac }
            } else {
                [0; 6]
            },
        }
    }

    /// Whether it has a GRH.
    pub fn has_grh(&self) -> bool {
        self.ah_flags & AH_GRH != 0
    }

    fn write_to(&self, a: &mut ksys::rdma_ah_attr) {
        a.type_ = if self.roce {
            ksys::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE
        } else {
            ksys::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_IB
        };
        a.ah_flags = self.ah_flags;
        a.sl = self.sl;
        a.static_rate = self.static_rate;
        a.port_num = self.port_num;
        a.grh.sgid_index = self.sgid_index;
        a.grh.hop_limit = self.hop_limit;
        a.grh.traffic_class = self.traffic_class;
        a.grh.flow_label = self.flow_label;
        // SAFETY: Plain bytes (see `from_raw`).
        unsafe {
            *a.grh.dgid.raw.as_mut() = self.dgid;
            if self.roce {
                a.__bindgen_anon_1.roce.as_mut().dmac = self.dmac;
            }
        }
    }
}

/// A QP's attributes (`struct ib_qp_attr`): what a modify sets (per [`qp_attr_mask`]) and
/// what a query answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpAttr {
    /// The state to move to (modify) or the current state (query).
    pub qp_state: QpState,
    /// The state the caller believes the QP is in (with `CUR_STATE`).
    pub cur_qp_state: QpState,
    /// `enum ib_mtu` (1 = 256 … 5 = 4096).
    pub path_mtu: u32,
    /// `enum ib_mig_state`.
    pub path_mig_state: u32,
    /// UD Q_Key.
    pub qkey: u32,
    /// Expected receive PSN.
    pub rq_psn: u32,
    /// Next send PSN.
    pub sq_psn: u32,
    /// Remote QP number.
    pub dest_qp_num: u32,
    /// `IB_ACCESS_REMOTE_*` rights of incoming requests.
    pub qp_access_flags: u32,
    /// Queue sizes.
    pub cap: QpCap,
    /// The primary path.
    pub ah_attr: AhAttr,
    /// The alternate path.
    pub alt_ah_attr: AhAttr,
    /// P_Key index.
    pub pkey_index: u16,
    /// Alternate P_Key index.
    pub alt_pkey_index: u16,
    /// Outstanding RDMA reads and atomics as requester.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads and atomics as responder.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer.
    pub min_rnr_timer: u8,
    /// The port.
    pub port_num: u32,
    /// Local ACK timeout (4.096 µs × 2^timeout).
    pub timeout: u8,
    /// Retries.
    pub retry_cnt: u8,
    /// RNR retries.
    pub rnr_retry: u8,
    /// Alternate port.
    pub alt_port_num: u32,
    /// Alternate ACK timeout.
    pub alt_timeout: u8,
}

impl QpAttr {
    /// The attributes `mask` (`qp_attr_mask`) selects; the others are left at their defaults.
    /// Kernel callers (ib_mad, the CM) pass a struct only partly written (`kmalloc`, not
    /// zeroed), so nothing outside the mask may be interpreted — least of all the address
    /// vectors' GID entry pointers.
    ///
    /// # Safety
    ///
    /// `a` must be the attributes the core passes to `modify_qp`: the address vectors `mask`
    /// selects (`IB_QP_AV`, `IB_QP_ALT_PATH`) with their GID entries valid.
    pub(crate) unsafe fn from_raw(
        a: &ksys::ib_qp_attr,
        mask: u32,
    ) -> Result<Self, kernel::error::Error> {
        use kernel::error::code::EINVAL;
        use qp_attr_mask as m;
        let state = if mask & m::STATE != 0 {
            QpState::from_raw(a.qp_state).ok_or(EINVAL)?
        } else {
            QpState::default()
        };
        let cur = if mask & m::CUR_STATE != 0 {
            QpState::from_raw(a.cur_qp_state).ok_or(EINVAL)?
        } else {
            QpState::default()
        };
        Ok(Self {
            qp_state: state,
            cur_qp_state: cur,
            path_mtu: a.path_mtu,
            path_mig_state: a.path_mig_state,
            qkey: a.qkey,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            dest_qp_num: a.dest_qp_num,
            qp_access_flags: a.qp_access_flags as u32,
            cap: QpCap::from_raw(&a.cap),
            ah_attr: if mask & m::AV != 0 {
                // SAFETY: Selected by the mask: valid (the caller's guarantee).
                unsafe { AhAttr::from_raw(&a.ah_attr) }
            } else {
                AhAttr::default()
            },
            alt_ah_attr: if mask & m::ALT_PATH != 0 {
                // SAFETY: As for `ah_attr`.
                unsafe { AhAttr::from_raw(&a.alt_ah_attr) }
            } else {
                AhAttr::default()
            },
            pkey_index: a.pkey_index,
            alt_pkey_index: a.alt_pkey_index,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
            port_num: a.port_num,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            alt_port_num: a.alt_port_num,
            alt_timeout: a.alt_timeout,
        })
    }

    /// Writes a query's answer into the C struct (the core zeroed it).
    pub(crate) fn write_to(&self, a: &mut ksys::ib_qp_attr) {
        a.qp_state = self.qp_state.to_raw();
        a.cur_qp_state = self.qp_state.to_raw();
        a.path_mtu = self.path_mtu;
        a.path_mig_state = self.path_mig_state;
        a.qkey = self.qkey;
        a.rq_psn = self.rq_psn;
        a.sq_psn = self.sq_psn;
        a.dest_qp_num = self.dest_qp_num;
        a.qp_access_flags = self.qp_access_flags as i32;
        self.cap.write_to(&mut a.cap);
        self.ah_attr.write_to(&mut a.ah_attr);
        self.alt_ah_attr.write_to(&mut a.alt_ah_attr);
        a.pkey_index = self.pkey_index;
        a.alt_pkey_index = self.alt_pkey_index;
        a.max_rd_atomic = self.max_rd_atomic;
        a.max_dest_rd_atomic = self.max_dest_rd_atomic;
        a.min_rnr_timer = self.min_rnr_timer;
        a.port_num = self.port_num;
        a.timeout = self.timeout;
        a.retry_cnt = self.retry_cnt;
        a.rnr_retry = self.rnr_retry;
        a.alt_port_num = self.alt_port_num;
        a.alt_timeout = self.alt_timeout;
    }
}
