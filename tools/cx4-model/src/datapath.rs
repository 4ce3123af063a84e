//! The device's Ethernet data path: where the queues' state (firmware objects), the packet
//! engine (`eth/`) and the wire (`wire.rs`) meet.
//!
//! Send: a doorbell write in a UAR page's BlueFlame area (`+0x800`, the 8-byte ctrl segment
//! mlx5e's `mlx5e_notify_hw` writes) names the SQ; the device reads the SQ's producer counter
//! from its doorbell record (`dbr + 4`) and executes every WQE from its consumer counter up to
//! it ([`Hca::sq_doorbell`]). Receive: the wire thread hands each frame to
//! [`Hca::receive`], which steers it to an RQ and consumes the WQE the driver posted
//! (the RQ's doorbell record `dbr + 0` holds the producer counter; there is no RQ doorbell).
//! Both post their CQEs through `fw::cq` (`post_cqe`), which raises completion events.
//!
//! Nothing a guest writes into a WQE, a doorbell record or a doorbell can make this module
//! touch memory outside the DMA-mapped guest ranges: every access goes through [`GuestMem`] or
//! the firmware's memory-key translation.

use cx4_hw::{
    cq::cqe::{syndrome, Cqe64},
    wqe::opcode as wqe_opcode,
};
use zerocopy::FromBytes;

use crate::{
    bus::Bus,
    eth::{
        classify, cqe,
        dma::{DmaError, RingMemory, RingWqe},
        frame::{self, ParseConfig},
        lro,
        mkeys::MkeyDma,
        rss::{self, RssHash},
        rx::{self, RxOptions},
        txwqe::{self, Ctrl, Output, TxConfig},
    },
    fw::{Cast, EthCap, Firmware, QueueState, RxVerdict, WqDesc},
    guest_mem::GuestMem,
    path_stats::PathStats,
    rx_merges::RxMerges,
    striding::StridingRx, //
};

/// Ethernet FCS bytes, which PMTU's MTU counts and the wire (a TAP) does not carry.
const FCS_LEN: usize = 4;

/// A UMR WQE on an SQ: only on one created with `reg_umr` (mlx5e's ICOSQ, which maps the
/// pages of its striding RQs' WQEs into their mkey); applied like a QP's (`roce::umr`),
/// to mkeys of the SQ's PD.
fn sq_umr(
    fw: &mut Firmware,
    mem: &GuestMem,
    sqn: u32,
    reg_umr: bool,
    pd: u32,
    r: &RingWqe<'_, Ring<'_>>,
    index: u16,
) -> Result<(), crate::roce::umr::UmrError> {
    use crate::roce::{status::WcStatus, umr};
    if !reg_umr {
        return Err(umr::UmrError {
            status: WcStatus::LocalQpOpErr,
            why: "UMR on an SQ created without reg_umr".into(),
        });
    }
    let u = umr::UmrWqe::decode(r, index)?;
    let dma = MkeyDma { fw, mem, pd };
    let entries = u.entries(&dma)?;
    let qp = umr::UmrQp {
        qpn: sqn,
        pd,
        privileged: false,
    };
    umr::apply(fw, &u, &entries, qp)?;
    Ok(())
}

/// A work queue's ring in guest memory, as the engine's [`RingMemory`].
struct Ring<'a> {
    wq: &'a WqDesc,
    mem: &'a GuestMem,
}

impl RingMemory for Ring<'_> {
    fn read_ring(&self, offset: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let page_bytes = 1u64 << self.wq.page_shift;
        let mut done = 0usize;
        while done < out.len() {
            let off = self.wq.offset + offset + done as u64;
            let fault = DmaError::Fault {
                addr: off,
                len: (out.len() - done) as u64,
            };
            let page = usize::try_from(off >> self.wq.page_shift).map_err(|_| fault)?;
            let base = *self.wq.pas.get(page).ok_or(fault)?;
            let in_page = off & (page_bytes - 1);
            let n = ((page_bytes - in_page) as usize).min(out.len() - done);
            self.mem
                .read(base + in_page, &mut out[done..done + n])
                .map_err(|_| fault)?;
            done += n;
        }
        Ok(())
    }
}

fn read_be32(mem: &GuestMem, addr: u64) -> Option<u32> {
    let mut b = [0u8; 4];
    mem.read(addr, &mut b).ok()?;
    Some(u32::from_be_bytes(b))
}

/// The parser configuration the port's current state asks for: VXLAN on the ports added by
/// ADD_VXLAN_UDP_DPORT, GENEVE where the chip parses it, GRE and IP-in-IP per the caps.
pub fn parse_config(fw: &Firmware) -> ParseConfig {
    static GENEVE_RX: EthCap = EthCap::new("tunnel_stateless_geneve_rx");
    static GRE: EthCap = EthCap::new("tunnel_stateless_gre");
    static IP_IN_IP: EthCap = EthCap::new("tunnel_stateless_ip_over_ip");
    ParseConfig {
        vxlan_ports: fw.nic.vxlan_ports.iter().copied().collect(),
        geneve_port: (fw.caps.eth_cap(&GENEVE_RX) != 0).then_some(frame::GENEVE_PORT),
        gre: fw.caps.eth_cap(&GRE) != 0,
        ip_in_ip: fw.caps.eth_cap(&IP_IN_IP) != 0,
        trust_lengths: true,
    }
}

/// Largest frame (without FCS) the port carries at its current PMTU. PMTU's MTU is mlx5e's
/// "hardware MTU": the L3 MTU plus Ethernet header, one VLAN tag and the FCS.
pub fn max_frame(fw: &Firmware) -> usize {
    (fw.regs.admin_mtu as usize).saturating_sub(FCS_LEN)
}

/// The first bytes (up to 64: enough for two VLAN tags and the IP header's DSCP) of the first
/// frame of a WQE's output, for its priority.
fn first_frame_head(output: &Output) -> Vec<u8> {
    let mut head = Vec::new();
    output.for_each(|hdr, payload, _| {
        if head.is_empty() {
            head.extend(hdr.iter().chain(payload).take(64));
        }
    });
    head
}

/// What one send WQE did, decided with the firmware borrowed immutably.
enum TxStep {
    Sent {
        ctrl: Ctrl,
        output: Output,
    },
    Fault {
        opcode: u8,
        syndrome: u8,
        vendor: u8,
        why: String,
    },
}

/// The NIC data path, a part of [`crate::hca::Hca`]: SQ execution, steering, RSS, RQ delivery and the
/// striding RQs' LRO merges (`striding.rs`). Its own state is private: the merges open on
/// striding RQs. It works through [`NicPath::at`], lent the firmware (the SQs, RQs, TIRs, flow
/// tables, mkeys and CQs it reads and updates), the port and the data-path counters (shared
/// with the RoCE engine) per call.
#[derive(Default)]
pub struct NicPath {
    merges: RxMerges,
}

/// The NIC data path at work for one call: its state and the parts it borrows.
pub struct Nic<'a> {
    pub(crate) fw: &'a mut Firmware,
    pub(crate) port: &'a mut crate::port::Port,
    pub(crate) path: &'a mut PathStats,
    pub(crate) merges: &'a mut RxMerges,
}

impl NicPath {
    /// Function-level reset: the open merges go.
    pub fn reset(&mut self) {
        self.merges = Default::default();
    }

    /// A burst of received frames starts (`true`; LRO merges stay open over it) or ends.
    pub fn set_defer(&mut self, defer: bool) {
        self.merges.defer = defer;
    }

    /// The data path at work, with the parts it borrows for one call.
    pub fn at<'a>(
        &'a mut self,
        fw: &'a mut Firmware,
        port: &'a mut crate::port::Port,
        path: &'a mut PathStats,
    ) -> Nic<'a> {
        Nic {
            fw,
            port,
            path,
            merges: &mut self.merges,
        }
    }
}

impl Nic<'_> {
    pub(crate) fn ctx_post_cqe(
        &mut self,
        bus: &mut Bus,
        cqn: u32,
        cqe: &[u8; 64],
        solicited: bool,
    ) {
        if let Err(e) = self.fw.post_cqe(bus, cqn, cqe, solicited) {
            log::warn!("CQE to CQ {cqn:#x} not written: {e}");
        }
    }

    /// Executes SQ `sqn` from its consumer counter to the producer counter in its doorbell
    /// record; stops (the SQ stalls, the WQE stays pending) at a WQE whose frame has a
    /// priority the link partner paused (`port.rs`).
    pub(crate) fn execute_sq(&mut self, bus: &mut Bus, page: u32, sqn: u32) {
        let Some(sq) = self.fw.sq(sqn) else {
            log::warn!("SQ doorbell on UAR {page} for SQ {sqn:#x} that does not exist, ignored");
            return;
        };
        if sq.wq.uar_page != page {
            log::debug!(
                "SQ {sqn:#x} rung through UAR {page}, created on UAR {}",
                sq.wq.uar_page
            );
        }
        let (state, cqn, wq, mut cc, reg_umr, uidx) = (
            sq.state,
            sq.cqn,
            sq.wq.clone(),
            sq.cc,
            sq.reg_umr,
            sq.user_index,
        );
        if state == QueueState::Rst {
            log::debug!("doorbell on SQ {sqn:#x} in reset, ignored");
            return;
        }
        let Some(pc) = read_be32(&bus.mem, wq.dbr + cx4_hw::uar::DBR_SND as u64) else {
            log::warn!("SQ {sqn:#x}: doorbell record {:#x} unreadable", wq.dbr);
            return;
        };
        let pc = pc & 0xffff;
        let size = 1u32 << wq.log_size;
        static MAX_LSO: EthCap = EthCap::new("max_lso_cap");
        let cfg = TxConfig {
            parse: parse_config(self.fw).for_tx(),
            max_frame: max_frame(self.fw) + 4,
            max_lso: 1usize << self.fw.caps.eth_cap(&MAX_LSO).clamp(10, 18),
            superframes: self.port.wire().is_some_and(|p| p.carries_superframes()),
        };
        let up = self.fw.regs.oper_up();
        let mut in_error = state == QueueState::Err;
        // At most one ring's worth per doorbell: a producer counter further ahead is garbage.
        let mut budget = size;
        while (cc & 0xffff) != pc && budget > 0 {
            let ring = Ring {
                wq: &wq,
                mem: &bus.mem,
            };
            let r = RingWqe::new(&ring, u32::from(wq.log_size), 6, cc);
            let ctrl = Ctrl::read(&r);
            let bbs = ctrl.as_ref().map_or(1, |c| c.wqebbs());
            let wqe_counter = cc as u16;
            if in_error {
                let op = ctrl.map_or(0, |c| c.opcode);
                let mut e = cqe::err_cqe(false, syndrome::WR_FLUSH_ERR, 0, wqe_counter, op, sqn);
                cqe::set_user_index(&mut e, uidx);
                self.ctx_post_cqe(bus, cqn, &e.0, false);
                self.path.tx_flushed += 1;
                cc = cc.wrapping_add(u32::from(bbs));
                budget = budget.saturating_sub(u32::from(bbs));
                continue;
            }
            let step = match ctrl {
                Err(f) => TxStep::Fault {
                    opcode: 0,
                    syndrome: f.syndrome(),
                    vendor: f.vendor_syndrome(),
                    why: f.to_string(),
                },
                Ok(ctrl)
                    if matches!(ctrl.opcode, wqe_opcode::SEND | wqe_opcode::LSO)
                        && bus.faults.take_wqe_error() =>
                {
                    let f = txwqe::TxFault::Dma(DmaError::BadLkey { lkey: 0 });
                    TxStep::Fault {
                        opcode: ctrl.opcode,
                        syndrome: f.syndrome(),
                        vendor: f.vendor_syndrome(),
                        why: format!("{f} (injected)"),
                    }
                }
                Ok(ctrl) if ctrl.opcode == wqe_opcode::UMR => {
                    match sq_umr(self.fw, &bus.mem, sqn, reg_umr, wq.pd, &r, wqe_counter) {
                        Ok(()) => {
                            self.path.tx_umrs += 1;
                            TxStep::Sent {
                                ctrl,
                                output: Output::Nothing,
                            }
                        }
                        Err(e) => TxStep::Fault {
                            opcode: ctrl.opcode,
                            syndrome: e.status.syndrome().unwrap_or(syndrome::LOCAL_QP_OP_ERR),
                            vendor: 0x30,
                            why: e.to_string(),
                        },
                    }
                }
                Ok(ctrl) => {
                    let dma = MkeyDma {
                        fw: self.fw,
                        mem: &bus.mem,
                        pd: wq.pd,
                    };
                    match txwqe::execute(&ctrl, &r, &dma, &cfg) {
                        Ok(sent) => TxStep::Sent {
                            ctrl,
                            output: sent.output,
                        },
                        Err(f) => TxStep::Fault {
                            opcode: ctrl.opcode,
                            syndrome: f.syndrome(),
                            vendor: f.vendor_syndrome(),
                            why: f.to_string(),
                        },
                    }
                }
            };
            if let TxStep::Sent { output, .. } = &step {
                if self.port.tx_blocked(self.fw, || first_frame_head(output)) {
                    log::debug!("SQ {sqn:#x} WQE {wqe_counter:#x}: priority paused, SQ stalls");
                    self.port.stall(page, sqn);
                    break;
                }
            }
            self.path.tx_wqes += 1;
            match step {
                TxStep::Sent { ctrl, output } => {
                    self.transmit(&output, up);
                    if ctrl.cqe_requested() {
                        let mut c = cqe::tx_cqe(wqe_counter, ctrl.opcode, sqn);
                        cqe::set_user_index(&mut c, uidx);
                        self.ctx_post_cqe(bus, cqn, &c.0, ctrl.solicited());
                    }
                }
                TxStep::Fault {
                    opcode,
                    syndrome,
                    vendor,
                    why,
                } => {
                    log::warn!(
                        "SQ {sqn:#x} WQE {wqe_counter:#x}: {why}: error CQE (syndrome {syndrome:#x}, \
                         vendor {vendor:#x}), SQ to error"
                    );
                    self.path.tx_errors += 1;
                    let mut e = cqe::err_cqe(false, syndrome, vendor, wqe_counter, opcode, sqn);
                    cqe::set_user_index(&mut e, uidx);
                    self.ctx_post_cqe(bus, cqn, &e.0, false);
                    self.fw.sq_to_error(sqn);
                    in_error = true;
                }
            }
            cc = cc.wrapping_add(u32::from(bbs));
            budget = budget.saturating_sub(u32::from(bbs));
        }
        if let Some(sq) = self.fw.nic.sqs.get_mut(&sqn) {
            sq.cc = cc;
        }
    }

    /// Puts an executed WQE's frames on the wire: one gather write each, or LSO output as one
    /// superframe when the port carries them (`eth::gso`; a refused superframe goes as
    /// segments). The counters count the frames either way.
    fn transmit(&mut self, output: &Output, up: bool) {
        let port = self.port.wire().cloned();
        let mut whole = false;
        let (frame, sf) = match output {
            Output::Segments {
                superframe,
                gso: Some(sf),
                ..
            } => (Some(superframe), Some(sf)),
            Output::Superframe { frame, sf, .. } => (Some(frame), Some(sf)),
            _ => (None, None),
        };
        if let (true, Some(p), Some(frame), Some(sf)) = (up, &port, frame, sf) {
            if p.carries_superframes() {
                match p.send_superframe(sf, frame.get(sf.hdr_len..).unwrap_or_default()) {
                    Ok(()) => {
                        whole = true;
                        self.path.tx_superframes += 1;
                    }
                    Err(e) => {
                        log::debug!("{}: superframe refused ({e}), sent as segments", p.name())
                    }
                }
            }
        }
        if up && !whole {
            if let Some(p) = &port {
                output.for_each(|hdr, payload, pad| {
                    static ZEROS: [u8; frame::ETH_ZLEN] = [0; frame::ETH_ZLEN];
                    let parts = [hdr, payload, &ZEROS[..pad.min(ZEROS.len())]];
                    if let Err(e) = p.send_parts(&parts) {
                        log::debug!("{}: send failed: {e}", p.name());
                    }
                });
            }
        }
        let mut frames = Vec::new();
        output.for_each_len(|dmac, len| frames.push((Cast::of(&dmac), len as u64)));
        for (cast, len) in frames {
            if up {
                self.fw.count_tx(cast, len);
                self.path.tx_frames += 1;
                self.path.tx_bytes += len;
            } else {
                self.path.tx_link_down += 1;
            }
        }
    }

    /// A frame for the NIC (not MAC control, not RoCE, within the port MTU): parse,
    /// steering, RSS, RQ WQE, scatter, CQE. Frames that cannot be delivered are dropped and
    /// counted.
    pub(crate) fn deliver(&mut self, bus: &mut Bus, frame: &[u8]) {
        let h = match frame::parse(frame, &parse_config(self.fw)) {
            Ok(h) => h,
            Err(e) => {
                log::debug!("frame of {} bytes dropped: {e}", frame.len());
                self.path.rx_malformed += 1;
                self.fw.count_rx_length_error();
                return;
            }
        };
        let mut dmac = [0u8; 6];
        dmac.copy_from_slice(&frame[..6]);
        self.fw.count_rx(Cast::of(&dmac), frame.len() as u64);
        let st = self.fw.steer(&classify::steer_view(frame, &h));
        if !st.counters.is_empty() {
            self.fw.count_flow(&st.counters, frame.len() as u64);
        }
        if matches!(st.verdict, RxVerdict::Drop(_)) || st.tirs.is_empty() {
            self.path.rx_steered_drop += 1;
            self.fw.count_rx_discard();
            return;
        }
        let prio = self.port.frame_prio(self.fw, frame);
        for &tirn in &st.tirs {
            self.deliver_via_tir(bus, frame, &h, tirn, st.flow_tag, prio, false, 1);
        }
    }

    /// Delivers `frame` through TIR `tirn`. An RQ without a WQE (any RQ while the `rx-starve`
    /// fault runs) drops it (out of buffer), unless its priority is lossless (PFCC
    /// pfctx/pptx): then it is held and the port sends XOFF. `draining` (a held frame retried): returns false, keeping it held, while the RQ
    /// still has no WQE. Returns true when the frame was delivered or dropped.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn deliver_via_tir(
        &mut self,
        bus: &mut Bus,
        frame: &[u8],
        h: &frame::Headers,
        tirn: u32,
        flow_tag: u32,
        prio: u8,
        draining: bool,
        gso_segs: u32,
    ) -> bool {
        let Some(tir) = self.fw.tir(tirn) else {
            self.path.rx_no_rq += 1;
            return true;
        };
        let report_inner = tir.tunneled_offload_en;
        let lro = tir.lro;
        let hash = classify::rss_config(tir)
            .map(|c| rss::hash(frame, h, &c))
            .unwrap_or_default();
        let Some(rqn) = self.fw.rqt_pick(tirn, hash.hash) else {
            self.path.rx_no_rq += 1;
            return true;
        };
        // An LRO merge open on the RQ takes the frame, or closes before it lands (a held
        // frame, delivered late, never joins one).
        if draining {
            self.close_merge(bus, rqn);
        } else if self.join_merge(bus, rqn, frame, h, lro, gso_segs) {
            self.path.rx_frames += 1;
            return true;
        }
        let Some(rq) = self.fw.rq(rqn) else {
            self.path.rx_no_rq += 1;
            return true;
        };
        if rq.state != QueueState::Rdy {
            self.path.rx_no_rq += 1;
            self.fw.count_rx_discard();
            return true;
        }
        let (cqn, vsd, wq, cc, uidx) = (rq.cqn, rq.vsd, rq.wq.clone(), rq.cc, rq.user_index);
        // A striding RQ filling a WQE has room until the frame proves otherwise.
        let filling = rq.striding.as_ref().is_some_and(|s| s.cur.is_some());
        let striding = rq.striding.is_some();
        let Some(pc) = read_be32(&bus.mem, wq.dbr + cx4_hw::uar::DBR_RCV as u64) else {
            self.path.rx_no_rq += 1;
            return true;
        };
        // `rx-starve` (faults.rs): the driver fell behind, every RQ looks as if it had posted
        // nothing (frames take the empty-RQ path, posted WQEs wait). A producer counter more
        // than a ring ahead of the device's (a bogus or torn record) posts nothing either:
        // the WQEs it would name are ones the device already consumed.
        let posted = pc.wrapping_sub(cc) & 0xffff;
        let empty =
            (!filling && (posted == 0 || posted > 1 << wq.log_size)) || bus.faults.rx_starved();
        if draining && empty {
            return false;
        }
        let lossless = !draining && self.fw.regs.qos.sends_pause_for(prio);
        if lossless && (empty || self.port.holds_for(rqn)) {
            let held = crate::pause::Held {
                prio,
                tirn,
                rqn,
                flow_tag,
                frame: frame.to_vec(),
            };
            if self.port.hold_frame(self.fw, held) {
                return true;
            }
            if !empty {
                // Buffer full behind held frames: this one is lost, not reordered.
                self.path.rx_out_of_buffer += 1;
                self.fw.count_out_of_buffer(rqn);
                return true;
            }
        }
        if empty {
            self.path.rx_out_of_buffer += 1;
            self.fw.count_out_of_buffer(rqn);
            return true;
        }
        let opts = RxOptions {
            strip_vlan: !vsd,
            report_inner,
            flow_tag,
            user_index: uidx,
        };
        let wqe_counter = cc as u16;
        let res = if bus.faults.take_rq_error() {
            let f = rx::RxFault::Dma(DmaError::BadLkey { lkey: 0 });
            Err((f.syndrome(), f.vendor_syndrome(), format!("{f} (injected)")))
        } else if striding {
            let x = StridingRx {
                frame,
                h,
                hash: &hash,
                opts,
                lro,
                rqn,
                cqn,
                wq: &wq,
                pc,
                gso_segs,
            };
            match self.deliver_striding(bus, &x) {
                Ok(true) => {
                    self.path.rx_frames += 1;
                    return true;
                }
                Ok(false) => {
                    self.path.rx_out_of_buffer += 1;
                    self.fw.count_out_of_buffer(rqn);
                    return true;
                }
                Err(e) => Err(e),
            }
        } else {
            // A segment LRO may merge opens a merge in the WQE (without its Ethernet padding:
            // payloads follow it).
            let seg = (lro.mask != 0)
                .then(|| lro::segment(frame, h))
                .flatten()
                .filter(|s| lro.merges(s.key.v6));
            let frame = seg.as_ref().map_or(frame, |s| &frame[..s.end]);
            match self.rx_into_wqe(&bus.mem, frame, h, &hash, &wq, cc, &opts) {
                Ok((c, segs)) if seg.is_some() => {
                    let s = seg.expect("matched");
                    let len = rx::delivered_len(frame, h, &opts) as u32;
                    let mut merge = lro::Merge::start(frame, &s, len);
                    // A superframe stands for its segments.
                    merge.segs = merge.segs.max(gso_segs);
                    let c = Cqe64::read_from_bytes(&c[..]).expect("64 bytes");
                    self.path.rx_frames += 1;
                    self.open_wqe_merge(bus, rqn, cqn, wq.pd, cc, segs, c, merge, lro);
                    return true;
                }
                other => other.map(|(c, _)| c),
            }
        };
        match res {
            Ok(c) => {
                self.path.rx_frames += 1;
                self.ctx_post_cqe(bus, cqn, &c, false);
                if let Some(rq) = self.fw.nic.rqs.get_mut(&rqn) {
                    rq.cc = cc.wrapping_add(1);
                }
            }
            Err((s, v, why)) => {
                // A receive WQE that cannot be executed moves the RQ to error, like an SQ's:
                // frames for it are dropped until the driver resets it (MODIFY_RQ).
                log::warn!("RQ {rqn:#x} WQE {wqe_counter:#x}: {why}: error CQE, RQ to error");
                self.path.rx_errors += 1;
                let mut e = cqe::err_cqe(true, s, v, wqe_counter, wqe_opcode::NOP, rqn);
                cqe::set_user_index(&mut e, uidx);
                self.ctx_post_cqe(bus, cqn, &e.0, false);
                self.fw.rq_to_error(rqn);
                self.fw.count_rx_discard();
                if let Some(rq) = self.fw.nic.rqs.get_mut(&rqn) {
                    rq.cc = cc.wrapping_add(1);
                }
            }
        }
        true
    }

    /// The bytes the next posted WQE of cyclic RQ `rqn` holds (its scatter list), `None` if
    /// none is posted or it cannot be read.
    pub(crate) fn cyclic_room(&self, bus: &Bus, rqn: u32) -> Option<usize> {
        let rq = self.fw.rq(rqn)?;
        let (wq, cc) = (&rq.wq, rq.cc);
        let pc = read_be32(&bus.mem, wq.dbr + cx4_hw::uar::DBR_RCV as u64)?;
        let posted = pc.wrapping_sub(cc) & 0xffff;
        if posted == 0 || posted > 1 << wq.log_size {
            return None;
        }
        let ring = Ring { wq, mem: &bus.mem };
        let r = RingWqe::new(&ring, u32::from(wq.log_size), u32::from(wq.log_stride), cc);
        let segs = rx::rq_wqe_segments(&r, 1usize << wq.log_stride).ok()?;
        Some(segs.iter().map(|s| s.len as usize).sum())
    }

    #[allow(clippy::too_many_arguments)]
    fn rx_into_wqe(
        &self,
        mem: &GuestMem,
        frame: &[u8],
        h: &frame::Headers,
        hash: &RssHash,
        wq: &WqDesc,
        cc: u32,
        opts: &RxOptions,
    ) -> Result<([u8; 64], Vec<rx::RxSeg>), crate::striding::RxError> {
        let ring = Ring { wq, mem };
        let r = RingWqe::new(&ring, u32::from(wq.log_size), u32::from(wq.log_stride), cc);
        let segs = rx::rq_wqe_segments(&r, 1usize << wq.log_stride).map_err(|e| {
            let f = rx::RxFault::Dma(e);
            (f.syndrome(), f.vendor_syndrome(), f.to_string())
        })?;
        let dma = MkeyDma {
            fw: self.fw,
            mem,
            pd: wq.pd,
        };
        rx::deliver(frame, h, hash, opts, &segs, cc as u16, &dma)
            .map(|c| (c.0, segs))
            .map_err(|f| (f.syndrome(), f.vendor_syndrome(), f.to_string()))
    }
}

#[cfg(test)]
#[path = "datapath_tests.rs"]
pub(crate) mod tests;
