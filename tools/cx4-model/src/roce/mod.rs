//! The RoCE engine: RDMA over Converged Ethernet v2 (IBTA Annex A17) and v1 (Annex A16) on the
//! modelled port; a QP's (or UD address vector's) source GID entry picks the version.
//!
//! The engine — RC, UC and XRC queue pairs, their send and receive state machines and
//! retransmission, UD queue pairs and the GSI QP (QP1), congestion control (ECN, CNPs, the
//! DCQCN rate limiter) and PFC pause of RoCE frames — lives here. Its wire layer, pure
//! functions with no queue state:
//!
//! - [`headers`]: the InfiniBand transport headers (BTH and the extension headers) and the
//!   opcode table of the RC, UC, UD and XRC services and the CNP;
//! - [`packet`]: a whole RoCE frame — RoCEv2, Ethernet / IP / UDP 4791 / transport headers /
//!   payload / pad / ICRC, or RoCE v1, Ethernet (EtherType 0x8915) / IB GRH / transport
//!   headers / payload / pad / ICRC — [`packet::build`] and [`packet::parse`];
//! - [`icrc`]: the invariant CRC, over the masked IP/UDP headers (v2, as Linux's soft-RoCE
//!   (rxe) computes it) or the masked GRH (v1);
//! - [`error`]: [`WireError`], why bytes were rejected.
//!
//! Its transport state machines, pure and I/O-free (events in, actions out, time passed in as
//! nanoseconds), for the device integration to drive:
//!
//! - [`psn`]: 24-bit PSN arithmetic and the IBTA "ahead/behind" comparisons;
//! - [`timers`]: the local ACK timeout and RNR NAK timer encodings;
//! - [`status`]: [`WcStatus`], a completion's status and its mlx5 CQE syndrome;
//! - [`segment`]: the path MTU, the request operations, and their packets' opcodes and PSNs;
//! - [`requester`]: the RC requester (ACK/NAK processing, go-back-N, timers, retry counters);
//! - [`responder`]: the RC responder (sequence checks, NAK once, RNR, duplicates, resources);
//! - [`unreliable`]: the UC and UD rules;
//! - [`dcqcn`]: the DCQCN reaction point's rate limiter of one QP (cut, alpha, recovery
//!   timers and byte counter, pacing);
//! - [`cnp`]: the notification point's rules and the CNP frame.
//!
//! Their integration with the device's queues, memory keys, CQs and wire:
//!
//! - [`wqe`]: send WQE decoding (ctrl, raddr, atomic, data and inline segments);
//! - [`cqe`]: the mlx5 requester, responder and error CQEs of RC/UC QPs;
//! - [`wire`]: a QP's addressing (its path and GID entry: v2 or v1 framing) and the RoCE
//!   receive check;
//! - [`engine`]: the per-QP engine state, created and dropped by the QP transitions;
//! - [`device`]: the doorbell, send, timer and flush paths on the engine at work ([`Roce`]);
//! - [`receive`]: the RoCE receive path on the engine at work ([`Roce`]) (requester responses, responder
//!   requests, receive WQEs, R_Key checks);
//! - [`ud`]: UD and GSI QPs on the engine at work ([`Roce`]) (datagram WQEs, Q_Keys, the GRH area,
//!   multicast groups);
//! - [`umr`]: UMR WQEs (fast registration, local invalidate, mlx5_ib's MR updates) decoded
//!   and applied to an mkey, with the PRM's checks;
//! - [`local_ops`]: WQEs without the wire (UMR, NOP) on RC/UC QPs in send-queue order, and
//!   mlx5_ib's `REG_UMR` QP;
//! - [`invalidate`]: SEND with invalidate at the responder;
//! - [`odp`]: on-demand paging — page faults of RC requesters and responders, held until
//!   PAGE_FAULT_RESUME;
//! - [`events`]: the affiliated asynchronous events of a responder's failures;
//! - [`qcounters`]: the QPs' transport events in their queue counter sets (`hw_counters`);
//! - [`xrc`]: XRC initiator and target QPs on the RC paths (the WQE's XRC segment, the
//!   XRC opcodes and XRCETH, the XRC SRQ a request is for);
//! - [`congestion`]: ECT marking, CNPs sent and handled, pacing by the rate limiters and
//!   the PFC gate every RoCE frame passes, on the engine at work ([`Roce`]); its state in [`cong_state`];
//! - [`vector_calc`]: MLNX_OFED's erasure-coding SEND (opmod 0xff), its payload computed by
//!   the `ec` engine;
//! - [`wire_faults`]: the `roce-wire` fault's dropped, flipped, reordered, delayed and
//!   CE-marked frames.

pub mod burst;
pub mod cnp;
pub mod cong_state;
pub mod congestion;
pub mod cqe;
pub mod dc;
pub mod dcqcn;
pub mod device;
pub mod engine;
pub mod error;
pub mod events;
pub mod headers;
mod ib_ud;
pub mod ib_wire;
pub mod icrc;
pub mod invalidate;
pub mod ipoib_offload;
pub mod local_ops;
pub mod looped;
pub mod odp;
pub mod outgoing;
pub mod packet;
pub mod psn;
pub mod qcounters;
pub mod qp_view;
pub mod receive;
pub mod requester;
pub mod responder;
pub mod segment;
pub mod stats;
pub mod status;
pub mod timers;
pub mod ud;
pub mod umr;
pub mod unreliable;
pub mod vector_calc;
pub mod vector_calc_job;
pub mod wire;
pub mod wire_faults;
pub mod wqe;
pub mod xrc;

#[cfg(test)]
mod dc_tests;
#[cfg(test)]
mod device_tests;
#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod loopback_tests;
#[cfg(test)]
mod vector_calc_tests;
#[cfg(test)]
mod xrc_tests;
#[cfg(test)]
mod xrc_wire_tests;

pub use error::WireError;
pub use psn::Psn;
pub use stats::RoceStats;
pub use status::WcStatus;

use crate::{
    fw::Firmware,
    path_stats::PathStats,
    port::Port, //
};

/// The RoCE engine, a part of [`crate::hca::Hca`]: every QP's transport state
/// ([`engine::Engine`]) and the `--seed` the `roce-wire` fault's draws start from. Its fields
/// are private; it works through [`RoceEngine::at`], lent the other parts per call.
pub struct RoceEngine {
    state: engine::Engine,
    seed: u32,
}

/// The RoCE engine at work for one call: its state and what it borrows from the other parts
/// of the `Hca` for that call — the firmware (QP, CQ, SRQ and mkey objects, GIDs, caps,
/// counters), the port (its wire, pauses and priorities) and the data path's counters (RoCE
/// frames count as the port's frames). The send, receive, timer and flush paths in
/// `device.rs`, `receive.rs`, `ud.rs`, `xrc.rs`, `congestion.rs` and the other files of
/// this module are its methods; they take the bus per call.
pub struct Roce<'a> {
    roce: &'a mut engine::Engine,
    fw: &'a mut Firmware,
    port: &'a Port,
    path: &'a mut PathStats,
}

impl RoceEngine {
    /// The engine with no QP; `seed` starts the `roce-wire` fault's draws.
    pub fn new(seed: u32) -> Self {
        RoceEngine {
            state: Default::default(),
            seed,
        }
    }

    /// Function-level reset: everything in flight goes; with the `roce-wire` fault set
    /// (`fault_on`) its draws start again from the seed.
    pub fn reset(&mut self, fault_on: bool) {
        self.state = Default::default();
        if fault_on {
            self.reseed();
        }
    }

    /// The `roce-wire` fault's draws start again from the seed.
    pub fn reseed(&mut self) {
        self.state.wire.seed(self.seed);
    }

    /// The engine's counters.
    pub fn stats(&self) -> &RoceStats {
        &self.state.stats
    }

    /// The congestion state (for the control socket's `roce` line).
    pub fn cong(&self) -> &cong_state::CongEngine {
        &self.state.cong
    }

    /// The page faults raised and resumed (for the control socket's `roce` line).
    pub fn odp_line(&self) -> String {
        let o = &self.state.odp;
        format!(
            "odp: {} faults {} resumes {} failed",
            o.faults, o.resumes, o.failed
        )
    }

    /// The engine at work, with the parts it borrows for one call.
    pub fn at<'a>(
        &'a mut self,
        fw: &'a mut Firmware,
        port: &'a Port,
        path: &'a mut PathStats,
    ) -> Roce<'a> {
        Roce {
            roce: &mut self.state,
            fw,
            port,
            path,
        }
    }

    /// The earliest timer a QP armed since the last call (the engine's clock, ns), if any.
    pub fn take_armed(&mut self) -> Option<u64> {
        self.state.armed.take()
    }

    /// Whether a requester's timer or a frame the `roce-wire` fault holds back is due by
    /// `now` (a busy segment must not starve them). A QP whose timer stands still counts too:
    /// the tick also releases the request frames the rate limiters and pauses hold back.
    pub fn timers_due(&self, now: u64) -> bool {
        self.state
            .qps
            .values()
            .any(|q| q.deadline().is_some_and(|d| d <= now))
            || self.state.wire.next_release().is_some_and(|t| t <= now)
    }

    /// When [`Roce::roce_tick`] is next due, from now: a requester's ACK or RNR timer, a
    /// frame the `roce-wire` fault holds back, a request packet a rate limiter or a pause of
    /// the `port` holds back.
    pub fn deadline(&self, port: &Port) -> Option<std::time::Duration> {
        let now = engine::now_ns();
        let d = self
            .state
            .next_deadline(now)
            .into_iter()
            .chain(self.state.wire.next_release())
            .chain(self.state.cong.next_release(|p| port.is_paused(p)))
            .min()?;
        Some(std::time::Duration::from_nanos(d.saturating_sub(now)))
    }
}
