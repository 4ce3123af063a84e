// SPDX-License-Identifier: GPL-2.0
//! User contexts (mlx5_ib main.c `mlx5_ib_alloc_ucontext`, `mlx5_ib_mmap`): what a process
//! gets when libmlx5 opens the device.
//!
//! No BlueFlame (`bf_reg_size` 0, doorbells only, at offset 0x800 of each page) and no DEVX (a
//! request for DEVX is refused, and libmlx5 asks again without it). The UAR pages come in
//! either of the layouts of the mlx5 user ABI, as the library asks:
//!
//! - static (an old library): a fixed [`STATIC_BFREGS`] doorbell registers on
//!   [`STATIC_UAR_PAGES`] UAR pages that the context owns and libmlx5 maps at open (mmap
//!   command `REGULAR_PAGE`, index = page); QPs and CQs use the first;
//! - dynamic (libmlx5 sends `MLX5_LIB_CAP_DYN_UAR`, as mlx5_ib honours it: `tot_bfregs` 0):
//!   no static pages; every UAR page is a UAR object (`MLX5_IB_METHOD_UAR_OBJ_ALLOC`, the
//!   layer's uverbs object, [`DynUar`]) that the process maps at the offset the method returns
//!   and names by its index when it creates a QP or CQ (`MLX5_QP_FLAG_UAR_PAGE_INDEX`,
//!   `MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX`). libmlx5 allocates one uncached page at open
//!   for its QPs' and CQs' doorbells; `mlx5dv_devx_alloc_uar` gets more. A QP or CQ may only
//!   name a page of its own context (mlx5_ib does not check).
//!
//! A UAR object's page goes back to the card (`DEALLOC_UAR`) when the object is destroyed
//! (or its context closed), no process maps it any more and no CQ or QP names it ([`UarUse`]):
//! a process may destroy the object first (mlx5_ib lets it; a process sharing the context
//! through fork may die leaving its CQs behind), and the card must not be told to free a page
//! its CQs still use.
//!
//! A transport domain (`ALLOC_TRANSPORT_DOMAIN`, when the card has them), in which the
//! context's raw packet QPs, WQs and RSS QPs create their TIS and TIRs, as mlx5_ib allocates
//! one per context.
//!
//! The clock, as mlx5_ib offers it: the page of the initialization segment with the internal
//! timer (`CORE_CLOCK`, read-only, uncached: `ibv_query_rt_values_ex` reads the timer the
//! completions' timestamps count) and the core's clock-info page (`CLOCK_INFO`, read-only:
//! `mlx5dv_get_clock_info` and wall-clock completion times), when the card has a clock.

use cx4_hw::iseg;
use kernel::{
    new_mutex,
    page::{
        PAGE_SHIFT,
        PAGE_SIZE, //
    },
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    }, //
};
use zerocopy::IntoBytes;

use crate::{
    ib::{
        abi::{
            self,
            mmap_cmd,
            AllocUcontextReq,
            AllocUcontextResp, //
        },
        IbDev,
        IbShared, //
    },
    pd::TransportDomain,
    uar::UarPage, //
};

/// Doorbell registers (bfregs) of a context: two per UAR page (`MLX5_NON_FP_BFREGS_PER_UAR`).
pub(crate) const STATIC_BFREGS: u32 = 16;
/// The UAR pages they sit on.
pub(crate) const STATIC_UAR_PAGES: usize = (STATIC_BFREGS / 2) as usize;
/// libmlx5 divides by the cache line size (dbrec.c), so it must not be 0.
const CACHE_LINE_SIZE: u32 = 64;

/// A user context: its static UAR pages (none in the dynamic layout), returned to the card
/// when the context goes, and the indices of its dynamic UAR pages.
pub(crate) struct Ucontext {
    /// What `alloc` answered, for `query_ucontext` (mlx5_ib recomputes the same).
    resp: AllocUcontextResp,
    td: Option<TransportDomain>,
    uars: KVec<UarPage>,
    dynamic: Arc<DynUars>,
}

/// A context's dynamic UAR pages (the pages its QPs and CQs may name), while their UAR
/// objects' mmap entries live.
type DynUars = Mutex<KVec<Arc<UarPage>>>;

/// A dynamic UAR page (mlx5_ib main.c `alloc_uar_entry`): what a UAR object's mmap entry
/// maps. Dropped with the entry's last reference: the page leaves its context's list (no new
/// CQ or QP can name it) and goes back to the card with the last CQ or QP that names it.
pub(crate) struct DynUar {
    page: Arc<UarPage>,
    owner: Arc<DynUars>,
}

impl Drop for DynUar {
    fn drop(&mut self) {
        let index = self.page.index();
        self.owner.lock().retain(|u| u.index() != index);
    }
}

/// The UAR page a user CQ or QP names in its context, held for the object's life (keep it in
/// a field that drops after the object is destroyed on the card).
pub(crate) enum UarUse {
    /// One of the context's static pages, which live as long as the context (it outlives its
    /// CQs and QPs: uverbs destroys them first).
    Static(u32),
    /// A dynamic page: it goes back to the card when its UAR object and every user are gone.
    Dynamic(Arc<UarPage>),
}

impl UarUse {
    /// The page index the CQ or QP context names.
    pub(crate) fn index(&self) -> u32 {
        match self {
            Self::Static(index) => *index,
            Self::Dynamic(page) => page.index(),
        }
    }
}

impl Ucontext {
    /// Checks libmlx5's request, allocates the context's UAR pages and answers with the
    /// context's geometry.
    pub(crate) fn alloc(sh: &IbShared, udata: &mut ib::Udata<'_>) -> Result<Self> {
        let req: AllocUcontextReq = udata.read(abi::ALLOC_UCONTEXT_REQ_V0_LEN)?;
        // main.c: DEVX, unknown flags, a comp_mask or reserved bits are not supported.
        if req.flags != 0
            || req.comp_mask != 0
            || req.reserved0 != 0
            || req.reserved1 != 0
            || req.reserved2 != 0
        {
            if req.flags & abi::ALLOC_UCTX_DEVX != 0 {
                pr_debug!("cx4: user context with DEVX refused\n");
            }
            return Err(ib::eopnotsupp());
        }
        let gen = sh.caps.gen();
        let cqe_version = (gen.cqe_version() as u8).min(req.max_cqe_version);
        // main.c: the library allocates every UAR page itself (UAR objects).
        let dynamic = req.lib_caps & abi::LIB_CAP_DYN_UAR != 0;
        let td = if gen.log_max_transport_domain() > 0 {
            Some(TransportDomain::alloc(&sh.mdev)?)
        } else {
            None
        };
        let pages = if dynamic { 0 } else { STATIC_UAR_PAGES };
        let mut uars = KVec::with_capacity(pages, GFP_KERNEL)?;
        for _ in 0..pages {
            uars.push(UarPage::alloc(&sh.mdev)?, GFP_KERNEL)?;
        }
        let mut resp = AllocUcontextResp {
            qp_tab_size: 1 << gen.log_max_qp(),
            bf_reg_size: 0,
            tot_bfregs: if dynamic { 0 } else { STATIC_BFREGS },
            cache_line_size: CACHE_LINE_SIZE,
            max_sq_desc_sz: gen.max_wqe_sz_sq() as u16,
            max_rq_desc_sz: gen.max_wqe_sz_rq() as u16,
            max_send_wqebb: 1 << gen.log_max_qp_sz(),
            max_recv_wr: 1 << gen.log_max_qp_sz(),
            max_srq_recv_wr: 1 << gen.log_max_srq_sz(),
            num_ports: 1,
            cqe_version,
            cmds_supp_uhw: abi::CMDS_SUPP_UHW_CREATE_AH,
            // mlx5_ib: the device's minimum inline mode + 1 (0 means "ask the library").
            eth_min_inline: sh.min_inline + 1,
            log_uar_size: 12,
            num_uars_per_page: 1,
            // main.c: the internal timer's page can be mapped (pages of at most 4 KiB).
            comp_mask: abi::UCTX_RESP_CORE_CLOCK_OFFSET,
            hca_core_clock_offset: (iseg::INTERNAL_TIMER_H % PAGE_SIZE) as u64,
            clock_info_versions: if sh.clock.as_ref().is_some_and(|c| c.info_page().is_some()) {
                1 << abi::CLOCK_INFO_V1
            } else {
                0
            },
            ..Default::default()
        };
        resp.response_length =
            u32::try_from(udata.out_len().min(size_of::<AllocUcontextResp>())).unwrap_or(0);
        udata.respond(&resp)?;
        Ok(Self {
            resp,
            td,
            uars,
            dynamic: Arc::pin_init(new_mutex!(KVec::new(), "cx4::dyn_uars"), GFP_KERNEL)?,
        })
    }

    /// The context's alloc response (`mlx5_ib_query_ucontext`).
    pub(crate) fn query(&self) -> Result<KVec<u8>> {
        let mut v = KVec::new();
        v.extend_from_slice(self.resp.as_bytes(), GFP_KERNEL)?;
        Ok(v)
    }

    /// The context's transport domain (none if the card has none).
    pub(crate) fn tdn(&self) -> Option<u32> {
        self.td.as_ref().map(TransportDomain::tdn)
    }

    /// The UAR page of a QP or CQ that names none: the first static page (bfregs 0 and 1);
    /// none in the dynamic layout, where every QP and CQ names its page (mlx5_ib: EINVAL).
    fn default_uar(&self) -> Option<u32> {
        self.uars.first().map(UarPage::index)
    }

    /// The UAR page of a new QP or CQ: the one the library names (`Some`, the dynamic
    /// layout's UAR_PAGE_INDEX flags), which must be the context's own (static or dynamic),
    /// else the default.
    pub(crate) fn uar_for(&self, named: Option<u32>) -> Result<UarUse> {
        let Some(index) = named else {
            return self.default_uar().map(UarUse::Static).ok_or(EINVAL);
        };
        if self.uars.iter().any(|u| u.index() == index) {
            return Ok(UarUse::Static(index));
        }
        let dynamic = self.dynamic.lock();
        let page = dynamic.iter().find(|u| u.index() == index).ok_or(EINVAL)?;
        Ok(UarUse::Dynamic(page.clone()))
    }

    /// A UAR object's page (main.c `MLX5_IB_METHOD_UAR_OBJ_ALLOC`): uncached only, as
    /// mlx5_ib without write-combining refuses BlueFlame pages.
    pub(crate) fn alloc_uar(
        uctx: &ib::Ucontext<IbDev>,
        kind: ib::UarKind,
    ) -> Result<(DynUar, u32)> {
        if kind != ib::UarKind::NonCached {
            return Err(ib::eopnotsupp());
        }
        let page = Arc::new(UarPage::alloc(&uctx.device().data().mdev)?, GFP_KERNEL)?;
        let index = page.index();
        uctx.dynamic.lock().push(page.clone(), GFP_KERNEL)?;
        let uar = DynUar {
            page,
            owner: uctx.dynamic.clone(),
        };
        Ok((uar, index))
    }

    /// Maps one of the context's static UAR pages (`REGULAR_PAGE`, index = page) or a UAR
    /// object's page (at the offset its method returned) uncached, the internal timer's page
    /// or the clock-info page (main.c `mlx5_ib_mmap`); every other command is refused.
    pub(crate) fn mmap(uctx: &ib::Ucontext<IbDev>, vma: &ib::Vma) -> Result {
        if vma.len() != PAGE_SIZE {
            return Err(EINVAL);
        }
        let sh = uctx.device().data();
        let (cmd, idx) = abi::decode_pgoff(vma.pgoff());
        match cmd {
            mmap_cmd::REGULAR_PAGE => {
                let uar = uctx.uars.get(idx).ok_or(EINVAL)?;
                vma.map_io_noncached(uctx, sh.bar_pfn + u64::from(uar.index()))
            }
            mmap_cmd::CORE_CLOCK => {
                vma.deny_write()?;
                let page = (iseg::INTERNAL_TIMER_H >> PAGE_SHIFT) as u64;
                vma.map_io_noncached(uctx, sh.bar_pfn + page)
            }
            mmap_cmd::CLOCK_INFO => Self::mmap_clock_info(sh, idx, vma),
            // main.c `mlx5_ib_mmap_offset`: a UAR object's entry (`mlx5_vma_to_pgoff`).
            c if c >= mmap_cmd::OFFSET_START => vma.map_entry_noncached(uctx, (c << 16) | idx, |u| {
                sh.bar_pfn + u64::from(u.page.index())
            }),
            _ => Err(EINVAL),
        }
    }

    /// main.c `mlx5_ib_mmap_clock_info_page`: the core's clock-info page, shared, read-only.
    fn mmap_clock_info(sh: &IbShared, version: usize, vma: &ib::Vma) -> Result {
        if !vma.shared() {
            return Err(EINVAL);
        }
        if version != abi::CLOCK_INFO_V1 {
            return Err(ib::eopnotsupp());
        }
        if vma.executable() {
            return Err(EPERM);
        }
        vma.deny_write()?;
        let info = sh.clock.as_ref().and_then(|c| c.info_page());
        vma.insert_page(info.ok_or_else(ib::eopnotsupp)?.page())
    }
}
