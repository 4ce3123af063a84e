//! Capabilities as data: a profile file per card (tools/cx4-model/profiles/*.caps) sets fields
//! of the mlx5_ifc capability layouts by name; QUERY_HCA_CAP reports max and current pages,
//! SET_HCA_CAP lowers settable current values.

use std::{collections::BTreeMap, sync::OnceLock};

use cx4_hw::{
    bits::{read_any, set32, set64, Field},
    caps::{
        cap_type,
        flow::{FlowTableNicCap, FlowTablePropLayout},
        general::CmdHcaCap,
        net::{PerProtocolNetworkingOffloadCaps, QosCap, RoceCap},
        odp::{OdpCap, OdpPerTransportServiceCap, OdpSchemeCap},
        roce::AtomicCaps,
        split_query_op_mod,
        vector_calc::{CalcOp, VectorCalcCap, CAP_TYPE_VECTOR_CALC},
        HcaCapUnion,
    },
    command::{self as cmds},
};

use super::{cmd_in, cmd_out, fail, CmdResult, Firmware};

/// Why a profile was rejected.
#[derive(Debug)]
pub struct ProfileError(pub String);

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The capability pages of one card: maximum (what the card can do) and current (what the
/// driver selected with SET_HCA_CAP).
#[derive(Clone, Debug)]
pub struct CapProfile {
    /// Maximum values per cap type.
    pub max: BTreeMap<u16, Vec<u8>>,
    /// Current values per cap type.
    pub cur: BTreeMap<u16, Vec<u8>>,
}

fn section_type(name: &str) -> Option<(u16, &'static [Field])> {
    Some(match name {
        "general" => (cap_type::GENERAL, CmdHcaCap::FIELDS),
        "ethernet" => (
            cap_type::ETHERNET_OFFLOADS,
            PerProtocolNetworkingOffloadCaps::FIELDS,
        ),
        "roce" => (cap_type::ROCE, RoceCap::FIELDS),
        "atomic" => (cap_type::ATOMIC, AtomicCaps::FIELDS),
        "qos" => (cap_type::QOS, QosCap::FIELDS),
        "flow_table" => (cap_type::FLOW_TABLE, FlowTableNicCap::FIELDS),
        "odp" => (cap_type::ODP, OdpCap::FIELDS),
        // MLNX_OFED's page (upstream dropped it): the erasure-coding engine, Documentation/ec.md.
        "vector_calc" => (CAP_TYPE_VECTOR_CALC, VectorCalcCap::FIELDS),
        _ => return None,
    })
}

/// A general capability field named once, its place in the page resolved on first use
/// ([`CapProfile::general_cap`]; [`CapProfile::general`] resolves the name every call).
pub struct GeneralCap {
    name: &'static str,
    at: OnceLock<(u32, u32)>,
}

impl GeneralCap {
    /// The field `name` of `cmd_hca_cap`.
    pub const fn new(name: &'static str) -> GeneralCap {
        GeneralCap {
            name,
            at: OnceLock::new(),
        }
    }
}

/// The layout of a nested capability field, by the field's name.
fn nested_fields(name: &str) -> Option<&'static [Field]> {
    if name.starts_with("flow_table_properties_") {
        Some(FlowTablePropLayout::FIELDS)
    } else if matches!(name, "calc0" | "calc1" | "calc2" | "calc3") {
        Some(CalcOp::FIELDS)
    } else if name.ends_with("_page_fault_scheme_cap") {
        Some(OdpSchemeCap::FIELDS)
    } else if name.ends_with("_odp_caps") {
        Some(OdpPerTransportServiceCap::FIELDS)
    } else {
        None
    }
}

/// Resolves `a` or `outer.inner` to (bit offset, width) inside the page.
fn resolve(fields: &'static [Field], key: &str) -> Option<(u32, u32)> {
    let (outer, inner) = match key.split_once('.') {
        Some((o, i)) => (o, Some(i)),
        None => (key, None),
    };
    let &(_, off, w) = fields.iter().find(|f| f.0 == outer)?;
    match inner {
        None => Some((off, w)),
        Some(i) => match nested_fields(outer) {
            // `outer.inner` or deeper (`transport_page_fault_scheme_cap.rc_odp_caps.send`).
            Some(nested) => {
                let (ioff, iw) = resolve(nested, i)?;
                Some((off + ioff, iw))
            }
            // An array of 32-bit words (`lro_timer_supported_periods.0`).
            None => {
                let n: u32 = i.parse().ok()?;
                (w > 32 && w % 32 == 0 && n < w / 32).then_some((off + 32 * n, 32))
            }
        },
    }
}

fn resolve_eth(name: &str) -> (u32, u32) {
    resolve(PerProtocolNetworkingOffloadCaps::FIELDS, name).expect("known ETH cap field")
}

/// A field of the Ethernet offload capabilities that the data path reads per doorbell or
/// frame, located in its layout on first use: a read by name walks the layout's field table
/// comparing names, which costs more than a small frame's checksums.
pub struct EthCap {
    name: &'static str,
    at: OnceLock<(u32, u32)>,
}

impl EthCap {
    /// The field `name` of `PerProtocolNetworkingOffloadCaps` (`mlx5_ifc.h`).
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            at: OnceLock::new(),
        }
    }
}

fn parse_num(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

impl CapProfile {
    /// Parses a profile text; every key must name a field of its section's layout.
    pub fn parse(text: &str) -> Result<Self, ProfileError> {
        let mut max: BTreeMap<u16, Vec<u8>> = BTreeMap::new();
        let mut section: Option<(u16, &'static [Field])> = None;
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            let err = |m: String| ProfileError(format!("profile line {}: {m}", n + 1));
            if line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = Some(
                    section_type(name).ok_or_else(|| err(format!("unknown section {name:?}")))?,
                );
                max.entry(section.unwrap().0)
                    .or_insert_with(|| vec![0; HcaCapUnion::SIZE]);
                continue;
            }
            let (ty, fields) = section.ok_or_else(|| err("key before any section".into()))?;
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| err(format!("expected key = value: {line:?}")))?;
            let (k, v) = (k.trim(), v.trim());
            let (off, w) =
                resolve(fields, k).ok_or_else(|| err(format!("no field {k:?} in this section")))?;
            let val = parse_num(v).ok_or_else(|| err(format!("bad number {v:?}")))?;
            if w < 64 && val >> w != 0 {
                return Err(err(format!("{k} = {val:#x} does not fit in {w} bits")));
            }
            let page = max.get_mut(&ty).expect("section page");
            if off % 32 + w <= 32 {
                set32(page, off, w, val as u32);
            } else {
                set64(page, off, w, val);
            }
        }
        if !max.contains_key(&cap_type::GENERAL) {
            return Err(ProfileError("profile has no [general] section".into()));
        }
        let cur = max.clone();
        Ok(CapProfile { max, cur })
    }

    /// A copy with current values reset to the maximum (function reset).
    pub fn reset_current(&self) -> Self {
        CapProfile {
            max: self.max.clone(),
            cur: self.max.clone(),
        }
    }

    /// Reads a field of the general capabilities (current).
    pub fn general(&self, name: &str) -> u64 {
        let (off, w) = resolve(CmdHcaCap::FIELDS, name).expect("known general cap field");
        read_any(&self.cur[&cap_type::GENERAL], off, w).unwrap_or(0)
    }

    /// Reads the general capability `f` (current), its place looked up once for the process
    /// ([`GeneralCap`]): for paths that read one per packet.
    pub fn general_cap(&self, f: &GeneralCap) -> u64 {
        let (off, w) = *f
            .at
            .get_or_init(|| resolve(CmdHcaCap::FIELDS, f.name).expect("known general cap field"));
        read_any(&self.cur[&cap_type::GENERAL], off, w).unwrap_or(0)
    }

    /// Reads a field of the Ethernet offload capabilities (0 if the profile has none).
    pub fn eth(&self, name: &str) -> u64 {
        self.eth_at(resolve_eth(name))
    }

    /// [`CapProfile::eth`] of a field located once ([`EthCap`]).
    pub fn eth_cap(&self, field: &EthCap) -> u64 {
        self.eth_at(*field.at.get_or_init(|| resolve_eth(field.name)))
    }

    fn eth_at(&self, (off, w): (u32, u32)) -> u64 {
        self.cur
            .get(&cap_type::ETHERNET_OFFLOADS)
            .and_then(|p| read_any(p, off, w))
            .unwrap_or(0)
    }

    /// Reads a field of the RoCE capabilities (0 if the profile has none).
    pub fn roce(&self, name: &str) -> u64 {
        let (off, w) = resolve(RoceCap::FIELDS, name).expect("known RoCE cap field");
        self.cur
            .get(&cap_type::ROCE)
            .and_then(|p| read_any(p, off, w))
            .unwrap_or(0)
    }

    /// Reads a field of the atomic capabilities (0 if the profile has none).
    pub fn atomic(&self, name: &str) -> u64 {
        let (off, w) = resolve(AtomicCaps::FIELDS, name).expect("known atomic cap field");
        self.cur
            .get(&cap_type::ATOMIC)
            .and_then(|p| read_any(p, off, w))
            .unwrap_or(0)
    }

    /// Reads a field of the NIC RX flow table properties
    /// (`flow_table_properties_nic_receive.<name>`; 0 if the profile has none).
    pub fn flow_nic_rx(&self, name: &str) -> u64 {
        let key = format!("flow_table_properties_nic_receive.{name}");
        let (off, w) = resolve(FlowTableNicCap::FIELDS, &key).expect("known flow table cap field");
        self.cur
            .get(&cap_type::FLOW_TABLE)
            .and_then(|p| read_any(p, off, w))
            .unwrap_or(0)
    }

    /// Reads a field of the on-demand paging capabilities (`transport_page_fault_scheme_cap.
    /// rc_odp_caps.send`; 0 if the profile has none).
    pub fn odp(&self, name: &str) -> u64 {
        let (off, w) = resolve(OdpCap::FIELDS, name).expect("known ODP cap field");
        self.cur
            .get(&cap_type::ODP)
            .and_then(|p| read_any(p, off, w))
            .unwrap_or(0)
    }

    /// Reads a field of the vector-calc capabilities (`calc0.op_xor` for a slot's operations;
    /// 0 if the profile has none).
    pub fn vector_calc(&self, name: &str) -> u64 {
        let (off, w) = resolve(VectorCalcCap::FIELDS, name).expect("known vector-calc cap field");
        self.cur
            .get(&CAP_TYPE_VECTOR_CALC)
            .and_then(|p| read_any(p, off, w))
            .unwrap_or(0)
    }

    /// Sets a vector-calc capability in both the maximum and current pages (`--ec-8bit`); no
    /// effect on a profile without the page.
    pub fn set_vector_calc(&mut self, name: &str, v: u32) {
        let (off, w) = resolve(VectorCalcCap::FIELDS, name).expect("known vector-calc cap field");
        for pages in [&mut self.max, &mut self.cur] {
            if let Some(p) = pages.get_mut(&CAP_TYPE_VECTOR_CALC) {
                set32(p, off, w, v);
            }
        }
    }

    /// Sets a general capability in both the maximum and current pages (model options such as
    /// `--eth` that switch a layer on).
    pub fn set_general(&mut self, name: &str, v: u32) {
        let (off, w) = resolve(CmdHcaCap::FIELDS, name).expect("known general cap field");
        for pages in [&mut self.max, &mut self.cur] {
            if let Some(p) = pages.get_mut(&cap_type::GENERAL) {
                set32(p, off, w, v);
            }
        }
    }
}

/// General-capability fields the driver may lower with SET_HCA_CAP (main.c handle_hca_cap and
/// the driver's profile); all others keep their value whatever the driver writes.
const SETTABLE_GENERAL: &[&str] = &[
    "pkey_table_size",
    "log_max_qp",
    "cmdif_checksum",
    "log_uar_page_sz",
    "uar_4k",
    "roce",
    "cache_line_128byte",
    "dct",
    "num_vhca_ports",
    "sw_owner_id",
    "release_all_pages",
    "mkey_by_name",
    "abs_native_port_num",
    "disable_local_lb_uc",
    "disable_local_lb_mc",
    "roce_rw_supported",
    "log_max_current_uc_list",
    "log_max_current_mc_list",
];

impl Firmware {
    pub(super) fn query_hca_cap(&mut self, input: &[u8], out: &mut [u8]) -> CmdResult {
        let inp = cmd_in::<cmds::QueryHcaCap>(input)?;
        if inp.other_function() != 0 {
            fail!(
                BAD_PARAM,
                "QUERY_HCA_CAP for another function",
                "function {}",
                inp.function_id()
            );
        }
        let (ty, cur) = split_query_op_mod(inp.op_mod() as u16);
        let pages = if cur { &self.caps.cur } else { &self.caps.max };
        let Some(page) = pages.get(&ty) else {
            fail!(
                BAD_PARAM,
                "QUERY_HCA_CAP of an unsupported capability type",
                "type {ty:#x}"
            );
        };
        let o = cmd_out::<cmds::QueryHcaCap>(out)?;
        o.capability_mut().0.copy_from_slice(page);
        Ok(())
    }

    pub(super) fn set_hca_cap(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::SetHcaCap>(input)?;
        let ty = (inp.op_mod() >> 1) as u16;
        if inp.op_mod() & 1 != 0 {
            fail!(
                BAD_PARAM,
                "SET_HCA_CAP with a query op_mod",
                "op_mod {:#x}",
                inp.op_mod()
            );
        }
        let new = &inp.capability().0;
        if ty == cap_type::ODP {
            return self.set_odp_cap(new);
        }
        let (fields, settable): (&[Field], &[&str]) = match ty {
            cap_type::GENERAL => (CmdHcaCap::FIELDS, SETTABLE_GENERAL),
            cap_type::ROCE => (RoceCap::FIELDS, &["sw_r_roce_src_udp_port"]),
            // mlx5_core asks for 8-byte atomic results in host endianness when the card
            // supports it (`handle_hca_cap_atomic`).
            cap_type::ATOMIC => (AtomicCaps::FIELDS, &["atomic_req_8B_endianness_mode"]),
            _ => fail!(
                BAD_PARAM,
                "SET_HCA_CAP of a capability type that is not settable",
                "type {ty:#x}"
            ),
        };
        let (Some(max), Some(cur)) = (self.caps.max.get(&ty), self.caps.cur.get(&ty)) else {
            fail!(
                BAD_PARAM,
                "SET_HCA_CAP of an unsupported capability type",
                "type {ty:#x}"
            );
        };
        let mut next = cur.clone();
        for &(name, off, w) in fields.iter().filter(|f| settable.contains(&f.0)) {
            let (Some(v), Some(m)) = (read_any(new, off, w), read_any(max, off, w)) else {
                continue;
            };
            // Boolean features can only be turned on when supported; sizes only lowered.
            let ok = if name == "atomic_req_8B_endianness_mode" {
                let (o, w) =
                    resolve(fields, "supported_atomic_req_8B_endianness_mode_1").unwrap_or((0, 0));
                v == 0 || (v == 1 && read_any(max, o, w) == Some(1))
            } else if name.starts_with("log_") || name.ends_with("_size") || name.ends_with("_list")
            {
                v <= m || name == "pkey_table_size" || name == "log_uar_page_sz"
            } else {
                v <= m
            };
            if !ok {
                fail!(
                    BAD_PARAM,
                    "SET_HCA_CAP above the maximum",
                    "{name} = {v} > max {m}"
                );
            }
            if w <= 32 && off % 32 + w <= 32 {
                set32(&mut next, off, w, v as u32);
            }
        }
        self.caps.cur.insert(ty, next);
        Ok(())
    }

    /// SET_HCA_CAP of the ODP page (main.c `handle_hca_cap_odp`: the SRQ, XRC and DC bits of
    /// the transport scheme raised to their maximum, or `mem_page_fault`): every field of the
    /// page is a feature bit, on only where the maximum page has it.
    fn set_odp_cap(&mut self, new: &[u8]) -> CmdResult {
        let Some(max) = self.caps.max.get(&cap_type::ODP) else {
            fail!(
                BAD_PARAM,
                "SET_HCA_CAP of an unsupported capability type",
                "type {:#x}",
                cap_type::ODP
            );
        };
        if let Some(i) = (0..OdpCap::SIZE).find(|&i| new[i] & !max[i] != 0) {
            fail!(
                BAD_PARAM,
                "SET_HCA_CAP turns on an ODP capability the card lacks",
                "byte {i:#x}: {:#04x} over max {:#04x}",
                new[i],
                max[i]
            );
        }
        let mut next = max.clone();
        next[..OdpCap::SIZE].copy_from_slice(&new[..OdpCap::SIZE]);
        self.caps.cur.insert(cap_type::ODP, next);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_profiles_parse() {
        for text in [
            include_str!("../../profiles/connectx4.caps"),
            include_str!("../../profiles/connectx4lx.caps"),
        ] {
            let p = CapProfile::parse(text).unwrap();
            assert_eq!(p.general("port_type"), 1);
            assert_eq!(p.general("log_max_qp"), 18);
            let ft = &p.max[&cap_type::FLOW_TABLE];
            let (off, w) = resolve(
                FlowTableNicCap::FIELDS,
                "flow_table_properties_nic_receive.max_ft_level",
            )
            .unwrap();
            assert_eq!(read_any(ft, off, w), Some(128));
            // The ConnectX-4 EC profile: GF(2^4) matrices, XOR in all four slots, no 8-bit.
            assert_eq!(p.general("vector_calc"), 1);
            assert_eq!(p.vector_calc("calc_matrix"), 1);
            assert_eq!(p.vector_calc("calc_matrix_type_8bit"), 0);
            assert_eq!(p.vector_calc("max_vec_count"), 16);
            for slot in ["calc0", "calc1", "calc2", "calc3"] {
                assert_eq!(p.vector_calc(&format!("{slot}.op_xor")), 1);
                assert_eq!(p.vector_calc(&format!("{slot}.op_add")), 0);
            }
            // The page is where MLNX mlx5_core reads it: type 0xb, calc3 word at byte 0x14.
            assert_eq!(p.max[&CAP_TYPE_VECTOR_CALC][0x17], 0x10);
            let mut p8 = p.clone();
            p8.set_vector_calc("calc_matrix_type_8bit", 1);
            assert_eq!(p8.vector_calc("calc_matrix_type_8bit"), 1);
            assert_eq!(p8.max[&CAP_TYPE_VECTOR_CALC][0], 0xc0);
        }
    }

    #[test]
    fn bad_profiles_are_rejected_with_the_line() {
        for (text, want) in [
            ("[general]\nno_such_cap = 1\n", "line 2"),
            ("[warp]\n", "unknown section"),
            ("port_type = 1\n", "before any section"),
            ("[general]\nport_type = 7\n", "does not fit"),
            ("[general]\nport_type 1\n", "expected key"),
            ("[roce]\nroce_version = 4\n", "no [general]"),
        ] {
            let e = CapProfile::parse(text).unwrap_err();
            assert!(e.0.contains(want), "{text:?}: {e}");
        }
    }
}
