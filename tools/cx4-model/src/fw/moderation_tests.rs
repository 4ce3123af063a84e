//! CQ moderation through the firmware: events held for the period or the count and raised by
//! the timer tick, the arm doorbell's pending completions, MODIFY_CQ's field-select and
//! period-mode checks, and a destroyed CQ's deadline forgotten.

use cx4_hw::{
    bits::Layout,
    command as cmds,
    cq::{CqModifyFields, QueryCqOut},
    opcode, status,
    uar::{CqArmDoorbell, CQ_DB_REQ_NOT},
};
use zerocopy::FromBytes;

use super::{moderation::PERIOD_FROM_CQE, Arm, CmdError};
use crate::{
    datapath::tests::{device, CQN},
    device::Device,
    roce::fixture::input,
};

const US: u64 = 1000;
const EQN: u8 = 5;

fn post(d: &mut Device, now: u64) {
    d.hca
        .fw
        .post_cqe_at(&mut d.bus, CQN, &[0u8; 64], false, now)
        .unwrap();
}

fn consume_all(d: &mut Device) {
    let pi = d.fw.cqs[&CQN].pi & 0xff_ffff;
    d.bus
        .mem
        .write(crate::datapath::tests::CQ_DBR, &pi.to_be_bytes())
        .unwrap();
}

fn arm(d: &mut Device) {
    d.fw.cqs.get_mut(&CQN).unwrap().arm = Arm::Next;
}

fn events(d: &Device) -> u64 {
    d.fw.eqs[&EQN].events
}

fn modify(d: &mut Device, select: u32, period: u32, count: u32, mode: u32) -> Result<(), CmdError> {
    let inp = input::<cmds::ModifyCq>(|i| {
        i.set_cqn(CQN);
        i.set_modify_field_select_resize_field_select(select);
        let c = i.cq_context_mut();
        c.set_cq_period(period);
        c.set_cq_max_count(count);
        c.set_cq_period_mode(mode);
    });
    let mut out = vec![0u8; 0x10];
    d.hca
        .fw
        .cq_cmd(&mut d.bus, opcode::MODIFY_CQ, &inp, &mut out)
}

fn query(d: &mut Device) -> QueryCqOut {
    let inp = input::<cmds::QueryCq>(|i| i.set_cqn(CQN));
    let mut out = vec![0u8; <QueryCqOut as Layout>::SIZE];
    d.hca
        .fw
        .cq_cmd(&mut d.bus, opcode::QUERY_CQ, &inp, &mut out)
        .unwrap();
    QueryCqOut::read_from_bytes(&out).unwrap()
}

fn tick(d: &mut Device, now: u64) {
    d.cq_tick(now);
}

const ALL: u32 = CqModifyFields::PERIOD.bits()
    | CqModifyFields::COUNT.bits()
    | CqModifyFields::PERIOD_MODE.bits();

#[test]
fn without_moderation_every_armed_completion_raises_its_event() {
    let (mut d, _) = device();
    arm(&mut d);
    post(&mut d, 1_000 * US);
    assert_eq!(events(&d), 1);
    // Not armed: no event.
    post(&mut d, 1_001 * US);
    assert_eq!(events(&d), 1);
    arm(&mut d);
    post(&mut d, 1_002 * US);
    assert_eq!(events(&d), 2);
    assert_eq!(d.fw.cq_timers.next(), None);
}

#[test]
fn period_from_eqe_holds_events_until_the_period_ends() {
    let (mut d, _) = device();
    modify(&mut d, ALL, 16, 0, 0).unwrap();
    // The first completion after a quiet spell goes at once.
    arm(&mut d);
    post(&mut d, 1_000 * US);
    assert_eq!(events(&d), 1);
    // The next one, 2 µs later, waits for the period that began with that event.
    arm(&mut d);
    post(&mut d, 1_002 * US);
    assert_eq!(events(&d), 1);
    assert_eq!(d.fw.cq_timers.next(), Some(1_016 * US));
    post(&mut d, 1_003 * US);
    tick(&mut d, 1_015 * US);
    assert_eq!(events(&d), 1, "raised before the period ended");
    tick(&mut d, 1_016 * US);
    assert_eq!(events(&d), 2);
    assert_eq!(d.fw.cq_timers.next(), None);
    assert_eq!(d.fw.cqs[&CQN].arm, Arm::None, "the event consumed the arm");
    assert_eq!(d.fw.cqs[&CQN].mod_state.moderated, 1);
    assert_eq!(d.fw.cq_timers.released, 1);
    assert!(
        d.stats_line().contains(" cq_moderated=1 "),
        "{}",
        d.stats_line()
    );
}

#[test]
fn the_count_releases_a_held_event_before_the_period() {
    let (mut d, _) = device();
    modify(&mut d, ALL, 1000, 4, 0).unwrap();
    arm(&mut d);
    post(&mut d, 5_000 * US);
    assert_eq!(events(&d), 1);
    arm(&mut d);
    for i in 1..4 {
        post(&mut d, (5_000 + i) * US);
        assert_eq!(events(&d), 1, "CQE {i} of 4");
    }
    post(&mut d, 5_004 * US);
    assert_eq!(events(&d), 2, "the fourth CQE since the last event");
    assert_eq!(
        d.fw.cq_timers.next(),
        None,
        "the deadline went with the event"
    );
    tick(&mut d, 7_000 * US);
    assert_eq!(events(&d), 2);
}

#[test]
fn period_from_cqe_runs_from_the_first_completion() {
    let (mut d, _) = device();
    modify(&mut d, ALL, 10, 0, PERIOD_FROM_CQE).unwrap();
    arm(&mut d);
    post(&mut d, 2_000 * US);
    assert_eq!(events(&d), 0, "held even after a quiet spell");
    post(&mut d, 2_008 * US);
    assert_eq!(d.fw.cq_timers.next(), Some(2_010 * US));
    tick(&mut d, 2_010 * US);
    assert_eq!(events(&d), 1);
    let q = query(&mut d);
    let c = q.cq_context();
    assert_eq!(
        (c.cq_period(), c.cq_max_count(), c.cq_period_mode()),
        (10, 0, 1)
    );
}

#[test]
fn arming_over_pending_completions_follows_the_moderation() {
    let (mut d, _) = device();
    // The longest period (4095 µs) on the model's own clock: held, then raised by the tick.
    modify(&mut d, ALL, 4095, 0, PERIOD_FROM_CQE).unwrap();
    post(&mut d, crate::clock::now_ns());
    let db = CqArmDoorbell {
        sn: 1,
        cmd: CQ_DB_REQ_NOT,
        ci: 0,
        cqn: CQN,
    };
    d.hca
        .fw
        .cq_arm_doorbell(&mut d.bus, crate::datapath::tests::UAR, db);
    assert_eq!(events(&d), 0);
    let at = d.fw.cq_timers.next().expect("a held event");
    tick(&mut d, at - 1);
    assert_eq!(events(&d), 0);
    tick(&mut d, at);
    assert_eq!(events(&d), 1);
}

#[test]
fn a_destroyed_cq_forgets_its_deadline() {
    let (mut d, _) = device();
    modify(&mut d, ALL, 100, 0, PERIOD_FROM_CQE).unwrap();
    arm(&mut d);
    post(&mut d, 1_000 * US);
    assert!(d.fw.cq_timers.next().is_some());
    consume_all(&mut d);
    d.fw.nic.sqs.clear();
    let inp = input::<cmds::DestroyCq>(|i| i.set_cqn(CQN));
    d.hca
        .fw
        .cq_cmd(&mut d.bus, opcode::DESTROY_CQ, &inp, &mut [0u8; 0x10])
        .unwrap();
    assert_eq!(d.fw.cq_timers.next(), None);
    tick(&mut d, 2_000 * US);
    assert_eq!(events(&d), 0);
}

#[test]
fn modify_cq_checks_its_field_select_and_period_mode() {
    let (mut d, _) = device();
    let st = |r: Result<(), CmdError>| r.map_err(|e| e.status);
    // Only the selected fields change.
    modify(&mut d, ALL, 16, 32, 1).unwrap();
    modify(&mut d, CqModifyFields::COUNT.bits(), 99, 8, 0).unwrap();
    let q = query(&mut d);
    let c = q.cq_context();
    assert_eq!(
        (c.cq_period(), c.cq_max_count(), c.cq_period_mode()),
        (16, 8, 1)
    );
    assert_eq!(st(modify(&mut d, 1 << 7, 1, 1, 0)), Err(status::BAD_PARAM));
    assert_eq!(
        st(modify(&mut d, CqModifyFields::OVERRUN.bits(), 0, 0, 0)),
        Err(status::BAD_PARAM)
    );
    assert_eq!(st(modify(&mut d, ALL, 1, 1, 2)), Err(status::BAD_PARAM));
    // A refused command changed nothing.
    let q = query(&mut d);
    let c = q.cq_context();
    assert_eq!(
        (c.cq_period(), c.cq_max_count(), c.cq_period_mode()),
        (16, 8, 1)
    );
    // Without the caps: no moderation, no period-mode change, no START_FROM_CQE.
    d.fw.caps.set_general("cq_period_mode_modify", 0);
    assert_eq!(st(modify(&mut d, ALL, 1, 1, 0)), Err(status::BAD_PARAM));
    modify(&mut d, CqModifyFields::PERIOD.bits(), 5, 0, 0).unwrap();
    d.fw.caps.set_general("cq_moderation", 0);
    assert_eq!(
        st(modify(&mut d, CqModifyFields::PERIOD.bits(), 5, 0, 0)),
        Err(status::BAD_PARAM)
    );
    let mut other = device().0;
    other.fw.caps.set_general("cq_period_start_from_cqe", 0);
    assert_eq!(st(modify(&mut other, ALL, 1, 1, 1)), Err(status::BAD_PARAM));
    assert_eq!(st(modify(&mut other, ALL, 1, 1, 0)), Ok(()));
}
