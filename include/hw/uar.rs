// SPDX-License-Identifier: GPL-2.0
//! User access regions (UARs): allocation commands, the doorbell offsets inside a UAR page and
//! the doorbell words written to them, plus the doorbell records in host memory.
//!
//! UAR page *n* is the 4 KiB page at BAR0 + *n* × 4 KiB. All doorbell words are big-endian on
//! the bus; the encoders below return the bytes in bus order, ready for a raw MMIO write.

use crate::bits::ifc_layouts;

/// Size of a UAR page.
pub const UAR_PAGE_SIZE: usize = 4096;
/// `MLX5_CQ_DOORBELL` (doorbell.h): 64-bit CQ arm doorbell.
pub const CQ_DOORBELL: usize = 0x20;
/// `MLX5_EQ_DOORBELL_OFFSET` (eq.c): 32-bit EQ doorbell that updates the consumer index and
/// arms the EQ.
pub const EQ_DOORBELL_UPDATE_ARM: usize = 0x40;
/// EQ doorbell that only updates the consumer index (eq.h `eq_update_ci`: dword 2 after
/// [`EQ_DOORBELL_UPDATE_ARM`]).
pub const EQ_DOORBELL_UPDATE: usize = 0x48;
/// `MLX5_BF_OFFSET` (doorbell.h): first BlueFlame / send doorbell register.
pub const BF_OFFSET: usize = 0x800;

/// Offset of BlueFlame register `k` (0..=3) for `log_bf_reg_size` (each register has two
/// halves of `1 << log_bf_reg_size` bytes that kernel QPs alternate between).
pub fn bf_reg_offset(log_bf_reg_size: u32, k: usize) -> usize {
    BF_OFFSET + (k << log_bf_reg_size)
}

/// Byte offset of the receive counter in a QP/RQ doorbell record (`MLX5_RCV_DBR` × 4, qp.h).
pub const DBR_RCV: usize = 0;
/// Byte offset of the send counter in a QP/SQ doorbell record (`MLX5_SND_DBR` × 4, qp.h).
pub const DBR_SND: usize = 4;
/// Byte offset of the consumer index in a CQ doorbell record (cq.c: `set_ci_db = db`).
pub const CQ_DBR_SET_CI: usize = 0;
/// Byte offset of the arm word in a CQ doorbell record (cq.c: `arm_db = db + 1`).
pub const CQ_DBR_ARM: usize = 4;

/// `MLX5_CQ_DB_REQ_NOT` (cq.h): arm for the next completion.
pub const CQ_DB_REQ_NOT: u32 = 0;
/// `MLX5_CQ_DB_REQ_NOT_SOL` (cq.h): arm for the next solicited completion.
pub const CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;

/// An EQ doorbell: consumer index and EQ number (eq.h `eq_update_ci`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EqDoorbell {
    /// EQ number.
    pub eqn: u8,
    /// Consumer index (24 bits).
    pub ci: u32,
}

impl EqDoorbell {
    /// Host-order value: `ci[23:0] | eqn << 24`.
    pub fn value(self) -> u32 {
        (self.ci & 0xff_ffff) | (u32::from(self.eqn) << 24)
    }

    /// The 4 bytes written to [`EQ_DOORBELL_UPDATE_ARM`] or [`EQ_DOORBELL_UPDATE`].
    pub fn to_bytes(self) -> [u8; 4] {
        self.value().to_be_bytes()
    }

    /// Decodes the 4 bytes of an EQ doorbell write.
    pub fn from_bytes(b: [u8; 4]) -> Self {
        let v = u32::from_be_bytes(b);
        Self {
            eqn: (v >> 24) as u8,
            ci: v & 0xff_ffff,
        }
    }
}

/// A CQ arm doorbell (cq.h `mlx5_cq_arm`), also mirrored in the CQ doorbell record's arm word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqArmDoorbell {
    /// Arm sequence number (2 bits).
    pub sn: u8,
    /// [`CQ_DB_REQ_NOT`] or [`CQ_DB_REQ_NOT_SOL`].
    pub cmd: u32,
    /// Consumer index (24 bits).
    pub ci: u32,
    /// CQ number (24 bits).
    pub cqn: u32,
}

impl CqArmDoorbell {
    /// Host-order first word: `sn << 28 | cmd | ci` (also the doorbell record's arm word).
    pub fn arm_word(self) -> u32 {
        (u32::from(self.sn & 3) << 28) | (self.cmd & (7 << 24)) | (self.ci & 0xff_ffff)
    }

    /// The 8 bytes written to [`CQ_DOORBELL`]: the arm word, then the CQ number.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&self.arm_word().to_be_bytes());
        b[4..].copy_from_slice(&(self.cqn & 0xff_ffff).to_be_bytes());
        b
    }

    /// Decodes the 8 bytes of a CQ doorbell write.
    pub fn from_bytes(b: [u8; 8]) -> Self {
        let w0 = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let w1 = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        Self {
            sn: ((w0 >> 28) & 3) as u8,
            cmd: w0 & (7 << 24),
            ci: w0 & 0xff_ffff,
            cqn: w1 & 0xff_ffff,
        }
    }
}

ifc_layouts! {
    /// Input of `ALLOC_UAR`.
    pub struct AllocUarIn: Ifc "alloc_uar_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `ALLOC_UAR`: the UAR page index.
    pub struct AllocUarOut: Ifc "alloc_uar_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        uar, set_uar: u32 @ 0x048, 0x18;
    }

    /// Input of `DEALLOC_UAR`.
    pub struct DeallocUarIn: Ifc "dealloc_uar_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        uar, set_uar: u32 @ 0x048, 0x18;
    }

    /// Output of `DEALLOC_UAR`.
    pub struct DeallocUarOut: Ifc "dealloc_uar_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // doorbell.h: MLX5_BF_OFFSET 0x800, MLX5_CQ_DOORBELL 0x20; eq.c: MLX5_EQ_DOORBELL_OFFSET
    // 0x40; eq.h eq_update_ci writes dword 2 past it (0x48) when not arming.
    #[test]
    fn doorbell_offsets_match_the_headers() {
        assert_eq!(CQ_DOORBELL, 0x20);
        assert_eq!(EQ_DOORBELL_UPDATE_ARM, 0x40);
        assert_eq!(EQ_DOORBELL_UPDATE, 0x40 + 2 * 4);
        assert_eq!(BF_OFFSET, 0x800);
        assert_eq!(bf_reg_offset(9, 1), 0xa00);
    }

    // eq.h: val = (cons_index & 0xffffff) | (eqn << 24), written as cpu_to_be32(val).
    #[test]
    fn eq_doorbell_encodes_ci_and_eqn_big_endian() {
        let db = EqDoorbell {
            eqn: 7,
            ci: 0x0123_4567,
        };
        assert_eq!(db.to_bytes(), [0x07, 0x23, 0x45, 0x67]);
        assert_eq!(
            EqDoorbell::from_bytes(db.to_bytes()),
            EqDoorbell {
                eqn: 7,
                ci: 0x23_4567
            }
        );
    }

    // cq.h mlx5_cq_arm: doorbell[0] = be32(sn << 28 | cmd | ci), doorbell[1] = be32(cqn).
    #[test]
    fn cq_arm_doorbell_encodes_two_big_endian_words() {
        let db = CqArmDoorbell {
            sn: 2,
            cmd: CQ_DB_REQ_NOT_SOL,
            ci: 0x10,
            cqn: 0x42,
        };
        assert_eq!(db.arm_word(), 0x2100_0010);
        assert_eq!(db.to_bytes(), [0x21, 0x00, 0x00, 0x10, 0, 0, 0, 0x42]);
        assert_eq!(CqArmDoorbell::from_bytes(db.to_bytes()), db);
    }

    #[test]
    fn alloc_uar_returns_the_index_in_dword_2() {
        let mut o = AllocUarOut::new();
        o.set_uar(0x0a);
        assert_eq!(&o.0[8..12], &[0, 0, 0, 0x0a]);
    }
}
