// SPDX-License-Identifier: GPL-2.0
//! ConnectX-4 hardware schema shared by the cx4 driver and the cx4 device model.
//!
//! Every layout follows the mlx5 Programmer's Reference Manual as published in Linux'
//! `include/linux/mlx5/mlx5_ifc.h` and `include/linux/mlx5/device.h`. All multi-byte fields
//! are big-endian, as the device sees them.
//!
//! # Layouts
//!
//! A layout (for example [`caps::general::CmdHcaCap`]) is a `#[repr(C)]` zerocopy wrapper
//! around its bytes, declared once with its fields' bit offsets and widths copied from
//! `mlx5_ifc.h`; code reads and writes fields through accessors, never through offsets:
//!
//! ```
//! use cx4_hw::{caps::QueryHcaCapIn, opcode};
//! use zerocopy::FromBytes;
//!
//! let mut inp = QueryHcaCapIn::new();
//! inp.set_opcode(opcode::QUERY_HCA_CAP.into());
//! inp.set_op_mod(cx4_hw::caps::query_op_mod(cx4_hw::caps::cap_type::GENERAL, true).into());
//! assert_eq!(&inp.0[..4], &[0x01, 0x00, 0x00, 0x00]);
//!
//! // Any byte buffer can be viewed as a layout (alignment 1), e.g. a command output.
//! let mut out = [0u8; cx4_hw::caps::QueryHcaCapOut::SIZE];
//! let out = cx4_hw::caps::QueryHcaCapOut::mut_from_bytes(&mut out[..]).unwrap();
//! out.capability_mut().cmd_hca_cap_mut().set_log_max_qp(18);
//! assert_eq!(out.capability().cmd_hca_cap().log_max_qp(), 18);
//! ```
//!
//! Field kinds: scalars of up to 32 bits read as `u32` (`x()` / `set_x(v)`), 64-bit ones as
//! `u64`; byte arrays (MACs, strings) as slices (`x()` / `x_mut()`); fixed arrays by index
//! (`x(i)` / `set_x(i, v)`); nested layouts as references (`x()` / `x_mut()`); variable-length
//! trailing arrays such as `pas[]` through associated functions over the whole message
//! (`ManagePagesIn::set_pas(&mut msg, i, pa)`). Every layout also has `IFC_NAME`, `SIZE` and
//! `FIELDS` (and implements [`bits::Layout`]); each module lists its layouts in `LAYOUTS`, and
//! [`ALL_LAYOUTS`] collects them.
//!
//! Numeric codes (opcodes, statuses, event types, register ids) are plain constants with a
//! `name()` lookup, e.g. [`opcode::opcode_name`].

// Kbuild passes `-Zcrate-attr=no_std` itself (and `--cfg MODULE`); cargo builds need the attribute.
#![cfg_attr(not(MODULE), no_std)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod bits;
pub mod caps;
pub mod cmd;
pub mod command;
pub mod counters;
pub mod cq;
pub mod dct;
pub mod eq;
pub mod flow;
pub mod hca;
pub mod iseg;
pub mod mkey;
pub mod mng;
pub mod opcode;
pub mod pages;
pub mod pci;
pub mod pd;
pub mod qos;
pub mod qp;
pub mod regs;
pub mod roce;
pub mod srq;
pub mod status;
pub mod tir;
pub mod uar;
pub mod vport;
pub mod wq;
pub mod wqe;

#[cfg(test)]
mod conformance;
#[cfg(test)]
mod ksrc;

/// The `LAYOUTS` table of every module that declares layouts.
pub const ALL_LAYOUTS: &[&[bits::LayoutInfo]] = &[
    cmd::LAYOUTS,
    hca::LAYOUTS,
    pages::LAYOUTS,
    caps::LAYOUTS,
    caps::general::LAYOUTS,
    caps::net::LAYOUTS,
    caps::flow::LAYOUTS,
    caps::odp::LAYOUTS,
    caps::roce::LAYOUTS,
    caps::vector_calc::LAYOUTS,
    regs::LAYOUTS,
    mng::LAYOUTS,
    qos::LAYOUTS,
    uar::LAYOUTS,
    eq::LAYOUTS,
    eq::eqe::LAYOUTS,
    cq::LAYOUTS,
    cq::cqe::LAYOUTS,
    pd::LAYOUTS,
    vport::LAYOUTS,
    flow::LAYOUTS,
    wqe::LAYOUTS,
    wqe::rdma::LAYOUTS,
    wqe::repeat_block::LAYOUTS,
    wqe::vector_calc::LAYOUTS,
    wq::LAYOUTS,
    tir::LAYOUTS,
    mkey::LAYOUTS,
    counters::LAYOUTS,
    qp::LAYOUTS,
    srq::LAYOUTS,
    dct::LAYOUTS,
    roce::LAYOUTS,
];
