//! The walk from a range of an mkey to guest physical pieces: PA and MTT mkeys map directly,
//! indirect (KLM, KSM and repeat-block) mkeys map each part of the range through another mkey,
//! which may be indirect in turn.
//!
//! The guest builds the indirect lists (CREATE_MKEY, UMR WQEs), so nothing about them is
//! trusted: an entry naming a missing or free key, a key of another PD, one without the
//! local right of the access, or bytes beyond its range fails the access with
//! [`XlateError::Protection`] (the PRM's local protection error, and a remote access NAK for
//! an R_Key). Nesting is bounded by the `max_indirection` capability and a key that appears
//! twice on the way down (a loop: KLM A names B, B names A) fails too, so no guest list makes
//! the walk recurse without end; every level partitions the range it was given, so the work
//! is bounded by the bytes accessed times the depth.

use super::caps::GeneralCap;
use super::mkey::{RepeatEntry, MTT_READ, MTT_WRITE, NULL_MKEY};
use super::{Firmware, IndirectEntry, Mkey, MkeyMap, XlateError};

/// `max_indirection`, read once per translation.
static MAX_INDIRECTION: GeneralCap = GeneralCap::new("max_indirection");
/// `pg`: on-demand paging (MTT enables and the null mkey fault), read once per walk.
static PG: GeneralCap = GeneralCap::new("pg");

/// The state of one walk down indirect mkeys.
pub(super) struct Walk {
    /// The indirect mkeys above the one being mapped (for the depth bound and loop
    /// detection).
    pub(super) chain: Vec<u32>,
    /// The `max_indirection` capability, read once per walk (not once per piece: a
    /// repeat-block mkey yields one piece per chunk).
    depth: usize,
    /// On-demand paging is on (`pg`): absent pages fault ([`XlateError::PageFault`]).
    pg: bool,
}

impl Walk {
    /// A walk from the top, nesting bounded by `max_indirection`.
    pub(super) fn new(fw: &Firmware) -> Walk {
        Walk {
            chain: Vec::new(),
            depth: (fw.caps.general_cap(&MAX_INDIRECTION) as usize).max(1),
            pg: fw.caps.general_cap(&PG) != 0,
        }
    }
}

impl Firmware {
    /// Appends the guest pieces of `len` bytes at `addr` of mkey `m` to `out`; `walk` holds
    /// the indirect mkeys above `m` (for the depth bound and loop detection). The caller
    /// checked `m`'s own rights.
    pub(super) fn map_range(
        &self,
        m: &Mkey,
        addr: u64,
        len: u32,
        write: bool,
        walk: &mut Walk,
        out: &mut Vec<(u64, u32)>,
    ) -> Result<(), XlateError> {
        let end = in_range(m, addr, len)?;
        match &m.map {
            MkeyMap::Pa => out.push((addr, len)),
            MkeyMap::Mtt {
                page_shift,
                pages,
                enables,
            } => {
                let page = 1u64 << page_shift;
                let base = m.start & !(page - 1);
                let need = if write { MTT_WRITE } else { MTT_READ };
                let mut a = addr;
                while a < end {
                    let off = a.checked_sub(base).ok_or(XlateError::Protection)?;
                    let i =
                        usize::try_from(off >> page_shift).map_err(|_| XlateError::Protection)?;
                    let in_page = a & (page - 1);
                    let n = (page - in_page).min(end - a);
                    let pa = pages.get(i).ok_or(XlateError::Protection)? + in_page;
                    if walk.pg && enables.get(i).is_some_and(|&e| e & need == 0) {
                        return Err(XlateError::PageFault);
                    }
                    out.push((pa, n as u32));
                    a += n;
                }
            }
            MkeyMap::Klm { entries } => {
                // Entry i holds the bytes after those of the entries before it.
                let mut at = m.start;
                for e in entries {
                    if at >= end {
                        break;
                    }
                    let e_end = at.saturating_add(u64::from(e.len));
                    if e_end > addr {
                        let from = addr.max(at);
                        let to = end.min(e_end);
                        let va = e.va.checked_add(from - at).ok_or(XlateError::Protection)?;
                        self.map_nested(m, e, va, (to - from) as u32, write, walk, out)?;
                    }
                    at = e_end;
                }
                if at < end {
                    return Err(XlateError::Protection);
                }
            }
            MkeyMap::Ksm {
                page_shift,
                entries,
            } => {
                let size = 1u64 << page_shift;
                let mut a = addr;
                while a < end {
                    let off = a.wrapping_sub(m.start);
                    let i =
                        usize::try_from(off >> page_shift).map_err(|_| XlateError::Protection)?;
                    let e = entries.get(i).ok_or(XlateError::Protection)?;
                    let in_entry = off & (size - 1);
                    let n = (size - in_entry).min(end - a);
                    let va = e.va.checked_add(in_entry).ok_or(XlateError::Protection)?;
                    self.map_nested(m, e, va, n as u32, write, walk, out)?;
                    a += n;
                }
            }
            MkeyMap::Repeat {
                block,
                count,
                entries,
            } => self.map_repeat(m, (*block, *count, entries), addr, end, write, walk, out)?,
        }
        Ok(())
    }

    /// The pieces of `addr..end` of the repeat-block mkey `m`: repetition r = (offset /
    /// block), then the entry the offset inside the repetition falls in, at `va + r·stride`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn map_repeat(
        &self,
        m: &Mkey,
        (block, count, entries): (u32, u32, &[RepeatEntry]),
        addr: u64,
        end: u64,
        write: bool,
        walk: &mut Walk,
        out: &mut Vec<(u64, u32)>,
    ) -> Result<(), XlateError> {
        let block = u64::from(block);
        // UMR builds a repeat block only when its entries add up to its byte count
        // (`roce/umr.rs`), so every offset in a repetition falls in an entry.
        let sum: u64 = entries.iter().map(|e| u64::from(e.len)).sum();
        if block == 0 || sum != block {
            return Err(XlateError::Protection);
        }
        // The mkey each entry names, checked once for the whole range (a range of a repeat
        // block is one piece per entry and repetition: one per chunk of an EC result); the
        // checks depend on the entry alone, so each piece meets the same answer.
        let mut nested: Vec<Option<&Mkey>> = vec![None; entries.len()];
        // Per entry, the last direct run its pieces fell in: the next repetition's piece
        // (`stride` further) is usually in the same page, and then needs no walk.
        let mut runs: Vec<Option<Run>> = vec![None; entries.len()];
        // One piece per entry and repetition: room for them at once (bounded: the list is
        // the guest's).
        let shortest = entries
            .iter()
            .map(|e| u64::from(e.len))
            .filter(|&l| l > 0)
            .min();
        if let Some(l) = shortest {
            out.reserve(((end - addr) / l + 2).min(1 << 12) as usize);
        }
        // Where `addr` is: repetition, entry, offset in the entry; then piece after piece.
        let off = addr.checked_sub(m.start).ok_or(XlateError::Protection)?;
        let (mut rep, mut inside) = (off / block, off % block);
        let mut i = 0;
        while inside >= u64::from(entries[i].len) {
            inside -= u64::from(entries[i].len);
            i += 1;
        }
        let mut a = addr;
        while a < end {
            if rep >= u64::from(count) {
                return Err(XlateError::Protection);
            }
            let e = &entries[i];
            let n = (u64::from(e.len) - inside).min(end - a);
            let va = rep
                .checked_mul(u64::from(e.stride))
                .and_then(|s| e.va.checked_add(s))
                .and_then(|v| v.checked_add(inside))
                .ok_or(XlateError::Protection)?;
            let key = match nested[i] {
                Some(k) => k,
                None => {
                    let k = self.nested_key(m, e.key, write, walk)?;
                    nested[i] = Some(k);
                    k
                }
            };
            match runs[i].filter(|r| r.holds(va, n)) {
                Some(r) => out.push((r.pa + (va - r.va), n as u32)),
                None => {
                    walk.chain.push(m.key);
                    let r = self.map_range(key, va, n as u32, write, walk, out);
                    walk.chain.pop();
                    r?;
                    runs[i] = Run::of(key, va);
                }
            }
            a += n;
            inside += n;
            // The next non-empty entry, in this repetition or the next.
            while inside == u64::from(entries[i].len) {
                inside = 0;
                i += 1;
                if i == entries.len() {
                    i = 0;
                    rep += 1;
                }
            }
        }
        Ok(())
    }

    /// Maps `len` bytes at `va` of the mkey an entry of the indirect mkey `parent` names.
    #[allow(clippy::too_many_arguments)]
    fn map_nested(
        &self,
        parent: &Mkey,
        e: &IndirectEntry,
        va: u64,
        len: u32,
        write: bool,
        walk: &mut Walk,
        out: &mut Vec<(u64, u32)>,
    ) -> Result<(), XlateError> {
        if len == 0 {
            return Ok(());
        }
        if walk.pg && e.key == NULL_MKEY && self.caps.general("null_mkey") != 0 {
            return Err(XlateError::PageFault);
        }
        let m = self.nested_key(parent, e.key, write, walk)?;
        walk.chain.push(parent.key);
        let r = self.map_range(m, va, len, write, walk, out);
        walk.chain.pop();
        r
    }

    /// The mkey `key` an entry of the indirect mkey `parent` names, if the walk may go
    /// down to it: within the depth bound, no loop, live, in `parent`'s PD, with the local
    /// right of the access.
    pub(super) fn nested_key(
        &self,
        parent: &Mkey,
        key: u32,
        write: bool,
        walk: &Walk,
    ) -> Result<&Mkey, XlateError> {
        let chain = &walk.chain;
        if chain.len() >= walk.depth || chain.contains(&parent.key) || key == parent.key {
            return Err(XlateError::Protection);
        }
        let m = self.mkey(key).ok_or(XlateError::Protection)?;
        let allowed = if write {
            m.access.local_write
        } else {
            m.access.local_read
        };
        if m.pd != parent.pd || !allowed || chain.contains(&m.key) {
            return Err(XlateError::Protection);
        }
        Ok(m)
    }
}

/// The end of `len` bytes at `addr`, if they lie inside mkey `m`'s range.
pub(super) fn in_range(m: &Mkey, addr: u64, len: u32) -> Result<u64, XlateError> {
    let end = addr
        .checked_add(u64::from(len))
        .ok_or(XlateError::Protection)?;
    match m.len {
        Some(l) if addr < m.start || end > m.start.saturating_add(l) => Err(XlateError::Protection),
        _ => Ok(end),
    }
}

/// A range of a direct (PA or MTT) mkey that is one contiguous range of guest physical
/// memory: a page of an MTT mkey, the whole range of a PA mkey; always inside the mkey's
/// range, so a piece inside it passes every check [`Firmware::map_range`] makes of that key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    /// First virtual address.
    va: u64,
    /// Past the last virtual address.
    end: u64,
    /// Guest physical address of `va`.
    pa: u64,
}

impl Run {
    /// The run of `m` around `va` (which `map_range` just mapped), if `m` is direct.
    fn of(m: &Mkey, va: u64) -> Option<Run> {
        let (lo, hi) = match m.len {
            Some(l) => (m.start, m.start.checked_add(l)?),
            None => (0, u64::MAX),
        };
        let (va0, end, pa) = match &m.map {
            MkeyMap::Pa => (lo, hi, lo),
            MkeyMap::Mtt {
                page_shift, pages, ..
            } => {
                let page = 1u64.checked_shl(u32::from(*page_shift))?;
                let base = m.start & !(page - 1);
                let i = usize::try_from(va.checked_sub(base)? >> page_shift).ok()?;
                let first = base.checked_add((i as u64).checked_mul(page)?)?;
                let pa = *pages.get(i)?;
                // Clamped to the key's range; the PA moves with the start.
                let va0 = first.max(lo);
                (
                    va0,
                    first.checked_add(page)?.min(hi),
                    pa.checked_add(va0 - first)?,
                )
            }
            _ => return None,
        };
        (va0 <= va && va < end).then_some(Run { va: va0, end, pa })
    }

    /// Whether `n` bytes at `va` lie inside the run.
    fn holds(&self, va: u64, n: u64) -> bool {
        va >= self.va && va.checked_add(n).is_some_and(|e| e <= self.end)
    }
}
