//! Segmentation of a message into packets by the path MTU (IBTA vol 1 9.7.2): how many PSNs a
//! request consumes, and which opcode, PSN and payload range each of its packets carries.
//!
//! A SEND or RDMA WRITE of `len` bytes is `max(1, ⌈len / MTU⌉)` packets, FIRST, MIDDLE…,
//! LAST, or a single ONLY; every packet but the last carries exactly one MTU. An RDMA READ is
//! one request packet but consumes as many PSNs as its responses are packets; an atomic is
//! one packet and one PSN.

use super::headers::{Opcode, Service};
use super::psn::Psn;

/// The path MTU of a connected QP (the QP context's `mtu` code, IBTA's PMTU encoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathMtu {
    /// 256 bytes (code 1).
    Mtu256,
    /// 512 bytes (code 2).
    Mtu512,
    /// 1024 bytes (code 3).
    Mtu1024,
    /// 2048 bytes (code 4).
    Mtu2048,
    /// 4096 bytes (code 5).
    Mtu4096,
}

impl PathMtu {
    /// The MTU of code `code` (1..=5), or `None`.
    pub const fn from_code(code: u8) -> Option<PathMtu> {
        Some(match code {
            1 => PathMtu::Mtu256,
            2 => PathMtu::Mtu512,
            3 => PathMtu::Mtu1024,
            4 => PathMtu::Mtu2048,
            5 => PathMtu::Mtu4096,
            _ => return None,
        })
    }

    /// The payload bytes one packet carries at most.
    pub const fn bytes(self) -> u32 {
        match self {
            PathMtu::Mtu256 => 256,
            PathMtu::Mtu512 => 512,
            PathMtu::Mtu1024 => 1024,
            PathMtu::Mtu2048 => 2048,
            PathMtu::Mtu4096 => 4096,
        }
    }

    /// How many packets `len` bytes take: `max(1, ⌈len / MTU⌉)`.
    pub const fn packets(self, len: u32) -> u32 {
        let m = self.bytes();
        if len == 0 {
            1
        } else {
            len.div_ceil(m)
        }
    }
}

/// The operation of a send work request, as the transport sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RequestOp {
    /// SEND.
    Send,
    /// SEND with immediate data (the LAST/ONLY packet carries ImmDt).
    SendImm,
    /// SEND with invalidate (the LAST/ONLY packet carries IETH; RC only).
    SendInv,
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate data.
    WriteImm,
    /// RDMA READ (RC only).
    Read,
    /// Atomic compare and swap (RC only).
    CompareSwap,
    /// Atomic fetch and add (RC only).
    FetchAdd,
}

/// The four classes of requests the requester treats differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// SEND in any variant: acknowledged by ACKs, consumes a receive WQE.
    Send,
    /// RDMA WRITE in any variant: acknowledged by ACKs.
    Write,
    /// RDMA READ: completed by its response packets.
    Read,
    /// An atomic: completed by its ATOMIC ACKNOWLEDGE.
    Atomic,
}

impl RequestOp {
    /// The class of the operation.
    pub const fn kind(self) -> OpKind {
        match self {
            RequestOp::Send | RequestOp::SendImm | RequestOp::SendInv => OpKind::Send,
            RequestOp::Write | RequestOp::WriteImm => OpKind::Write,
            RequestOp::Read => OpKind::Read,
            RequestOp::CompareSwap | RequestOp::FetchAdd => OpKind::Atomic,
        }
    }

    /// Whether the responder must answer with data or a value (READ, atomics), so that the
    /// requester's outstanding read/atomic limit applies.
    pub const fn is_read_or_atomic(self) -> bool {
        matches!(self.kind(), OpKind::Read | OpKind::Atomic)
    }

    /// How many PSNs a request of `len` bytes consumes.
    pub const fn psn_count(self, len: u32, mtu: PathMtu) -> u32 {
        match self.kind() {
            OpKind::Atomic => 1,
            _ => mtu.packets(len),
        }
    }

    /// Whether `service` carries the operation (UC: SEND and WRITE without invalidate; UD:
    /// SEND and SEND with immediate).
    pub const fn allowed_on(self, service: Service) -> bool {
        match service {
            Service::Rc | Service::Xrc | Service::Dc => true,
            Service::Uc => matches!(
                self,
                RequestOp::Send | RequestOp::SendImm | RequestOp::Write | RequestOp::WriteImm
            ),
            Service::Ud => matches!(self, RequestOp::Send | RequestOp::SendImm),
            Service::Cnp => false,
        }
    }
}

/// The opcode of packet `index` of `count` of a request `op` on `service`, or `None` when the
/// service does not carry the operation or `index` is out of range. READ and atomics have one
/// request packet (index 0).
pub const fn opcode_for(service: Service, op: RequestOp, index: u32, count: u32) -> Option<Opcode> {
    use Opcode::*;
    if !op.allowed_on(service) || index >= count {
        return None;
    }
    if let Service::Ud = service {
        if count != 1 {
            return None;
        }
        return Some(match op {
            RequestOp::SendImm => UdSendOnlyWithImmediate,
            _ => UdSendOnly,
        });
    }
    let uc = matches!(service, Service::Uc);
    let only = count == 1;
    let first = index == 0;
    let last = index + 1 == count;
    // (first, middle, last, only) per operation and service.
    let (f, m, l, o) = match (op, uc) {
        (RequestOp::Send, false) => (RcSendFirst, RcSendMiddle, RcSendLast, RcSendOnly),
        (RequestOp::SendImm, false) => (
            RcSendFirst,
            RcSendMiddle,
            RcSendLastWithImmediate,
            RcSendOnlyWithImmediate,
        ),
        (RequestOp::SendInv, _) => (
            RcSendFirst,
            RcSendMiddle,
            RcSendLastWithInvalidate,
            RcSendOnlyWithInvalidate,
        ),
        (RequestOp::Write, false) => (
            RcRdmaWriteFirst,
            RcRdmaWriteMiddle,
            RcRdmaWriteLast,
            RcRdmaWriteOnly,
        ),
        (RequestOp::WriteImm, false) => (
            RcRdmaWriteFirst,
            RcRdmaWriteMiddle,
            RcRdmaWriteLastWithImmediate,
            RcRdmaWriteOnlyWithImmediate,
        ),
        (RequestOp::Send, true) => (UcSendFirst, UcSendMiddle, UcSendLast, UcSendOnly),
        (RequestOp::SendImm, true) => (
            UcSendFirst,
            UcSendMiddle,
            UcSendLastWithImmediate,
            UcSendOnlyWithImmediate,
        ),
        (RequestOp::Write, true) => (
            UcRdmaWriteFirst,
            UcRdmaWriteMiddle,
            UcRdmaWriteLast,
            UcRdmaWriteOnly,
        ),
        (RequestOp::WriteImm, true) => (
            UcRdmaWriteFirst,
            UcRdmaWriteMiddle,
            UcRdmaWriteLastWithImmediate,
            UcRdmaWriteOnlyWithImmediate,
        ),
        (RequestOp::Read, _) => {
            return if first { Some(RcRdmaReadRequest) } else { None };
        }
        (RequestOp::CompareSwap, _) => {
            return if only { Some(RcCompareSwap) } else { None };
        }
        (RequestOp::FetchAdd, _) => {
            return if only { Some(RcFetchAdd) } else { None };
        }
    };
    Some(if only {
        o
    } else if first {
        f
    } else if last {
        l
    } else {
        m
    })
}

/// One packet of a SEND or WRITE message, or the request packet of a READ or atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The opcode.
    pub opcode: Opcode,
    /// The packet's PSN.
    pub psn: Psn,
    /// SEND/WRITE: offset of the payload in the message. READ: offset in the requested range
    /// of the bytes this (re)issued request asks for (RETH VA = remote VA + offset).
    pub offset: u32,
    /// SEND/WRITE: payload bytes. READ: the RETH DMA length to ask for. Atomics: 8.
    pub len: u32,
}

/// The packet of a request `op` of `len` bytes whose first PSN is `first_psn` that starts at
/// PSN index `index` (`0..op.psn_count(len, mtu)`), or `None` out of range or when `service`
/// does not carry `op`. For a READ any index is a (re-)request for the responses from that
/// PSN on.
pub fn segment_at(
    service: Service,
    op: RequestOp,
    len: u32,
    mtu: PathMtu,
    first_psn: Psn,
    index: u32,
) -> Option<Segment> {
    let count = op.psn_count(len, mtu);
    if index >= count {
        return None;
    }
    let m = mtu.bytes();
    let offset = index.saturating_mul(m);
    let psn = first_psn.add(index);
    match op.kind() {
        OpKind::Read => Some(Segment {
            opcode: opcode_for(service, op, 0, 1)?,
            psn,
            offset,
            len: len.saturating_sub(offset),
        }),
        OpKind::Atomic => Some(Segment {
            opcode: opcode_for(service, op, 0, 1)?,
            psn,
            offset: 0,
            len: 8,
        }),
        OpKind::Send | OpKind::Write => Some(Segment {
            opcode: opcode_for(service, op, index, count)?,
            psn,
            offset,
            len: len.saturating_sub(offset).min(m),
        }),
    }
}

/// All packets of a request (for a READ, just its request packet): `segment_at` for every
/// PSN index of a SEND or WRITE, index 0 for the others.
pub fn segment(
    service: Service,
    op: RequestOp,
    len: u32,
    mtu: PathMtu,
    first_psn: Psn,
) -> Vec<Segment> {
    let count = match op.kind() {
        OpKind::Send | OpKind::Write => op.psn_count(len, mtu),
        OpKind::Read | OpKind::Atomic => 1,
    };
    (0..count)
        .filter_map(|i| segment_at(service, op, len, mtu, first_psn, i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Opcode::*;

    #[test]
    fn mtu_codes() {
        assert_eq!(PathMtu::from_code(0), None);
        assert_eq!(PathMtu::from_code(6), None);
        assert_eq!(PathMtu::from_code(1).map(PathMtu::bytes), Some(256));
        assert_eq!(PathMtu::from_code(5).map(PathMtu::bytes), Some(4096));
        let m = PathMtu::Mtu1024;
        assert_eq!(
            [0, 1, 1024, 1025, 4096].map(|l| m.packets(l)),
            [1, 1, 1, 2, 4]
        );
        assert_eq!(m.packets(u32::MAX), 4_194_304);
    }

    #[test]
    fn send_segments() {
        let s = segment(
            Service::Rc,
            RequestOp::SendImm,
            2500,
            PathMtu::Mtu1024,
            Psn::new(0xff_ffff),
        );
        let got: Vec<_> = s
            .iter()
            .map(|s| (s.opcode, s.psn.value(), s.offset, s.len))
            .collect();
        assert_eq!(
            got,
            [
                (RcSendFirst, 0xff_ffff, 0, 1024),
                (RcSendMiddle, 0, 1024, 1024),
                (RcSendLastWithImmediate, 1, 2048, 452)
            ]
        );
        let s = segment(
            Service::Rc,
            RequestOp::Send,
            0,
            PathMtu::Mtu256,
            Psn::new(5),
        );
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].opcode, s[0].len), (RcSendOnly, 0));
        let s = segment(
            Service::Rc,
            RequestOp::SendInv,
            256,
            PathMtu::Mtu256,
            Psn::new(5),
        );
        assert_eq!(s[0].opcode, RcSendOnlyWithInvalidate);
    }

    #[test]
    fn write_segments() {
        let s = segment(
            Service::Rc,
            RequestOp::Write,
            512,
            PathMtu::Mtu256,
            Psn::new(1),
        );
        assert_eq!(
            s.iter().map(|s| s.opcode).collect::<Vec<_>>(),
            [RcRdmaWriteFirst, RcRdmaWriteLast]
        );
        let s = segment(
            Service::Uc,
            RequestOp::WriteImm,
            10,
            PathMtu::Mtu256,
            Psn::new(1),
        );
        assert_eq!(s[0].opcode, UcRdmaWriteOnlyWithImmediate);
        let s = segment(
            Service::Uc,
            RequestOp::Send,
            600,
            PathMtu::Mtu256,
            Psn::new(1),
        );
        assert_eq!(
            s.iter().map(|s| s.opcode).collect::<Vec<_>>(),
            [UcSendFirst, UcSendMiddle, UcSendLast]
        );
    }

    #[test]
    fn read_and_atomic_requests() {
        let m = PathMtu::Mtu1024;
        assert_eq!(RequestOp::Read.psn_count(3000, m), 3);
        assert_eq!(RequestOp::FetchAdd.psn_count(8, m), 1);
        let s = segment(Service::Rc, RequestOp::Read, 3000, m, Psn::new(10));
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].opcode, s[0].psn.value(), s[0].offset, s[0].len),
            (RcRdmaReadRequest, 10, 0, 3000)
        );
        // A re-request from the second response on.
        let r = segment_at(Service::Rc, RequestOp::Read, 3000, m, Psn::new(10), 2);
        assert_eq!(
            r.map(|s| (s.psn.value(), s.offset, s.len)),
            Some((12, 2048, 952))
        );
        assert_eq!(
            segment_at(Service::Rc, RequestOp::Read, 3000, m, Psn::new(10), 3),
            None
        );
        let a = segment(Service::Rc, RequestOp::CompareSwap, 8, m, Psn::new(0));
        assert_eq!((a[0].opcode, a[0].len), (RcCompareSwap, 8));
    }

    #[test]
    fn services_refuse_what_they_do_not_carry() {
        let m = PathMtu::Mtu256;
        for op in [
            RequestOp::Read,
            RequestOp::CompareSwap,
            RequestOp::FetchAdd,
            RequestOp::SendInv,
        ] {
            assert!(segment(Service::Uc, op, 8, m, Psn::new(0)).is_empty());
            assert!(segment(Service::Ud, op, 8, m, Psn::new(0)).is_empty());
        }
        assert!(segment(Service::Ud, RequestOp::Send, 300, m, Psn::new(0)).is_empty());
        assert_eq!(
            segment(Service::Ud, RequestOp::SendImm, 200, m, Psn::new(0))[0].opcode,
            UdSendOnlyWithImmediate
        );
        assert!(segment(Service::Cnp, RequestOp::Send, 1, m, Psn::new(0)).is_empty());
        assert_eq!(opcode_for(Service::Rc, RequestOp::Send, 3, 3), None);
    }
}
