// SPDX-License-Identifier: GPL-2.0
//! The RDMA layer (upstream mlx5_ib): the function's ib device over the `ib` abstraction
//! crate, with one RoCE port bound to the Ethernet netdev.
//!
//! - mod.rs: [`Ib`], probe and teardown (RoCE enabled on the NIC vport, the device
//!   registered as `cx4_%d` with driver id MLX5 so that rdma-core's mlx5 provider binds);
//! - device.rs: the ops (device and port attributes from the caps and the netdev, P_Key,
//!   link layer, GIDs, user contexts, PDs, and the objects below);
//! - counters.rs: the port's hardware counters (a queue counter set all QPs name, the
//!   congestion statistics);
//! - dc.rs: the DC transport of processes (DC initiators' checks; DC targets, created on the
//!   card at RTR and drained before they go);
//! - cq.rs: CQs (a process's ring and doorbell record, its resize, events to ib_core);
//! - kcq.rs: kernel users' CQs (poll and arm) and the table of kernel QPs;
//! - kqp.rs: kernel users' QP rings (post_send, post_recv, completions);
//! - ksrq.rs: kernel users' SRQ rings (post_srq_recv, the WQEs completions free);
//! - ah.rs: address handles (the UD address vector);
//! - mw.rs: memory windows (free KLM mkeys the process binds by UMR WQEs);
//! - mr.rs: memory regions (MTT mkeys over pinned user pages, re-registration; the DMA MR);
//! - qp.rs: RC/UC/UD and XRC initiator QPs of processes, RC/UC/UD QPs of kernel users, the
//!   GSI QP, XRC target QPs, state transitions;
//! - srq.rs: SRQs (RMPs; of processes and kernel users) and XRC SRQs, their limit and its
//!   event;
//! - umr.rs: the UMR QP that changes a user MR's rights and PD in place (re-registration);
//! - xrcd.rs: XRC domains (`ALLOC_XRCD`);
//! - gid.rs: the card's RoCE address table (`SET_ROCE_ADDRESS`);
//! - mcg.rs: UD QPs in multicast groups (`ATTACH_TO_MCG`, `DETACH_FROM_MCG`);
//! - ucontext.rs: user contexts with static UAR pages and their mmap;
//! - abi.rs: the mlx5 user ABI structs libmlx5 exchanges with the driver.

pub(crate) mod abi;
mod ah;
mod counters;
mod cq;
mod dc;
mod device;
mod flow;
mod gid;
mod kcq;
mod kqp;
mod ksrq;
mod mcg;
mod mr;
mod mw;
mod qp;
mod qp_opt;
mod rawqp;
mod srq;
mod ucontext;
mod umr;
mod wq;
mod xrcd;

use cx4_hw::command;
use kernel::{
    device::Bound,
    page::PAGE_SHIFT,
    pci,
    prelude::*,
    sync::Arc, //
};
use netdev::DeviceRef;

use crate::{
    caps::Caps,
    clock::Timer,
    cmd::input,
    mdev::Mdev,
    uar::UarPage, //
};
use kcq::KqpTable;

pub(crate) use device::IbDev;

/// What the ops share: the device data of the registration.
pub(crate) struct IbShared {
    pub(crate) mdev: Arc<Mdev>,
    pub(crate) caps: Arc<Caps>,
    /// The RoCE port's netdev (state, MTU).
    pub(crate) netdev: DeviceRef,
    /// BAR0's first page frame: UAR page `i` is at `bar_pfn + i`.
    pub(crate) bar_pfn: u64,
    /// Firmware version, packed as mlx5_ib reports it.
    pub(crate) fw_ver: u64,
    /// Node and system image GUID (EUI-64 of the port's MAC).
    pub(crate) node_guid: u64,
    /// PCI device ID and revision.
    pub(crate) part_id: u32,
    pub(crate) hw_ver: u32,
    /// The SQs' minimum inline mode (`cx4_hw::wq::inline_mode`).
    pub(crate) min_inline: u8,
    /// The completion EQs, by completion vector.
    pub(crate) comp_eqns: KVec<u8>,
    /// The UAR page of kernel CQs' and QPs' doorbells.
    pub(crate) kuar: u32,
    /// Kernel QPs by number, for their completions.
    pub(crate) kqps: Arc<KqpTable>,
    /// The queue counter set every QP names ([`counters::QCounter`]).
    pub(crate) qcounter: u8,
    /// The card answers `QUERY_CONG_STATISTICS` (`cc_query_allowed`).
    pub(crate) cc_query: bool,
    /// The UMR QP that changes user MRs' rights and PD in place (mlx5_ib's `umrc`).
    pub(crate) umr: Arc<umr::UmrQp>,
    /// The BYPASS tables of processes' steering rules.
    pub(crate) flows: Arc<flow::FlowDb>,
    /// The card's clock, whose clock-info page processes map (none: the card gives no
    /// frequency, and no clock-info page is offered).
    pub(crate) clock: Option<Arc<Timer>>,
}

/// What a kernel user of the RoCE port's loopback needs (the EC engine's QP, which the root
/// creates on it): plain values, valid while the [`Ib`] exists.
#[derive(Clone, Copy)]
pub(crate) struct KernelPort {
    /// The UAR page of kernel CQs' and QPs' doorbells.
    pub(crate) uar: u32,
    /// The queue counter set every QP names.
    pub(crate) counter: u8,
    /// The port's MAC address.
    pub(crate) mac: [u8; 6],
    /// The port's default GID (index 0: fe80::EUI-64 of the MAC), which registering the
    /// device wrote into the card's RoCE address table.
    pub(crate) gid: [u8; 16],
}

/// The function's ib device. Dropping it unregisters the device (the RDMA core destroys
/// every user object and deletes every GID first, so the card's RoCE address table ends
/// empty), then turns RoCE off on the vport. Kernel users of its port (the EC engine) are
/// gone before (the root drops them first).
pub(crate) struct Ib {
    port: KernelPort,
    // Field order is drop order: unregistering destroys every kernel CQ and QP before their
    // UAR page goes.
    _reg: ib::Registration<IbDev>,
    _qcounter: counters::QCounter,
    /// The UAR page of the ib device's kernel objects (mlx5_ib's `fp_bfreg`).
    _kuar: UarPage,
    _roce: RoceEnable,
}

impl Ib {
    /// Enables RoCE on the NIC vport and registers the ib device on `netdev`
    /// (mlx5_ib `mlx5r_probe`).
    pub(crate) fn probe(
        pdev: &pci::Device<Bound>,
        mdev: &Arc<Mdev>,
        caps: &Arc<Caps>,
        netdev: DeviceRef,
        min_inline: u8,
        comp_eqns: KVec<u8>,
        clock: Option<Arc<Timer>>,
    ) -> Result<Self> {
        let comp_vectors = comp_eqns.len() as u32;
        let roce = RoceEnable::new(mdev)?;
        let kuar = UarPage::alloc(mdev)?;
        let qcounter = counters::QCounter::alloc(mdev)?;
        let fw = mdev.bar.fw_version()?;
        let mac = netdev.device().dev_addr();
        let node_guid = eui64(&mac);
        let bar_pfn = pdev.resource_start(0)? >> PAGE_SHIFT;
        let umr = umr::UmrQp::new(
            mdev,
            kuar.index(),
            comp_eqns.first().copied().ok_or(EINVAL)?,
            caps.gen().cqe_version() == 1,
        )?;
        let shared = IbShared {
            mdev: mdev.clone(),
            caps: caps.clone(),
            netdev: netdev.clone(),
            bar_pfn,
            fw_ver: (u64::from(fw.major) << 32)
                | (u64::from(fw.minor) << 16)
                | u64::from(fw.subminor),
            node_guid,
            part_id: pdev.device_id().into(),
            hw_ver: pdev.revision_id().into(),
            min_inline,
            comp_eqns,
            kuar: kuar.index(),
            kqps: Arc::pin_init(KqpTable::new(), GFP_KERNEL)?,
            qcounter: qcounter.id(),
            cc_query: caps.gen().cc_query_allowed() != 0,
            umr,
            flows: flow::FlowDb::new(mdev)?,
            clock,
        };
        let mut reg = ib::Registration::<IbDev>::new(
            pdev.as_ref(),
            &crate::THIS_MODULE,
            node_guid,
            comp_vectors,
            shared,
        )?;
        reg.set_netdev(1, netdev.device())?;
        reg.register(c"cx4_%d", pdev.as_ref())?;
        dev_info!(
            pdev,
            "{}: RDMA device on {}, RoCE address table of {} entries\n",
            reg.device().name(),
            netdev.device().name(),
            device::gid_table_len(caps)
        );
        let port = KernelPort {
            uar: kuar.index(),
            counter: qcounter.id(),
            mac,
            gid: default_gid(&mac),
        };
        Ok(Self {
            port,
            _reg: reg,
            _qcounter: qcounter,
            _kuar: kuar,
            _roce: roce,
        })
    }

    /// The port's values for a kernel user of its loopback (the EC engine).
    pub(crate) fn kernel_port(&self) -> KernelPort {
        self.port
    }
}

/// The NIC vport's `roce_en` (vport.c `mlx5_nic_vport_enable_roce`), set while the ib device
/// exists.
struct RoceEnable {
    mdev: Arc<Mdev>,
}

impl RoceEnable {
    fn new(mdev: &Arc<Mdev>) -> Result<Self> {
        set_vport_roce(mdev, true)?;
        Ok(Self { mdev: mdev.clone() })
    }
}

impl Drop for RoceEnable {
    fn drop(&mut self) {
        if let Err(e) = set_vport_roce(&self.mdev, false) {
            dev_warn!(
                self.mdev.dev.dev(),
                "could not disable RoCE on the vport: {:?}\n",
                e
            );
        }
    }
}

/// `MODIFY_NIC_VPORT_CONTEXT` with only `roce_en` selected.
fn set_vport_roce(mdev: &Mdev, on: bool) -> Result {
    let mut m = input::<command::ModifyNicVportContext>(0)?;
    m.field_select_mut().set_roce_en(1);
    m.nic_vport_context_mut().set_roce_en(on.into());
    mdev.cmdq
        .exec::<command::ModifyNicVportContext>(&m, 0)
        .map(|_| ())
}

/// ib_core's default GID of a RoCE port (`make_default_gid`): fe80::/64 with the MAC's
/// modified EUI-64.
fn default_gid(mac: &[u8; 6]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8..].copy_from_slice(&eui64(mac).to_be_bytes());
    g
}

/// The modified EUI-64 of a MAC address (`addrconf_addr_eui48`), as a GUID in host order.
fn eui64(mac: &[u8; 6]) -> u64 {
    u64::from_be_bytes([
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ])
}
