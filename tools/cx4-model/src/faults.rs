//! Fault injection, per model instance, set at start (`--fault SPEC`) or at run time through
//! the control socket (`--control PATH`, one SPEC per line, answered `ok` or `error: ...`).
//!
//! SPEC forms:
//! - `fail opcode=0x104 nth=1 status=0x3 syndrome=0x12ab` — the nth (1-based) occurrence of
//!   the opcode fails with that status and syndrome (`nth=0`: every occurrence);
//! - `stall` / `stall opcode=0x102` — stop answering commands (all, or from that opcode on);
//!   `unstall` answers again (stalled commands stay unanswered, like lost firmware work);
//! - `health synd=0x5` — raise a fatal health syndrome (the health buffer reports it, the
//!   firmware stops executing commands) until a function reset; `persist=1`: a hardware fault
//!   that survives resets until `clear`;
//! - `drop-irq vector=0 count=1` — swallow the next interrupts of a vector;
//!   `delay-irq vector=0 ms=200` — deliver the vector's interrupts late;
//! - `pages n=16` — demand (n>0) or give back (n<0) regular pages now, by a page-request event;
//! - `link state=down` / `link state=up` — pull or plug the port's cable (PORT_CHANGE event
//!   when the operational state changes);
//! - `wqe-error count=1` — the next sending WQEs (SEND/LSO) of any SQ fail as a bad lkey would:
//!   a REQ_ERR CQE with LOCAL_PROT_ERR, the SQ to error (the driver recovers it by MODIFY_SQ);
//! - `rq-error count=1` — the next frames any RQ takes fail as a bad lkey in the receive WQE
//!   would: a RESP_ERR CQE with LOCAL_PROT_ERR, the RQ to error (recovered by MODIFY_RQ);
//! - `ec-error count=1` — the next vector-calc WQEs (erasure coding, `roce/vector_calc.rs`) of
//!   any QP fail as an engine fault would: a REQ_ERR CQE with LOCAL_QP_OP_ERR, the QP to error,
//!   its receive WQEs flushed; counted as `ec:` errors (the driver recovers the QP);
//! - `rx-starve ms=500` — for the next `ms` (1..=60000) milliseconds every RQ looks as if the
//!   driver had posted no receive WQE: frames take the empty-RQ path (held with XOFF for a
//!   lossless priority, else dropped as out of buffer) and posted WQEs are not consumed; then
//!   the RQs take WQEs again and held frames drain in order (XON follows). A new `rx-starve`
//!   replaces the running one's end; `rx-starve ms=0` (or `clear`) ends it now, so a test
//!   can hold the starvation for exactly as long as its slowest step takes;
//! - `roce-wire drop=PCT reorder=PCT flip=PCT delay-ms=N ecn=PCT` — degrade the RoCEv2 frames this
//!   card *receives* from the wire (UDP 4791 to one of its GIDs; other Ethernet frames and
//!   frames looped back inside the card are untouched), for the retransmission tests. PCT is
//!   a percentage 0..=100 with at most one decimal (`10`, `0.5`: kept in parts per thousand);
//!   every key is optional, at least one is needed. Per frame, in this order: `drop` — it
//!   vanishes; `flip` — one byte of the transport headers / payload / ICRC (never the BTH's
//!   ICRC-masked reserved byte) is XORed with a non-zero value, so the ICRC check rejects it
//!   (counted malformed); `reorder` — it is held back and delivered after the next RoCE frame,
//!   or after [`crate::roce::wire_faults::REORDER_HOLD_NS`] if none comes; `delay-ms` (0..=10000)
//!   — every frame is delivered N ms late, from a queue the wire thread wakes for
//!   (`Hca::roce_deadline`); `ecn` — a request frame (not a response, ACK or CNP) that is
//!   delivered gets ECN CE, as a congested switch marks it, so the notification point answers
//!   with CNPs (`roce::congestion`). The draws come from a xorshift generator seeded from
//!   `--seed` at each `roce-wire` spec, so a run is reproducible. A new spec replaces the
//!   running one; `roce-wire off` (or `clear`) ends it and delivers what is held at once.
//!   A function reset does not end it (frames it held are lost with the rest of the engine
//!   state, the draws restart from the seed).
//!   Counted on the `roce:` stats line: `wire faults: N dropped N reordered N flipped N delayed
//!   N ce-marked`;
//! - `lie seed=N rate=PERMILLE budget=N classes=cmd,eqe,cqe,bar,irq,ring` — the hostile card:
//!   command outputs, events, completions, init-segment reads, interrupts and the driver's CQ
//!   rings lie `rate` times in a thousand opportunities until `budget` lies were told
//!   ([`crate::hostile`]); `lie off` (or `clear`) ends it; the control socket's `lies` prints
//!   the tally;
//! - `clear` — remove every pending fault;
//! - `gen-cqe cqn=5 solicited=0 count=1` — test hook: write `count` completions (REQ CQEs, at
//!   most 256) to a CQ now, back to back, as if work requests had finished, so harnesses can
//!   drive CQE ownership, arming, moderation and overrun.

use std::time::{Duration, Instant};

use crate::hostile::{Liar, LieSpec};

/// One fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Fail the nth occurrence of an opcode.
    Fail {
        /// Opcode.
        opcode: u16,
        /// 1-based occurrence; 0 for all.
        nth: u32,
        /// Command status.
        status: u8,
        /// Syndrome.
        syndrome: u32,
    },
    /// Stop answering commands (from this opcode on, if given).
    Stall(Option<u16>),
    /// Answer commands again.
    Unstall,
    /// Fatal health syndrome.
    Health {
        /// The syndrome.
        synd: u8,
        /// Survives function resets (until `clear`).
        persist: bool,
    },
    /// Drop the next `count` interrupts of `vector`.
    DropIrq {
        /// Vector.
        vector: u16,
        /// How many.
        count: u32,
    },
    /// Delay interrupts of `vector` by `ms`.
    DelayIrq {
        /// Vector.
        vector: u16,
        /// Milliseconds.
        ms: u64,
    },
    /// Demand (or return) regular pages.
    Pages(i32),
    /// Cable plugged (true) or pulled (false).
    Link(bool),
    /// Test hook: write CQEs to a CQ.
    GenCqe {
        /// CQ number.
        cqn: u32,
        /// Whether the completions are solicited.
        solicited: bool,
        /// How many (1..=256).
        count: u16,
    },
    /// Fail the next `n` sending WQEs.
    WqeError(u32),
    /// Fail the next `n` receive WQEs.
    RqError(u32),
    /// Fail the next `n` vector-calc WQEs.
    EcError(u32),
    /// Every RQ looks empty (no receive WQE posted) for `ms` milliseconds.
    RxStarve {
        /// Milliseconds, 1..=[`RX_STARVE_MAX_MS`].
        ms: u32,
    },
    /// Degrade received RoCE frames (`None`: `roce-wire off`).
    RoceWire(Option<RoceWire>),
    /// Lie to the driver (`None`: `lie off`).
    Lie(Option<LieSpec>),
    /// Clear all faults.
    Clear,
}

/// What `roce-wire` does to received RoCE frames; shares in parts per thousand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoceWire {
    /// Frames dropped, per mille.
    pub drop: u16,
    /// Frames held back behind the next one, per mille.
    pub reorder: u16,
    /// Frames with one byte flipped, per mille.
    pub flip: u16,
    /// Delay of every frame, ms (0..=[`ROCE_WIRE_MAX_DELAY_MS`]).
    pub delay_ms: u32,
    /// Request frames marked ECN CE (as a congested switch does), per mille.
    pub ecn: u16,
}

/// Longest `roce-wire delay-ms`.
pub const ROCE_WIRE_MAX_DELAY_MS: u32 = 10_000;

/// A `roce-wire` share: a percentage 0..=100 with at most one decimal, in parts per thousand.
fn percent(k: &str, v: &str) -> Result<u16, String> {
    let bad = || {
        format!(
            "roce-wire: {k} must be a percentage 0..=100 with at most one decimal (10, 0.5), \
             not {v:?}"
        )
    };
    let (int, frac) = v.split_once('.').unwrap_or((v, "0"));
    if int.is_empty()
        || frac.len() != 1
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || int.len() > 3
    {
        return Err(bad());
    }
    let pm =
        int.parse::<u16>().map_err(|_| bad())? * 10 + frac.parse::<u16>().map_err(|_| bad())?;
    if pm > 1000 {
        return Err(bad());
    }
    Ok(pm)
}

fn parse_roce_wire(rest: &[&str]) -> Result<Fault, String> {
    if rest == ["off"] {
        return Ok(Fault::RoceWire(None));
    }
    if rest.is_empty() {
        return Err(
            "roce-wire: give at least one of drop=, reorder=, flip=, delay-ms=, ecn= (or off)"
                .into(),
        );
    }
    let mut w = RoceWire::default();
    let mut seen = Vec::new();
    for word in rest {
        let (k, v) = word
            .split_once('=')
            .ok_or_else(|| format!("roce-wire: expected key=value or off, got {word:?}"))?;
        if seen.contains(&k) {
            return Err(format!("roce-wire: {k}= given twice"));
        }
        seen.push(k);
        match k {
            "drop" => w.drop = percent(k, v)?,
            "reorder" => w.reorder = percent(k, v)?,
            "flip" => w.flip = percent(k, v)?,
            "ecn" => w.ecn = percent(k, v)?,
            "delay-ms" => {
                let ms: u32 = num(k, v)?;
                if ms > ROCE_WIRE_MAX_DELAY_MS {
                    return Err(format!(
                        "roce-wire: delay-ms must be 0..={ROCE_WIRE_MAX_DELAY_MS}, not {ms}"
                    ));
                }
                w.delay_ms = ms;
            }
            _ => {
                return Err(format!(
                    "roce-wire: unknown key {k:?} (drop, reorder, flip, delay-ms, ecn)"
                ))
            }
        }
    }
    Ok(Fault::RoceWire(Some(w)))
}

/// Longest `rx-starve`, in milliseconds.
pub const RX_STARVE_MAX_MS: u32 = 60_000;

fn num<T: TryFrom<i64>>(k: &str, v: &str) -> Result<T, String> {
    let n = if let Some(h) = v.strip_prefix("0x") {
        i64::from_str_radix(h, 16)
    } else if let Some(h) = v.strip_prefix("-0x") {
        i64::from_str_radix(h, 16).map(|n| -n)
    } else {
        v.parse::<i64>()
    }
    .map_err(|_| format!("bad number {v:?} for {k}"))?;
    T::try_from(n).map_err(|_| format!("{k}={v} out of range"))
}

impl Fault {
    /// Parses one SPEC.
    pub fn parse(spec: &str) -> Result<Fault, String> {
        let mut words = spec.split_whitespace();
        let kind = words.next().ok_or("empty fault spec")?;
        if kind == "roce-wire" {
            return parse_roce_wire(&words.collect::<Vec<_>>());
        }
        if kind == "lie" {
            return LieSpec::parse(&words.collect::<Vec<_>>()).map(Fault::Lie);
        }
        let mut kv = std::collections::BTreeMap::new();
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| format!("expected key=value, got {w:?}"))?;
            kv.insert(k.to_string(), v.to_string());
        }
        let get = |k: &str| kv.get(k).map(String::as_str);
        let need = |k: &str| get(k).ok_or_else(|| format!("{kind}: {k}= is required"));
        let allowed: &[&str] = match kind {
            "fail" => &["opcode", "nth", "status", "syndrome"],
            "stall" => &["opcode"],
            "health" => &["synd", "persist"],
            "drop-irq" => &["vector", "count"],
            "delay-irq" => &["vector", "ms"],
            "pages" => &["n"],
            "link" => &["state"],
            "gen-cqe" => &["cqn", "solicited", "count"],
            "wqe-error" | "rq-error" | "ec-error" => &["count"],
            "rx-starve" => &["ms"],
            _ => &[],
        };
        if let Some(k) = kv.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!("{kind}: unknown key {k:?}"));
        }
        Ok(match kind {
            "fail" => Fault::Fail {
                opcode: num("opcode", need("opcode")?)?,
                nth: get("nth").map(|v| num("nth", v)).transpose()?.unwrap_or(1),
                status: get("status")
                    .map(|v| num("status", v))
                    .transpose()?
                    .unwrap_or(0x3),
                syndrome: get("syndrome")
                    .map(|v| num("syndrome", v))
                    .transpose()?
                    .unwrap_or(0x00c4_fa17),
            },
            "stall" => Fault::Stall(get("opcode").map(|v| num("opcode", v)).transpose()?),
            "unstall" => Fault::Unstall,
            "health" => Fault::Health {
                synd: get("synd")
                    .map(|v| num("synd", v))
                    .transpose()?
                    .unwrap_or(0x1),
                persist: get("persist")
                    .map(|v| num::<u8>("persist", v))
                    .transpose()?
                    .unwrap_or(0)
                    != 0,
            },
            "drop-irq" => Fault::DropIrq {
                vector: num("vector", need("vector")?)?,
                count: get("count")
                    .map(|v| num("count", v))
                    .transpose()?
                    .unwrap_or(1),
            },
            "delay-irq" => Fault::DelayIrq {
                vector: num("vector", need("vector")?)?,
                ms: num("ms", need("ms")?)?,
            },
            "pages" => Fault::Pages(num("n", need("n")?)?),
            "gen-cqe" => Fault::GenCqe {
                cqn: num("cqn", need("cqn")?)?,
                solicited: get("solicited")
                    .map(|v| num::<u8>("solicited", v))
                    .transpose()?
                    .unwrap_or(0)
                    != 0,
                count: match get("count").map(|v| num::<u16>("count", v)).transpose()? {
                    None => 1,
                    Some(n @ 1..=256) => n,
                    Some(n) => return Err(format!("gen-cqe: count {n} not in 1..=256")),
                },
            },
            "link" => match need("state")? {
                "up" => Fault::Link(true),
                "down" => Fault::Link(false),
                o => return Err(format!("link: state must be up or down, not {o:?}")),
            },
            "wqe-error" => Fault::WqeError(
                get("count")
                    .map(|v| num("count", v))
                    .transpose()?
                    .unwrap_or(1),
            ),
            "rq-error" => Fault::RqError(
                get("count")
                    .map(|v| num("count", v))
                    .transpose()?
                    .unwrap_or(1),
            ),
            "ec-error" => Fault::EcError(
                get("count")
                    .map(|v| num("count", v))
                    .transpose()?
                    .unwrap_or(1),
            ),
            "rx-starve" => {
                let ms: u32 = num("ms", need("ms")?)?;
                if ms > RX_STARVE_MAX_MS {
                    return Err(format!(
                        "rx-starve: ms must be 0..={RX_STARVE_MAX_MS}, not {ms}"
                    ));
                }
                Fault::RxStarve { ms }
            }
            "clear" => Fault::Clear,
            o => return Err(format!("unknown fault {o:?}")),
        })
    }
}

/// The faults pending on one instance, consulted by the firmware on every command.
#[derive(Debug, Default)]
pub struct FaultPlan {
    fails: Vec<(u16, u32, u8, u32)>,
    seen: std::collections::BTreeMap<u16, u32>,
    /// Commands are not answered while set (`Some(None)`: all; `Some(Some(op))`: from op on).
    pub stall: Option<Option<u16>>,
    stalling: bool,
    /// Interrupts still to drop, per vector.
    pub drop_irq: std::collections::BTreeMap<u16, u32>,
    /// Sending WQEs still to fail.
    pub wqe_errors: u32,
    /// Receive WQEs still to fail.
    pub rq_errors: u32,
    /// Vector-calc WQEs still to fail.
    pub ec_errors: u32,
    /// While set and in the future, every RQ looks empty (`rx-starve`).
    pub rx_starve_until: Option<Instant>,
    /// What `roce-wire` does to received RoCE frames, while it runs.
    pub roce_wire: Option<RoceWire>,
    /// The hostile card's lies (`lie`), and their tally.
    pub liar: Liar,
}

/// What the firmware should do with a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Execute normally.
    Run,
    /// Fail with status and syndrome.
    Fail(u8, u32),
    /// Do not answer.
    Stall,
}

impl FaultPlan {
    /// Adds a fault that the plan holds (health and pages act immediately elsewhere).
    pub fn add(&mut self, f: &Fault) {
        match *f {
            Fault::Fail {
                opcode,
                nth,
                status,
                syndrome,
            } => {
                let base = self.seen.get(&opcode).copied().unwrap_or(0);
                // nth counts from now on.
                let at = if nth == 0 {
                    0
                } else {
                    base.saturating_add(nth)
                };
                self.fails.push((opcode, at, status, syndrome));
            }
            Fault::Stall(op) => self.stall = Some(op),
            Fault::Unstall => {
                self.stall = None;
                self.stalling = false;
            }
            Fault::DropIrq { vector, count } => {
                let n = self.drop_irq.entry(vector).or_default();
                *n = n.saturating_add(count);
            }
            // Interrupt delays live with the vectors (MsiX::delay_ms).
            Fault::DelayIrq { .. } => {}
            Fault::WqeError(n) => self.wqe_errors = self.wqe_errors.saturating_add(n),
            Fault::RqError(n) => self.rq_errors = self.rq_errors.saturating_add(n),
            Fault::EcError(n) => self.ec_errors = self.ec_errors.saturating_add(n),
            Fault::RxStarve { ms: 0 } => {
                if self.rx_starve_until.take().is_some() {
                    log::info!("rx-starve ended: RQs take posted WQEs again");
                }
            }
            Fault::RxStarve { ms } => {
                self.rx_starve_until = Some(Instant::now() + Duration::from_millis(u64::from(ms)));
            }
            Fault::RoceWire(w) => self.roce_wire = w.filter(|w| *w != RoceWire::default()),
            Fault::Lie(spec) => self.liar.start(spec),
            Fault::Clear => {
                // The tallies of commands seen and lies told outlive the faults.
                self.liar.start(None);
                *self = FaultPlan {
                    seen: std::mem::take(&mut self.seen),
                    liar: std::mem::take(&mut self.liar),
                    ..Default::default()
                }
            }
            Fault::Health { .. } | Fault::Pages(_) | Fault::GenCqe { .. } | Fault::Link(_) => {}
        }
    }

    /// Consulted once per sending WQE: whether it fails by injection.
    pub fn take_wqe_error(&mut self) -> bool {
        if self.wqe_errors > 0 {
            self.wqe_errors -= 1;
            true
        } else {
            false
        }
    }

    /// Consulted once per vector-calc WQE: whether it fails by injection.
    pub fn take_ec_error(&mut self) -> bool {
        if self.ec_errors > 0 {
            self.ec_errors -= 1;
            true
        } else {
            false
        }
    }

    /// Consulted once per frame an RQ takes: whether its WQE fails by injection.
    pub fn take_rq_error(&mut self) -> bool {
        if self.rq_errors > 0 {
            self.rq_errors -= 1;
            true
        } else {
            false
        }
    }

    /// Consulted where the receive path asks whether an RQ has a WQE posted: while
    /// `rx-starve` runs none has. Ends the starvation once its time is up.
    pub fn rx_starved(&mut self) -> bool {
        let Some(until) = self.rx_starve_until else {
            return false;
        };
        if Instant::now() < until {
            return true;
        }
        self.rx_starve_until = None;
        log::info!("rx-starve over: RQs take posted WQEs again");
        false
    }

    /// When the running `rx-starve` ends (the wire thread wakes then, so frames held meanwhile
    /// drain without waiting for another frame).
    pub fn rx_starve_end(&self) -> Option<Instant> {
        self.rx_starve_until
    }

    /// Consulted once per command.
    pub fn verdict(&mut self, opcode: u16) -> Verdict {
        let n = self.seen.entry(opcode).or_default();
        *n += 1;
        let n = *n;
        if let Some(op) = self.stall {
            if self.stalling || op.is_none() || op == Some(opcode) {
                self.stalling = true;
                return Verdict::Stall;
            }
        }
        if let Some(i) = self
            .fails
            .iter()
            .position(|&(op, at, _, _)| op == opcode && (at == 0 || at == n))
        {
            let (_, at, status, syndrome) = self.fails[i];
            if at != 0 {
                self.fails.remove(i);
            }
            return Verdict::Fail(status, syndrome);
        }
        Verdict::Run
    }

    /// Whether to swallow an interrupt on `vector`.
    pub fn take_drop(&mut self, vector: u16) -> bool {
        match self.drop_irq.get_mut(&vector) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(
            Fault::parse("fail opcode=0x104 nth=2 status=0x3 syndrome=0x12ab").unwrap(),
            Fault::Fail {
                opcode: 0x104,
                nth: 2,
                status: 3,
                syndrome: 0x12ab
            }
        );
        assert_eq!(Fault::parse("stall").unwrap(), Fault::Stall(None));
        assert_eq!(Fault::parse("wqe-error").unwrap(), Fault::WqeError(1));
        assert_eq!(
            Fault::parse("wqe-error count=3").unwrap(),
            Fault::WqeError(3)
        );
        assert_eq!(Fault::parse("rq-error").unwrap(), Fault::RqError(1));
        assert_eq!(Fault::parse("rq-error count=2").unwrap(), Fault::RqError(2));
        assert_eq!(Fault::parse("ec-error").unwrap(), Fault::EcError(1));
        assert_eq!(Fault::parse("ec-error count=4").unwrap(), Fault::EcError(4));
        assert_eq!(
            Fault::parse("rx-starve ms=2000").unwrap(),
            Fault::RxStarve { ms: 2000 }
        );
        assert_eq!(
            Fault::parse("rx-starve ms=0").unwrap(),
            Fault::RxStarve { ms: 0 }
        );
        assert_eq!(
            Fault::parse("rx-starve ms=1").unwrap(),
            Fault::RxStarve { ms: 1 }
        );
        assert_eq!(
            Fault::parse("rx-starve ms=0xea60").unwrap(),
            Fault::RxStarve { ms: 60_000 }
        );
        assert_eq!(
            Fault::parse("stall opcode=0x102").unwrap(),
            Fault::Stall(Some(0x102))
        );
        assert_eq!(
            Fault::parse("health synd=5").unwrap(),
            Fault::Health {
                synd: 5,
                persist: false
            }
        );
        assert_eq!(
            Fault::parse("health synd=0x8 persist=1").unwrap(),
            Fault::Health {
                synd: 8,
                persist: true
            }
        );
        assert_eq!(
            Fault::parse("drop-irq vector=0").unwrap(),
            Fault::DropIrq {
                vector: 0,
                count: 1
            }
        );
        assert_eq!(Fault::parse("pages n=-8").unwrap(), Fault::Pages(-8));
        assert_eq!(Fault::parse("clear").unwrap(), Fault::Clear);
        assert_eq!(
            Fault::parse("gen-cqe cqn=0x12 solicited=1").unwrap(),
            Fault::GenCqe {
                cqn: 0x12,
                solicited: true,
                count: 1
            }
        );
        assert_eq!(
            Fault::parse("gen-cqe cqn=3 count=256").unwrap(),
            Fault::GenCqe {
                cqn: 3,
                solicited: false,
                count: 256
            }
        );
        for bad in ["gen-cqe cqn=3 count=0", "gen-cqe cqn=3 count=257"] {
            assert!(Fault::parse(bad).unwrap_err().contains("count"), "{bad}");
        }
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        for bad in [
            "",
            "explode",
            "fail",
            "fail opcode=zz",
            "fail opcode=0x104 colour=red",
            "fail opcode=0x1ffff",
            "pages",
            "rx-starve",
            "rx-starve ms=60001",
            "rx-starve ms=-5",
            "rx-starve ms=99999999999",
            "rx-starve ms=soon",
            "rx-starve ms=10 count=2",
        ] {
            assert!(Fault::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn rx_starve_errors_say_what_is_wrong() {
        let e = |s| Fault::parse(s).unwrap_err();
        assert_eq!(e("rx-starve"), "rx-starve: ms= is required");
        assert_eq!(
            e("rx-starve ms=60001"),
            "rx-starve: ms must be 0..=60000, not 60001"
        );
        assert_eq!(e("rx-starve ms=-1"), "ms=-1 out of range");
        assert_eq!(e("rx-starve count=1"), "rx-starve: unknown key \"count\"");
    }

    #[test]
    fn rx_starve_runs_until_its_time_is_up_or_clear() {
        let mut p = FaultPlan::default();
        assert!(!p.rx_starved() && p.rx_starve_end().is_none());
        let t0 = Instant::now();
        p.add(&Fault::RxStarve { ms: 60_000 });
        assert!(p.rx_starved());
        let end = p.rx_starve_end().unwrap();
        assert!(end >= t0 + Duration::from_millis(60_000));
        // A new one replaces the end.
        p.add(&Fault::RxStarve { ms: 5 });
        assert!(p.rx_starve_end().unwrap() < end);
        std::thread::sleep(Duration::from_millis(6));
        assert!(!p.rx_starved(), "over");
        assert!(p.rx_starve_end().is_none(), "forgotten once over");
        p.add(&Fault::RxStarve { ms: 60_000 });
        p.add(&Fault::RqError(1));
        p.add(&Fault::Clear);
        assert!(!p.rx_starved() && p.rq_errors == 0);
    }

    #[test]
    fn roce_wire_parses_percentages_per_mille_and_off() {
        let w = |drop, reorder, flip, delay_ms| {
            Fault::RoceWire(Some(RoceWire {
                drop,
                reorder,
                flip,
                delay_ms,
                ecn: 0,
            }))
        };
        let p = |s| Fault::parse(s).unwrap();
        assert_eq!(p("roce-wire drop=1"), w(10, 0, 0, 0));
        assert_eq!(p("roce-wire drop=0.5 reorder=10"), w(5, 100, 0, 0));
        assert_eq!(p("roce-wire flip=100 delay-ms=20"), w(0, 0, 1000, 20));
        assert_eq!(
            p("roce-wire delay-ms=10000 reorder=2.5 drop=0 flip=0.1"),
            w(0, 25, 1, 10_000)
        );
        assert_eq!(p("roce-wire delay-ms=0x10"), w(0, 0, 0, 16));
        assert_eq!(p("roce-wire off"), Fault::RoceWire(None));
        assert_eq!(p("  roce-wire   off "), Fault::RoceWire(None));
        assert_eq!(
            p("roce-wire ecn=12.5"),
            Fault::RoceWire(Some(RoceWire {
                ecn: 125,
                ..Default::default()
            }))
        );
    }

    #[test]
    fn roce_wire_errors_say_what_is_wrong() {
        let e = |s| Fault::parse(s).unwrap_err();
        let need =
            "roce-wire: give at least one of drop=, reorder=, flip=, delay-ms=, ecn= (or off)";
        assert_eq!(e("roce-wire"), need);
        let pct = |k: &str, v: &str| {
            format!(
                "roce-wire: {k} must be a percentage 0..=100 with at most one decimal \
                 (10, 0.5), not {v:?}"
            )
        };
        assert_eq!(e("roce-wire drop=101"), pct("drop", "101"));
        assert_eq!(e("roce-wire drop=100.1"), pct("drop", "100.1"));
        assert_eq!(e("roce-wire reorder=0.25"), pct("reorder", "0.25"));
        assert_eq!(e("roce-wire flip=-1"), pct("flip", "-1"));
        assert_eq!(e("roce-wire flip=.5"), pct("flip", ".5"));
        assert_eq!(e("roce-wire flip=5."), pct("flip", "5."));
        assert_eq!(e("roce-wire drop=10%"), pct("drop", "10%"));
        assert_eq!(e("roce-wire drop=lots"), pct("drop", "lots"));
        assert_eq!(
            e("roce-wire delay-ms=10001"),
            "roce-wire: delay-ms must be 0..=10000, not 10001"
        );
        assert_eq!(e("roce-wire delay-ms=-1"), "delay-ms=-1 out of range");
        assert_eq!(
            e("roce-wire delay-ms=1.5"),
            "bad number \"1.5\" for delay-ms"
        );
        assert_eq!(
            e("roce-wire loss=1"),
            "roce-wire: unknown key \"loss\" (drop, reorder, flip, delay-ms, ecn)"
        );
        assert_eq!(e("roce-wire drop=1 drop=2"), "roce-wire: drop= given twice");
        assert_eq!(
            e("roce-wire off drop=1"),
            "roce-wire: expected key=value or off, got \"off\""
        );
        assert_eq!(
            e("roce-wire on"),
            "roce-wire: expected key=value or off, got \"on\""
        );
    }

    #[test]
    fn roce_wire_runs_until_off_or_clear() {
        let mut p = FaultPlan::default();
        p.add(&Fault::parse("roce-wire drop=10").unwrap());
        assert_eq!(p.roce_wire.unwrap().drop, 100);
        // A new spec replaces the running one.
        p.add(&Fault::parse("roce-wire delay-ms=5").unwrap());
        assert_eq!(
            p.roce_wire,
            Some(RoceWire {
                delay_ms: 5,
                ..Default::default()
            })
        );
        p.add(&Fault::parse("roce-wire off").unwrap());
        assert!(p.roce_wire.is_none());
        p.add(&Fault::parse("roce-wire flip=1").unwrap());
        p.add(&Fault::Clear);
        assert!(p.roce_wire.is_none());
        // All shares 0 and no delay: nothing to do, the same as off.
        p.add(&Fault::parse("roce-wire drop=0").unwrap());
        assert!(p.roce_wire.is_none());
    }

    #[test]
    fn fails_exactly_the_nth_occurrence() {
        let mut p = FaultPlan::default();
        assert_eq!(p.verdict(0x104), Verdict::Run);
        p.add(&Fault::parse("fail opcode=0x104 nth=2 status=0x5 syndrome=0x77").unwrap());
        assert_eq!(p.verdict(0x104), Verdict::Run);
        assert_eq!(p.verdict(0x10a), Verdict::Run);
        assert_eq!(p.verdict(0x104), Verdict::Fail(5, 0x77));
        assert_eq!(p.verdict(0x104), Verdict::Run);
    }

    #[test]
    fn stall_from_an_opcode_on_until_unstalled() {
        let mut p = FaultPlan::default();
        p.add(&Fault::Stall(Some(0x102)));
        assert_eq!(p.verdict(0x100), Verdict::Run);
        assert_eq!(p.verdict(0x102), Verdict::Stall);
        assert_eq!(p.verdict(0x100), Verdict::Stall);
        p.add(&Fault::Unstall);
        assert_eq!(p.verdict(0x100), Verdict::Run);
    }
}
