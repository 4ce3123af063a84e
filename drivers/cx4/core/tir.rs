// SPDX-License-Identifier: GPL-2.0
//! Transport interface receive objects (en/tir.c): where a steering entry delivers a frame.
//! A direct TIR hands it to one RQ; an indirect one hashes the selected header fields
//! (Toeplitz) and picks the RQ from an RQT. Both live in the function's transport domain,
//! whose own traffic they can refuse (self-loopback blocking).

use cx4_hw::{
    command,
    tir::{
        disp_type,
        rx_hash_fn,
        self_lb_block,
        Tirc,
        TOEPLITZ_KEY_LEN, //
    },
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// The LRO settings of a TIR (the Ethernet layer's en/lro.rs chooses them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TirLro {
    /// `packet_merge_mask`.
    pub(crate) mask: u8,
    /// `lro_max_ip_payload_size` (256-byte units).
    pub(crate) max_ip_payload: u8,
    /// `lro_timeout_period_usecs`.
    pub(crate) timeout_us: u16,
}

/// The receive hash of an indirect TIR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TirHash {
    /// The Toeplitz key.
    pub(crate) key: [u8; TOEPLITZ_KEY_LEN],
    /// `l3_prot_type` (`cx4_hw::tir::l3_prot_type`).
    pub(crate) l3_prot_type: u8,
    /// `l4_prot_type` (`cx4_hw::tir::l4_prot_type`).
    pub(crate) l4_prot_type: u8,
    /// `selected_fields` (`cx4_hw::tir::hash_field_sel` bits); 0 hashes nothing (every frame
    /// goes to the RQT's first entry).
    pub(crate) fields: u32,
}

/// Writes an indirect TIR's Toeplitz hash (`mlx5e_tir_builder_build_rss`).
fn set_hash(c: &mut Tirc, hash: &TirHash) {
    c.set_rx_hash_fn(rx_hash_fn::TOEPLITZ.into());
    for (i, w) in hash.key.chunks_exact(4).enumerate() {
        let w = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
        // Ten dwords: the index is always in range.
        let _ = c.set_rx_hash_toeplitz_key(i, w);
    }
    let s = c.rx_hash_field_selector_outer_mut();
    s.set_l3_prot_type(hash.l3_prot_type.into());
    s.set_l4_prot_type(hash.l4_prot_type.into());
    s.set_selected_fields(hash.fields);
}

/// A TIR. Dropping it destroys it (no flow table entry may still forward to it).
pub(crate) struct Tir {
    mdev: Arc<Mdev>,
    tirn: u32,
}

impl Tir {
    fn create(mdev: &Arc<Mdev>, fill: impl FnOnce(&mut Tirc)) -> Result<Self> {
        let mut m = input::<command::CreateTir>(0)?;
        fill(m.ctx_mut());
        let out = mdev.cmdq.exec::<command::CreateTir>(&m, 0)?;
        Ok(Self {
            mdev: mdev.clone(),
            tirn: out.tirn(),
        })
    }

    /// A direct TIR to RQ `rqn` (`mlx5e_tir_builder_build_direct`).
    pub(crate) fn create_direct(mdev: &Arc<Mdev>, tdn: u32, rqn: u32) -> Result<Self> {
        Self::create(mdev, |c| {
            c.set_transport_domain(tdn);
            c.set_disp_type(disp_type::DIRECT.into());
            c.set_inline_rqn(rqn);
            c.set_rx_hash_fn(rx_hash_fn::INVERTED_XOR8.into());
        })
    }

    /// A channel's direct TIR over its one-entry RQT `rqtn` (`mlx5e_tir_builder_build_rqt`
    /// and `_build_direct`, as en/rx_res.c builds them): the RQT is redirected in place
    /// (MODIFY_RQT) when the channel's receive queue changes, e.g. to its XSK RQ.
    pub(crate) fn create_direct_rqt(mdev: &Arc<Mdev>, tdn: u32, rqtn: u32) -> Result<Self> {
        Self::create(mdev, |c| {
            c.set_transport_domain(tdn);
            c.set_disp_type(disp_type::INDIRECT.into());
            c.set_indirect_table(rqtn);
            c.set_rx_hash_fn(rx_hash_fn::INVERTED_XOR8.into());
        })
    }

    /// An indirect TIR hashing into RQT `rqtn` (`mlx5e_tir_builder_build_rqt` +
    /// `_build_rss`), merging TCP segments as `lro` says (`_build_packet_merge`).
    pub(crate) fn create_indirect(
        mdev: &Arc<Mdev>,
        tdn: u32,
        rqtn: u32,
        hash: &TirHash,
        lro: Option<&TirLro>,
    ) -> Result<Self> {
        Self::create(mdev, |c| {
            if let Some(l) = lro {
                c.set_packet_merge_mask(l.mask.into());
                c.set_lro_max_ip_payload_size(l.max_ip_payload.into());
                c.set_lro_timeout_period_usecs(l.timeout_us.into());
            }
            c.set_transport_domain(tdn);
            c.set_disp_type(disp_type::INDIRECT.into());
            c.set_indirect_table(rqtn);
            set_hash(c, hash);
        })
    }

    /// Hashes as `hash` says from now on, in place (MODIFY_TIR with the `hash` bit, as
    /// `mlx5e_rss_set_hash` does when `ethtool -X` changes the key): no frame is steered
    /// elsewhere while it changes, and the netdev stays up.
    pub(crate) fn set_hash(&self, hash: &TirHash) -> Result {
        let mut m = input::<command::ModifyTir>(0)?;
        m.set_tirn(self.tirn);
        m.bitmask_mut().set_hash(1);
        set_hash(m.ctx_mut(), hash);
        self.mdev.cmdq.exec::<command::ModifyTir>(&m, 0).map(|_| ())
    }

    /// The TIR number.
    pub(crate) fn tirn(&self) -> u32 {
        self.tirn
    }

    /// Blocks (or lets through) unicast and multicast frames sent by the same transport
    /// domain (en_common.c `mlx5e_refresh_tirs`; mlx5e blocks neither in normal operation).
    pub(crate) fn set_self_lb_block(&self, uc: bool, mc: bool) -> Result {
        let mut m = input::<command::ModifyTir>(0)?;
        m.set_tirn(self.tirn);
        m.bitmask_mut().set_self_lb_en(1);
        let mut lb = 0u8;
        if uc {
            lb |= self_lb_block::BLOCK_UNICAST;
        }
        if mc {
            lb |= self_lb_block::BLOCK_MULTICAST;
        }
        m.ctx_mut().set_self_lb_block(lb.into());
        self.mdev.cmdq.exec::<command::ModifyTir>(&m, 0).map(|_| ())
    }
}

impl Drop for Tir {
    fn drop(&mut self) {
        if let Ok(mut m) = input::<command::DestroyTir>(0) {
            m.set_tirn(self.tirn);
            let _ = self.mdev.cmdq.exec::<command::DestroyTir>(&m, 0);
        }
    }
}
