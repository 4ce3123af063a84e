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
//! The model computes the whole result when it takes the WQE (real hardware streams it), in
//! stripes of every input with `ec::dot`'s fastest kernel for the CPU, which reads the
//! vectors in place in guest memory (their translated pieces, vm-memory slices: bounded, an
//! address outside guest memory is an error; a stripe that crosses pieces is copied) and
//! writes each output stripe to its place in the chunk-interleaved stream — the one copy that
//! is kept, since a retransmission resends it. The SEND's frames loop back without an ICRC
//! (`packet::build_with`).
//!
//! A refused WQE (`ec::segment` lists why and with which status; unreadable matrix or
//! vectors are LOCAL_PROT_ERR) completes in error and the QP goes to error, which flushes the
//! receive WQE libmlx5 waits on (its calculation then reports failure). The QP need not be
//! connected to itself: the result goes to whatever QP it is connected to. The `ec-error`
//! fault (faults.rs) fails the next vector-calc WQEs as a refused one (LOCAL_QP_OP_ERR).

use cx4_hw::wqe::{fm_ce_se, opcode, vector_calc as vc, WqeCtrlSeg};
use zerocopy::FromBytes;

use crate::{
    bus::Bus,
    ec::{
        calc::Source,
        dot::{Input, Kernel},
        segment::{self, EcCaps, VecCalcError},
    },
    eth::{
        dma::{Dma, DmaError, WqeReader},
        mkeys::MkeyDma,
    },
    guest_mem::GuestMem,
};

use super::engine::QpEngine;
use super::qp_view::QpView;
use super::status::WcStatus;
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
            Ok(stream) => {
                self.roce.stats.ec_bytes += stream.len() as u64;
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
                    gather: Gather::Inline(stream),
                    xrc_srqn: None,
                };
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

    /// Checks the segment, reads the matrix through its key, translates the vectors through
    /// theirs (in the QP's PD) and computes the stream, the kernels reading the vectors in
    /// place in guest memory.
    fn vector_calc_result(
        &self,
        bus: &Bus,
        v: &QpView,
        ds: u8,
        seg: &[u8],
    ) -> Result<Vec<u8>, VecCalcError> {
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
        let c = &w.calc;
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
        let src = GuestVectors::new(&bus.mem, pieces);
        c.compute_from(Kernel::best(), &matrix, &src).map_err(|i| {
            // A piece with a hole in guest memory (a PA or reserved-key range over two
            // mappings with a gap): the first vector unreadable as a whole.
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
        })
    }
}

/// The input vectors of a calculation in guest memory: each as its translated pieces (guest
/// physical, in order, adjacent ones merged), read in place where a stripe lies in one piece
/// of one mapping ([`GuestMem::input`]), else copied piece by piece; every access bounded by
/// vm-memory, an address outside guest memory is an error.
struct GuestVectors<'a> {
    mem: &'a GuestMem,
    /// Per vector: (offset in the vector, guest address, bytes), in order.
    vecs: Vec<Vec<(usize, u64, usize)>>,
}

impl<'a> GuestVectors<'a> {
    fn new(mem: &'a GuestMem, pieces: Vec<Vec<(u64, u32)>>) -> GuestVectors<'a> {
        let vecs = pieces
            .into_iter()
            .map(|p| {
                let mut v: Vec<(usize, u64, usize)> = Vec::with_capacity(p.len());
                let mut off = 0;
                for (pa, n) in p {
                    let n = n as usize;
                    match v.last_mut() {
                        Some(last) if last.1.wrapping_add(last.2 as u64) == pa => last.2 += n,
                        _ => v.push((off, pa, n)),
                    }
                    off += n;
                }
                v
            })
            .collect();
        GuestVectors { mem, vecs }
    }

    /// The piece of vector `i` holding byte `off`.
    fn piece(&self, i: usize, off: usize) -> Option<(usize, u64, usize)> {
        let v = self.vecs.get(i)?;
        let at = v.partition_point(|p| p.0 + p.2 <= off);
        v.get(at).copied()
    }
}

impl Source for GuestVectors<'_> {
    /// The vector a read failed in.
    type Error = usize;

    fn run(&self, i: usize, off: usize) -> usize {
        self.piece(i, off).map_or(0, |(o, _, n)| o + n - off)
    }

    fn stripe(&self, i: usize, off: usize, buf: &mut [u8]) -> Result<Option<Input<'_>>, usize> {
        let len = buf.len();
        if let Some((o, pa, _)) = self.piece(i, off).filter(|p| off + len <= p.0 + p.2) {
            if let Some(inp) = self.mem.input(pa + (off - o) as u64, len) {
                return Ok(Some(inp));
            }
        }
        let mut at = 0;
        while at < len {
            let (o, pa, n) = self.piece(i, off + at).ok_or(i)?;
            let k = (o + n - (off + at)).min(len - at);
            self.mem
                .read(pa + (off + at - o) as u64, &mut buf[at..at + k])
                .map_err(|_| i)?;
            at += k;
        }
        Ok(None)
    }
}
