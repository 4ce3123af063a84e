//! Transport objects: TIS (what an SQ sends as), TIR (where received packets go: one RQ, or an
//! RQ table through a hash) and RQT (RQ table), with CREATE/MODIFY/QUERY/DESTROY each.
//!
//! The data path resolves a TIR to an RQ with [`Firmware::tir`] and [`Firmware::rqt_pick`].

use cx4_hw::{
    command::{self as cmds, Command},
    tir::{
        disp_type, hash_field_sel, packet_merge, rqt_msg_len, rqt_rq_num, rx_hash_fn,
        set_rqt_rq_num, Rqtc, RxHashFieldSelect, Tirc, Tisc, TOEPLITZ_KEY_LEN,
    },
};

use super::{cmd_in, cmd_out, fail, need_out, CmdError, CmdResult, Firmware};

/// One transport interface send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tis {
    /// TIS number.
    pub tisn: u32,
    /// Transport domain.
    pub transport_domain: u32,
    /// Priority (mlx5e: traffic class << 1).
    pub prio: u8,
}

/// How a TIR dispatches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TirDispatch {
    /// Every packet to one RQ.
    Direct {
        /// The RQ.
        rqn: u32,
    },
    /// Through an RQ table, indexed by a hash of the packet.
    Indirect {
        /// The RQ table.
        rqtn: u32,
    },
}

/// The receive hash of an indirect TIR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxHash {
    /// `MLX5_RX_HASH_FN_*`.
    pub func: u8,
    /// Symmetric Toeplitz (source and destination sorted before hashing).
    pub symmetric: bool,
    /// Toeplitz key.
    pub key: [u8; TOEPLITZ_KEY_LEN],
    /// Outer header fields hashed.
    pub outer: HashFields,
    /// Inner header fields hashed (tunnelled packets, `tunneled_offload_en`).
    pub inner: HashFields,
}

/// A decoded `rx_hash_field_select`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashFields {
    /// IPv6 (else IPv4) headers are hashed.
    pub ipv6: bool,
    /// UDP (else TCP) ports are hashed.
    pub udp: bool,
    /// `MLX5_HASH_FIELD_SEL_*` bits.
    pub fields: u32,
}

impl HashFields {
    fn from_layout(s: &RxHashFieldSelect) -> Self {
        HashFields {
            ipv6: s.l3_prot_type() != 0,
            udp: s.l4_prot_type() != 0,
            fields: s.selected_fields(),
        }
    }

    fn fill(&self, s: &mut RxHashFieldSelect) {
        s.set_l3_prot_type(self.ipv6.into());
        s.set_l4_prot_type(self.udp.into());
        s.set_selected_fields(self.fields);
    }
}

/// One transport interface receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tir {
    /// TIR number.
    pub tirn: u32,
    /// Transport domain (loopback suppression is per domain).
    pub transport_domain: u32,
    /// Dispatch.
    pub dispatch: TirDispatch,
    /// Hash (meaningful for indirect TIRs).
    pub hash: RxHash,
    /// Inner headers are parsed for checksums and hashing (tunnel offloads).
    pub tunneled_offload_en: bool,
    /// `MLX5_TIRC_SELF_LB_BLOCK_*`: drop packets this transport domain sent itself.
    pub self_lb_block: u8,
    /// Large receive offload (`packet_merge_mask`): TCP segments of one flow merged into one
    /// packet of a striding RQ.
    pub lro: TirLro,
}

/// A TIR's LRO settings (`packet_merge_mask` bit 0: IPv4, bit 1: IPv6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TirLro {
    /// `packet_merge_mask`.
    pub mask: u8,
    /// Largest merged IP payload, bytes (`lro_max_ip_payload_size` counts 256-byte units).
    pub max_ip_payload: u32,
    /// How long a merge may stay open, µs (`lro_timeout_period_usecs`).
    pub timeout_us: u16,
}

impl TirLro {
    fn parse(c: &Tirc) -> Self {
        TirLro {
            mask: c.packet_merge_mask() as u8,
            max_ip_payload: c.lro_max_ip_payload_size() << 8,
            timeout_us: c.lro_timeout_period_usecs() as u16,
        }
    }

    /// Merges IPv4 (`v6` false) or IPv6 TCP segments.
    pub fn merges(&self, v6: bool) -> bool {
        let bit = if v6 {
            packet_merge::IPV6_LRO
        } else {
            packet_merge::IPV4_LRO
        };
        self.mask & bit != 0 && self.max_ip_payload != 0
    }
}

impl Tir {
    /// The RQ of a direct TIR.
    pub fn inline_rqn(&self) -> Option<u32> {
        match self.dispatch {
            TirDispatch::Direct { rqn } => Some(rqn),
            TirDispatch::Indirect { .. } => None,
        }
    }
}

/// One RQ table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rqt {
    /// RQT number.
    pub rqtn: u32,
    /// Largest size MODIFY_RQT may set.
    pub max_size: u32,
    /// The RQs (`rqt_actual_size` of them).
    pub rqns: Vec<u32>,
}

/// Hash field selector bits the model hashes on.
/// mlx5e's AH/ESP TIRs select the IPsec SPI with the addresses (en/rss.c `MLX5_HASH_IP_IPSEC_SPI`):
/// accepted, and hashed on the addresses only (the engine does not read SPIs).
const KNOWN_HASH_FIELDS: u32 = hash_field_sel::SRC_IP
    | hash_field_sel::DST_IP
    | hash_field_sel::L4_SPORT
    | hash_field_sel::L4_DPORT
    | hash_field_sel::IPSEC_SPI;

impl Firmware {
    pub(super) fn tir_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_out(out, 0x10)?;
        match op {
            cmds::CreateTis::OPCODE => {
                let c = cmd_in::<cmds::CreateTis>(input)?.ctx();
                self.check_tisc(c)?;
                if self.nic.tises.len() as u64 >= 1u64 << self.caps.general("log_max_tis") {
                    fail!(NO_RES, "CREATE_TIS: no TISes left");
                }
                let tisn = self.alloc_id();
                self.nic.tises.insert(
                    tisn,
                    Tis {
                        tisn,
                        transport_domain: c.transport_domain(),
                        prio: c.prio() as u8,
                    },
                );
                cmd_out::<cmds::CreateTis>(out)?.set_tisn(tisn);
                Ok(())
            }
            cmds::ModifyTis::OPCODE => {
                let inp = cmd_in::<cmds::ModifyTis>(input)?;
                let tisn = inp.tisn();
                if !self.nic.tises.contains_key(&tisn) {
                    fail!(
                        BAD_RES,
                        "MODIFY_TIS of a TIS that does not exist",
                        "TIS {tisn:#x}"
                    );
                }
                let m = inp.bitmask();
                if m.lag_tx_port_affinity() != 0 || m.strict_lag_tx_port_affinity() != 0 {
                    fail!(BAD_PARAM, "MODIFY_TIS of the LAG port affinity without LAG");
                }
                if m.prio() != 0 {
                    let tis = self.nic.tises.get_mut(&tisn).expect("checked");
                    tis.prio = inp.ctx().prio() as u8;
                }
                Ok(())
            }
            cmds::QueryTis::OPCODE => {
                let tisn = cmd_in::<cmds::QueryTis>(input)?.tisn();
                let Some(t) = self.nic.tises.get(&tisn) else {
                    fail!(
                        BAD_RES,
                        "QUERY_TIS of a TIS that does not exist",
                        "TIS {tisn:#x}"
                    );
                };
                let c = cmd_out::<cmds::QueryTis>(out)?.tis_context_mut();
                c.set_prio(t.prio.into());
                c.set_transport_domain(t.transport_domain);
                Ok(())
            }
            cmds::DestroyTis::OPCODE => {
                let tisn = cmd_in::<cmds::DestroyTis>(input)?.tisn();
                if !self.nic.tises.contains_key(&tisn) {
                    fail!(
                        BAD_RES,
                        "DESTROY_TIS of a TIS that does not exist",
                        "TIS {tisn:#x}"
                    );
                }
                if let Some(sq) = self.nic.sqs.values().find(|s| s.tisn == Some(tisn)) {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_TIS of a TIS an SQ still sends on",
                        "TIS {tisn:#x}, SQ {:#x}",
                        sq.sqn
                    );
                }
                self.nic.tises.remove(&tisn);
                Ok(())
            }
            cmds::CreateTir::OPCODE => {
                let c = cmd_in::<cmds::CreateTir>(input)?.ctx();
                let tir = self.parse_tirc(c)?;
                if self.nic.tirs.len() as u64 >= 1u64 << self.caps.general("log_max_tir") {
                    fail!(NO_RES, "CREATE_TIR: no TIRs left");
                }
                let tirn = self.alloc_id();
                self.nic.tirs.insert(tirn, Tir { tirn, ..tir });
                cmd_out::<cmds::CreateTir>(out)?.set_tirn(tirn);
                Ok(())
            }
            cmds::ModifyTir::OPCODE => self.modify_tir(input),
            cmds::QueryTir::OPCODE => {
                let tirn = cmd_in::<cmds::QueryTir>(input)?.tirn();
                let Some(t) = self.nic.tirs.get(&tirn) else {
                    fail!(
                        BAD_RES,
                        "QUERY_TIR of a TIR that does not exist",
                        "TIR {tirn:#x}"
                    );
                };
                let c = cmd_out::<cmds::QueryTir>(out)?.tir_context_mut();
                fill_tirc(t, c);
                Ok(())
            }
            cmds::DestroyTir::OPCODE => {
                let tirn = cmd_in::<cmds::DestroyTir>(input)?.tirn();
                if !self.nic.tirs.contains_key(&tirn) {
                    fail!(
                        BAD_RES,
                        "DESTROY_TIR of a TIR that does not exist",
                        "TIR {tirn:#x}"
                    );
                }
                if let Some((t, i)) = self.flow_ref_to(cx4_hw::flow::dest_type::TIR, tirn) {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_TIR of a TIR a flow table entry forwards to",
                        "TIR {tirn:#x}, table {t:#x} entry {i}"
                    );
                }
                self.nic.tirs.remove(&tirn);
                Ok(())
            }
            cmds::CreateRqt::OPCODE => {
                let inp = cmd_in::<cmds::CreateRqt>(input)?;
                let rqt = self.parse_rqt(inp.rqt_context(), input, true, "CREATE_RQT")?;
                if self.nic.rqts.len() as u64 >= 1u64 << self.caps.general("log_max_rqt") {
                    fail!(NO_RES, "CREATE_RQT: no RQTs left");
                }
                let rqtn = self.alloc_id();
                self.nic.rqts.insert(rqtn, Rqt { rqtn, ..rqt });
                cmd_out::<cmds::CreateRqt>(out)?.set_rqtn(rqtn);
                Ok(())
            }
            cmds::ModifyRqt::OPCODE => {
                let inp = cmd_in::<cmds::ModifyRqt>(input)?;
                let rqtn = inp.rqtn();
                let Some(max) = self.nic.rqts.get(&rqtn).map(|r| r.max_size) else {
                    fail!(
                        BAD_RES,
                        "MODIFY_RQT of an RQT that does not exist",
                        "RQT {rqtn:#x}"
                    );
                };
                if inp.bitmask().rqn_list() == 0 {
                    fail!(BAD_PARAM, "MODIFY_RQT without the RQ list in its bitmask");
                }
                let new = self.parse_rqt(inp.ctx(), input, false, "MODIFY_RQT")?;
                if new.rqns.len() as u32 > max {
                    fail!(
                        BAD_PARAM,
                        "MODIFY_RQT larger than the RQT's maximum size",
                        "RQT {rqtn:#x}: {} > {max}",
                        new.rqns.len()
                    );
                }
                self.nic.rqts.get_mut(&rqtn).expect("checked").rqns = new.rqns;
                Ok(())
            }
            cmds::QueryRqt::OPCODE => {
                let rqtn = cmd_in::<cmds::QueryRqt>(input)?.rqtn();
                let Some(r) = self.nic.rqts.get(&rqtn) else {
                    fail!(
                        BAD_RES,
                        "QUERY_RQT of an RQT that does not exist",
                        "RQT {rqtn:#x}"
                    );
                };
                if out.len() < rqt_msg_len(r.rqns.len()) {
                    fail!(
                        BAD_OUTP_LEN,
                        "QUERY_RQT output too short for the RQ list",
                        "{} < {} bytes",
                        out.len(),
                        rqt_msg_len(r.rqns.len())
                    );
                }
                let (max, rqns) = (r.max_size, r.rqns.clone());
                let c = cmd_out::<cmds::QueryRqt>(out)?.rqt_context_mut();
                c.set_rqt_max_size(max);
                c.set_rqt_actual_size(rqns.len() as u32);
                for (i, rqn) in rqns.into_iter().enumerate() {
                    let _ = set_rqt_rq_num(out, i, rqn);
                }
                Ok(())
            }
            cmds::DestroyRqt::OPCODE => {
                let rqtn = cmd_in::<cmds::DestroyRqt>(input)?.rqtn();
                if !self.nic.rqts.contains_key(&rqtn) {
                    fail!(
                        BAD_RES,
                        "DESTROY_RQT of an RQT that does not exist",
                        "RQT {rqtn:#x}"
                    );
                }
                if let Some(t) = self
                    .nic
                    .tirs
                    .values()
                    .find(|t| t.dispatch == TirDispatch::Indirect { rqtn })
                {
                    fail!(
                        BAD_RES_STATE,
                        "DESTROY_RQT of an RQT a TIR still uses",
                        "RQT {rqtn:#x}, TIR {:#x}",
                        t.tirn
                    );
                }
                self.nic.rqts.remove(&rqtn);
                Ok(())
            }
            _ => unreachable!("dispatched by opcode"),
        }
    }

    fn check_tisc(&self, c: &Tisc) -> CmdResult {
        let td = c.transport_domain();
        if !self.tds.contains_key(&td) {
            fail!(
                BAD_RES,
                "TIS in a transport domain that does not exist",
                "TD {td:#x}"
            );
        }
        if c.tls_en() != 0 || c.lag_tx_port_affinity() != 0 || c.strict_lag_tx_port_affinity() != 0
        {
            fail!(
                BAD_PARAM,
                "TIS with TLS or LAG port affinity, which are not supported"
            );
        }
        if c.underlay_qpn() != 0 || c.pd() != 0 {
            fail!(BAD_PARAM, "TIS with an underlay QP (IPoIB only)");
        }
        Ok(())
    }

    /// Checks a TIR context (for CREATE_TIR) and returns the TIR it describes (number 0).
    fn parse_tirc(&self, c: &Tirc) -> Result<Tir, CmdError> {
        let td = c.transport_domain();
        if !self.tds.contains_key(&td) {
            fail!(
                BAD_RES,
                "TIR in a transport domain that does not exist",
                "TD {td:#x}"
            );
        }
        if c.tls_en() != 0 {
            fail!(BAD_PARAM, "TIR with TLS, which is not supported");
        }
        if c.packet_merge_mask() != 0 && self.caps.eth("lro_cap") == 0 {
            fail!(BAD_PARAM, "TIR with LRO, which is not supported");
        }
        let dispatch = match c.disp_type() as u8 {
            disp_type::DIRECT => {
                let rqn = c.inline_rqn();
                if !self.nic.rqs.contains_key(&rqn) {
                    fail!(
                        BAD_RES,
                        "direct TIR to an RQ that does not exist",
                        "RQ {rqn:#x}"
                    );
                }
                TirDispatch::Direct { rqn }
            }
            disp_type::INDIRECT => {
                let rqtn = c.indirect_table();
                if !self.nic.rqts.contains_key(&rqtn) {
                    fail!(
                        BAD_RES,
                        "indirect TIR to an RQT that does not exist",
                        "RQT {rqtn:#x}"
                    );
                }
                TirDispatch::Indirect { rqtn }
            }
            d => fail!(
                BAD_PARAM,
                "TIR with an unknown dispatch type",
                "disp_type {d}"
            ),
        };
        let tunneled = c.tunneled_offload_en() != 0;
        if tunneled && !self.tunnel_offloads() {
            fail!(
                BAD_PARAM,
                "TIR with tunnel offloads, which the capabilities do not offer"
            );
        }
        let hash = self.parse_hash(c)?;
        if hash.inner != HashFields::default() && !tunneled {
            fail!(
                BAD_PARAM,
                "TIR hashing inner headers without tunneled_offload_en"
            );
        }
        Ok(Tir {
            tirn: 0,
            transport_domain: td,
            dispatch,
            hash,
            tunneled_offload_en: tunneled,
            self_lb_block: c.self_lb_block() as u8,
            lro: TirLro::parse(c),
        })
    }

    fn parse_hash(&self, c: &Tirc) -> Result<RxHash, CmdError> {
        let func = c.rx_hash_fn() as u8;
        if ![
            rx_hash_fn::NONE,
            rx_hash_fn::INVERTED_XOR8,
            rx_hash_fn::TOEPLITZ,
        ]
        .contains(&func)
        {
            fail!(
                BAD_PARAM,
                "TIR with an unknown hash function",
                "rx_hash_fn {func}"
            );
        }
        let outer = HashFields::from_layout(c.rx_hash_field_selector_outer());
        let inner = HashFields::from_layout(c.rx_hash_field_selector_inner());
        for f in [outer, inner] {
            if f.fields & !KNOWN_HASH_FIELDS != 0 {
                fail!(
                    BAD_PARAM,
                    "TIR hashing on fields that are not supported",
                    "selected_fields {:#x}",
                    f.fields
                );
            }
        }
        Ok(RxHash {
            func,
            symmetric: c.rx_hash_symmetric() != 0,
            key: c.toeplitz_key(),
            outer,
            inner,
        })
    }

    /// Whether any stateless tunnel offload is advertised (tunneled_offload_en allowed).
    fn tunnel_offloads(&self) -> bool {
        [
            "tunnel_stateless_vxlan",
            "tunnel_stateless_gre",
            "tunnel_stateless_geneve_rx",
            "tunnel_stateless_ip_over_ip_rx",
        ]
        .iter()
        .any(|f| self.caps.eth(f) != 0)
    }

    fn modify_tir(&mut self, input: &[u8]) -> CmdResult {
        let inp = cmd_in::<cmds::ModifyTir>(input)?;
        let tirn = inp.tirn();
        if !self.nic.tirs.contains_key(&tirn) {
            fail!(
                BAD_RES,
                "MODIFY_TIR of a TIR that does not exist",
                "TIR {tirn:#x}"
            );
        }
        let m = inp.bitmask();
        let raw = u64::from_be_bytes(m.0);
        let known = (1 << 0) | (1 << 2) | (1 << 4); // packet_merge, hash, self_lb_en
        if raw & !known != 0 {
            fail!(
                BAD_PARAM,
                "MODIFY_TIR of fields that cannot be modified",
                "bitmask {raw:#x}"
            );
        }
        let c = inp.ctx();
        let hash = if m.hash() != 0 {
            Some(self.parse_hash(c)?)
        } else {
            None
        };
        if m.packet_merge() != 0 && c.packet_merge_mask() != 0 && self.caps.eth("lro_cap") == 0 {
            fail!(BAD_PARAM, "TIR with LRO, which is not supported");
        }
        let tir = self.nic.tirs.get_mut(&tirn).expect("checked");
        if let Some(h) = hash {
            if h.inner != HashFields::default() && !tir.tunneled_offload_en {
                fail!(
                    BAD_PARAM,
                    "TIR hashing inner headers without tunneled_offload_en"
                );
            }
            tir.hash = h;
        }
        if m.self_lb_en() != 0 {
            tir.self_lb_block = c.self_lb_block() as u8;
        }
        if m.packet_merge() != 0 {
            tir.lro = TirLro::parse(c);
        }
        Ok(())
    }

    /// Checks an RQT context followed by its list in `msg`; `create` checks the maximum size
    /// against the capabilities (MODIFY keeps the one given at creation).
    fn parse_rqt(
        &self,
        c: &Rqtc,
        msg: &[u8],
        create: bool,
        what: &'static str,
    ) -> Result<Rqt, CmdError> {
        if c.list_q_type() != 0 || c.rq_vhca_id_format() != 0 {
            fail!(
                BAD_PARAM,
                "RQT of queues other than local RQs",
                "{what}: list_q_type {} rq_vhca_id_format {}",
                c.list_q_type(),
                c.rq_vhca_id_format()
            );
        }
        let cap = 1u32 << self.caps.general("log_max_rqt_size");
        let max = c.rqt_max_size();
        if create && !(1..=cap).contains(&max) {
            fail!(
                BAD_PARAM,
                "RQT larger than log_max_rqt_size",
                "{what}: rqt_max_size {max} (1..={cap})"
            );
        }
        let n = c.rqt_actual_size();
        if n == 0 || (create && n > max) || n > cap {
            fail!(
                BAD_PARAM,
                "RQT actual size out of range",
                "{what}: rqt_actual_size {n}, max size {max}"
            );
        }
        if msg.len() < rqt_msg_len(n as usize) {
            fail!(
                BAD_INP_LEN,
                "RQT input shorter than its RQ list",
                "{what}: {} < {} bytes",
                msg.len(),
                rqt_msg_len(n as usize)
            );
        }
        let mut rqns = Vec::with_capacity(n as usize);
        for i in 0..n as usize {
            let rqn = rqt_rq_num(msg, i).unwrap_or(0);
            if !self.nic.rqs.contains_key(&rqn) {
                fail!(
                    BAD_RES,
                    "RQT listing an RQ that does not exist",
                    "{what}: entry {i} RQ {rqn:#x}"
                );
            }
            rqns.push(rqn);
        }
        Ok(Rqt {
            rqtn: 0,
            max_size: max,
            rqns,
        })
    }

    /// The TIR `tirn` (data path).
    pub fn tir(&self, tirn: u32) -> Option<&Tir> {
        self.nic.tirs.get(&tirn)
    }

    /// The RQT `rqtn` (data path).
    pub fn rqt(&self, rqtn: u32) -> Option<&Rqt> {
        self.nic.rqts.get(&rqtn)
    }

    /// The TIS `tisn` (data path).
    pub fn tis(&self, tisn: u32) -> Option<&Tis> {
        self.nic.tises.get(&tisn)
    }

    /// The RQ a packet with receive hash `hash` reaches through TIR `tirn`: the inline RQ of a
    /// direct TIR, or entry `hash % size` of an indirect TIR's RQT (RQT sizes are powers of
    /// two in mlx5e, where this is the hash's low bits). `None` if the TIR or RQT is gone.
    pub fn rqt_pick(&self, tirn: u32, hash: u32) -> Option<u32> {
        match self.nic.tirs.get(&tirn)?.dispatch {
            TirDispatch::Direct { rqn } => Some(rqn),
            TirDispatch::Indirect { rqtn } => {
                let rqt = self.nic.rqts.get(&rqtn)?;
                let n = rqt.rqns.len() as u32;
                (n > 0).then(|| rqt.rqns[(hash % n) as usize])
            }
        }
    }
}

fn fill_tirc(t: &Tir, c: &mut Tirc) {
    c.set_transport_domain(t.transport_domain);
    match t.dispatch {
        TirDispatch::Direct { rqn } => {
            c.set_disp_type(disp_type::DIRECT.into());
            c.set_inline_rqn(rqn);
        }
        TirDispatch::Indirect { rqtn } => {
            c.set_disp_type(disp_type::INDIRECT.into());
            c.set_indirect_table(rqtn);
        }
    }
    c.set_rx_hash_fn(t.hash.func.into());
    c.set_rx_hash_symmetric(t.hash.symmetric.into());
    for (i, w) in t.hash.key.chunks(4).enumerate() {
        let _ = c.set_rx_hash_toeplitz_key(i, u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    }
    t.hash.outer.fill(c.rx_hash_field_selector_outer_mut());
    t.hash.inner.fill(c.rx_hash_field_selector_inner_mut());
    c.set_tunneled_offload_en(t.tunneled_offload_en.into());
    c.set_self_lb_block(t.self_lb_block.into());
    c.set_packet_merge_mask(t.lro.mask.into());
    c.set_lro_max_ip_payload_size(t.lro.max_ip_payload >> 8);
    c.set_lro_timeout_period_usecs(t.lro.timeout_us.into());
}
