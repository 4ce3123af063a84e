// SPDX-License-Identifier: GPL-2.0
//! Receive side scaling (en/rss.c): one RQT of `2^n` entries spreading over the channels'
//! RQs, and one indirect TIR per traffic type hashing the fields mlx5e hashes for it
//! (`rss_default_config`: addresses and ports for TCP/UDP, addresses for other IP), plus one
//! for anything else that hashes nothing and so lands on the table's first entry, like
//! mlx5e's `MLX5_TT_ANY` rule to channel 0.

use cx4_hw::tir::{
    hash_field_sel as f,
    l3_prot_type,
    l4_prot_type,
    TOEPLITZ_KEY_LEN, //
};
use kernel::prelude::*;

use crate::{
    en::res::EnRes,
    rqt::Rqt,
    tir::{
        Tir,
        TirHash,
        TirLro, //
    },
};

/// The traffic types of the TTC table, each with its own TIR (`enum mlx5_traffic_types`
/// without IPsec).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrafficType {
    /// IPv4 TCP.
    Ipv4Tcp,
    /// IPv6 TCP.
    Ipv6Tcp,
    /// IPv4 UDP.
    Ipv4Udp,
    /// IPv6 UDP.
    Ipv6Udp,
    /// Other IPv4.
    Ipv4,
    /// Other IPv6.
    Ipv6,
    /// Anything else.
    Any,
}

/// IP source and destination (`MLX5_HASH_IP`).
const HASH_IP: u32 = f::SRC_IP | f::DST_IP;
/// IP addresses and L4 ports (`MLX5_HASH_IP_L4PORTS`).
const HASH_IP_L4PORTS: u32 = HASH_IP | f::L4_SPORT | f::L4_DPORT;

impl TrafficType {
    /// Every traffic type, in TIR order.
    pub(crate) const ALL: [Self; 7] = [
        Self::Ipv4Tcp,
        Self::Ipv6Tcp,
        Self::Ipv4Udp,
        Self::Ipv6Udp,
        Self::Ipv4,
        Self::Ipv6,
        Self::Any,
    ];

    /// The position in [`TrafficType::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// `(l3_prot_type, l4_prot_type, selected_fields)` of its TIR's hash.
    pub(crate) fn hash(self) -> (u8, u8, u32) {
        use TrafficType as T;
        match self {
            T::Ipv4Tcp => (l3_prot_type::IPV4, l4_prot_type::TCP, HASH_IP_L4PORTS),
            T::Ipv6Tcp => (l3_prot_type::IPV6, l4_prot_type::TCP, HASH_IP_L4PORTS),
            T::Ipv4Udp => (l3_prot_type::IPV4, l4_prot_type::UDP, HASH_IP_L4PORTS),
            T::Ipv6Udp => (l3_prot_type::IPV6, l4_prot_type::UDP, HASH_IP_L4PORTS),
            T::Ipv4 => (l3_prot_type::IPV4, 0, HASH_IP),
            T::Ipv6 => (l3_prot_type::IPV6, 0, HASH_IP),
            T::Any => (l3_prot_type::IPV4, 0, 0),
        }
    }

    /// The fields each traffic type hashes by default (mlx5e's `rss_default_config`).
    pub(crate) fn default_fields() -> HashFields {
        Self::ALL.map(|t| t.hash().2)
    }

    /// Its TIR's hash with `key` over `fields` (`hash_field_sel` bits).
    pub(crate) fn tir_hash(self, key: &[u8; TOEPLITZ_KEY_LEN], fields: u32) -> TirHash {
        let (l3_prot_type, l4_prot_type, _) = self.hash();
        TirHash {
            key: *key,
            l3_prot_type,
            l4_prot_type,
            fields,
        }
    }
}

/// The fields each traffic type's TIR hashes (`hash_field_sel` bits), in
/// [`TrafficType::ALL`] order: the defaults, or what `ethtool -N rx-flow-hash` set.
pub(crate) type HashFields = [u32; TrafficType::ALL.len()];

/// An indirection table of `len` entries spreading evenly over `rqns`, round robin
/// (`mlx5e_rss_params_indir_init_uniform`, `ethtool_rxfh_indir_default`).
pub(crate) fn uniform_table(len: usize, rqns: &[u32]) -> Result<KVec<u32>> {
    if rqns.is_empty() {
        return Err(EINVAL);
    }
    let mut table = KVec::with_capacity(len, GFP_KERNEL)?;
    for i in 0..len {
        table.push(*rqns.get(i % rqns.len()).ok_or(EINVAL)?, GFP_KERNEL)?;
    }
    Ok(table)
}

/// The RSS objects. Dropping it destroys the TIRs, then the RQT; the flow tables forwarding
/// to the TIRs must be gone first.
pub(crate) struct Rss {
    // Field order is drop order: TIRs before the RQT they use.
    tirs: KVec<Tir>,
    rqt: Rqt,
    table: KVec<u32>,
    fields: HashFields,
}

impl Rss {
    /// Creates an RQT of `2^log_size` entries spreading evenly over `rqns`, and the TIRs
    /// hashing `fields` with `key` in the function's transport domain (merging TCP segments
    /// if `lro`).
    pub(crate) fn create(
        res: &EnRes,
        key: &[u8; TOEPLITZ_KEY_LEN],
        fields: &HashFields,
        log_size: u32,
        rqns: &[u32],
        lro: Option<&TirLro>,
    ) -> Result<Self> {
        if log_size > u32::from(res.caps().log_max_rqt_size) || rqns.is_empty() {
            return Err(EINVAL);
        }
        let size = 1usize << log_size;
        let table = uniform_table(size, rqns)?;
        let rqt = Rqt::create(res.mdev(), size as u32, &table)?;
        let mut tirs = KVec::with_capacity(TrafficType::ALL.len(), GFP_KERNEL)?;
        for (tt, f) in TrafficType::ALL.into_iter().zip(fields.iter()) {
            let hash = tt.tir_hash(key, *f);
            // On failure the TIRs made so far, then the RQT, are dropped.
            let tir = Tir::create_indirect(res.mdev(), res.tdn(), rqt.rqtn(), &hash, lro)?;
            tirs.push(tir, GFP_KERNEL)?;
        }
        Ok(Self {
            tirs,
            rqt,
            table,
            fields: *fields,
        })
    }

    /// The TIR of traffic type `tt`.
    pub(crate) fn tirn(&self, tt: TrafficType) -> u32 {
        self.tirs.get(tt.index()).map_or(0, Tir::tirn)
    }

    /// The TIRs, in [`TrafficType::ALL`] order.
    pub(crate) fn tirs(&self) -> &[Tir] {
        &self.tirs
    }

    /// The RQT number.
    pub(crate) fn rqtn(&self) -> u32 {
        self.rqt.rqtn()
    }

    /// The indirection table (RQ numbers).
    pub(crate) fn table(&self) -> &[u32] {
        &self.table
    }

    /// Spreads the table evenly over `rqns` (`mlx5e_rss_params_indir_init_uniform`).
    pub(crate) fn set_rqns(&mut self, rqns: &[u32]) -> Result {
        let table = uniform_table(self.table.len(), rqns)?;
        self.set_table(table)
    }

    /// Sets the whole indirection table (RQ numbers, as many as the table has entries).
    pub(crate) fn set_indir(&mut self, rqns: &[u32]) -> Result {
        if rqns.len() != self.table.len() {
            return Err(EINVAL);
        }
        let mut table = KVec::with_capacity(rqns.len(), GFP_KERNEL)?;
        table.extend_from_slice(rqns, GFP_KERNEL)?;
        self.set_table(table)
    }

    /// Hashes with `key` from now on: each TIR's hash is modified in place (`mlx5e_rss_set_hash`).
    pub(crate) fn set_key(&self, key: &[u8; TOEPLITZ_KEY_LEN]) -> Result {
        for ((tt, tir), f) in TrafficType::ALL
            .iter()
            .zip(self.tirs.iter())
            .zip(self.fields)
        {
            tir.set_hash(&tt.tir_hash(key, f))?;
        }
        Ok(())
    }

    /// Hashes `fields` for traffic type `tt` from now on (with `key`, the current key): its
    /// TIR's hash is modified in place (`mlx5e_rss_set_hash_fields`).
    pub(crate) fn set_fields(
        &mut self,
        tt: TrafficType,
        key: &[u8; TOEPLITZ_KEY_LEN],
        fields: u32,
    ) -> Result {
        let tir = self.tirs.get(tt.index()).ok_or(EINVAL)?;
        tir.set_hash(&tt.tir_hash(key, fields))?;
        self.fields[tt.index()] = fields;
        Ok(())
    }

    fn set_table(&mut self, table: KVec<u32>) -> Result {
        self.rqt.redirect(&table)?;
        self.table = table;
        Ok(())
    }

    /// Sets self-loopback blocking on every TIR.
    pub(crate) fn set_self_lb_block(&self, uc: bool, mc: bool) -> Result {
        for t in self.tirs.iter() {
            t.set_self_lb_block(uc, mc)?;
        }
        Ok(())
    }
}

/// A channel's direct TIR (the ethtool rules naming a queue deliver to it) over a one-entry
/// RQT (en/rx_res.c: `direct_rqt`, `direct_tir`). Dropping it destroys the TIR, then the RQT.
pub(crate) struct DirectTir {
    // Field order is drop order: the TIR before the RQT it uses.
    tir: Tir,
    rqt: Rqt,
}

impl DirectTir {
    /// The direct TIR of RQ `rqn`.
    pub(crate) fn create(res: &EnRes, rqn: u32) -> Result<Self> {
        let rqt = Rqt::create(res.mdev(), 1, &[rqn])?;
        let tir = Tir::create_direct_rqt(res.mdev(), res.tdn(), rqt.rqtn())?;
        Ok(Self { tir, rqt })
    }

    /// The TIR number.
    pub(crate) fn tirn(&self) -> u32 {
        self.tir.tirn()
    }

    /// Delivers to RQ `rqn` from now on, in place (`mlx5e_rqt_redirect_direct`).
    pub(crate) fn redirect(&self, rqn: u32) -> Result {
        self.rqt.redirect(&[rqn])
    }
}

#[kunit_tests(cx4_rss)]
#[allow(unsafe_code)] // The suite's registration, generated by the kernel's `kunit_tests` macro.
mod tests {
    use super::*;

    #[test]
    fn the_table_spreads_round_robin_over_the_queues() -> Result {
        let t = uniform_table(8, &[10, 11, 12])?;
        assert_eq!(&t[..], &[10, 11, 12, 10, 11, 12, 10, 11][..]);
        // Each queue gets its share, to within one entry.
        for rqns in [&[1u32][..], &[1, 2], &[1, 2, 3, 4, 5, 6, 7]] {
            let t = uniform_table(256, rqns)?;
            assert_eq!(t.len(), 256);
            for q in rqns {
                let n = t.iter().filter(|&&x| x == *q).count();
                assert!(n == 256 / rqns.len() || n == 256 / rqns.len() + 1);
            }
        }
        // More queues than entries: the first ones get one each.
        assert_eq!(&uniform_table(2, &[7, 8, 9])?[..], &[7, 8][..]);
        assert!(uniform_table(8, &[]).is_err());
        Ok(())
    }

    #[test]
    fn each_traffic_type_hashes_what_mlx5e_hashes() {
        // en/rss.c `rss_default_config`: TCP and UDP over the addresses and ports, other IP
        // over the addresses; the catch-all type hashes nothing.
        let ports = f::SRC_IP | f::DST_IP | f::L4_SPORT | f::L4_DPORT;
        let addrs = f::SRC_IP | f::DST_IP;
        for (i, tt) in TrafficType::ALL.iter().enumerate() {
            assert_eq!(tt.index(), i);
            let (l3, l4, fields) = tt.hash();
            let want = match tt {
                TrafficType::Ipv4Tcp => (l3_prot_type::IPV4, l4_prot_type::TCP, ports),
                TrafficType::Ipv6Tcp => (l3_prot_type::IPV6, l4_prot_type::TCP, ports),
                TrafficType::Ipv4Udp => (l3_prot_type::IPV4, l4_prot_type::UDP, ports),
                TrafficType::Ipv6Udp => (l3_prot_type::IPV6, l4_prot_type::UDP, ports),
                TrafficType::Ipv4 => (l3_prot_type::IPV4, 0, addrs),
                TrafficType::Ipv6 => (l3_prot_type::IPV6, 0, addrs),
                TrafficType::Any => (l3_prot_type::IPV4, 0, 0),
            };
            assert!((l3, l4, fields) == want);
        }
        // The PRM's selected_fields bits (mlx5_ifc.h MLX5_HASH_FIELD_SEL_*).
        assert_eq!(ports, 0xf);
    }
}
