//! The port's DCB state behind the QoS access registers: QTCT (priority → traffic class),
//! QETCR (ETS per TC), QPTS (trust PCP or DSCP), QPDPM (DSCP → priority), QCAM (which of
//! them exist) and PFCC (global pause and per-priority flow control).
//!
//! mlx5e (en_dcbnl.c through port.c) reads QCAM at load, the trust state and the DSCP map at
//! probe (`mlx5e_trust_initialize`), then writes its default ETS (`mlx5e_ets_init`: QTCT once
//! per priority with `port_number` 0, QETCR with the `g` bits, then with the `b` bits). The
//! data path reads [`QosState`] to classify frames and decide pause ([`crate::pause`]).

use cx4_hw::{
    counters::PfccReg,
    qos::{
        max_bw_units, trust_state, QcamReg, QetcReg, QpdpmReg, QptsReg, QtctReg,
        QCAM_FEATURE_ENHANCED_FEATURES, QCAM_REGS_FIRST_128,
    },
};

use super::{fail, CmdResult};

/// Number of priorities (and TCs the port has).
pub const NUM_PRIO: usize = cx4_hw::qos::MAX_NUM_TC;
/// DSCP values.
pub use cx4_hw::qos::NUM_DSCP;
/// `MLX5E_VENDOR_TC_GROUP_NUM` (en_dcbnl.c): the group mlx5e reports as the vendor TSA.
pub const VENDOR_TC_GROUP: u8 = 7;

/// ETS configuration of one traffic class (QETCR `tc_configuration[i]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcConfig {
    /// ETS group (mlx5e: 0/1 ETS, 7 vendor, others strict priority).
    pub group: u8,
    /// Bandwidth share in percent within the group.
    pub bw_allocation: u8,
    /// Rate limit units ([`max_bw_units`]).
    pub max_bw_units: u8,
    /// Rate limit in `max_bw_units`.
    pub max_bw_value: u16,
}

impl TcConfig {
    /// The rate limit in Mb/s, 0 for none.
    pub fn max_rate_mbps(&self) -> u64 {
        let v = u64::from(self.max_bw_value);
        match self.max_bw_units {
            max_bw_units::MBPS_100 => v * 100,
            max_bw_units::GBPS => v * 1000,
            _ => 0,
        }
    }
}

impl Default for TcConfig {
    fn default() -> Self {
        // The firmware default mlx5e reads as "vendor" TSA: group 7, 100 %, no limit.
        TcConfig {
            group: VENDOR_TC_GROUP,
            bw_allocation: 100,
            max_bw_units: max_bw_units::BW_NO_LIMIT,
            max_bw_value: 0,
        }
    }
}

/// The port's QoS configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QosState {
    /// QTCT: traffic class of each priority (default: priority p → TC p).
    pub prio_tc: [u8; NUM_PRIO],
    /// QETCR: per traffic class.
    pub tc: [TcConfig; NUM_PRIO],
    /// QPTS trust state ([`trust_state::PCP`] by default).
    pub trust: u8,
    /// QPDPM: priority of each DSCP (default: DSCP d → priority d >> 3).
    pub dscp2prio: [u8; NUM_DSCP],
    /// PFCC pfctx: priorities for which the port sends PFC when it cannot take their frames.
    pub pfc_tx: u8,
    /// PFCC pfcrx: priorities for which the port honours received PFC.
    pub pfc_rx: u8,
    /// PFCC pptx: the port sends 802.3x pause.
    pub pause_tx: bool,
    /// PFCC pprx: the port honours received 802.3x pause.
    pub pause_rx: bool,
}

impl Default for QosState {
    fn default() -> Self {
        QosState {
            prio_tc: std::array::from_fn(|p| p as u8),
            tc: [TcConfig::default(); NUM_PRIO],
            trust: trust_state::PCP,
            dscp2prio: std::array::from_fn(|d| (d >> 3) as u8),
            pfc_tx: 0,
            pfc_rx: 0,
            pause_tx: false,
            pause_rx: false,
        }
    }
}

impl QosState {
    /// One parseable line: `pfc tx=0x08 rx=0x08 pause tx=0 rx=0 trust=pcp
    /// prio_tc=1,0,2,3,4,5,6,7 tc_group=7,7,... tc_bw=100,... tc_maxrate_mbps=0,...
    /// dscp2prio=0,0,...` (eight entries per list, 64 for `dscp2prio`).
    pub fn line(&self) -> String {
        let list = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(",");
        format!(
            "pfc tx={:#04x} rx={:#04x} pause tx={} rx={} trust={} prio_tc={} tc_group={} \
             tc_bw={} tc_maxrate_mbps={} dscp2prio={}",
            self.pfc_tx,
            self.pfc_rx,
            u8::from(self.pause_tx),
            u8::from(self.pause_rx),
            trust_state::trust_state_name(self.trust).to_ascii_lowercase(),
            list(&mut self.prio_tc.iter().map(u8::to_string)),
            list(&mut self.tc.iter().map(|t| t.group.to_string())),
            list(&mut self.tc.iter().map(|t| t.bw_allocation.to_string())),
            list(&mut self.tc.iter().map(|t| t.max_rate_mbps().to_string())),
            list(&mut self.dscp2prio.iter().map(u8::to_string)),
        )
    }

    /// Priority `p` (0..7) is PFC-transmit enabled, or global pause transmit is on.
    pub fn sends_pause_for(&self, p: u8) -> bool {
        self.pause_tx || (p < 8 && self.pfc_tx & (1 << p) != 0)
    }
}

/// Checks the port number of a QoS register access: mlx5 writes QTCT and QETCR with 0 (the
/// local port) and reads them with 1; the others carry 1.
fn port(n: u32, reg: &'static str) -> CmdResult {
    if n > 1 {
        return Err(super::CmdError::new(
            cx4_hw::status::BAD_PARAM,
            reg,
            format!("port {n}"),
        ));
    }
    Ok(())
}

/// QTCT read: the TC of the priority in the request.
pub(super) fn qtct_read(q: &QosState, r: &QtctReg, out: &mut QtctReg) -> CmdResult {
    port(r.port_number(), "QTCT of a port that does not exist")?;
    let prio = r.prio() as usize;
    out.set_port_number(1);
    out.set_prio(prio as u32);
    out.set_tclass(q.prio_tc[prio].into());
    Ok(())
}

/// QTCT write: priority `prio` to TC `tclass` (below `max_tc`).
pub(super) fn qtct_write(q: &mut QosState, r: &QtctReg, max_tc: u32) -> CmdResult {
    port(r.port_number(), "QTCT of a port that does not exist")?;
    let (prio, tclass) = (r.prio(), r.tclass());
    if tclass >= max_tc {
        fail!(
            BAD_PARAM,
            "QTCT traffic class beyond max_tc",
            "prio {prio} tclass {tclass} max_tc {max_tc}"
        );
    }
    q.prio_tc[prio as usize] = tclass as u8;
    Ok(())
}

/// QETCR read: every TC's group, share and rate limit.
pub(super) fn qetcr_read(q: &QosState, r: &QetcReg, out: &mut QetcReg) -> CmdResult {
    port(r.port_number(), "QETCR of a port that does not exist")?;
    out.set_port_number(1);
    for (i, t) in q.tc.iter().enumerate() {
        if let Some(e) = out.tc_mut(i) {
            e.set_group(t.group.into());
            e.set_bw_allocation(t.bw_allocation.into());
            e.set_max_bw_units(t.max_bw_units.into());
            e.set_max_bw_value(t.max_bw_value.into());
        }
    }
    Ok(())
}

/// QETCR write: per TC, the group where `g` is set, the share where `b` is, the rate limit
/// where `r` is (port.c sets one kind per write). Checked whole before anything changes.
pub(super) fn qetcr_write(q: &mut QosState, r: &QetcReg, max_tc: u32) -> CmdResult {
    port(r.port_number(), "QETCR of a port that does not exist")?;
    let mut next = q.tc;
    for (i, t) in next.iter_mut().enumerate() {
        let Some(e) = r.tc(i) else { continue };
        let touched = e.g() != 0 || e.b() != 0 || e.r() != 0;
        if touched && i as u32 >= max_tc {
            fail!(
                BAD_PARAM,
                "QETCR configures a traffic class beyond max_tc",
                "tc {i} max_tc {max_tc}"
            );
        }
        if e.g() != 0 {
            t.group = e.group() as u8;
        }
        if e.b() != 0 {
            if e.bw_allocation() > 100 {
                fail!(
                    BAD_PARAM,
                    "QETCR bw_allocation above 100 %",
                    "tc {i} bw_allocation {}",
                    e.bw_allocation()
                );
            }
            t.bw_allocation = e.bw_allocation() as u8;
        }
        if e.r() != 0 {
            let units = e.max_bw_units() as u8;
            if !matches!(
                units,
                max_bw_units::BW_NO_LIMIT | max_bw_units::MBPS_100 | max_bw_units::GBPS
            ) {
                fail!(
                    BAD_PARAM,
                    "QETCR max_bw_units unknown",
                    "tc {i} units {units}"
                );
            }
            t.max_bw_units = units;
            t.max_bw_value = e.max_bw_value() as u16;
        }
    }
    q.tc = next;
    Ok(())
}

/// QPTS read.
pub(super) fn qpts_read(q: &QosState, r: &QptsReg, out: &mut QptsReg) -> CmdResult {
    port(r.local_port(), "QPTS of a port that does not exist")?;
    out.set_local_port(1);
    out.set_trust_state(q.trust.into());
    Ok(())
}

/// QPTS write: PCP or DSCP.
pub(super) fn qpts_write(q: &mut QosState, r: &QptsReg) -> CmdResult {
    port(r.local_port(), "QPTS of a port that does not exist")?;
    match r.trust_state() as u8 {
        t @ (trust_state::PCP | trust_state::DSCP) => q.trust = t,
        t => fail!(BAD_PARAM, "QPTS trust state unknown", "{t}"),
    }
    Ok(())
}

/// QPDPM read: every DSCP's priority (`e` clear: it is a write enable).
pub(super) fn qpdpm_read(q: &QosState, r: &QpdpmReg, out: &mut QpdpmReg) -> CmdResult {
    port(r.local_port(), "QPDPM of a port that does not exist")?;
    out.set_local_port(1);
    for (d, p) in q.dscp2prio.iter().enumerate() {
        if let Some(e) = out.dscp_entry_mut(d) {
            e.set_prio((*p).into());
        }
    }
    Ok(())
}

/// QPDPM write: the entries whose `e` is set; a priority above 7 fails the whole write.
pub(super) fn qpdpm_write(q: &mut QosState, r: &QpdpmReg) -> CmdResult {
    port(r.local_port(), "QPDPM of a port that does not exist")?;
    let mut next = q.dscp2prio;
    for (d, p) in next.iter_mut().enumerate() {
        let Some(e) = r.dscp_entry(d) else { continue };
        if e.e() == 0 {
            continue;
        }
        if e.prio() >= NUM_PRIO as u32 {
            fail!(
                BAD_PARAM,
                "QPDPM priority above 7",
                "dscp {d} prio {}",
                e.prio()
            );
        }
        *p = e.prio() as u8;
    }
    q.dscp2prio = next;
    Ok(())
}

/// QCAM: QPTS and QPDPM exist (so mlx5e offers DSCP trust); no feature bits (8-bit rate
/// limits, no trust-both).
pub(super) fn qcam(r: &QcamReg, out: &mut QcamReg) -> CmdResult {
    let (fg, group) = (r.feature_group(), r.access_reg_group());
    if fg != u32::from(QCAM_FEATURE_ENHANCED_FEATURES) {
        fail!(BAD_PARAM, "QCAM of an unknown feature group", "{fg}");
    }
    if group != u32::from(QCAM_REGS_FIRST_128) {
        fail!(
            BAD_PARAM,
            "QCAM of an unknown access register group",
            "{group}"
        );
    }
    out.set_feature_group(fg);
    out.set_access_reg_group(group);
    out.access_regs_mut().set_qpts(1);
    out.access_regs_mut().set_qpdpm(1);
    Ok(())
}

/// PFCC read: global pause and the PFC masks.
pub(super) fn pfcc_read(q: &QosState, r: &PfccReg, out: &mut PfccReg) -> CmdResult {
    port(r.local_port(), "PFCC of a port that does not exist")?;
    out.set_local_port(1);
    out.set_pptx(q.pause_tx.into());
    out.set_pprx(q.pause_rx.into());
    out.set_pfctx(q.pfc_tx.into());
    out.set_pfcrx(q.pfc_rx.into());
    Ok(())
}

/// PFCC write. Global pause: `pptx`/`pprx` unless their `*_mask_n` is set (mlx5 never sets
/// it, so a PFC write also turns global pause off, as firmware does). PFC: the bits of
/// `pfctx`/`pfcrx` selected by `prio_mask_tx`/`prio_mask_rx` (mlx5_set_port_pfc sets the
/// masks to all ones; mlx5_set_port_pause leaves them 0: PFC unchanged).
pub(super) fn pfcc_write(q: &mut QosState, r: &PfccReg) -> CmdResult {
    port(r.local_port(), "PFCC of a port that does not exist")?;
    if r.pfctx() & !r.prio_mask_tx() != 0 || r.pfcrx() & !r.prio_mask_rx() != 0 {
        log::debug!(
            "PFCC pfctx {:#x} / pfcrx {:#x} bits outside prio_mask_tx {:#x} / prio_mask_rx {:#x} \
             ignored",
            r.pfctx(),
            r.pfcrx(),
            r.prio_mask_tx(),
            r.prio_mask_rx()
        );
    }
    if r.pptx_mask_n() == 0 {
        q.pause_tx = r.pptx() != 0;
    }
    if r.pprx_mask_n() == 0 {
        q.pause_rx = r.pprx() != 0;
    }
    let (mtx, mrx) = (r.prio_mask_tx() as u8, r.prio_mask_rx() as u8);
    q.pfc_tx = (q.pfc_tx & !mtx) | (r.pfctx() as u8 & mtx);
    q.pfc_rx = (q.pfc_rx & !mrx) | (r.pfcrx() as u8 & mrx);
    Ok(())
}
