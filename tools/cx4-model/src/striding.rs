//! Striding (multi-packet) receive queues, and LRO into them: the device side of mlx5e's
//! default RQ on cards with `striding_rq` (en_rx.c `mlx5e_handle_rx_cqe_mpwrq`).
//!
//! A striding RQ's WQE is one buffer of `num_strides` strides (its data segment names the
//! mkey — mlx5e's UMR mkey, whose pages its ICOSQ maps with UMR WQEs — and the address of
//! stride 0). The device takes WQEs in the order of their `next_wqe_index` links (WQE 0 first
//! after a reset) while the doorbell record's counter says they are posted, and fills each
//! from its first stride: a packet takes the next whole strides it needs (stride-aligned, one
//! CQE naming the WQE, the first stride and the count); a packet that does not fit in what is
//! left of a WQE makes the device consume the rest with a filler CQE and go on in the next.
//!
//! LRO (a TIR with `packet_merge_mask`, `eth::lro`): a TCP segment that may merge opens a
//! merge at its place in the WQE; the payloads of the next segments of the flow are written
//! right after it, and one CQE is posted for the merged packet when the merge closes: PSH, a
//! segment that does not continue it (or any other packet for the RQ, which must land after
//! it), no room left in the WQE or under `lro_max_ip_payload_size`, or the end of the burst
//! of frames the wire had waiting ([`RxMerges::defer`]: the wire loop closes every merge
//! before it sleeps, which is the card's LRO timeout measured in the model's own time).
//! Merges never outlive one hold of the device lock (the wire loop closes them before it lets
//! go; a frame delivered outside a burst closes them at once), so no command can reset or
//! destroy an RQ under an open merge; [`Nic::close_merge`] still checks.

use cx4_hw::{
    cq::cqe::{syndrome, Cqe64},
    wqe::{rdma::WqeSrqNextSeg, WqeDataSeg},
};
use zerocopy::FromBytes;

use crate::{
    bus::Bus,
    datapath::Nic,
    eth::{
        classify, cqe, csum,
        frame::{self, Headers, IpVersion, L4Kind},
        lro,
        mkeys::MkeyDma,
        rss::{self, RssHash},
        rx::{self, RxOptions, RxSeg},
    },
    fw::{Cast, QueueState, RxVerdict, StridingWqe, TirLro, WqDesc},
    rx_merges::{OpenMerge, Place}, //
};

/// A receive that failed: the error CQE's syndromes and why.
pub(crate) type RxError = (u8, u8, String);

/// A frame's delivery into a striding RQ.
pub(crate) struct StridingRx<'a> {
    pub frame: &'a [u8],
    pub h: &'a Headers,
    pub hash: &'a RssHash,
    pub opts: RxOptions,
    pub lro: TirLro,
    pub rqn: u32,
    pub cqn: u32,
    pub wq: &'a WqDesc,
    /// The doorbell record's counter.
    pub pc: u32,
    /// Segments the frame stands for: more than 1 for a superframe from the wire
    /// ([`Nic::receive_superframe`]), which opens a merge of that many.
    pub gso_segs: u32,
}

impl Nic<'_> {
    /// Delivers a frame into a striding RQ (merging it when LRO may). `Ok(false)`: no WQE
    /// posted (out of buffer).
    pub(crate) fn deliver_striding(
        &mut self,
        bus: &mut Bus,
        x: &StridingRx<'_>,
    ) -> Result<bool, RxError> {
        let seg = lro::segment(x.frame, x.h).filter(|s| x.lro.merges(s.key.v6));
        // Without Ethernet padding after a segment that opens a merge: payloads follow it.
        let frame = match &seg {
            Some(s) => &x.frame[..s.end],
            None => x.frame,
        };
        let len = rx::delivered_len(frame, x.h, &x.opts) as u32;
        let Some(s) = self.fw.nic.rqs.get(&x.rqn).and_then(|r| r.striding.clone()) else {
            return Ok(false);
        };
        let stride = s.stride();
        let need = len.div_ceil(stride).max(1);
        let Some(w) = self.take_strides(bus, x.rqn, x.cqn, x.wq, x.pc, need)? else {
            return Ok(false);
        };
        let room = (s.num_strides() - w.used) * stride;
        let segs = [RxSeg {
            lkey: w.lkey,
            addr: w.addr + u64::from(w.used * stride),
            len: room,
        }];
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: x.wq.pd,
        };
        let mut c = rx::deliver(frame, x.h, x.hash, &x.opts, &segs, w.used as u16, &dma)
            .map_err(|f| (f.syndrome(), f.vendor_syndrome(), f.to_string()))?;
        if let Some(s) = seg {
            let mut merge = lro::Merge::start(frame, &s, len);
            merge.segs = merge.segs.max(x.gso_segs);
            self.merges.open.insert(
                x.rqn,
                OpenMerge {
                    merge,
                    place: Place::Strides { wqe: w, stride },
                    cqe: c,
                    room: room.min(0xffff),
                    max_ip_payload: x.lro.max_ip_payload,
                    cqn: x.cqn,
                    pd: x.wq.pd,
                },
            );
            if merge.psh || !self.merges.defer {
                self.close_merge(bus, x.rqn);
            }
        } else {
            cqe::set_stride_position(&mut c, w.index, w.used, need, len);
            self.ctx_post_cqe(bus, x.cqn, &c.0, false);
            self.commit_strides(x.rqn, need);
        }
        Ok(true)
    }

    /// A TCP superframe from the wire (`--wire-gso`: the host hands over what it did not cut)
    /// bound for an RQ that would merge its segments: delivered as the packet LRO makes of
    /// them, without cutting it first — one copy, one CQE of `lro_num_seg` segments, the
    /// counters counting the segments. On a striding RQ it takes the strides it needs; on a
    /// cyclic one the next posted WQE, which must hold it whole (a merge open on that RQ is
    /// closed first: the superframe would not fit beside it). Returns the segments, or
    /// `None` for anything else (a tunnel, steering to several TIRs or to one without LRO, a
    /// lossless priority, no posted WQE, a packet larger than a WQE or than a CQE can count):
    /// the caller cuts it.
    pub(crate) fn receive_superframe(
        &mut self,
        bus: &mut Bus,
        frame: &mut [u8],
        mss: usize,
    ) -> Option<usize> {
        if !self.fw.regs.oper_up() || mss == 0 {
            return None;
        }
        let h = frame::parse(frame, &crate::datapath::parse_config(self.fw)).ok()?;
        let (l3, l4) = (h.outer.l3?, h.outer.l4?);
        if h.tunnel.is_some() || l4.kind != L4Kind::Tcp || l3.fragment || l3.end != frame.len() {
            return None;
        }
        let payload = l3.end.checked_sub(l4.payload()).filter(|&p| p > mss)?;
        let st = self.fw.steer(&classify::steer_view(frame, &h));
        let [tirn] = st.tirs[..] else {
            return None;
        };
        if matches!(st.verdict, RxVerdict::Drop(_)) {
            return None;
        }
        let tir = self.fw.tir(tirn)?;
        let lro = tir.lro;
        let hash = classify::rss_config(tir)
            .map(|c| rss::hash(frame, &h, &c))
            .unwrap_or_default();
        let rqn = self.fw.rqt_pick(tirn, hash.hash)?;
        let rq = self.fw.rq(rqn)?;
        let stripped = if rq.vsd {
            0
        } else {
            4 * usize::from(h.l2().vlan_count > 0)
        };
        let len = frame.len() - stripped;
        if rq.state != QueueState::Rdy
            || !lro.merges(l3.version == IpVersion::V6)
            || len > 0xffff
            || (l3.end - l3.payload()) as u32 > lro.max_ip_payload
        {
            return None;
        }
        match rq.striding.as_ref() {
            Some(s) => {
                if len.div_ceil(s.stride() as usize) > s.num_strides() as usize {
                    return None;
                }
            }
            None => {
                self.close_merge(bus, rqn);
                if self.cyclic_room(bus, rqn)? < len {
                    return None;
                }
            }
        }
        let prio = self.port.frame_prio(self.fw, frame);
        if self.fw.regs.qos.sends_pause_for(prio) {
            return None;
        }
        // The checksums the host left to the card: LRO checks them like any segment's.
        if l3.version == IpVersion::V4 {
            csum::fill_ipv4(frame, &l3);
        }
        csum::fill_l4(frame, &l3, &l4);
        // A FIN, an option LRO does not merge over, a congestion mark: cut it.
        lro::segment(frame, &h)?;
        let segs = payload.div_ceil(mss);
        let mut dmac = [0u8; 6];
        dmac.copy_from_slice(&frame[..6]);
        for i in 0..segs {
            let n = (l4.payload() + mss.min(payload - i * mss)) as u64;
            self.fw.count_rx(Cast::of(&dmac), n);
            if !st.counters.is_empty() {
                self.fw.count_flow(&st.counters, n);
            }
        }
        self.path.rx_wire += segs as u64;
        self.path.rx_superframes += 1;
        let before = self.path.rx_frames;
        self.deliver_via_tir(bus, frame, &h, tirn, st.flow_tag, prio, false, segs as u32);
        if self.path.rx_frames > before {
            self.path.rx_frames += segs as u64 - 1;
            self.path.rx_lro_merged += segs as u64 - 1;
        }
        Some(segs)
    }

    /// Appends `frame` to the merge open on RQ `rqn` if it continues it (`gso_segs`: the
    /// segments it stands for); else closes that merge (the frame lands after it). Returns
    /// whether it was merged.
    pub(crate) fn join_merge(
        &mut self,
        bus: &mut Bus,
        rqn: u32,
        frame: &[u8],
        h: &Headers,
        lro: TirLro,
        gso_segs: u32,
    ) -> bool {
        let Some(open) = self.merges.open.get_mut(&rqn) else {
            return false;
        };
        let seg = lro::segment(frame, h).filter(|s| {
            lro.merges(s.key.v6)
                && open
                    .merge
                    .takes(s, open.room - open.merge.bytes, open.max_ip_payload)
        });
        let Some(s) = seg else {
            self.close_merge(bus, rqn);
            return false;
        };
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: open.pd,
        };
        let payload = &frame[s.key.hdr_len..s.end];
        let written = match &open.place {
            Place::Strides { wqe, stride } => {
                use crate::eth::dma::Dma;
                let at = wqe.addr + u64::from(wqe.used * stride) + u64::from(open.merge.bytes);
                dma.write(wqe.lkey, at, payload).map_err(rx::RxFault::Dma)
            }
            Place::Wqe { segs, .. } => {
                rx::scatter_at(segs, u64::from(open.merge.bytes), payload, &dma)
            }
        };
        if let Err(e) = written {
            // What was merged stands; the frame takes the ordinary path (and its error).
            log::debug!("RQ {rqn:#x}: LRO append failed ({e}), merge closed");
            self.close_merge(bus, rqn);
            return false;
        }
        open.merge.add(frame, &s);
        open.merge.segs += gso_segs.saturating_sub(1);
        // A superframe's other segments count where it is received.
        self.path.rx_lro_merged += 1;
        if open.merge.psh || !self.merges.defer {
            self.close_merge(bus, rqn);
        }
        true
    }

    /// Opens a merge on cyclic RQ `rqn` with the segment just written into WQE `counter`
    /// (scatter list `segs`, first CQE `cqe`); the WQE stays the device's until it closes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open_wqe_merge(
        &mut self,
        bus: &mut Bus,
        rqn: u32,
        cqn: u32,
        pd: u32,
        counter: u32,
        segs: Vec<RxSeg>,
        cqe: Cqe64,
        merge: lro::Merge,
        lro: TirLro,
    ) {
        let capacity: u64 = segs.iter().map(|s| u64::from(s.len)).sum();
        let psh = merge.psh;
        self.merges.open.insert(
            rqn,
            OpenMerge {
                merge,
                place: Place::Wqe { counter, segs },
                cqe,
                room: capacity.min(0xffff) as u32,
                max_ip_payload: lro.max_ip_payload,
                cqn,
                pd,
            },
        );
        if psh || !self.merges.defer {
            self.close_merge(bus, rqn);
        }
    }

    /// Closes the merge open on RQ `rqn`, if any: posts its CQE (a plain one for a single
    /// segment) and consumes its strides or WQE. A merge whose RQ was reset or destroyed
    /// meanwhile is dropped: its place in the ring is gone.
    pub(crate) fn close_merge(&mut self, bus: &mut Bus, rqn: u32) {
        let Some(m) = self.merges.open.remove(&rqn) else {
            return;
        };
        let rq = self.fw.nic.rqs.get_mut(&rqn);
        let still = rq.as_ref().is_some_and(|rq| {
            rq.state == QueueState::Rdy
                && match &m.place {
                    Place::Strides { wqe, .. } => rq
                        .striding
                        .as_ref()
                        .and_then(|s| s.cur)
                        .is_some_and(|c| c.index == wqe.index && c.used == wqe.used),
                    Place::Wqe { counter, .. } => rq.cc == *counter,
                }
        });
        if !still {
            log::debug!("RQ {rqn:#x}: LRO merge dropped, the RQ was reset");
            return;
        }
        let mut c = m.cqe;
        if m.merge.segs > 1 {
            m.merge.finish_cqe(&mut c);
            self.path.rx_lro_packets += 1;
        }
        match m.place {
            Place::Strides { wqe, stride } => {
                let strides = m.merge.bytes.div_ceil(stride);
                cqe::set_stride_position(&mut c, wqe.index, wqe.used, strides, m.merge.bytes);
                self.ctx_post_cqe(bus, m.cqn, &c.0, false);
                self.commit_strides(rqn, strides);
            }
            Place::Wqe { counter, .. } => {
                if let Some(rq) = rq {
                    rq.cc = counter.wrapping_add(1);
                }
                c.set_byte_cnt(m.merge.bytes);
                self.ctx_post_cqe(bus, m.cqn, &c.0, false);
            }
        }
    }

    /// Closes every open merge (the wire has nothing more waiting).
    pub fn close_merges(&mut self, bus: &mut Bus) {
        while let Some((&rqn, _)) = self.merges.open.first_key_value() {
            self.close_merge(bus, rqn);
        }
    }

    /// Closes every open merge unless a burst of received frames keeps them open.
    pub fn close_merges_unless_deferred(&mut self, bus: &mut Bus) {
        if !self.merges.defer {
            self.close_merges(bus);
        }
    }

    /// The WQE of striding RQ `rqn` that has `need` strides free from its `used` one:
    /// the one being filled, or (after a filler CQE consuming what is left of that one) the
    /// next posted; `None` when none is posted.
    fn take_strides(
        &mut self,
        bus: &mut Bus,
        rqn: u32,
        cqn: u32,
        wq: &WqDesc,
        pc: u32,
        need: u32,
    ) -> Result<Option<StridingWqe>, RxError> {
        let Some(rq) = self.fw.nic.rqs.get_mut(&rqn) else {
            return Ok(None);
        };
        let cc = rq.cc;
        let Some(s) = rq.striding.as_mut() else {
            return Ok(None);
        };
        let n = s.num_strides();
        if need > n {
            return Err((
                syndrome::LOCAL_LENGTH_ERR,
                0x21,
                format!("packet of {need} strides, WQEs of {n}"),
            ));
        }
        let mut filler = None;
        if let Some(c) = s.cur {
            if c.used + need <= n {
                return Ok(Some(c));
            }
            filler = Some(cqe::filler_cqe(c.index, c.used, n - c.used));
            s.last = Some(c.index);
            s.cur = None;
        }
        let posted = pc.wrapping_sub(cc) & 0xffff;
        let next = if posted == 0 || posted > 1 << wq.log_size {
            None
        } else {
            // Reads `buf.len()` bytes at `off` of WQE `i`.
            let read = |i: u16, off: u64, buf: &mut [u8]| {
                wq.wqe_addr(u32::from(i))
                    .and_then(|a| bus.mem.read(a + off, buf).ok())
                    .ok_or_else(|| {
                        (
                            syndrome::LOCAL_PROT_ERR,
                            0x24,
                            format!("WQE {i:#x} unreadable"),
                        )
                    })
            };
            // The next WQE: WQE 0 after a reset, else the link (`next_wqe_index` of the next
            // segment) in the last one filled.
            let index = match s.last {
                None => 0,
                Some(l) => {
                    let mut b = [0u8; WqeSrqNextSeg::SIZE];
                    read(l, 0, &mut b)?;
                    let next = WqeSrqNextSeg::ref_from_bytes(&b[..]).expect("next segment size");
                    next.next_wqe_index() as u16 & ((1u32 << wq.log_size) - 1) as u16
                }
            };
            let mut d = [0u8; WqeDataSeg::SIZE];
            read(index, 16, &mut d)?;
            let d = WqeDataSeg::ref_from_bytes(&d[..]).expect("data segment size");
            let byte_count = d.byte_count();
            let bytes = u64::from(n) * u64::from(s.stride());
            if u64::from(byte_count & !cx4_hw::wqe::HW_START_PADDING) < bytes {
                return Err((
                    syndrome::LOCAL_LENGTH_ERR,
                    0x21,
                    format!("WQE {index:#x} of {byte_count} bytes for {n} strides"),
                ));
            }
            let w = StridingWqe {
                index,
                used: 0,
                lkey: d.lkey(),
                addr: d.addr(),
            };
            s.cur = Some(w);
            rq.cc = cc.wrapping_add(1);
            Some(w)
        };
        if let Some(f) = filler {
            self.path.rx_fillers += 1;
            self.ctx_post_cqe(bus, cqn, &f.0, false);
        }
        Ok(next)
    }

    /// `strides` of RQ `rqn`'s current WQE are consumed; a full WQE is done.
    fn commit_strides(&mut self, rqn: u32, strides: u32) {
        let Some(s) = self
            .fw
            .nic
            .rqs
            .get_mut(&rqn)
            .and_then(|r| r.striding.as_mut())
        else {
            return;
        };
        let n = s.num_strides();
        if let Some(c) = &mut s.cur {
            c.used += strides;
            if c.used >= n {
                s.last = Some(c.index);
                s.cur = None;
            }
        }
    }
}

#[cfg(test)]
#[path = "striding_tests.rs"]
mod tests;
