// SPDX-License-Identifier: GPL-2.0
//! The indirect mkeys of the engine's slots (libmlx5 `ec.c` `alloc_comp`: `inumr` and `outumr`,
//! `ibv_exp_create_mr(IBV_EXP_MR_INDIRECT_KLMS)`): created free and UMR-enabled in KLM access
//! mode with a translation table of a fixed number of entries, in the engine's PD; each
//! calculation's UMR WQEs make them valid with its own list (KLM for the inputs, a repeat
//! block for the outputs). Destroyed on drop.

use cx4_hw::{
    command,
    mkey::{
        access_mode,
        mkey_from_index,
        mkey_index, //
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

/// `qpn` of an mkey bound to no QP.
const MKEY_QPN_NONE: u32 = 0xff_ffff;

/// A free, UMR-enabled KLM mkey.
pub(crate) struct IndirectMkey {
    mdev: Arc<Mdev>,
    key: u32,
}

impl IndirectMkey {
    /// Creates one with room for `entries` translation entries (rounded up to four) in `pdn`.
    pub(crate) fn create(mdev: &Arc<Mdev>, pdn: u32, entries: u32) -> Result<Self> {
        let mut m = input::<command::CreateMkey>(0)?;
        {
            let c = m.memory_key_mkey_entry_mut();
            c.set_free(1);
            c.set_umr_en(1);
            c.set_access_mode_1_0(access_mode::KLMS.into());
            c.set_lr(1);
            c.set_lw(1);
            c.set_qpn(MKEY_QPN_NONE);
            c.set_pd(pdn);
            c.set_translations_octword_size(entries.next_multiple_of(4));
        }
        let out = mdev.cmdq.exec::<command::CreateMkey>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            key: mkey_from_index(out.mkey_index(), 0),
        })
    }

    /// The key.
    pub(crate) fn key(&self) -> u32 {
        self.key
    }
}

impl Drop for IndirectMkey {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyMkey>(0) {
            m.set_mkey_index(mkey_index(self.key));
            if let Err(e) = self.mdev.cmdq.exec::<command::DestroyMkey>(&m, 0) {
                dev_warn!(
                    self.mdev.dev.dev(),
                    "EC engine: DESTROY_MKEY {:#x}: {:?}\n",
                    self.key,
                    e
                );
            }
        }
    }
}
