// SPDX-License-Identifier: GPL-2.0
//! The kernel data path's types: the work requests kernel users post (`struct ib_send_wr`
//! and its containers `ib_ud_wr`, `ib_rdma_wr`, `ib_atomic_wr`; `struct ib_recv_wr`), read
//! through [`SendWrs`] / [`RecvWrs`] cursors over the caller's chain, and the work
//! completions a driver hands back through a [`WcWriter`] over the caller's `ib_wc` array.

use core::marker::PhantomData;

use crate::{
    driver::IbDriver,
    object::{
        Ah,
        Mr,
        Qp, //
    },
    umem::Access,
};

/// A scatter/gather entry (`struct ib_sge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// Bus address (for the local DMA lkey) or address within the MR.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// The local key of the memory region.
    pub lkey: u32,
}

/// The scatter/gather list of a work request.
fn sges<'a>(list: *const ksys::ib_sge, n: i32) -> impl Iterator<Item = Sge> + 'a {
    let n = if list.is_null() { 0 } else { n.max(0) as usize };
    (0..n).map(move |i| {
        // SAFETY: The poster's list has `num_sge` entries, valid for the post call (the
        // cursor's lifetime `'a`).
        let s = unsafe { &*list.add(i) };
        Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        }
    })
}

/// A send work request's operation (`enum ib_wr_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrOpcode {
    /// `IB_WR_SEND`.
    Send,
    /// `IB_WR_SEND_WITH_IMM`.
    SendImm,
    /// `IB_WR_SEND_WITH_INV`.
    SendInv,
    /// `IB_WR_RDMA_WRITE`.
    RdmaWrite,
    /// `IB_WR_RDMA_WRITE_WITH_IMM`.
    RdmaWriteImm,
    /// `IB_WR_RDMA_READ`.
    RdmaRead,
    /// `IB_WR_ATOMIC_CMP_AND_SWP`.
    CmpSwap,
    /// `IB_WR_ATOMIC_FETCH_AND_ADD`.
    FetchAdd,
    /// `IB_WR_LOCAL_INV`.
    LocalInv,
    /// `IB_WR_REG_MR`: fast registration of a mapped MR ([`SendWr::reg`]).
    RegMr,
    /// Any other (masked atomics, LSO, ...): the raw value.
    Other(u32),
}

impl WrOpcode {
    fn from_raw(op: ksys::ib_wr_opcode) -> Self {
        match op {
            ksys::ib_wr_opcode_IB_WR_SEND => Self::Send,
            ksys::ib_wr_opcode_IB_WR_SEND_WITH_IMM => Self::SendImm,
            ksys::ib_wr_opcode_IB_WR_SEND_WITH_INV => Self::SendInv,
            ksys::ib_wr_opcode_IB_WR_RDMA_WRITE => Self::RdmaWrite,
            ksys::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => Self::RdmaWriteImm,
            ksys::ib_wr_opcode_IB_WR_RDMA_READ => Self::RdmaRead,
            ksys::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => Self::CmpSwap,
            ksys::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => Self::FetchAdd,
            ksys::ib_wr_opcode_IB_WR_LOCAL_INV => Self::LocalInv,
            ksys::ib_wr_opcode_IB_WR_REG_MR => Self::RegMr,
            o => Self::Other(o),
        }
    }

    /// The operations whose request is an `ib_rdma_wr` (remote address and key).
    fn is_rdma(self) -> bool {
        matches!(self, Self::RdmaWrite | Self::RdmaWriteImm | Self::RdmaRead)
    }

    /// The operations whose request is an `ib_atomic_wr`.
    fn is_atomic(self) -> bool {
        matches!(self, Self::CmpSwap | Self::FetchAdd)
    }
}

/// `IB_SEND_*` flags of a send work request.
pub mod send_flags {
    /// `IB_SEND_FENCE`: wait for earlier reads and atomics.
    pub const FENCE: u32 = ksys::ib_send_flags_IB_SEND_FENCE as u32;
    /// `IB_SEND_SIGNALED`: complete with a work completion.
    pub const SIGNALED: u32 = ksys::ib_send_flags_IB_SEND_SIGNALED as u32;
    /// `IB_SEND_SOLICITED`: raise a solicited event at the receiver.
    pub const SOLICITED: u32 = ksys::ib_send_flags_IB_SEND_SOLICITED as u32;
    /// `IB_SEND_INLINE`: copy the data into the request.
    pub const INLINE: u32 = ksys::ib_send_flags_IB_SEND_INLINE as u32;
}

/// The destination of a UD (or GSI) send (`struct ib_ud_wr`).
pub struct UdDest<'a, T: IbDriver> {
    /// The address handle (one of the driver's, created on the QP's device).
    pub ah: &'a Ah<T>,
    /// Destination QP.
    pub remote_qpn: u32,
    /// Destination Q_Key.
    pub remote_qkey: u32,
    /// P_Key index (GSI only).
    pub pkey_index: u16,
}

/// A fast registration (`struct ib_reg_wr`): the MR `map_mr_sg` filled, to be made valid
/// under `key` with `access`.
pub struct RegWr<'a, T: IbDriver> {
    /// The MR (its pages, `iova`, `length`).
    pub mr: &'a Mr<T>,
    /// The key it is registered under (the MR's key with a new low byte).
    pub key: u32,
    /// `IB_ACCESS_*` rights.
    pub access: Access,
}

/// The remote side of an RDMA or atomic operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address.
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
    /// Atomic operands: compare (or add) and swap values.
    pub compare_add: u64,
    /// Swap value of compare-and-swap.
    pub swap: u64,
}

/// One send work request of a posted chain.
pub struct SendWr<'a, T: IbDriver> {
    raw: &'a ksys::ib_send_wr,
    _t: PhantomData<T>,
}

impl<'a, T: IbDriver> SendWr<'a, T> {
    /// The caller's cookie, returned in the work completion.
    pub fn wr_id(&self) -> u64 {
        // SAFETY: Both union members are 64-bit values; `wr_id` reads the bits either way.
        unsafe { *self.raw.__bindgen_anon_1.wr_id.as_ref() }
    }

    /// The operation.
    pub fn opcode(&self) -> WrOpcode {
        WrOpcode::from_raw(self.raw.opcode)
    }

    /// The `IB_SEND_*` flags ([`send_flags`]).
    pub fn flags(&self) -> u32 {
        self.raw.send_flags as u32
    }

    /// The gather list.
    pub fn sges(&self) -> impl Iterator<Item = Sge> + 'a {
        sges(self.raw.sg_list, self.raw.num_sge)
    }

    /// The number of gather entries (0 for a negative count).
    pub fn num_sge(&self) -> usize {
        self.raw.num_sge.max(0) as usize
    }

    /// The bytes of an `IB_SEND_INLINE` request on a kernel user's `qp`, gather entry by
    /// gather entry (mlx5_ib `set_data_inl_seg`: the driver copies them into the WQE during
    /// the post, the lkeys are not used); `None` without the flag or for a process's QP
    /// (whose uverbs-posted entries hold the process's addresses).
    pub fn inline_data(&self, qp: &Qp<T>) -> Option<impl Iterator<Item = &'a [u8]> + 'a> {
        if self.flags() & send_flags::INLINE == 0 || qp.is_user() {
            return None;
        }
        Some(
            sges(self.raw.sg_list, self.raw.num_sge)
                .filter(|s| s.length != 0 && s.addr != 0)
                .map(|s| {
                    // SAFETY: The entries of a kernel user's inline request are kernel
                    // virtual addresses readable for `length` bytes during the post call
                    // (`'a`: the chain's guarantee, see `SendWrs::new`).
                    unsafe {
                        core::slice::from_raw_parts(s.addr as usize as *const u8, s.length as usize)
                    }
                }),
        )
    }

    /// The immediate data as it goes on the wire (big-endian bits), for `*_IMM`.
    pub fn imm_data_be(&self) -> u32 {
        // SAFETY: Both union members are 32-bit integers.
        unsafe { *self.raw.ex.imm_data.as_ref() }
    }

    /// The rkey to invalidate, for `SEND_WITH_INV` and `LOCAL_INV`.
    pub fn invalidate_rkey(&self) -> u32 {
        // SAFETY: Both union members are 32-bit integers.
        unsafe { *self.raw.ex.invalidate_rkey.as_ref() }
    }

    /// The UD destination, when `ud` is true (the QP is UD or GSI: the core's posters wrap
    /// their requests in an `ib_ud_wr` for those).
    ///
    /// The poster guarantees the container; the driver says which QP type it is.
    pub fn ud(&self, qp: &Qp<T>) -> Option<UdDest<'a, T>> {
        if !qp.is_datagram() {
            return None;
        }
        let p = core::ptr::from_ref(self.raw).cast::<ksys::ib_ud_wr>();
        // SAFETY: Requests on UD and GSI QPs are `ib_ud_wr`s (`ud_wr()` in ib_verbs.h) whose
        // first member is this `ib_send_wr`; valid for the post call.
        let u = unsafe { &*p };
        if u.ah.is_null() {
            return None;
        }
        Some(UdDest {
            // SAFETY: The AH was created on this QP's device, hence by this driver, and the
            // poster holds it for the call.
            ah: unsafe { Ah::<T>::from_raw(u.ah) },
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
            pkey_index: u.pkey_index,
        })
    }

    /// The registration of a `REG_MR` request.
    pub fn reg(&self) -> Option<RegWr<'a, T>> {
        if self.opcode() != WrOpcode::RegMr {
            return None;
        }
        // SAFETY: REG_MR requests are `ib_reg_wr`s (`reg_wr()`), first member this one; valid
        // for the post call.
        let r = unsafe { &*core::ptr::from_ref(self.raw).cast::<ksys::ib_reg_wr>() };
        if r.mr.is_null() {
            return None;
        }
        Some(RegWr {
            // SAFETY: An MR of this device (so this driver's `alloc_mr`), held for the call.
            mr: unsafe { Mr::<T>::from_raw(r.mr) },
            key: r.key,
            access: Access(r.access as u32),
        })
    }

    /// The remote address, key and atomic operands of an RDMA or atomic request.
    pub fn remote(&self) -> Option<Remote> {
        let op = self.opcode();
        let p = core::ptr::from_ref(self.raw);
        if op.is_rdma() {
            // SAFETY: RDMA requests are `ib_rdma_wr`s (`rdma_wr()`), first member this one.
            let r = unsafe { &*p.cast::<ksys::ib_rdma_wr>() };
            Some(Remote {
                addr: r.remote_addr,
                rkey: r.rkey,
                compare_add: 0,
                swap: 0,
            })
        } else if op.is_atomic() {
            // SAFETY: Atomic requests are `ib_atomic_wr`s (`atomic_wr()`), first member this.
            let a = unsafe { &*p.cast::<ksys::ib_atomic_wr>() };
            Some(Remote {
                addr: a.remote_addr,
                rkey: a.rkey,
                compare_add: a.compare_add,
                swap: a.swap,
            })
        } else {
            None
        }
    }
}

/// A cursor over a posted chain of send work requests. After an error, the layer reports
/// the last request the driver took from it as the bad one.
pub struct SendWrs<'a, T: IbDriver> {
    next: *const ksys::ib_send_wr,
    last: *const ksys::ib_send_wr,
    _t: PhantomData<(&'a ksys::ib_send_wr, T)>,
}

impl<'a, T: IbDriver> SendWrs<'a, T> {
    /// # Safety
    ///
    /// `first` is the head of a chain valid for `'a` (the post call); on a kernel user's QP
    /// the gather entries of its `IB_SEND_INLINE` requests are kernel virtual addresses,
    /// readable for their lengths for `'a` (the verbs contract of inline sends).
    pub(crate) unsafe fn new(first: *const ksys::ib_send_wr) -> Self {
        Self {
            next: first,
            last: first,
            _t: PhantomData,
        }
    }

    /// The request to report as failed: the last one taken (the first if none was).
    pub(crate) fn failed(&self) -> *const ksys::ib_send_wr {
        self.last
    }
}

impl<'a, T: IbDriver> Iterator for SendWrs<'a, T> {
    type Item = SendWr<'a, T>;

    fn next(&mut self) -> Option<SendWr<'a, T>> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: A request of the chain, valid for `'a` (type invariant).
        let raw = unsafe { &*self.next };
        self.last = self.next;
        self.next = raw.next;
        Some(SendWr {
            raw,
            _t: PhantomData,
        })
    }
}

/// One receive work request of a posted chain.
pub struct RecvWr<'a> {
    raw: &'a ksys::ib_recv_wr,
}

impl<'a> RecvWr<'a> {
    /// The caller's cookie, returned in the work completion.
    pub fn wr_id(&self) -> u64 {
        // SAFETY: Both union members are 64-bit values.
        unsafe { *self.raw.__bindgen_anon_1.wr_id.as_ref() }
    }

    /// The scatter list.
    pub fn sges(&self) -> impl Iterator<Item = Sge> + 'a {
        sges(self.raw.sg_list, self.raw.num_sge)
    }

    /// The number of scatter entries (0 for a negative count).
    pub fn num_sge(&self) -> usize {
        self.raw.num_sge.max(0) as usize
    }
}

/// A cursor over a posted chain of receive work requests (see [`SendWrs`]).
pub struct RecvWrs<'a> {
    next: *const ksys::ib_recv_wr,
    last: *const ksys::ib_recv_wr,
    _t: PhantomData<&'a ksys::ib_recv_wr>,
}

impl<'a> RecvWrs<'a> {
    /// # Safety
    ///
    /// `first` is the head of a chain valid for `'a` (the post call).
    pub(crate) unsafe fn new(first: *const ksys::ib_recv_wr) -> Self {
        Self {
            next: first,
            last: first,
            _t: PhantomData,
        }
    }

    /// The request to report as failed.
    pub(crate) fn failed(&self) -> *const ksys::ib_recv_wr {
        self.last
    }
}

impl<'a> Iterator for RecvWrs<'a> {
    type Item = RecvWr<'a>;

    fn next(&mut self) -> Option<RecvWr<'a>> {
        if self.next.is_null() {
            return None;
        }
        // SAFETY: A request of the chain, valid for `'a` (type invariant).
        let raw = unsafe { &*self.next };
        self.last = self.next;
        self.next = raw.next;
        Some(RecvWr { raw })
    }
}

/// A work completion's status (`enum ib_wc_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum WcStatus {
    /// `IB_WC_SUCCESS`.
    Success = ksys::ib_wc_status_IB_WC_SUCCESS,
    /// `IB_WC_LOC_LEN_ERR`.
    LocLenErr = ksys::ib_wc_status_IB_WC_LOC_LEN_ERR,
    /// `IB_WC_LOC_QP_OP_ERR`.
    LocQpOpErr = ksys::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
    /// `IB_WC_LOC_PROT_ERR`.
    LocProtErr = ksys::ib_wc_status_IB_WC_LOC_PROT_ERR,
    /// `IB_WC_WR_FLUSH_ERR`.
    WrFlushErr = ksys::ib_wc_status_IB_WC_WR_FLUSH_ERR,
    /// `IB_WC_MW_BIND_ERR`.
    MwBindErr = ksys::ib_wc_status_IB_WC_MW_BIND_ERR,
    /// `IB_WC_BAD_RESP_ERR`.
    BadRespErr = ksys::ib_wc_status_IB_WC_BAD_RESP_ERR,
    /// `IB_WC_LOC_ACCESS_ERR`.
    LocAccessErr = ksys::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
    /// `IB_WC_REM_INV_REQ_ERR`.
    RemInvReqErr = ksys::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
    /// `IB_WC_REM_ACCESS_ERR`.
    RemAccessErr = ksys::ib_wc_status_IB_WC_REM_ACCESS_ERR,
    /// `IB_WC_REM_OP_ERR`.
    RemOpErr = ksys::ib_wc_status_IB_WC_REM_OP_ERR,
    /// `IB_WC_RETRY_EXC_ERR`.
    RetryExcErr = ksys::ib_wc_status_IB_WC_RETRY_EXC_ERR,
    /// `IB_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExcErr = ksys::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
    /// `IB_WC_REM_ABORT_ERR`.
    RemAbortErr = ksys::ib_wc_status_IB_WC_REM_ABORT_ERR,
    /// `IB_WC_GENERAL_ERR`.
    GeneralErr = ksys::ib_wc_status_IB_WC_GENERAL_ERR,
}

/// A work completion's operation (`enum ib_wc_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum WcOpcode {
    /// `IB_WC_SEND`.
    Send = ksys::ib_wc_opcode_IB_WC_SEND,
    /// `IB_WC_RDMA_WRITE`.
    RdmaWrite = ksys::ib_wc_opcode_IB_WC_RDMA_WRITE,
    /// `IB_WC_RDMA_READ`.
    RdmaRead = ksys::ib_wc_opcode_IB_WC_RDMA_READ,
    /// `IB_WC_COMP_SWAP`.
    CompSwap = ksys::ib_wc_opcode_IB_WC_COMP_SWAP,
    /// `IB_WC_FETCH_ADD`.
    FetchAdd = ksys::ib_wc_opcode_IB_WC_FETCH_ADD,
    /// `IB_WC_LOCAL_INV`.
    LocalInv = ksys::ib_wc_opcode_IB_WC_LOCAL_INV,
    /// `IB_WC_REG_MR`.
    RegMr = ksys::ib_wc_opcode_IB_WC_REG_MR,
    /// `IB_WC_RECV`.
    Recv = ksys::ib_wc_opcode_IB_WC_RECV,
    /// `IB_WC_RECV_RDMA_WITH_IMM`.
    RecvRdmaWithImm = ksys::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
}

/// `IB_WC_*` flags of a work completion.
pub mod wc_flags {
    /// `IB_WC_GRH`: the buffer starts with the 40-byte GRH area.
    pub const GRH: u32 = ksys::ib_wc_flags_IB_WC_GRH;
    /// `IB_WC_WITH_IMM`.
    pub const WITH_IMM: u32 = ksys::ib_wc_flags_IB_WC_WITH_IMM;
    /// `IB_WC_WITH_INVALIDATE`.
    pub const WITH_INVALIDATE: u32 = ksys::ib_wc_flags_IB_WC_WITH_INVALIDATE;
    /// `IB_WC_WITH_VLAN`.
    pub const WITH_VLAN: u32 = ksys::ib_wc_flags_IB_WC_WITH_VLAN;
    /// `IB_WC_WITH_NETWORK_HDR_TYPE`.
    pub const WITH_NETWORK_HDR_TYPE: u32 = ksys::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
}

/// The network header of a RoCE receive (`enum rdma_network_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum NetworkType {
    /// `RDMA_NETWORK_IB`: InfiniBand.
    #[default]
    Ib = ksys::rdma_network_type_RDMA_NETWORK_IB as u8,
    /// `RDMA_NETWORK_ROCE_V1`: RoCE v1 (EtherType 0x8915, a GRH).
    RoceV1 = ksys::rdma_network_type_RDMA_NETWORK_ROCE_V1 as u8,
    /// `RDMA_NETWORK_IPV4`: RoCE v2 over IPv4.
    Ipv4 = ksys::rdma_network_type_RDMA_NETWORK_IPV4 as u8,
    /// `RDMA_NETWORK_IPV6`: RoCE v2 over IPv6.
    Ipv6 = ksys::rdma_network_type_RDMA_NETWORK_IPV6 as u8,
}

/// A QP as work completions name it: an opaque handle a driver keeps for the QPs of its
/// CQs. It is only ever written into a completion, never dereferenced by the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpHandle(*mut ksys::ib_qp);

// SAFETY: An opaque token; the layer never dereferences it.
unsafe impl Send for QpHandle {}
// SAFETY: As for `Send`.
unsafe impl Sync for QpHandle {}

impl QpHandle {
    pub(crate) fn from_raw(qp: *mut ksys::ib_qp) -> Self {
        Self(qp)
    }
}

impl<T: IbDriver> Qp<T> {
    /// The handle work completions of this QP carry.
    pub fn handle(&self) -> QpHandle {
        QpHandle(self.as_raw())
    }
}

/// A work completion, as a driver describes it.
#[derive(Clone, Copy, Debug)]
pub struct WorkCompletion {
    /// The work request's cookie.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Operation (meaningful on success).
    pub opcode: WcOpcode,
    /// The device's syndrome of an error.
    pub vendor_err: u32,
    /// Bytes received (receive completions; with the GRH area when [`wc_flags::GRH`]).
    pub byte_len: u32,
    /// The QP.
    pub qp: QpHandle,
    /// Immediate data (big-endian bits) or invalidated rkey, per the flags.
    pub ex: u32,
    /// The sender's QP (UD receives).
    pub src_qp: u32,
    /// [`wc_flags`].
    pub flags: u32,
    /// P_Key index (GSI receives).
    pub pkey_index: u16,
    /// Service level (RoCE: the VLAN priority).
    pub sl: u8,
    /// VLAN ID, with [`wc_flags::WITH_VLAN`].
    pub vlan_id: u16,
    /// Network header type, with [`wc_flags::WITH_NETWORK_HDR_TYPE`].
    pub network_hdr_type: NetworkType,
}

impl WorkCompletion {
    /// A completion of `qp`'s request `wr_id` with `status`, everything else empty.
    pub fn new(qp: QpHandle, wr_id: u64, status: WcStatus, opcode: WcOpcode) -> Self {
        Self {
            wr_id,
            status,
            opcode,
            vendor_err: 0,
            byte_len: 0,
            qp,
            ex: 0,
            src_qp: 0,
            flags: 0,
            pkey_index: 0,
            sl: 0,
            vlan_id: 0,
            network_hdr_type: NetworkType::Ib,
        }
    }
}

/// The caller's array of work completions, filled in order by the driver's `poll_cq`.
pub struct WcWriter<'a> {
    base: *mut ksys::ib_wc,
    len: usize,
    cap: usize,
    _t: PhantomData<&'a mut [ksys::ib_wc]>,
}

impl<'a> WcWriter<'a> {
    /// # Safety
    ///
    /// `base` has room for `cap` (non-negative) entries, writable for `'a`.
    pub(crate) unsafe fn new(base: *mut ksys::ib_wc, cap: i32) -> Self {
        Self {
            base,
            len: 0,
            cap: cap.max(0) as usize,
            _t: PhantomData,
        }
    }

    /// Entries written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entries still free.
    pub fn room(&self) -> usize {
        self.cap - self.len
    }

    /// Appends `wc`; `false` (and nothing written) when the array is full.
    pub fn push(&mut self, wc: &WorkCompletion) -> bool {
        if self.len == self.cap {
            return false;
        }
        let mut w: ksys::ib_wc = pin_init::zeroed();
        // SAFETY: Writing the 64-bit member of a union of a 64-bit value and a pointer.
        unsafe { *w.__bindgen_anon_1.wr_id.as_mut() = wc.wr_id };
        w.status = wc.status as ksys::ib_wc_status;
        w.opcode = wc.opcode as ksys::ib_wc_opcode;
        w.vendor_err = wc.vendor_err;
        w.byte_len = wc.byte_len;
        w.qp = wc.qp.0;
        // SAFETY: Writing one of two 32-bit integer members.
        unsafe { *w.ex.imm_data.as_mut() = wc.ex };
        w.src_qp = wc.src_qp;
        w.wc_flags = wc.flags as i32;
        w.pkey_index = wc.pkey_index;
        w.sl = wc.sl;
        w.vlan_id = wc.vlan_id;
        w.network_hdr_type = wc.network_hdr_type as u8;
        // SAFETY: `len < cap`: a writable entry of the caller's array (type invariant).
        unsafe { self.base.add(self.len).write(w) };
        self.len += 1;
        true
    }
}
