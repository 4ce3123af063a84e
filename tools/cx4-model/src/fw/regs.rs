//! ACCESS_REG: the port and host registers the mlx5 drivers read and write, the management
//! registers that report the firmware version (MCAM, MCQS, MCQI) and the DCB registers
//! (PFCC, QTCT, QETCR, QPTS, QPDPM, QCAM; their state and checks are in `qos.rs`).

use cx4_hw::{
    command::{self as cmds},
    counters::PfccReg,
    iseg::FwVersion,
    mng::{
        self, mcam_group, mcqi_info_type, mcqs_identifier, mcqs_update_state, McamReg, McqiCap,
        McqiReg, McqiRegData, McqiVersion, McqsReg, MCAM_FEATURE_ENHANCED_FEATURES, MCAM_REGS_NUM,
    },
    qos::{QcamReg, QetcReg, QpdpmReg, QptsReg, QtctReg},
    regs::eth_link_mode,
    regs::{
        id, port_status, AccessRegisterIn, HostEndiannessReg, PaosReg, PmtuReg, PpcntReg,
        PtysProto, PtysReg, ACCESS_REG_READ, ACCESS_REG_WRITE,
    },
};
use zerocopy::{FromBytes, IntoBytes};

use super::{cmd_in, fail, qos, Bus, CmdResult, Firmware};

/// 100GBASE_CR4 in the legacy `eth_proto` bit mask (ConnectX-4).
pub const ETH_100GBASE_CR4: u32 = eth_link_mode::proto_bit(eth_link_mode::ETH_100GBASE_CR4);
/// 25GBASE_CR in the legacy `eth_proto` bit mask (ConnectX-4 Lx).
pub const ETH_25GBASE_CR: u32 = eth_link_mode::proto_bit(eth_link_mode::ETH_25GBASE_CR);
/// Largest MTU the port supports (PMTU max_mtu, L2 payload).
pub const MAX_MTU: u32 = 9978;
/// Size of the NODE_DESC register.
pub const NODE_DESC_SIZE: usize = 64;
/// MCQS/MCQI `component_index` of the firmware boot image, the only component.
pub const BOOT_IMG_INDEX: u32 = 0;
/// MCQS `component_status` IN_USE: present and running (PRM; not in the Linux headers).
pub const MCQS_STATUS_IN_USE: u32 = 0x2;

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
    /// Running (and stored) firmware version, reported by MCQI.
    pub fw_version: FwVersion,
    /// Physical link (cable) present; set by the control socket's `link` command.
    pub link_up: bool,
    /// Carrier of the wire the port is attached to (the TAP's; always true without one).
    pub carrier: bool,
    /// DCB: PFCC (global pause, PFC), QTCT, QETCR, QPTS, QPDPM.
    pub qos: super::qos::QosState,
}

impl RegState {
    /// The port is operationally up: administratively up and the link is there.
    pub fn oper_up(&self) -> bool {
        self.admin_status == port_status::UP && self.link_up && self.carrier
    }
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
            link_up: true,
            carrier: true,
            qos: Default::default(),
            fw_version: FwVersion {
                major: 12,
                minor: 28,
                subminor: 2006,
            },
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
    pub(super) fn access_reg(&mut self, ctx: &mut Bus, input: &[u8], out: &mut [u8]) -> CmdResult {
        let was_up = self.regs.oper_up();
        self.access_reg_inner(input, out)?;
        if self.regs.oper_up() != was_up {
            self.port_change_event(ctx);
        }
        Ok(())
    }

    /// Posts a PORT_CHANGE event (ACTIVE or DOWN) for port 1, as firmware does when the
    /// operational state of the port changes.
    pub fn port_change_event(&mut self, ctx: &mut Bus) {
        if self.ib_mode() {
            // An IB port's state is the SMA's (Down, or a retrain to Init).
            self.ib_link_changed(ctx);
            return;
        }
        let sub = if self.regs.oper_up() {
            cx4_hw::eq::port_change_subtype::ACTIVE
        } else {
            cx4_hw::eq::port_change_subtype::DOWN
        };
        let mut eqe = super::new_event(cx4_hw::eq::event_type::PORT_CHANGE, sub);
        eqe.port_mut().set_port(1);
        let n = self.post_event(ctx, &eqe);
        log::info!(
            "port 1 {}: PORT_CHANGE event to {n} EQ(s)",
            if self.regs.oper_up() { "up" } else { "down" }
        );
    }

    fn access_reg_inner(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::AccessReg>(input)?;
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
        let max_tc = match self.caps.general("max_tc") {
            0 => qos::NUM_PRIO as u32,
            n => n as u32,
        };
        if matches!(reg, id::QTCT | id::QETCR | id::QPTS | id::QPDPM)
            && self.caps.general("qos") == 0
        {
            fail!(
                BAD_PARAM,
                "ACCESS_REG of a QoS register without the qos capability",
                "{}",
                id::register_name(reg)
            );
        }
        if reg == id::PCAP && self.ib_mode() {
            if write {
                return self.pcap_write(data);
            }
            self.pcap_read(reply);
            return Ok(());
        }
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
                let up = r.oper_up();
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
                let oper = if r.oper_up() {
                    port_status::UP
                } else {
                    port_status::DOWN
                };
                copy_reg(reply, |b: &mut PaosReg| {
                    b.set_local_port(1);
                    b.set_admin_status(admin.into());
                    b.set_oper_status(oper.into());
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
                let (grp, prio) = (q.grp(), q.prio_tc());
                if q.local_port() > 1 || q.pnat() != 0 {
                    fail!(
                        BAD_PARAM,
                        "PPCNT of a port that does not exist",
                        "local_port {} pnat {}",
                        q.local_port(),
                        q.pnat()
                    );
                }
                if grp == u32::from(cx4_hw::regs::ppcnt_grp::PER_PRIORITY) && prio > 7 {
                    fail!(
                        BAD_PARAM,
                        "PPCNT per-priority group of a priority above 7",
                        "{prio}"
                    );
                }
                let Some(set) = self.ppcnt_group(grp as u8, prio as u8) else {
                    fail!(
                        BAD_PARAM,
                        "PPCNT of a counter group the port does not have",
                        "grp {grp:#x}"
                    );
                };
                if q.clr() != 0 {
                    log::debug!("PPCNT clear ignored: port counters are cumulative");
                }
                copy_reg(reply, |b: &mut PpcntReg| {
                    b.set_local_port(1);
                    b.set_grp(grp);
                    b.set_prio_tc(prio);
                    let n = set.len().min(b.counter_set().len());
                    b.counter_set_mut()[..n].copy_from_slice(&set[..n]);
                });
            }
            (id::PFCC, false) => {
                let q = view::<PfccReg>(data)?;
                reply_reg(reply, |b| qos::pfcc_read(&r.qos, q, b))?;
            }
            (id::PFCC, true) => qos::pfcc_write(&mut r.qos, view::<PfccReg>(data)?)?,
            (id::QTCT, false) => {
                let q = view::<QtctReg>(data)?;
                reply_reg(reply, |b| qos::qtct_read(&r.qos, q, b))?;
            }
            (id::QTCT, true) => qos::qtct_write(&mut r.qos, view::<QtctReg>(data)?, max_tc)?,
            (id::QETCR, false) => {
                let q = view::<QetcReg>(data)?;
                reply_reg(reply, |b| qos::qetcr_read(&r.qos, q, b))?;
            }
            (id::QETCR, true) => qos::qetcr_write(&mut r.qos, view::<QetcReg>(data)?, max_tc)?,
            (id::QPTS, false) => {
                let q = view::<QptsReg>(data)?;
                reply_reg(reply, |b| qos::qpts_read(&r.qos, q, b))?;
            }
            (id::QPTS, true) => qos::qpts_write(&mut r.qos, view::<QptsReg>(data)?)?,
            (id::QPDPM, false) => {
                let q = view::<QpdpmReg>(data)?;
                reply_reg(reply, |b| qos::qpdpm_read(&r.qos, q, b))?;
            }
            (id::QPDPM, true) => qos::qpdpm_write(&mut r.qos, view::<QpdpmReg>(data)?)?,
            (id::QCAM, false) => {
                let q = view::<QcamReg>(data)?;
                reply_reg(reply, |b| qos::qcam(q, b))?;
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
            (id::MCAM, false) => mcam(view::<McamReg>(data)?, reply)?,
            (id::MCQS, false) => mcqs(view::<McqsReg>(data)?, reply)?,
            (id::MCQI, false) => mcqi(r.fw_version, view::<McqiReg>(data)?, reply)?,
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

/// MCAM: the management registers the model implements are MCQS and MCQI (group 0); every
/// other register and feature bit stays clear, so mlx5_core leaves the tracer, firmware reset,
/// hwmon, real-time clock, PTP and flashing paths off.
fn mcam(q: &McamReg, reply: &mut [u8]) -> CmdResult {
    let (feature_group, group) = (q.feature_group(), q.access_reg_group());
    if feature_group != u32::from(MCAM_FEATURE_ENHANCED_FEATURES) {
        fail!(
            BAD_PARAM,
            "MCAM of an unknown feature group",
            "{feature_group}"
        );
    }
    if group >= u32::from(MCAM_REGS_NUM) {
        fail!(
            BAD_PARAM,
            "MCAM of an unknown access register group",
            "{group}"
        );
    }
    copy_reg(reply, |b: &mut McamReg| {
        b.set_feature_group(feature_group);
        b.set_access_reg_group(group);
        if group == u32::from(mcam_group::FIRST_128) {
            b.access_regs_mut().set_mcqs(1);
            b.access_regs_mut().set_mcqi(1);
        }
    });
    Ok(())
}

/// Checks that an MCQS/MCQI access names the one component, the boot image.
fn component(index: u32, site: &'static str) -> CmdResult {
    if index != BOOT_IMG_INDEX {
        return Err(super::CmdError::new(
            cx4_hw::status::BAD_PARAM,
            site,
            format!("component index {index}"),
        ));
    }
    Ok(())
}

/// MCQS: one component, the running boot image, with no update in progress or pending.
fn mcqs(q: &McqsReg, reply: &mut [u8]) -> CmdResult {
    component(
        q.component_index(),
        "MCQS of a component that does not exist",
    )?;
    if q.fw_device() != 0 {
        fail!(
            BAD_PARAM,
            "MCQS of a device that does not exist",
            "device {}",
            q.fw_device()
        );
    }
    copy_reg(reply, |b: &mut McqsReg| {
        b.set_last_index_flag(1);
        b.set_component_index(BOOT_IMG_INDEX);
        b.set_identifier(mcqs_identifier::BOOT_IMG.into());
        b.set_component_status(MCQS_STATUS_IN_USE);
        b.set_component_update_state(mcqs_update_state::IDLE.into());
    });
    Ok(())
}

/// MCQI of the boot image: CAPABILITIES (no update path: sizes 0) and VERSION (running and
/// stored are the same image); `data_size` bytes from `offset`, clipped to the information.
fn mcqi(fw: FwVersion, q: &McqiReg, reply: &mut [u8]) -> CmdResult {
    component(
        q.component_index(),
        "MCQI of a component that does not exist",
    )?;
    let mut info = McqiRegData::new();
    let info_type = q.info_type() as u8;
    let info_size = match info_type {
        mcqi_info_type::CAPABILITIES => {
            let c = info.mcqi_caps_mut();
            c.set_supported_info_bitmask(1 << mcqi_info_type::VERSION);
            McqiCap::SIZE
        }
        mcqi_info_type::VERSION => {
            let Some(version) = mng::fw_version(fw.major, fw.minor, fw.subminor) else {
                fail!(
                    INT_ERR,
                    "firmware version does not fit MCQI",
                    "{}.{}.{}",
                    fw.major,
                    fw.minor,
                    fw.subminor
                );
            };
            let text = format!("{}.{}.{:04}", fw.major, fw.minor, fw.subminor);
            let v = info.mcqi_version_mut();
            v.set_version(version);
            v.set_version_string_length(text.len() as u32);
            v.version_string_mut()[..text.len()].copy_from_slice(text.as_bytes());
            McqiVersion::SIZE
        }
        t => fail!(
            BAD_PARAM,
            "MCQI of an unsupported info type",
            "{} ({t})",
            mcqi_info_type::mcqi_info_type_name(t)
        ),
    };
    let offset = q.offset() as usize;
    if !offset.is_multiple_of(4) || offset > info_size {
        fail!(
            BAD_PARAM,
            "MCQI offset not dword aligned or past the information",
            "offset {offset} of {info_size} bytes"
        );
    }
    let n = (q.data_size() as usize).min(info_size - offset);
    copy_reg(reply, |b: &mut McqiReg| {
        b.set_read_pending_component(q.read_pending_component());
        b.set_component_index(BOOT_IMG_INDEX);
        b.set_info_type(info_type.into());
        b.set_info_size(info_size as u32);
        b.set_offset(offset as u32);
        b.set_data_size(n as u32);
    });
    if let Some(room) = reply.get_mut(McqiReg::SIZE..) {
        let m = room.len().min(n);
        room[..m].copy_from_slice(&info.as_bytes()[offset..offset + m]);
    }
    Ok(())
}

/// Builds a register image with `f`, which may refuse the access, and copies as much as fits
/// into the reply.
fn reply_reg<
    T: FromBytes + zerocopy::IntoBytes + zerocopy::KnownLayout + zerocopy::Immutable + Default,
>(
    reply: &mut [u8],
    f: impl FnOnce(&mut T) -> CmdResult,
) -> CmdResult {
    let mut t = T::default();
    f(&mut t)?;
    let b = t.as_bytes();
    let n = reply.len().min(b.len());
    reply[..n].copy_from_slice(&b[..n]);
    Ok(())
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
