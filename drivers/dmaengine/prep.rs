// SPDX-License-Identifier: GPL-2.0
//! The `device_prep_dma_*` callbacks of [`Callbacks`]: a client's request (interrupt,
//! memcpy, XOR, XOR validation, P+Q, P+Q validation) read into a [`Request`], checked for
//! failed mappings, handed to [`Operations::prep`] and boxed into a descriptor
//! ([`DescBox`]) whose `tx_submit` is ours.

use core::ptr;

use kernel::{
    ffi::{
        c_uint,
        c_ulong, //
    },
    prelude::*,
    types::Opaque,
};

use crate::{
    callbacks::Callbacks,
    chan::Inner,
    desc::DescBox,
    DmaAddr,
    Kind,
    Operations,
    Request,
    Status, //
};

/// Whether a client's prep flags ask for a fence (`DMA_PREP_FENCE`).
fn fence(flags: c_ulong) -> bool {
    flags as ksys::dma_ctrl_flags & ksys::dma_ctrl_flags_DMA_PREP_FENCE != 0
}

impl<T: Operations> Callbacks<T> {
    /// Allocates a descriptor for `req` (`GFP_NOWAIT`) and returns its C part, or null.
    ///
    /// # Safety
    ///
    /// `chan` is the channel of a live `Inner<T>`; `result` is null or valid until the
    /// descriptor's callback has run.
    unsafe fn prep(
        chan: *mut ksys::dma_chan,
        req: &Request<'_>,
        flags: c_ulong,
        result: *mut ksys::sum_check_flags,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The caller's guarantee.
        let inner = unsafe { Inner::<T>::from_chan(chan) };
        // A client's failed mapping: the request ends aborted without reaching the provider
        // (NULL would make async_tx prepare it again forever). Checking here is also what
        // marks the client's mappings as checked for CONFIG_DMA_API_DEBUG.
        // SAFETY: `dev` is our registered device; its `dev` is the bound parent device.
        let parent = unsafe { (*inner.dev_ptr()).dev };
        // Every address is checked, no short cut: each check marks its own mapping.
        let bad = req
            .kind
            .addrs()
            // SAFETY: `parent` is a live device; the call only compares the address (and
            // looks it up in dma-debug's table).
            .filter(|&a| unsafe { ksys::dma_mapping_error(parent, a) } != 0)
            .count();
        let (desc, status) = if bad != 0 {
            let n = {
                let mut st = inner.state.lock();
                st.refused += 1;
                st.refused
            };
            if n <= 10 {
                pr_err!("a client prepared a request on a failed DMA mapping; aborted ({n})\n");
            }
            (None, Some(Status::Aborted))
        } else {
            let Ok(desc) = inner.ops.prep(req) else {
                return ptr::null_mut();
            };
            (Some(desc), None)
        };
        let b = DescBox {
            txd: Opaque::zeroed(),
            next: ptr::null_mut(),
            status,
            result,
            cookie: 0,
            finished: status.is_some(),
            desc,
        };
        let Ok(b) = KBox::new(b, GFP_NOWAIT) else {
            return ptr::null_mut();
        };
        let d: *mut DescBox<T> = KBox::into_raw(b);
        // SAFETY: `d` is the live, zeroed descriptor just allocated; nothing else sees it yet.
        unsafe {
            let txd = (*d).txd.get();
            // dma_async_tx_descriptor_init(); the ctrl flags are the low bits of the prep
            // flags (DMA_PREP_INTERRUPT, DMA_CTRL_ACK, ...).
            (*txd).chan = chan;
            (*txd).flags = flags as ksys::dma_ctrl_flags;
            (*txd).cookie = EBUSY.to_errno();
            (*txd).tx_submit = Some(Self::tx_submit);
        }
        inner.state.lock().live += 1;
        // CAST: `txd` is the first field of the `#[repr(C)]` `DescBox`, `Opaque` is
        // transparent.
        d.cast()
    }

    /// Builds a slice of `n` addresses from a client's array (empty for null or 0).
    ///
    /// # Safety
    ///
    /// `p` is null or points to `n` addresses valid for `'a`.
    unsafe fn addrs<'a>(p: *const ksys::dma_addr_t, n: c_uint) -> &'a [DmaAddr] {
        if p.is_null() || n == 0 {
            return &[];
        }
        // SAFETY: The caller's guarantee; `dma_addr_t` is `u64` on 64-bit kernels.
        unsafe { core::slice::from_raw_parts(p.cast(), n as usize) }
    }

    /// As [`Self::addrs`] for coefficients.
    ///
    /// # Safety
    ///
    /// As for [`Self::addrs`].
    unsafe fn bytes<'a>(p: *const u8, n: c_uint) -> &'a [u8] {
        if p.is_null() || n == 0 {
            return &[];
        }
        // SAFETY: The caller's guarantee.
        unsafe { core::slice::from_raw_parts(p, n as usize) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    pub(crate) unsafe extern "C" fn prep_interrupt(
        chan: *mut ksys::dma_chan,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        let req = Request {
            kind: Kind::Interrupt,
            len: 0,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    pub(crate) unsafe extern "C" fn prep_memcpy(
        chan: *mut ksys::dma_chan,
        dst: ksys::dma_addr_t,
        src: ksys::dma_addr_t,
        len: usize,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        let req = Request {
            kind: Kind::Memcpy { dst, src },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    pub(crate) unsafe extern "C" fn prep_xor(
        chan: *mut ksys::dma_chan,
        dst: ksys::dma_addr_t,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        len: usize,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes `cnt` source addresses.
        let srcs = unsafe { Self::addrs(src, cnt) };
        let req = Request {
            kind: Kind::Xor { dst, srcs },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    pub(crate) unsafe extern "C" fn prep_xor_val(
        chan: *mut ksys::dma_chan,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        len: usize,
        result: *mut ksys::sum_check_flags,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes `cnt` source addresses.
        let srcs = unsafe { Self::addrs(src, cnt) };
        let req = Request {
            kind: Kind::XorVal { srcs },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel; `result` is the client's,
        // valid until its callback (the dmaengine contract).
        unsafe { Self::prep(chan, &req, flags, result) }
    }

    /// P and Q of a P+Q request: absent when disabled by the flags.
    ///
    /// # Safety
    ///
    /// `pq` points to two addresses.
    unsafe fn pq_dsts(pq: *const ksys::dma_addr_t, flags: c_ulong) -> [Option<DmaAddr>; 2] {
        let fl = flags as ksys::dma_ctrl_flags;
        // SAFETY: The caller's guarantee.
        let (p, q) = unsafe { (*pq, *pq.add(1)) };
        [
            (fl & ksys::dma_ctrl_flags_DMA_PREP_PQ_DISABLE_P == 0).then_some(p),
            (fl & ksys::dma_ctrl_flags_DMA_PREP_PQ_DISABLE_Q == 0).then_some(q),
        ]
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    pub(crate) unsafe extern "C" fn prep_pq(
        chan: *mut ksys::dma_chan,
        dst: *mut ksys::dma_addr_t,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        scf: *const u8,
        len: usize,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes P and Q, `cnt` sources and `cnt` coefficients.
        let ([p, q], srcs, scf) = unsafe {
            (
                Self::pq_dsts(dst, flags),
                Self::addrs(src, cnt),
                Self::bytes(scf, cnt),
            )
        };
        let cont = flags as ksys::dma_ctrl_flags & ksys::dma_ctrl_flags_DMA_PREP_CONTINUE != 0;
        let req = Request {
            kind: Kind::Pq {
                p,
                q,
                srcs,
                scf,
                cont,
            },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel.
        unsafe { Self::prep(chan, &req, flags, ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Only dmaengine calls it, through the device `Registration::new` set up for `T`, with
    /// pointers that are valid for the call (the `dmaengine.h` contract of this callback).
    pub(crate) unsafe extern "C" fn prep_pq_val(
        chan: *mut ksys::dma_chan,
        pq: *mut ksys::dma_addr_t,
        src: *mut ksys::dma_addr_t,
        cnt: c_uint,
        scf: *const u8,
        len: usize,
        pqres: *mut ksys::sum_check_flags,
        flags: c_ulong,
    ) -> *mut ksys::dma_async_tx_descriptor {
        // SAFETY: The client passes P and Q, `cnt` sources and `cnt` coefficients.
        let ([p, q], srcs, scf) = unsafe {
            (
                Self::pq_dsts(pq, flags),
                Self::addrs(src, cnt),
                Self::bytes(scf, cnt),
            )
        };
        let req = Request {
            kind: Kind::PqVal { p, q, srcs, scf },
            len,
            fence: fence(flags),
        };
        // SAFETY: dmaengine calls this for our registered channel; `pqres` is the client's,
        // valid until its callback.
        unsafe { Self::prep(chan, &req, flags, pqres) }
    }
}
