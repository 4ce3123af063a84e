//! The hostile card (`lie`): command outputs, init-segment reads, completions, the CQ ring
//! behind the driver's back, events and interrupt storms lie as the spec says, within its
//! budget, reproducibly from its seed, and the control socket tallies them.

mod common;

use common::{input, DeliveryStatus, Driver};
use cx4_hw::{command as cmds, iseg};

/// The honest answer to QUERY_ISSI, or the delivery error, as comparable bytes.
fn issi(d: &mut Driver) -> Result<Vec<u8>, DeliveryStatus> {
    d.exec(&input::<cmds::QueryIssi>(|_| {}), 0x70)
}

fn lies(d: &Driver) -> String {
    d.model.control("lies")
}

#[test]
fn lying_commands_stay_within_the_budget_and_are_tallied() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let honest = issi(&mut d).expect("QUERY_ISSI delivered");
    d.model
        .control_ok("lie seed=3 rate=1000 budget=5 classes=cmd");
    let seen: Vec<_> = (0..8).map(|_| issi(&mut d)).collect();
    // Each of the first five lies; a lie may happen to leave these bytes as they were (a zero
    // written over a zero), but not all five.
    let changed = seen[..5]
        .iter()
        .filter(|r| **r != Ok(honest.clone()))
        .count();
    assert!(changed >= 3, "five lies, {changed} visible: {seen:?}");
    assert!(
        seen[5..].iter().all(|r| *r == Ok(honest.clone())),
        "past the budget every answer is honest: {seen:?}"
    );
    let t = lies(&d);
    assert!(
        t.contains("lies: spent seed=3") && t.contains("total 5") && t.contains(" cmd 5/5 "),
        "tally: {t}"
    );
    assert!(d
        .model
        .wait_log("lie #5 cmd-", std::time::Duration::from_secs(5)));
}

#[test]
fn a_seed_replays_its_lies_and_another_seed_tells_others() {
    let run = |seed: u64| {
        let mut d = Driver::start(&[]);
        d.enable_hca();
        d.model
            .control_ok(&format!("lie seed={seed} rate=500 budget=100 classes=cmd"));
        (0..24).map(|_| issi(&mut d)).collect::<Vec<_>>()
    };
    let a = run(11);
    assert_eq!(a, run(11), "seed 11 twice");
    assert_ne!(a, run(12), "seeds 11 and 12");
}

#[test]
fn init_segment_reads_lie_then_tell_the_truth() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let fw = d.iseg32(iseg::FW_REV);
    d.model
        .control_ok("lie seed=1 rate=1000 budget=3 classes=bar");
    let lied: Vec<u32> = (0..3).map(|_| d.iseg32(iseg::FW_REV)).collect();
    assert!(
        lied.iter().all(|&v| v != fw),
        "three lies about {fw:#x}: {lied:x?}"
    );
    assert_eq!(d.iseg32(iseg::FW_REV), fw, "the fourth read is honest");
    assert!(lies(&d).contains(" bar 3/3 "), "{}", lies(&d));
}

/// A CQE's bytes but its timestamp (which differs between any two completions).
fn untimed(c: &cx4_hw::cq::cqe::Cqe64) -> Vec<u8> {
    let mut b = c.0.to_vec();
    b[0x30..0x38].fill(0);
    b
}

#[test]
fn completions_lie_with_valid_ownership_and_phantoms_fill_the_next_slot() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(3, 0, 0);
    let cqn = d.create_cq(3, eqn);
    assert_eq!(d.gen_cqe(cqn), "ok");
    let mut want = d.cq_next(cqn).expect("an honest CQE");
    d.cq_update_ci(cqn);
    // What the device writes for the next one (gen-cqe numbers them by producer index).
    want.set_wqe_counter(1);
    d.model
        .control_ok("lie seed=9 rate=1000 budget=2 classes=cqe,ring");
    assert_eq!(d.gen_cqe(cqn), "ok");
    // The lie: slot 1 is valid for software but is not what the device would have written;
    // the phantom: slot 2 is valid too, though only one completion was produced.
    let lied = d.cq_next(cqn).expect("the lying CQE is owned by software");
    assert_ne!(untimed(&lied), untimed(&want), "the completion lied");
    assert!(
        d.cq_next(cqn).is_some(),
        "the phantom CQE in slot 2 is owned by software"
    );
    assert!(d.cq_next(cqn).is_none(), "slot 3 is not");
    let t = lies(&d);
    assert!(t.contains(" cqe 1/1 ") && t.contains(" ring 1/1"), "{t}");
    assert!(t.contains("ring-phantom-cqe=1"), "{t}");
}

#[test]
fn events_lie_and_interrupts_storm() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(4, 2, 0);
    let cqn = d.create_cq(3, eqn);
    let event = |d: &mut Driver| {
        d.eq_doorbell(eqn, true);
        d.cq_arm(cqn, false);
        assert_eq!(d.gen_cqe(cqn), "ok");
        let ev = d.eq_drain(eqn);
        assert_eq!(ev.len(), 1, "one event per armed completion");
        while d.cq_next(cqn).is_some() {}
        // Everything but the ownership byte.
        ev[0].0[..63].to_vec()
    };
    let honest = event(&mut d);
    assert_eq!(d.irq_count(2), 1, "one interrupt for the honest event");
    d.model
        .control_ok("lie seed=4 rate=1000 budget=2 classes=eqe,irq");
    let lied = event(&mut d);
    assert_ne!(lied, honest, "the completion event lied");
    // A storm: the eventfd counts more than the one interrupt the armed EQ owes.
    assert!(d.irq_count(2) > 1, "interrupt storm");
    let t = lies(&d);
    assert!(t.contains(" eqe 1/1 ") && t.contains(" irq 1/1 "), "{t}");
}

#[test]
fn bad_specs_are_refused_and_off_stops_lying() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    for bad in [
        "lie rate=0",
        "lie rate=1001",
        "lie budget=0",
        "lie classes=cmd,wire",
        "lie colour=red",
        "lie seed",
    ] {
        let r = d.model.control(bad);
        assert!(r.starts_with("error: lie:"), "{bad:?}: {r}");
    }
    let honest = issi(&mut d).expect("delivered");
    d.model.control_ok("lie rate=1000 classes=cmd");
    d.model.control_ok("lie off");
    assert_eq!(issi(&mut d), Ok(honest.clone()), "after lie off");
    d.model.control_ok("lie rate=1000 classes=cmd");
    d.model.control_ok("clear");
    assert_eq!(issi(&mut d), Ok(honest), "after clear");
    assert!(lies(&d).starts_with("lies: off; total 0"), "{}", lies(&d));
}
