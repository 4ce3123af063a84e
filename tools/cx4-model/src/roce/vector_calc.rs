//! The vector-calc (erasure-coding) WQE on the device: a `SEND` with opmod 0xff whose payload
//! the card computes.
//!
//! MLNX_OFED's libmlx5 (`ec.c`) posts, on an RC QP connected to itself: a receive WQE for
//! the result (usually through a "repeat block" UMR mkey that spreads it over the m code
//! blocks), optional UMR WQEs building the indirect mkeys, then the vector-calc SEND — ctrl
//! (opcode SEND, opmod 0xff, `ds` 4) and the 48-byte segment (`ec::segment`). The card reads
//! the matrix and the input vectors through their lkeys (plain, or indirect KLM mkeys: the
//! translation is `Firmware::translate`, whatever the mkey's kind), computes the outputs
//! (`ec::calc`) and sends them, interleaved per chunk, as the payload of an ordinary SEND —
//! segmented at the path MTU, looped back inside the card when the QP is connected to one of
//! its own GIDs, acknowledged, retransmitted like any SEND (from the computed copy) — so the
//! result lands in the QP's posted receive WQE and both sides complete as for a SEND: the
//! requester CQE if the WQE is signaled (libmlx5 never signals), the responder's RESP_SEND
//! CQE with the byte count N × vec_size, which is what libmlx5 waits for.
//!
//! The model keeps the calculation as the SEND's local data (`vector_calc_job.rs`) and
//! computes the result when its bytes are needed, as the card computes while it sends: in
//! stripes of every input with `ec::dot`'s fastest kernel for the CPU, reading the vectors in
//! place in guest memory (their translated pieces, vm-memory slices: bounded). Looped back
//! to a QP of this card the SEND crosses in bursts (`burst.rs`) and each output stripe is
//! written straight through the receive WQE's keys (the repeat-block mkey) as it is
//! computed; frames (a remote peer, a receiver the burst cannot take) gather from the whole
//! stream, computed once and kept for retransmissions. Looped-back frames carry no ICRC
//! (`packet::build_with`). An input piece that does not lie in one mapping of guest memory
//! makes the model compute at once, when it takes the WQE, and an unreadable vector fails it.
//!
//! A refused WQE (`ec::segment` lists why and with which status; unreadable matrix or
//! vectors are LOCAL_PROT_ERR) completes in error and the QP goes to error, which flushes the
//! receive WQE libmlx5 waits on (its calculation then reports failure). The QP need not be
//! connected to itself: the result goes to whatever QP it is connected to. The `ec-error`
//! fault (faults.rs) fails the next vector-calc WQEs as a refused one (LOCAL_QP_OP_ERR).

use std::sync::Arc;

use cx4_hw::wqe::{fm_ce_se, opcode, vector_calc as vc, WqeCtrlSeg};
use zerocopy::FromBytes;

use crate::{
    bus::Bus,
    ec::segment::{self, EcCaps, VecCalcError},
    eth::{
        dma::{Dma, DmaError, WqeReader},
        mkeys::MkeyDma,
    },
};

use super::engine::QpEngine;
use super::qp_view::QpView;
use super::status::WcStatus;
use super::vector_calc_job::CalcJob;
use super::wqe::{Gather, SendWqe};
use super::Roce;

/// The first basic block of the WQE at the reader if it is a vector-calc SEND (opcode SEND,
/// opmod [`vc::OPMOD_VEC_CALC`]); `None` for any other WQE (or an unreadable one, which the
/// ordinary decoder then refuses).
pub(super) fn peek<R: WqeReader + ?Sized>(r: &R) -> Option<[u8; 64]> {
    let mut bb = [0u8; 64];
    r.read(0, &mut bb).ok()?;
    let c = WqeCtrlSeg::ref_from_bytes(&bb[..16]).ok()?;
    (c.opcode() as u8 == opcode::SEND && c.opmod() as u8 == vc::OPMOD_VEC_CALC).then_some(bb)
}

impl Roce<'_> {
    /// The vector-calc capabilities in force (current pages).
    pub(crate) fn ec_caps(&self) -> EcCaps {
        let c = &self.fw.caps;
        let on = |v: u64| v == 1;
        EcCaps {
            vector_calc: on(c.general("vector_calc")),
            calc_matrix: on(c.vector_calc("calc_matrix")),
            matrix_8bit: on(c.vector_calc("calc_matrix_type_8bit")),
            max_vec_count: c.vector_calc("max_vec_count") as u8,
            max_chunk_size: c.vector_calc("max_chunk_size") as u8,
            xor: [
                "calc0.op_xor",
                "calc1.op_xor",
                "calc2.op_xor",
                "calc3.op_xor",
            ]
            .map(|s| on(c.vector_calc(s))),
        }
    }

    /// Executes the vector-calc WQE `index` (its first basic block `bb`): the result is
    /// computed and sent as a SEND, or the WQE completes in error.
    pub(super) fn vector_calc(
        &mut self,
        bus: &mut Bus,
        q: &mut QpEngine,
        v: &QpView,
        index: u16,
        bb: [u8; 64],
        now: u64,
    ) {
        let Ok(c) = WqeCtrlSeg::read_from_bytes(&bb[..16]) else {
            return;
        };
        let flags = c.fm_ce_se() as u8;
        self.roce.stats.ec_calcs += 1;
        let result = if bus.faults.take_ec_error() {
            Err(VecCalcError {
                status: WcStatus::LocalQpOpErr,
                why: "injected engine fault (ec-error)".into(),
            })
        } else {
            self.vector_calc_result(bus, v, c.ds() as u8, &bb[16..])
        };
        match result {
            Ok(gather) => {
                let w = SendWqe {
                    index,
                    opcode: opcode::SEND,
                    bbs: 1,
                    signaled: flags & fm_ce_se::CQ_UPDATE == fm_ce_se::CQ_UPDATE,
                    solicited: flags & fm_ce_se::SOLICITED != 0,
                    fence: flags & fm_ce_se::FENCE_MASK != 0,
                    imm: c.imm(),
                    remote: None,
                    atomic: None,
                    gather,
                    xrc_srqn: None,
                };
                self.roce.stats.ec_bytes += w.len();
                self.post_send(bus, q, v, w, now);
            }
            Err(e) => {
                self.roce.stats.ec_errors += 1;
                log::warn!(
                    "QP {:#x} vector-calc WQE {index:#x}: {e}: error CQE, QP to error",
                    v.qpn
                );
                self.local_error(bus, q, v, index, opcode::SEND, e.status);
            }
        }
    }

    /// Checks the segment, reads the matrix through its key and translates the vectors
    /// through theirs (in the QP's PD): the SEND's local data, the calculation to compute
    /// when its bytes are needed ([`CalcJob`]), or — where an input piece is not in one
    /// mapping of guest memory — the stream computed now, its first unreadable vector the
    /// error.
    fn vector_calc_result(
        &self,
        bus: &Bus,
        v: &QpView,
        ds: u8,
        seg: &[u8],
    ) -> Result<Gather, VecCalcError> {
        let w = segment::decode(ds, seg, &self.ec_caps())?;
        let dma = MkeyDma {
            fw: self.fw,
            mem: &bus.mem,
            pd: v.pd,
        };
        let prot = |what: &str, e: DmaError| VecCalcError {
            status: WcStatus::LocalProtErr,
            why: format!("{what}: {e}"),
        };
        let c = w.calc;
        let mut matrix = vec![0u8; c.matrix_len()];
        dma.read(w.cm_lkey, w.cm_addr, &mut matrix)
            .map_err(|e| prot("matrix", e))?;
        let addr = |i: usize| {
            w.vec_addr
                .wrapping_add((i as u64).wrapping_mul(c.vec_size as u64))
        };
        // Every vector translated, in order: the first that is not readable as a whole is
        // the error.
        let pieces = (0..c.vec_count)
            .map(|i| {
                dma.pieces(w.vec_lkey, addr(i), c.vec_size, false)
                    .map_err(|e| prot(&format!("input vector {i}"), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let job = CalcJob::new(c.clone(), matrix, pieces);
        if !job.readable(&bus.mem) {
            return job.compute(&bus.mem).map(Gather::Inline).map_err(|i| {
                // A piece with a hole in guest memory (a PA or reserved-key range over
                // two mappings with a gap): the first vector unreadable as a whole.
                let mut whole = vec![0u8; c.vec_size];
                (0..c.vec_count)
                    .find_map(|i| {
                        dma.read(w.vec_lkey, addr(i), &mut whole)
                            .err()
                            .map(|e| (i, e))
                    })
                    .map_or_else(
                        || {
                            prot(
                                &format!("input vector {i}"),
                                DmaError::Fault {
                                    addr: addr(i),
                                    len: c.vec_size as u64,
                                },
                            )
                        },
                        |(i, e)| prot(&format!("input vector {i}"), e),
                    )
            });
        }
        Ok(Gather::Calc(Arc::new(job)))
    }
}
