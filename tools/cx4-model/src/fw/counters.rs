//! Counters: queue counters (ALLOC/DEALLOC/QUERY_Q_COUNTER: out-of-buffer drops of the RQs
//! that name them, the RoCE transport events of the QPs that name them), the vport's traffic counters (QUERY_VPORT_COUNTER) and the port counters
//! behind the PPCNT groups `ethtool -S` reads. The data path bumps them through
//! [`Firmware::count_rx`], [`Firmware::count_tx`] and [`Firmware::count_out_of_buffer`].

use cx4_hw::{
    command::{self as cmds, Command},
    counters::{
        set_counter64, Eth2819CntrsGrpDataLayout, Eth2863CntrsGrpDataLayout,
        Eth8023CntrsGrpDataLayout, EthPerPrioGrpDataLayout,
    },
    flow::TrafficCounter,
    regs::ppcnt_grp,
};

use super::{cmd_in, cmd_out, fail, need_out, CmdResult, Firmware};

/// Queue counters a function may hold when `max_qp_cnt` is 0.
pub const DEFAULT_Q_COUNTERS: u64 = 128;

/// One queue counter set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QCounter {
    /// Packets dropped because their RQ had no WQE posted.
    pub out_of_buffer: u32,
    /// The RoCE transport events of the QPs that name this set (their `counter_set_id`).
    pub roce: RoceQCounts,
}

/// The RoCE transport counters of a queue counter set, as QUERY_Q_COUNTER reports them (the
/// basic set, `out_of_seq_cnt` and `retransmission_q_counters`); the RoCE engine adds to them
/// as its QPs' responders and requesters see the events. 32-bit, wrapping, like the
/// command's fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoceQCounts {
    /// RDMA WRITE requests received (responder, first time).
    pub rx_write_requests: u32,
    /// RDMA READ requests received (responder, first time).
    pub rx_read_requests: u32,
    /// Atomic requests received (responder, first time).
    pub rx_atomic_requests: u32,
    /// Request packets received out of sequence (responder: NAKed or dropped).
    pub out_of_sequence: u32,
    /// Duplicate request packets received (responder).
    pub duplicate_request: u32,
    /// RNR NAKs received (requester), the retry limit not yet exceeded.
    pub rnr_nak_retry_err: u32,
    /// PSN sequence error NAKs received (requester).
    pub packet_seq_err: u32,
    /// Implied NAKs: a response beyond an unanswered READ/atomic (requester).
    pub implied_nak_seq_err: u32,
    /// Local ACK timeouts (requester).
    pub local_ack_timeout_err: u32,
}

impl RoceQCounts {
    /// Field-wise `self - before` (wrapping): the events since `before`.
    pub fn since(self, before: RoceQCounts) -> RoceQCounts {
        let d = |a: u32, b: u32| a.wrapping_sub(b);
        RoceQCounts {
            rx_write_requests: d(self.rx_write_requests, before.rx_write_requests),
            rx_read_requests: d(self.rx_read_requests, before.rx_read_requests),
            rx_atomic_requests: d(self.rx_atomic_requests, before.rx_atomic_requests),
            out_of_sequence: d(self.out_of_sequence, before.out_of_sequence),
            duplicate_request: d(self.duplicate_request, before.duplicate_request),
            rnr_nak_retry_err: d(self.rnr_nak_retry_err, before.rnr_nak_retry_err),
            packet_seq_err: d(self.packet_seq_err, before.packet_seq_err),
            implied_nak_seq_err: d(self.implied_nak_seq_err, before.implied_nak_seq_err),
            local_ack_timeout_err: d(self.local_ack_timeout_err, before.local_ack_timeout_err),
        }
    }

    /// Field-wise `self += d` (wrapping).
    pub fn add(&mut self, d: RoceQCounts) {
        self.rx_write_requests = self.rx_write_requests.wrapping_add(d.rx_write_requests);
        self.rx_read_requests = self.rx_read_requests.wrapping_add(d.rx_read_requests);
        self.rx_atomic_requests = self.rx_atomic_requests.wrapping_add(d.rx_atomic_requests);
        self.out_of_sequence = self.out_of_sequence.wrapping_add(d.out_of_sequence);
        self.duplicate_request = self.duplicate_request.wrapping_add(d.duplicate_request);
        self.rnr_nak_retry_err = self.rnr_nak_retry_err.wrapping_add(d.rnr_nak_retry_err);
        self.packet_seq_err = self.packet_seq_err.wrapping_add(d.packet_seq_err);
        self.implied_nak_seq_err = self.implied_nak_seq_err.wrapping_add(d.implied_nak_seq_err);
        self.local_ack_timeout_err = self
            .local_ack_timeout_err
            .wrapping_add(d.local_ack_timeout_err);
    }
}

/// How a frame was addressed (for the unicast/multicast/broadcast split of the counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cast {
    /// Individual address.
    Unicast,
    /// Group address other than broadcast.
    Multicast,
    /// ff:ff:ff:ff:ff:ff.
    Broadcast,
}

impl Cast {
    /// The cast of a destination MAC.
    pub fn of(dmac: &[u8; 6]) -> Cast {
        if *dmac == [0xff; 6] {
            Cast::Broadcast
        } else if dmac[0] & 1 != 0 {
            Cast::Multicast
        } else {
            Cast::Unicast
        }
    }
}

/// Packets and octets in one direction, split by cast.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CastCounts {
    /// Unicast packets, octets.
    pub unicast: (u64, u64),
    /// Multicast packets, octets.
    pub multicast: (u64, u64),
    /// Broadcast packets, octets.
    pub broadcast: (u64, u64),
}

impl CastCounts {
    fn add(&mut self, cast: Cast, bytes: u64) {
        let c = match cast {
            Cast::Unicast => &mut self.unicast,
            Cast::Multicast => &mut self.multicast,
            Cast::Broadcast => &mut self.broadcast,
        };
        c.0 += 1;
        c.1 += bytes;
    }

    /// All packets and octets.
    pub fn total(&self) -> (u64, u64) {
        (
            self.unicast.0 + self.multicast.0 + self.broadcast.0,
            self.unicast.1 + self.multicast.1 + self.broadcast.1,
        )
    }
}

/// The port's and vport's traffic counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Received frames accepted by the port.
    pub rx: CastCounts,
    /// Transmitted frames.
    pub tx: CastCounts,
    /// Received frames dropped for length (oversize for the port MTU, runts).
    pub rx_length_errors: u64,
    /// Received frames discarded after the port accepted them (no steering match, no RQ).
    pub rx_discards: u64,
    /// Frames sent back to this function (local loopback).
    pub local_loopback: (u64, u64),
    /// Pause and PFC frames and times (`crate::pause`); a vport counter clear keeps them.
    pub pause: crate::pause::PauseCounters,
}

fn set_tc(t: &mut TrafficCounter, (p, o): (u64, u64)) {
    t.set_packets(p);
    t.set_octets(o);
}

impl Firmware {
    pub(super) fn counter_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            cmds::AllocQCounter::OPCODE => {
                let max = match self.caps.general("max_qp_cnt") {
                    0 => DEFAULT_Q_COUNTERS,
                    n => n.min(255),
                } as u8;
                let Some(id) = (1..=max).find(|i| !self.nic.q_counters.contains_key(i)) else {
                    fail!(
                        NO_RES,
                        "ALLOC_Q_COUNTER: no queue counters left",
                        "max {max}"
                    );
                };
                self.nic.q_counters.insert(id, QCounter::default());
                cmd_out::<cmds::AllocQCounter>(out)?.set_counter_set_id(id.into());
                Ok(())
            }
            cmds::DeallocQCounter::OPCODE => {
                let id = cmd_in::<cmds::DeallocQCounter>(input)?.counter_set_id() as u8;
                if !self.nic.q_counters.contains_key(&id) {
                    fail!(
                        BAD_RES,
                        "DEALLOC_Q_COUNTER of a counter not allocated",
                        "{id}"
                    );
                }
                if let Some(rq) = self.nic.rqs.values().find(|r| r.counter_set_id == id) {
                    fail!(
                        BAD_RES_STATE,
                        "DEALLOC_Q_COUNTER of a counter an RQ still counts into",
                        "counter {id}, RQ {:#x}",
                        rq.rqn
                    );
                }
                self.nic.q_counters.remove(&id);
                Ok(())
            }
            cmds::QueryQCounter::OPCODE => {
                let inp = cmd_in::<cmds::QueryQCounter>(input)?;
                if inp.other_vport() != 0 {
                    fail!(
                        BAD_PARAM,
                        "QUERY_Q_COUNTER of another vport",
                        "vport {}",
                        inp.vport_number()
                    );
                }
                let id = inp.counter_set_id() as u8;
                let Some(c) = self.nic.q_counters.get_mut(&id) else {
                    fail!(
                        BAD_RES,
                        "QUERY_Q_COUNTER of a counter not allocated",
                        "{id}"
                    );
                };
                let v = *c;
                if inp.clear() != 0 {
                    *c = QCounter::default();
                }
                let o = cmd_out::<cmds::QueryQCounter>(out)?;
                o.set_out_of_buffer(v.out_of_buffer);
                let r = v.roce;
                o.set_rx_write_requests(r.rx_write_requests);
                o.set_rx_read_requests(r.rx_read_requests);
                o.set_rx_atomic_requests(r.rx_atomic_requests);
                o.set_out_of_sequence(r.out_of_sequence);
                o.set_duplicate_request(r.duplicate_request);
                o.set_rnr_nak_retry_err(r.rnr_nak_retry_err);
                o.set_packet_seq_err(r.packet_seq_err);
                o.set_implied_nak_seq_err(r.implied_nak_seq_err);
                o.set_local_ack_timeout_err(r.local_ack_timeout_err);
                Ok(())
            }
            cmds::QueryVportCounter::OPCODE => {
                let inp = cmd_in::<cmds::QueryVportCounter>(input)?;
                if inp.other_vport() != 0 || inp.op_mod() != 0 || inp.port_num() > 1 {
                    fail!(
                        BAD_PARAM,
                        "QUERY_VPORT_COUNTER of another vport or counter set",
                        "vport {} op_mod {} port {}",
                        inp.vport_number(),
                        inp.op_mod(),
                        inp.port_num()
                    );
                }
                let p = self.nic.port.clone();
                if inp.clear() != 0 {
                    self.nic.port = PortCounters {
                        pause: p.pause,
                        ..PortCounters::default()
                    };
                }
                let o = cmd_out::<cmds::QueryVportCounter>(out)?;
                set_tc(o.received_eth_unicast_mut(), p.rx.unicast);
                set_tc(o.received_eth_multicast_mut(), p.rx.multicast);
                set_tc(o.received_eth_broadcast_mut(), p.rx.broadcast);
                set_tc(o.transmitted_eth_unicast_mut(), p.tx.unicast);
                set_tc(o.transmitted_eth_multicast_mut(), p.tx.multicast);
                set_tc(o.transmitted_eth_broadcast_mut(), p.tx.broadcast);
                set_tc(o.local_loopback_mut(), p.local_loopback);
                set_tc(o.received_errors_mut(), (p.rx_length_errors, 0));
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    /// A received frame of `bytes` bytes the port accepted.
    pub fn count_rx(&mut self, cast: Cast, bytes: u64) {
        self.nic.port.rx.add(cast, bytes);
    }

    /// A transmitted frame of `bytes` bytes.
    pub fn count_tx(&mut self, cast: Cast, bytes: u64) {
        self.nic.port.tx.add(cast, bytes);
    }

    /// A received frame the port dropped for its length.
    pub fn count_rx_length_error(&mut self) {
        self.nic.port.rx_length_errors += 1;
    }

    /// A received frame discarded after the port took it (steering drop).
    pub fn count_rx_discard(&mut self) {
        self.nic.port.rx_discards += 1;
    }

    /// A frame dropped because RQ `rqn` had no WQE: counted in the RQ's queue counter.
    pub fn count_out_of_buffer(&mut self, rqn: u32) {
        let id = self.nic.rqs.get(&rqn).map(|r| r.counter_set_id);
        if let Some(c) = id.and_then(|id| self.nic.q_counters.get_mut(&id)) {
            c.out_of_buffer = c.out_of_buffer.wrapping_add(1);
        }
    }

    /// The data of PPCNT group `grp` (priority `prio` for the per-priority group) as big-endian
    /// bytes for the register's `counter_set`; `None` for groups the port does not have.
    pub(crate) fn ppcnt_group(&self, grp: u8, prio: u8) -> Option<Vec<u8>> {
        let p = &self.nic.port;
        let (rx, tx) = (p.rx.total(), p.tx.total());
        let set = |bytes: &mut [u8], fields, pairs: &[(&str, u64)]| {
            for &(name, v) in pairs {
                let ok = set_counter64(bytes, fields, name, v);
                debug_assert!(ok, "PPCNT counter {name}");
            }
        };
        Some(match grp {
            ppcnt_grp::IEEE_802_3 => {
                let mut g = Eth8023CntrsGrpDataLayout::new();
                set(
                    &mut g.0,
                    Eth8023CntrsGrpDataLayout::FIELDS,
                    &[
                        ("a_frames_transmitted_ok", tx.0),
                        ("a_frames_received_ok", rx.0),
                        ("a_octets_transmitted_ok", tx.1),
                        ("a_octets_received_ok", rx.1),
                        ("a_multicast_frames_xmitted_ok", p.tx.multicast.0),
                        ("a_broadcast_frames_xmitted_ok", p.tx.broadcast.0),
                        ("a_multicast_frames_received_ok", p.rx.multicast.0),
                        ("a_broadcast_frames_received_ok", p.rx.broadcast.0),
                        ("a_frame_too_long_errors", p.rx_length_errors),
                        ("a_mac_control_frames_transmitted", p.pause.mac_control_tx),
                        ("a_mac_control_frames_received", p.pause.mac_control_rx),
                        (
                            "a_unsupported_opcodes_received",
                            p.pause.unsupported_opcodes,
                        ),
                        ("a_pause_mac_ctrl_frames_received", p.pause.pause_rx),
                        ("a_pause_mac_ctrl_frames_transmitted", p.pause.pause_tx),
                    ],
                );
                g.0.to_vec()
            }
            ppcnt_grp::RFC_2863 => {
                let mut g = Eth2863CntrsGrpDataLayout::new();
                set(
                    &mut g.0,
                    Eth2863CntrsGrpDataLayout::FIELDS,
                    &[
                        ("if_in_octets", rx.1),
                        ("if_in_ucast_pkts", p.rx.unicast.0),
                        ("if_in_discards", p.rx_discards),
                        ("if_in_errors", p.rx_length_errors),
                        ("if_out_octets", tx.1),
                        ("if_out_ucast_pkts", p.tx.unicast.0),
                        ("if_in_multicast_pkts", p.rx.multicast.0),
                        ("if_in_broadcast_pkts", p.rx.broadcast.0),
                        ("if_out_multicast_pkts", p.tx.multicast.0),
                        ("if_out_broadcast_pkts", p.tx.broadcast.0),
                    ],
                );
                g.0.to_vec()
            }
            ppcnt_grp::RFC_2819 => {
                let mut g = Eth2819CntrsGrpDataLayout::new();
                set(
                    &mut g.0,
                    Eth2819CntrsGrpDataLayout::FIELDS,
                    &[
                        ("ether_stats_octets", rx.1),
                        ("ether_stats_pkts", rx.0),
                        ("ether_stats_broadcast_pkts", p.rx.broadcast.0),
                        ("ether_stats_multicast_pkts", p.rx.multicast.0),
                        ("ether_stats_oversize_pkts", p.rx_length_errors),
                    ],
                );
                g.0.to_vec()
            }
            ppcnt_grp::PER_PRIORITY => {
                // Traffic counts in priority 0 (the model does not split it by priority);
                // pause counters are per priority.
                let mut g = EthPerPrioGrpDataLayout::new();
                let (c, i) = (&p.pause, usize::from(prio) % 8);
                set(
                    &mut g.0,
                    EthPerPrioGrpDataLayout::FIELDS,
                    &[
                        ("rx_pause", c.rx_pause[i]),
                        ("rx_pause_duration", c.rx_pause_duration[i]),
                        ("tx_pause", c.tx_pause[i]),
                        ("tx_pause_duration", c.tx_pause_duration[i]),
                        ("rx_pause_transition", c.rx_pause_transition[i]),
                    ],
                );
                if prio == 0 {
                    set(
                        &mut g.0,
                        EthPerPrioGrpDataLayout::FIELDS,
                        &[
                            ("rx_octets", rx.1),
                            ("rx_frames", rx.0),
                            ("tx_octets", tx.1),
                            ("tx_frames", tx.0),
                        ],
                    );
                }
                g.0.to_vec()
            }
            // Physical layer, its statistics and the extended group: all zero on a model.
            ppcnt_grp::ETHERNET_EXTENDED
            | ppcnt_grp::PHYSICAL_LAYER
            | ppcnt_grp::PHYSICAL_LAYER_STATISTICAL
            | ppcnt_grp::PER_TRAFFIC_CLASS
            | ppcnt_grp::RFC_3635 => vec![0; 0xf8],
            _ => return None,
        })
    }
}
