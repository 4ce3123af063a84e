//! Bounded, seeded fuzzing of the model through its real interfaces: random command entries
//! and mailbox chains, garbage inputs for every opcode, random BAR0 / config space accesses and
//! control-socket lines. The model must never panic or exit, every entry must come back with a
//! known delivery status, every delivered output with a known command status, and a valid
//! command must still be answered afterwards.
//!
//! `CX4_FUZZ_SEED` overrides the seed, `CX4_FUZZ_MS` the time budget per test (default 2500).
//! Garbage pointers only ever name the scratch area at the top of guest RAM, unmapped or
//! misaligned addresses, never the harness's own queue and mailbox pages.

mod common;

use std::time::{Duration, Instant};

use common::{
    input, out_status, DeliveryStatus, Driver, Posted, Rng, RAM_BASE, RAM_SIZE, SCRATCH_BASE,
    SCRATCH_SIZE, UNMAPPED,
};
use cx4_hw::{
    bits::Layout,
    cmd::{self, delivery},
    command::{self as cmds, Command},
    eq::EventMask,
    status,
};

fn seed(salt: u64) -> u64 {
    std::env::var("CX4_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_c0ff_ee00_0000)
        ^ salt
}

fn budget() -> Duration {
    let ms = std::env::var("CX4_FUZZ_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2500);
    Duration::from_millis(ms)
}

/// `(opcode, fixed input size, fixed output size)` of every command the firmware implements.
fn commands() -> Vec<(u16, usize, usize)> {
    fn c<C: Command>() -> (u16, usize, usize) {
        (C::OPCODE, <C::In as Layout>::SIZE, <C::Out as Layout>::SIZE)
    }
    vec![
        c::<cmds::EnableHca>(),
        c::<cmds::DisableHca>(),
        c::<cmds::QueryIssi>(),
        c::<cmds::SetIssi>(),
        c::<cmds::InitHca>(),
        c::<cmds::TeardownHca>(),
        c::<cmds::QueryAdapter>(),
        c::<cmds::SetDriverVersion>(),
        c::<cmds::QueryPages>(),
        c::<cmds::ManagePages>(),
        c::<cmds::QueryHcaCap>(),
        c::<cmds::SetHcaCap>(),
        c::<cmds::AccessReg>(),
        c::<cmds::AllocUar>(),
        c::<cmds::DeallocUar>(),
        c::<cmds::CreateEq>(),
        c::<cmds::DestroyEq>(),
        c::<cmds::QueryEq>(),
        c::<cmds::GenEqe>(),
        c::<cmds::CreateCq>(),
        c::<cmds::DestroyCq>(),
        c::<cmds::QueryCq>(),
        c::<cmds::ModifyCq>(),
        c::<cmds::AllocPd>(),
        c::<cmds::DeallocPd>(),
        c::<cmds::AllocTransportDomain>(),
        c::<cmds::DeallocTransportDomain>(),
        c::<cmds::QueryVportState>(),
        c::<cmds::QueryNicVportContext>(),
        c::<cmds::ModifyNicVportContext>(),
        c::<cmds::QueryHcaVportPkey>(),
        c::<cmds::CreateFlowTable>(),
        c::<cmds::DestroyFlowTable>(),
        c::<cmds::SetFlowTableRoot>(),
    ]
}

/// A pointer-like value that never names the harness's own pages.
fn rand_ptr(r: &mut Rng) -> u64 {
    match r.below(9) {
        0 => 0,
        1 => UNMAPPED + r.below(1 << 30),
        2 => (SCRATCH_BASE + r.below(SCRATCH_SIZE)) & !0x3ff,
        3 => SCRATCH_BASE + r.below(SCRATCH_SIZE),
        4 => u64::MAX - r.below(0x10000),
        5 => RAM_BASE + RAM_SIZE - r.below(8) * 0x400,
        6 => RAM_BASE + RAM_SIZE + r.below(0x10000),
        7 => r.next_u64() | (1 << 63),
        _ => (SCRATCH_BASE + r.below(SCRATCH_SIZE)) & !0xfff,
    }
}

/// A random length around `fixed`.
fn rand_len(r: &mut Rng, fixed: usize) -> usize {
    match r.below(6) {
        0 => 8 + r.below(fixed as u64) as usize,
        1 => fixed + 8 * r.below(600) as usize,
        2 => 8 + r.below(0x2000) as usize,
        _ => fixed,
    }
}

/// A garbage input for `op`: zeroed, random or sparsely random fixed part, pointer-like
/// trailing words, the opcode kept, a random op_mod now and then.
fn garbage_input(r: &mut Rng, op: u16, fixed: usize) -> Vec<u8> {
    let len = rand_len(r, fixed);
    let mut v = vec![0u8; len];
    match r.below(3) {
        0 => {}
        1 => r.fill(&mut v),
        _ => {
            for _ in 0..r.below(8) + 1 {
                let i = r.below(len as u64) as usize;
                v[i] = r.next_u64() as u8;
            }
        }
    }
    // Trailing words look like page addresses.
    if len > fixed {
        for w in v[fixed..].chunks_mut(8) {
            let p = rand_ptr(r).to_be_bytes();
            w.copy_from_slice(&p[..w.len()]);
        }
    }
    let hdr = cx4_hw::cmd::MboxIn::mut_from_prefix(&mut v[..]);
    if let Ok((h, _)) = hdr {
        h.set_opcode(op.into());
        if r.chance(1, 2) {
            h.set_op_mod(r.below(5) as u32);
        }
    }
    // The CQ doorbell record is a pointer in the fixed part: keep it pointer-like.
    if op == cx4_hw::opcode::CREATE_CQ && v.len() >= cx4_hw::cq::CreateCqIn::SIZE {
        let (i, _) = cx4_hw::cq::CreateCqIn::mut_from_prefix(&mut v[..]).expect("sized");
        i.cq_context_mut().set_dbr_addr(rand_ptr(r));
    }
    v
}

use zerocopy::FromBytes;

/// A plausible EQ or CQ creation on scratch memory with random geometry.
fn scratch_queue_input(r: &mut Rng, d: &Driver) -> Vec<u8> {
    let uar = if r.chance(3, 4) {
        d.uar.unwrap_or(8)
    } else {
        r.below(1 << 24) as u32
    };
    let log = r.below(8) as u8;
    let pas: Vec<u64> = (0..r.below(6)).map(|_| rand_ptr(r)).collect();
    if r.chance(1, 2) {
        let mask = if r.chance(1, 2) {
            r.next_u64()
        } else {
            EventMask::ASYNC_BASE.bits()
        };
        Driver::create_eq_input(uar, log, r.below(6) as u16, mask, &pas)
    } else {
        let eqn = r.below(4) as u8;
        Driver::create_cq_input(uar, eqn, log, rand_ptr(r), &pas)
    }
}

/// Object numbers the fuzzer saw handed out (UARs, PDs, TDs, CQs, flow tables; EQs apart).
#[derive(Default)]
struct Known {
    ids: Vec<u32>,
    eqns: Vec<u32>,
}

impl Known {
    /// Records the object a successful command created.
    fn learn(&mut self, op: u16, out: &[u8]) {
        use cx4_hw::opcode::*;
        if out_status(out) != status::OK || self.ids.len() > 256 {
            return;
        }
        match op {
            ALLOC_UAR | ALLOC_PD | ALLOC_TRANSPORT_DOMAIN | CREATE_CQ | CREATE_FLOW_TABLE => {
                // All five answers carry the 24-bit number in the same field.
                self.ids
                    .push(common::view::<cx4_hw::pd::AllocPdOut>(out).pd())
            }
            CREATE_EQ => self
                .eqns
                .push(common::view::<cx4_hw::eq::CreateEqOut>(out).eq_number()),
            _ => {}
        }
    }

    fn id(&self, r: &mut Rng) -> u32 {
        if self.ids.is_empty() || r.chance(1, 8) {
            r.below(1 << 24) as u32
        } else {
            r.pick(&self.ids)
        }
    }

    fn eqn(&self, r: &mut Rng) -> u32 {
        if self.eqns.is_empty() || r.chance(1, 8) {
            r.below(256) as u32
        } else {
            r.pick(&self.eqns)
        }
    }
}

/// Points the object-number and register fields of a garbage input at live objects and real
/// registers, so the fuzzer gets past the first lookups.
fn steer(r: &mut Rng, op: u16, v: &mut [u8], k: &Known) {
    use cx4_hw::{cq, eq, flow, opcode::*, pd, regs, uar};
    macro_rules! at {
        ($t:ty, |$i:ident| $body:expr) => {
            if let Ok(($i, _)) = <$t>::mut_from_prefix(&mut v[..]) {
                $body;
            }
        };
    }
    match op {
        ACCESS_REG => at!(regs::AccessRegisterIn, |i| i
            .set_register_id(r.pick(regs::id::ALL).0.into())),
        DEALLOC_UAR => at!(uar::DeallocUarIn, |i| i.set_uar(k.id(r))),
        DEALLOC_PD => at!(pd::DeallocPdIn, |i| i.set_pd(k.id(r))),
        DEALLOC_TRANSPORT_DOMAIN => at!(pd::DeallocTransportDomainIn, |i| i
            .set_transport_domain(k.id(r))),
        DESTROY_CQ => at!(cq::DestroyCqIn, |i| i.set_cqn(k.id(r))),
        QUERY_CQ => at!(cq::QueryCqIn, |i| i.set_cqn(k.id(r))),
        MODIFY_CQ => at!(cq::ModifyCqIn, |i| i.set_cqn(k.id(r))),
        DESTROY_EQ => at!(eq::DestroyEqIn, |i| i.set_eq_number(k.eqn(r))),
        QUERY_EQ => at!(eq::QueryEqIn, |i| i.set_eq_number(k.eqn(r))),
        GEN_EQE => at!(eq::GenEqeIn, |i| i.set_eq_number(k.eqn(r))),
        DESTROY_FLOW_TABLE => at!(flow::DestroyFlowTableIn, |i| i.set_table_id(k.id(r))),
        SET_FLOW_TABLE_ROOT => at!(flow::SetFlowTableRootIn, |i| i.set_table_id(k.id(r))),
        CREATE_FLOW_TABLE => at!(flow::CreateFlowTableIn, |i| {
            i.set_table_type(0);
            i.set_other_vport(0);
            i.flow_table_context_mut().set_table_miss_id(k.id(r));
        }),
        _ => {}
    }
}

/// Checks one collected command.
fn check(res: &Result<Vec<u8>, DeliveryStatus>, out_len: usize, what: &str, d: &Driver) {
    match res {
        Ok(out) => {
            assert_eq!(out.len(), out_len, "{what}: output length");
            let st = out_status(out);
            assert!(
                status::ALL.iter().any(|&(s, _)| s == st),
                "{what}: expected a known command status, seen {st:#x}"
            );
        }
        Err(DeliveryStatus::Error(e)) => assert!(
            delivery::ALL.iter().any(|&(s, _)| s == *e),
            "{what}: expected a known delivery status, seen {e:#x}"
        ),
        Err(DeliveryStatus::Timeout) => panic!(
            "{what}: the entry never came back; model log:\n{}",
            d.model.log_tail(20)
        ),
    }
}

/// The model is alive, logged no panic, and answers a valid command in a sane way.
fn assert_model_healthy(d: &mut Driver, what: &str) {
    assert!(
        d.model.is_alive(),
        "{what}: the model exited; log:\n{}",
        d.model.log_tail(30)
    );
    let log = d.model.log();
    assert!(
        !log.contains("panicked"),
        "{what}: the model panicked; log:\n{}",
        d.model.log_tail(30)
    );
    let out = d
        .exec_on(0, &input::<cmds::QueryAdapter>(|_| {}), 0x110)
        .unwrap_or_else(|e| panic!("{what}: a valid QUERY_ADAPTER was not delivered: {e}"));
    let st = out_status(&out);
    assert!(
        st == status::OK || st == status::BAD_SYS_STATE,
        "{what}: QUERY_ADAPTER afterwards: expected OK (or BAD_SYS_STATE if the fuzzer \
         disabled the function), seen {}",
        status::status_name(st)
    );
    assert!(
        d.model.control("stats").starts_with("state="),
        "{what}: the control socket stopped answering"
    );
}

/// Mutates the envelope of a posted command; returns whether it stays owned by hardware.
fn mutate_envelope(r: &mut Rng, d: &Driver, p: &Posted) -> bool {
    let mut hw = true;
    for _ in 0..r.below(3) + 1 {
        match r.below(12) {
            0 => d.patch_entry(p, |e| e.set_xport_type(r.next_u64() as u32 & 0xff)),
            1 => d.patch_entry(p, |e| {
                e.set_inlen(match r.below(3) {
                    0 => r.below(32) as u32,
                    1 => r.next_u64() as u32,
                    _ => r.below(0x11_0000) as u32,
                })
            }),
            2 => d.patch_entry(p, |e| {
                e.set_outlen(match r.below(3) {
                    0 => r.below(32) as u32,
                    1 => r.next_u64() as u32,
                    _ => r.below(0x11_0000) as u32,
                })
            }),
            3 => d.patch_entry(p, |e| e.set_in_ptr(rand_ptr(r))),
            4 => d.patch_entry(p, |e| e.set_out_ptr(rand_ptr(r))),
            5 => d.patch_entry(p, |e| e.set_token(r.next_u64() as u32 & 0xff)),
            6 => d.patch_entry(p, |e| {
                // Random delivery bits, ownership kept with hardware.
                e.set_status_own((r.next_u64() as u32 & 0xfe) | 1)
            }),
            7 if r.chance(1, 8) => {
                d.patch_entry(p, |e| e.set_ownership(0));
                hw = false;
            }
            8..=10 => {
                let blocks: Vec<u64> = p.in_blocks.iter().chain(&p.out_blocks).copied().collect();
                if blocks.is_empty() {
                    continue;
                }
                let b = r.pick(&blocks);
                match r.below(3) {
                    0 => d.patch_block(b, |blk| blk.set_token(r.next_u64() as u32 & 0xff)),
                    1 => d.patch_block(b, |blk| blk.set_block_num(r.below(12) as u32)),
                    _ => d.patch_block(b, |blk| blk.set_next(rand_ptr(r))),
                }
            }
            _ => {
                let mut junk = [0u8; cx4_hw::cmd::INLINE_LEN];
                r.fill(&mut junk);
                d.patch_entry(p, |e| e.inline_in_mut().copy_from_slice(&junk));
            }
        }
    }
    hw
}

#[test]
fn random_command_entries_and_chains_never_kill_the_model() {
    let mut r = Rng::new(seed(1));
    let mut d = Driver::up(&[]);
    d.create_eq(3, 0, EventMask::CMD.bits() | EventMask::PAGE_REQUEST.bits());
    d.timeout = Duration::from_secs(1);
    let table = commands();
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < budget() && n < 20_000 {
        n += 1;
        let (op, fixed, out_fixed) = r.pick(&table);
        let inp = garbage_input(&mut r, op, fixed);
        let out_len = rand_len(&mut r, out_fixed);
        // Several slots per doorbell now and then.
        let count = if r.chance(1, 8) { 1 + r.below(6) } else { 1 };
        let mut posted = Vec::new();
        let mut bits = 0u32;
        for _ in 0..count {
            let slot = r.below(32) as u32;
            if bits & (1 << slot) != 0 {
                continue;
            }
            let p = d.post(slot, &inp, out_len);
            let hw = if r.chance(2, 3) {
                mutate_envelope(&mut r, &d, &p)
            } else {
                true
            };
            bits |= 1 << slot;
            posted.push((p, hw));
        }
        // Stray bits for idle slots must be ignored.
        let stray = if r.chance(1, 10) {
            r.next_u64() as u32
        } else {
            0
        };
        d.ring(bits | (stray & !bits));
        for (p, hw) in &posted {
            let what = format!("iteration {n}, slot {}, opcode {op:#x}", p.slot);
            if *hw {
                let res = d.wait(p);
                check(&res, p.out_len, &what, &d);
            } else {
                let e = d.entry(p.slot);
                assert_eq!(
                    e.ownership(),
                    u32::from(cmd::OWNER_SW),
                    "{what}: a software-owned entry must be left alone"
                );
            }
        }
        if n.is_multiple_of(500) {
            assert!(d.model.is_alive(), "iteration {n}: the model exited");
        }
        // Keep the command EQ from overrunning forever: consume and re-arm.
        if n.is_multiple_of(4) {
            if let Some(&eqn) = d.eqs.keys().next() {
                d.eq_drain(eqn);
                d.eq_doorbell(eqn, true);
            }
        }
    }
    eprintln!("envelope fuzz: {n} iterations, seed {:#x}", seed(1));
    assert_model_healthy(&mut d, "after envelope fuzzing");
}

#[test]
fn garbage_inputs_for_every_opcode_get_sane_statuses_in_every_state() {
    let mut r = Rng::new(seed(2));
    let mut d = Driver::start(&[]);
    let table = commands();
    let start = Instant::now();
    let mut n = 0u64;
    let mut phase = 0;
    let mut known = Known::default();
    let mut succeeded = 0u64;
    while start.elapsed() < budget() && n < 30_000 {
        n += 1;
        // Move through the life cycle: disabled, enabled, initialized, back.
        if n % 1500 == 1 {
            phase += 1;
            let _ = d.exec(&input::<cmds::TeardownHca>(|_| {}), 0x10);
            let _ = d.exec(&input::<cmds::DisableHca>(|_| {}), 0x10);
            d.eqs.clear();
            d.cqs.clear();
            d.uar = None;
            if phase % 3 != 0 {
                d.enable_hca();
            }
            if phase % 3 == 2 {
                let _ = d.exec(&input::<cmds::SetIssi>(|i| i.set_current_issi(1)), 0x10);
                // Pages come from scratch so a later TAKE hands back nothing the harness uses.
                let mut next = phase as u64 * 64;
                for stage in [1u16, 2] {
                    let want = d.query_pages(stage).max(0) as u64;
                    let pas: Vec<u64> = (next..next + want)
                        .map(|i| SCRATCH_BASE + i % 4096 * 4096)
                        .collect();
                    next += want;
                    let _ = d.exec(&Driver::give_input(&pas), 0x10);
                }
                let _ = d.exec(&input::<cmds::InitHca>(|_| {}), 0x10);
                let _ = d.exec(&input::<cmds::AllocUar>(|_| {}), 0x10);
                d.uar = Some(8);
            }
        }
        let (op, fixed, out_fixed) = if r.chance(1, 10) {
            (r.next_u64() as u16, 0x10 + r.below(0x40) as usize, 0x10)
        } else {
            r.pick(&table)
        };
        let mut inp = if (op == cx4_hw::opcode::CREATE_EQ || op == cx4_hw::opcode::CREATE_CQ)
            && r.chance(1, 2)
        {
            scratch_queue_input(&mut r, &d)
        } else {
            garbage_input(&mut r, op, fixed)
        };
        if r.chance(2, 3) {
            steer(&mut r, op, &mut inp, &known);
        }
        let out_len = rand_len(&mut r, out_fixed);
        let slot = if op == cx4_hw::opcode::MANAGE_PAGES {
            common::PAGES_SLOT
        } else {
            r.below(31) as u32
        };
        let res = d.exec_on(slot, &inp, out_len);
        let what = format!(
            "iteration {n} (phase {phase}), opcode {op:#x}, inlen {}",
            inp.len()
        );
        match &res {
            Ok(out) => {
                check(&res, out_len, &what, &d);
                known.learn(op, out);
                if out_status(out) == status::OK {
                    succeeded += 1;
                }
            }
            Err(e) => panic!("{what}: a well-formed entry must be delivered, seen {e}"),
        }
        if n.is_multiple_of(2000) {
            assert!(d.model.is_alive(), "iteration {n}: the model exited");
        }
    }
    eprintln!(
        "input fuzz: {n} iterations ({succeeded} succeeded), seed {:#x}",
        seed(2)
    );
    assert_model_healthy(&mut d, "after input fuzzing");
}

#[test]
fn random_bar_config_and_control_traffic_never_kill_the_model() {
    let mut r = Rng::new(seed(3));
    let mut d = Driver::up(&[]);
    let eqn = d.create_eq(3, 1, EventMask::ASYNC_BASE.bits());
    let cqn = d.create_cq(2, eqn);
    let bar = cx4_hw::pci::BAR0_SIZE;
    let start = Instant::now();
    let mut n = 0u64;
    let words = [
        "fail",
        "drop-irq",
        "delay-irq",
        "pages",
        "gen-cqe",
        "clear",
        "stats",
        "unstall",
        "opcode",
        "bogus",
        "",
    ];
    let keys = [
        "opcode",
        "nth",
        "status",
        "syndrome",
        "vector",
        "count",
        "ms",
        "n",
        "cqn",
        "solicited",
        "synd",
        "x",
    ];
    while start.elapsed() < budget() && n < 20_000 {
        n += 1;
        match r.below(5) {
            0 => {
                let off = match r.below(3) {
                    0 => r.below(0x2100),
                    1 => r.below(bar + 64),
                    _ => bar - r.below(16),
                };
                let mut buf = vec![0u8; 1 + r.below(16) as usize];
                let _ = d.client.region_read(0, off, &mut buf);
            }
            1 => {
                // Writes anywhere but the command queue address (the harness needs it).
                let off = match r.below(4) {
                    0 => 0x18,
                    1 => r.below(0x2010) & !3,
                    2 => 0x8000 + r.below(bar - 0x8000),
                    _ => r.below(bar + 64),
                };
                let mut data = vec![0u8; [1usize, 2, 4, 8, 12, 16][r.below(6) as usize]];
                if off < 0x18 && off + data.len() as u64 > 0x10 {
                    continue;
                }
                r.fill(&mut data);
                if off == 0x18 {
                    // Doorbells for slots the harness left idle: ignored.
                    data = vec![0xff; 4];
                }
                let _ = d.client.region_write(0, off, &data);
            }
            2 => {
                // Config space, keeping memory and bus master enabled.
                let off = r.below(0x1100);
                if off < 0x06 {
                    continue;
                }
                let mut data = vec![0u8; 1 + r.below(8) as usize];
                r.fill(&mut data);
                let _ = d.client.region_write(7, off, &data);
                let mut back = vec![0u8; data.len()];
                let _ = d.client.region_read(7, off, &mut back);
            }
            3 => {
                let mut line = r.pick(&words).to_string();
                for _ in 0..r.below(4) {
                    let v = match r.below(5) {
                        0 => format!("{}", r.next_u64() as i64),
                        1 => format!("{:#x}", r.next_u64()),
                        2 => format!("{}", r.below(300)),
                        3 => format!("-{}", r.next_u64() as u32),
                        _ => r
                            .pick(&[
                                "0xffffffff",
                                "4294967294",
                                "2147483647",
                                "-2147483648",
                                "0xffff",
                                "65536",
                                "0",
                                "-1",
                            ])
                            .to_string(),
                    };
                    line.push_str(&format!(" {}={v}", r.pick(&keys)));
                }
                if line.starts_with("gen-cqe") && r.chance(1, 2) {
                    line = format!("gen-cqe cqn={cqn}");
                }
                if line.trim().is_empty() {
                    continue; // blank lines get no answer by design
                }
                let a = d.model.control(&line);
                assert!(
                    a == "ok" || a.starts_with("error: ") || a.starts_with("state="),
                    "control {line:?}: expected ok, error or stats, seen {a:?}"
                );
            }
            _ => {
                // A valid command in between, so faults and doorbells meet real work.
                // Injected failures may carry any status byte: only delivery is checked.
                let res = d.exec_on(r.below(31) as u32, &input::<cmds::QueryIssi>(|_| {}), 0x70);
                assert!(
                    res.is_ok(),
                    "iteration {n}: QUERY_ISSI not delivered: {res:?}; log:\n{}",
                    d.model.log_tail(20)
                );
            }
        }
        if n.is_multiple_of(500) {
            assert!(d.model.is_alive(), "iteration {n}: the model exited");
        }
    }
    eprintln!("BAR/control fuzz: {n} iterations, seed {:#x}", seed(3));
    d.model.control_ok("clear");
    assert_model_healthy(&mut d, "after BAR and control fuzzing");
}
