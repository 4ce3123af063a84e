// SPDX-License-Identifier: GPL-2.0
//! Command mailboxes: 1 KiB-aligned blocks (`CmdProtBlock`, 576 bytes each) carved out of
//! coherent 4 KiB pages, four per page, linked into chains that carry a message's bytes after
//! its 16 inline ones.
//!
//! Each command slot keeps its input and output chains from one command to the next (upstream
//! keeps a cache of preallocated messages for the same reason), so a command allocates nothing
//! here once its slot has carried a message as long before; [`MboxPool::fit`] grows a chain
//! when a longer one comes. Pages are kept until the pool and the chains are dropped (with the
//! command queue).

use cx4_hw::cmd::{
    CmdProtBlock,
    DATA_BLOCK_SIZE, //
};
use kernel::{
    device::{
        self,
        Bound, //
    },
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    },
};

use crate::dmabuf::DmaBuf;

/// Mailbox blocks must be 1 KiB aligned (the PRM; `MLX5_CMD_MBOX_SIZE` stride in cmd.c).
const BLOCK_STRIDE: usize = 1024;
const PAGE: usize = 4096;
const PER_PAGE: usize = PAGE / BLOCK_STRIDE;

/// One mailbox block: a page of the pool and the block's offset in it.
pub(crate) struct Block {
    page: Arc<DmaBuf>,
    off: usize,
}

impl Block {
    /// Bus address of the block.
    pub(crate) fn dma(&self) -> u64 {
        self.page.dma() + self.off as u64
    }
}

/// A chain of blocks; a message uses its first `n` blocks.
pub(crate) struct Chain {
    blocks: KVec<Block>,
}

impl Chain {
    /// An empty chain.
    pub(crate) const fn new() -> Self {
        Self {
            blocks: KVec::new(),
        }
    }

    /// Bus address of the first block of a message of `n` blocks, 0 when it needs none.
    pub(crate) fn head(&self, n: usize) -> u64 {
        match n {
            0 => 0,
            _ => self.blocks.first().map_or(0, Block::dma),
        }
    }

    fn used(&self, n: usize) -> Result<&[Block]> {
        self.blocks.get(..n).ok_or(EINVAL)
    }

    /// Writes `data` (the message bytes after the inline part) into the first `n` blocks,
    /// linking them with `next` (0 in the last), numbering them and stamping `token` into each.
    /// Only the message bytes and the control fields are written: the device reads no further.
    pub(crate) fn write(&self, n: usize, data: &[u8], token: u8) -> Result {
        let blocks = self.used(n)?;
        let mut ctrl = CmdProtBlock::new();
        for (i, b) in blocks.iter().enumerate() {
            let start = i * DATA_BLOCK_SIZE;
            if start < data.len() {
                let end = (start + DATA_BLOCK_SIZE).min(data.len());
                b.page.write(b.off, &data[start..end])?;
            }
            ctrl.set_next(blocks.get(i + 1).map_or(0, Block::dma));
            ctrl.set_block_num(i as u32);
            ctrl.set_token(token.into());
            b.page
                .write(b.off + DATA_BLOCK_SIZE, &ctrl.0[DATA_BLOCK_SIZE..])?;
        }
        Ok(())
    }

    /// Prepares the first `n` blocks for the device's output (links, numbers and token).
    pub(crate) fn prepare(&self, n: usize, token: u8) -> Result {
        self.write(n, &[], token)
    }

    /// Reads `out.len()` message bytes out of the chain's data areas.
    pub(crate) fn read(&self, out: &mut [u8]) -> Result {
        for (i, chunk) in out.chunks_mut(DATA_BLOCK_SIZE).enumerate() {
            let b = self.blocks.get(i).ok_or(EIO)?;
            b.page.read(b.off, chunk)?;
        }
        Ok(())
    }
}

/// The pool: blocks of carved pages not yet in a chain.
#[pin_data]
pub(crate) struct MboxPool {
    #[pin]
    free: Mutex<KVec<Block>>,
}

impl MboxPool {
    /// An empty pool.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            free <- new_mutex!(KVec::new()),
        })
    }

    /// Grows `chain` to at least `n` blocks, carving new pages as needed. On failure the chain
    /// keeps the blocks it got.
    pub(crate) fn fit(&self, dev: &device::Device<Bound>, chain: &mut Chain, n: usize) -> Result {
        let Some(more) = n.checked_sub(chain.blocks.len()).filter(|&m| m > 0) else {
            return Ok(());
        };
        chain.blocks.reserve(more, GFP_KERNEL)?;
        let mut free = self.free.lock();
        while chain.blocks.len() < n {
            if let Some(b) = free.pop() {
                chain.blocks.push(b, GFP_KERNEL)?;
                continue;
            }
            let page = Arc::new(DmaBuf::alloc(dev, PAGE)?, GFP_KERNEL)?;
            free.reserve(PER_PAGE, GFP_KERNEL)?;
            for k in 0..PER_PAGE {
                free.push(
                    Block {
                        page: page.clone(),
                        off: k * BLOCK_STRIDE,
                    },
                    GFP_KERNEL,
                )?;
            }
        }
        Ok(())
    }
}
