// SPDX-License-Identifier: GPL-2.0
//! The ethtool flow rules (en_fs_ethtool.c) and the additional RSS contexts (en/rx_res.c's
//! `rss[1..]`, en_ethtool.c `mlx5e_create/modify/remove_rxfh_context`) of the netdev: kept
//! in the parameters across close and open (channel changes, down/up), applied in place to
//! the open steering and RSS objects. A rule naming a queue forwards to that channel's
//! direct TIR; a rule into a context to the context's TIR for the rule's traffic type; a
//! context is an RQT and TIRs of its own.

use kernel::{
    prelude::*,
    sync::ArcBorrow, //
};
use netdev::ethtool::{
    FlowSpec,
    RxfhContext,
    RxfhRequest,
    RSS_HASH_NO_CHANGE,
    RSS_HASH_TOP,
    RX_CLS_FLOW_DISC, //
};

use super::{
    rq_table,
    EnPriv,
    Open,
    Params,
    LOG_INDIR,
    RSS_KEY_LEN, //
};
use crate::{
    en::{
        ethtool::eopnotsupp,
        fs::{
            RuleDest,
            ETHTOOL_MAX_RULES, //
        },
        ntuple::Rule,
        rss::{
            DirectTir,
            HashFields,
            Rss,
            TrafficType, //
        },
    },
    tir::TirLro,
};

/// The most RSS contexts, the main one included (`MLX5E_MAX_NUM_RSS`).
pub(crate) const MAX_RSS_CONTEXTS: u32 = 16;

/// An additional RSS context as the user set it: its table (channel indices) and key; it
/// hashes the default fields.
#[derive(Clone, Copy)]
pub(crate) struct RssContext {
    id: u32,
    indir: [u32; 1 << LOG_INDIR],
    key: [u8; RSS_KEY_LEN],
    /// The fields each traffic type hashes (`ethtool -N rx-flow-hash ... context N`; a new
    /// context starts with the defaults, as mlx5e's `mlx5e_rss_params_init`).
    fields: HashFields,
}

impl RssContext {
    /// The context's id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// Its key.
    pub(crate) fn key(&self) -> &[u8; RSS_KEY_LEN] {
        &self.key
    }

    /// The fields each traffic type hashes.
    pub(crate) fn fields(&self) -> HashFields {
        self.fields
    }

    /// Hashes `fields` for traffic type `tt`.
    pub(crate) fn set_fields(&mut self, tt: TrafficType, fields: u32) {
        if let Some(f) = self.fields.get_mut(tt.index()) {
            *f = fields;
        }
    }

    /// Its RQT and TIRs over the open channels' RQs `rqns`.
    fn create(&self, priv_: &EnPriv, rqns: &[u32], lro: Option<&TirLro>) -> Result<Rss> {
        let fields = self.fields;
        let mut rss = Rss::create(&priv_.res, &self.key, &fields, LOG_INDIR, rqns, lro)?;
        rss.set_indir(&rq_table(&self.indir, rqns)?)?;
        Ok(rss)
    }

    /// Reports its table, key and hash function to the core.
    fn report(&self, ctx: &mut RxfhContext<'_>) {
        ctx.set_hfunc(RSS_HASH_TOP);
        for (d, s) in ctx.indir().iter_mut().zip(self.indir.iter()) {
            *d = *s;
        }
        for (d, s) in ctx.key().iter_mut().zip(self.key.iter()) {
            *d = *s;
        }
    }

    /// Takes what `rxfh` changes; `EOPNOTSUPP` for a hash function other than Toeplitz.
    fn update(&mut self, rxfh: &RxfhRequest<'_>) -> Result {
        if rxfh.hfunc() != RSS_HASH_NO_CHANGE && rxfh.hfunc() != RSS_HASH_TOP {
            return Err(eopnotsupp());
        }
        if let Some(t) = rxfh.indir() {
            if t.len() != self.indir.len() {
                return Err(EINVAL);
            }
            self.indir.copy_from_slice(t);
        }
        if let Some(k) = rxfh.key() {
            let n = k.len().min(RSS_KEY_LEN);
            self.key[..n].copy_from_slice(&k[..n]);
        }
        Ok(())
    }
}

/// The TIR a rule delivers to in the open objects (`flow_get_tirn`): `ENOENT` for a context
/// that does not exist, `EINVAL` for a queue without a channel or a flow type without a TIR.
fn rule_dest(open: &Open, r: &Rule) -> Result<RuleDest> {
    if r.spec.ring_cookie() == RX_CLS_FLOW_DISC {
        return Ok(RuleDest::Drop);
    }
    if r.delivers_to_context() {
        let rss = if r.context == 0 {
            open.rss.as_ref()
        } else {
            open.contexts
                .iter()
                .find(|(id, _)| *id == r.context)
                .map(|(_, rss)| rss)
        };
        let tt = r.traffic_type();
        return Ok(RuleDest::Tir(rss.ok_or(ENOENT)?.tirn(tt?)));
    }
    let q = usize::try_from(r.spec.ring_cookie()).map_err(|_| EINVAL)?;
    Ok(RuleDest::Tir(open.direct.get(q).ok_or(EINVAL)?.tirn()))
}

impl EnPriv {
    /// Opens what the rules need and installs them (from `open_locked`, after the steering):
    /// a direct TIR per channel, each context's RQT and TIRs.
    pub(super) fn open_rules(
        &self,
        open: &mut Open,
        p: &Params,
        rqns: &[u32],
        lro: Option<&TirLro>,
    ) -> Result {
        open.direct.reserve(rqns.len(), GFP_KERNEL)?;
        for &rqn in rqns {
            open.direct
                .push(DirectTir::create(&self.res, rqn)?, GFP_KERNEL)?;
        }
        open.contexts.reserve(p.contexts.len(), GFP_KERNEL)?;
        for c in p.contexts.iter() {
            let rss = c.create(self, rqns, lro)?;
            open.contexts.push((c.id, rss), GFP_KERNEL)?;
        }
        for r in p.rules.iter() {
            let d = rule_dest(open, r)?;
            open.fs.as_mut().ok_or(EINVAL)?.set_rule(r.index, &r.m, d)?;
        }
        Ok(())
    }

    /// How many rules there are (`ETHTOOL_GRXCLSRLCNT`).
    pub(crate) fn rule_count(&self) -> u32 {
        self.state.lock().params.rules.len() as u32
    }

    /// The rule at `location` and its RSS context (`mlx5e_ethtool_get_flow`): `EINVAL` past
    /// the table, `ENOENT` if there is none.
    pub(crate) fn rule(&self, location: u32) -> Result<(FlowSpec, u32)> {
        if location >= ETHTOOL_MAX_RULES {
            return Err(EINVAL);
        }
        let g = self.state.lock();
        let r = g
            .params
            .rules
            .iter()
            .find(|r| r.spec.location() == location);
        let r = r.ok_or(ENOENT)?;
        Ok((
            r.spec,
            if r.delivers_to_context() {
                r.context
            } else {
                0
            },
        ))
    }

    /// Fills `locs` with the rules' locations, in order (`mlx5e_ethtool_get_all_flows`);
    /// returns the table size. `EINVAL` if there are fewer rules than `locs` asks for.
    pub(crate) fn rule_locs(&self, locs: &mut [u32]) -> Result<u32> {
        let g = self.state.lock();
        if g.params.rules.len() < locs.len() {
            return Err(EINVAL);
        }
        for (d, r) in locs.iter_mut().zip(g.params.rules.iter()) {
            *d = r.spec.location();
        }
        Ok(ETHTOOL_MAX_RULES)
    }

    /// Inserts the rule `spec` (into RSS context `context` with `FLOW_RSS`), replacing the
    /// one at its location, which goes first as in mlx5e (`mlx5e_ethtool_flow_replace`).
    pub(crate) fn insert_rule(this: ArcBorrow<'_, Self>, spec: &FlowSpec, context: u32) -> Result {
        let mut g = this.state.lock();
        let g = &mut *g;
        let rule = Rule::new(spec, context, g.params.channels)?;
        // No ethtool namespace without the chaining caps (mlx5e's `get_flow_table`).
        if !this.res.caps().ntuple {
            return Err(eopnotsupp());
        }
        Self::remove_rule(g.open.as_mut(), &mut g.params, spec.location());
        if rule.delivers_to_context() {
            if context != 0 && !g.params.contexts.iter().any(|c| c.id == context) {
                return Err(ENOENT);
            }
            rule.traffic_type()?;
        }
        if let Some(open) = g.open.as_mut() {
            let d = rule_dest(open, &rule)?;
            open.fs
                .as_mut()
                .ok_or(EINVAL)?
                .set_rule(rule.index, &rule.m, d)?;
        }
        g.params.rules.push(rule, GFP_KERNEL)?;
        g.params.rules.sort_unstable_by_key(|r| r.spec.location());
        Ok(())
    }

    /// Deletes the rule at `location` (`mlx5e_ethtool_flow_remove`): `ENOSPC` past the
    /// table, `ENOENT` if there is none.
    pub(crate) fn delete_rule(&self, location: u32) -> Result {
        if location >= ETHTOOL_MAX_RULES {
            return Err(ENOSPC);
        }
        let mut g = self.state.lock();
        let g = &mut *g;
        if Self::remove_rule(g.open.as_mut(), &mut g.params, location) {
            Ok(())
        } else {
            Err(ENOENT)
        }
    }

    /// Removes the rule at `location` from the parameters and the open steering; whether
    /// there was one.
    fn remove_rule(open: Option<&mut Open>, p: &mut Params, location: u32) -> bool {
        let Some(at) = p.rules.iter().position(|r| r.spec.location() == location) else {
            return false;
        };
        if let Ok(r) = p.rules.remove(at) {
            if let Some(fs) = open.and_then(|o| o.fs.as_mut()) {
                fs.remove_rule(r.index);
            }
        }
        true
    }

    /// Creates RSS context `rxfh.context()` (`create`: `mlx5e_create_rxfh_context`; the
    /// table the user gave or an even spread over the channels, the given key or the main
    /// one; its RQT and TIRs at once if the netdev is up) or changes it in place
    /// (`mlx5e_modify_rxfh_context`: MODIFY_RQT, MODIFY_TIR); reports it in `ctx`.
    pub(crate) fn set_context(
        this: ArcBorrow<'_, Self>,
        ctx: &mut RxfhContext<'_>,
        rxfh: &RxfhRequest<'_>,
        create: bool,
    ) -> Result {
        let mut g = this.state.lock();
        let g = &mut *g;
        let id = rxfh.context();
        let at = g.params.contexts.iter().position(|c| c.id == id);
        let mut c = match at.and_then(|i| g.params.contexts.get(i)) {
            Some(c) if !create => *c,
            _ if !create => return Err(ENOENT),
            _ => {
                let n = g.params.channels.max(1);
                RssContext {
                    id,
                    indir: core::array::from_fn(|i| i as u32 % n),
                    key: g.params.key,
                    fields: TrafficType::default_fields(),
                }
            }
        };
        c.update(rxfh)?;
        g.params.contexts.reserve(1, GFP_KERNEL)?;
        if let Some(open) = g.open.as_mut() {
            let rqns = open.rqns()?;
            if let Some((_, rss)) = open.contexts.iter_mut().find(|(i, _)| *i == id) {
                if rxfh.indir().is_some() {
                    rss.set_indir(&rq_table(&c.indir, &rqns)?)?;
                }
                if rxfh.key().is_some() {
                    rss.set_key(&c.key)?;
                }
            } else {
                let lro = this.lro(&g.params);
                let rss = c.create(&this, &rqns, lro.as_ref())?;
                open.contexts.push((id, rss), GFP_KERNEL)?;
            }
        }
        match at.and_then(|i| g.params.contexts.get_mut(i)) {
            Some(old) => *old = c,
            None => g.params.contexts.push(c, GFP_KERNEL)?,
        }
        c.report(ctx);
        Ok(())
    }

    /// Removes RSS context `id` (`mlx5e_rx_res_rss_destroy`): `EBUSY` while a rule delivers
    /// into it.
    pub(crate) fn remove_context(&self, id: u32) -> Result {
        let mut g = self.state.lock();
        let g = &mut *g;
        if g.params
            .rules
            .iter()
            .any(|r| r.delivers_to_context() && r.context == id)
        {
            return Err(EBUSY);
        }
        let at = g.params.contexts.iter().position(|c| c.id == id);
        g.params.contexts.remove(at.ok_or(ENOENT)?)?;
        if let Some(open) = g.open.as_mut() {
            // Dropping it destroys its TIRs, then its RQT.
            open.contexts.retain(|(i, _)| *i != id);
        }
        Ok(())
    }
}

impl Open {
    /// The open channels' RQ numbers, by channel (a channel's XSK RQ while it has one).
    pub(super) fn rqns(&self) -> Result<KVec<u32>> {
        let mut v = KVec::with_capacity(self.channels.len(), GFP_KERNEL)?;
        for c in self.channels.iter() {
            v.push(c.rqn(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// Points everything that delivers to channel `ix` at its RQ now ([`Channel::rqn`]: the
    /// XSK RQ that was just opened, or the regular RQ again), in place: the RSS table and
    /// each context's (MODIFY_RQT), the channel's direct TIR's RQT (en/rx_res.c
    /// `mlx5e_rx_res_xsk_update`). No frame is lost to a closed queue meanwhile: both RQs
    /// are open while this runs.
    ///
    /// [`Channel::rqn`]: crate::en::channel::Channel::rqn
    pub(super) fn redirect_channel(&mut self, p: &Params, ix: u32) -> Result {
        let rqns = self.rqns()?;
        let rqn = *rqns.get(ix as usize).ok_or(EINVAL)?;
        if let Some(rss) = self.rss.as_mut() {
            rss.set_indir(&rq_table(&p.indir, &rqns)?)?;
        }
        for (id, rss) in self.contexts.iter_mut() {
            if let Some(c) = p.contexts.iter().find(|c| c.id == *id) {
                rss.set_indir(&rq_table(&c.indir, &rqns)?)?;
            }
        }
        if let Some(d) = self.direct.get(ix as usize) {
            d.redirect(rqn)?;
        }
        Ok(())
    }
}

impl EnPriv {
    /// RSS context `context` (0: the default) hashes `fields` (`hash_field_sel` bits) for
    /// traffic type `tt` from now on: MODIFY_TIR of the context's TIR if the channels are open
    /// (`mlx5e_rx_res_rss_set_hash_fields`), kept for the next open. `ENOENT` for a context
    /// that does not exist.
    pub(crate) fn set_hash_fields(
        this: ArcBorrow<'_, Self>,
        context: u32,
        tt: TrafficType,
        fields: u32,
    ) -> Result {
        let mut g = this.state.lock();
        let g = &mut *g;
        if context == 0 {
            if let Some(rss) = g.open.as_mut().and_then(|o| o.rss.as_mut()) {
                rss.set_fields(tt, &g.params.key, fields)?;
            }
            g.params.hash_fields[tt.index()] = fields;
            return Ok(());
        }
        let c = g
            .params
            .contexts
            .iter_mut()
            .find(|c| c.id() == context)
            .ok_or(ENOENT)?;
        if let Some(open) = g.open.as_mut() {
            if let Some((_, rss)) = open.contexts.iter_mut().find(|(i, _)| *i == context) {
                rss.set_fields(tt, c.key(), fields)?;
            }
        }
        c.set_fields(tt, fields);
        Ok(())
    }

    /// The fields RSS context `context` (0: the default) hashes, per traffic type; `ENOENT`
    /// for a context that does not exist.
    pub(crate) fn hash_fields(&self, context: u32) -> Result<HashFields> {
        let g = self.state.lock();
        if context == 0 {
            return Ok(g.params.hash_fields);
        }
        let c = g.params.contexts.iter().find(|c| c.id() == context);
        c.map(RssContext::fields).ok_or(ENOENT)
    }
}
