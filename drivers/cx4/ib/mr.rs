// SPDX-License-Identifier: GPL-2.0
//! Memory regions (mlx5_ib mr.c `reg_create`, `mlx5_ib_get_dma_mr`): a user MR is the
//! process's pages pinned and listed as the translation table (MTT, 4 KiB pages) of an mkey
//! whose virtual range is the MR's I/O virtual address; the kernel's DMA MR is a
//! physical-address mkey. Access rights map to the mkey's as mlx5_ib maps them (local read
//! always).

use cx4_hw::{
    command,
    mkey::{
        access_mode,
        mkey_from_index,
        mkey_index,
        CreateMkeyIn, //
    },
};
use ib::{
    Access,
    Pd,
    Umem, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    ib::{
        cq::ADAPTER_PAGE,
        IbDev, //
    },
    mdev::Mdev,
};

/// `qpn` of an mkey not bound to a QP.
const MKEY_QPN_NONE: u32 = 0xff_ffff;

/// An mkey of the RDMA layer, destroyed on drop, and the user memory it translates.
pub(crate) struct IbMr {
    mdev: Arc<Mdev>,
    key: u32,
    _umem: Option<Umem>,
}

/// The access bits of an mkey context (`set_mkc_access_pd_addr_fields`).
fn set_access(c: &mut cx4_hw::mkey::Mkc, acc: Access) {
    c.set_a(acc.contains(Access::REMOTE_ATOMIC).into());
    c.set_rw(acc.contains(Access::REMOTE_WRITE).into());
    c.set_rr(acc.contains(Access::REMOTE_READ).into());
    c.set_lw(acc.contains(Access::LOCAL_WRITE).into());
    c.set_lr(1);
}

impl IbMr {
    /// Registers `len` bytes of the process's memory at `start` as `iova` in `pd`.
    pub(crate) fn reg_user(
        pd: &Pd<IbDev>,
        start: u64,
        len: u64,
        iova: u64,
        acc: Access,
    ) -> Result<(Self, u32, u32)> {
        if acc.contains(Access::ON_DEMAND) || acc.contains(Access::ZERO_BASED) {
            return Err(ib::eopnotsupp());
        }
        let page = ADAPTER_PAGE as u64;
        // One page list for both addresses: they must share the offset in the page.
        if len == 0 || (start ^ iova) % page != 0 || iova.checked_add(len).is_none() {
            return Err(EINVAL);
        }
        let dev = pd.device();
        let sh = dev.data();
        let umem = Umem::get(dev, start, usize::try_from(len)?, acc)?;
        let pas = umem.dma_blocks(ADAPTER_PAGE)?;
        let octwords = u32::try_from(pas.len().div_ceil(2))?;
        let mut m = input::<command::CreateMkey>(octwords as usize * 16)?;
        m.set_translations_octword_actual_size(octwords);
        {
            let c = m.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::MTT.into());
            set_access(c, acc);
            c.set_qpn(MKEY_QPN_NONE);
            c.set_pd(pd.pdn());
            c.set_start_addr(iova);
            c.set_len(len);
            c.set_log_page_size(ADAPTER_PAGE.ilog2());
            c.set_translations_octword_size(octwords);
        }
        for (i, pa) in pas.iter().enumerate() {
            CreateMkeyIn::set_mtt(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
        }
        let out = sh.mdev.cmdq.exec::<command::CreateMkey>(&m, 0)?;
        let key = mkey_from_index(out.mkey_index(), 0);
        Ok((
            Self {
                mdev: sh.mdev.clone(),
                key,
                _umem: Some(umem),
            },
            key,
            key,
        ))
    }

    /// The DMA MR of kernel users: bus addresses over all of memory.
    pub(crate) fn dma(pd: &Pd<IbDev>, acc: Access) -> Result<(Self, u32, u32)> {
        let sh = pd.device().data();
        let mut m = input::<command::CreateMkey>(0)?;
        {
            let c = m.memory_key_mkey_entry_mut();
            c.set_access_mode_1_0(access_mode::PA.into());
            set_access(c, acc);
            c.set_qpn(MKEY_QPN_NONE);
            c.set_pd(pd.pdn());
            c.set_length64(1);
        }
        let out = sh.mdev.cmdq.exec::<command::CreateMkey>(&m, 0)?;
        let key = mkey_from_index(out.mkey_index(), 0);
        Ok((
            Self {
                mdev: sh.mdev.clone(),
                key,
                _umem: None,
            },
            key,
            key,
        ))
    }
}

impl Drop for IbMr {
    fn drop(&mut self) {
        // The mkey goes before the pages it translates are unpinned (field order).
        if let Ok(mut m) = input::<command::DestroyMkey>(0) {
            m.set_mkey_index(mkey_index(self.key));
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
