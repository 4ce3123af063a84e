// SPDX-License-Identifier: GPL-2.0
//! debugfs: `/sys/kernel/debug/cx4/<pci name>/` with the per-opcode command statistics
//! (`commands`: a header line, then count, errors, mean and max latency and how completions were
//! seen, per opcode), the command queue mode and totals (`cmdq`), the
//! EQs and their interrupt and event counters (`eqs`), firmware pages (`pages`), the
//! capabilities in human-readable form (`caps`), health (`health`), CQs (`cqs`), QP event
//! routing (`qp_events`) and the test hooks (`selftest`, see selftest.rs; `ec`, the
//! erasure-coding engine's counters and requests, see ec/testhook.rs).

use core::fmt;

use kernel::{
    debugfs::Scope,
    prelude::*,
    sync::Arc,
    uaccess::UserSliceReader, //
};

use crate::{
    caps::Caps,
    ec::{
        EcSlot,
        TestHook, //
    },
    eq::{
        Eq,
        EqKind,
        VectorIrq, //
    },
    mdev::Mdev,
    selftest::SelfTest, //
};

/// What the files show.
#[pin_data]
pub(crate) struct DebugData {
    mdev: Arc<Mdev>,
    caps: Arc<Caps>,
    vectors: KVec<Arc<VectorIrq>>,
    eqs: KVec<Arc<Eq>>,
    #[pin]
    selftest: SelfTest,
    #[pin]
    ec: TestHook,
}

impl DebugData {
    /// The data of a brought-up device.
    pub(crate) fn new(
        mdev: Arc<Mdev>,
        caps: Arc<Caps>,
        vectors: KVec<Arc<VectorIrq>>,
        eqs: KVec<Arc<Eq>>,
        uar: u32,
        ec: Arc<EcSlot>,
    ) -> impl PinInit<Self, Error> {
        let comp_eqn = eqs
            .iter()
            .find(|e| e.kind() == EqKind::Comp(0))
            .map(|e| e.eqn());
        let st = mdev.clone();
        let st_caps = caps.clone();
        let ec_mdev = mdev.clone();
        try_pin_init!(Self {
            mdev,
            caps,
            vectors,
            eqs,
            selftest <- SelfTest::new(st, st_caps, uar, comp_eqn),
            ec <- TestHook::new(ec_mdev, ec),
        })
    }
}

fn commands(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    d.mdev.cmdq.stats().show(f)
}

fn cmdq(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let q = &d.mdev.cmdq;
    let (n, polled, event, fallback) = q.stats().totals();
    writeln!(
        f,
        "mode {}\nslots {}\nerror {}\ntotal {} commands: {} polled, {} event, {} fallback",
        if q.events() { "event" } else { "polling" },
        q.slots(),
        u8::from(q.in_error()),
        n,
        polled,
        event,
        fallback
    )
}

fn eqs(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for v in d.vectors.iter() {
        v.show(f)?;
    }
    for eq in d.eqs.iter() {
        eq.show(f)?;
    }
    Ok(())
}

fn pages(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    d.mdev.pages.show(f)
}

fn caps(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    d.caps.show(f)
}

fn health(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    d.mdev.health.show(f)
}

fn cqs(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    d.mdev.cqs.show(f)
}

fn qp_events(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    d.mdev.qps.show(f)
}

fn selftest(d: &DebugData, r: &mut UserSliceReader) -> Result {
    d.selftest.write(r)
}

fn ec_show(d: &DebugData, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    d.ec.show(f)
}

fn ec_request(d: &DebugData, r: &mut UserSliceReader) -> Result {
    d.ec.write(r)
}

/// The debugfs directory of one device; removed on drop.
pub(crate) struct DebugFs {
    _scope: Pin<KBox<Scope<DebugData>>>,
}

impl DebugFs {
    /// Creates `cx4/<name>/` and its files under the module's directory.
    pub(crate) fn new(name: &CStr, data: impl PinInit<DebugData, Error>) -> Result<Self> {
        let root = kapi::DebugfsRoot::get().ok_or(ENOENT)?;
        let scope = KBox::pin_init(
            root.scope(data, name, |d, dir| {
                dir.read_callback_file(c"commands", d, &commands);
                dir.read_callback_file(c"cmdq", d, &cmdq);
                dir.read_callback_file(c"eqs", d, &eqs);
                dir.read_callback_file(c"pages", d, &pages);
                dir.read_callback_file(c"caps", d, &caps);
                dir.read_callback_file(c"health", d, &health);
                dir.read_callback_file(c"cqs", d, &cqs);
                dir.read_callback_file(c"qp_events", d, &qp_events);
                dir.write_only_callback_file(c"selftest", d, &selftest);
                dir.read_write_callback_file(c"ec", d, &ec_show, &ec_request);
            }),
            GFP_KERNEL,
        )?;
        Ok(Self { _scope: scope })
    }
}
