// SPDX-License-Identifier: GPL-2.0
//! [`GidAttr`]: a GID table entry as the core adds or deletes it (`struct ib_gid_attr`).

use kernel::{
    error::to_result,
    prelude::*,
    types::Opaque, //
};

use crate::attr::GidType;

/// A GID table entry the core asks the driver to program (`add_gid`) or remove (`del_gid`).
///
/// # Invariants
///
/// Wraps a valid `ib_gid_attr` that does not change during the op (the GID cache holds it).
#[repr(transparent)]
pub struct GidAttr(Opaque<ksys::ib_gid_attr>);

impl GidAttr {
    /// # Safety
    ///
    /// `ptr` must be the entry the core passes to `add_gid`/`del_gid`, valid for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *const ksys::ib_gid_attr) -> &'a Self {
        // SAFETY: `GidAttr` is a transparent wrapper; the caller's guarantee.
        unsafe { &*ptr.cast() }
    }

    fn raw(&self) -> &ksys::ib_gid_attr {
        // SAFETY: Valid and unchanged during the op (type invariant).
        unsafe { &*self.0.get() }
    }

    /// The entry's index in the port's table (also the index in the device's own table).
    pub fn index(&self) -> u32 {
        self.raw().index.into()
    }

    /// The port.
    pub fn port(&self) -> u32 {
        self.raw().port_num
    }

    /// The GID (for RoCE an IPv6 address, IPv4 ones mapped as `::ffff:a.b.c.d`).
    pub fn gid(&self) -> [u8; 16] {
        // SAFETY: Every member of `union ib_gid` is plain bytes; `raw` spans it.
        unsafe { *self.raw().gid.raw.as_ref() }
    }

    /// The entry's type; `None` for a type this layer does not know.
    pub fn gid_type(&self) -> Option<GidType> {
        GidType::from_raw(self.raw().gid_type)
    }

    /// The VLAN ID (`None` when untagged) and source MAC of the entry's netdev
    /// (`rdma_read_gid_l2_fields()`); `ENODEV` when the netdev is gone.
    pub fn l2_fields(&self) -> Result<(Option<u16>, [u8; 6])> {
        let mut vlan = 0u16;
        let mut mac = [0u8; 6];
        // SAFETY: The entry is valid (type invariant); the outputs are writable (6 bytes for
        // the MAC, `ETH_ALEN`).
        to_result(unsafe {
            ksys::rdma_read_gid_l2_fields(self.0.get(), &mut vlan, mac.as_mut_ptr())
        })?;
        // 0xffff: no VLAN (the function's convention).
        Ok(((vlan < 0x1000).then_some(vlan), mac))
    }
}
