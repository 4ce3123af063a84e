//! Fault injection through `--fault` and the control socket: failed commands, stalls, fatal
//! health, dropped interrupts, and the control socket's own answers.

mod common;

use std::time::Duration;

use common::{input, out_status, out_syndrome, DeliveryStatus, Driver};
use cx4_hw::{cmd, command as cmds, iseg, status};

fn query_issi() -> Vec<u8> {
    input::<cmds::QueryIssi>(|_| {})
}

/// Status and syndrome of one QUERY_ISSI.
fn issi_result(d: &mut Driver) -> (u8, u32) {
    let out = d.run(&query_issi(), 0x70);
    (out_status(&out), out_syndrome(&out))
}

#[test]
fn control_fail_hits_exactly_the_nth_occurrence() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.model
        .control_ok("fail opcode=0x10a nth=2 status=0x6 syndrome=0x1234");
    assert_eq!(
        issi_result(&mut d),
        (status::OK, 0),
        "first QUERY_ISSI runs"
    );
    assert_eq!(
        issi_result(&mut d),
        (status::RES_BUSY, 0x1234),
        "second QUERY_ISSI: expected the injected RES_BUSY with syndrome 0x1234"
    );
    assert_eq!(
        issi_result(&mut d),
        (status::OK, 0),
        "third QUERY_ISSI runs again"
    );
    let stats = d.model.control("stats");
    assert!(
        stats.contains("QUERY_ISSI=3/1") && stats.contains("state=Enabled"),
        "stats: expected QUERY_ISSI 3 runs 1 error in the Enabled state, seen {stats:?}"
    );
}

#[test]
fn command_line_fault_fails_the_first_enable_hca() {
    let mut d = Driver::start(&[
        "--fault",
        "fail opcode=0x104 nth=1 status=0x5 syndrome=0xabc",
    ]);
    let out = d.run(&input::<cmds::EnableHca>(|_| {}), 0x10);
    assert_eq!(
        (out_status(&out), out_syndrome(&out)),
        (status::BAD_RES, 0xabc),
        "first ENABLE_HCA: expected the injected BAD_RES / 0xabc"
    );
    d.enable_hca();
    assert!(d.model.log().contains("injected failure"));
}

#[test]
fn fail_every_occurrence_until_cleared() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.model.control_ok("fail opcode=0x10a nth=0 status=0x1");
    for _ in 0..3 {
        let (st, synd) = issi_result(&mut d);
        assert_eq!(st, status::INT_ERR, "nth=0 fails every QUERY_ISSI");
        assert_ne!(synd, 0, "default injected syndrome is not 0");
    }
    d.model.control_ok("clear");
    assert_eq!(
        issi_result(&mut d).0,
        status::OK,
        "after clear: expected OK"
    );
}

#[test]
fn stall_keeps_the_entry_owned_by_hardware_until_unstalled() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.model.control_ok("stall");
    d.timeout = Duration::from_millis(150);
    let p = d.post(0, &query_issi(), 0x70);
    d.ring(1);
    assert_eq!(
        d.wait(&p),
        Err(DeliveryStatus::Timeout),
        "stalled command: expected the entry still owned by HW"
    );
    assert_eq!(d.entry(0).ownership(), u32::from(cmd::OWNER_HW));
    assert!(d.model.log().contains("not answered (fault injection)"));
    d.model.control_ok("unstall");
    d.timeout = common::CMD_TIMEOUT;
    assert_eq!(
        d.entry(0).ownership(),
        u32::from(cmd::OWNER_HW),
        "a stalled command stays unanswered after unstall"
    );
    let out = d.exec_on(1, &query_issi(), 0x70).expect("slot 1 answers");
    assert_eq!(out_status(&out), status::OK);
    // The driver may reuse the lost slot by posting a new command into it.
    let out = d.exec_on(0, &query_issi(), 0x70).expect("slot 0 reused");
    assert_eq!(out_status(&out), status::OK);
}

#[test]
fn stall_from_an_opcode_stops_everything_after_it() {
    let mut d = Driver::start(&["--fault", "stall opcode=0x102"]);
    d.enable_hca();
    d.negotiate_issi();
    d.satisfy_pages(1);
    d.satisfy_pages(2);
    d.timeout = Duration::from_millis(100);
    assert_eq!(
        d.exec(&input::<cmds::InitHca>(|_| {}), 0x10),
        Err(DeliveryStatus::Timeout),
        "INIT_HCA is the stall point"
    );
    assert_eq!(
        d.exec_on(1, &query_issi(), 0x70),
        Err(DeliveryStatus::Timeout),
        "after the stall point every command stalls"
    );
    d.model.control_ok("unstall");
    d.timeout = common::CMD_TIMEOUT;
    d.exec_on(2, &query_issi(), 0x70)
        .expect("answered after unstall");
}

#[test]
fn fatal_health_fills_the_health_buffer_and_stops_commands() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    assert_eq!(
        d.iseg32(iseg::HEALTH + 0x38),
        0,
        "healthy: no recovery flag"
    );
    d.model.control_ok("health synd=0x5");
    let rfr = d.iseg32(iseg::HEALTH + 0x38);
    assert_ne!(
        rfr & 0x8000_0000,
        0,
        "health +0x38: expected rfr (bit 31) set, seen {rfr:#x}"
    );
    let mut b = [0u8; 4];
    d.client
        .region_read(0, (iseg::HEALTH + 0x3c) as u64, &mut b)
        .unwrap();
    assert_eq!(
        b[1], 5,
        "health syndrome byte at 0x23d: expected 5, seen {b:02x?}"
    );
    d.timeout = Duration::from_millis(100);
    assert_eq!(
        d.exec(&query_issi(), 0x70),
        Err(DeliveryStatus::Timeout),
        "a firmware in a fatal state executes no command"
    );
    assert!(d
        .model
        .log()
        .contains("ignored: firmware is in a fatal state"));
}

#[test]
fn device_reset_recovers_from_fatal_health() {
    let mut d = Driver::start(&["--fault", "health synd=0x9"]);
    let mut b = [0u8; 4];
    d.client
        .region_read(0, (iseg::HEALTH + 0x3c) as u64, &mut b)
        .unwrap();
    assert_eq!(b[1], 9, "--fault health: syndrome 9 from the start");
    d.client.reset().expect("DEVICE_RESET");
    assert_eq!(
        d.iseg32(iseg::HEALTH + 0x38),
        0,
        "reset clears the health buffer"
    );
    assert_eq!(
        d.iseg32(iseg::CMDQ_ADDR_H),
        0,
        "reset forgets the command queue address"
    );
    d.wait_ready();
    let q = d.cmdq;
    d.program_cmdq(q);
    d.enable_hca();
}

#[test]
fn drop_irq_swallows_exactly_one_interrupt() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(3, 1, 0);
    d.model.control_ok("drop-irq vector=1 count=1");
    d.eq_doorbell(eqn, true);
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(d.irq_count(1), 0, "the first interrupt is dropped");
    assert_eq!(d.eq_drain(eqn).len(), 1, "the event itself is written");
    d.eq_doorbell(eqn, true);
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(d.irq_count(1), 1, "the second interrupt arrives");
    assert!(d
        .model
        .log()
        .contains("interrupt dropped (fault injection)"));
}

#[test]
fn drop_irq_waits_for_an_interrupt_that_would_fire() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(3, 1, 0);
    d.model.control_ok("drop-irq vector=1");
    // An event on an unarmed EQ raises no interrupt, so there is nothing to drop yet.
    d.gen_eqe(eqn, 0x20, &[]);
    d.eq_drain(eqn);
    d.eq_doorbell(eqn, true);
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(
        d.irq_count(1),
        0,
        "the first interrupt after the injection must be the one dropped"
    );
    // Arming with an event pending interrupts at once: that one arrives.
    d.eq_doorbell(eqn, true);
    assert_eq!(
        d.irq_count(1),
        1,
        "re-arming over the pending event interrupts"
    );
}

#[test]
fn drop_irq_applies_to_interrupts_raised_by_arming() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(3, 2, 0);
    d.gen_eqe(eqn, 0x20, &[]);
    d.model.control_ok("drop-irq vector=2 count=1");
    d.eq_doorbell(eqn, true);
    assert_eq!(
        d.irq_count(2),
        0,
        "arming over a pending event: expected that interrupt dropped"
    );
    d.eq_doorbell(eqn, true);
    assert_eq!(d.irq_count(2), 1, "the next arm interrupts");
}

#[test]
fn control_socket_answers_errors_for_bad_specs_and_keeps_serving() {
    let d = Driver::start(&[]);
    for bad in [
        "explode",
        "fail",
        "fail opcode=zz",
        "fail opcode=0x104 colour=red",
        "drop-irq",
        "gen-cqe",
        "pages n=lots",
    ] {
        let a = d.model.control(bad);
        assert!(
            a.starts_with("error: "),
            "control {bad:?}: expected an error line, seen {a:?}"
        );
    }
    let a = d.model.control("gen-cqe cqn=1");
    assert_eq!(a, "error: no CQ 0x1", "gen-cqe before any CQ");
    let stats = d.model.control("stats");
    assert!(
        stats.starts_with("state=Disabled"),
        "stats after bad specs: expected a stats line, seen {stats:?}"
    );
}

#[test]
fn control_socket_takes_rx_starve_and_refuses_bad_durations_with_the_reason() {
    let mut d = Driver::start(&[]);
    for (bad, why) in [
        ("rx-starve", "error: rx-starve: ms= is required"),
        (
            "rx-starve ms=60001",
            "error: rx-starve: ms must be 0..=60000, not 60001",
        ),
        ("rx-starve ms=-3", "error: ms=-3 out of range"),
        (
            "rx-starve ms=10 rq=1",
            "error: rx-starve: unknown key \"rq\"",
        ),
    ] {
        assert_eq!(d.model.control(bad), why, "control {bad:?}");
    }
    d.model.control_ok("rx-starve ms=60000");
    d.model.control_ok("rx-starve ms=1");
    d.model.control_ok("rx-starve ms=2000");
    d.model.control_ok("rx-starve ms=0");
    d.model.control_ok("rx-starve ms=0");
    d.model.control_ok("clear");
    assert!(d.model.control("stats").starts_with("state="));
    assert!(d.model.is_alive());
}

#[test]
fn control_socket_takes_roce_wire_and_refuses_bad_shares_with_the_reason() {
    let mut d = Driver::start(&[]);
    for (bad, why) in [
        (
            "roce-wire",
            "error: roce-wire: give at least one of drop=, reorder=, flip=, delay-ms=, ecn= (or off)",
        ),
        (
            "roce-wire drop=101",
            "error: roce-wire: drop must be a percentage 0..=100 with at most one decimal \
             (10, 0.5), not \"101\"",
        ),
        (
            "roce-wire delay-ms=10001",
            "error: roce-wire: delay-ms must be 0..=10000, not 10001",
        ),
        (
            "roce-wire loss=1",
            "error: roce-wire: unknown key \"loss\" (drop, reorder, flip, delay-ms, ecn)",
        ),
        (
            "roce-wire on",
            "error: roce-wire: expected key=value or off, got \"on\"",
        ),
    ] {
        assert_eq!(d.model.control(bad), why, "control {bad:?}");
    }
    d.model
        .control_ok("roce-wire drop=1 reorder=0.5 flip=2 delay-ms=20");
    d.model.control_ok("roce-wire delay-ms=5");
    d.model.control_ok("roce-wire off");
    d.model.control_ok("roce-wire flip=100");
    d.model.control_ok("roce-wire ecn=12.5");
    d.model.control_ok("clear");
    let stats = d.model.control("stats");
    assert!(
        stats.ends_with("wire faults: 0 dropped 0 reordered 0 flipped 0 delayed 0 ce-marked"),
        "stats: expected the roce-wire counters at the end, seen {stats:?}"
    );
    assert!(d.model.is_alive());
}

#[test]
fn bad_command_line_fault_is_rejected_at_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cx4-model"))
        .args(["--socket", "/nonexistent/x", "--fault", "fail opcode=nope"])
        .output()
        .expect("run cx4-model");
    assert_eq!(
        out.status.code(),
        Some(2),
        "bad --fault: expected exit code 2, seen {:?}",
        out.status
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad number"),
        "expected the reason, seen {err:?}"
    );
}

#[test]
fn control_socket_survives_extreme_counts() {
    let mut d = Driver::up(&[]);
    d.create_eq(3, 0, cx4_hw::eq::EventMask::PAGE_REQUEST.bits());
    assert_eq!(issi_result(&mut d).0, status::OK);
    for line in [
        "drop-irq vector=0 count=4294967295",
        "drop-irq vector=0 count=4294967295",
        "fail opcode=0x10a nth=4294967295",
        "pages n=2147483647",
        "pages n=2147483647",
        "pages n=-2147483648",
        "pages n=-2147483648",
    ] {
        let a = d.model.control(line);
        assert!(
            a == "ok" || a.starts_with("error: "),
            "control {line:?}: expected ok or an error, seen {a:?}"
        );
    }
    assert!(
        d.model.control("stats").starts_with("state=Initialized"),
        "the control socket must keep answering after extreme counts"
    );
    assert_eq!(issi_result(&mut d).0, status::OK, "commands still run");
    assert!(d.model.is_alive());
    assert!(!d.model.log().contains("panicked"), "no panic in the model");
}

#[test]
fn delay_irq_delivers_the_interrupt_late_until_cleared() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(3, 1, 0);
    d.model.control_ok("delay-irq vector=1 ms=300");
    d.eq_doorbell(eqn, true);
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(
        d.irq_count(1),
        0,
        "delayed interrupt: expected nothing at once"
    );
    let start = std::time::Instant::now();
    let mut seen = 0;
    while seen == 0 && start.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
        seen = d.irq_count(1);
    }
    assert_eq!(seen, 1, "delayed interrupt: expected it within 3 s");
    assert!(
        start.elapsed() >= Duration::from_millis(250),
        "delayed interrupt: expected ~300 ms late, seen {:?}",
        start.elapsed()
    );
    d.model.control_ok("clear");
    d.eq_drain(eqn);
    d.eq_doorbell(eqn, true);
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(
        d.irq_count(1),
        1,
        "after clear: expected the interrupt at once"
    );
}
