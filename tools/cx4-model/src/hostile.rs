//! The hostile card: a seeded, bounded mode in which the model lies to its driver the way broken
//! or malicious hardware can (`lie` in [`crate::faults`]).
//!
//! `lie seed=N rate=PERMILLE budget=N classes=LIST` starts it; `lie off` (or `clear`) ends it.
//! Each *opportunity* of a listed class — a command answered, an event or a completion written,
//! an initialization-segment read, an interrupt raised — lies `rate` times in a thousand, until
//! `budget` lies were told. The classes:
//!
//! - `cmd`: a command's output: its status (a failure, success over a failure, out-of-range
//!   values), its syndrome, one output dword (0, all ones, the top bit, off by one, random),
//!   random bytes, all fields zero, a delivery error in the entry after the firmware did the
//!   work, a wrong token in the output mailboxes;
//! - `eqe`: an event's type (known or unknown), sub-type, the object it names (an unknown
//!   CQ/QP/SRQ number) or its data;
//! - `cqe`: a completion's opcode (errors with random syndromes included), format (compressed),
//!   byte count (past any buffer), WQE counter, QP number, checksum and header-type bits, LRO
//!   fields; the ownership bit stays right, so the driver takes it;
//! - `bar`: an initialization-segment read: random, all ones (a card gone from the bus), one
//!   bit flipped — the firmware version, the command queue's address, the health buffer and
//!   counter, the initializing bit, the timer;
//! - `irq`: an interrupt storm: the vector fires again and again with no event behind it;
//! - `ring`: a write into the driver's ring behind its back: a completion with a valid
//!   ownership bit in the CQ's next slot, which the device never produced (the real next
//!   completion lands on it later).
//!
//! Every lie is numbered and logged (`lie #N kind: ...`); the control socket's `lies` prints the
//! tally per class (opportunities, lies) and per kind. One generator per class, started from
//! the seed, so a class draws the same lies for the same sequence of opportunities whatever the
//! other classes saw: a failing seed replays.

use std::{collections::BTreeMap, fmt::Write as _};

use cx4_hw::cmd::INLINE_LEN;

use crate::rng::Rng;

/// Where the card lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Command outputs and their delivery.
    Cmd,
    /// Event queue entries.
    Eqe,
    /// Completion queue entries.
    Cqe,
    /// Initialization-segment reads.
    Bar,
    /// Interrupts.
    Irq,
    /// Writes into the driver's rings.
    Ring,
}

/// Every class with its name in specs and tallies.
pub const CLASSES: [(Class, &str); 6] = [
    (Class::Cmd, "cmd"),
    (Class::Eqe, "eqe"),
    (Class::Cqe, "cqe"),
    (Class::Bar, "bar"),
    (Class::Irq, "irq"),
    (Class::Ring, "ring"),
];

impl Class {
    fn ix(self) -> usize {
        self as usize
    }

    fn bit(self) -> u8 {
        1 << self.ix()
    }
}

/// A `lie` spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LieSpec {
    /// Seed of the generators.
    pub seed: u64,
    /// Lies per thousand opportunities.
    pub permille: u16,
    /// Most lies this spec tells.
    pub budget: u32,
    /// The classes that lie (bit per [`Class`]).
    pub classes: u8,
}

/// Largest `budget`.
pub const MAX_BUDGET: u32 = 1_000_000;

impl LieSpec {
    /// Parses the words after `lie`: `off` (None), or `key=value` pairs, each optional —
    /// `seed` (1), `rate` per mille 1..=1000 (10), `budget` 1..=[`MAX_BUDGET`] (1000),
    /// `classes` a comma list of [`CLASSES`] or `all` (all).
    pub fn parse(words: &[&str]) -> Result<Option<LieSpec>, String> {
        if words == ["off"] {
            return Ok(None);
        }
        let mut spec = LieSpec {
            seed: 1,
            permille: 10,
            budget: 1000,
            classes: 0x3f,
        };
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| format!("lie: expected key=value or off, got {w:?}"))?;
            let n = || {
                v.parse::<u64>()
                    .map_err(|_| format!("lie: {k}={v:?} is not a number"))
            };
            match k {
                "seed" => spec.seed = n()?,
                "rate" => {
                    spec.permille = match n()? {
                        r @ 1..=1000 => r as u16,
                        r => return Err(format!("lie: rate {r} not in 1..=1000 (per mille)")),
                    }
                }
                "budget" => {
                    spec.budget = match n()? {
                        b @ 1..=1_000_000 => b as u32,
                        b => return Err(format!("lie: budget {b} not in 1..={MAX_BUDGET}")),
                    }
                }
                "classes" => spec.classes = parse_classes(v)?,
                _ => {
                    return Err(format!(
                        "lie: unknown key {k:?} (seed, rate, budget, classes)"
                    ))
                }
            }
        }
        Ok(Some(spec))
    }
}

fn parse_classes(v: &str) -> Result<u8, String> {
    if v == "all" {
        return Ok(0x3f);
    }
    let mut bits = 0;
    for name in v.split(',') {
        let (c, _) = CLASSES.iter().find(|(_, n)| *n == name).ok_or_else(|| {
            format!("lie: unknown class {name:?} (cmd, eqe, cqe, bar, irq, ring, all)")
        })?;
        bits |= c.bit();
    }
    Ok(bits)
}

/// What a lie about a command does beyond the output bytes it rewrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdLie {
    /// The output bytes were rewritten; deliver them as usual.
    Output,
    /// Report this delivery status in the entry (the firmware did the work): one of the
    /// PRM's delivery errors (`MLX5_CMD_DELIVERY_STAT_*`, [`crate::cmdq::Delivery`]).
    Delivery(u8),
    /// Write the output mailboxes with a token that is not the entry's.
    Token,
}

/// The liar of one device: the running spec, its generators and the tally.
#[derive(Debug, Default)]
pub struct Liar {
    spec: Option<LieSpec>,
    rngs: [Rng; 6],
    offered: [u64; 6],
    told: [u64; 6],
    kinds: BTreeMap<&'static str, u64>,
    /// Lies told under the running spec.
    spent: u32,
    /// Lies told since the model started (numbers each lie in the log).
    serial: u64,
}

/// Values a lying dword takes: edges and noise.
fn lying_word(r: &mut Rng, old: u32) -> u32 {
    match r.below(5) {
        0 => 0,
        1 => u32::MAX,
        2 => 0x8000_0000,
        3 => old.wrapping_add(1),
        _ => r.next_u64() as u32,
    }
}

fn put_be32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Liar {
    /// Starts lying as `spec` says (`None`: stops). The tallies carry on.
    pub fn start(&mut self, spec: Option<LieSpec>) {
        if let Some(s) = spec {
            for (i, r) in self.rngs.iter_mut().enumerate() {
                *r = Rng::new(s.seed.wrapping_mul(8).wrapping_add(i as u64));
            }
            self.spent = 0;
            log::warn!(
                "lying: seed {} rate {}/1000 budget {} classes {}",
                s.seed,
                s.permille,
                s.budget,
                class_names(s.classes)
            );
        } else if self.spec.is_some() {
            log::warn!("lying stopped after {} lies", self.spent);
        }
        self.spec = spec;
    }

    /// Whether any class lies now.
    pub fn active(&self) -> bool {
        self.spec.is_some_and(|s| self.spent < s.budget)
    }

    /// One opportunity of class `c`: whether it lies.
    fn draw(&mut self, c: Class) -> bool {
        let Some(s) = self.spec else { return false };
        if s.classes & c.bit() == 0 || self.spent >= s.budget {
            return false;
        }
        self.offered[c.ix()] += 1;
        if !self.rngs[c.ix()].hit(s.permille) {
            return false;
        }
        self.told[c.ix()] += 1;
        self.spent += 1;
        self.serial += 1;
        true
    }

    fn note(&mut self, kind: &'static str, what: std::fmt::Arguments) {
        *self.kinds.entry(kind).or_default() += 1;
        log::warn!("lie #{} {kind}: {what}", self.serial);
    }

    /// A command's output `out` (header first) for `opcode`: rewritten in place if this one
    /// lies, with what else to do.
    pub fn cmd(&mut self, opcode: u16, out: &mut [u8]) -> Option<CmdLie> {
        if out.len() < 8 || !self.draw(Class::Cmd) {
            return None;
        }
        let r = &mut self.rngs[Class::Cmd.ix()];
        let (kind, lie) = match r.below(7) {
            0 => {
                // A failure, or success over a failure.
                out[0] = if out[0] != 0 && r.below(2) == 0 {
                    0
                } else {
                    r.pick(&[0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0xf, 0x10, 0x40, 0xff])
                };
                put_be32(out, 4, r.next_u64() as u32);
                ("cmd-status", CmdLie::Output)
            }
            1 => {
                put_be32(out, 4, r.next_u64() as u32);
                ("cmd-syndrome", CmdLie::Output)
            }
            2 if out.len() >= 12 => {
                let at = 4 * (2 + r.below((out.len() / 4 - 2) as u64) as usize);
                let v = lying_word(r, be32(out, at));
                put_be32(out, at, v);
                ("cmd-field", CmdLie::Output)
            }
            3 if out.len() > 8 => {
                for _ in 0..=r.below(4) {
                    let at = 8 + r.below((out.len() - 8) as u64) as usize;
                    out[at] ^= 1 + r.below(255) as u8;
                }
                ("cmd-bytes", CmdLie::Output)
            }
            4 => {
                out[8..].fill(0);
                ("cmd-zero", CmdLie::Output)
            }
            5 => {
                // Token, block number, output and input pointer, firmware, input and output
                // length, descriptor.
                let d = r.pick(&[0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x10]);
                ("cmd-delivery", CmdLie::Delivery(d))
            }
            _ if out.len() > INLINE_LEN => ("cmd-token", CmdLie::Token),
            _ => {
                out[0] = 0x3;
                ("cmd-status", CmdLie::Output)
            }
        };
        self.note(kind, format_args!("opcode {opcode:#x} {lie:?}"));
        Some(lie)
    }

    /// An event `eqe` (64 bytes, ownership byte last) posted on EQ `eqn`: rewritten if this
    /// one lies.
    pub fn eqe(&mut self, eqn: u32, eqe: &mut [u8]) {
        if eqe.len() < 64 || !self.draw(Class::Eqe) {
            return;
        }
        let r = &mut self.rngs[Class::Eqe.ix()];
        let kind = match r.below(4) {
            0 => {
                // Known types (completion, QP/SRQ/CQ/port/page/command events) and others.
                eqe[1] = r.pick(&[
                    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x10,
                    0x11, 0x12, 0x13, 0x14, 0x15, 0x19, 0x1c, 0x1d, 0x1e, 0x20, 0x25, 0x3f, 0x7f,
                    0xff,
                ]);
                "eqe-type"
            }
            1 => {
                eqe[3] = r.next_u64() as u8;
                "eqe-subtype"
            }
            2 => {
                // The CQ/QP/SRQ number of completion and QP/SRQ events (data bytes 25..28)
                // and of CQ errors (data bytes 1..4): an object the driver never made.
                let n = (r.next_u64() as u32 & 0xff_ffff).to_be_bytes();
                eqe[0x20 + 25..0x20 + 28].copy_from_slice(&n[1..]);
                eqe[0x20 + 1..0x20 + 4].copy_from_slice(&n[1..]);
                "eqe-object"
            }
            _ => {
                for b in &mut eqe[0x20..0x3c] {
                    *b = r.next_u64() as u8;
                }
                "eqe-data"
            }
        };
        self.note(kind, format_args!("EQ {eqn} type {:#x}", eqe[1]));
    }

    /// A completion `cqe` (64 bytes) written to CQ `cqn`: rewritten if this one lies; the
    /// ownership bit (set by the caller afterwards) is left alone.
    pub fn cqe(&mut self, cqn: u32, cqe: &mut [u8]) {
        if cqe.len() < 64 || !self.draw(Class::Cqe) {
            return;
        }
        let r = &mut self.rngs[Class::Cqe.ix()];
        let kind = match r.below(8) {
            0 => {
                let op = r.below(16) as u8;
                cqe[0x3f] = (op << 4) | (cqe[0x3f] & 0xf);
                if op == 0xd || op == 0xe {
                    cqe[0x36] = r.next_u64() as u8;
                    cqe[0x37] = r.next_u64() as u8;
                }
                "cqe-opcode"
            }
            1 => {
                // Bits 3:2: 0 a full CQE, 1 inline scatter, 2 reserved, 3 compressed.
                cqe[0x3f] = (cqe[0x3f] & !0xc) | ((1 + r.below(3) as u8) << 2);
                "cqe-format"
            }
            2 => {
                let v = lying_word(r, be32(cqe, 0x2c));
                put_be32(cqe, 0x2c, v);
                "cqe-byte-cnt"
            }
            3 => {
                let v = r.next_u64() as u16;
                cqe[0x3c..0x3e].copy_from_slice(&v.to_be_bytes());
                "cqe-wqe-counter"
            }
            4 => {
                let n = (r.next_u64() as u32 & 0xff_ffff).to_be_bytes();
                cqe[0x39..0x3c].copy_from_slice(&n[1..]);
                "cqe-qpn"
            }
            5 => {
                cqe[0x1c] ^= 1 + r.below(255) as u8;
                cqe[0x1d] ^= r.next_u64() as u8;
                cqe[0x14] ^= r.next_u64() as u8;
                "cqe-csum"
            }
            6 => {
                for b in &mut cqe[0x04..0x0c] {
                    *b = r.next_u64() as u8;
                }
                cqe[0x20] = r.next_u64() as u8;
                "cqe-lro"
            }
            _ => {
                for _ in 0..=r.below(8) {
                    let at = r.below(0x3f) as usize;
                    cqe[at] = r.next_u64() as u8;
                }
                "cqe-bytes"
            }
        };
        self.note(kind, format_args!("CQ {cqn:#x} op_own {:#04x}", cqe[0x3f]));
    }

    /// A read of `out.len()` bytes at `off` in the initialization segment: rewritten if this
    /// one lies.
    pub fn bar(&mut self, off: u64, out: &mut [u8]) {
        if out.is_empty() || !self.draw(Class::Bar) {
            return;
        }
        let r = &mut self.rngs[Class::Bar.ix()];
        let kind = match r.below(3) {
            0 => {
                out.iter_mut().for_each(|b| *b = r.next_u64() as u8);
                "bar-random"
            }
            1 => {
                out.fill(0xff);
                "bar-ones"
            }
            _ => {
                let bit = r.below(out.len() as u64 * 8) as usize;
                out[bit / 8] ^= 1 << (bit % 8);
                "bar-flip"
            }
        };
        self.note(
            kind,
            format_args!("BAR0 {off:#x} len {} -> {out:02x?}", out.len()),
        );
    }

    /// An interrupt raised on `vector`: how many more times to raise it (0 unless this one
    /// lies).
    pub fn irq(&mut self, vector: u16) -> u32 {
        if !self.draw(Class::Irq) {
            return 0;
        }
        let n = 2 + self.rngs[Class::Irq.ix()].below(63) as u32;
        self.note("irq-storm", format_args!("vector {vector} {n} more times"));
        n
    }

    /// After a completion went to CQ `cqn`: a phantom completion (64 random bytes; the caller
    /// writes it with a valid ownership bit into the next slot) if this one lies.
    pub fn ring(&mut self, cqn: u32) -> Option<[u8; 64]> {
        if !self.draw(Class::Ring) {
            return None;
        }
        let r = &mut self.rngs[Class::Ring.ix()];
        let mut c = [0u8; 64];
        c.iter_mut().for_each(|b| *b = r.next_u64() as u8);
        // Mostly plausible opcodes (requester, responder, errors), sometimes anything.
        if r.below(4) != 0 {
            c[0x3f] = (r.pick(&[0x0u8, 0x1, 0x2, 0x3, 0xd, 0xe]) << 4) | (c[0x3f] & 0xf);
        }
        self.note(
            "ring-phantom-cqe",
            format_args!("CQ {cqn:#x} op_own {:#04x}", c[0x3f]),
        );
        Some(c)
    }

    /// Lies told in all.
    pub fn total(&self) -> u64 {
        self.told.iter().sum()
    }

    /// The tally, one line (the control socket's `lies`).
    pub fn line(&self) -> String {
        let mut s = match self.spec {
            Some(sp) => format!(
                "lies: {} seed={} rate={}/1000 budget={} spent={} classes={};",
                if self.active() { "on" } else { "spent" },
                sp.seed,
                sp.permille,
                sp.budget,
                self.spent,
                class_names(sp.classes)
            ),
            None => "lies: off;".to_string(),
        };
        let _ = write!(s, " total {}", self.total());
        for (c, name) in CLASSES {
            let _ = write!(s, " {name} {}/{}", self.told[c.ix()], self.offered[c.ix()]);
        }
        s += "; kinds";
        for (k, n) in &self.kinds {
            let _ = write!(s, " {k}={n}");
        }
        s
    }
}

fn class_names(bits: u8) -> String {
    CLASSES
        .iter()
        .filter(|(c, _)| bits & c.bit() != 0)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
#[path = "hostile_tests.rs"]
mod tests;
