// SPDX-License-Identifier: GPL-2.0
//! The card's RoCE address table (mlx5_ib main.c `set_roce_addr`, core/gid.c
//! `mlx5_core_roce_gid_set`): the RDMA core manages the GID table from the netdev's
//! addresses, and each entry it adds or deletes is written to the same index of the card's
//! table with `SET_ROCE_ADDRESS`, so the card knows the source MAC, VLAN, IP and RoCE version
//! of every GID a QP may use.

use cx4_hw::{
    command,
    roce::{
        roce_l3_type,
        roce_version, //
    },
};
use ib::{
    GidAttr,
    GidType, //
};
use kernel::prelude::*;

use crate::{
    cmd::input,
    mdev::Mdev, //
};

/// What one table entry holds; all zero clears it.
pub(crate) struct RoceAddr {
    /// The GID (an IPv4 address mapped as `::ffff:a.b.c.d`).
    pub(crate) gid: [u8; 16],
    /// Source MAC.
    pub(crate) mac: [u8; 6],
    /// VLAN ID, if tagged.
    pub(crate) vlan: Option<u16>,
    /// `roce_version::V1` or `V2`.
    pub(crate) version: u8,
    /// `roce_l3_type::IPV4` or `IPV6`.
    pub(crate) l3_type: u8,
}

impl RoceAddr {
    /// The entry for a GID the core adds: RoCE v1 for `IB_GID_TYPE_ROCE` (L3 type left at
    /// IPv4, as mlx5_ib does: v1 carries any GID), v2 for `IB_GID_TYPE_ROCE_UDP_ENCAP` with
    /// the L3 type of the address.
    pub(crate) fn of(attr: &GidAttr) -> Result<Self> {
        let gid = attr.gid();
        let (vlan, mac) = attr.l2_fields()?;
        let version = version_of(attr)?;
        let l3_type = if version == roce_version::V2 && !is_v4_mapped(&gid) {
            roce_l3_type::IPV6
        } else {
            roce_l3_type::IPV4
        };
        Ok(Self {
            gid,
            mac,
            vlan,
            version,
            l3_type,
        })
    }

    /// The all-zero entry that clears index `attr.index()` (its version kept, as mlx5_ib).
    pub(crate) fn cleared(attr: &GidAttr) -> Result<Self> {
        Ok(Self {
            gid: [0; 16],
            mac: [0; 6],
            vlan: None,
            version: version_of(attr)?,
            l3_type: roce_l3_type::IPV4,
        })
    }
}

fn version_of(attr: &GidAttr) -> Result<u8> {
    match attr.gid_type() {
        Some(GidType::RoceV1) | Some(GidType::Ib) => Ok(roce_version::V1),
        Some(GidType::RoceV2) => Ok(roce_version::V2),
        None => Err(EINVAL),
    }
}

/// `ipv6_addr_v4mapped()`.
fn is_v4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// Writes entry `index` of the RoCE address table (`SET_ROCE_ADDRESS`).
pub(crate) fn set(mdev: &Mdev, index: u32, a: &RoceAddr) -> Result {
    let mut m = input::<command::SetRoceAddress>(0)?;
    m.set_roce_address_index(index);
    let e = m.roce_address_mut();
    e.source_l3_address_mut().copy_from_slice(&a.gid);
    e.set_source_mac(a.mac);
    if let Some(v) = a.vlan {
        e.set_vlan_valid(1);
        e.set_vlan_id(v.into());
    }
    e.set_roce_version(a.version.into());
    e.set_roce_l3_type(a.l3_type.into());
    mdev.cmdq.exec::<command::SetRoceAddress>(&m, 0).map(|_| ())
}
