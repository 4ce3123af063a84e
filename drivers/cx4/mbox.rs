// SPDX-License-Identifier: GPL-2.0
//! The mailbox pool: 1 KiB-aligned command mailbox blocks (`CmdProtBlock`, 576 bytes each)
//! carved out of coherent 4 KiB pages, four per page, handed out as chains per command.
//!
//! Pages are allocated on demand and kept until the pool is dropped (with the command queue).

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

/// A chain of blocks carrying one message (the bytes after its 16 inline ones).
pub(crate) struct Chain {
    blocks: KVec<Block>,
}

impl Chain {
    /// Bus address of the first block, 0 for an empty chain.
    pub(crate) fn head(&self) -> u64 {
        self.blocks.first().map_or(0, Block::dma)
    }

    /// Writes `data` (the message bytes after the inline part) into the chain, linking the
    /// blocks with `next`, numbering them and stamping `token` into each.
    pub(crate) fn write(&self, data: &[u8], token: u8) -> Result {
        for (i, b) in self.blocks.iter().enumerate() {
            let mut blk = CmdProtBlock::new();
            let start = i * DATA_BLOCK_SIZE;
            if start < data.len() {
                let end = (start + DATA_BLOCK_SIZE).min(data.len());
                blk.data_mut()[..end - start].copy_from_slice(&data[start..end]);
            }
            blk.set_next(self.blocks.get(i + 1).map_or(0, Block::dma));
            blk.set_block_num(i as u32);
            blk.set_token(token.into());
            b.page.write(b.off, &blk.0)?;
        }
        Ok(())
    }

    /// Prepares the chain for the device's output (links, numbers and token; data zeroed).
    pub(crate) fn prepare(&self, token: u8) -> Result {
        self.write(&[], token)
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

/// The pool.
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

    /// Takes `n` blocks, growing the pool by whole pages as needed.
    pub(crate) fn alloc(&self, dev: &device::Device<Bound>, n: usize) -> Result<Chain> {
        let mut chain = Chain {
            blocks: KVec::with_capacity(n, GFP_KERNEL)?,
        };
        let mut free = self.free.lock();
        while chain.blocks.len() < n {
            if let Some(b) = free.pop() {
                chain.blocks.push(b, GFP_KERNEL)?;
                continue;
            }
            let page = match DmaBuf::alloc(dev, PAGE).and_then(|p| Ok(Arc::new(p, GFP_KERNEL)?)) {
                Ok(p) => p,
                Err(e) => {
                    drop(free);
                    self.release(chain);
                    return Err(e);
                }
            };
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
        Ok(chain)
    }

    /// Returns a chain's blocks to the pool.
    pub(crate) fn release(&self, chain: Chain) {
        let mut free = self.free.lock();
        for b in chain.blocks {
            // The free list had room for every block once (they were allocated into it); on
            // the unlikely allocation failure the block (and eventually its page) is dropped.
            let _ = free.push(b, GFP_KERNEL);
        }
    }
}
