// SPDX-License-Identifier: GPL-2.0
//! User completion queues (mlx5_ib cq.c `create_cq_user`): libmlx5 allocates the CQE ring
//! and the doorbell record in the process's memory and sends their addresses; the driver
//! pins them, gives the ring's pages to `CREATE_CQ` as the page list (4 KiB pages, the ring's
//! offset in its first page in 64ths of a page) with the doorbell record's bus address, on
//! the context's first UAR page (where libmlx5 rings the arm doorbell) and the completion EQ
//! of the asked vector. The card's completion and error events for the CQ reach ib_core
//! through the CQ table of the EQ dispatch. Kernel users' CQs are in kcq.rs.
//!
//! Resizing (mlx5_ib `mlx5_ib_resize_cq`, user CQs only): libmlx5 allocates the new ring
//! and sends its address; the driver pins it, sends `MODIFY_CQ` op_mod RESIZE with its pages,
//! and releases the old ring once the card took the new one. The card writes a RESIZE_CQ
//! CQE into the old ring, which libmlx5 polls up to (copying what it had not consumed) before
//! it switches. Kernel CQs cannot be resized: ib_core has no resize for them (only uverbs
//! calls `resize_user_cq`), so that path answers EOPNOTSUPP.

use cx4_hw::{
    command,
    cq::{
        cqe_stride,
        CqResizeFields,
        CreateCqIn,
        ModifyCqIn,
        MODIFY_CQ_OP_MOD_RESIZE, //
    },
};
use ib::{
    Access,
    CqEvents,
    CqInitAttr,
    Device,
    Udata,
    Umem, //
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{
        Arc,
        Mutex, //
    }, //
};

use crate::{
    cmd::input,
    cq::{
        CqHandler,
        ExtCq, //
    },
    ib::{
        abi::{
            self,
            CreateCqReq,
            CreateCqResp,
            ResizeCqReq, //
        },
        kcq::KernelCq,
        ucontext::UarUse,
        IbDev, //
    },
};

/// The card's page size for queue buffers (`MLX5_ADAPTER_PAGE_SHIFT`).
pub(crate) const ADAPTER_PAGE: usize = 4096;
/// A buffer may start anywhere in its first page at this granularity (`page_offset` counts
/// 64ths of a page).
pub(crate) const PAGE_OFFSET_UNIT: u64 = (ADAPTER_PAGE / 64) as u64;

/// A CQ of a process or of a kernel user.
pub(crate) enum IbCq {
    /// A process's CQ (libmlx5 polls it).
    User(UserCq),
    /// A kernel user's CQ (ib_core's `poll_cq`).
    Kernel(KernelCq),
}

impl IbCq {
    /// The CQ number.
    pub(crate) fn cqn(&self) -> u32 {
        match self {
            Self::User(u) => u.cq.cqn(),
            Self::Kernel(k) => k.cqn(),
        }
    }

    /// Resizes a user CQ to at least `cqe` entries with libmlx5's new ring (`udata`);
    /// returns its new number of CQEs minus one. Kernel CQs: EOPNOTSUPP.
    pub(crate) fn resize(
        &self,
        dev: &Device<IbDev>,
        cqe: u32,
        udata: &mut Udata<'_>,
    ) -> Result<u32> {
        match self {
            Self::User(u) => u.resize(dev, cqe, udata),
            Self::Kernel(_) => Err(ib::eopnotsupp()),
        }
    }

    /// Creates a user CQ from libmlx5's request (`udata`) or a kernel CQ; returns it and its
    /// number of CQEs minus one (the ring is a power of two, one entry kept free, as mlx5_ib
    /// reports it).
    pub(crate) fn create(
        dev: &Device<IbDev>,
        attr: &CqInitAttr,
        udata: Option<&mut Udata<'_>>,
        events: &Arc<CqEvents>,
    ) -> Result<(Self, u32)> {
        match udata {
            Some(u) => UserCq::create(dev, attr, u, events).map(|(c, n)| (Self::User(c), n)),
            None => KernelCq::create(dev.data(), attr, events).map(|(c, n)| (Self::Kernel(c), n)),
        }
    }
}

/// A user CQ: the card's CQ (destroyed first), then its pinned ring and doorbell record.
pub(crate) struct UserCq {
    cq: ExtCq,
    /// The UAR page the CQ context names, kept until the CQ is destroyed (after `cq`).
    _uar: UarUse,
    /// The ring the card writes; the lock also serialises resizes.
    ring: Pin<KBox<Mutex<Ring>>>,
    /// The CQE size (64 or 128).
    cqe_size: u32,
    _db: Umem,
}

/// A user CQ's current ring.
struct Ring {
    /// Its pinned pages.
    _buf: Umem,
    /// Its number of entries (a power of two).
    entries: u32,
}

/// The ring size for `cqe` entries: a power of two above it (one entry kept free), at most
/// the card's `log_max_cq_sz`, as mlx5_ib rounds it.
fn ring_entries(dev: &Device<IbDev>, cqe: u32) -> Result<u32> {
    let max = 1u32 << dev.data().caps.gen().log_max_cq_sz();
    cqe.checked_add(1)
        .and_then(u32::checked_next_power_of_two)
        .filter(|&n| cqe >= 1 && n <= max)
        .ok_or(EINVAL)
}

impl UserCq {
    fn create(
        dev: &Device<IbDev>,
        attr: &CqInitAttr,
        udata: &mut Udata<'_>,
        events: &Arc<CqEvents>,
    ) -> Result<(Self, u32)> {
        let sh = dev.data();
        let uctx = udata.ucontext::<IbDev>().ok_or(EINVAL)?;
        let req: CreateCqReq = udata.read(abi::CREATE_CQ_REQ_MIN_LEN)?;
        if req.flags & !abi::CREATE_CQ_FLAGS_UAR_PAGE_INDEX != 0
            || (req.cqe_size != 64 && req.cqe_size != 128)
            || req.reserved0 != 0
            || req.reserved1 != 0
        {
            return Err(EINVAL);
        }
        if req.cqe_comp_en != 0 {
            // CQE compression is not offered (the caps say so).
            return Err(ib::eopnotsupp());
        }
        let entries = ring_entries(dev, attr.cqe)?;
        let named = req.flags & abi::CREATE_CQ_FLAGS_UAR_PAGE_INDEX != 0;
        let uar = uctx.uar_for(named.then_some(u32::from(req.uar_page_index)))?;
        if req.buf_addr % PAGE_OFFSET_UNIT != 0 || req.db_addr % 8 != 0 {
            return Err(EINVAL);
        }
        let bytes = usize::try_from(entries)? * usize::try_from(req.cqe_size)?;
        let buf = Umem::get(dev, req.buf_addr, bytes, Access::LOCAL_WRITE)?;
        let db = Umem::get(dev, req.db_addr, 8, Access::LOCAL_WRITE)?;
        let pas = buf.dma_blocks(ADAPTER_PAGE)?;
        let eqns = &sh.comp_eqns;
        let eqn = *eqns
            .get(attr.comp_vector as usize % eqns.len().max(1))
            .ok_or(EINVAL)?;
        let mut m = input::<command::CreateCq>(pas.len() * 8)?;
        {
            let c = m.cq_context_mut();
            c.set_cqe_sz(if req.cqe_size == 64 {
                cqe_stride::S64.into()
            } else {
                cqe_stride::S128.into()
            });
            c.set_log_cq_size(entries.ilog2());
            c.set_uar_page(uar.index());
            c.set_c_eqn_or_apu_element(eqn.into());
            c.set_log_page_size(0);
            c.set_page_offset(((req.buf_addr % ADAPTER_PAGE as u64) / PAGE_OFFSET_UNIT) as u32);
            c.set_dbr_addr(db.start_dma());
        }
        for (i, pa) in pas.iter().enumerate() {
            CreateCqIn::set_pas(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
        }
        let cq = ExtCq::create(&sh.mdev, &m, Arc::new(Notify(events.clone()), GFP_KERNEL)?)?;
        udata.respond(&CreateCqResp {
            cqn: cq.cqn(),
            reserved: 0,
        })?;
        let ring = KBox::pin_init(
            new_mutex!(Ring { _buf: buf, entries }, "cx4::ib_cq_ring"),
            GFP_KERNEL,
        )?;
        Ok((
            Self {
                cq,
                _uar: uar,
                ring,
                cqe_size: req.cqe_size,
                _db: db,
            },
            entries - 1,
        ))
    }

    /// mlx5_ib `mlx5_ib_resize_cq` for a user CQ: the new ring pinned, `MODIFY_CQ` op_mod
    /// RESIZE with its pages (log size, page offset and page size selected), the old ring
    /// released once the card answered. The same size is a no-op, as in mlx5_ib; a failed
    /// command (e.g. more CQEs outstanding than the new ring holds) keeps the old ring.
    fn resize(&self, dev: &Device<IbDev>, cqe: u32, udata: &mut Udata<'_>) -> Result<u32> {
        let entries = ring_entries(dev, cqe)?;
        let mut ring = self.ring.lock();
        if entries == ring.entries {
            return Ok(entries - 1);
        }
        let req: ResizeCqReq = udata.read(abi::RESIZE_CQ_REQ_MIN_LEN)?;
        if req.reserved0 != 0 || req.reserved1 != 0 || u32::from(req.cqe_size) != self.cqe_size {
            return Err(EINVAL);
        }
        if req.buf_addr % PAGE_OFFSET_UNIT != 0 {
            return Err(EINVAL);
        }
        let bytes = usize::try_from(entries)? * usize::try_from(self.cqe_size)?;
        let buf = Umem::get(dev, req.buf_addr, bytes, Access::LOCAL_WRITE)?;
        let pas = buf.dma_blocks(ADAPTER_PAGE)?;
        let mut m = input::<command::ModifyCq>(pas.len() * 8)?;
        m.set_op_mod(MODIFY_CQ_OP_MOD_RESIZE.into());
        m.set_cqn(self.cq.cqn());
        m.set_modify_field_select_resize_field_select(
            (CqResizeFields::LOG_SIZE | CqResizeFields::PG_OFFSET | CqResizeFields::PG_SIZE).bits(),
        );
        {
            let c = m.cq_context_mut();
            c.set_log_cq_size(entries.ilog2());
            c.set_log_page_size(0);
            c.set_page_offset(((req.buf_addr % ADAPTER_PAGE as u64) / PAGE_OFFSET_UNIT) as u32);
            c.set_cqe_sz(if self.cqe_size == 64 {
                cqe_stride::S64.into()
            } else {
                cqe_stride::S128.into()
            });
        }
        for (i, pa) in pas.iter().enumerate() {
            ModifyCqIn::set_pas(m.bytes_mut(), i, *pa).map_err(|_| EINVAL)?;
        }
        dev.data().mdev.cmdq.exec::<command::ModifyCq>(&m, 0)?;
        // The card writes the new ring from now on: the old one is unpinned as it drops.
        *ring = Ring { _buf: buf, entries };
        Ok(entries - 1)
    }
}

/// Forwards the CQ table's events of one CQ to ib_core (from the EQ interrupt).
pub(crate) struct Notify(pub(crate) Arc<CqEvents>);

impl CqHandler for Notify {
    fn completion(&self, _cqn: u32) {
        self.0.completion();
    }

    fn error(&self, _cqn: u32, _syndrome: u8) {
        self.0.error();
    }
}
