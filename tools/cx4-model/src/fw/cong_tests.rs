//! The congestion commands as mlx5_ib's `cc_params` debugfs and hardware counters send them:
//! round trips through `field_select`, refusals that change nothing, statistics and clear.

use cx4_hw::{
    bits::Layout,
    command::{self as cmds, Command},
    roce::{
        cong_protocol, NpFieldSelect, QueryCongParamsOut, QueryCongStatisticsOut,
        QueryCongStatusOut, RpFieldSelect,
    },
    status,
};
use zerocopy::FromBytes;

use super::super::{caps::CapProfile, CmdError, Firmware, Pages};
use crate::roce::fixture::input;

fn fw(allowed: bool) -> Firmware {
    let v = u8::from(allowed);
    let caps = CapProfile::parse(&format!(
        "[general]\ncc_query_allowed = {v}\ncc_modify_allowed = {v}\n"
    ))
    .unwrap();
    Firmware::new(caps, Pages::default(), "MT_TEST")
}

fn run<C: Command>(fw: &mut Firmware, f: impl FnOnce(&mut C::In)) -> Result<C::Out, CmdError> {
    let mut out = vec![0u8; <C::Out as Layout>::SIZE];
    fw.cong_cmd(C::OPCODE, &input::<C>(f), &mut out)?;
    Ok(C::Out::read_from_bytes(&out).unwrap())
}

fn query_rp(fw: &mut Firmware) -> QueryCongParamsOut {
    run::<cmds::QueryCongParams>(fw, |i| i.set_cong_protocol(cong_protocol::ECN_RP.into())).unwrap()
}

fn query_np(fw: &mut Firmware) -> QueryCongParamsOut {
    run::<cmds::QueryCongParams>(fw, |i| i.set_cong_protocol(cong_protocol::ECN_NP.into())).unwrap()
}

fn bad_param<T: std::fmt::Debug>(r: Result<T, CmdError>) {
    assert_eq!(r.unwrap_err().status, status::BAD_PARAM);
}

#[test]
fn defaults_are_the_dcqcn_parameter_page() {
    let mut f = fw(true);
    let o = query_rp(&mut f);
    let rp = o.congestion_parameters().cong_control_r_roce_ecn_rp();
    assert_eq!(
        (
            rp.rpg_time_reset(),
            rp.rpg_byte_reset(),
            rp.rpg_threshold(),
            rp.rpg_ai_rate(),
            rp.rpg_hai_rate(),
            rp.rpg_gd(),
            rp.rpg_min_dec_fac(),
            rp.rpg_min_rate(),
            rp.dce_tcp_g(),
            rp.dce_tcp_rtt(),
            rp.rate_reduce_monitor_period(),
            rp.initial_alpha_value(),
        ),
        (300, 32767, 1, 5, 50, 11, 50, 1, 1019, 1, 4, 1023)
    );
    assert_eq!(rp.clamp_tgt_rate_after_time_inc(), 1);
    let o = query_np(&mut f);
    let np = o.congestion_parameters().cong_control_r_roce_ecn_np();
    assert_eq!(
        (
            np.min_time_between_cnps(),
            np.cnp_dscp(),
            np.cnp_prio_mode(),
            np.cnp_802p_prio()
        ),
        (4, 48, 1, 6)
    );
}

#[test]
fn modify_params_changes_only_the_selected_fields() {
    let mut f = fw(true);
    // What mlx5_ib writes for `echo 7 > rp_ai_rate`: one bit, one field; the other fields
    // of the input (set here to junk) are not taken.
    run::<cmds::ModifyCongParams>(&mut f, |i| {
        i.set_cong_protocol(cong_protocol::ECN_RP.into());
        i.field_select_mut()
            .set_field_select_r_roce_rp(RpFieldSelect::AI_RATE.bits());
        let p = i
            .congestion_parameters_mut()
            .cong_control_r_roce_ecn_rp_mut();
        p.set_rpg_ai_rate(7);
        p.set_rpg_hai_rate(999);
        p.set_rpg_time_reset(5);
    })
    .unwrap();
    let o = query_rp(&mut f);
    let rp = o.congestion_parameters().cong_control_r_roce_ecn_rp();
    assert_eq!(
        (rp.rpg_ai_rate(), rp.rpg_hai_rate(), rp.rpg_time_reset()),
        (7, 50, 300)
    );
    assert_eq!(f.cong.rp.ai_rate, 7);
    // np_cnp_prio: mlx5_ib sets prio mode 0 and the priority under the PRIO_MODE bit.
    run::<cmds::ModifyCongParams>(&mut f, |i| {
        i.set_cong_protocol(cong_protocol::ECN_NP.into());
        i.field_select_mut().set_field_select_r_roce_np(
            (NpFieldSelect::CNP_PRIO_MODE | NpFieldSelect::MIN_TIME_BETWEEN_CNPS).bits(),
        );
        let p = i
            .congestion_parameters_mut()
            .cong_control_r_roce_ecn_np_mut();
        p.set_cnp_prio_mode(0);
        p.set_cnp_802p_prio(3);
        p.set_min_time_between_cnps(50);
        p.set_cnp_dscp(10);
    })
    .unwrap();
    let o = query_np(&mut f);
    let np = o.congestion_parameters().cong_control_r_roce_ecn_np();
    assert_eq!(
        (
            np.cnp_prio_mode(),
            np.cnp_802p_prio(),
            np.min_time_between_cnps(),
            np.cnp_dscp()
        ),
        (0, 3, 50, 48)
    );
}

#[test]
fn bad_protocols_fields_and_values_are_bad_param_and_change_nothing() {
    let mut f = fw(true);
    let before = f.cong.clone();
    for proto in [0u32, cong_protocol::GENERAL.into(), 4, 15] {
        bad_param(run::<cmds::QueryCongParams>(&mut f, |i| {
            i.set_cong_protocol(proto)
        }));
        bad_param(run::<cmds::QueryCongStatus>(&mut f, |i| {
            i.set_cong_protocol(proto)
        }));
    }
    let rp = |sel: RpFieldSelect, set: &dyn Fn(&mut cx4_hw::roce::CongControlRRoceEcnRp)| {
        input::<cmds::ModifyCongParams>(|i| {
            i.set_cong_protocol(cong_protocol::ECN_RP.into());
            i.field_select_mut().set_field_select_r_roce_rp(sel.bits());
            set(i
                .congestion_parameters_mut()
                .cong_control_r_roce_ecn_rp_mut());
        })
    };
    let cases: Vec<Vec<u8>> = vec![
        rp(RpFieldSelect::THRESHOLD, &|p| p.set_rpg_threshold(32)),
        rp(RpFieldSelect::THRESHOLD, &|p| p.set_rpg_threshold(0)),
        rp(RpFieldSelect::TIME_RESET, &|p| p.set_rpg_time_reset(0)),
        rp(RpFieldSelect::BYTE_RESET, &|p| p.set_rpg_byte_reset(32768)),
        rp(RpFieldSelect::MIN_DEC_FAC, &|p| p.set_rpg_min_dec_fac(101)),
        rp(RpFieldSelect::DCE_TCP_G, &|p| p.set_dce_tcp_g(1024)),
        rp(RpFieldSelect::INITIAL_ALPHA_VALUE, &|p| {
            p.set_initial_alpha_value(2000)
        }),
        rp(RpFieldSelect::MIN_RATE, &|p| p.set_rpg_min_rate(0)),
        rp(RpFieldSelect::AI_RATE, &|p| p.set_rpg_ai_rate(100_001)),
        // A good value with a bad one: all or nothing.
        rp(RpFieldSelect::AI_RATE | RpFieldSelect::GD, &|p| {
            p.set_rpg_ai_rate(9);
            p.set_rpg_gd(16);
        }),
        // Bit 0 and bits above 16 are no RP parameter.
        rp(RpFieldSelect::from_bits_retain(1), &|_| {}),
        rp(RpFieldSelect::from_bits_retain(1 << 17), &|_| {}),
        input::<cmds::ModifyCongParams>(|i| {
            i.set_cong_protocol(cong_protocol::ECN_NP.into());
            i.field_select_mut()
                .set_field_select_r_roce_np(NpFieldSelect::MIN_TIME_BETWEEN_CNPS.bits());
            i.congestion_parameters_mut()
                .cong_control_r_roce_ecn_np_mut()
                .set_min_time_between_cnps(4096);
        }),
        input::<cmds::ModifyCongParams>(|i| {
            i.set_cong_protocol(cong_protocol::ECN_NP.into());
            i.field_select_mut().set_field_select_r_roce_np(1 << 5);
        }),
    ];
    for (k, c) in cases.iter().enumerate() {
        let mut out = vec![0u8; 0x10];
        let e = f
            .cong_cmd(cx4_hw::opcode::MODIFY_CONG_PARAMS, c, &mut out)
            .expect_err(&format!("case {k} accepted"));
        assert_eq!(e.status, status::BAD_PARAM, "case {k}: {}", e.reason);
    }
    bad_param(run::<cmds::ModifyCongStatus>(&mut f, |i| {
        i.set_cong_protocol(cong_protocol::ECN_RP.into());
        i.set_priority(8);
    }));
    bad_param(run::<cmds::ModifyCongStatus>(&mut f, |i| {
        i.set_cong_protocol(cong_protocol::ECN_NP.into());
        i.set_priority(1);
        i.set_tag_enable(1);
    }));
    assert_eq!(f.cong, before, "refused commands changed the state");
}

#[test]
fn status_per_protocol_and_priority_round_trips() {
    let mut f = fw(true);
    let q = |f: &mut Firmware, proto: u8, prio: u32| -> u32 {
        run::<cmds::QueryCongStatus>(f, |i| {
            i.set_cong_protocol(proto.into());
            i.set_priority(prio);
        })
        .map(|o: QueryCongStatusOut| o.enable())
        .unwrap()
    };
    assert_eq!(q(&mut f, cong_protocol::ECN_RP, 3), 1, "enabled by default");
    run::<cmds::ModifyCongStatus>(&mut f, |i| {
        i.set_cong_protocol(cong_protocol::ECN_RP.into());
        i.set_priority(3);
        i.set_enable(0);
    })
    .unwrap();
    assert_eq!(q(&mut f, cong_protocol::ECN_RP, 3), 0);
    assert_eq!(q(&mut f, cong_protocol::ECN_RP, 2), 1);
    assert_eq!(q(&mut f, cong_protocol::ECN_NP, 3), 1, "NP untouched");
    assert_eq!((f.cong.rp_enable, f.cong.np_enable), (0xf7, 0xff));
    assert!(!f.cong.rp_on(3) && f.cong.np_on(3));
}

#[test]
fn statistics_read_high_low_and_clear() {
    let mut f = fw(true);
    f.cong.stats.rp_cnp_handled = (5u64 << 32) | 9;
    f.cong.stats.np_cnp_sent = 3;
    f.cong.stats.np_ecn_marked_roce_packets = 4;
    f.cong.stats.rp_cnp_ignored = 2;
    f.cong.stats.rp_cur_flows = 1;
    let o: QueryCongStatisticsOut = run::<cmds::QueryCongStatistics>(&mut f, |_| {}).unwrap();
    assert_eq!((o.rp_cnp_handled_high(), o.rp_cnp_handled_low()), (5, 9));
    assert_eq!(
        (
            o.np_cnp_sent_low(),
            o.np_ecn_marked_roce_packets_low(),
            o.rp_cnp_ignored_low(),
            o.rp_cur_flows()
        ),
        (3, 4, 2, 1)
    );
    let o = run::<cmds::QueryCongStatistics>(&mut f, |i| i.set_clear(1)).unwrap();
    assert_eq!(o.np_cnp_sent_low(), 3, "clear returns the values before");
    let o = run::<cmds::QueryCongStatistics>(&mut f, |_| {}).unwrap();
    assert_eq!(
        (
            o.rp_cnp_handled_high(),
            o.rp_cnp_handled_low(),
            o.np_cnp_sent_low(),
            o.rp_cur_flows()
        ),
        (0, 0, 0, 1)
    );
}

#[test]
fn commands_need_the_cc_capabilities() {
    let mut f = fw(false);
    let e = run::<cmds::QueryCongStatistics>(&mut f, |_| {}).unwrap_err();
    assert_eq!(e.status, status::BAD_OP);
    let e = run::<cmds::ModifyCongStatus>(&mut f, |i| {
        i.set_cong_protocol(cong_protocol::ECN_RP.into())
    })
    .unwrap_err();
    assert_eq!(e.status, status::BAD_OP);
}
