// SPDX-License-Identifier: GPL-2.0
//! The memory regions' trampolines of [`OpsTable`]: user MRs (`reg_user_mr`,
//! `reg_user_mr_dmabuf`, `rereg_user_mr`), kernel MRs (`get_dma_mr`, `alloc_mr` with
//! `map_mr_sg`) and `dereg_mr`. The layer allocates the `ib_mr` ([`Mr`]). Memory windows
//! (`alloc_mw`, `dealloc_mw`) are containers the core allocates ([`Mw`]).

use kernel::{
    error::from_result,
    ffi::c_int,
    prelude::*, //
};

use super::OpsTable;
use crate::{
    driver::IbDriver,
    object::{
        Mr,
        Mw,
        Pd, //
    },
    udata::Udata,
    umem::{
        Access,
        Rereg,
        ReregFlags, //
    },
};

impl<T: IbDriver> OpsTable<T> {
    /// # Safety
    ///
    /// uverbs calls it with a live PD of ours and the call's udata.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe extern "C" fn reg_user_mr(
        pd: *mut ksys::ib_pd,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: c_int,
        _dmah: *mut ksys::ib_dmah,
        udata: *mut ksys::ib_udata,
    ) -> *mut ksys::ib_mr {
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        let r = T::reg_user_mr(
            pd,
            start,
            length,
            virt_addr,
            Access(access as u32),
            &mut udata,
        )
        .and_then(|(mr, lkey, rkey)| Mr::<T>::into_raw(mr, lkey, rkey));
        r.unwrap_or_else(Error::to_ptr)
    }

    /// # Safety
    ///
    /// uverbs calls it with a live PD of ours and the call's attribute bundle.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe extern "C" fn reg_user_mr_dmabuf(
        pd: *mut ksys::ib_pd,
        offset: u64,
        length: u64,
        virt_addr: u64,
        fd: c_int,
        access: c_int,
        _dmah: *mut ksys::ib_dmah,
        attrs: *mut ksys::uverbs_attr_bundle,
    ) -> *mut ksys::ib_mr {
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: The call's bundle; its driver udata lives as long.
        let mut udata = unsafe { Udata::from_raw(ksys::ib_attrs_udata(attrs)) };
        let r = T::reg_user_mr_dmabuf(
            pd,
            offset,
            length,
            virt_addr,
            fd,
            Access(access as u32),
            &mut udata,
        )
        .and_then(|(mr, lkey, rkey)| {
            let p = Mr::<T>::into_raw(mr, lkey, rkey)?;
            // SAFETY: The fresh `ib_mr` the core does not see yet (unlike `reg_user_mr`,
            // uverbs does not set the range here).
            unsafe { ksys::ib_mr_set_range(p, virt_addr, length) };
            Ok(p)
        });
        r.unwrap_or_else(Error::to_ptr)
    }

    /// # Safety
    ///
    /// uverbs calls it, holding the MR's handle for writing, with a live user MR of ours, a
    /// live PD of ours (the MR's own without `IB_MR_REREG_PD`) and the call's udata.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe extern "C" fn rereg_user_mr(
        mr: *mut ksys::ib_mr,
        flags: c_int,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: c_int,
        pd: *mut ksys::ib_pd,
        udata: *mut ksys::ib_udata,
    ) -> *mut ksys::ib_mr {
        // SAFETY: Made by `Mr::into_raw`, live during the call.
        let m = unsafe { Mr::<T>::from_raw(mr) };
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        let rereg = Rereg::new(
            ReregFlags(flags as u32),
            start,
            length,
            virt_addr,
            Access(access as u32),
        );
        let r = T::rereg_user_mr(m, &rereg, pd, &mut udata).and_then(|new| {
            // Changed in place: NULL tells uverbs to keep `mr` (and its keys).
            let Some((new, lkey, rkey)) = new else {
                return Ok(core::ptr::null_mut());
            };
            let (iova, len) = match rereg.trans() {
                Some((_, len, iova)) => (iova, len),
                None => (m.iova(), m.length()),
            };
            let p = Mr::<T>::into_raw(new, lkey, rkey)?;
            // SAFETY: The fresh `ib_mr` the core does not see yet.
            unsafe { ksys::ib_mr_set_range(p, iova, len) };
            Ok(p)
        });
        r.unwrap_or_else(Error::to_ptr)
    }

    /// # Safety
    ///
    /// The core calls it with a live PD of ours.
    pub(super) unsafe extern "C" fn get_dma_mr(
        pd: *mut ksys::ib_pd,
        access: c_int,
    ) -> *mut ksys::ib_mr {
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        let r = T::get_dma_mr(pd, Access(access as u32))
            .and_then(|(mr, lkey, rkey)| Mr::<T>::into_raw(mr, lkey, rkey));
        r.unwrap_or_else(Error::to_ptr)
    }

    /// # Safety
    ///
    /// The core calls it with a live PD of ours.
    pub(super) unsafe extern "C" fn alloc_mr(
        pd: *mut ksys::ib_pd,
        mr_type: ksys::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut ksys::ib_mr {
        if mr_type != ksys::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return crate::eopnotsupp().to_ptr();
        }
        // SAFETY: A PD initialised by `alloc_pd`, live during the call.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        let r = T::alloc_mr(pd, max_num_sg)
            .and_then(|(mr, lkey, rkey)| Mr::<T>::into_raw(mr, lkey, rkey));
        r.unwrap_or_else(Error::to_ptr)
    }

    /// # Safety
    ///
    /// The user calls it (`ib_map_mr_sg`) with a live MR of ours from `alloc_mr` and a
    /// DMA-mapped scatter list of `n` entries.
    pub(super) unsafe extern "C" fn map_mr_sg(
        mr: *mut ksys::ib_mr,
        sg: *mut kernel::bindings::scatterlist,
        n: c_int,
        offset: *mut core::ffi::c_uint,
    ) -> c_int {
        // SAFETY: Made by `Mr::into_raw`, live during the call.
        let m = unsafe { Mr::<T>::from_raw(mr) };
        if let Err(e) = T::mr_map_begin(m, m.page_size()) {
            return e.to_errno();
        }
        // SAFETY: The caller's MR and list; `set_page` is called with this MR only.
        unsafe { ksys::ib_sg_to_pages(mr, sg, n, offset, Some(Self::set_page)) }
    }

    /// # Safety
    ///
    /// `ib_sg_to_pages` calls it with the MR `map_mr_sg` passed.
    unsafe extern "C" fn set_page(mr: *mut ksys::ib_mr, addr: u64) -> c_int {
        // SAFETY: As in `map_mr_sg`.
        let m = unsafe { Mr::<T>::from_raw(mr) };
        match T::mr_set_page(m, addr) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// The core calls it once for an MR `reg_user_mr`/`get_dma_mr`/`alloc_mr` returned.
    pub(super) unsafe extern "C" fn dereg_mr(
        mr: *mut ksys::ib_mr,
        _udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: Made by `Mr::into_raw`, not used after.
        unsafe { Mr::<T>::free(mr) };
        0
    }

    /// # Safety
    ///
    /// uverbs calls it with a fresh container of `size_ib_mw` bytes whose `device`, `pd` (a
    /// live PD of ours) and `type` are set, and the call's udata.
    pub(super) unsafe extern "C" fn alloc_mw(
        mw: *mut ksys::ib_mw,
        udata: *mut ksys::ib_udata,
    ) -> c_int {
        // SAFETY: The core set `pd` to a live PD of our device.
        let pd = unsafe { Pd::<T>::from_raw(ksys::ib_mw_pd(mw)) };
        // SAFETY: Set by the core.
        let type_2 = unsafe { ksys::ib_mw_type_2(mw) };
        // SAFETY: The core's udata for this call.
        let mut udata = unsafe { Udata::from_raw(udata) };
        from_result(|| {
            let (data, rkey) = T::alloc_mw(pd, type_2, &mut udata)?;
            // SAFETY: The fresh container of `Mw::<T>::SIZE` bytes; `rkey` is the core's
            // field for the key it reports.
            unsafe {
                Mw::<T>::init(mw, data);
                ksys::ib_mw_set_rkey(mw, rkey);
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// The core calls it once for a window `alloc_mw` initialised.
    pub(super) unsafe extern "C" fn dealloc_mw(mw: *mut ksys::ib_mw) -> c_int {
        // SAFETY: Initialised by `alloc_mw`, destroyed once.
        unsafe { Mw::<T>::destroy(mw) };
        0
    }
}
