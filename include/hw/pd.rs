// SPDX-License-Identifier: GPL-2.0
//! Protection domains and transport domains.

use crate::bits::ifc_layouts;

ifc_layouts! {
    /// Input of `ALLOC_PD`.
    pub struct AllocPdIn: Ifc "alloc_pd_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `ALLOC_PD`: the protection domain number.
    pub struct AllocPdOut: Ifc "alloc_pd_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        pd, set_pd: u32 @ 0x048, 0x18;
    }

    /// Input of `DEALLOC_PD`.
    pub struct DeallocPdIn: Ifc "dealloc_pd_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        pd, set_pd: u32 @ 0x048, 0x18;
    }

    /// Output of `DEALLOC_PD`.
    pub struct DeallocPdOut: Ifc "dealloc_pd_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }

    /// Input of `ALLOC_TRANSPORT_DOMAIN`.
    pub struct AllocTransportDomainIn: Ifc "alloc_transport_domain_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
    }

    /// Output of `ALLOC_TRANSPORT_DOMAIN`: the transport domain number.
    pub struct AllocTransportDomainOut: Ifc "alloc_transport_domain_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        transport_domain, set_transport_domain: u32 @ 0x048, 0x18;
    }

    /// Input of `DEALLOC_TRANSPORT_DOMAIN`.
    pub struct DeallocTransportDomainIn: Ifc "dealloc_transport_domain_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        uid, set_uid: u32 @ 0x010, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        transport_domain, set_transport_domain: u32 @ 0x048, 0x18;
    }

    /// Output of `DEALLOC_TRANSPORT_DOMAIN`.
    pub struct DeallocTransportDomainOut: Ifc "dealloc_transport_domain_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The object numbers are 24-bit fields at bit 0x48 (low three bytes of dword 2).
    #[test]
    fn object_numbers_sit_in_dword_2() {
        let mut o = AllocPdOut::new();
        o.set_pd(0xabcdef);
        assert_eq!(&o.0[8..12], &[0, 0xab, 0xcd, 0xef]);
        let mut i = DeallocTransportDomainIn::new();
        i.set_opcode(crate::opcode::DEALLOC_TRANSPORT_DOMAIN.into());
        i.set_transport_domain(0x1ff_ffff);
        assert_eq!(&i.0[..2], &[0x08, 0x17]);
        assert_eq!(&i.0[8..12], &[0, 0xff, 0xff, 0xff]);
    }
}
