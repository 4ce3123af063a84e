//! ACCESS_REG: the port and host registers the mlx5 drivers read and write.

use cx4_hw::regs::{
    id, port_status, AccessRegisterIn, HostEndiannessReg, PaosReg, PmtuReg, PpcntReg, PtysProto,
    PtysReg, ACCESS_REG_READ, ACCESS_REG_WRITE,
};
use zerocopy::FromBytes;

use super::{fail, req, CmdResult, Firmware};

/// 100GBASE_CR4 in the legacy `eth_proto` bit mask (ConnectX-4).
pub const ETH_100GBASE_CR4: u32 = 1 << 20;
/// 25GBASE_CR in the legacy `eth_proto` bit mask (ConnectX-4 Lx).
pub const ETH_25GBASE_CR: u32 = 1 << 27;
/// Largest MTU the port supports (PMTU max_mtu, L2 payload).
pub const MAX_MTU: u32 = 9978;
/// Size of the NODE_DESC register.
pub const NODE_DESC_SIZE: usize = 64;

/// Register state the firmware keeps between accesses.
#[derive(Debug, Clone)]
pub struct RegState {
    /// HOST_ENDIANNESS.he.
    pub host_endianness: Option<u8>,
    /// PAOS admin status (1 up, 2 down).
    pub admin_status: u8,
    /// PMTU admin MTU.
    pub admin_mtu: u32,
    /// PTYS supported/operational Ethernet protocol.
    pub eth_proto: u32,
    /// NODE_DESC.
    pub node_desc: [u8; NODE_DESC_SIZE],
}

impl Default for RegState {
    fn default() -> Self {
        let mut node_desc = [0u8; NODE_DESC_SIZE];
        let d = b"cx4-model ConnectX-4";
        node_desc[..d.len()].copy_from_slice(d);
        RegState {
            host_endianness: None,
            admin_status: port_status::DOWN,
            admin_mtu: 1500 + 22,
            eth_proto: ETH_100GBASE_CR4,
            node_desc,
        }
    }
}

fn view<T: FromBytes + zerocopy::KnownLayout + zerocopy::Immutable>(
    data: &[u8],
) -> Result<&T, super::CmdError> {
    match T::ref_from_prefix(data) {
        Ok((t, _)) => Ok(t),
        Err(_) => Err(super::CmdError::new(
            cx4_hw::status::BAD_INP_LEN,
            "register data too short",
            "",
        )),
    }
}

impl Firmware {
    pub(super) fn access_reg(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = req::<AccessRegisterIn>(input)?;
        let reg = inp.register_id() as u16;
        let write = match inp.op_mod() as u16 {
            ACCESS_REG_WRITE => true,
            ACCESS_REG_READ => false,
            m => fail!(
                BAD_PARAM,
                "ACCESS_REG with an unknown op_mod",
                "op_mod {m:#x}"
            ),
        };
        let data = &input[AccessRegisterIn::SIZE..];
        let reply = out.get_mut(0x10..).unwrap_or(&mut []);
        let r = &mut self.regs;
        match (reg, write) {
            (id::HOST_ENDIANNESS, true) => {
                r.host_endianness = Some(view::<HostEndiannessReg>(data)?.he() as u8);
            }
            (id::HOST_ENDIANNESS, false) => {
                copy_reg(reply, |b: &mut HostEndiannessReg| {
                    b.set_he(r.host_endianness.unwrap_or(0).into())
                });
            }
            (id::PTYS, false) => {
                let q = view::<PtysReg>(data)?;
                if q.local_port() != 1 {
                    fail!(
                        BAD_PARAM,
                        "PTYS of a port that does not exist",
                        "port {}",
                        q.local_port()
                    );
                }
                if q.proto_mask() & u32::from(PtysProto::EN.bits()) == 0 {
                    fail!(
                        BAD_PARAM,
                        "PTYS for a protocol the port does not run",
                        "mask {:#x}",
                        q.proto_mask()
                    );
                }
                let up = r.admin_status == port_status::UP;
                let proto = r.eth_proto;
                copy_reg(reply, |b: &mut PtysReg| {
                    b.set_local_port(1);
                    b.set_proto_mask(PtysProto::EN.bits().into());
                    b.set_eth_proto_capability(proto);
                    b.set_eth_proto_admin(proto);
                    b.set_eth_proto_oper(if up { proto } else { 0 });
                    b.set_connector_type(0x1); // copper (DAC)
                });
            }
            (id::PTYS, true) => {
                let q = view::<PtysReg>(data)?;
                if q.eth_proto_admin() & !r.eth_proto != 0 {
                    fail!(
                        BAD_PARAM,
                        "PTYS admin protocol the port does not support",
                        "{:#x}",
                        q.eth_proto_admin()
                    );
                }
            }
            (id::PAOS, true) => {
                let q = view::<PaosReg>(data)?;
                if q.ase() != 0 {
                    match q.admin_status() as u8 {
                        s @ (port_status::UP | port_status::DOWN) => r.admin_status = s,
                        s => fail!(BAD_PARAM, "PAOS admin status unknown", "{s}"),
                    }
                }
            }
            (id::PAOS, false) => {
                let admin = r.admin_status;
                copy_reg(reply, |b: &mut PaosReg| {
                    b.set_local_port(1);
                    b.set_admin_status(admin.into());
                    b.set_oper_status(admin.into());
                });
            }
            (id::PMTU, false) => {
                let mtu = r.admin_mtu;
                copy_reg(reply, |b: &mut PmtuReg| {
                    b.set_local_port(1);
                    b.set_max_mtu(MAX_MTU);
                    b.set_admin_mtu(mtu);
                    b.set_oper_mtu(mtu);
                });
            }
            (id::PMTU, true) => {
                let mtu = view::<PmtuReg>(data)?.admin_mtu();
                if !(68..=MAX_MTU).contains(&mtu) {
                    fail!(BAD_PARAM, "PMTU admin MTU out of range", "{mtu}");
                }
                r.admin_mtu = mtu;
            }
            (id::PPCNT, false) => {
                let q = view::<PpcntReg>(data)?;
                let grp = q.grp();
                copy_reg(reply, |b: &mut PpcntReg| {
                    b.set_local_port(1);
                    b.set_grp(grp);
                });
            }
            (id::NODE_DESC, false) => {
                let n = reply.len().min(NODE_DESC_SIZE);
                reply[..n].copy_from_slice(&r.node_desc[..n]);
            }
            (id::NODE_DESC, true) => {
                let n = data.len().min(NODE_DESC_SIZE);
                r.node_desc = [0; NODE_DESC_SIZE];
                r.node_desc[..n].copy_from_slice(&data[..n]);
            }
            _ => fail!(
                BAD_PARAM,
                "ACCESS_REG of an unsupported register",
                "{} ({reg:#x}) {}",
                id::register_name(reg),
                if write { "write" } else { "read" }
            ),
        }
        Ok(())
    }
}

/// Builds a register image with `f` and copies as much as fits into the reply.
fn copy_reg<
    T: FromBytes + zerocopy::IntoBytes + zerocopy::KnownLayout + zerocopy::Immutable + Default,
>(
    reply: &mut [u8],
    f: impl FnOnce(&mut T),
) {
    let mut t = T::default();
    f(&mut t);
    let b = t.as_bytes();
    let n = reply.len().min(b.len());
    reply[..n].copy_from_slice(&b[..n]);
}
