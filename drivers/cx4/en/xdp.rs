// SPDX-License-Identifier: GPL-2.0
//! XDP on the receive path (en/xdp.c `mlx5e_xdp_handle`, en_rx.c
//! `mlx5e_skb_from_cqe_linear`): a received frame, alone in its page behind
//! [`XDP_PACKET_HEADROOM`] bytes, goes through the channel's program before any skb exists.
//! XDP_PASS builds the skb where the program left the frame; XDP_DROP leaves the page in its
//! WQE for the next frame; XDP_TX sends the frame out of the channel's SQ
//! ([`TxRing::xmit_xdp`]), the page in flight until the send completes; XDP_REDIRECT hands the
//! frame and its page to the target the program chose (`xdp_do_redirect`; a CPU map, another
//! device's map, an AF_XDP socket in copy mode), flushed at the end of the poll. XDP_ABORTED,
//! unknown actions and a failed XDP_TX or XDP_REDIRECT drop the frame and fire the
//! `xdp_exception` tracepoint.
//!
//! The layout this needs (one linear page per frame, no LRO, an MTU that fits, pages mapped
//! both ways) is the netdev's to choose ([`max_mtu`]; netdev/xdp.rs).

use netdev::{
    napi::NapiContext,
    page_pool::{
        build_skb_room,
        PoolPage, //
    },
    xdp::{
        flush_redirects,
        BpfProg,
        XdpAction,
        XdpBuff,
        XdpRxq,
        XDP_PACKET_HEADROOM, //
    },
};

use crate::en::{
    netdev::TxSlot,
    port,
    stats::ChannelStats,
    tx::XdpTxError, //
};

/// The receive page size.
const PAGE: u32 = 4096;

/// The largest MTU whose frames fit one page after the XDP headroom (en/params.c
/// `mlx5e_xdp_max_mtu` for the legacy RQ: the page less the headroom, the skb's shared
/// info and the hardware MTU's extra bytes).
pub(crate) const fn max_mtu() -> u32 {
    build_skb_room(PAGE, XDP_PACKET_HEADROOM) - port::HARD_MTU
}

/// What became of a frame the program saw.
pub(crate) enum Verdict {
    /// XDP_PASS: the frame is `len` bytes at `off` in its page, which is back in the slot.
    Pass { off: u32, len: u32 },
    /// Dropped; the page is back in the slot, posted again.
    Dropped,
    /// XDP_TX: on the SQ with its page ([`XdpRx::flush`] rings the doorbell).
    Sent,
    /// XDP_REDIRECT: the target has the frame and its page ([`XdpRx::flush`] flushes).
    Redirected,
}

/// The channel's program and what it needs.
pub(crate) struct XdpRx<'a> {
    /// The program.
    pub(crate) prog: &'a BpfProg,
    /// The receive queue's registration.
    pub(crate) rxq: &'a XdpRxq,
    /// The channel's send ring, for XDP_TX.
    pub(crate) tx: Option<&'a TxSlot>,
}

impl XdpRx<'_> {
    /// Runs the program on the `len` bytes the device wrote at `headroom` in the page of
    /// `slot` (en/xdp.c `mlx5e_xdp_handle`).
    pub(crate) fn handle(
        &self,
        slot: &mut Option<PoolPage>,
        headroom: u32,
        len: u32,
        napi: &NapiContext,
        st: &ChannelStats,
    ) -> Verdict {
        let dev = napi.device();
        let Some(page) = slot.take() else {
            ChannelStats::add(&st.rx_dropped, 1);
            return Verdict::Dropped;
        };
        if page.sync_for_cpu(headroom, len).is_err() {
            *slot = Some(page);
            ChannelStats::add(&st.rx_dropped, 1);
            return Verdict::Dropped;
        }
        let mut buf = match XdpBuff::new(page, self.rxq, headroom, len) {
            Ok(b) => b,
            Err(page) => {
                *slot = Some(page);
                ChannelStats::add(&st.rx_dropped, 1);
                return Verdict::Dropped;
            }
        };
        let act = self.prog.run(&mut buf, napi);
        let frame = buf.frame();
        let act = match (act, frame) {
            (XdpAction::Redirect, Ok(_)) => match buf.redirect(dev, self.prog, napi) {
                Ok(()) => {
                    ChannelStats::add(&st.rx_xdp_redirect, 1);
                    return Verdict::Redirected;
                }
                Err(page) => {
                    *slot = Some(page);
                    XdpAction::Redirect
                }
            },
            (a, f) => {
                *slot = Some(buf.into_page());
                match (a, f) {
                    (XdpAction::Pass, Ok((off, len))) => return Verdict::Pass { off, len },
                    (XdpAction::Tx, Ok((off, len))) => match self.xmit(slot, off, len, st) {
                        Ok(()) => {
                            ChannelStats::add(&st.rx_xdp_tx_xmit, 1);
                            return Verdict::Sent;
                        }
                        Err(()) => XdpAction::Tx,
                    },
                    (XdpAction::Invalid(a), _) => {
                        self.prog.warn_invalid_action(dev, XdpAction::Invalid(a));
                        XdpAction::Invalid(a)
                    }
                    (a, _) => a,
                }
            }
        };
        if act != XdpAction::Drop {
            self.prog.trace_exception(dev, act);
        }
        ChannelStats::add(&st.rx_xdp_drop, 1);
        // The page stays posted: what the program wrote anywhere in it (the headroom too)
        // goes back to the device first.
        if let Some(p) = slot.as_ref() {
            let _ = p.sync_for_device(0, build_skb_room(p.size(), 0));
        }
        Verdict::Dropped
    }

    /// XDP_TX: the frame goes to the channel's SQ; on failure the page is back in `slot`.
    fn xmit(
        &self,
        slot: &mut Option<PoolPage>,
        off: u32,
        len: u32,
        st: &ChannelStats,
    ) -> core::result::Result<(), ()> {
        let (Some(tx), Some(page)) = (self.tx, slot.take()) else {
            ChannelStats::add(&st.rx_xdp_tx_err, 1);
            return Err(());
        };
        let mut ring = tx.lock();
        let r = match &mut *ring {
            Some(r) => r.xmit_xdp(page, off, len),
            None => Err((page, XdpTxError::Err)),
        };
        match r {
            Ok(()) => Ok(()),
            Err((page, e)) => {
                *slot = Some(page);
                let c = match e {
                    XdpTxError::Full => &st.rx_xdp_tx_full,
                    XdpTxError::Err => &st.rx_xdp_tx_err,
                };
                ChannelStats::add(c, 1);
                Err(())
            }
        }
    }

    /// Rings the SQ's doorbell for the frames this poll sent and flushes what it redirected
    /// (en/xdp.c `mlx5e_xdp_rx_poll_complete`).
    pub(crate) fn flush(
        &self,
        sent: bool,
        redirected: bool,
        napi: &NapiContext,
        st: &ChannelStats,
    ) {
        if let (true, Some(t)) = (sent, self.tx) {
            if let Some(r) = &mut *t.lock() {
                r.xdp_flush(st);
            }
        }
        if redirected {
            flush_redirects(napi);
        }
    }
}
