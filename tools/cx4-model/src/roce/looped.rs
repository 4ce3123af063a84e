//! What loops back inside the card: frames, and the RC request bursts of `burst.rs`, in one
//! queue ([`super::engine::Engine::loopback`]) so that they are received in the order they
//! were sent.

use std::sync::Arc;

use crate::guest_mem::GuestMem;

use super::headers::TransportHeaders;
use super::qp_view::RxMeta;
use super::vector_calc_job::CalcJob;

/// Something looped back inside the card, in the order it was sent.
#[derive(Debug)]
pub enum Looped {
    /// A frame, with the sending QP when its context blocks multicast loopback (it does not
    /// receive its own copy).
    Frame(Vec<u8>, Option<u32>),
    /// Consecutive request packets of one message to an RC QP of this card.
    Burst(Burst),
}

/// The request packets of one message part, moved as one.
#[derive(Debug)]
pub struct Burst {
    /// The destination QP (the BTH's).
    pub(super) qpn: u32,
    /// Each packet's transport headers and payload length, in PSN order.
    pub(super) packets: Vec<(TransportHeaders, u32)>,
    /// The packets' payloads, end to end.
    pub(super) payload: Payload,
    /// The network header as the receiver's CQE describes it.
    pub(super) meta: RxMeta,
    /// The bytes the packets' frames would have had (for the counters).
    pub(super) bytes: u64,
}

/// A burst's payload.
#[derive(Debug)]
pub enum Payload {
    /// Bytes gathered from the WQE's local data.
    Bytes(Vec<u8>),
    /// A vector calculation's result from stream byte `.1` on, computed where it lands.
    Calc(Arc<CalcJob>, usize),
}

impl Payload {
    /// The payload from byte `at` on, as the responder places it.
    pub fn from(&self, at: usize) -> Placed<'_> {
        match self {
            Payload::Bytes(b) => Placed::Bytes(b.get(at..).unwrap_or_default()),
            Payload::Calc(j, start) => Placed::Calc(j, start + at),
        }
    }

    /// The payload's bytes (a calculation's computed for good: a frame needs them).
    pub fn bytes<'a>(&'a self, mem: &GuestMem) -> &'a [u8] {
        self.from(0).bytes(mem)
    }
}

/// Payload bytes as a responder places them: from a packet, or a part of a vector
/// calculation's result (from stream byte `.1` on) not computed yet.
#[derive(Clone, Copy, Debug)]
pub enum Placed<'a> {
    /// Bytes at hand.
    Bytes(&'a [u8]),
    /// Stream bytes from `.1` on.
    Calc(&'a CalcJob, usize),
}

impl<'a> From<&'a [u8]> for Placed<'a> {
    fn from(b: &'a [u8]) -> Placed<'a> {
        Placed::Bytes(b)
    }
}

impl<'a> Placed<'a> {
    /// The bytes (a calculation's whole stream computed, once).
    pub fn bytes(self, mem: &GuestMem) -> &'a [u8] {
        match self {
            Placed::Bytes(b) => b,
            Placed::Calc(j, at) => j.stream(mem).get(at..).unwrap_or_default(),
        }
    }
}
