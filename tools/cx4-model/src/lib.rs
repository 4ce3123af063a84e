//! The cx4 device model: a ConnectX-4 (mlx5) function served over vfio-user.
//!
//! `transport` speaks the wire protocol; `device` is the card; the other modules are its parts.

pub mod bus;
pub mod clock;
pub mod cmdq;
pub mod config;
pub mod datapath;
pub mod device;
pub mod ec;
pub mod eq;
pub mod eth;
pub mod faults;
pub mod fw;
pub mod guest_mem;
pub mod hca;
pub mod irq;
pub mod logger;
pub mod pages;
pub mod pause;
pub mod pci_cfg;
pub mod pfc;
pub mod roce;
pub mod runtime;
pub mod striding;
pub mod transport;
pub mod wire;
