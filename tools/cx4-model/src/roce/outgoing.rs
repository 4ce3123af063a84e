//! The responder's responses as they leave: a READ's response packets stream, a bounded
//! number per hold of the device lock, and the responses after them wait their turn.
//!
//! A card sends a READ's responses at the wire's pace while it goes on serving its host; the
//! model used to build and transmit all of them at once, under the device lock, when the
//! request arrived — a 64 MiB READ (UCX's rendezvous) was 65,536 frames, seconds on a loaded
//! host, during which no BAR read was answered and QEMU's vfio-user client gave the device up
//! (its 5 s message timeout). Now a READ's response is queued on its QP ([`Outgoing`]) and
//! [`READ_BURST`] packets leave at once; the RoCE timer (`Engine::next_deadline`: due at once
//! while a QP has responses waiting, `Roce::roce_tick_at`) sends the next ones, each batch in
//! a hold of its own. Each packet's payload is read from guest memory as it is built (the
//! pieces translated once, when the request was executed). Responses queued behind a READ
//! (ACKs, atomic acknowledgements, later READs) leave after it, in order, as RC requires. A QP
//! that leaves the states that respond drops what waits. The queue's types are here, below the
//! engine; `Roce::drain_responses` (receive.rs) sends from it.

use std::collections::VecDeque;

use crate::bus::Bus;

use super::headers::{ExtHeaders, Opcode};
use super::psn::Psn;
use super::responder::ReadResponse;

/// READ response packets sent per hold of the device lock.
pub const READ_BURST: u32 = 256;

/// A response waiting to leave.
#[derive(Clone, Debug)]
pub enum Outgoing {
    /// A READ's response packets from `next` on, their data read from `pieces` (guest
    /// physical, in order) — `at` the piece holding packet `next`'s first byte and that
    /// piece's offset in the response.
    Read {
        rr: ReadResponse,
        next: u32,
        pieces: Vec<(u64, u32)>,
        at: (usize, u64),
    },
    /// One response packet.
    Packet {
        op: Opcode,
        psn: Psn,
        ext: ExtHeaders,
        payload: Vec<u8>,
    },
}

impl Outgoing {
    /// A READ's response over the translated `pieces` of its range.
    pub fn read(rr: ReadResponse, pieces: Vec<(u64, u32)>) -> Outgoing {
        Outgoing::Read {
            rr,
            next: 0,
            pieces,
            at: (0, 0),
        }
    }
}

/// Fills `out` from byte `offset` of the range `pieces` map, `at` the cursor (piece index,
/// that piece's offset in the range) moved forward as the reads go (they go in order). A
/// piece outside guest memory reads as zeros.
pub(super) fn read_pieces(
    bus: &Bus,
    pieces: &[(u64, u32)],
    at: &mut (usize, u64),
    offset: u64,
    out: &mut [u8],
) {
    let mut done = 0usize;
    while done < out.len() {
        let Some(&(pa, n)) = pieces.get(at.0) else {
            return;
        };
        let (start, end) = (at.1, at.1 + u64::from(n));
        let pos = offset + done as u64;
        if pos >= end {
            *at = (at.0 + 1, end);
            continue;
        }
        let k = ((end - pos) as usize).min(out.len() - done);
        let _ = bus.mem.read(pa + (pos - start), &mut out[done..done + k]);
        done += k;
    }
}

/// The queue a QP's responses wait in.
pub type Responses = VecDeque<Outgoing>;
