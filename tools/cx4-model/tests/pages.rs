//! Firmware pages: QUERY_PAGES demand per stage, MANAGE_PAGES give/take/cant-give, refused
//! pages, page request events, and the model's page accounting report.

mod common;

use common::{input, view, Driver, RAM_BASE, RAM_SIZE, UNMAPPED};
use cx4_hw::{
    command as cmds,
    eq::{event_type, EventMask},
    pages::{manage_pages_op_mod, query_pages_op_mod, ManagePagesOut},
    status,
};

const REGULAR: u16 = 3;

/// Answers every page request EQE on `eqn` (give or take); returns the requests seen.
fn serve_page_requests(d: &mut Driver, eqn: u8) -> Vec<i32> {
    let mut seen = Vec::new();
    for e in d.eq_drain(eqn) {
        assert_eq!(
            e.event_type(),
            u32::from(event_type::PAGE_REQUEST),
            "pages EQ: expected only PAGE_REQUEST events, seen type {:#x}",
            e.event_type()
        );
        let n = e.req_pages().num_pages() as i32;
        assert_eq!(e.req_pages().func_id(), 0, "page request for function 0");
        if n > 0 {
            d.give_pages(n as usize);
        } else {
            let back = d.take_pages((-n) as u32);
            assert_eq!(
                back.len(),
                (-n) as usize,
                "firmware asked to return {} pages: expected them all back, seen {}",
                -n,
                back.len()
            );
        }
        seen.push(n);
    }
    d.eq_doorbell(eqn, true);
    seen
}

#[test]
fn boot_and_init_demand_drops_to_zero_once_given() {
    let mut d = Driver::start(&["--boot-pages", "5", "--init-pages", "7"]);
    d.enable_hca();
    for (stage, want) in [(query_pages_op_mod::BOOT, 5), (query_pages_op_mod::INIT, 7)] {
        assert_eq!(
            d.query_pages(stage),
            want,
            "QUERY_PAGES op_mod {stage}: expected {want} pages"
        );
        d.give_pages(want as usize - 1);
        assert_eq!(
            d.query_pages(stage),
            1,
            "QUERY_PAGES op_mod {stage} after all but one: expected 1"
        );
        d.give_pages(1);
        assert_eq!(
            d.query_pages(stage),
            0,
            "QUERY_PAGES op_mod {stage} once given: expected 0"
        );
    }
    d.init_hca();
}

#[test]
fn no_page_demand_means_no_manage_pages_is_needed() {
    let mut d = Driver::start(&["--boot-pages", "0", "--init-pages", "0"]);
    d.enable_hca();
    assert_eq!(d.query_pages(query_pages_op_mod::BOOT), 0);
    assert_eq!(d.query_pages(query_pages_op_mod::INIT), 0);
    d.init_hca();
    d.ok::<cmds::TeardownHca>(|_| {});
    assert_eq!(d.reclaim_pages(), 0, "nothing given, nothing to reclaim");
    d.ok::<cmds::DisableHca>(|_| {});
    assert!(d.model.log().contains("page accounting balanced: given 0"));
}

#[test]
fn init_hca_without_its_pages_is_no_resources() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.err::<cmds::InitHca>(status::NO_RES, |_| {});
    d.satisfy_pages(query_pages_op_mod::BOOT);
    d.err::<cmds::InitHca>(status::NO_RES, |_| {});
    d.query_pages(query_pages_op_mod::INIT);
    d.give_pages(31);
    d.err::<cmds::InitHca>(status::NO_RES, |_| {});
    d.give_pages(1);
    d.init_hca();
}

#[test]
fn giving_a_page_twice_is_refused_and_reported() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.query_pages(query_pages_op_mod::BOOT);
    let a = d.give_pages(1)[0];
    let out = d.give_pas(&[a]);
    assert_eq!(
        common::out_status(&out),
        status::BAD_PARAM,
        "second give of {a:#x}: expected BAD_PARAM"
    );
    let b = d.alloc_page();
    let c = d.alloc_page();
    // A duplicate inside one request, and a valid page next to a held one: all refused.
    for pas in [vec![b, b], vec![c, a]] {
        let out = d.give_pas(&pas);
        assert_eq!(
            common::out_status(&out),
            status::BAD_PARAM,
            "give of {pas:x?}: expected BAD_PARAM"
        );
        assert_ne!(common::out_syndrome(&out), 0);
    }
    assert_eq!(
        d.query_pages(query_pages_op_mod::BOOT),
        15,
        "refused requests must record nothing: expected 15 boot pages still missing"
    );
    assert_eq!(
        d.reclaim_pages(),
        1,
        "only the one page given once comes back"
    );
    d.ok::<cmds::DisableHca>(|_| {});
    let log = d.model.log();
    assert!(
        log.contains(&format!("driver gave page {a:#x} twice")),
        "expected the double give in the log"
    );
    assert!(
        log.contains(
            "page accounting UNBALANCED: given 1, returned 1, still held 0, given twice 3"
        ),
        "expected the double gives to make the accounting UNBALANCED; log:\n{}",
        d.model.log_tail(5)
    );
}

#[test]
fn misaligned_unmapped_and_partial_pages_are_refused() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let good = d.alloc_page();
    for (what, pa) in [
        ("misaligned", good + 0x800),
        ("unmapped", UNMAPPED),
        ("null", 0),
        ("past the end of RAM", RAM_BASE + RAM_SIZE),
        ("below RAM", RAM_BASE - 0x1000),
    ] {
        let out = d.give_pas(&[good, pa]);
        assert_eq!(
            common::out_status(&out),
            status::BAD_PARAM,
            "give of a {what} page {pa:#x}: expected BAD_PARAM"
        );
        assert_ne!(common::out_syndrome(&out), 0, "{what}: syndrome");
    }
    // The last page of RAM is fine.
    let last = RAM_BASE + RAM_SIZE - 0x1000;
    let out = d.give_pas(&[last]);
    assert_eq!(common::out_status(&out), status::OK, "the last RAM page");
    d.fw_pages.insert(last);
    assert_eq!(d.reclaim_pages(), 1);
}

#[test]
fn give_with_fewer_addresses_than_announced_is_bad_input_length() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    let pa = d.alloc_page();
    let mut inp = Driver::give_input(&[pa]);
    cx4_hw::pages::ManagePagesIn::mut_from_prefix(&mut inp[..])
        .unwrap()
        .0
        .set_input_num_entries(2);
    d.run_err(&inp, ManagePagesOut::SIZE, status::BAD_INP_LEN);
}

use zerocopy::FromBytes;

#[test]
fn page_commands_refuse_unknown_op_mods_other_functions_and_the_disabled_state() {
    let mut d = Driver::start(&[]);
    d.err::<cmds::QueryPages>(status::BAD_SYS_STATE, |i| i.set_op_mod(1));
    d.err::<cmds::ManagePages>(status::BAD_SYS_STATE, |i| {
        i.set_op_mod(manage_pages_op_mod::GIVE.into())
    });
    d.enable_hca();
    for m in [0u32, 4, 0xffff] {
        d.err::<cmds::QueryPages>(status::BAD_PARAM, |i| i.set_op_mod(m));
    }
    d.err::<cmds::QueryPages>(status::BAD_PARAM, |i| {
        i.set_op_mod(1);
        i.set_function_id(2);
    });
    d.err::<cmds::ManagePages>(status::BAD_PARAM, |i| i.set_op_mod(3));
    d.err::<cmds::ManagePages>(status::BAD_PARAM, |i| {
        i.set_op_mod(manage_pages_op_mod::TAKE.into());
        i.set_embedded_cpu_function(1);
    });
    // QUERY_PAGES with an output too short for num_pages.
    let inp = input::<cmds::QueryPages>(|i| i.set_op_mod(1));
    d.run_err(&inp, 0x8, status::BAD_OUTP_LEN);
}

#[test]
fn cant_give_is_accepted_and_logged() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.ok::<cmds::ManagePages>(|i| {
        i.set_op_mod(manage_pages_op_mod::CANT_GIVE.into());
        i.set_input_num_entries(16);
    });
    assert!(d.model.log().contains("driver could not give 16 pages"));
}

#[test]
fn take_returns_no_more_than_fits_in_the_output() {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d.give_pages(10);
    let inp = input::<cmds::ManagePages>(|i| {
        i.set_op_mod(manage_pages_op_mod::TAKE.into());
        i.set_input_num_entries(10);
    });
    let out = d.run_ok(&inp, ManagePagesOut::SIZE + 3 * 8);
    let n = view::<ManagePagesOut>(&out).output_num_entries();
    assert_eq!(
        n, 3,
        "take of 10 with room for 3: expected 3 returned, seen {n}"
    );
    for i in 0..3 {
        let pa = ManagePagesOut::pas(&out, i).unwrap();
        assert!(d.fw_pages.remove(&pa), "returned {pa:#x} was not given");
    }
    assert_eq!(d.reclaim_pages(), 7);
}

#[test]
fn running_function_returns_only_regular_pages_until_teardown() {
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(4, 0, EventMask::PAGE_REQUEST.bits());
    assert_eq!(
        serve_page_requests(&mut d, eqn),
        vec![8],
        "creating the pages EQ: expected one request for the 8 regular pages"
    );
    assert_eq!(d.query_pages(REGULAR), 0, "regular demand met");
    assert_eq!(
        d.take_pages(100).len(),
        8,
        "while running only the 8 regular pages can come back"
    );
    assert!(d.take_pages(100).is_empty(), "boot and init pages stay");
    d.destroy_eq(eqn);
    let uar = d.uar.take().unwrap();
    d.ok::<cmds::DeallocUar>(|i| i.set_uar(uar));
    d.ok::<cmds::TeardownHca>(|_| {});
    assert_eq!(
        d.reclaim_pages(),
        48,
        "after TEARDOWN_HCA the 16 boot and 32 init pages come back"
    );
    d.ok::<cmds::DisableHca>(|_| {});
    assert!(
        d.model
            .log()
            .contains("teardown: page accounting balanced: given 56, returned 56"),
        "expected a balanced report at DISABLE_HCA; log:\n{}",
        d.model.log_tail(5)
    );
}

#[test]
fn leaked_pages_make_the_disable_report_unbalanced() {
    let mut d = Driver::up(&[]);
    let uar = d.uar.take().unwrap();
    d.ok::<cmds::DeallocUar>(|i| i.set_uar(uar));
    d.ok::<cmds::TeardownHca>(|_| {});
    d.take_pages(40);
    d.ok::<cmds::DisableHca>(|_| {});
    let log = d.model.log();
    assert!(
        log.contains("page accounting UNBALANCED: given 48, returned 40, still held 8"),
        "expected the 8 leaked pages reported at DISABLE_HCA; log:\n{log}"
    );
}

#[test]
fn control_socket_page_requests_reach_the_pages_eq() {
    let mut d = Driver::up(&[]);
    assert_eq!(
        d.model.control("pages n=8"),
        "error: no EQ takes page requests",
        "without a pages EQ the request has nowhere to go"
    );
    let eqn = d.create_eq(4, 0, EventMask::PAGE_REQUEST.bits());
    // The refused request above must not have raised the demand.
    assert_eq!(
        serve_page_requests(&mut d, eqn),
        vec![8],
        "expected the initial request for the 8 regular pages only"
    );
    d.model.control_ok("pages n=8");
    assert_eq!(serve_page_requests(&mut d, eqn), vec![8]);
    assert_eq!(
        d.query_pages(REGULAR),
        0,
        "regular demand met after 16 pages"
    );
    d.model.control_ok("pages n=-4");
    assert_eq!(serve_page_requests(&mut d, eqn), vec![-4]);
    assert_eq!(
        d.query_pages(REGULAR),
        0,
        "after returning the 4 pages the firmware asked back, it must not want them again"
    );
    d.shut_down();
    assert!(d.model.log().contains("page accounting balanced"));
}
