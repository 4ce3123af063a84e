// SPDX-License-Identifier: GPL-2.0
//! ConnectX-4 hardware schema shared by the cx4 driver and the cx4 device model.
//!
//! Every layout follows the mlx5 Programmer's Reference Manual as published in Linux'
//! `include/linux/mlx5/mlx5_ifc.h` and `include/linux/mlx5/device.h`. All multi-byte fields
//! are big-endian, as the device sees them.

// Kbuild passes `-Zcrate-attr=no_std` itself (and `--cfg MODULE`); cargo builds need the attribute.
#![cfg_attr(not(MODULE), no_std)]

pub mod iseg;
pub mod pci;
