// SPDX-License-Identifier: GPL-2.0
//! The initialization segment at offset 0 of BAR0 (`struct mlx5_init_seg`, device.h).

use zerocopy::byteorder::{BigEndian, U32};
use zerocopy_derive::{FromBytes, Immutable, IntoBytes, KnownLayout};

type Be32 = U32<BigEndian>;

/// Offset of `fw_rev` (major in bits 15:0, minor in bits 31:16).
pub const FW_REV: usize = 0x000;
/// Offset of `cmdif_rev_fw_sub` (command interface revision in bits 31:16, sub-minor in 15:0).
pub const CMDIF_REV_FW_SUB: usize = 0x004;
/// Offset of the high 32 bits of the command queue address.
pub const CMDQ_ADDR_H: usize = 0x010;
/// Offset of the low 32 bits of the command queue address, with log size and stride.
pub const CMDQ_ADDR_L_SZ: usize = 0x014;
/// Offset of the command doorbell (one bit per command slot).
pub const CMD_DBELL: usize = 0x018;
/// Offset of the word whose bit 31 is set while the firmware is initializing.
pub const INITIALIZING: usize = 0x1fc;
/// Offset of the health buffer.
pub const HEALTH: usize = 0x200;
/// Offset of the command execution timeout (0: driver default).
pub const CMD_EXEC_TO: usize = 0xff8;
/// Offset of the command queue init timeout (0: driver default).
pub const CMD_Q_INIT_TO: usize = 0xffc;
/// Offset of the free-running internal timer (high word; low word follows).
pub const INTERNAL_TIMER_H: usize = 0x1000;
/// Offset of the free-running internal timer's low word.
pub const INTERNAL_TIMER_L: usize = 0x1004;
/// Offset of the health counter, which firmware increments while alive.
pub const HEALTH_COUNTER: usize = 0x1010;
/// Size of the initialization segment the driver maps.
pub const SIZE: usize = 0x2010;

/// Bit 31 of [`INITIALIZING`]: firmware is still initializing.
pub const INITIALIZING_BIT: u32 = 1 << 31;
/// The only command interface revision this driver family speaks.
pub const CMDIF_REV: u16 = 5;

/// The health buffer (`struct health_buffer`, device.h), 64 bytes at [`HEALTH`].
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct HealthBuffer {
    /// Assertion variables.
    pub assert_var: [Be32; 5],
    /// Reserved.
    pub rsvd0: [Be32; 3],
    /// Address of the failed assertion.
    pub assert_exit_ptr: Be32,
    /// Caller address of the failed assertion.
    pub assert_callra: Be32,
    /// Reserved.
    pub rsvd1: [Be32; 1],
    /// Time of the fatal event (epoch seconds).
    pub time: Be32,
    /// Firmware version; all-ones marks a fatal state.
    pub fw_ver: Be32,
    /// Hardware id.
    pub hw_id: Be32,
    /// Bit 7: recovery flow required; bits 3:0 severity.
    pub rfr_severity: u8,
    /// Reserved.
    pub rsvd2: [u8; 3],
    /// IRISC index.
    pub irisc_index: u8,
    /// Health syndrome.
    pub synd: u8,
    /// External syndrome.
    pub ext_synd: [u8; 2],
}

/// Firmware revision as reported by the initialization segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FwVersion {
    /// Major version (12 for ConnectX-4, 14 for ConnectX-4 Lx).
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Sub-minor version.
    pub subminor: u16,
}

impl FwVersion {
    /// Decode from the host-order values of `fw_rev` and `cmdif_rev_fw_sub`.
    pub fn from_regs(fw_rev: u32, cmdif_rev_fw_sub: u32) -> Self {
        Self {
            major: fw_rev as u16,
            minor: (fw_rev >> 16) as u16,
            subminor: cmdif_rev_fw_sub as u16,
        }
    }

    /// Encode to host-order `(fw_rev, cmdif_rev_fw_sub)` for a command interface revision.
    pub fn to_regs(self, cmdif_rev: u16) -> (u32, u32) {
        (
            u32::from(self.major) | (u32::from(self.minor) << 16),
            u32::from(self.subminor) | (u32::from(cmdif_rev) << 16),
        )
    }
}

/// `nic_interface` state (bits 10:8 of `cmdq_addr_l_sz`, health.c `get_nic_state`): the
/// device disabled its NIC interface.
pub const NIC_IFC_DISABLED: u32 = 1;
/// `nic_interface` state: software reset in progress.
pub const NIC_IFC_SW_RESET: u32 = 7;

/// The `nic_interface` state from the host-order `cmdq_addr_l_sz`.
pub fn nic_interface(cmdq_addr_l_sz: u32) -> u32 {
    (cmdq_addr_l_sz >> 8) & 7
}

/// Bit 7 of [`HealthBuffer::rfr_severity`]: the firmware requires a recovery flow.
pub const HEALTH_RFR: u8 = 1 << 7;

/// Health syndromes of the health buffer's `synd` byte (`MLX5_INITIAL_SEG_HEALTH_SYNDROME_*`,
/// mlx5_ifc.h), with health.c's descriptions in [`health_synd::describe`].
pub mod health_synd {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_INITIAL_SEG_HEALTH_SYNDROME_", health_synd_name;
        FW_INTERNAL_ERR = 0x1, "FW_INTERNAL_ERR";
        DEAD_IRISC = 0x7, "DEAD_IRISC";
        HW_FATAL_ERR = 0x8, "HW_FATAL_ERR";
        FW_CRC_ERR = 0x9, "FW_CRC_ERR";
        ICM_FETCH_PCI_ERR = 0xa, "ICM_FETCH_PCI_ERR";
        ICM_PAGE_ERR = 0xb, "ICM_PAGE_ERR";
        ASYNCHRONOUS_EQ_BUF_OVERRUN = 0xc, "ASYNCHRONOUS_EQ_BUF_OVERRUN";
        EQ_IN_ERR = 0xd, "EQ_IN_ERR";
        EQ_INV = 0xe, "EQ_INV";
        FFSER_ERR = 0xf, "FFSER_ERR";
        HIGH_TEMP_ERR = 0x10, "HIGH_TEMP_ERR";
        ICM_PCI_POISONED_ERR = 0x12, "ICM_PCI_POISONED_ERR";
        TRUST_LOCKDOWN_ERR = 0x13, "TRUST_LOCKDOWN_ERR";
    }

    /// What a syndrome means, in health.c's (`hsynd_str`) words.
    pub fn describe(synd: u8) -> &'static str {
        match synd {
            FW_INTERNAL_ERR => "firmware internal error",
            DEAD_IRISC => "irisc not responding",
            HW_FATAL_ERR => "unrecoverable hardware error",
            FW_CRC_ERR => "firmware CRC error",
            ICM_FETCH_PCI_ERR => "ICM fetch PCI error",
            ICM_PAGE_ERR => "HW fatal error",
            ASYNCHRONOUS_EQ_BUF_OVERRUN => "async EQ buffer overrun",
            EQ_IN_ERR => "EQ error",
            EQ_INV => "Invalid EQ referenced",
            FFSER_ERR => "FFSER error",
            HIGH_TEMP_ERR => "High temperature",
            ICM_PCI_POISONED_ERR => "ICM fetch PCI data poisoned error",
            TRUST_LOCKDOWN_ERR => "Trust lockdown error",
            _ => "unrecognized error",
        }
    }
}

/// Command interface revision from the host-order `cmdif_rev_fw_sub`.
pub fn cmdif_rev(cmdif_rev_fw_sub: u32) -> u16 {
    (cmdif_rev_fw_sub >> 16) as u16
}

/// Decoded `cmdq_addr_l_sz` as read by the driver before it programs the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdqSize {
    /// log2 of the number of command slots.
    pub log_size: u8,
    /// log2 of the entry stride in bytes.
    pub log_stride: u8,
}

impl CmdqSize {
    /// Decode from the host-order value of `cmdq_addr_l_sz`.
    pub fn from_reg(v: u32) -> Self {
        Self {
            log_size: ((v >> 4) & 0xf) as u8,
            log_stride: (v & 0xf) as u8,
        }
    }

    /// Encode into the low byte of `cmdq_addr_l_sz`.
    pub fn to_reg(self) -> u32 {
        (u32::from(self.log_size & 0xf) << 4) | u32::from(self.log_stride & 0xf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::size_of;

    // Offsets as published in include/linux/mlx5/device.h, struct mlx5_init_seg:
    // fw_rev 0x0, cmdif_rev_fw_sub 0x4, cmdq_addr_h 0x10, cmdq_addr_l_sz 0x14, cmd_dbell 0x18,
    // initializing 0x1fc, health 0x200, cmd_exec_to 0xff8, cmd_q_init_to 0xffc,
    // internal_timer_h 0x1000, internal_timer_l 0x1004, health_counter 0x1010.
    #[test]
    fn init_segment_offsets_match_device_h() {
        assert_eq!(
            [
                FW_REV,
                CMDIF_REV_FW_SUB,
                CMDQ_ADDR_H,
                CMDQ_ADDR_L_SZ,
                CMD_DBELL
            ],
            [0x0, 0x4, 0x10, 0x14, 0x18]
        );
        assert_eq!([INITIALIZING, HEALTH], [0x1fc, 0x200]);
        assert_eq!([CMD_EXEC_TO, CMD_Q_INIT_TO], [0xff8, 0xffc]);
        assert_eq!(
            [INTERNAL_TIMER_H, INTERNAL_TIMER_L, HEALTH_COUNTER],
            [0x1000, 0x1004, 0x1010]
        );
    }

    // struct health_buffer is 64 bytes: fw_ver at +0x30, rfr_severity at +0x38, synd at +0x3d.
    #[test]
    fn health_buffer_layout_matches_device_h() {
        assert_eq!(size_of::<HealthBuffer>(), 0x40);
        assert_eq!(core::mem::offset_of!(HealthBuffer, fw_ver), 0x30);
        assert_eq!(core::mem::offset_of!(HealthBuffer, rfr_severity), 0x38);
        assert_eq!(core::mem::offset_of!(HealthBuffer, synd), 0x3d);
    }

    // The PCI quirk mellanox_check_broken_intx_masking decodes fw_rev the same way:
    // major = low 16 bits, minor = high 16 bits, subminor = low 16 bits of word 1.
    #[test]
    fn fw_version_round_trips_through_registers() {
        let v = FwVersion {
            major: 12,
            minor: 28,
            subminor: 2006,
        };
        let (a, b) = v.to_regs(5);
        assert_eq!(a, 0x001c_000c);
        assert_eq!(b, 0x0005_07d6);
        assert_eq!(FwVersion::from_regs(a, b), v);
        assert_eq!(cmdif_rev(b), 5);
    }

    #[test]
    fn cmdq_size_decodes_low_byte() {
        let s = CmdqSize::from_reg(0xdead_b056);
        assert_eq!(
            s,
            CmdqSize {
                log_size: 5,
                log_stride: 6
            }
        );
        assert_eq!(s.to_reg(), 0x56);
    }
}
