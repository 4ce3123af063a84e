// SPDX-License-Identifier: GPL-2.0
//! Access registers: the `ACCESS_REG` command, register ids and the register layouts the
//! upstream drivers use on a ConnectX-4 Ethernet port.

use crate::bits::ifc_layouts;

/// `op_mod` of `ACCESS_REG` to write a register (port.c: `op_mod = !write`).
pub const ACCESS_REG_WRITE: u16 = 0;
/// `op_mod` of `ACCESS_REG` to read a register.
pub const ACCESS_REG_READ: u16 = 1;
/// `he` of [`HostEndiannessReg`] on a little-endian host (`MLX5_SET_HOST_ENDIANNESS`).
pub const HOST_ENDIANNESS_LITTLE: u8 = 0;
/// `he` of [`HostEndiannessReg`] on a big-endian host (`MLX5_SET_HOST_ENDIANNESS`).
pub const HOST_ENDIANNESS_BIG: u8 = 0x80;

ifc_layouts! {
    /// Input of `ACCESS_REG`; `op_mod` is [`ACCESS_REG_WRITE`] or [`ACCESS_REG_READ`], the register follows in `register_data[]`.
    pub struct AccessRegisterIn: Ifc "access_register_in", 0x10 {
        opcode, set_opcode: u32 @ 0x000, 0x10;
        op_mod, set_op_mod: u32 @ 0x030, 0x10;
        register_id, set_register_id: u32 @ 0x050, 0x10;
        argument, set_argument: u32 @ 0x060, 0x20;
        register_data, set_register_data: tail u32 @ 0x080, 0x20;
    }

    /// Output of `ACCESS_REG`; the register follows in `register_data[]`.
    pub struct AccessRegisterOut: Ifc "access_register_out", 0x10 {
        status, set_status: u32 @ 0x000, 0x8;
        syndrome, set_syndrome: u32 @ 0x020, 0x20;
        register_data, set_register_data: tail u32 @ 0x080, 0x20;
    }

    /// PTYS, port type and speed (register [`id::PTYS`]).
    pub struct PtysReg: Ifc "ptys_reg", 0x40 {
        an_disable_admin, set_an_disable_admin: u32 @ 0x001, 0x1;
        an_disable_cap, set_an_disable_cap: u32 @ 0x002, 0x1;
        local_port, set_local_port: u32 @ 0x008, 0x8;
        plane_ind, set_plane_ind: u32 @ 0x018, 0x4;
        proto_mask, set_proto_mask: u32 @ 0x01d, 0x3;
        an_status, set_an_status: u32 @ 0x020, 0x4;
        data_rate_oper, set_data_rate_oper: u32 @ 0x030, 0x10;
        ext_eth_proto_capability, set_ext_eth_proto_capability: u32 @ 0x040, 0x20;
        eth_proto_capability, set_eth_proto_capability: u32 @ 0x060, 0x20;
        ib_link_width_capability, set_ib_link_width_capability: u32 @ 0x080, 0x10;
        ib_proto_capability, set_ib_proto_capability: u32 @ 0x090, 0x10;
        ext_eth_proto_admin, set_ext_eth_proto_admin: u32 @ 0x0a0, 0x20;
        eth_proto_admin, set_eth_proto_admin: u32 @ 0x0c0, 0x20;
        ib_link_width_admin, set_ib_link_width_admin: u32 @ 0x0e0, 0x10;
        ib_proto_admin, set_ib_proto_admin: u32 @ 0x0f0, 0x10;
        ext_eth_proto_oper, set_ext_eth_proto_oper: u32 @ 0x100, 0x20;
        eth_proto_oper, set_eth_proto_oper: u32 @ 0x120, 0x20;
        ib_link_width_oper, set_ib_link_width_oper: u32 @ 0x140, 0x10;
        ib_proto_oper, set_ib_proto_oper: u32 @ 0x150, 0x10;
        lane_rate_oper, set_lane_rate_oper: u32 @ 0x168, 0x14;
        connector_type, set_connector_type: u32 @ 0x17c, 0x4;
        eth_proto_lp_advertise, set_eth_proto_lp_advertise: u32 @ 0x180, 0x20;
    }

    /// PAOS, port administrative and operational status (register [`id::PAOS`]).
    pub struct PaosReg: Ifc "paos_reg", 0x10 {
        swid, set_swid: u32 @ 0x000, 0x8;
        local_port, set_local_port: u32 @ 0x008, 0x8;
        admin_status, set_admin_status: u32 @ 0x014, 0x4;
        oper_status, set_oper_status: u32 @ 0x01c, 0x4;
        ase, set_ase: u32 @ 0x020, 0x1;
        ee, set_ee: u32 @ 0x021, 0x1;
        e, set_e: u32 @ 0x03e, 0x2;
    }

    /// PMTU, port MTU (register [`id::PMTU`]).
    pub struct PmtuReg: Ifc "pmtu_reg", 0x10 {
        local_port, set_local_port: u32 @ 0x008, 0x8;
        max_mtu, set_max_mtu: u32 @ 0x020, 0x10;
        admin_mtu, set_admin_mtu: u32 @ 0x040, 0x10;
        oper_mtu, set_oper_mtu: u32 @ 0x060, 0x10;
    }

    /// PPCNT, port counters (register [`id::PPCNT`]); the counter group layout depends on `grp`.
    pub struct PpcntReg: Ifc "ppcnt_reg", 0x100 {
        swid, set_swid: u32 @ 0x000, 0x8;
        local_port, set_local_port: u32 @ 0x008, 0x8;
        pnat, set_pnat: u32 @ 0x010, 0x2;
        grp, set_grp: u32 @ 0x01a, 0x6;
        clr, set_clr: u32 @ 0x020, 0x1;
        plane_ind, set_plane_ind: u32 @ 0x034, 0x4;
        prio_tc, set_prio_tc: u32 @ 0x03b, 0x5;
        /// The counter group selected by `grp` (a union in mlx5_ifc.h).
        counter_set, counter_set_mut: bytes @ 0x040, 0x7c0;
    }

    /// NODE_DESC register ([`id::NODE_DESC`]; `struct mlx5_reg_node_desc`, infiniband/hw/mlx5
    /// main.c), 64 bytes.
    pub struct NodeDescReg: CStruct "mlx5_reg_node_desc", 0x40 {
        /// The node description, a NUL-padded string (`IB_DEVICE_NODE_DESC_MAX` bytes).
        desc, desc_mut: bytes @ 0x000, 0x200;
    }

    /// HOST_ENDIANNESS register ([`id::HOST_ENDIANNESS`]; `struct mlx5_reg_host_endianness`,
    /// core/main.c), 16 bytes.
    pub struct HostEndiannessReg: CStruct "mlx5_reg_host_endianness", 0x10 {
        /// [`HOST_ENDIANNESS_LITTLE`] or [`HOST_ENDIANNESS_BIG`].
        he, set_he: u32 @ 0x000, 0x8;
    }
}

/// Register ids (`MLX5_REG_*`, driver.h), the `register_id` of [`AccessRegisterIn`].
pub mod id {
    use crate::bits::code_table;

    code_table! { u16, "MLX5_REG_", register_name;
        QPTS = 0x4002, "QPTS";
        QETCR = 0x4005, "QETCR";
        QTCT = 0x400a, "QTCT";
        QPDPM = 0x4013, "QPDPM";
        QCAM = 0x4019, "QCAM";
        PCAP = 0x5001, "PCAP";
        PMTU = 0x5003, "PMTU";
        PTYS = 0x5004, "PTYS";
        PAOS = 0x5006, "PAOS";
        PFCC = 0x5007, "PFCC";
        PPCNT = 0x5008, "PPCNT";
        PCMR = 0x5041, "PCMR";
        PCAM = 0x507f, "PCAM";
        NODE_DESC = 0x6001, "NODE_DESC";
        HOST_ENDIANNESS = 0x7004, "HOST_ENDIANNESS";
        MTRC_CAP = 0x9040, "MTRC_CAP";
        MCQS = 0x9060, "MCQS";
        MCQI = 0x9061, "MCQI";
        MCAM = 0x907f, "MCAM";
        DTOR = 0xc00e, "DTOR";
    }
}

/// Ethernet link modes (`enum mlx5e_link_mode`, port.h): bit numbers in PTYS `eth_proto_*`.
pub mod eth_link_mode {
    use crate::bits::code_table;

    code_table! { u8, "MLX5E_", eth_link_mode_name;
        ETH_1000BASE_CX_SGMII = 0, "1000BASE_CX_SGMII";
        ETH_1000BASE_KX = 1, "1000BASE_KX";
        ETH_10GBASE_CX4 = 2, "10GBASE_CX4";
        ETH_10GBASE_KX4 = 3, "10GBASE_KX4";
        ETH_10GBASE_KR = 4, "10GBASE_KR";
        ETH_20GBASE_KR2 = 5, "20GBASE_KR2";
        ETH_40GBASE_CR4 = 6, "40GBASE_CR4";
        ETH_40GBASE_KR4 = 7, "40GBASE_KR4";
        ETH_56GBASE_R4 = 8, "56GBASE_R4";
        ETH_10GBASE_CR = 12, "10GBASE_CR";
        ETH_10GBASE_SR = 13, "10GBASE_SR";
        ETH_10GBASE_ER = 14, "10GBASE_ER";
        ETH_40GBASE_SR4 = 15, "40GBASE_SR4";
        ETH_40GBASE_LR4 = 16, "40GBASE_LR4";
        ETH_50GBASE_SR2 = 18, "50GBASE_SR2";
        ETH_100GBASE_CR4 = 20, "100GBASE_CR4";
        ETH_100GBASE_SR4 = 21, "100GBASE_SR4";
        ETH_100GBASE_KR4 = 22, "100GBASE_KR4";
        ETH_100GBASE_LR4 = 23, "100GBASE_LR4";
        ETH_100BASE_TX = 24, "100BASE_TX";
        ETH_1000BASE_T = 25, "1000BASE_T";
        ETH_10GBASE_T = 26, "10GBASE_T";
        ETH_25GBASE_CR = 27, "25GBASE_CR";
        ETH_25GBASE_KR = 28, "25GBASE_KR";
        ETH_25GBASE_SR = 29, "25GBASE_SR";
        ETH_50GBASE_CR2 = 30, "50GBASE_CR2";
        ETH_50GBASE_KR2 = 31, "50GBASE_KR2";
    }

    /// The bit of a link mode in a PTYS `eth_proto_*` mask.
    pub const fn proto_bit(mode: u8) -> u32 {
        if mode < 32 {
            1 << mode
        } else {
            0
        }
    }
}

/// PAOS `admin_status` / `oper_status` values (`enum mlx5_port_status`, driver.h).
pub mod port_status {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_PORT_", port_status_name;
        UP = 0x1, "UP";
        DOWN = 0x2, "DOWN";
    }
}

/// PPCNT counter groups (`grp`; device.h).
pub mod ppcnt_grp {
    use crate::bits::code_table;

    code_table! { u8, "MLX5_", ppcnt_grp_name;
        IEEE_802_3 = 0x0, "IEEE_802_3_COUNTERS_GROUP";
        RFC_2863 = 0x1, "RFC_2863_COUNTERS_GROUP";
        RFC_2819 = 0x2, "RFC_2819_COUNTERS_GROUP";
        RFC_3635 = 0x3, "RFC_3635_COUNTERS_GROUP";
        ETHERNET_EXTENDED = 0x5, "ETHERNET_EXTENDED_COUNTERS_GROUP";
        PER_PRIORITY = 0x10, "PER_PRIORITY_COUNTERS_GROUP";
        PER_TRAFFIC_CLASS = 0x11, "PER_TRAFFIC_CLASS_COUNTERS_GROUP";
        PHYSICAL_LAYER = 0x12, "PHYSICAL_LAYER_COUNTERS_GROUP";
        PHYSICAL_LAYER_STATISTICAL = 0x16, "PHYSICAL_LAYER_STATISTICAL_GROUP";
    }
}

bitflags::bitflags! {
    /// PTYS `proto_mask`: which protocol's fields a PTYS access covers (driver.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct PtysProto: u8 {
        /// `MLX5_PTYS_IB`: InfiniBand.
        const IB = 1 << 0;
        /// `MLX5_PTYS_EN`: Ethernet.
        const EN = 1 << 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // struct mlx5_reg_host_endianness (main.c): u8 he; u8 rsvd[15].
    #[test]
    fn host_endianness_matches_main_c() {
        assert_eq!(HostEndiannessReg::SIZE, 16);
        assert_eq!(HostEndiannessReg::FIELDS, &[("he", 0, 8)]);
        let mut r = HostEndiannessReg::new();
        r.set_he(HOST_ENDIANNESS_BIG.into());
        assert_eq!(r.0[0], 0x80);
    }

    // struct mlx5_reg_node_desc (ib/main.c): u8 desc[IB_DEVICE_NODE_DESC_MAX = 64].
    #[test]
    fn node_desc_matches_ib_main_c() {
        assert_eq!(NodeDescReg::SIZE, 64);
        assert_eq!(NodeDescReg::FIELDS, &[("desc", 0, 64 * 8)]);
        let mut r = NodeDescReg::new();
        r.desc_mut()[..3].copy_from_slice(b"cx4");
        assert_eq!(&r.0[..4], b"cx4\0");
    }

    #[test]
    fn eth_link_modes_are_ptys_bits() {
        assert_eq!(
            eth_link_mode::proto_bit(eth_link_mode::ETH_25GBASE_CR),
            1 << 27
        );
        assert_eq!(
            eth_link_mode::proto_bit(eth_link_mode::ETH_100GBASE_CR4),
            1 << 20
        );
        assert_eq!(eth_link_mode::proto_bit(40), 0);
        assert_eq!(eth_link_mode::eth_link_mode_name(27), "25GBASE_CR");
    }

    #[test]
    fn access_register_carries_register_data_after_the_header() {
        let mut msg = [0u8; AccessRegisterIn::SIZE + PtysReg::SIZE];
        {
            let (hdr, body) =
                <AccessRegisterIn as zerocopy::FromBytes>::mut_from_prefix(&mut msg[..])
                    .expect("message holds the header");
            hdr.set_opcode(crate::opcode::ACCESS_REG.into());
            hdr.set_op_mod(ACCESS_REG_READ.into());
            hdr.set_register_id(id::PTYS.into());
            let ptys = <PtysReg as zerocopy::FromBytes>::mut_from_bytes(body).unwrap();
            ptys.set_local_port(1);
            ptys.set_proto_mask(PtysProto::EN.bits().into());
        }
        assert_eq!(&msg[..4], &[0x08, 0x05, 0, 0]);
        assert_eq!(&msg[8..12], &[0, 0, 0x50, 0x04]);
        assert_eq!(&msg[0x10..0x14], &[0, 1, 0, 4]);
        assert_eq!(AccessRegisterIn::register_data(&msg, 0), Some(0x0001_0004));
    }

    // paos_reg: admin_status 4 bits at 0x14, oper_status 4 bits at 0x1c, ase at bit 0x20.
    #[test]
    fn paos_places_status_nibbles() {
        let mut r = PaosReg::new();
        r.set_local_port(1);
        r.set_admin_status(port_status::UP.into());
        r.set_oper_status(port_status::DOWN.into());
        r.set_ase(1);
        assert_eq!(&r.0[..5], &[0, 1, 0x01, 0x02, 0x80]);
    }
}
