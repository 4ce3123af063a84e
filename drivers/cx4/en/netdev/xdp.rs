// SPDX-License-Identifier: GPL-2.0
//! Attaching an XDP program (`ndo_bpf` `XDP_SETUP_PROG`; en_main.c `mlx5e_xdp_set`): refused
//! where the receive layout cannot give each frame a linear page (LRO on, an MTU too large);
//! the first program (and the last one's removal) switches the layout by reopening the
//! channels, a program replacing another is swapped into the running channels. AF_XDP zero
//! copy (`XDP_SETUP_XSK_POOL`; en/xsk/pool.c `mlx5e_xsk_setup_pool`): a socket's pool bound
//! to a queue opens that channel's XSK queues beside its running ones (taken back, closes
//! them), no other channel touched, no carrier change.

use kernel::{
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
};
use netdev::{
    xdp::XdpSetup,
    xsk::XskPool,
    Device, //
};

use super::{
    EnPriv,
    Params, //
};
use crate::{
    cq::{
        Cq,
        CqParams, //
    },
    en::{
        channel::Kick,
        port,
        rq::{
            Rq,
            RqParams, //
        },
        sq::{
            Sq,
            SqParams, //
        },
        stats::ChannelStats,
        xsk::{
            self,
            XskQueues,
            XskRq,
            XskSq, //
        },
    },
};

pub(super) use crate::en::xdp::max_mtu;

impl EnPriv {
    /// Runs `prog` on every received frame from now on, or none (en_main.c
    /// `mlx5e_xdp_set`, `mlx5e_xdp_allowed`).
    pub(super) fn set_xdp(this: ArcBorrow<'_, Self>, dev: &Device, setup: XdpSetup<'_>) -> Result {
        let XdpSetup { prog, mut extack } = setup;
        let mut g = this.state.lock();
        if prog.is_some() {
            if g.params.lro {
                extack.set_msg(c"cx4: can't set XDP while LRO is on, disable it first");
                return Err(EINVAL);
            }
            if dev.mtu() > max_mtu() {
                extack.set_msg(c"cx4: MTU too large for XDP: each frame needs a page of its own");
                return Err(EINVAL);
            }
        }
        match (&g.params.xdp, prog) {
            // A program for another: same layout, no reopen.
            (Some(_), Some(prog)) => {
                if let Some(open) = &g.open {
                    for ch in open.channels.iter() {
                        ch.replace_xdp(prog.clone())?;
                    }
                }
                g.params.xdp = Some(prog);
                drop(g);
            }
            (None, None) => drop(g),
            // The first program, or none any more: the RQs change layout.
            (_, prog) => {
                drop(g);
                Self::reconfigure(this, dev, |p| {
                    p.xdp = prog;
                    Ok(())
                })?;
            }
        }
        // LRO may not come back while XDP is on, and may once it is off (`fix_features`,
        // `set_features`: they take the state lock, released above).
        dev.update_features();
        Ok(())
    }

    /// Binds `pool` to queue `qid`, or takes the queue's pool back (`None`), as mlx5e does
    /// (en/xsk/pool.c `mlx5e_xsk_enable_locked`, `mlx5e_xsk_disable_locked`): on an open
    /// netdev the channel's XSK RQ and SQ open beside its running queues and its RSS and
    /// direct TIR entries move to the XSK RQ in place (MODIFY_RQT), or move back before they
    /// close; the other channels, the carrier and the regular RQ are untouched. Refused: a
    /// queue past the channels in use, one that has a pool, chunks that do not fit a frame of
    /// the MTU, LRO on.
    pub(super) fn set_xsk_pool(
        this: ArcBorrow<'_, Self>,
        dev: &Device,
        qid: u32,
        pool: Option<XskPool>,
    ) -> Result {
        let mut g = this.state.lock();
        let g = &mut *g;
        let Some(pool) = pool else {
            // Taken out of the parameters whatever happens next: the binding waits for the
            // last handle of the pool once this returns.
            let Some(old) = g.params.xsk.get_mut(qid as usize).and_then(Option::take) else {
                return Ok(());
            };
            if let Some(open) = g.open.as_mut() {
                if let Some(ch) = open.channels.get(qid as usize).cloned() {
                    ch.route_regular();
                    let r = open.redirect_channel(&g.params, qid);
                    drop(ch.detach_xsk());
                    if r.is_err() {
                        // An entry may still name the closed XSK RQ: rebuild them all.
                        this.close_locked(dev, g);
                        Self::open_locked(this, dev, g)?;
                    }
                }
            }
            drop(old);
            return Ok(());
        };
        if qid >= g.params.channels || g.params.xsk_pool(qid).is_some() {
            return Err(EINVAL);
        }
        if g.params.lro || !xsk::pool_fits(&pool, port::sw_to_hw_mtu(dev.mtu())) {
            return Err(EINVAL);
        }
        while g.params.xsk.len() <= qid as usize {
            g.params.xsk.push(None, GFP_KERNEL)?;
        }
        pool.dma_map(this.dma_dev.get())?;
        if let Some(open) = g.open.as_mut() {
            let ch = open.channels.get(qid as usize).ok_or(EINVAL)?.clone();
            let eqn = this
                .comp
                .get(qid as usize % this.comp.len().max(1))
                .ok_or(ENODEV)?
                .eqn;
            let kick = this.kicks.get(qid as usize).ok_or(EINVAL)?;
            let st = this.stats(qid).ok_or(EINVAL)?;
            let x = this.open_xsk(dev, qid, &pool, &g.params, st, kick, eqn)?;
            ch.attach_xsk(x);
            if let Err(e) = open.redirect_channel(&g.params, qid) {
                ch.route_regular();
                let _ = open.redirect_channel(&g.params, qid);
                drop(ch.detach_xsk());
                return Err(e);
            }
        }
        if let Some(x) = g.params.xsk.get_mut(qid as usize) {
            *x = Some(pool);
        }
        Ok(())
    }

    /// `ndo_xsk_wakeup`: polls channel `qid` (which sends what the socket queued and fills
    /// the RQ from its fill ring). Atomic context: no lock but the channel's kick.
    pub(super) fn xsk_wakeup(&self, qid: u32) -> Result {
        self.kicks.get(qid as usize).ok_or(EINVAL)?.wake()
    }
}

impl Params {
    /// The pool bound to queue `ix`, if any.
    pub(crate) fn xsk_pool(&self, ix: u32) -> Option<&XskPool> {
        self.xsk.get(ix as usize).and_then(Option::as_ref)
    }

    /// The highest queue a pool is bound to, plus one (0 if none).
    pub(crate) fn xsk_queues(&self) -> u32 {
        self.xsk
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i as u32 + 1)
    }

    /// A queue whose pool's frames are smaller than `hw_mtu`, if any.
    pub(crate) fn xsk_too_small(&self, hw_mtu: u32) -> Option<usize> {
        self.xsk
            .iter()
            .position(|x| x.as_ref().is_some_and(|x| x.rx_frame_size() < hw_mtu))
    }
}

impl EnPriv {
    /// Whether the MTU may become `mtu` (en_main.c `mlx5e_change_mtu`:
    /// `mlx5e_params_validate_xdp`, `mlx5e_validate_xsk_param` for every bound pool).
    pub(super) fn mtu_allowed(&self, dev: &Device, p: &Params, mtu: u32) -> Result {
        if let Some(q) = p.xsk_too_small(port::sw_to_hw_mtu(mtu)) {
            dev_warn!(
                self.dma_dev.dev(),
                "{}: MTU {} is too large for the AF_XDP frames of queue {}\n",
                dev.name(),
                mtu,
                q
            );
            return Err(EINVAL);
        }
        if p.xdp.is_some() && mtu > max_mtu() {
            dev_warn!(
                self.dma_dev.dev(),
                "{}: MTU {} > {} is not allowed while XDP is on\n",
                dev.name(),
                mtu,
                max_mtu()
            );
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Channel `ix`'s XSK queues over `pool` (en/xsk/setup.c `mlx5e_open_xsk`): an RQ of
    /// one chunk per WQE and a second SQ, each with its own CQ on EQ `eqn` (moderated as the
    /// channel's), their completions to `kick`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open_xsk(
        &self,
        dev: &Device,
        ix: u32,
        pool: &XskPool,
        p: &Params,
        st: &ChannelStats,
        kick: &Arc<Kick>,
        eqn: u8,
    ) -> Result<XskQueues> {
        let mdev = self.res.mdev();
        let caps = self.res.caps();
        let cq_p = |log_size| CqParams {
            log_size,
            eqn,
            uar: self.res.uar(),
        };
        let rcq = Cq::create(mdev, &cq_p(p.log_rq), Some(kick.clone()))?;
        let rq = Rq::create(
            &self.res,
            &RqParams {
                log_size: p.log_rq,
                segs: 1,
                cqn: rcq.cqn(),
                vlan_strip_disable: !caps.vlan_strip,
            },
        )?;
        let rx = XskRq::new(rq, dev, ix as u16, pool, p.xdp.clone(), st)?;
        let xcq = Cq::create(mdev, &cq_p(p.log_sq), Some(kick.clone()))?;
        if caps.cq_moderation {
            let c = &p.coalesce;
            rcq.modify_moderation(c.rx_usecs, c.rx_max_frames, super::rx_cq_mode(caps))?;
            xcq.modify_moderation(c.tx_usecs, c.tx_max_frames, None)?;
        }
        let xsq = Sq::create(
            &self.res,
            &SqParams {
                log_size: p.log_sq,
                cqn: xcq.cqn(),
                tisn: self.tis.tisn(),
                allow_swp: false,
                min_inline: p.min_inline,
            },
        )?;
        Ok(XskQueues::new(rx, rcq, XskSq::new(xsq, xcq, pool)?))
    }
}
