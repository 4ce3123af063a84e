//! The command queue transport: entries, mailbox chains in and out, delivery errors, slots and
//! doorbells, generic command errors (unknown opcode, short input).

mod common;

use std::collections::BTreeSet;

use common::{
    input, out_status, view, DeliveryStatus, Driver, PAGES_SLOT, REGULAR_SLOTS, UNMAPPED,
};
use cx4_hw::{
    caps::{self, cap_type, QueryHcaCapOut},
    cmd::{self, delivery, CmdLayout},
    command as cmds,
    hca::QueryIssiOut,
    pages::{manage_pages_op_mod, ManagePagesOut},
    pd::AllocPdOut,
    status,
};

/// A started, enabled model.
fn enabled() -> Driver {
    let mut d = Driver::start(&[]);
    d.enable_hca();
    d
}

fn query_issi() -> Vec<u8> {
    input::<cmds::QueryIssi>(|_| {})
}

/// Runs QUERY_ISSI in `slot` and checks it answers.
fn assert_queue_usable(d: &mut Driver, slot: u32, after: &str) {
    let out = d
        .exec_on(slot, &query_issi(), QueryIssiOut::SIZE)
        .unwrap_or_else(|e| panic!("after {after}: expected QUERY_ISSI delivered, seen {e}"));
    assert_eq!(
        out_status(&out),
        status::OK,
        "after {after}: expected QUERY_ISSI OK in slot {slot}"
    );
    let q: QueryIssiOut = view(&out);
    assert_eq!(
        q.supported_issi_dw0(),
        0b11,
        "after {after}: QUERY_ISSI output garbled"
    );
}

#[test]
fn commands_without_mailboxes_complete_inline() {
    let mut d = Driver::start(&[]);
    let p = d.post(0, &input::<cmds::EnableHca>(|_| {}), 0xc);
    assert!(p.in_blocks.is_empty() && p.out_blocks.is_empty());
    d.ring(1);
    let out = d.wait(&p).expect("ENABLE_HCA delivered");
    assert_eq!(out.len(), 0xc);
    assert_eq!(out_status(&out), status::OK, "ENABLE_HCA: expected OK");
}

#[test]
fn one_block_in_and_out_chains_carry_the_message() {
    let mut d = enabled();
    // QUERY_ISSI: 16 bytes in (inline), 0x70 out (one block).
    let p = d.post(0, &query_issi(), QueryIssiOut::SIZE);
    assert_eq!(
        (p.in_blocks.len(), p.out_blocks.len()),
        (0, 1),
        "QUERY_ISSI chain sizes"
    );
    d.ring(1);
    let out = d.wait(&p).expect("delivered");
    let q: QueryIssiOut = view(&out);
    assert_eq!(
        q.supported_issi_dw0(),
        0b11,
        "supported_issi_dw0 lives in the out mailbox (byte 0x6c): expected 0b11, seen {:#x}",
        q.supported_issi_dw0()
    );
}

#[test]
fn output_mailboxes_get_the_entry_token() {
    let mut d = enabled();
    let inp = input::<cmds::QueryHcaCap>(|i| {
        i.set_op_mod(caps::query_op_mod(cap_type::GENERAL, false).into())
    });
    let p = d.post(3, &inp, QueryHcaCapOut::SIZE);
    d.ring(1 << 3);
    // Look at the blocks before wait() frees them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while d.entry(3).ownership() != u32::from(cmd::OWNER_SW) {
        assert!(
            std::time::Instant::now() < deadline,
            "command not completed"
        );
    }
    for (i, &b) in p.out_blocks.iter().enumerate() {
        let blk: cmd::CmdProtBlock = d.read_obj(b);
        assert_eq!(
            (blk.token(), blk.block_num()),
            (u32::from(p.token), i as u32),
            "out block {i}: expected token {} and block_num {i}",
            p.token
        );
    }
    d.wait(&p).expect("delivered");
}

#[test]
fn query_hca_cap_output_spans_eight_mailbox_blocks() {
    let mut d = enabled();
    let inp = input::<cmds::QueryHcaCap>(|i| {
        i.set_op_mod(caps::query_op_mod(cap_type::GENERAL, false).into())
    });
    let p = d.post(0, &inp, QueryHcaCapOut::SIZE);
    // 0x1010 bytes: 16 inline + 4096 in 8 blocks of 512.
    assert_eq!(
        p.out_blocks.len(),
        8,
        "QUERY_HCA_CAP out chain: expected 8 blocks, seen {}",
        p.out_blocks.len()
    );
    d.ring(1);
    let out = d.wait(&p).expect("delivered");
    let via_chain = view::<QueryHcaCapOut>(&out);
    // The same page read again must be byte-identical (no stale or shifted blocks).
    let again = d.query_cap(cap_type::GENERAL, false);
    assert_eq!(
        &via_chain.capability().0[..],
        &again[..],
        "the capability page differs between two reads"
    );
    assert_eq!(
        via_chain.capability().cmd_hca_cap().log_max_cq_sz(),
        22,
        "log_max_cq_sz (in the first block): expected 22"
    );
}

#[test]
fn set_hca_cap_input_spans_eight_mailbox_blocks() {
    let mut d = enabled();
    let cur = d.query_cap(cap_type::GENERAL, true);
    let inp = input::<cmds::SetHcaCap>(|i| {
        i.set_op_mod(caps::set_op_mod(cap_type::GENERAL).into());
        i.capability_mut().0.copy_from_slice(&cur);
        // log_uar_page_sz sits at byte 0x92 of the page: the first mailbox block.
        i.capability_mut().cmd_hca_cap_mut().set_log_uar_page_sz(0);
        i.capability_mut().cmd_hca_cap_mut().set_log_max_qp(12);
    });
    let p = d.post(0, &inp, 0x10);
    assert_eq!(
        p.in_blocks.len(),
        8,
        "SET_HCA_CAP in chain: expected 8 blocks"
    );
    d.ring(1);
    let out = d.wait(&p).expect("delivered");
    assert_eq!(out_status(&out), status::OK, "SET_HCA_CAP: expected OK");
    let now = d.query_cap(cap_type::GENERAL, true);
    assert_eq!(
        view::<caps::HcaCapUnion>(&now).cmd_hca_cap().log_max_qp(),
        12,
        "log_max_qp after SET_HCA_CAP through the chain: expected 12"
    );
}

#[test]
fn manage_pages_with_hundreds_of_addresses_round_trips_through_many_blocks() {
    let mut d = enabled();
    let given = d.give_pages(400);
    // 16 + 400 * 8 bytes: 7 input blocks.
    assert_eq!(cmd::mailbox_blocks(Driver::give_input(&given).len()), 7);
    let mut back = BTreeSet::new();
    // Not initialized: the firmware can give every page back.
    let inp = input::<cmds::ManagePages>(|i| {
        i.set_op_mod(manage_pages_op_mod::TAKE.into());
        i.set_input_num_entries(400);
    });
    let out = d.run_ok(&inp, ManagePagesOut::SIZE + 400 * 8);
    let n = view::<ManagePagesOut>(&out).output_num_entries() as usize;
    for i in 0..n {
        back.insert(ManagePagesOut::pas(&out, i).unwrap());
    }
    let given: BTreeSet<u64> = given.into_iter().collect();
    assert_eq!(
        back, given,
        "pages taken back through 7 output blocks must be exactly the 400 given"
    );
}

#[test]
fn bad_input_token_is_a_token_error_and_the_queue_stays_usable() {
    let mut d = enabled();
    let inp = input::<cmds::SetDriverVersion>(|_| {});
    for block in [0usize, 1] {
        // SET_DRIVER_VERSION is 0x50 bytes: one block; use SET_HCA_CAP for a second block.
        let inp = if block == 0 {
            inp.clone()
        } else {
            input::<cmds::SetHcaCap>(|_| {})
        };
        let p = d.post(2, &inp, 0x10);
        let tok = p.token.wrapping_add(1);
        d.patch_block(p.in_blocks[block], |b| b.set_token(tok.into()));
        d.ring(1 << 2);
        assert_eq!(
            d.wait(&p),
            Err(DeliveryStatus::Error(delivery::TOK_ERR)),
            "token mismatch in input block {block}: expected TOK_ERR"
        );
        assert_queue_usable(&mut d, 2, "a token error");
    }
}

#[test]
fn wrong_block_number_is_a_block_number_error() {
    let mut d = enabled();
    let inp = input::<cmds::SetHcaCap>(|_| {});
    let p = d.post(0, &inp, 0x10);
    d.patch_block(p.in_blocks[3], |b| b.set_block_num(4));
    d.ring(1);
    assert_eq!(
        d.wait(&p),
        Err(DeliveryStatus::Error(delivery::BAD_BLK_NUM_ERR)),
        "input block 3 numbered 4: expected BAD_BLK_NUM_ERR"
    );
    assert_queue_usable(&mut d, 0, "a bad input block number");
    let inp = input::<cmds::QueryHcaCap>(|_| {});
    let p = d.post(0, &inp, QueryHcaCapOut::SIZE);
    d.patch_block(p.out_blocks[7], |b| b.set_block_num(0));
    d.ring(1);
    assert_eq!(
        d.wait(&p),
        Err(DeliveryStatus::Error(delivery::BAD_BLK_NUM_ERR)),
        "output block 7 numbered 0: expected BAD_BLK_NUM_ERR"
    );
    assert_queue_usable(&mut d, 0, "a bad output block number");
}

#[test]
fn misaligned_or_unmapped_mailbox_pointers_are_pointer_errors() {
    let mut d = enabled();
    let cases: [(&str, bool, u64, u8); 6] = [
        ("misaligned in_ptr", true, 0x200, delivery::IN_PTR_ALIGN_ERR),
        (
            "unmapped in_ptr",
            true,
            UNMAPPED,
            delivery::IN_PTR_ALIGN_ERR,
        ),
        ("null in_ptr", true, 0, delivery::IN_PTR_ALIGN_ERR),
        (
            "misaligned out_ptr",
            false,
            0x40,
            delivery::OUT_PTR_ALIGN_ERR,
        ),
        (
            "unmapped out_ptr",
            false,
            UNMAPPED,
            delivery::OUT_PTR_ALIGN_ERR,
        ),
        ("null out_ptr", false, 0, delivery::OUT_PTR_ALIGN_ERR),
    ];
    for (what, is_in, ptr, want) in cases {
        let inp = input::<cmds::SetDriverVersion>(|_| {});
        let p = d.post(5, &inp, 0x100);
        d.patch_entry(&p, |e| {
            let base = if is_in { e.in_ptr() } else { e.out_ptr() };
            // Misalignments are offsets from the real block, the rest absolute.
            let v = if ptr != 0 && ptr < 0x400 {
                base + ptr
            } else {
                ptr
            };
            if is_in {
                e.set_in_ptr(v)
            } else {
                e.set_out_ptr(v)
            }
        });
        d.ring(1 << 5);
        assert_eq!(
            d.wait(&p),
            Err(DeliveryStatus::Error(want)),
            "{what}: expected {}",
            delivery::delivery_status_name(want)
        );
        assert_queue_usable(&mut d, 5, what);
    }
}

#[test]
fn broken_next_pointer_inside_a_chain_is_a_pointer_error() {
    let mut d = enabled();
    let p = d.post(1, &input::<cmds::SetHcaCap>(|_| {}), 0x10);
    d.patch_block(p.in_blocks[4], |b| b.set_next(UNMAPPED));
    d.ring(1 << 1);
    assert_eq!(
        d.wait(&p),
        Err(DeliveryStatus::Error(delivery::IN_PTR_ALIGN_ERR)),
        "input chain broken after block 4: expected IN_PTR_ALIGN_ERR"
    );
    let p = d.post(1, &input::<cmds::QueryHcaCap>(|_| {}), QueryHcaCapOut::SIZE);
    let next = p.out_blocks[2] + 0x100;
    d.patch_block(p.out_blocks[1], |b| b.set_next(next));
    d.ring(1 << 1);
    assert_eq!(
        d.wait(&p),
        Err(DeliveryStatus::Error(delivery::OUT_PTR_ALIGN_ERR)),
        "output chain with a misaligned next pointer: expected OUT_PTR_ALIGN_ERR"
    );
    assert_queue_usable(&mut d, 1, "broken chains");
}

#[test]
fn bad_entry_type_is_a_descriptor_error() {
    let mut d = enabled();
    for ty in [0u8, 6, 8, 0xff] {
        let p = d.post(4, &query_issi(), QueryIssiOut::SIZE);
        d.patch_entry(&p, |e| e.set_xport_type(ty.into()));
        d.ring(1 << 4);
        assert_eq!(
            d.wait(&p),
            Err(DeliveryStatus::Error(delivery::CMD_DESCR_ERR)),
            "entry type {ty}: expected CMD_DESCR_ERR"
        );
    }
    assert_queue_usable(&mut d, 4, "descriptor errors");
}

#[test]
fn impossible_lengths_are_length_errors() {
    let mut d = enabled();
    for (inlen, outlen, want) in [
        (0u32, 0x70u32, delivery::IN_LENGTH_ERR),
        (7, 0x70, delivery::IN_LENGTH_ERR),
        ((1 << 20) + 1, 0x70, delivery::IN_LENGTH_ERR),
        (u32::MAX, 0x70, delivery::IN_LENGTH_ERR),
        (0x10, 4, delivery::OUT_LENGTH_ERR),
        (0x10, u32::MAX, delivery::OUT_LENGTH_ERR),
    ] {
        let p = d.post(6, &query_issi(), QueryIssiOut::SIZE);
        d.patch_entry(&p, |e| {
            e.set_inlen(inlen);
            e.set_outlen(outlen);
        });
        d.ring(1 << 6);
        assert_eq!(
            d.wait(&p),
            Err(DeliveryStatus::Error(want)),
            "inlen {inlen:#x} outlen {outlen:#x}: expected {}",
            delivery::delivery_status_name(want)
        );
    }
    assert_queue_usable(&mut d, 6, "length errors");
}

#[test]
fn doorbell_for_an_entry_software_owns_is_ignored() {
    let mut d = enabled();
    let p = d.post(7, &query_issi(), QueryIssiOut::SIZE);
    d.patch_entry(&p, |e: &mut CmdLayout| {
        e.set_ownership(cmd::OWNER_SW.into());
        e.inline_out_mut().fill(0xee);
    });
    d.ring(1 << 7);
    let e = d.entry(7);
    assert_eq!(
        (e.delivery_status(), e.inline_out()[0]),
        (0, 0xee),
        "an idle slot's doorbell must not execute it"
    );
    assert!(
        d.model
            .log()
            .contains("doorbell for an entry owned by software"),
        "expected the ignored doorbell in the log"
    );
}

#[test]
fn only_the_slots_rung_execute() {
    let mut d = enabled();
    let a = d.post(0, &query_issi(), QueryIssiOut::SIZE);
    let b = d.post(1, &query_issi(), QueryIssiOut::SIZE);
    d.ring(1 << 1);
    d.wait(&b).expect("slot 1 delivered");
    assert_eq!(
        d.entry(0).ownership(),
        u32::from(cmd::OWNER_HW),
        "slot 0 was not rung: expected it still owned by HW"
    );
    d.ring(1);
    d.wait(&a).expect("slot 0 delivered after its own doorbell");
}

#[test]
fn all_31_regular_slots_and_the_pages_slot_complete_in_one_doorbell() {
    let mut d = Driver::up(&[]);
    let mut batch: Vec<(u32, Vec<u8>, usize)> = (0..REGULAR_SLOTS)
        .map(|slot| (slot, input::<cmds::AllocPd>(|_| {}), AllocPdOut::SIZE))
        .collect();
    let pa = d.alloc_page();
    batch.push((PAGES_SLOT, Driver::give_input(&[pa]), ManagePagesOut::SIZE));
    let res = d.exec_many(&batch);
    let mut pds = BTreeSet::new();
    for (slot, r) in res.iter().enumerate() {
        let out = r
            .as_ref()
            .unwrap_or_else(|e| panic!("slot {slot}: expected delivery OK, seen {e}"));
        assert_eq!(out_status(out), status::OK, "slot {slot}: expected OK");
        if (slot as u32) < REGULAR_SLOTS {
            pds.insert(view::<AllocPdOut>(out).pd());
        }
    }
    assert_eq!(
        pds.len(),
        31,
        "31 concurrent ALLOC_PD: expected 31 distinct PDs, seen {pds:?}"
    );
    assert!(!pds.contains(&0), "PD 0 handed out");
    d.fw_pages.insert(pa);
    for pd in pds {
        d.ok::<cmds::DeallocPd>(|i| i.set_pd(pd));
    }
    d.shut_down();
    assert!(d.model.log().contains("page accounting balanced"));
}

#[test]
fn all_32_slots_of_query_issi_at_once_answer_identically() {
    let mut d = enabled();
    let batch: Vec<(u32, Vec<u8>, usize)> = (0..32)
        .map(|slot| (slot, query_issi(), QueryIssiOut::SIZE))
        .collect();
    for (slot, r) in d.exec_many(&batch).into_iter().enumerate() {
        let out = r.unwrap_or_else(|e| panic!("slot {slot}: {e}"));
        let q: QueryIssiOut = view(&out);
        assert_eq!(
            (out_status(&out), q.supported_issi_dw0()),
            (status::OK, 0b11),
            "slot {slot}: expected OK with ISSIs 0b11"
        );
    }
}

#[test]
fn unknown_opcodes_are_bad_op_with_a_syndrome() {
    let mut d = enabled();
    for op in [0x0u16, 0x106, 0x600, 0x7ff, 0xffff] {
        let inp = input::<cmds::QueryIssi>(|i| i.set_opcode(op.into()));
        d.run_err(&inp, 0x10, status::BAD_OP);
    }
}

#[test]
fn inputs_shorter_than_the_command_are_bad_input_length() {
    let mut d = Driver::start(&[]);
    let mut inp = input::<cmds::EnableHca>(|_| {});
    inp.truncate(8);
    d.run_err(&inp, 0x10, status::BAD_INP_LEN);
    d.enable_hca();
    let mut inp = input::<cmds::SetIssi>(|i| i.set_current_issi(1));
    inp.truncate(8);
    d.run_err(&inp, 0x10, status::BAD_INP_LEN);
}

#[test]
fn the_queue_can_move_to_a_new_page() {
    let mut d = enabled();
    let page = d.alloc_page();
    d.cmdq = page;
    d.program_cmdq(page);
    assert_queue_usable(&mut d, 9, "moving the queue");
}
