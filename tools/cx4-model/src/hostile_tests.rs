//! The liar on its own: specs, budget, classes, and that every kind of lie is drawn.

use super::*;

fn spec(words: &str) -> Result<Option<LieSpec>, String> {
    LieSpec::parse(&words.split_whitespace().collect::<Vec<_>>())
}

#[test]
fn specs_parse_with_defaults_and_refuse_nonsense() {
    assert_eq!(spec("off"), Ok(None));
    assert_eq!(
        spec(""),
        Ok(Some(LieSpec {
            seed: 1,
            permille: 10,
            budget: 1000,
            classes: 0x3f
        }))
    );
    let s = spec("seed=5 rate=1000 budget=7 classes=cqe,irq")
        .unwrap()
        .unwrap();
    assert_eq!((s.seed, s.permille, s.budget), (5, 1000, 7));
    assert_eq!(s.classes, Class::Cqe.bit() | Class::Irq.bit());
    for bad in [
        "rate=0",
        "rate=x",
        "budget=1000001",
        "classes=",
        "classes=cmd,,eqe",
        "seed",
        "off now",
    ] {
        assert!(spec(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn only_the_named_classes_lie_and_the_budget_holds() {
    let mut l = Liar::default();
    l.start(spec("rate=1000 budget=4 classes=cqe").unwrap());
    let mut out = [0u8; 16];
    assert_eq!(l.cmd(0x100, &mut out), None, "cmd is not named");
    assert_eq!(l.irq(0), 0);
    let mut told = 0;
    for _ in 0..10 {
        let mut c = [0u8; 64];
        l.cqe(1, &mut c);
        told += usize::from(c != [0u8; 64]);
    }
    assert!((3..=4).contains(&told), "{told} visible lies of 4");
    assert!(!l.active());
    assert_eq!(l.total(), 4);
    assert!(l.line().contains(" cqe 4/4 "), "{}", l.line());
}

#[test]
fn every_kind_of_lie_is_drawn() {
    let mut l = Liar::default();
    l.start(spec("seed=2 rate=1000 budget=100000").unwrap());
    for i in 0..4000u32 {
        let mut out = vec![0u8; 0x100];
        let _ = l.cmd(0x100, &mut out);
        let mut e = [0u8; 64];
        l.eqe(3, &mut e);
        let mut c = [0u8; 64];
        l.cqe(i, &mut c);
        let mut b = [0u8; 4];
        l.bar(0, &mut b);
        let _ = l.irq(1);
        let _ = l.ring(i);
    }
    let line = l.line();
    for kind in [
        "cmd-status",
        "cmd-syndrome",
        "cmd-field",
        "cmd-bytes",
        "cmd-zero",
        "cmd-delivery",
        "cmd-token",
        "eqe-type",
        "eqe-subtype",
        "eqe-object",
        "eqe-data",
        "cqe-opcode",
        "cqe-format",
        "cqe-byte-cnt",
        "cqe-wqe-counter",
        "cqe-qpn",
        "cqe-csum",
        "cqe-lro",
        "cqe-bytes",
        "bar-random",
        "bar-ones",
        "bar-flip",
        "irq-storm",
        "ring-phantom-cqe",
    ] {
        assert!(
            line.contains(&format!(" {kind}=")),
            "{kind} never drawn: {line}"
        );
    }
}
