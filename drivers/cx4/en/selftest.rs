// SPDX-License-Identifier: GPL-2.0
//! Test hooks behind debugfs `cx4/<dev>/selftest` (used by tests/driver_core.py), built only
//! with `CX4_TEST_HOOKS=y` (`--cfg cx4_test_hooks`) and registered by the root after the core
//! (layers.rs) whether or not the netdev came up: write
//!
//! - `query N` — run N `QUERY_ISSI` commands (command queue round trips at run time);
//! - `query-eq N` — run N `QUERY_EQ` commands on completion EQ 0 (what reading upstream's
//!   debugfs `EQs/<n>/num_eqes` sends; `make bench` compares the two);
//! - `cq` — create a 64-entry CQ on completion EQ 0 and arm it (its number is logged);
//! - `cq-poll` — consume the test CQ's CQEs, re-arm it and query it (`QUERY_CQ`);
//! - `cq-moderate PERIOD COUNT [MODE]` — set the test CQ's moderation (`MODIFY_CQ`; MODE 0
//!   runs the period from the last event, 1 from the first completion), refused with
//!   `EOPNOTSUPP` when the card has no moderation (`cq_moderation`), no mode change
//!   (`cq_period_mode_modify`) or no mode 1 (`cq_period_start_from_cqe`);
//! - `cq-destroy` — destroy the test CQ;
//! - `en-objects` — create the Ethernet layer's objects (resources, TIS, CQ + SQ, CQ + RQ
//!   with posted buffers, RSS RQT and TIRs, a direct TIR, the steering tables with the own
//!   MAC; then a multicast address with promiscuous and all-multicast modes, and back), send
//!   one broadcast frame and poll its completion, and destroy everything in reverse (the
//!   results are logged).
//!
//! A failing command makes the write fail with the command's errno.

use cx4_hw::{
    command,
    wqe::CsFlags, //
};
use kernel::{
    debugfs::{
        Dir,
        File, //
    },
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
    time::{
        delay::fsleep,
        Delta, //
    },
    uaccess::UserSliceReader, //
};

use crate::{
    caps::Caps,
    cmd::input,
    cq::{
        Cq,
        CqParams, //
    },
    dmabuf::DmaBuf,
    en::{
        fs::RxSteering,
        port,
        res::EnRes,
        rq::{
            Rq,
            RqParams, //
        },
        rss::{
            Rss,
            TrafficType, //
        },
        sq::{
            Sq,
            SqParams,
            TxWqe, //
        },
    },
    mdev::Mdev,
    tir::Tir,
    tis::Tis, //
};

/// The Toeplitz key of the `en-objects` test (mlx5e's default is random; any 40 bytes do).
const TEST_RSS_KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];
/// Receive buffers the `en-objects` test posts, and their size.
const TEST_RX_BUFS: usize = 8;
/// See [`TEST_RX_BUFS`].
const TEST_RX_BUF_SIZE: usize = 2048;

/// State of the test hooks.
#[pin_data]
pub(crate) struct SelfTest {
    mdev: Arc<Mdev>,
    caps: Arc<Caps>,
    uar: u32,
    comp_eqn: Option<u8>,
    #[pin]
    cq: Mutex<Option<Cq>>,
}

impl SelfTest {
    /// Hooks for a device whose CQs use UAR page `uar` and completion EQ `comp_eqn`.
    pub(crate) fn new(
        mdev: Arc<Mdev>,
        caps: Arc<Caps>,
        uar: u32,
        comp_eqn: Option<u8>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            mdev,
            caps,
            uar,
            comp_eqn,
            cq <- new_mutex!(None),
        })
    }

    fn query(&self, n: u32) -> Result {
        for _ in 0..n {
            let m = input::<command::QueryIssi>(0)?;
            self.mdev.cmdq.exec::<command::QueryIssi>(&m, 0)?;
        }
        Ok(())
    }

    fn query_eq(&self, n: u32) -> Result {
        let eqn = self.comp_eqn.ok_or(ENODEV)?;
        for _ in 0..n {
            let mut m = input::<command::QueryEq>(0)?;
            m.set_eq_number(eqn.into());
            self.mdev.cmdq.exec::<command::QueryEq>(&m, 0)?;
        }
        Ok(())
    }

    fn cq_create(&self) -> Result {
        let mut slot = self.cq.lock();
        if slot.is_some() {
            return Err(EBUSY);
        }
        let eqn = self.comp_eqn.ok_or(ENODEV)?;
        let p = CqParams {
            log_size: 6,
            eqn,
            uar: self.uar,
        };
        let mut cq = Cq::create(&self.mdev, &p, None)?;
        cq.arm(false)?;
        dev_info!(
            self.mdev.dev.dev(),
            "selftest: CQ {:#x} armed on EQ {}\n",
            cq.cqn(),
            eqn
        );
        *slot = Some(cq);
        Ok(())
    }

    fn cq_poll(&self) -> Result {
        let mut slot = self.cq.lock();
        let cq = (*slot).as_mut().ok_or(ENOENT)?;
        let mut cqes = 0u32;
        let n = cq.poll(64, |_| cqes += 1);
        cq.arm(false)?;
        let q = cq.query()?;
        let ctx = q.cq_context();
        dev_info!(
            self.mdev.dev.dev(),
            "selftest: CQ {:#x} polled {} CQEs, {} events, re-armed; device: producer {} \
             consumer {}, moderation {} us/{} CQEs mode {}\n",
            cq.cqn(),
            n,
            cq.events(),
            ctx.producer_counter(),
            ctx.consumer_counter(),
            ctx.cq_period(),
            ctx.cq_max_count(),
            ctx.cq_period_mode()
        );
        Ok(())
    }

    fn cq_moderate(&self, period: u32, count: u32, mode: Option<u32>) -> Result {
        let g = self.caps.gen();
        let supported = g.cq_moderation() != 0
            && match mode {
                None => true,
                Some(m) => {
                    g.cq_period_mode_modify() != 0
                        && (m == 0 || (m == 1 && g.cq_period_start_from_cqe() != 0))
                }
            };
        if !supported {
            return Err(crate::en::ethtool::eopnotsupp());
        }
        let slot = self.cq.lock();
        let cq = (*slot).as_ref().ok_or(ENOENT)?;
        cq.modify_moderation(period, count, mode)
    }

    /// Creates and destroys the Ethernet objects (see the module doc). Locals drop in reverse
    /// order: steering before the TIRs, TIRs before the RQ, queues before their CQs, buffers
    /// after the queues that DMA into them, the resources last.
    fn en_objects(&self) -> Result {
        let eqn = self.comp_eqn.ok_or(ENODEV)?;
        let m = &self.mdev;
        let res = EnRes::create(m, &self.caps)?;
        let status = port::query_status(m)?;
        let speed = port::query_speed(m)?;
        let mtu = port::query_mtu(m)?;
        let rx_bufs = DmaBuf::alloc(m.dev.get(), TEST_RX_BUFS * TEST_RX_BUF_SIZE)?;
        let tx_buf = DmaBuf::alloc(m.dev.get(), 64)?;
        let tis = Tis::create(m, res.tdn(), 0)?;
        let cq_p = CqParams {
            log_size: 6,
            eqn,
            uar: self.uar,
        };
        let mut scq = Cq::create(m, &cq_p, None)?;
        let sq_p = SqParams {
            log_size: 6,
            cqn: scq.cqn(),
            tisn: tis.tisn(),
            allow_swp: false,
            min_inline: res.min_inline(),
        };
        let mut sq = Sq::create(&res, &sq_p)?;
        let rcq = Cq::create(m, &cq_p, None)?;
        let rq_p = RqParams {
            log_size: 6,
            segs: 1,
            cqn: rcq.cqn(),
            vlan_strip_disable: !res.caps().vlan_strip,
        };
        let mut rq = Rq::create(&res, &rq_p)?;
        for i in 0..TEST_RX_BUFS {
            let addr = rx_bufs.dma() + (i * TEST_RX_BUF_SIZE) as u64;
            rq.post_recv(&[(addr, TEST_RX_BUF_SIZE as u32)])?;
        }
        rq.ring_doorbell()?;
        let fields = TrafficType::default_fields();
        let rss = Rss::create(&res, &TEST_RSS_KEY, &fields, 3, &[rq.rqn()], None)?;
        let direct = Tir::create_direct(m, res.tdn(), rq.rqn())?;
        let mut fs = RxSteering::create(m, &|tt| rss.tirn(tt), res.mac(), false)?;
        fs.set_rx_mode(res.mac(), &[[0x01, 0x00, 0x5e, 0, 0, 1]], true, true)?;
        let entries = fs.l2_entries();
        fs.set_rx_mode(res.mac(), &[], false, false)?;

        // One broadcast frame of an experimental ethertype: the Ethernet header (and a VLAN
        // tag's worth, mlx5e's minimum) inline, the rest gathered.
        let mut frame = [0u8; 60];
        frame[..6].copy_from_slice(&[0xff; 6]);
        frame[6..12].copy_from_slice(&res.mac());
        frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
        tx_buf.write(0, &frame)?;
        let (inline, rest) = frame.split_at(18);
        let gather = [(tx_buf.dma() + 18, rest.len() as u32)];
        let w = TxWqe {
            inline,
            vlan: None,
            cs_flags: CsFlags::empty(),
            lso_mss: None,
            swp: None,
            gather: &gather,
            signal: true,
        };
        let ctr = sq.post_send(&w)?;
        sq.ring_doorbell()?;
        fsleep(Delta::from_millis(20));
        let mut completed = 0u32;
        let mut failed = 0u32;
        scq.poll(8, |cqe| match sq.complete(cqe, |_| completed += 1) {
            Ok(c) if c.error.is_none() => {}
            _ => failed += 1,
        });
        dev_info!(
            m.dev.dev(),
            "selftest: en objects: PD {:#x} TD {:#x} mkey {:#x} UAR {} MAC {:02x?} min inline \
             {}; port admin {} oper {} speed {} Mb/s MTU {}/{}; TIS {:#x} SQ {:#x} RQ {:#x} \
             RQT {:#x} TIR {:#x} root {:#x} TTC {:#x} ({} L2 entries with a multicast address); \
             send {:#x}: {} completed, {} bad CQEs\n",
            res.pdn(),
            res.tdn(),
            res.mkey(),
            res.uar(),
            res.mac(),
            res.min_inline(),
            status.admin_up,
            status.oper_up,
            speed,
            mtu.oper,
            mtu.max,
            tis.tisn(),
            sq.sqn(),
            rq.rqn(),
            rss.rqtn(),
            direct.tirn(),
            fs.root_table(),
            fs.ttc_table(),
            entries,
            ctr,
            completed,
            failed
        );
        if completed != 1 || failed != 0 {
            return Err(EIO);
        }
        Ok(())
    }

    /// Handles one write to the `selftest` file.
    fn write(&self, r: &mut UserSliceReader) -> Result {
        let mut buf = [0u8; 64];
        let n = r.len().min(buf.len());
        r.read_slice(&mut buf[..n])?;
        let s = core::str::from_utf8(&buf[..n]).map_err(|_| EINVAL)?.trim();
        let mut words = s.split_whitespace();
        match (words.next(), words.next()) {
            (Some("query"), n) => {
                let n = n.map_or(Ok(1), |v| v.parse::<u32>().map_err(|_| EINVAL))?;
                self.query(n)
            }
            (Some("query-eq"), n) => {
                let n = n.map_or(Ok(1), |v| v.parse::<u32>().map_err(|_| EINVAL))?;
                self.query_eq(n)
            }
            (Some("cq"), None) => self.cq_create(),
            (Some("cq-moderate"), Some(p)) => {
                let c = words.next().ok_or(EINVAL)?;
                let num = |v: &str| v.parse::<u32>().map_err(|_| EINVAL);
                let mode = words.next().map(num).transpose()?;
                self.cq_moderate(num(p)?, num(c)?, mode)
            }
            (Some("cq-poll"), None) => self.cq_poll(),
            (Some("en-objects"), None) => self.en_objects(),
            (Some("cq-destroy"), None) => {
                self.cq.lock().take();
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }
}

/// The `selftest` file in the function's debugfs directory; removed on drop.
pub(crate) struct SelfTestFile {
    _file: Pin<KBox<File<SelfTest>>>,
}

impl SelfTestFile {
    /// Creates `selftest` in `dir` for a device whose CQs use UAR page `uar` and completion
    /// EQ `comp_eqn`.
    pub(crate) fn new(
        dir: &Dir,
        mdev: Arc<Mdev>,
        caps: Arc<Caps>,
        uar: u32,
        comp_eqn: Option<u8>,
    ) -> Result<Self> {
        let data = SelfTest::new(mdev, caps, uar, comp_eqn);
        let file = KBox::pin_init(
            dir.write_callback_file(c"selftest", data, &write),
            GFP_KERNEL,
        )?;
        Ok(Self { _file: file })
    }
}

fn write(t: &SelfTest, r: &mut UserSliceReader) -> Result {
    t.write(r)
}
