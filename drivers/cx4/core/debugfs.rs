// SPDX-License-Identifier: GPL-2.0
//! debugfs: the function's directory `/sys/kernel/debug/cx4/<pci name>/` and the core's files
//! in it: the per-opcode command statistics (`commands`: a header line, then count, errors,
//! mean and max latency and how completions were seen, per opcode), the command queue mode
//! and totals (`cmdq`), the EQs and their interrupt and event counters (`eqs`), firmware pages
//! (`pages`), the capabilities in human-readable form (`caps`), health (`health`), CQs (`cqs`)
//! and QP event routing (`qp_events`).
//!
//! The layers add their own files to the same directory ([`FunctionDir::dir`]): with test
//! hooks, en/selftest.rs its `selftest` and ec/testhook.rs its `ec`.

use core::fmt;

use kernel::{
    debugfs::{
        Dir,
        File, //
    },
    prelude::*,
    sync::Arc, //
};

use crate::{
    caps::Caps,
    eq::{
        Eq,
        VectorIrq, //
    },
    mdev::Mdev, //
};

/// What the core's files show.
pub(crate) struct CoreData {
    mdev: Arc<Mdev>,
    caps: Arc<Caps>,
    vectors: KVec<Arc<VectorIrq>>,
    eqs: KVec<Arc<Eq>>,
}

/// One file's data: the core's, shared by its files.
#[pin_data]
struct View {
    d: Arc<CoreData>,
}

fn show_commands(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    v.d.mdev.cmdq.stats().show(f)
}

fn show_cmdq(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let q = &v.d.mdev.cmdq;
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

fn show_eqs(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for vec in v.d.vectors.iter() {
        vec.show(f)?;
    }
    for eq in v.d.eqs.iter() {
        eq.show(f)?;
    }
    Ok(())
}

fn show_pages(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    v.d.mdev.pages.show(f)
}

fn show_caps(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    v.d.caps.show(f)
}

fn show_health(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    v.d.mdev.health.show(f)
}

fn show_cqs(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    v.d.mdev.cqs.show(f)
}

fn show_qp_events(v: &View, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    v.d.mdev.qps.show(f, "qps")?;
    v.d.mdev.srqs.show(f, "srqs")?;
    v.d.mdev.dcts.show(f, "dcts")
}

/// The debugfs directory of one function and the core's files in it. The directory goes
/// when this and every layer's file in it are dropped (the layers' go first).
pub(crate) struct FunctionDir {
    _files: KVec<Pin<KBox<File<View>>>>,
    _dir: Dir,
}

impl FunctionDir {
    /// Creates `cx4/<name>/` under the module's directory, with the core's files.
    pub(crate) fn new(
        name: &CStr,
        mdev: Arc<Mdev>,
        caps: Arc<Caps>,
        (vectors, eqs): (KVec<Arc<VectorIrq>>, KVec<Arc<Eq>>),
    ) -> Result<Self> {
        let dir = kapi::DebugfsRoot::subdir(name).ok_or(ENOENT)?;
        let d = Arc::new(
            CoreData {
                mdev,
                caps,
                vectors,
                eqs,
            },
            GFP_KERNEL,
        )?;
        let mut files = KVec::with_capacity(8, GFP_KERNEL)?;
        // Each show function is its own type (the file operations are built from it).
        macro_rules! file {
            ($name:literal, $show:ident) => {
                let d = d.clone();
                let view = try_pin_init!(View { d });
                let file = KBox::pin_init(dir.read_callback_file($name, view, &$show), GFP_KERNEL)?;
                files.push(file, GFP_KERNEL)?;
            };
        }
        file!(c"commands", show_commands);
        file!(c"cmdq", show_cmdq);
        file!(c"eqs", show_eqs);
        file!(c"pages", show_pages);
        file!(c"caps", show_caps);
        file!(c"health", show_health);
        file!(c"cqs", show_cqs);
        file!(c"qp_events", show_qp_events);
        Ok(Self {
            _files: files,
            _dir: dir,
        })
    }

    /// The directory, for the layers' files.
    pub(crate) fn dir(&self) -> &Dir {
        &self._dir
    }
}
