//! Event queues and completion queues: their commands and errors, EQE/CQE ownership across
//! wraparound, arming and interrupts, overrun, command-completion and completion events.
//!
//! CQEs come from the model's `gen-cqe` control-socket test hook (no command produces them
//! until QPs are modelled).

mod common;

use common::{input, out_status, view, Driver, UNMAPPED};
use cx4_hw::{
    command as cmds,
    cq::{cqe, CqModifyFields, CreateCqOut, QueryCqOut},
    eq::{event_type, EventMask, GenEqOut, QueryEqOut},
    status,
};

/// A running function with a UAR and eventfds.
fn up() -> Driver {
    Driver::up(&[])
}

/// The EQE payload that numbers generated events.
fn numbered(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

fn query_eq(d: &mut Driver, eqn: u8) -> QueryEqOut {
    view(&d.ok::<cmds::QueryEq>(|i| i.set_eq_number(eqn.into())))
}

#[test]
fn eq_commands_before_init_hca_are_state_errors() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let pas = [common::RAM_BASE];
    let inp = Driver::create_eq_input(8, 3, 0, 0, &pas);
    d.run_err(&inp, 0x10, status::BAD_SYS_STATE);
    d.err::<cmds::QueryEq>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::DestroyEq>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::GenEqe>(status::BAD_SYS_STATE, |_| {});
}

#[test]
fn create_eq_validates_size_pages_uar_and_vector() {
    let mut d = up();
    let uar = d.uar.unwrap();
    let ring = d.alloc_eq_ring(3);
    let good = |uar: u32, log: u8, vector: u16| Driver::create_eq_input(uar, log, vector, 0, &ring);
    let cases: Vec<(&str, Vec<u8>, u8)> = vec![
        ("log_eq_size 0", good(uar, 0, 0), status::BAD_PARAM),
        ("log_eq_size 23", good(uar, 23, 0), status::BAD_PARAM),
        ("unallocated UAR", good(uar + 1, 3, 0), status::BAD_RES),
        ("vector 4 of 4", good(uar, 3, 4), status::BAD_PARAM),
        ("no PAS for 2 pages", good(uar, 7, 0), status::BAD_INP_LEN),
        (
            "misaligned PAS",
            Driver::create_eq_input(uar, 3, 0, 0, &[ring[0] + 0x40]),
            status::BAD_PARAM,
        ),
        (
            "unmapped PAS",
            Driver::create_eq_input(uar, 3, 0, 0, &[UNMAPPED]),
            status::BAD_PARAM,
        ),
        (
            "log_page_size 19",
            {
                let mut v = good(uar, 3, 0);
                cx4_hw::eq::CreateEqIn::mut_from_prefix(&mut v[..])
                    .unwrap()
                    .0
                    .eq_context_entry_mut()
                    .set_log_page_size(19);
                v
            },
            status::BAD_PARAM,
        ),
        (
            "page offset",
            {
                let mut v = good(uar, 3, 0);
                cx4_hw::eq::CreateEqIn::mut_from_prefix(&mut v[..])
                    .unwrap()
                    .0
                    .eq_context_entry_mut()
                    .set_page_offset(1);
                v
            },
            status::BAD_PARAM,
        ),
        (
            "input without the PAS",
            good(uar, 3, 0)[..cx4_hw::eq::CreateEqIn::SIZE - 8].to_vec(),
            status::BAD_INP_LEN,
        ),
    ];
    for (what, inp, want) in cases {
        let out = d.run(&inp, 0x10);
        assert_eq!(
            out_status(&out),
            want,
            "CREATE_EQ with {what}: expected {}, seen {}",
            status::status_name(want),
            status::status_name(out_status(&out))
        );
        assert_ne!(
            common::out_syndrome(&out),
            0,
            "CREATE_EQ with {what}: syndrome"
        );
    }
    let eqn = d.create_eq(3, 3, 0);
    assert_eq!(eqn, 0, "the first EQ is number 0");
}

use zerocopy::FromBytes;

#[test]
fn eq_numbers_run_out_at_log_max_eq() {
    let mut d = up();
    let eqns: Vec<u8> = (0..32).map(|_| d.create_eq(1, 0, 0)).collect();
    assert_eq!(eqns, (0..32).collect::<Vec<u8>>(), "EQ numbers 0..32");
    let ring = d.alloc_eq_ring(1);
    let inp = Driver::create_eq_input(d.uar.unwrap(), 1, 0, 0, &ring);
    d.run_err(&inp, 0x10, status::NO_RES);
    d.destroy_eq(7);
    assert_eq!(d.create_eq(1, 0, 0), 7, "a freed EQ number is reused");
}

#[test]
fn query_eq_reports_the_context_and_counters() {
    let mut d = up();
    let uar = d.uar.unwrap();
    let eqn = d.create_eq(4, 2, 0);
    for i in 0..3 {
        assert_eq!(out_status(&d.gen_eqe(eqn, 0x20, &numbered(i))), status::OK);
    }
    d.eq_next(eqn).expect("first event");
    d.eq_doorbell(eqn, true);
    let q = query_eq(&mut d, eqn);
    let c = q.eq_context_entry();
    assert_eq!(
        (
            c.log_eq_size(),
            c.uar_page(),
            c.intr(),
            c.producer_counter(),
            c.consumer_counter()
        ),
        (4, uar, 2, 3, 1),
        "QUERY_EQ: expected log size 4, UAR {uar}, vector 2, pi 3, ci 1"
    );
    d.err::<cmds::QueryEq>(status::BAD_RES, |i| i.set_eq_number(9));
    let short = input::<cmds::QueryEq>(|i| i.set_eq_number(eqn.into()));
    d.run_err(&short, 0x10, status::BAD_OUTP_LEN);
}

#[test]
fn destroy_eq_and_gen_eqe_of_unknown_eqs_are_resource_errors() {
    let mut d = up();
    d.err::<cmds::DestroyEq>(status::BAD_RES, |i| i.set_eq_number(3));
    d.err::<cmds::GenEqe>(status::BAD_RES, |i| i.set_eq_number(3));
    let eqn = d.create_eq(2, 0, 0);
    d.destroy_eq(eqn);
    d.err::<cmds::DestroyEq>(status::BAD_RES, |i| i.set_eq_number(eqn.into()));
    let mut short = input::<cmds::GenEqe>(|i| i.set_eq_number(eqn.into()));
    short.truncate(0x10);
    d.run_err(&short, GenEqOut::SIZE, status::BAD_INP_LEN);
}

#[test]
fn dealloc_uar_under_a_live_eq_is_refused() {
    let mut d = up();
    let uar = d.uar.unwrap();
    let eqn = d.create_eq(2, 0, 0);
    d.err::<cmds::DeallocUar>(status::BAD_RES_STATE, |i| i.set_uar(uar));
    d.destroy_eq(eqn);
    d.ok::<cmds::DeallocUar>(|i| i.set_uar(uar));
    d.uar = None;
}

#[test]
fn eqe_ownership_flips_on_every_pass_over_the_ring() {
    let mut d = up();
    let eqn = d.create_eq(2, 0, 0); // 4 entries
    for i in 0..22u32 {
        let out = d.gen_eqe(eqn, 0x20, &numbered(i));
        assert_eq!(out_status(&out), status::OK, "GEN_EQE #{i}: expected OK");
        let raw = d.eqe_at(eqn, i);
        assert_eq!(
            raw.owner(),
            (i >> 2) & 1,
            "EQE #{i} (slot {}): expected owner bit {} for pass {}",
            i % 4,
            (i >> 2) & 1,
            i >> 2
        );
        let e = d
            .eq_next(eqn)
            .unwrap_or_else(|| panic!("EQE #{i} not owned by software at ci {i}"));
        assert_eq!(
            (e.event_type(), &e.data()[..4]),
            (0x20, &numbered(i)[..]),
            "EQE #{i}: expected type 0x20 carrying its number"
        );
        assert!(
            d.eq_next(eqn).is_none(),
            "after EQE #{i} the next slot still holds the previous pass and must not be valid"
        );
        // Report the consumer index every third event, as a driver batching updates would.
        if i % 3 == 2 {
            d.eq_doorbell(eqn, false);
        }
    }
}

#[test]
fn each_arm_raises_exactly_one_interrupt() {
    let mut d = up();
    let eqn = d.create_eq(3, 1, 0);
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(d.irq_count(1), 0, "unarmed EQ: expected no interrupt");
    d.eq_doorbell(eqn, true);
    assert_eq!(
        d.irq_count(1),
        1,
        "arming with an event pending: expected one interrupt at once"
    );
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(d.irq_count(1), 0, "not re-armed: expected no interrupt");
    assert_eq!(d.eq_drain(eqn).len(), 2);
    d.eq_doorbell(eqn, true);
    assert_eq!(
        d.irq_count(1),
        0,
        "armed with nothing pending: no interrupt"
    );
    d.eq_doorbell(eqn, true);
    d.gen_eqe(eqn, 0x20, &[]);
    d.gen_eqe(eqn, 0x20, &[]);
    assert_eq!(
        d.irq_count(1),
        1,
        "armed twice, two events: expected exactly one interrupt"
    );
    for v in [0u16, 2, 3] {
        assert_eq!(d.irq_count(v), 0, "vector {v} must stay quiet");
    }
    let q = query_eq(&mut d, eqn);
    assert_eq!(
        q.eq_context_entry().st(),
        0xa,
        "after firing the EQ is no longer armed (st 0xa)"
    );
}

#[test]
fn ring_overrun_stops_the_eq_and_is_logged() {
    let mut d = up();
    let eqn = d.create_eq(2, 0, 0);
    for i in 0..4 {
        assert_eq!(out_status(&d.gen_eqe(eqn, 0x20, &numbered(i))), status::OK);
    }
    let out = d.gen_eqe(eqn, 0x20, &numbered(4));
    assert_eq!(
        out_status(&out),
        status::BAD_RES_STATE,
        "fifth event into a full 4-entry EQ: expected BAD_RES_STATE"
    );
    assert!(
        d.model
            .log()
            .contains(&format!("EQ {eqn}: overrun (pi 4 ci 0), EQ stopped")),
        "expected the overrun in the log; log:\n{}",
        d.model.log_tail(5)
    );
    assert_eq!(
        d.eq_drain(eqn).len(),
        4,
        "the four events before the overrun"
    );
    d.eq_doorbell(eqn, true);
    assert_eq!(
        out_status(&d.gen_eqe(eqn, 0x20, &[])),
        status::BAD_RES_STATE,
        "a stopped EQ stays stopped after the consumer catches up"
    );
}

#[test]
fn eq_doorbell_on_a_foreign_uar_is_ignored() {
    let mut d = up();
    let other = d.alloc_uar();
    let eqn = d.create_eq(2, 0, 0);
    d.gen_eqe(eqn, 0x20, &[]);
    d.eq_next(eqn).unwrap();
    let db = cx4_hw::uar::EqDoorbell { eqn, ci: 1 };
    d.uar_write(other, cx4_hw::uar::EQ_DOORBELL_UPDATE_ARM, &db.to_bytes());
    d.uar_write(
        other + 100,
        cx4_hw::uar::EQ_DOORBELL_UPDATE_ARM,
        &db.to_bytes(),
    );
    assert_eq!(
        d.irq_count(0),
        0,
        "a doorbell on the wrong UAR must not arm"
    );
    let q = query_eq(&mut d, eqn);
    assert_eq!(q.eq_context_entry().consumer_counter(), 0, "ci unchanged");
    let log = d.model.log();
    assert!(log.contains(&format!("EQ doorbell for EQ {eqn} not on UAR {other}")));
    assert!(log.contains("that is not allocated, ignored"));
}

#[test]
fn command_completion_events_name_the_finished_slots() {
    let mut d = up();
    let eqn = d.create_eq(4, 0, EventMask::CMD.bits());
    assert!(
        d.eq_drain(eqn).is_empty(),
        "the CREATE_EQ of the command EQ completes by polling: expected no event for it"
    );
    d.eq_doorbell(eqn, true);
    d.exec_on(5, &input::<cmds::QueryIssi>(|_| {}), 0x70)
        .expect("delivered");
    assert_eq!(d.irq_count(0), 1, "one interrupt for the completion");
    let ev = d.eq_drain(eqn);
    assert_eq!(
        ev.len(),
        1,
        "expected one completion event, seen {}",
        ev.len()
    );
    assert_eq!(
        (ev[0].event_type(), ev[0].cmd().vector()),
        (u32::from(event_type::CMD), 1 << 5),
        "expected a CMD event (0x0a) for slot 5"
    );
    let batch: Vec<(u32, Vec<u8>, usize)> = [1u32, 2, 30]
        .iter()
        .map(|&s| (s, input::<cmds::AllocPd>(|_| {}), 0x10))
        .collect();
    for r in d.exec_many(&batch) {
        assert_eq!(out_status(&r.expect("delivered")), status::OK);
    }
    let vectors = d
        .eq_drain(eqn)
        .iter()
        .inspect(|e| assert_eq!(e.event_type(), u32::from(event_type::CMD)))
        .fold(0u32, |v, e| v | e.cmd().vector());
    assert_eq!(
        vectors,
        (1 << 1) | (1 << 2) | (1 << 30),
        "completion vectors: expected slots 1, 2 and 30"
    );
    // A delivery error completes the entry too.
    let p = d.post(9, &input::<cmds::QueryIssi>(|_| {}), 0x70);
    d.patch_entry(&p, |e| e.set_xport_type(0));
    d.ring(1 << 9);
    assert!(d.wait(&p).is_err());
    let ev = d.eq_drain(eqn);
    assert_eq!(
        ev.iter().map(|e| e.cmd().vector()).collect::<Vec<_>>(),
        vec![1 << 9],
        "a failed delivery still raises its completion event"
    );
}

#[test]
fn page_request_events_carry_function_and_count() {
    let mut d = up();
    let eqn = d.create_eq(3, 0, EventMask::PAGE_REQUEST.bits());
    let ev = d.eq_drain(eqn);
    assert_eq!(
        ev.len(),
        1,
        "expected the regular page request at EQ creation"
    );
    assert_eq!(
        (
            ev[0].event_type(),
            ev[0].req_pages().func_id(),
            ev[0].req_pages().num_pages()
        ),
        (u32::from(event_type::PAGE_REQUEST), 0, 8),
        "expected PAGE_REQUEST for function 0, 8 pages"
    );
    d.give_pages(8);
    d.model.control_ok("pages n=8");
    let ev = d.eq_drain(eqn);
    assert_eq!(
        ev.iter()
            .map(|e| e.req_pages().num_pages())
            .collect::<Vec<_>>(),
        vec![8],
        "control socket request: expected one PAGE_REQUEST of 8"
    );
}

// ---- CQs ----

fn query_cq(d: &mut Driver, cqn: u32) -> QueryCqOut {
    view(&d.ok::<cmds::QueryCq>(|i| i.set_cqn(cqn)))
}

#[test]
fn cq_create_query_modify_destroy_and_their_errors() {
    let mut d = up();
    let uar = d.uar.unwrap();
    let eqn = d.create_eq(3, 0, 0);
    let cqn = d.create_cq(4, eqn);
    assert_ne!(cqn, 0, "CQ numbers are never 0");
    let q = query_cq(&mut d, cqn);
    let c = q.cq_context();
    let dbr = d.cqs[&cqn].dbr;
    assert_eq!(
        (
            c.log_cq_size(),
            c.uar_page(),
            c.c_eqn_or_apu_element(),
            c.dbr_addr(),
            c.producer_counter()
        ),
        (4, uar, u32::from(eqn), dbr, 0),
        "QUERY_CQ: expected log size 4, UAR {uar}, EQ {eqn}, DBR {dbr:#x}, pi 0"
    );
    // Moderation: the selected fields change and QUERY_CQ shows them; unknown field-select
    // bits and unknown CQs are refused.
    let sel = (CqModifyFields::PERIOD | CqModifyFields::COUNT).bits();
    d.ok::<cmds::ModifyCq>(|i| {
        i.set_cqn(cqn);
        i.set_modify_field_select_resize_field_select(sel);
        i.cq_context_mut().set_cq_period(16);
        i.cq_context_mut().set_cq_max_count(32);
    });
    let q = query_cq(&mut d, cqn);
    assert_eq!(
        (q.cq_context().cq_period(), q.cq_context().cq_max_count()),
        (16, 32)
    );
    d.err::<cmds::ModifyCq>(status::BAD_PARAM, |i| {
        i.set_cqn(cqn);
        i.set_modify_field_select_resize_field_select(1 << 9);
        i.cq_context_mut().set_cq_period(16);
    });
    d.err::<cmds::ModifyCq>(status::BAD_RES, |i| {
        i.set_cqn(cqn + 100);
        i.set_modify_field_select_resize_field_select(sel);
    });
    d.err::<cmds::QueryCq>(status::BAD_RES, |i| i.set_cqn(cqn + 100));
    d.err::<cmds::DestroyCq>(status::BAD_RES, |i| i.set_cqn(cqn + 100));
    d.err::<cmds::DestroyEq>(status::BAD_RES_STATE, |i| i.set_eq_number(eqn.into()));
    let short = input::<cmds::QueryCq>(|i| i.set_cqn(cqn));
    d.run_err(&short, 0x10, status::BAD_OUTP_LEN);
    d.destroy_cq(cqn);
    d.err::<cmds::DestroyCq>(status::BAD_RES, |i| i.set_cqn(cqn));
    d.destroy_eq(eqn);
}

#[test]
fn create_cq_validates_geometry_doorbell_eq_and_uar() {
    let mut d = up();
    let uar = d.uar.unwrap();
    let eqn = d.create_eq(3, 0, 0);
    let page = d.alloc_page();
    let dbr = d.alloc_page();
    let base =
        |log: u8, dbr: u64, eqn: u8, uar: u32| Driver::create_cq_input(uar, eqn, log, dbr, &[page]);
    let patch = |f: &dyn Fn(&mut cx4_hw::cq::Cqc)| {
        let mut v = base(4, dbr, eqn, uar);
        f(cx4_hw::cq::CreateCqIn::mut_from_prefix(&mut v[..])
            .unwrap()
            .0
            .cq_context_mut());
        v
    };
    let cases: Vec<(&str, Vec<u8>, u8)> = vec![
        ("log_cq_size 23", base(23, dbr, eqn, uar), status::BAD_PARAM),
        ("cqe_sz 3", patch(&|c| c.set_cqe_sz(3)), status::BAD_PARAM),
        (
            "page offset",
            patch(&|c| c.set_page_offset(2)),
            status::BAD_PARAM,
        ),
        (
            "log_page_size 19",
            patch(&|c| c.set_log_page_size(19)),
            status::BAD_PARAM,
        ),
        (
            "2 pages, 1 PAS",
            base(7, dbr, eqn, uar),
            status::BAD_INP_LEN,
        ),
        (
            "misaligned PAS",
            Driver::create_cq_input(uar, eqn, 4, dbr, &[page + 8]),
            status::BAD_PARAM,
        ),
        (
            "misaligned DBR",
            base(4, dbr + 4, eqn, uar),
            status::BAD_PARAM,
        ),
        (
            "unmapped DBR",
            base(4, UNMAPPED, eqn, uar),
            status::BAD_PARAM,
        ),
        ("unknown EQ", base(4, dbr, eqn + 1, uar), status::BAD_RES),
        (
            "unallocated UAR",
            base(4, dbr, eqn, uar + 1),
            status::BAD_RES,
        ),
    ];
    for (what, inp, want) in cases {
        let out = d.run(&inp, CreateCqOut::SIZE);
        assert_eq!(
            out_status(&out),
            want,
            "CREATE_CQ with {what}: expected {}, seen {}",
            status::status_name(want),
            status::status_name(out_status(&out))
        );
        assert_ne!(
            common::out_syndrome(&out),
            0,
            "CREATE_CQ with {what}: syndrome"
        );
    }
    let out = d.run_ok(&base(4, dbr, eqn, uar), CreateCqOut::SIZE);
    assert_ne!(view::<CreateCqOut>(&out).cqn(), 0);
}

#[test]
fn cq_commands_before_init_hca_are_state_errors() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.err::<cmds::CreateCq>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::QueryCq>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::ModifyCq>(status::BAD_SYS_STATE, |_| {});
    d.err::<cmds::DestroyCq>(status::BAD_SYS_STATE, |_| {});
}

#[test]
fn cqe_ownership_flips_on_every_pass_over_the_ring() {
    let mut d = up();
    let eqn = d.create_eq(3, 0, 0);
    let cqn = d.create_cq(2, eqn); // 4 entries
    for i in 0..14u32 {
        assert_eq!(d.gen_cqe(cqn), "ok", "gen-cqe #{i}");
        let raw = d.cqe_at(cqn, i);
        assert_eq!(
            (raw.owner(), raw.opcode()),
            ((i >> 2) & 1, u32::from(cqe::opcode::REQ)),
            "CQE #{i}: expected owner {} and opcode REQ",
            (i >> 2) & 1
        );
        let c = d
            .cq_next(cqn)
            .unwrap_or_else(|| panic!("CQE #{i} not owned by software at ci {i}"));
        assert_eq!(c.wqe_counter(), i, "CQE #{i}: wqe_counter");
        assert!(
            d.cq_next(cqn).is_none(),
            "after CQE #{i} the next slot is from the previous pass and must not be valid"
        );
        d.cq_update_ci(cqn);
    }
    let q = query_cq(&mut d, cqn);
    assert_eq!(
        (
            q.cq_context().producer_counter(),
            q.cq_context().consumer_counter()
        ),
        (14, 14),
        "QUERY_CQ counters after 14 completions"
    );
}

#[test]
fn armed_cq_raises_one_completion_event_per_arm() {
    let mut d = up();
    let eqn = d.create_eq(3, 2, 0);
    let cqn = d.create_cq(3, eqn);
    d.eq_doorbell(eqn, true);
    d.gen_cqe(cqn);
    assert!(
        d.eq_drain(eqn).is_empty(),
        "an unarmed CQ raises no completion event"
    );
    d.cq_next(cqn).unwrap();
    d.cq_arm(cqn, false);
    d.gen_cqe(cqn);
    d.gen_cqe(cqn);
    let ev = d.eq_drain(eqn);
    assert_eq!(
        ev.iter()
            .map(|e| (e.event_type(), e.comp().cqn()))
            .collect::<Vec<_>>(),
        vec![(u32::from(event_type::COMP), cqn)],
        "armed once, two completions: expected one COMP event for CQ {cqn}"
    );
    assert_eq!(d.irq_count(2), 1, "the armed EQ interrupts once");
    // Arming with completions not yet consumed fires at once.
    d.eq_doorbell(eqn, true);
    d.cq_arm(cqn, false);
    assert_eq!(
        d.eq_drain(eqn).len(),
        1,
        "arming behind the producer: expected an immediate event"
    );
    assert_eq!(d.irq_count(2), 1);
    // Solicited arming ignores ordinary completions.
    while d.cq_next(cqn).is_some() {}
    d.eq_doorbell(eqn, true);
    d.cq_arm(cqn, true);
    d.gen_cqe(cqn);
    assert!(
        d.eq_drain(eqn).is_empty(),
        "solicited arm, unsolicited CQE: no event"
    );
    d.model
        .control_ok(&format!("gen-cqe cqn={cqn} solicited=1"));
    assert_eq!(
        d.eq_drain(eqn).len(),
        1,
        "solicited CQE after a solicited arm"
    );
}

#[test]
fn cq_overrun_stops_the_cq_and_raises_a_cq_error_event() {
    let mut d = up();
    let async_eq = d.create_eq(3, 0, EventMask::CQ_ERROR.bits());
    let comp_eq = d.create_eq(3, 1, 0);
    let cqn = d.create_cq(2, comp_eq);
    for i in 0..4 {
        assert_eq!(d.gen_cqe(cqn), "ok", "CQE #{i} fits");
    }
    let a = d.gen_cqe(cqn);
    assert!(
        a.starts_with("error:") && a.contains("overrun"),
        "fifth CQE into a full 4-entry CQ: expected an overrun error, seen {a:?}"
    );
    let ev = d.eq_drain(async_eq);
    assert_eq!(
        ev.len(),
        1,
        "expected one CQ_ERROR event, seen {}",
        ev.len()
    );
    assert_eq!(
        (
            ev[0].event_type(),
            ev[0].cq_err().cqn(),
            ev[0].cq_err().syndrome()
        ),
        (u32::from(event_type::CQ_ERROR), cqn, 1),
        "CQ_ERROR event: expected CQ {cqn} with the overrun syndrome 1"
    );
    assert!(d.model.log().contains("overrun"), "overrun logged");
    let q = query_cq(&mut d, cqn);
    assert_eq!(
        q.cq_context().status(),
        0x9,
        "QUERY_CQ status: overflow (0x9)"
    );
    while d.cq_next(cqn).is_some() {}
    d.cq_update_ci(cqn);
    let a = d.gen_cqe(cqn);
    assert!(
        a.starts_with("error:"),
        "a CQ in error takes no more completions, seen {a:?}"
    );
    assert!(
        d.gen_cqe(cqn + 77).starts_with("error: no CQ"),
        "gen-cqe on an unknown CQ is an error"
    );
}

#[test]
fn cq_arm_doorbell_for_an_unknown_cq_is_ignored() {
    let mut d = up();
    let uar = d.uar.unwrap();
    let db = cx4_hw::uar::CqArmDoorbell {
        sn: 0,
        cmd: 0,
        ci: 0,
        cqn: 0x777,
    };
    d.uar_write(uar, cx4_hw::uar::CQ_DOORBELL, &db.to_bytes());
    assert!(d
        .model
        .log()
        .contains("CQ arm doorbell for CQ 0x777 that does not exist, ignored"));
    assert_eq!(out_status(&d.ok::<cmds::QueryIssi>(|_| {})), status::OK);
}
