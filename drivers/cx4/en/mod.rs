// SPDX-License-Identifier: GPL-2.0
//! The Ethernet layer's hardware objects (upstream mlx5e's `en_common.c`, `en_main.c` object
//! creation, `en_tx.c`/`en_rx.c` WQE and CQE handling, `en/rqt.c`, `en/tir.c`, `en/rss.c`,
//! `en_fs.c` + `lib/fs_ttc.c`, `port.c`, `vport.c`), without any netdev code: the objects
//! deal in DMA addresses, lengths and plain structs, and the netdev glue (NAPI poll, xmit,
//! ndo ops) is built on top of them.
//!
//! - res.rs: the layer's resources (its PD, transport domain, PA mkey and SQ UAR page, core
//!   objects; MAC, minimum inline mode) and NIC vport context helpers;
//! - port.rs: port registers (PAOS, PTYS, PMTU), link speed, port change events;
//! - qos.rs: the port's QoS registers (QTCT, QETCR, QPTS, QPDPM, PFCC per priority, QCAM);
//! - tis.rs: transport interface send objects;
//! - cqe.rs: CQE decoding shared by the rings (error CQEs);
//! - sq.rs: the Ethernet send queue and its WQE builder; rq.rs: the legacy cyclic receive
//!   queue and its CQE decoding;
//! - rqt.rs: RQ tables; tir.rs: transport interface receive objects; rss.rs: the RSS set
//!   (RQT plus one indirect TIR per traffic type);
//! - fs.rs: NIC RX flow steering (the ethtool table at the root, the L2 table, the TTC table
//!   to the RSS TIRs); ntuple.rs: ethtool flow rules checked and turned into entries;
//! - netdev.rs: the netdev (private state, `net_device_ops`, open/close, carrier);
//!   netdev/probe.rs: the netdev's probe (features, registration) and removal;
//!   netdev/rules.rs: the ethtool flow rules and additional RSS contexts, kept and applied;
//!   netdev/recovery.rs: SQ and RQ error recovery and the devlink reporters' `diagnose`;
//!   health.rs: the `tx` and `rx` devlink health reporters' data (registered by the root);
//!   channel.rs: a channel's rings and its NAPI poller; tx.rs / rx.rs: the datapath;
//!   ethtool.rs: ethtool operations; stats.rs: per-channel software counters; qstats.rs:
//!   the same counters per queue for the netdev netlink family; pport.rs: the
//!   port's PPCNT counters in `ethtool -S`; dcb.rs: the dcbnl operations (ETS, PFC, DSCP
//!   trust); tunnel.rs:
//!   VXLAN ports, which tunnelled packets keep their offloads, GENEVE parser offsets;
//!   tstamp.rs: hardware timestamps (configuration, `ethtool -T`, the function's clock);
//!   xdp.rs: XDP on the receive path (the program's verdicts, XDP_TX); netdev/xdp.rs: its
//!   attachment (`ndo_bpf`) and the layout it needs; xsk.rs: AF_XDP zero copy (a channel's
//!   XSK RQ and SQ over a socket's buffer pool, beside its regular queues), netdev/xdp.rs
//!   binds the pools without reopening anything;
//! - selftest.rs (only with `CX4_TEST_HOOKS=y`): the debugfs `selftest` file, which drives
//!   core and Ethernet objects directly for the tests.
//!
//! Every object frees what it owns in `Drop`, so each error path unwinds by itself.

// Parts of the object API (queries, alternative constructors) are for later users (the RDMA
// layer) and the selftest.
#![allow(dead_code)]

pub(crate) mod channel;
pub(crate) mod cqe;
pub(crate) mod dcb;
pub(crate) mod ethtool;
pub(crate) mod fs;
pub(crate) mod health;
pub(crate) mod lro;
pub(crate) mod ntuple;
pub(crate) mod netdev;
pub(crate) mod port;
pub(crate) mod pport;
pub(crate) mod qos;
pub(crate) mod qstats;
pub(crate) mod res;
pub(crate) mod rq;
pub(crate) mod rss;
pub(crate) mod rx;
#[cfg(cx4_test_hooks)]
pub(crate) mod selftest;
pub(crate) mod sq;
pub(crate) mod stats;
pub(crate) mod tunnel;
pub(crate) mod tstamp;
pub(crate) mod tx;
pub(crate) mod xdp;
pub(crate) mod xsk;
