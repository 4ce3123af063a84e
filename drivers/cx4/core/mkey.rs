// SPDX-License-Identifier: GPL-2.0
//! Memory keys (core/mr.c `mlx5_core_create_mkey`): the physical-address key the Ethernet
//! and RDMA kernel queues put into data segments, the indirect (KLM) keys of the EC engine and
//! the memory windows of processes.

use cx4_hw::{
    command,
    mkey::{
        access_mode,
        mkey_from_index, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// A memory key (`CREATE_MKEY`), destroyed on drop (a failure is logged).
pub(crate) struct Mkey {
    mdev: Arc<Mdev>,
    key: u32,
}

impl Mkey {
    /// A physical-address mkey over all of memory with local read and write, as mlx5e's
    /// (`mlx5e_create_mkey`): data segments carry bus addresses with its key.
    pub(crate) fn create_pa(mdev: &Arc<Mdev>, pdn: u32) -> Result<Self> {
        let mut m = input::<command::CreateMkey>(0)?;
        {
            let c = m.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::PA.into());
            c.set_lw(1);
            c.set_lr(1);
            c.set_pd(pdn);
            c.set_length64(1);
            c.set_qpn(0xff_ffff);
        }
        let out = mdev.cmdq.exec::<command::CreateMkey>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            // mlx5_core_create_mkey: the key is the index shifted over the (zero) variant byte.
            key: mkey_from_index(out.mkey_index(), 0),
        })
    }

    /// A free, UMR-enabled KLM mkey with room for `entries` translation entries (rounded up
    /// to four) in `pdn`, with local read and write (libmlx5 `ec.c` `alloc_comp`'s `inumr` and
    /// `outumr`, `IBV_EXP_MR_INDIRECT_KLMS`): UMR WQEs make it valid with their own list (the
    /// EC engine's KLM and repeat-block lists, ec/wqe.rs).
    pub(crate) fn create_indirect(mdev: &Arc<Mdev>, pdn: u32, entries: u32) -> Result<Self> {
        Self::create_free_klm(mdev, pdn, entries, true, false)
    }

    /// A memory window (mlx5_ib mr.c `mlx5_ib_alloc_mw`): a free, UMR-enabled KLM mkey for
    /// one entry (four, rounded as mlx5_ib) in `pdn` with local read only, bound to no QP,
    /// remotely invalidatable if it is of type 2; the process's bind WQEs (libmlx5 UMRs) give
    /// it its range, rights and, for type 2, its QP.
    pub(crate) fn create_window(mdev: &Arc<Mdev>, pdn: u32, type_2: bool) -> Result<Self> {
        Self::create_free_klm(mdev, pdn, 1, false, type_2)
    }

    /// A free, UMR-enabled KLM mkey for `entries` entries in `pdn`, bound to no QP, with local
    /// read, local write if `lw`, remote invalidation if `rinval`.
    fn create_free_klm(
        mdev: &Arc<Mdev>,
        pdn: u32,
        entries: u32,
        lw: bool,
        rinval: bool,
    ) -> Result<Self> {
        let mut m = input::<command::CreateMkey>(0)?;
        {
            let c = m.memory_key_mkey_entry_mut();
            c.set_free(1);
            c.set_umr_en(1);
            c.set_access_mode_1_0(access_mode::KLMS.into());
            c.set_lr(1);
            c.set_lw(lw.into());
            c.set_en_rinval(rinval.into());
            c.set_qpn(0xff_ffff);
            c.set_pd(pdn);
            c.set_translations_octword_size(entries.next_multiple_of(4));
        }
        let out = mdev.cmdq.exec::<command::CreateMkey>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            key: mkey_from_index(out.mkey_index(), 0),
        })
    }

    /// The key written into data segments (lkey).
    pub(crate) fn key(&self) -> u32 {
        self.key
    }
}

impl Drop for Mkey {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyMkey>(0) {
            m.set_mkey_index(cx4_hw::mkey::mkey_index(self.key));
            if let Err(e) = self.mdev.cmdq.exec::<command::DestroyMkey>(&m, 0) {
                dev_warn!(
                    self.mdev.dev.dev(),
                    "DESTROY_MKEY {:#x}: {:?}\n",
                    self.key,
                    e
                );
            }
        }
    }
}
