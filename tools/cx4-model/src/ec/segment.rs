//! The vector-calc segment of a send WQE, checked against the vector-calc capabilities.
//!
//! Every refusal is a [`VecCalcError`] with the completion status the WQE ends with (the
//! QP then goes to error, as for any local WQE error, and its posted receive — the one
//! libmlx5 waits on — is flushed). What the real card answers for each is unpublished; the
//! model's choices, by kind:
//!
//! | cause | status |
//! |---|---|
//! | no `vector_calc` cap, no `calc_matrix`, `ds` ≠ 4, an 8-bit matrix without `calc_matrix_type_8bit`, non-zero `op_tags` or `mat_le_tag_cs` bits 6/5/3, `log_chunk_size` above `max_chunk_size`, an operation other than XOR, used slots not contiguous from 0, no slot, `vec_count` 0 or above `max_vec_count` | LOCAL_QP_OP_ERR |
//! | `vec_size` 0, not a multiple of 4, or above [`MAX_VEC_SIZE`] | LOCAL_LENGTH_ERR |
//! | matrix or vectors not readable through their keys (checked by the device layer) | LOCAL_PROT_ERR |

use cx4_hw::wqe::vector_calc::{
    self as vc, calc_op, VecCalcSeg, CALC_LE, CALC_MATRIX, CALC_MATRIX_8BIT, CALC_TAG,
    LOG_CHUNK_SIZE_MASK,
};
use zerocopy::FromBytes;

use super::calc::Calc;
use super::gf::Field;
use crate::roce::WcStatus;

/// The largest vector the model computes (a model limit: it builds the whole result before
/// sending; libmlx5's blocks are far smaller). Larger vectors fail with LOCAL_LENGTH_ERR.
pub const MAX_VEC_SIZE: u32 = 16 << 20;

/// What the vector-calc capability page (current values) allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcCaps {
    /// `cmd_hca_cap.vector_calc`.
    pub vector_calc: bool,
    /// `calc_matrix`.
    pub calc_matrix: bool,
    /// `calc_matrix_type_8bit`.
    pub matrix_8bit: bool,
    /// `max_vec_count`.
    pub max_vec_count: u8,
    /// `max_chunk_size` (the largest log_chunk_size).
    pub max_chunk_size: u8,
    /// `calcN.op_xor` per output slot.
    pub xor: [bool; 4],
}

/// A decoded vector-calc WQE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecCalcWqe {
    /// The calculation.
    pub calc: Calc,
    /// Local key of the matrix.
    pub cm_lkey: u32,
    /// Address of the matrix.
    pub cm_addr: u64,
    /// Local key of the input vectors.
    pub vec_lkey: u32,
    /// Address of input vector 0.
    pub vec_addr: u64,
}

/// Why a vector-calc WQE is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecCalcError {
    /// The WQE's completion status.
    pub status: WcStatus,
    /// Why, for the log.
    pub why: String,
}

impl std::fmt::Display for VecCalcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({:?})", self.why, self.status)
    }
}

fn op_err(why: String) -> VecCalcError {
    VecCalcError {
        status: WcStatus::LocalQpOpErr,
        why,
    }
}

/// Decodes and checks the segment (`ds` is the control segment's).
pub fn decode(ds: u8, seg: &[u8], caps: &EcCaps) -> Result<VecCalcWqe, VecCalcError> {
    if !caps.vector_calc || !caps.calc_matrix {
        return Err(op_err(
            "vector calc (SEND opmod 0xff) on a device without vector_calc/calc_matrix".into(),
        ));
    }
    if ds != vc::VEC_CALC_DS {
        return Err(op_err(format!(
            "vector-calc WQE with ds {ds}, expected {} (ctrl + segment, no data segments)",
            vc::VEC_CALC_DS
        )));
    }
    let s = VecCalcSeg::ref_from_bytes(seg)
        .map_err(|_| op_err(format!("vector-calc segment of {} bytes", seg.len())))?;
    let flags = s.mat_le_tag_cs() as u8;
    if flags & CALC_MATRIX == 0 {
        return Err(op_err(format!(
            "mat_le_tag_cs {flags:#04x} without CALC_MATRIX: only matrix calculations exist"
        )));
    }
    if flags & (CALC_LE | CALC_TAG | 0x08) != 0 || s.op_tags() != 0 {
        return Err(op_err(format!(
            "mat_le_tag_cs {flags:#04x} / op_tags {:#04x}: le, tag and bit 3 are not modelled",
            s.op_tags()
        )));
    }
    let field = if flags & CALC_MATRIX_8BIT != 0 {
        if !caps.matrix_8bit {
            return Err(op_err(
                "8-bit matrix (MLX5_CALC_MATRIX_8BIT) without calc_matrix_type_8bit".into(),
            ));
        }
        Field::Gf256
    } else {
        Field::Gf16
    };
    let lcs = flags & LOG_CHUNK_SIZE_MASK;
    if lcs > caps.max_chunk_size {
        return Err(op_err(format!(
            "log_chunk_size {lcs} above max_chunk_size {}",
            caps.max_chunk_size
        )));
    }
    let ops = [s.calc_op0(), s.calc_op1(), s.calc_op2(), s.calc_op3()].map(|o| o as u8);
    let used = ops.iter().take_while(|&&o| o != calc_op::NONE).count();
    if used == 0 || ops[used..].iter().any(|&o| o != calc_op::NONE) {
        return Err(op_err(format!(
            "calc_op {ops:02x?}: the used slots must be contiguous from slot 0"
        )));
    }
    for (slot, &o) in ops[..used].iter().enumerate() {
        if o != calc_op::XOR || !caps.xor[slot] {
            return Err(op_err(format!(
                "calc_op[{slot}] = {o:#04x}: only XOR ({:#04x}) with calc{slot}.op_xor",
                calc_op::XOR
            )));
        }
    }
    let k = s.vec_count() as u8;
    if k == 0 || k > caps.max_vec_count {
        return Err(op_err(format!(
            "vec_count {k} outside 1..={}",
            caps.max_vec_count
        )));
    }
    let size = s.vec_size();
    if size == 0 || size % 4 != 0 || size > MAX_VEC_SIZE {
        return Err(VecCalcError {
            status: WcStatus::LocalLengthErr,
            why: format!(
                "vec_size {size}: must be a non-zero multiple of 4 up to {MAX_VEC_SIZE} (model \
                 limit)"
            ),
        });
    }
    let outputs = usize::from(vc::noutputs(used as u8));
    let mut active = [false; 4];
    active[..used].fill(true);
    Ok(VecCalcWqe {
        calc: Calc {
            field,
            vec_count: usize::from(k),
            vec_size: size as usize,
            outputs,
            active,
            chunk: vc::chunk_size(lcs) as usize,
        },
        cm_lkey: s.cm_lkey(),
        cm_addr: s.cm_addr(),
        vec_lkey: s.vec_lkey(),
        vec_addr: s.vec_addr(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CX4: EcCaps = EcCaps {
        vector_calc: true,
        calc_matrix: true,
        matrix_8bit: false,
        max_vec_count: 16,
        max_chunk_size: 0,
        xor: [true; 4],
    };

    /// The segment post_ec_vec_calc writes.
    fn seg(m: usize, w8: bool, k: u8, size: u32) -> VecCalcSeg {
        let mut s = VecCalcSeg::new();
        let ops = [calc_op::XOR; 4];
        s.set_calc_op0(ops[0].into());
        if m > 1 {
            s.set_calc_op1(ops[1].into());
        }
        if m > 2 {
            s.set_calc_op2(ops[2].into());
        }
        if m > 3 {
            s.set_calc_op3(ops[3].into());
        }
        s.set_mat_le_tag_cs((CALC_MATRIX | if w8 { CALC_MATRIX_8BIT } else { 0 }).into());
        s.set_vec_count(k.into());
        s.set_cm_lkey(0x100 + 7);
        s.set_cm_addr(0x5000);
        s.set_vec_size(size);
        s.set_vec_lkey(0x200 + 9);
        s.set_vec_addr(0x9000);
        s
    }

    #[test]
    fn libmlx5_segments_decode() {
        let w = decode(4, &seg(3, false, 10, 4096).0, &CX4).unwrap();
        assert_eq!(w.calc.field, Field::Gf16);
        assert_eq!(w.calc.outputs, 4, "m = 3 is four outputs");
        assert_eq!(w.calc.active, [true, true, true, false]);
        assert_eq!(
            (w.calc.vec_count, w.calc.vec_size, w.calc.chunk),
            (10, 4096, 64)
        );
        assert_eq!(
            (w.cm_lkey, w.cm_addr, w.vec_lkey, w.vec_addr),
            (0x107, 0x5000, 0x209, 0x9000)
        );
        let w = decode(4, &seg(2, false, 1, 64).0, &CX4).unwrap();
        assert_eq!(w.calc.outputs, 2);
        let caps8 = EcCaps {
            matrix_8bit: true,
            ..CX4
        };
        assert_eq!(
            decode(4, &seg(4, true, 16, 1 << 20).0, &caps8)
                .unwrap()
                .calc
                .field,
            Field::Gf256
        );
    }

    #[test]
    fn bad_parameters_are_refused_with_their_status() {
        use WcStatus::*;
        let caps8 = EcCaps {
            matrix_8bit: true,
            ..CX4
        };
        let mut cases: Vec<(VecCalcSeg, u8, EcCaps, WcStatus, &str)> = vec![
            (
                seg(1, false, 4, 64),
                4,
                EcCaps::default(),
                LocalQpOpErr,
                "without vector_calc",
            ),
            (seg(1, false, 4, 64), 5, CX4, LocalQpOpErr, "ds 5"),
            (seg(1, true, 4, 64), 4, CX4, LocalQpOpErr, "8-bit matrix"),
            (seg(1, false, 0, 64), 4, CX4, LocalQpOpErr, "vec_count 0"),
            (seg(1, false, 17, 64), 4, CX4, LocalQpOpErr, "vec_count 17"),
            (seg(1, false, 4, 0), 4, CX4, LocalLengthErr, "vec_size 0"),
            (seg(1, false, 4, 66), 4, CX4, LocalLengthErr, "vec_size 66"),
            (
                seg(1, true, 4, MAX_VEC_SIZE + 4),
                4,
                caps8,
                LocalLengthErr,
                "vec_size",
            ),
        ];
        let mut s = seg(2, false, 4, 64);
        s.set_calc_op0(0);
        cases.push((s, 4, CX4, LocalQpOpErr, "contiguous"));
        let mut s = seg(2, false, 4, 64);
        s.set_calc_op1(1);
        cases.push((s, 4, CX4, LocalQpOpErr, "only XOR"));
        let mut s = seg(1, false, 4, 64);
        s.set_mat_le_tag_cs(0);
        cases.push((s, 4, CX4, LocalQpOpErr, "without CALC_MATRIX"));
        let mut s = seg(1, false, 4, 64);
        s.set_mat_le_tag_cs((CALC_MATRIX | 1).into());
        cases.push((s, 4, CX4, LocalQpOpErr, "log_chunk_size 1"));
        let mut s = seg(1, false, 4, 64);
        s.set_mat_le_tag_cs((CALC_MATRIX | CALC_LE).into());
        cases.push((s, 4, CX4, LocalQpOpErr, "le, tag"));
        let mut s = seg(1, false, 4, 64);
        s.set_op_tags(1);
        cases.push((s, 4, CX4, LocalQpOpErr, "op_tags"));
        let no_xor3 = EcCaps {
            xor: [true, true, true, false],
            ..CX4
        };
        cases.push((
            seg(4, false, 4, 64),
            4,
            no_xor3,
            LocalQpOpErr,
            "calc3.op_xor",
        ));
        for (s, ds, caps, status, why) in cases {
            let e = decode(ds, &s.0, &caps).unwrap_err();
            assert_eq!(e.status, status, "{why}: {e}");
            assert!(e.why.contains(why), "{why:?} not in {e}");
        }
        // A truncated segment is refused, not read past.
        assert!(decode(4, &[0u8; 20], &CX4).is_err());
    }
}
