//! The cx4 device model: a ConnectX-4 (mlx5) function served over vfio-user.
//!
//! Layers, as rust-vmm builds devices: [`transport`] speaks vfio-user and [`runtime`] runs the
//! wire and timer threads; both reach the card only through [`device::Device`], which owns the
//! bus context ([`bus::Bus`]: guest memory, MSI-X, faults) once and lends it per call to its
//! private parts ([`hca::Hca`]: the [`fw::Firmware`], the [`datapath::NicPath`], the
//! [`port::Port`] and the [`roce::RoceEngine`]). Nothing below `device` names the device. The packet's path:
//! Documentation/model-packet-path.md.

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
pub mod hostile;
pub mod irq;
pub mod logger;
pub mod pages;
pub mod path_stats;
pub mod pause;
pub mod pci_cfg;
pub mod port;
pub mod rng;
pub mod roce;
pub mod runtime;
pub mod rx_merges;
pub mod striding;
pub mod transport;
pub mod wake;
pub mod wire;
