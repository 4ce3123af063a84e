// SPDX-License-Identifier: GPL-2.0
//! Attaching an XDP program (`ndo_bpf` `XDP_SETUP_PROG`; en_main.c `mlx5e_xdp_set`): refused
//! where the receive layout cannot give each frame a linear page (LRO on, an MTU too large);
//! the first program (and the last one's removal) switches the layout by reopening the
//! channels, a program replacing another is swapped into the running channels.

use kernel::{
    prelude::*,
    sync::ArcBorrow, //
};
use netdev::{
    xdp::XdpSetup,
    Device, //
};

use super::EnPriv;

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
}
