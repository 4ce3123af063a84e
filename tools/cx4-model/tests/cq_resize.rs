//! CQ resize (`MODIFY_CQ` op_mod RESIZE, as mlx5_ib's `mlx5_ib_resize_cq` sends it): the
//! RESIZE_CQ CQE in the old ring at the producer index, production continuing into the new
//! ring with the same counter, libmlx5's copy of the unconsumed CQEs
//! (`mlx5_cq_resize_copy_cqes`) giving every completion exactly once and in order across the
//! switch; the PRM errors for bad sizes and page lists, and random inputs never hurting the
//! model.
//!
//! CQEs come from the model's `gen-cqe` test hook: a REQ CQE whose `wqe_counter` is the CQ's
//! producer index when it was written.

mod common;

use common::{input, out_status, view, Driver, Rng, UNMAPPED};
use cx4_hw::{
    command as cmds,
    cq::{
        cqe::{self, Cqe64},
        CqResizeFields, ModifyCqIn, ModifyCqOut, QueryCqOut, MODIFY_CQ_OP_MOD_RESIZE,
    },
    status,
};
use zerocopy::{FromBytes, IntoBytes};

const PAGE: usize = 4096;

fn up() -> Driver {
    Driver::up(&[])
}

fn query_cq(d: &mut Driver, cqn: u32) -> QueryCqOut {
    view(&d.ok::<cmds::QueryCq>(|i| i.set_cqn(cqn)))
}

/// Fresh ring pages for `2^log_size` 64-byte CQEs, pre-filled as libmlx5 does (invalid
/// opcode, owner 1).
fn new_ring(d: &mut Driver, log_size: u8) -> Vec<u64> {
    let bytes = (Cqe64::SIZE << log_size).max(PAGE);
    let pas: Vec<u64> = (0..bytes / PAGE).map(|_| d.alloc_page()).collect();
    let mut c = Cqe64::new();
    c.set_op_own(cqe::OP_OWN_SW_INIT.into());
    for &p in &pas {
        for k in 0..PAGE / Cqe64::SIZE {
            d.write(p + (k * Cqe64::SIZE) as u64, c.as_bytes());
        }
    }
    pas
}

/// The MODIFY_CQ input mlx5_ib builds for a resize to `2^log_size` entries on `pas`.
fn resize_input(cqn: u32, log_size: u8, pas: &[u64]) -> Vec<u8> {
    let mut v = input::<cmds::ModifyCq>(|i| {
        i.set_op_mod(MODIFY_CQ_OP_MOD_RESIZE.into());
        i.set_cqn(cqn);
        i.set_modify_field_select_resize_field_select(
            (CqResizeFields::LOG_SIZE | CqResizeFields::PG_OFFSET | CqResizeFields::PG_SIZE).bits(),
        );
        let c = i.cq_context_mut();
        c.set_log_page_size(0);
        c.set_page_offset(0);
        c.set_cqe_sz(cx4_hw::cq::cqe_stride::S64.into());
        c.set_log_cq_size(log_size.into());
    });
    v.resize(ModifyCqIn::SIZE + pas.len() * 8, 0);
    for (i, &pa) in pas.iter().enumerate() {
        ModifyCqIn::set_pas(&mut v, i, pa).expect("sized");
    }
    v
}

/// What libmlx5 does once `ibv_cmd_resize_cq` returned: copy the software-owned CQEs from
/// the consumer index up to the RESIZE_CQ CQE into the new ring one index further on (owner
/// bit of the new ring), step over the RESIZE_CQ CQE, switch rings. Returns how many CQEs
/// were copied.
fn libmlx5_switch(d: &mut Driver, cqn: u32, log_size: u8, pas: Vec<u64>) -> u32 {
    let (old_log, ci) = {
        let c = &d.cqs[&cqn];
        (c.log_size, c.ci)
    };
    let mut i = ci;
    let mut copied = 0;
    loop {
        let s = d.cqe_at(cqn, i);
        assert!(
            cqe::cqe_owned_by_sw(s.op_own() as u8, i, old_log.into()),
            "old ring index {i}: expected a software-owned CQE up to the RESIZE_CQ CQE"
        );
        if s.opcode() == u32::from(cqe::opcode::RESIZE_CQ) {
            break;
        }
        let n = i.wrapping_add(1);
        let off = (n & ((1 << log_size) - 1)) as usize * Cqe64::SIZE;
        let mut e = s;
        e.set_op_own((s.op_own() & !1) | ((n >> log_size) & 1));
        d.write(pas[off / PAGE] + (off % PAGE) as u64, e.as_bytes());
        copied += 1;
        i = n;
        assert!(
            i.wrapping_sub(ci) <= 1 << old_log,
            "walked the whole old ring without a RESIZE_CQ CQE"
        );
    }
    let old = {
        let c = d.cqs.get_mut(&cqn).expect("known CQ");
        c.ci = ci.wrapping_add(1);
        c.log_size = log_size;
        std::mem::replace(&mut c.pas, pas)
    };
    for p in old {
        d.free_page(p);
    }
    copied
}

/// Consumes every software-owned CQE; returns their `wqe_counter`s.
fn drain(d: &mut Driver, cqn: u32) -> Vec<u32> {
    let mut v = Vec::new();
    while let Some(c) = d.cq_next(cqn) {
        v.push(c.wqe_counter());
    }
    d.cq_update_ci(cqn);
    v
}

fn gen(d: &mut Driver, cqn: u32, n: u32) {
    for k in 0..n {
        let a = d.gen_cqe(cqn);
        assert_eq!(a, "ok", "gen-cqe #{k} on CQ {cqn:#x}");
    }
}

/// Grows and shrinks a CQ with completions outstanding on each side of the switch; checks
/// the RESIZE_CQ CQE's place and ownership and that software sees every completion once.
#[test]
fn resize_moves_completions_to_the_new_ring_once_and_in_order() {
    let mut d = up();
    let eqn = d.create_eq(3, 0, 0);
    let cqn = d.create_cq(2, eqn); // 4 entries
    let mut seen = Vec::new();
    // Wrap the small ring once so ownership bits are not all the first pass's.
    gen(&mut d, cqn, 3);
    seen.extend(drain(&mut d, cqn));
    gen(&mut d, cqn, 3); // pi 6, ci 3 after one more consumed
    seen.push(d.cq_next(cqn).unwrap().wqe_counter());
    d.cq_update_ci(cqn);
    let pas = new_ring(&mut d, 5);
    d.run_ok(&resize_input(cqn, 5, &pas), ModifyCqOut::SIZE);
    let r = d.cqe_at(cqn, 6);
    assert_eq!(
        (r.opcode(), r.owner()),
        (u32::from(cqe::opcode::RESIZE_CQ), 1),
        "old ring index 6 (pass 1 of a 4-entry ring): expected a RESIZE_CQ CQE, owner 1"
    );
    let q = query_cq(&mut d, cqn);
    assert_eq!(
        (
            q.cq_context().log_cq_size(),
            q.cq_context().producer_counter()
        ),
        (5, 7),
        "QUERY_CQ after the resize: expected log size 5 and pi 7 (the RESIZE_CQ CQE counts)"
    );
    assert_eq!(
        libmlx5_switch(&mut d, cqn, 5, pas),
        2,
        "two unconsumed CQEs copied"
    );
    gen(&mut d, cqn, 20);
    seen.extend(drain(&mut d, cqn));
    // Shrink with five outstanding.
    gen(&mut d, cqn, 5);
    seen.push(d.cq_next(cqn).unwrap().wqe_counter());
    d.cq_update_ci(cqn);
    let pas = new_ring(&mut d, 3);
    d.run_ok(&resize_input(cqn, 3, &pas), ModifyCqOut::SIZE);
    assert_eq!(
        libmlx5_switch(&mut d, cqn, 3, pas),
        4,
        "four unconsumed CQEs copied"
    );
    gen(&mut d, cqn, 3);
    seen.extend(drain(&mut d, cqn));
    for _ in 0..5 {
        gen(&mut d, cqn, 7);
        seen.extend(drain(&mut d, cqn));
    }
    // Producer indices 6 and 32 were the RESIZE_CQ CQEs.
    let want: Vec<u32> = (0..71).filter(|&i| i != 6 && i != 32).collect();
    assert_eq!(
        seen, want,
        "completions across two resizes: expected each producer index once, in order"
    );
    // An empty CQ resized: nothing to copy, the next CQE follows the RESIZE_CQ CQE.
    let pas = new_ring(&mut d, 2);
    d.run_ok(&resize_input(cqn, 2, &pas), ModifyCqOut::SIZE);
    assert_eq!(libmlx5_switch(&mut d, cqn, 2, pas), 0);
    gen(&mut d, cqn, 2);
    assert_eq!(drain(&mut d, cqn), vec![72, 73]);
    d.destroy_cq(cqn);
}

/// The resize arms nothing and raises no event; an armed CQ still fires on the next CQE in
/// the new ring.
#[test]
fn resize_raises_no_event_and_keeps_the_arm() {
    let mut d = up();
    let eqn = d.create_eq(3, 1, 0);
    let cqn = d.create_cq(2, eqn);
    d.eq_doorbell(eqn, true);
    d.cq_arm(cqn, false);
    let pas = new_ring(&mut d, 4);
    d.run_ok(&resize_input(cqn, 4, &pas), ModifyCqOut::SIZE);
    assert!(
        d.eq_drain(eqn).is_empty(),
        "the RESIZE_CQ CQE raises no completion event"
    );
    libmlx5_switch(&mut d, cqn, 4, pas);
    gen(&mut d, cqn, 1);
    assert_eq!(
        d.eq_drain(eqn).len(),
        1,
        "the arm taken before the resize fires on the first CQE after it"
    );
    assert_eq!(drain(&mut d, cqn), vec![1]);
}

#[test]
fn resize_errors_leave_the_cq_as_it_was() {
    let mut d = up();
    let eqn = d.create_eq(3, 0, 0);
    let cqn = d.create_cq(3, eqn); // 8 entries
    gen(&mut d, cqn, 5); // five outstanding
    let good = new_ring(&mut d, 4);
    let max = 23u8; // beyond the profile's log_max_cq_sz (22)
    let patch = |f: &dyn Fn(&mut ModifyCqIn)| {
        let mut v = resize_input(cqn, 4, &good);
        f(ModifyCqIn::mut_from_prefix(&mut v[..]).unwrap().0);
        v
    };
    let cases: Vec<(&str, Vec<u8>, u8)> = vec![
        ("op_mod 2", patch(&|i| i.set_op_mod(2)), status::BAD_PARAM),
        (
            "unknown CQ",
            patch(&|i| i.set_cqn(cqn + 100)),
            status::BAD_RES,
        ),
        (
            "log_cq_size beyond log_max_cq_sz",
            resize_input(cqn, max, &good),
            status::BAD_PARAM,
        ),
        (
            "log_cq_size 31",
            patch(&|i| i.cq_context_mut().set_log_cq_size(31)),
            status::BAD_PARAM,
        ),
        (
            "128-byte CQEs",
            patch(&|i| i.cq_context_mut().set_cqe_sz(1)),
            status::BAD_PARAM,
        ),
        (
            "page offset",
            patch(&|i| i.cq_context_mut().set_page_offset(3)),
            status::BAD_PARAM,
        ),
        (
            "log_page_size 20",
            patch(&|i| i.cq_context_mut().set_log_page_size(20)),
            status::BAD_PARAM,
        ),
        (
            "unknown field-select bit",
            patch(&|i| i.set_modify_field_select_resize_field_select(0x8 | 0x7)),
            status::BAD_PARAM,
        ),
        (
            "umem valid",
            patch(&|i| i.set_cq_umem_valid(1)),
            status::BAD_PARAM,
        ),
        ("no PAS", resize_input(cqn, 4, &[]), status::BAD_INP_LEN),
        (
            "2 pages, 1 PAS",
            resize_input(cqn, 7, &good),
            status::BAD_INP_LEN,
        ),
        (
            "misaligned PAS",
            resize_input(cqn, 4, &[good[0] + 0x100]),
            status::BAD_PARAM,
        ),
        (
            "unmapped PAS",
            resize_input(cqn, 4, &[UNMAPPED]),
            status::BAD_PARAM,
        ),
        (
            "4 entries for 5 outstanding",
            resize_input(cqn, 2, &good),
            status::BAD_SIZE_OUTS_CQES,
        ),
    ];
    for (what, inp, want) in cases {
        let out = d.run(&inp, ModifyCqOut::SIZE);
        assert_eq!(
            out_status(&out),
            want,
            "MODIFY_CQ resize with {what}: expected {}, seen {}",
            status::status_name(want),
            status::status_name(out_status(&out))
        );
        assert_ne!(
            common::out_syndrome(&out),
            0,
            "MODIFY_CQ resize with {what}: syndrome"
        );
    }
    let q = query_cq(&mut d, cqn);
    assert_eq!(
        (
            q.cq_context().log_cq_size(),
            q.cq_context().producer_counter()
        ),
        (3, 5),
        "after refused resizes: expected the CQ unchanged (log size 3, pi 5)"
    );
    gen(&mut d, cqn, 3); // the old ring, now full
    assert_eq!(drain(&mut d, cqn), (0..8).collect::<Vec<_>>());
    // A full old ring has no room for the RESIZE_CQ CQE.
    gen(&mut d, cqn, 8);
    d.run_err(
        &resize_input(cqn, 4, &good),
        ModifyCqOut::SIZE,
        status::BAD_SIZE_OUTS_CQES,
    );
    drain(&mut d, cqn);
    // Exactly full afterwards is refused too: the new ring must leave one entry free.
    gen(&mut d, cqn, 4);
    let small = new_ring(&mut d, 2);
    d.run_err(
        &resize_input(cqn, 2, &small),
        ModifyCqOut::SIZE,
        status::BAD_SIZE_OUTS_CQES,
    );
    d.run_ok(&resize_input(cqn, 4, &good), ModifyCqOut::SIZE);
    assert_eq!(libmlx5_switch(&mut d, cqn, 4, good), 4);
    assert_eq!(drain(&mut d, cqn), (16..20).collect::<Vec<_>>());
    assert!(d.model.log().contains("MODIFY_CQ resize"), "errors logged");
}

/// Random MODIFY_CQ inputs (op_mod, field select, context bytes, page lists good and bad) on
/// a CQ with random traffic: each gets an answer, a refused one changes nothing, an accepted
/// one keeps every completion flowing, and the model survives.
#[test]
fn random_resize_inputs_never_hurt_the_model() {
    let mut d = up();
    let eqn = d.create_eq(3, 0, 0);
    let cqn = d.create_cq(3, eqn);
    let mut rng = Rng::new(0x00c0_ffee_5eed);
    let mut next = 0u32; // the next wqe_counter software expects
    let mut accepted = 0;
    for round in 0..300 {
        let log_now = d.cqs[&cqn].log_size;
        let outstanding = rng.below(1 << log_now) as u32;
        gen(&mut d, cqn, outstanding);
        let log = rng.below(9) as u8;
        let pas = new_ring(&mut d, log.min(8));
        let mut v = resize_input(cqn, log, &pas);
        let i = ModifyCqIn::mut_from_prefix(&mut v[..]).unwrap().0;
        match rng.below(8) {
            0 => i.set_op_mod(rng.below(4) as u32),
            1 => i.set_modify_field_select_resize_field_select(rng.next_u64() as u32),
            2 => {
                let mut ctx = [0u8; 64];
                rng.fill(&mut ctx);
                i.as_mut_bytes()[0x10..0x50].copy_from_slice(&ctx);
                // The harness lays rings out in 4 KiB pages: a larger page size that the
                // fresh pages happen to be aligned for would be a valid, different request.
                i.cq_context_mut().set_log_page_size(0);
            }
            3 => {
                let k = rng.below(pas.len() as u64) as usize;
                let random = rng.next_u64();
                let bad = rng.pick(&[UNMAPPED, pas[k] + 8, random, 0]);
                ModifyCqIn::set_pas(&mut v, k, bad).unwrap();
            }
            4 => v.truncate(ModifyCqIn::SIZE + rng.below(pas.len() as u64 * 8) as usize),
            _ => {}
        }
        let out = d.run(&v, ModifyCqOut::SIZE);
        let st = out_status(&out);
        if st == status::OK {
            let got = query_cq(&mut d, cqn).cq_context().log_cq_size() as u8;
            libmlx5_switch(&mut d, cqn, got, pas);
        } else {
            for p in pas {
                d.free_page(p);
            }
        }
        let mut got = Vec::new();
        while let Some(c) = d.cq_next(cqn) {
            got.push(c.wqe_counter());
        }
        d.cq_update_ci(cqn);
        assert_eq!(
            got.len() as u32,
            outstanding,
            "round {round} (status {}): expected every generated completion",
            status::status_name(st)
        );
        for w in got {
            assert_eq!(
                w,
                next & 0xffff,
                "round {round} (status {}): expected completion {next}",
                status::status_name(st)
            );
            next += 1;
        }
        if st == status::OK {
            accepted += 1;
            next += 1; // the RESIZE_CQ CQE's producer index, after the outstanding ones
        }
    }
    assert!(
        (30..270).contains(&accepted),
        "expected a mix of accepted and refused resizes, {accepted} of 300 accepted"
    );
    assert_eq!(out_status(&d.ok::<cmds::QueryIssi>(|_| {})), status::OK);
    d.destroy_cq(cqn);
}
