//! What the engine's operations see of a QP: [`QpView`], the firmware object's fields copied
//! out for one operation, and [`QpRing`], one queue of the QP's buffer read through guest
//! memory, and [`RxMeta`], what a responder CQE reports of a packet's headers. Leaf types shared by the send (`device.rs`), receive (`receive.rs`), UD, XRC, UMR and
//! vector-calc paths, so that those files import them without importing each other.

use crate::{
    eth::dma::{
        DmaError,
        RingMemory, //
    },
    fw::QpBuf,
    guest_mem::GuestMem,
};

use super::cqe::CqeQp;

/// What the engine needs of a QP's firmware object, copied out for one operation.
#[derive(Clone, Debug)]
pub(super) struct QpView {
    pub(super) qpn: u32,
    pub(super) state: u8,
    pub(super) pd: u32,
    pub(super) cqn_snd: u32,
    pub(super) cqn_rcv: u32,
    pub(super) user_index: u32,
    pub(super) dbr: u64,
    pub(super) buf: QpBuf,
    /// The SRQ (or RMP) the QP receives from.
    pub(super) srqn: Option<u32>,
    /// The PD of the receive WQEs' lkeys (the SRQ's for an SRQ).
    pub(super) recv_pd: u32,
    /// The service type (`qpc_st`).
    pub(super) st: u8,
    /// The context's Q_Key (UD).
    pub(super) qkey: u32,
    /// The context's MTU code (`qpc.mtu`, IB encoding).
    pub(super) mtu: u8,
    /// The remote rights the responder grants (`qpc.rre`, `rwe`, `rae`).
    pub(super) rights: QpRights,
    /// IPoIB's UD offloads (`qpc.ulp_stateless_offload_mode` 1: `ipoib_offload.rs`).
    pub(super) ulp: bool,
}

/// The remote operations a QP's responder accepts, as the context's `rre`, `rwe` and `rae`
/// bits say (mlx5_ib `set_qpc_atomic_flags` writes them from the QP's access flags, leaving
/// only `rwe` without responder resources). A request of a class the QP refuses is NAKed
/// with a remote access error before any R_Key is looked at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct QpRights {
    pub(super) read: bool,
    pub(super) write: bool,
    pub(super) atomic: bool,
}

impl QpView {
    pub(super) fn cqe_qp(&self) -> CqeQp {
        CqeQp {
            qpn: self.qpn,
            user_index: self.user_index,
        }
    }
}

/// One queue of a QP buffer (the receive queue at 0, the send queue after it).
pub(super) struct QpRing<'a> {
    pub(super) buf: &'a QpBuf,
    pub(super) base: u64,
    pub(super) mem: &'a GuestMem,
}

impl RingMemory for QpRing<'_> {
    fn read_ring(&self, offset: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let shift = self.buf.page_shift.min(40);
        let page_bytes = 1u64 << shift;
        let mut done = 0usize;
        while done < out.len() {
            let abs = self.buf.offset + self.base + offset + done as u64;
            let fault = DmaError::Fault {
                addr: abs,
                len: (out.len() - done) as u64,
            };
            let page = usize::try_from(abs >> shift).map_err(|_| fault)?;
            let pa = *self.buf.pas.get(page).ok_or(fault)?;
            let in_page = abs & (page_bytes - 1);
            let n = ((page_bytes - in_page) as usize).min(out.len() - done);
            self.mem
                .read(pa + in_page, &mut out[done..done + n])
                .map_err(|_| fault)?;
            done += n;
        }
        Ok(())
    }
}

/// What a responder CQE reports of the packet's headers.
#[derive(Clone, Copy, Debug)]
pub(super) struct RxMeta {
    /// Its network header's `roce_l3_header_type` (GRH for RoCE v1, IPv4 or IPv6).
    pub(super) l3: u8,
    /// Its 802.1Q TCI, if tagged.
    pub(super) vlan: Option<u16>,
    /// The LRH of a packet off an InfiniBand link (`ib_ud.rs`).
    pub(super) ib: Option<IbRx>,
}

/// What a responder CQE reports of an IB packet's LRH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbRx {
    /// Source LID.
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// The DLID's path bits (its offset from the port's base LID).
    pub path_bits: u8,
    /// Whether the packet had a GRH (the CQE's `g` bits; mlx5_ib's `IB_WC_GRH`).
    pub grh: bool,
}
