// SPDX-License-Identifier: GPL-2.0
//! cx4: a Rust driver for ConnectX-4-class (mlx5) RDMA NICs.
//!
//! The crate root only declares the module; each concept lives in its own file.

mod driver;
mod iseg;

kernel::module_pci_driver! {
    type: driver::Cx4Driver,
    name: "cx4",
    authors: ["The cx4 developers"],
    description: "ConnectX-4 / ConnectX-4 Lx (mlx5) driver in Rust",
    license: "GPL v2",
}
