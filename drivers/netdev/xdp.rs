// SPDX-License-Identifier: GPL-2.0
//! Native XDP (`include/net/xdp.h`, `include/linux/filter.h`): the program a driver runs on
//! its receive path ([`BpfProg`], a counted reference to a `struct bpf_prog`), the buffer it
//! runs on ([`XdpBuff`], a received frame in a [`PoolPage`] with its headroom, and where it
//! goes on XDP_REDIRECT), the receive queue's registration ([`XdpRxq`], `struct xdp_rxq_info`
//! with the page pool as its memory model) and what `ndo_bpf` is asked ([`XdpSetup`] for
//! [`crate::DeviceOps::xdp_setup_prog`], with its [`Extack`]).
//!
//! A driver that runs XDP lays its receive buffers out linearly: one page per frame, at least
//! [`XDP_PACKET_HEADROOM`] bytes in front of it and the skb's shared info behind it
//! ([`crate::page_pool::build_skb_room`]), mapped both ways when the program may send the frame
//! back out ([`crate::page_pool::PagePoolParams::bidirectional`]).

use core::{
    marker::PhantomData,
    ptr::NonNull, //
};

use kernel::{
    bindings,
    prelude::*,
    types::Opaque, //
};

use crate::{
    napi::NapiContext,
    page_pool::{
        build_skb_room,
        PagePool,
        PoolPage, //
    },
    Device,
};

/// The headroom XDP programs may grow the frame into (`XDP_PACKET_HEADROOM`): a driver
/// running XDP puts at least this much in front of each received frame.
pub const XDP_PACKET_HEADROOM: u32 = ksys::KSYS_CONST_XDP_PACKET_HEADROOM;

/// What an XDP program decided for a frame (`enum xdp_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpAction {
    /// `XDP_ABORTED`: the program failed; the frame is dropped and the exception traced.
    Aborted,
    /// `XDP_DROP`: drop the frame.
    Drop,
    /// `XDP_PASS`: give the (possibly changed) frame to the stack.
    Pass,
    /// `XDP_TX`: send the (changed) frame back out of the port it came in on.
    Tx,
    /// `XDP_REDIRECT`: the program chose another device, CPU or socket.
    Redirect,
    /// Any other value: treated as [`XdpAction::Aborted`] after
    /// [`BpfProg::warn_invalid_action`].
    Invalid(u32),
}

impl XdpAction {
    fn from_raw(act: u32) -> Self {
        match act {
            ksys::xdp_action_XDP_ABORTED => Self::Aborted,
            ksys::xdp_action_XDP_DROP => Self::Drop,
            ksys::xdp_action_XDP_PASS => Self::Pass,
            ksys::xdp_action_XDP_TX => Self::Tx,
            ksys::xdp_action_XDP_REDIRECT => Self::Redirect,
            a => Self::Invalid(a),
        }
    }

    /// The C value.
    pub fn as_raw(self) -> u32 {
        match self {
            Self::Aborted => ksys::xdp_action_XDP_ABORTED,
            Self::Drop => ksys::xdp_action_XDP_DROP,
            Self::Pass => ksys::xdp_action_XDP_PASS,
            Self::Tx => ksys::xdp_action_XDP_TX,
            Self::Redirect => ksys::xdp_action_XDP_REDIRECT,
            Self::Invalid(a) => a,
        }
    }
}

/// What of XDP a device implements (`xdp_features_t`, `NETDEV_XDP_ACT_*`), as the netdev
/// netlink family reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XdpFeatures(u32);

impl core::ops::BitOr for XdpFeatures {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl XdpFeatures {
    /// `NETDEV_XDP_ACT_BASIC`: XDP_PASS, XDP_DROP, XDP_TX and XDP_ABORTED.
    pub const BASIC: Self = Self(ksys::KSYS_CONST_NETDEV_XDP_ACT_BASIC);
    /// `NETDEV_XDP_ACT_REDIRECT`: XDP_REDIRECT.
    pub const REDIRECT: Self = Self(ksys::KSYS_CONST_NETDEV_XDP_ACT_REDIRECT);
    /// `NETDEV_XDP_ACT_XSK_ZEROCOPY`: AF_XDP sockets in zero-copy mode
    /// ([`crate::xsk::XskPool`]).
    pub const XSK_ZEROCOPY: Self = Self(ksys::KSYS_CONST_NETDEV_XDP_ACT_XSK_ZEROCOPY);

    /// The bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

/// A counted reference to a loaded XDP program (`struct bpf_prog`): cloning takes a reference
/// (`bpf_prog_inc()`), dropping puts it (`bpf_prog_put()`, which frees the program after an
/// RCU grace period once the last reference is gone, so a NAPI poll that still runs it is
/// safe).
///
/// # Invariants
///
/// `raw` is a live program of which this handle owns one reference.
pub struct BpfProg {
    raw: NonNull<bindings::bpf_prog>,
}

// SAFETY: A program reference may be used and put from any thread.
unsafe impl Send for BpfProg {}

// SAFETY: `&BpfProg` only runs the program (any number of CPUs at once) or reads its address.
unsafe impl Sync for BpfProg {}

impl BpfProg {
    /// Takes a reference of its own to `raw` (`bpf_prog_inc()`).
    ///
    /// # Safety
    ///
    /// `raw` must be a live program for the duration of the call (the caller holds a
    /// reference, e.g. the one the core holds across `ndo_bpf`).
    pub(crate) unsafe fn get(raw: NonNull<bindings::bpf_prog>) -> Self {
        // SAFETY: Live for the call (the caller's guarantee); the new reference is ours.
        unsafe { ksys::bpf_prog_inc(raw.as_ptr()) };
        // INVARIANT: One reference taken above.
        Self { raw }
    }

    /// Whether `self` and `other` are the same program.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }

    /// Runs the program on `xdp` (`bpf_prog_run_xdp()`) in the NAPI poll of the queue it
    /// was registered for (`_napi`: BH disabled, which is the RCU read side the program's map
    /// accesses need). The frame's start and end may move ([`XdpBuff::frame`]).
    #[inline]
    pub fn run(&self, xdp: &mut XdpBuff<'_>, _napi: &NapiContext) -> XdpAction {
        // SAFETY: The program is live (type invariant); `xdp` is a prepared buffer over an
        // owned page and a registered queue (its type invariant); we are in a NAPI poll.
        let act = unsafe { ksys::bpf_prog_run_xdp(self.raw.as_ptr(), &mut xdp.raw) };
        XdpAction::from_raw(act)
    }

    /// Runs the program on the buffer `xdp` (`bpf_prog_run_xdp()`).
    ///
    /// # Safety
    ///
    /// `xdp` is a prepared buffer over a registered queue whose NAPI poll `_napi` is.
    #[inline]
    pub(crate) unsafe fn run_raw(
        &self,
        xdp: *mut ksys::xdp_buff,
        _napi: &NapiContext,
    ) -> XdpAction {
        // SAFETY: The program is live (type invariant); the buffer as the caller guarantees.
        XdpAction::from_raw(unsafe { ksys::bpf_prog_run_xdp(self.raw.as_ptr(), xdp) })
    }

    /// The program.
    pub(crate) fn as_raw(&self) -> *mut bindings::bpf_prog {
        self.raw.as_ptr()
    }

    /// Warns once that the program returned `act`, which the driver does not know
    /// (`bpf_warn_invalid_xdp_action()`).
    pub fn warn_invalid_action(&self, dev: &Device, act: XdpAction) {
        // SAFETY: The device and the program are live; the call only reads them.
        unsafe { ksys::bpf_warn_invalid_xdp_action(dev.as_raw(), self.raw.as_ptr(), act.as_raw()) };
    }

    /// Reports that a frame could not be handled as the program asked (the `xdp_exception`
    /// tracepoint, `trace_xdp_exception()`): XDP_ABORTED, an unknown action, or an XDP_TX or
    /// XDP_REDIRECT that failed.
    pub fn trace_exception(&self, dev: &Device, act: XdpAction) {
        // SAFETY: The device and the program are live; the tracepoint only reads them.
        unsafe { ksys::trace_xdp_exception(dev.as_raw(), self.raw.as_ptr(), act.as_raw()) };
    }
}

impl Clone for BpfProg {
    fn clone(&self) -> Self {
        // SAFETY: `self` holds a reference, so the program is live.
        unsafe { Self::get(self.raw) }
    }
}

impl Drop for BpfProg {
    fn drop(&mut self) {
        // SAFETY: The handle's reference (type invariant), put once.
        unsafe { ksys::bpf_prog_put(self.raw.as_ptr()) };
    }
}

/// The extended acknowledgement of a netlink request (`struct netlink_ext_ack`): the message
/// the user sees with the error (`NL_SET_ERR_MSG`).
pub struct Extack<'a> {
    raw: Option<&'a mut bindings::netlink_ext_ack>,
}

impl<'a> Extack<'a> {
    /// Wraps the acknowledgement the stack passes (NULL when there is none).
    ///
    /// # Safety
    ///
    /// `raw` must be NULL or an acknowledgement only this wrapper writes during `'a`.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::netlink_ext_ack) -> Self {
        // SAFETY: NULL or valid and unaliased for `'a` (the caller's guarantee).
        let raw = unsafe { raw.as_mut() };
        Self { raw }
    }

    /// Sets the error message (`NL_SET_ERR_MSG()`): a static string, as the macro's are.
    pub fn set_msg(&mut self, msg: &'static CStr) {
        if let Some(e) = self.raw.as_deref_mut() {
            e._msg = msg.as_char_ptr();
        }
    }
}

/// What `ndo_bpf`'s `XDP_SETUP_PROG` asks ([`crate::DeviceOps::xdp_setup_prog`]): the
/// program to run from now on (`None`: detach) and the acknowledgement that says why a
/// refusal was made.
pub struct XdpSetup<'a> {
    /// The program, a reference of the driver's own.
    pub prog: Option<BpfProg>,
    /// The request's acknowledgement.
    pub extack: Extack<'a>,
}

/// A receive queue registered for XDP (`struct xdp_rxq_info`, `xdp_rxq_info_reg()`), its
/// frames in page-pool pages (`xdp_rxq_info_reg_mem_model(MEM_TYPE_PAGE_POOL)`, which takes a
/// user reference of the pool, so the order the two are dropped in does not matter).
/// Dropping it unregisters it (`xdp_rxq_info_unreg()`).
///
/// # Invariants
///
/// `info` is registered with its memory model.
pub struct XdpRxq {
    info: Pin<KBox<Opaque<ksys::xdp_rxq_info>>>,
}

// SAFETY: The registration may be used and dropped from any thread.
unsafe impl Send for XdpRxq {}

// SAFETY: `&XdpRxq` only lends the info to buffers, which the stack reads.
unsafe impl Sync for XdpRxq {}

impl XdpRxq {
    /// Registers RX queue `queue` of `dev`, its frames in pages of `pool`.
    pub fn new(dev: &Device, queue: u32, pool: &PagePool) -> Result<Self> {
        let info = register_rxq(
            dev,
            queue,
            ksys::xdp_mem_type_MEM_TYPE_PAGE_POOL,
            pool.as_raw().cast(),
        )?;
        // INVARIANT: Registered with its memory model.
        Ok(Self { info })
    }
}

/// Registers RX queue `queue` of `dev` (`__xdp_rxq_info_reg()`) with memory model `mem`
/// (`xdp_rxq_info_reg_mem_model()`; `allocator` is the page pool for `MEM_TYPE_PAGE_POOL`,
/// NULL for the XSK pool's).
///
/// NAPI ID 0: 7.2's `struct xdp_rxq_info` keeps none (`__xdp_rxq_info_reg()` ignores the
/// argument); busy polling finds the queue's NAPI through its link (`netif_queue_set_napi()`,
/// which `xsk_bind()` reads).
pub(crate) fn register_rxq(
    dev: &Device,
    queue: u32,
    mem: ksys::xdp_mem_type,
    allocator: *mut c_void,
) -> Result<Pin<KBox<Opaque<ksys::xdp_rxq_info>>>> {
    let info = KBox::pin(Opaque::<ksys::xdp_rxq_info>::zeroed(), GFP_KERNEL)?;
    // SAFETY: `info` is zeroed (`REG_STATE_NEW`) and pinned; the device is live.
    kernel::error::to_result(unsafe {
        ksys::__xdp_rxq_info_reg(info.get(), dev.as_raw(), queue, 0, 0)
    })?;
    // SAFETY: Registered above; `allocator` is what `mem` needs (the callers' page pool, live,
    // which takes a user reference for the model; or NULL).
    let r = kernel::error::to_result(unsafe {
        ksys::xdp_rxq_info_reg_mem_model(info.get(), mem, allocator)
    });
    if let Err(e) = r {
        // SAFETY: Registered above, without a memory model (allowed).
        unsafe { ksys::xdp_rxq_info_unreg(info.get()) };
        return Err(e);
    }
    Ok(info)
}

impl Drop for XdpRxq {
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant); no buffer borrows it any more (`&mut self`).
        unsafe { ksys::xdp_rxq_info_unreg(self.info.get()) };
    }
}

/// A received frame an XDP program runs on (`struct xdp_buff`): a [`PoolPage`] the buffer
/// owns while the program may change it, the frame `headroom` bytes into it. The driver takes
/// the page back ([`XdpBuff::into_page`]) unless a redirect took it ([`XdpBuff::redirect`]).
///
/// # Invariants
///
/// `raw` was prepared over all of `page` (`frame_sz` its size, its start `data_hard_start`)
/// and points to the registered info of the [`XdpRxq`] borrowed for `'a`.
pub struct XdpBuff<'a> {
    raw: ksys::xdp_buff,
    page: PoolPage,
    _rxq: PhantomData<&'a XdpRxq>,
}

impl<'a> XdpBuff<'a> {
    /// A buffer over the `len` bytes the device wrote at `headroom` in `page` (synced for the
    /// CPU), received on `rxq` (`xdp_init_buff()`, `xdp_prepare_buff()`; no metadata). The page
    /// comes back if the frame and the skb's shared info behind it do not fit it.
    pub fn new(
        mut page: PoolPage,
        rxq: &'a XdpRxq,
        headroom: u32,
        len: u32,
    ) -> core::result::Result<Self, PoolPage> {
        let size = page.size();
        if headroom > size || len > build_skb_room(size, headroom) {
            return Err(page);
        }
        let start = page.data_mut().as_mut_ptr();
        let mut raw: ksys::xdp_buff = pin_init::zeroed();
        // SAFETY: `raw` is a buffer of ours; the info is registered and pinned; `start` is
        // the owned page's first byte and `headroom + len` bytes fit it (checked).
        unsafe {
            ksys::xdp_init_buff(&mut raw, size, rxq.info.get());
            ksys::xdp_prepare_buff(&mut raw, start, headroom as i32, len as i32, false);
        }
        // INVARIANT: Prepared over the page, `rxq` borrowed for `'a`.
        Ok(Self {
            raw,
            page,
            _rxq: PhantomData,
        })
    }

    /// Where the frame is now (offset from the page's start, length), after the program may
    /// have moved its start (`bpf_xdp_adjust_head`) or end (`bpf_xdp_adjust_tail`). `EINVAL`
    /// if it is not in the page (the kernel's helpers keep it there).
    pub fn frame(&self) -> Result<(u32, u32)> {
        let start = self.raw.data_hard_start as usize;
        let (data, end) = (self.raw.data as usize, self.raw.data_end as usize);
        let off = data.checked_sub(start).ok_or(EINVAL)?;
        let len = end.checked_sub(data).ok_or(EINVAL)?;
        if off
            .checked_add(len)
            .is_none_or(|e| e > self.page.size() as usize)
        {
            return Err(EINVAL);
        }
        Ok((off as u32, len as u32))
    }

    /// The page back (what the program wrote stays in it).
    pub fn into_page(self) -> PoolPage {
        self.page
    }

    /// Carries out the XDP_REDIRECT `prog` just returned for this buffer
    /// (`xdp_do_redirect()`), in the same NAPI poll: on success the frame, and its page, belong
    /// to the target (a CPU map, a device map, an AF_XDP socket), which returns the page to its
    /// pool through the queue's memory model; the driver calls [`flush_redirects`] before the
    /// poll ends. On failure the page comes back.
    pub fn redirect(
        mut self,
        dev: &Device,
        prog: &BpfProg,
        _napi: &NapiContext,
    ) -> core::result::Result<(), PoolPage> {
        // SAFETY: The device and program are live, the buffer is the one `prog` just ran on in
        // this NAPI poll (whose BH-disabled section holds the redirect target the program
        // chose, and the flush list).
        let r = unsafe { ksys::xdp_do_redirect(dev.as_raw(), &mut self.raw, prog.raw.as_ptr()) };
        if r != 0 {
            return Err(self.page);
        }
        // The page's reference went with the frame (returned to the pool by whoever frees it).
        let _ = self.page.into_raw();
        Ok(())
    }
}

/// Sends what [`XdpBuff::redirect`] queued in this NAPI poll on its way (`xdp_do_flush()`):
/// once per poll that redirected, before it returns.
pub fn flush_redirects(_napi: &NapiContext) {
    // SAFETY: In a NAPI poll (`_napi`): the per-CPU flush lists are this poll's.
    unsafe { ksys::xdp_do_flush() };
}
