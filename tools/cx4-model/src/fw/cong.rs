//! RoCE congestion control (DCQCN) in the firmware: the enable state per protocol and
//! priority (`QUERY_CONG_STATUS` / `MODIFY_CONG_STATUS`), the reaction point (RP) and
//! notification point (NP) parameters (`QUERY_CONG_PARAMS` / `MODIFY_CONG_PARAMS` with
//! `field_select`, what mlx5_ib's `cc_params` debugfs files read and write) and the counters
//! mlx5_ib's hardware counters read (`QUERY_CONG_STATISTICS`, with `clear`).
//!
//! The engine (`roce::congestion`) reads [`CongState`] for every CE-marked request, CNP and
//! paced send, and counts into [`CongStats`].
//!
//! Defaults and ranges are NVIDIA's DCQCN parameter page for ConnectX-4 and later: congestion
//! control enabled on every priority (`ROCE_CC_PRIO_MASK` all ones) for both points; RP
//! `dce_tcp_g` 1019, `dce_tcp_rtt` 1 µs, `initial_alpha_value` 1023, `rpg_gd` 11,
//! `rpg_min_dec_fac` 50 %, `rpg_min_rate` 1 Mb/s, `rate_reduce_monitor_period` 4 µs,
//! `rpg_time_reset` 300 µs, `rpg_byte_reset` 32767 (× 64 bytes), `rpg_threshold` 1,
//! `rpg_ai_rate` 5 Mb/s, `rpg_hai_rate` 50 Mb/s, `rpg_max_rate` 0 (the port's speed),
//! `clamp_tgt_rate` 0, `clamp_tgt_rate_after_time_inc` 1; NP `min_time_between_cnps` 4 µs,
//! `cnp_dscp` 48, `cnp_prio_mode` 1 (the CNP takes the marked packet's priority),
//! `cnp_802p_prio` 6. A value outside its range, a protocol other than RP/NP (the general
//! parameters need `roce_cc_general`, which ConnectX-4 lacks), a `field_select` bit the
//! protocol does not have, a priority above 7 or `tag_enable` (the 802.1Qau CN-tag, not
//! RoCE) is BAD_PARAM. The state is lost at a function reset, like the port's QoS state.

use cx4_hw::{
    command::{self as cmds, Command},
    roce::{
        cong_protocol, CongControlRRoceEcnNp, CongControlRRoceEcnRp, NpFieldSelect, RpFieldSelect,
    },
};

use super::{cmd_in, cmd_out, fail, need_in, need_out, CmdResult, Firmware};

/// The largest rate parameter, Mb/s (100 Gb/s, the fastest ConnectX-4 port).
pub const MAX_RATE_MBPS: u32 = 100_000;

/// Reaction point parameters (`cong_control_r_roce_ecn_rp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpParams {
    /// Every CNP sets the target rate to the current rate.
    pub clamp_tgt_rate: bool,
    /// A CNP sets the target rate to the current rate if a timer-driven increase happened
    /// since the last reduction.
    pub clamp_tgt_rate_ati: bool,
    /// Rate increase timer period, µs.
    pub time_reset_us: u32,
    /// Rate increase byte counter period, in 64-byte units (0: no byte counter).
    pub byte_reset: u32,
    /// Increase events per stage before additive (then hyper) increase.
    pub threshold: u32,
    /// The highest rate, Mb/s (0: the port's speed).
    pub max_rate: u32,
    /// Additive increase step, Mb/s.
    pub ai_rate: u32,
    /// Hyper increase step, Mb/s.
    pub hai_rate: u32,
    /// Rate reduction shift: a CNP cuts `rate × alpha / 2^gd` (alpha in 1024ths).
    pub gd: u32,
    /// A reduction leaves at least this percentage of the rate.
    pub min_dec_fac: u32,
    /// The lowest rate, Mb/s.
    pub min_rate: u32,
    /// Current and target rate at the first CNP, Mb/s (0: reduce from the highest rate).
    pub rate_on_first_cnp: u32,
    /// Alpha gain, 1024ths: alpha ← alpha × g / 1024 (+ (1024 − g) after a CNP).
    pub dce_tcp_g: u32,
    /// Alpha update period, µs.
    pub dce_tcp_rtt_us: u32,
    /// The shortest time between two rate reductions, µs.
    pub monitor_period_us: u32,
    /// Alpha of a new flow, 1024ths.
    pub initial_alpha: u32,
}

impl Default for RpParams {
    fn default() -> Self {
        RpParams {
            clamp_tgt_rate: false,
            clamp_tgt_rate_ati: true,
            time_reset_us: 300,
            byte_reset: 32767,
            threshold: 1,
            max_rate: 0,
            ai_rate: 5,
            hai_rate: 50,
            gd: 11,
            min_dec_fac: 50,
            min_rate: 1,
            rate_on_first_cnp: 0,
            dce_tcp_g: 1019,
            dce_tcp_rtt_us: 1,
            monitor_period_us: 4,
            initial_alpha: 1023,
        }
    }
}

/// Notification point parameters (`cong_control_r_roce_ecn_np`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpParams {
    /// At most one CNP per QP in this time, µs.
    pub min_time_between_cnps_us: u32,
    /// DSCP of CNPs.
    pub cnp_dscp: u8,
    /// 1: a CNP takes the priority of the packet that caused it; 0: `cnp_802p_prio`.
    pub cnp_prio_mode: bool,
    /// 802.1p priority of CNPs in mode 0.
    pub cnp_802p_prio: u8,
}

impl Default for NpParams {
    fn default() -> Self {
        NpParams {
            min_time_between_cnps_us: 4,
            cnp_dscp: 48,
            cnp_prio_mode: true,
            cnp_802p_prio: 6,
        }
    }
}

/// The congestion counters (`query_cong_statistics_out`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CongStats {
    /// CNPs that reached a QP whose priority has the RP disabled, or no rate-limited
    /// requester (UD, or no QP).
    pub rp_cnp_ignored: u64,
    /// CNPs the RP handled (a rate reduction, or a mark for the alpha update).
    pub rp_cnp_handled: u64,
    /// CE-marked RoCE requests received on a priority with the NP enabled.
    pub np_ecn_marked_roce_packets: u64,
    /// CNPs sent.
    pub np_cnp_sent: u64,
    /// QPs rate limited now (`rp_cur_flows`).
    pub rp_cur_flows: u32,
    /// QPs that were ever rate limited (`sum_flows`).
    pub sum_flows: u32,
}

/// The congestion control state of the function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CongState {
    /// Priorities with the reaction point enabled (bit p).
    pub rp_enable: u8,
    /// Priorities with the notification point enabled (bit p).
    pub np_enable: u8,
    /// RP parameters.
    pub rp: RpParams,
    /// NP parameters.
    pub np: NpParams,
    /// Counters.
    pub stats: CongStats,
}

impl Default for CongState {
    fn default() -> Self {
        CongState {
            rp_enable: 0xff,
            np_enable: 0xff,
            rp: RpParams::default(),
            np: NpParams::default(),
            stats: CongStats::default(),
        }
    }
}

impl CongState {
    /// Whether the reaction point runs for priority `p`.
    pub fn rp_on(&self, p: u8) -> bool {
        p < 8 && self.rp_enable & (1 << p) != 0
    }

    /// Whether the notification point runs for priority `p`.
    pub fn np_on(&self, p: u8) -> bool {
        p < 8 && self.np_enable & (1 << p) != 0
    }

    /// One line for the control socket's `roce` and `stats`.
    pub fn line(&self) -> String {
        let s = &self.stats;
        format!(
            "cong: rp_enable={:#04x} np_enable={:#04x} rp_cnp_handled={} rp_cnp_ignored={} \
             np_ecn_marked_roce_packets={} np_cnp_sent={} rp_cur_flows={} sum_flows={}",
            self.rp_enable,
            self.np_enable,
            s.rp_cnp_handled,
            s.rp_cnp_ignored,
            s.np_ecn_marked_roce_packets,
            s.np_cnp_sent,
            s.rp_cur_flows,
            s.sum_flows
        )
    }
}

/// Checks `v` against `lo..=hi` for parameter `name`.
fn range(name: &str, v: u32, lo: u32, hi: u32) -> CmdResult {
    if !(lo..=hi).contains(&v) {
        fail!(
            BAD_PARAM,
            "MODIFY_CONG_PARAMS value out of range",
            "{name} {v} not in {lo}..={hi}"
        );
    }
    Ok(())
}

/// The high and low words of a 64-bit counter.
fn split(v: u64) -> (u32, u32) {
    ((v >> 32) as u32, v as u32)
}

impl Firmware {
    pub(super) fn cong_cmd(&mut self, op: u16, input: &[u8], out: &mut [u8]) -> CmdResult {
        need_in(input, 0x10)?;
        need_out(out, 0x10)?;
        let (query, modify) = (
            self.caps.general("cc_query_allowed") != 0,
            self.caps.general("cc_modify_allowed") != 0,
        );
        match op {
            cmds::QueryCongStatus::OPCODE
            | cmds::QueryCongParams::OPCODE
            | cmds::QueryCongStatistics::OPCODE
                if !query =>
            {
                fail!(BAD_OP, "congestion query without cc_query_allowed")
            }
            cmds::ModifyCongStatus::OPCODE | cmds::ModifyCongParams::OPCODE if !modify => {
                fail!(BAD_OP, "congestion modify without cc_modify_allowed")
            }
            cmds::QueryCongStatus::OPCODE => {
                let i = cmd_in::<cmds::QueryCongStatus>(input)?;
                let mask = self.cong_mask(i.cong_protocol(), i.priority())?;
                let on = mask & (1 << i.priority()) != 0;
                cmd_out::<cmds::QueryCongStatus>(out)?.set_enable(on.into());
                Ok(())
            }
            cmds::ModifyCongStatus::OPCODE => {
                let i = cmd_in::<cmds::ModifyCongStatus>(input)?;
                let (proto, prio) = (i.cong_protocol(), i.priority());
                self.cong_mask(proto, prio)?;
                if i.tag_enable() != 0 {
                    fail!(
                        BAD_PARAM,
                        "MODIFY_CONG_STATUS tag_enable (802.1Qau CN-tag) on RoCE ECN"
                    );
                }
                let bit = 1u8 << prio;
                let m = if proto == u32::from(cong_protocol::ECN_RP) {
                    &mut self.cong.rp_enable
                } else {
                    &mut self.cong.np_enable
                };
                if i.enable() != 0 {
                    *m |= bit;
                } else {
                    *m &= !bit;
                }
                Ok(())
            }
            cmds::QueryCongParams::OPCODE => {
                let proto = cmd_in::<cmds::QueryCongParams>(input)?.cong_protocol();
                self.cong_protocol(proto)?;
                let o = cmd_out::<cmds::QueryCongParams>(out)?;
                let p = o.congestion_parameters_mut();
                if proto == u32::from(cong_protocol::ECN_RP) {
                    write_rp(p.cong_control_r_roce_ecn_rp_mut(), &self.cong.rp);
                } else {
                    write_np(p.cong_control_r_roce_ecn_np_mut(), &self.cong.np);
                }
                Ok(())
            }
            cmds::ModifyCongParams::OPCODE => {
                let i = cmd_in::<cmds::ModifyCongParams>(input)?;
                let proto = i.cong_protocol();
                self.cong_protocol(proto)?;
                // Checked whole before anything changes: a refused modify changes nothing.
                if proto == u32::from(cong_protocol::ECN_RP) {
                    let sel = i.field_select().field_select_r_roce_rp();
                    let rp = modify_rp(
                        self.cong.rp,
                        sel,
                        i.congestion_parameters().cong_control_r_roce_ecn_rp(),
                    )?;
                    self.cong.rp = rp;
                } else {
                    let sel = i.field_select().field_select_r_roce_np();
                    let np = modify_np(
                        self.cong.np,
                        sel,
                        i.congestion_parameters().cong_control_r_roce_ecn_np(),
                    )?;
                    self.cong.np = np;
                }
                Ok(())
            }
            cmds::QueryCongStatistics::OPCODE => {
                let clear = cmd_in::<cmds::QueryCongStatistics>(input)?.clear() != 0;
                let s = self.cong.stats;
                let o = cmd_out::<cmds::QueryCongStatistics>(out)?;
                o.set_rp_cur_flows(s.rp_cur_flows);
                o.set_sum_flows(s.sum_flows);
                let (h, l) = split(s.rp_cnp_ignored);
                o.set_rp_cnp_ignored_high(h);
                o.set_rp_cnp_ignored_low(l);
                let (h, l) = split(s.rp_cnp_handled);
                o.set_rp_cnp_handled_high(h);
                o.set_rp_cnp_handled_low(l);
                let (h, l) = split(crate::clock::now_ns() / 1000);
                o.set_time_stamp_high(h);
                o.set_time_stamp_low(l);
                let (h, l) = split(s.np_ecn_marked_roce_packets);
                o.set_np_ecn_marked_roce_packets_high(h);
                o.set_np_ecn_marked_roce_packets_low(l);
                let (h, l) = split(s.np_cnp_sent);
                o.set_np_cnp_sent_high(h);
                o.set_np_cnp_sent_low(l);
                if clear {
                    // The event counters restart; the flow gauges describe the present.
                    let st = &mut self.cong.stats;
                    st.rp_cnp_ignored = 0;
                    st.rp_cnp_handled = 0;
                    st.np_ecn_marked_roce_packets = 0;
                    st.np_cnp_sent = 0;
                }
                Ok(())
            }
            _ => fail!(BAD_OP, "not a congestion command", "{op:#x}"),
        }
    }

    /// Checks a `cong_protocol` of the parameter commands: RP or NP.
    fn cong_protocol(&self, proto: u32) -> CmdResult {
        if proto == u32::from(cong_protocol::GENERAL) {
            fail!(
                BAD_PARAM,
                "congestion protocol GENERAL without roce_cc_general",
                "{proto}"
            );
        }
        if proto != u32::from(cong_protocol::ECN_RP) && proto != u32::from(cong_protocol::ECN_NP) {
            fail!(BAD_PARAM, "unknown congestion protocol", "{proto}");
        }
        Ok(())
    }

    /// The enable mask of a protocol after checking it and the priority.
    fn cong_mask(&self, proto: u32, prio: u32) -> Result<u8, super::CmdError> {
        if prio > 7 {
            fail!(
                BAD_PARAM,
                "congestion status of a priority above 7",
                "{prio}"
            );
        }
        self.cong_protocol(proto)?;
        Ok(if proto == u32::from(cong_protocol::ECN_RP) {
            self.cong.rp_enable
        } else {
            self.cong.np_enable
        })
    }
}

fn write_rp(o: &mut CongControlRRoceEcnRp, p: &RpParams) {
    o.set_clamp_tgt_rate(p.clamp_tgt_rate.into());
    o.set_clamp_tgt_rate_after_time_inc(p.clamp_tgt_rate_ati.into());
    o.set_rpg_time_reset(p.time_reset_us);
    o.set_rpg_byte_reset(p.byte_reset);
    o.set_rpg_threshold(p.threshold);
    o.set_rpg_max_rate(p.max_rate);
    o.set_rpg_ai_rate(p.ai_rate);
    o.set_rpg_hai_rate(p.hai_rate);
    o.set_rpg_gd(p.gd);
    o.set_rpg_min_dec_fac(p.min_dec_fac);
    o.set_rpg_min_rate(p.min_rate);
    o.set_rate_to_set_on_first_cnp(p.rate_on_first_cnp);
    o.set_dce_tcp_g(p.dce_tcp_g);
    o.set_dce_tcp_rtt(p.dce_tcp_rtt_us);
    o.set_rate_reduce_monitor_period(p.monitor_period_us);
    o.set_initial_alpha_value(p.initial_alpha);
}

fn write_np(o: &mut CongControlRRoceEcnNp, p: &NpParams) {
    o.set_min_time_between_cnps(p.min_time_between_cnps_us);
    o.set_cnp_dscp(p.cnp_dscp.into());
    o.set_cnp_prio_mode(p.cnp_prio_mode.into());
    o.set_cnp_802p_prio(p.cnp_802p_prio.into());
}

/// `cur` with the RP parameters `sel` names taken from `i`, each checked.
fn modify_rp(
    cur: RpParams,
    sel: u32,
    i: &CongControlRRoceEcnRp,
) -> Result<RpParams, super::CmdError> {
    let Some(sel) = RpFieldSelect::from_bits(sel) else {
        fail!(
            BAD_PARAM,
            "MODIFY_CONG_PARAMS field_select with bits RP does not have",
            "{sel:#x}"
        );
    };
    let mut p = cur;
    let rate = |name: &str, v: u32, lo: u32| range(name, v, lo, MAX_RATE_MBPS).map(|_| v);
    for f in sel.iter() {
        match f {
            RpFieldSelect::CLAMP_TGT_RATE => p.clamp_tgt_rate = i.clamp_tgt_rate() != 0,
            RpFieldSelect::CLAMP_TGT_RATE_ATI => {
                p.clamp_tgt_rate_ati = i.clamp_tgt_rate_after_time_inc() != 0
            }
            RpFieldSelect::TIME_RESET => {
                range("rpg_time_reset", i.rpg_time_reset(), 1, 131_071)?;
                p.time_reset_us = i.rpg_time_reset();
            }
            RpFieldSelect::BYTE_RESET => {
                range("rpg_byte_reset", i.rpg_byte_reset(), 0, 32_767)?;
                p.byte_reset = i.rpg_byte_reset();
            }
            RpFieldSelect::THRESHOLD => {
                range("rpg_threshold", i.rpg_threshold(), 1, 31)?;
                p.threshold = i.rpg_threshold();
            }
            RpFieldSelect::MAX_RATE => p.max_rate = rate("rpg_max_rate", i.rpg_max_rate(), 0)?,
            RpFieldSelect::AI_RATE => p.ai_rate = rate("rpg_ai_rate", i.rpg_ai_rate(), 1)?,
            RpFieldSelect::HAI_RATE => p.hai_rate = rate("rpg_hai_rate", i.rpg_hai_rate(), 1)?,
            RpFieldSelect::MIN_DEC_FAC => {
                range("rpg_min_dec_fac", i.rpg_min_dec_fac(), 0, 100)?;
                p.min_dec_fac = i.rpg_min_dec_fac();
            }
            RpFieldSelect::MIN_RATE => p.min_rate = rate("rpg_min_rate", i.rpg_min_rate(), 1)?,
            RpFieldSelect::RATE_TO_SET_ON_FIRST_CNP => {
                p.rate_on_first_cnp =
                    rate("rate_to_set_on_first_cnp", i.rate_to_set_on_first_cnp(), 0)?
            }
            RpFieldSelect::DCE_TCP_G => {
                range("dce_tcp_g", i.dce_tcp_g(), 0, 1023)?;
                p.dce_tcp_g = i.dce_tcp_g();
            }
            RpFieldSelect::DCE_TCP_RTT => {
                range("dce_tcp_rtt", i.dce_tcp_rtt(), 1, 131_071)?;
                p.dce_tcp_rtt_us = i.dce_tcp_rtt();
            }
            RpFieldSelect::RATE_REDUCE_MONITOR_PERIOD => {
                let v = i.rate_reduce_monitor_period();
                range("rate_reduce_monitor_period", v, 1, u32::MAX)?;
                p.monitor_period_us = v;
            }
            RpFieldSelect::INITIAL_ALPHA_VALUE => {
                range("initial_alpha_value", i.initial_alpha_value(), 0, 1023)?;
                p.initial_alpha = i.initial_alpha_value();
            }
            RpFieldSelect::GD => {
                range("rpg_gd", i.rpg_gd(), 0, 15)?;
                p.gd = i.rpg_gd();
            }
            _ => {}
        }
    }
    Ok(p)
}

/// `cur` with the NP parameters `sel` names taken from `i`, each checked.
fn modify_np(
    cur: NpParams,
    sel: u32,
    i: &CongControlRRoceEcnNp,
) -> Result<NpParams, super::CmdError> {
    let Some(sel) = NpFieldSelect::from_bits(sel) else {
        fail!(
            BAD_PARAM,
            "MODIFY_CONG_PARAMS field_select with bits NP does not have",
            "{sel:#x}"
        );
    };
    let mut p = cur;
    if sel.contains(NpFieldSelect::MIN_TIME_BETWEEN_CNPS) {
        range("min_time_between_cnps", i.min_time_between_cnps(), 0, 4095)?;
        p.min_time_between_cnps_us = i.min_time_between_cnps();
    }
    if sel.contains(NpFieldSelect::CNP_DSCP) {
        p.cnp_dscp = i.cnp_dscp() as u8;
    }
    if sel.contains(NpFieldSelect::CNP_PRIO_MODE) {
        p.cnp_prio_mode = i.cnp_prio_mode() != 0;
        p.cnp_802p_prio = i.cnp_802p_prio() as u8;
    }
    Ok(p)
}

#[cfg(test)]
#[path = "cong_tests.rs"]
mod tests;
