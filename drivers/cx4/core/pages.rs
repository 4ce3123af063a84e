// SPDX-License-Identifier: GPL-2.0
//! Firmware pages (core/pagealloc.c): 4 KiB coherent pages handed to the device with
//! `MANAGE_PAGES` (give) when `QUERY_PAGES` or a page-request event asks for them, tracked by
//! bus address, and taken back (take) on request and at teardown.

use core::{
    fmt,
    sync::atomic::{
        AtomicI32,
        AtomicU64,
        Ordering, //
    },
};

use cx4_hw::{
    command,
    pages::{
        manage_pages_op_mod,
        query_pages_op_mod,
        ManagePagesIn,
        ManagePagesOut,
        PAGE_SIZE, //
    },
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    new_mutex,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNode, //
    },
    sync::Mutex,
    time::{
        Delta,
        Instant,
        Monotonic, //
    },
};

use crate::{
    cmd::{
        input,
        Cmdq, //
    },
    dmabuf::DmaBuf, //
};

/// Pages per `MANAGE_PAGES` command (4 KiB of addresses, 9 mailbox blocks).
const MAX_PER_CMD: u32 = 512;
/// Teardown gives up reclaiming when the firmware returns nothing for this long
/// (pagealloc.c `MAX_RECLAIM_TIME_MSECS` is 5 s too).
const RECLAIM_TIMEOUT: Delta = Delta::from_secs(5);

struct Held {
    pages: RBTree<u64, DmaBuf>,
    count: u32,
}

/// The pages the device holds.
#[pin_data]
pub(crate) struct Pages {
    #[pin]
    held: Mutex<Held>,
    given: AtomicU64,
    returned: AtomicU64,
    /// Page requests not served yet (positive: give, negative: take back).
    pending: AtomicI32,
    requests: AtomicU64,
}

/// Which stage's pages `QUERY_PAGES` asks about.
#[derive(Clone, Copy)]
pub(crate) enum Stage {
    /// Before `INIT_HCA` (boot pages).
    Boot,
    /// For `INIT_HCA` (init pages).
    Init,
}

impl Pages {
    /// No pages held.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            held <- new_mutex!(Held {
                pages: RBTree::new(),
                count: 0,
            }),
            given: AtomicU64::new(0),
            returned: AtomicU64::new(0),
            pending: AtomicI32::new(0),
            requests: AtomicU64::new(0),
        })
    }

    /// Pages the device holds now.
    pub(crate) fn held(&self) -> u32 {
        self.held.lock().count
    }

    /// Asks the firmware how many pages a stage needs and gives them.
    pub(crate) fn satisfy(&self, dev: &device::Device<Bound>, cmdq: &Cmdq, stage: Stage) -> Result {
        let mut q = input::<command::QueryPages>(0)?;
        q.set_op_mod(
            match stage {
                Stage::Boot => query_pages_op_mod::BOOT,
                Stage::Init => query_pages_op_mod::INIT,
            }
            .into(),
        );
        let out = cmdq.exec::<command::QueryPages>(&q, 0)?;
        let n = out.num_pages() as i32;
        match n {
            1.. => self.give(dev, cmdq, n.unsigned_abs()),
            0 => Ok(()),
            _ => self.take(cmdq, n.unsigned_abs()).map(|_| ()),
        }
    }

    /// Allocates and gives `n` pages.
    pub(crate) fn give(&self, dev: &device::Device<Bound>, cmdq: &Cmdq, n: u32) -> Result {
        let mut left = n;
        while left > 0 {
            let k = left.min(MAX_PER_CMD);
            let mut nodes = KVec::with_capacity(k as usize, GFP_KERNEL)?;
            let mut addrs = KVec::with_capacity(k as usize, GFP_KERNEL)?;
            for _ in 0..k {
                let node = DmaBuf::alloc(dev, PAGE_SIZE).and_then(|b| {
                    let pa = b.dma();
                    nodes.push(RBTreeNode::new(pa, b, GFP_KERNEL)?, GFP_KERNEL)?;
                    addrs.push(pa, GFP_KERNEL)?;
                    Ok(())
                });
                if let Err(e) = node {
                    // pagealloc.c: tell the firmware the driver cannot give what it asked.
                    let _ = self.cant_give(cmdq, left);
                    return Err(e);
                }
            }
            let mut m = input::<command::ManagePages>(k as usize * 8)?;
            m.set_op_mod(manage_pages_op_mod::GIVE.into());
            m.set_input_num_entries(k);
            for (i, &pa) in addrs.iter().enumerate() {
                ManagePagesIn::set_pas(m.bytes_mut(), i, pa).map_err(|_| EINVAL)?;
            }
            cmdq.exec::<command::ManagePages>(&m, 0)?;
            let mut held = self.held.lock();
            for node in nodes {
                if held.pages.insert(node).is_none() {
                    held.count += 1;
                }
            }
            drop(held);
            self.given.fetch_add(k.into(), Ordering::Relaxed);
            left -= k;
        }
        Ok(())
    }

    fn cant_give(&self, cmdq: &Cmdq, n: u32) -> Result {
        let mut m = input::<command::ManagePages>(0)?;
        m.set_op_mod(manage_pages_op_mod::CANT_GIVE.into());
        m.set_input_num_entries(n);
        cmdq.exec::<command::ManagePages>(&m, 0).map(|_| ())
    }

    /// Takes back up to `n` pages; returns how many the firmware returned.
    pub(crate) fn take(&self, cmdq: &Cmdq, n: u32) -> Result<u32> {
        let n = n.min(MAX_PER_CMD);
        let mut m = input::<command::ManagePages>(0)?;
        m.set_op_mod(manage_pages_op_mod::TAKE.into());
        m.set_input_num_entries(n);
        let out = cmdq.exec::<command::ManagePages>(&m, n as usize * 8)?;
        let got = out.output_num_entries().min(n);
        let mut held = self.held.lock();
        let mut freed = 0u32;
        for i in 0..got as usize {
            let Some(pa) = ManagePagesOut::pas(out.bytes(), i) else {
                break;
            };
            // Dropping the page frees it.
            if held.pages.remove(&pa).is_some() {
                held.count -= 1;
                freed += 1;
            } else {
                pr_warn!("cx4: firmware returned page {:#x} it was not given\n", pa);
            }
        }
        drop(held);
        self.returned.fetch_add(freed.into(), Ordering::Relaxed);
        Ok(got)
    }

    /// Takes back every page (teardown, after `TEARDOWN_HCA`). Gives up when the firmware
    /// returns nothing for [`RECLAIM_TIMEOUT`] or a command fails.
    pub(crate) fn reclaim_all(&self, cmdq: &Cmdq) -> Result {
        let mut progress = Instant::<Monotonic>::now();
        loop {
            let held = self.held();
            if held == 0 {
                return Ok(());
            }
            if self.take(cmdq, held)? > 0 {
                progress = Instant::now();
            } else if progress.elapsed() > RECLAIM_TIMEOUT {
                return Err(ETIMEDOUT);
            }
        }
    }

    /// Frees every page without the firmware (it is gone or failed); returns how many.
    pub(crate) fn release_all(&self) -> u32 {
        let mut held = self.held.lock();
        let n = held.count;
        held.pages = RBTree::new();
        held.count = 0;
        n
    }

    /// Records a page-request event; returns whether work needs to be scheduled.
    pub(crate) fn request(&self, num_pages: i32) -> bool {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.pending.fetch_add(num_pages, Ordering::AcqRel);
        true
    }

    /// Serves the pending page requests (from the pages work item).
    pub(crate) fn serve(&self, dev: &device::Device<Bound>, cmdq: &Cmdq) -> Result {
        let n = self.pending.swap(0, Ordering::AcqRel);
        match n {
            1.. => self.give(dev, cmdq, n.unsigned_abs()),
            0 => Ok(()),
            _ => {
                let mut left = n.unsigned_abs();
                while left > 0 {
                    let got = self.take(cmdq, left)?;
                    if got == 0 {
                        break;
                    }
                    left = left.saturating_sub(got);
                }
                Ok(())
            }
        }
    }

    /// The debugfs summary.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "held {}\ngiven {}\nreturned {}\nrequests {}",
            self.held(),
            self.given.load(Ordering::Relaxed),
            self.returned.load(Ordering::Relaxed),
            self.requests.load(Ordering::Relaxed)
        )
    }
}
