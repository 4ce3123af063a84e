// SPDX-License-Identifier: GPL-2.0
//! PCI identity of the ConnectX-4 family.

/// Mellanox Technologies PCI vendor ID.
pub const VENDOR_MELLANOX: u16 = 0x15b3;
/// ConnectX-4 physical function.
pub const DEVICE_CONNECTX4: u16 = 0x1013;
/// ConnectX-4 Lx physical function.
pub const DEVICE_CONNECTX4_LX: u16 = 0x1015;
/// PCI class code of an Ethernet controller (class 0x02, subclass 0x00, prog-if 0x00).
pub const CLASS_ETHERNET: u32 = 0x02_0000;
/// Size of BAR0 on the modelled cards.
pub const BAR0_SIZE: u64 = 32 << 20;
