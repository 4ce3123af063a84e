// SPDX-License-Identifier: GPL-2.0
//! Memory regions (mlx5_ib mr.c `reg_create`, `mlx5_ib_get_dma_mr`): a user MR is the
//! process's pages pinned and listed as the translation table (MTT, 4 KiB pages) of an mkey
//! whose virtual range is the MR's I/O virtual address; the kernel's DMA MR is a
//! physical-address mkey. A dma-buf MR is the same over the exporter's pinned DMA blocks.
//! Re-registering (mlx5_ib `mlx5_ib_rereg_user_mr`) changes only the rights and PD of the
//! same mkey when that is all it asks, by a UMR on the layer's UMR QP (umr.rs): the keys the
//! process and its peers hold stay valid, as on mlx5_ib; a new range, or rights the pinned
//! pages cannot carry, make a new mkey (new keys; the core swaps it in and deregisters the
//! old one), and rights that need writable pages on pages pinned read-only are `EACCES`
//! (`ib_umem_check_rereg`). User MRs' mkeys are UMR-enabled for that.
//! Access rights map to the mkey's as mlx5_ib maps them (local read always). A fast-registration MR (`alloc_mr`, mlx5_ib `mlx5_alloc_mem_reg_descs`) is a
//! free, UMR-enabled MTT mkey with a page list in coherent memory that `map_mr_sg` fills and a
//! `REG_MR` work request (kqp.rs) points the card at.

use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use cx4_hw::wqe::rdma::{
    Perm,
    MTT_EN_RD,
    MTT_EN_WR, //
};
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
    Rereg,
    Umem, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    dmabuf::DmaBuf,
    ib::{
        cq::ADAPTER_PAGE,
        umr::RightsUmr,
        IbDev, //
    },
    mdev::Mdev,
    msg::Msg,
};

/// `qpn` of an mkey not bound to a QP.
const MKEY_QPN_NONE: u32 = 0xff_ffff;

/// The most pages one fast registration maps (`max_fast_reg_page_list_len`).
pub(crate) const MAX_FAST_REG_PAGES: u32 = 256;

/// A fast-registration MR's page list: big-endian MTT entries (bus address | read | write)
/// in coherent memory, and how many `map_mr_sg` wrote.
pub(crate) struct PageList {
    descs: DmaBuf,
    max: u32,
    n: AtomicU32,
}

impl PageList {
    /// The list's bus address and its entries.
    pub(crate) fn dma_and_len(&self) -> (u64, u32) {
        (self.descs.dma(), self.n.load(Ordering::Acquire))
    }
}

/// What a user MR translates: pinned pages of the process or of a dma-buf (shared with the
/// MR a re-registration made from it, when the pages stay), and the attributes it was
/// registered with, which a re-registration keeps unless told otherwise.
struct UserMem {
    umem: Arc<Umem>,
    /// The process's address of the first byte (for a dma-buf, the offset in the buffer).
    start: u64,
    len: u64,
    iova: u64,
    /// The rights (`Access` bits), changed in place by a re-registration.
    access: AtomicU32,
    /// The pages were pinned for writing (`umem->writable`).
    writable: bool,
    dmabuf: bool,
}

impl UserMem {
    fn new(umem: Umem, start: u64, len: u64, iova: u64, acc: Access, dmabuf: bool) -> Result<Self> {
        Ok(Self {
            umem: Arc::new(umem, GFP_KERNEL)?,
            start,
            len,
            iova,
            access: AtomicU32::new(acc.0),
            writable: acc.writable(),
            dmabuf,
        })
    }

    fn access(&self) -> Access {
        Access(self.access.load(Ordering::Relaxed))
    }
}

/// The rights an mkey (or a UMR's mkey segment) carries for `acc` (mlx5_ib
/// `set_mkc_access_pd_addr_fields`, `mlx5r_umr_set_access_flags`), without local read.
pub(crate) fn perm_of(acc: Access) -> Perm {
    let mut perm = Perm::empty();
    for (a, p) in [
        (Access::REMOTE_ATOMIC, Perm::ATOMIC),
        (Access::REMOTE_WRITE, Perm::REMOTE_WRITE),
        (Access::REMOTE_READ, Perm::REMOTE_READ),
        (Access::LOCAL_WRITE, Perm::LOCAL_WRITE),
    ] {
        if acc.contains(a) {
            perm |= p;
        }
    }
    perm
}

/// An mkey of the RDMA layer, destroyed on drop, and the user memory it translates (or, for
/// a fast-registration MR, its page list).
pub(crate) struct IbMr {
    mdev: Arc<Mdev>,
    key: u32,
    user: Option<UserMem>,
    pages: Option<PageList>,
}

/// The access bits of an mkey context (`set_mkc_access_pd_addr_fields`).
fn set_access(c: &mut cx4_hw::mkey::Mkc, acc: Access) {
    c.set_a(acc.contains(Access::REMOTE_ATOMIC).into());
    c.set_rw(acc.contains(Access::REMOTE_WRITE).into());
    c.set_rr(acc.contains(Access::REMOTE_READ).into());
    c.set_lw(acc.contains(Access::LOCAL_WRITE).into());
    c.set_lr(1);
}

/// The CREATE_MKEY of an MTT mkey in `pd` with the rights `acc` (4 KiB pages, bound to no
/// QP), its translation table `size` octwords, carrying the entries `mtts` (bus addresses).
/// The caller sets the rest: the range of a registered MR, or what makes a free one.
fn mtt_mkey(pd: &Pd<IbDev>, acc: Access, size: u32, mtts: &[u64]) -> Result<Msg<CreateMkeyIn>> {
    let mut m = input::<command::CreateMkey>(mtts.len().div_ceil(2) * 16)?;
    {
        let c = m.memory_key_mkey_entry_mut();
        c.set_access_mode_1_0(access_mode::MTT.into());
        set_access(c, acc);
        c.set_qpn(MKEY_QPN_NONE);
        c.set_pd(pd.pdn());
        c.set_log_page_size(ADAPTER_PAGE.ilog2());
        c.set_translations_octword_size(size);
    }
    for (i, pa) in mtts.iter().enumerate() {
        CreateMkeyIn::set_mtt(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
    }
    Ok(m)
}

/// The checks of a user registration before anything is pinned: rights the card's profile
/// has (no on-demand paging, no zero-based MRs), a non-empty range whose user address (or
/// dma-buf offset) and I/O virtual address share the offset in a page (one page list for
/// both), and an I/O virtual range that does not wrap.
fn check_user(start: u64, len: u64, iova: u64, acc: Access) -> Result {
    if acc.contains(Access::ON_DEMAND) || acc.contains(Access::ZERO_BASED) {
        return Err(ib::eopnotsupp());
    }
    let page = ADAPTER_PAGE as u64;
    if len == 0 || (start ^ iova) % page != 0 || iova.checked_add(len).is_none() {
        return Err(EINVAL);
    }
    Ok(())
}

impl IbMr {
    /// Creates the mkey `m` describes; returns the MR (holding what it translates) and its
    /// lkey and rkey (the same key, variant 0).
    fn create(
        mdev: &Arc<Mdev>,
        m: &Msg<CreateMkeyIn>,
        user: Option<UserMem>,
        pages: Option<PageList>,
    ) -> Result<(Self, u32, u32)> {
        let out = mdev.cmdq.exec::<command::CreateMkey>(m, 0)?;
        let key = mkey_from_index(out.mkey_index(), 0);
        Ok((
            Self {
                mdev: mdev.clone(),
                key,
                user,
                pages,
            },
            key,
            key,
        ))
    }

    /// Registers `len` bytes of the process's memory at `start` as `iova` in `pd`.
    pub(crate) fn reg_user(
        pd: &Pd<IbDev>,
        start: u64,
        len: u64,
        iova: u64,
        acc: Access,
    ) -> Result<(Self, u32, u32)> {
        check_user(start, len, iova, acc)?;
        let umem = Umem::get(pd.device(), start, usize::try_from(len)?, acc)?;
        Self::reg_umem(pd, UserMem::new(umem, start, len, iova, acc, false)?)
    }

    /// Registers `len` bytes at `offset` of the process's dma-buf `fd` as `iova` in `pd`
    /// (mlx5_ib `mlx5_ib_reg_user_mr_dmabuf` with a pinned attachment: the exporter's DMA
    /// blocks as the MTT, like a user MR's pages).
    pub(crate) fn reg_dmabuf(
        pd: &Pd<IbDev>,
        offset: u64,
        len: u64,
        iova: u64,
        fd: i32,
        acc: Access,
    ) -> Result<(Self, u32, u32)> {
        check_user(offset, len, iova, acc)?;
        let umem = Umem::dmabuf(pd.device(), offset, usize::try_from(len)?, fd, acc, iova)?;
        Self::reg_umem(pd, UserMem::new(umem, offset, len, iova, acc, true)?)
    }

    /// Re-registers the user MR `old` in `pd` (mlx5_ib `mlx5_ib_rereg_user_mr`): its range,
    /// I/O virtual address and rights unless `rereg` changes them. A new range is pinned anew
    /// into a new mkey. Without one: rights that need writable pages on pages pinned
    /// read-only are `EACCES` (`ib_umem_check_rereg`); a change of rights (among local and
    /// remote write, remote read, atomic, relaxed ordering) and PD is made in place by a
    /// UMR (`can_use_umr_rereg_access`, `mlx5r_umr_rereg_pd_access`) and returns `None`:
    /// same mkey, same keys; anything else makes a new mkey over the same pages.
    pub(crate) fn rereg(
        old: &IbMr,
        rereg: &Rereg,
        pd: &Pd<IbDev>,
    ) -> Result<Option<(Self, u32, u32)>> {
        // Only uverbs re-registers, so only user MRs come here.
        let u = old.user.as_ref().ok_or(EINVAL)?;
        let cur = u.access();
        let acc = rereg.access().unwrap_or(cur);
        if let Some((start, len, iova)) = rereg.trans() {
            return Self::reg_user(pd, start, len, iova, acc).map(Some);
        }
        if rereg.access().is_some() && acc.writable() && !u.writable {
            return Err(EACCES);
        }
        check_user(u.start, u.len, u.iova, acc)?;
        let sh = pd.device().data();
        let g = sh.caps.gen();
        let umr_bits = Access::LOCAL_WRITE.0
            | Access::REMOTE_WRITE.0
            | Access::REMOTE_READ.0
            | Access::REMOTE_ATOMIC.0
            | Access::RELAXED_ORDERING.0;
        let diffs = cur.0 ^ acc.0;
        // mlx5r_umr_can_reconfig: the card may refuse changing the atomic right by UMR.
        let atomic_blocked = diffs & Access::REMOTE_ATOMIC.0 != 0
            && g.atomic() != 0
            && g.umr_modify_atomic_disabled() != 0;
        if diffs & !umr_bits == 0 && !atomic_blocked {
            sh.umr.rereg_rights(&RightsUmr {
                key: old.key,
                perm: perm_of(acc),
                atomic: g.atomic() != 0,
                pdn: pd.pdn(),
            })?;
            u.access.store(acc.0, Ordering::Relaxed);
            return Ok(None);
        }
        let mem = UserMem {
            umem: u.umem.clone(),
            start: u.start,
            len: u.len,
            iova: u.iova,
            access: AtomicU32::new(acc.0),
            writable: u.writable,
            dmabuf: u.dmabuf,
        };
        Self::reg_umem(pd, mem).map(Some)
    }

    /// The MTT mkey of checked, pinned user memory (a process's pages, a dma-buf's, or a
    /// re-registered MR's): its 4 KiB DMA blocks are the translation table, the I/O virtual
    /// range its start and length.
    fn reg_umem(pd: &Pd<IbDev>, user: UserMem) -> Result<(Self, u32, u32)> {
        let sh = pd.device().data();
        let pas = user.umem.dma_blocks(ADAPTER_PAGE)?;
        let octwords = u32::try_from(pas.len().div_ceil(2))?;
        let mut m = mtt_mkey(pd, user.access(), octwords, &pas)?;
        m.set_translations_octword_actual_size(octwords);
        {
            let c = m.memory_key_mkey_entry_mut();
            c.set_start_addr(user.iova);
            c.set_len(user.len);
            // Rights and PD change in place by UMR (`reg_create` sets it too).
            c.set_umr_en(1);
        }
        Self::create(&sh.mdev, &m, Some(user), None)
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
        Self::create(&sh.mdev, &m, None, None)
    }
}

impl IbMr {
    /// A fast-registration MR of up to `max_num_sg` pages of 4 KiB in `pd`: a free mkey,
    /// UMR-enabled, with a translation table of that many MTT entries (rounded to 4, as
    /// mlx5_ib) and no rights but local read until a `REG_MR` sets them.
    pub(crate) fn fast_reg(pd: &Pd<IbDev>, max_num_sg: u32) -> Result<(Self, u32, u32)> {
        if max_num_sg == 0 || max_num_sg > MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        let sh = pd.device().data();
        let ndescs = max_num_sg.next_multiple_of(4);
        let descs = DmaBuf::alloc(sh.mdev.dev.get(), ndescs as usize * 8)?;
        let mut m = mtt_mkey(pd, Access(0), ndescs, &[])?;
        {
            let c = m.memory_key_mkey_entry_mut();
            c.set_free(1);
            c.set_umr_en(1);
        }
        let pages = PageList {
            descs,
            max: ndescs,
            n: AtomicU32::new(0),
        };
        Self::create(&sh.mdev, &m, None, Some(pages))
    }

    /// `map_mr_sg` begins: an empty list of pages of `page_size` bytes (the mkey's 4 KiB
    /// only: the card's profile cannot change an mkey's page size by UMR).
    pub(crate) fn map_begin(&self, page_size: u32) -> Result {
        let p = self.pages.as_ref().ok_or(EINVAL)?;
        if page_size as usize != ADAPTER_PAGE {
            return Err(EINVAL);
        }
        p.n.store(0, Ordering::Release);
        Ok(())
    }

    /// `map_mr_sg`: the next page; `ENOMEM` when the list is full.
    pub(crate) fn set_page(&self, addr: u64) -> Result {
        let p = self.pages.as_ref().ok_or(EINVAL)?;
        let i = p.n.load(Ordering::Acquire);
        if i >= p.max {
            return Err(ENOMEM);
        }
        let e = (addr | MTT_EN_RD | MTT_EN_WR).to_be_bytes();
        p.descs.write(i as usize * 8, &e)?;
        p.n.store(i + 1, Ordering::Release);
        Ok(())
    }

    /// A fast-registration MR's page list.
    pub(crate) fn page_list(&self) -> Option<&PageList> {
        self.pages.as_ref()
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
