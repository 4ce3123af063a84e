//! What loops back inside the card: frames, and the RC request bursts of `burst.rs`, in one
//! queue ([`super::engine::Engine::loopback`]) so that they are received in the order they
//! were sent.

use super::headers::TransportHeaders;
use super::qp_view::RxMeta;

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
    pub(super) payload: Vec<u8>,
    /// The network header as the receiver's CQE describes it.
    pub(super) meta: RxMeta,
    /// The bytes the packets' frames would have had (for the counters).
    pub(super) bytes: u64,
}
