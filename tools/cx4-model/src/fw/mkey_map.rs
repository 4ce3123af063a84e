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

use super::mkey::RepeatEntry;
use super::{Firmware, IndirectEntry, Mkey, MkeyMap, XlateError};

impl Firmware {
    /// Appends the guest pieces of `len` bytes at `addr` of mkey `m` to `out`; `chain` holds
    /// the indirect mkeys above `m` (for the depth bound and loop detection). The caller
    /// checked `m`'s own rights.
    pub(super) fn map_range(
        &self,
        m: &Mkey,
        addr: u64,
        len: u32,
        write: bool,
        chain: &mut Vec<u32>,
        out: &mut Vec<(u64, u32)>,
    ) -> Result<(), XlateError> {
        let end = addr
            .checked_add(u64::from(len))
            .ok_or(XlateError::Protection)?;
        if let Some(l) = m.len {
            if addr < m.start || end > m.start.saturating_add(l) {
                return Err(XlateError::Protection);
            }
        }
        match &m.map {
            MkeyMap::Pa => out.push((addr, len)),
            MkeyMap::Mtt { page_shift, pages } => {
                let page = 1u64 << page_shift;
                let base = m.start & !(page - 1);
                let mut a = addr;
                while a < end {
                    let off = a.checked_sub(base).ok_or(XlateError::Protection)?;
                    let i =
                        usize::try_from(off >> page_shift).map_err(|_| XlateError::Protection)?;
                    let in_page = a & (page - 1);
                    let n = (page - in_page).min(end - a);
                    let pa = pages.get(i).ok_or(XlateError::Protection)? + in_page;
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
                        self.map_nested(m, e, va, (to - from) as u32, write, chain, out)?;
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
                    self.map_nested(m, e, va, n as u32, write, chain, out)?;
                    a += n;
                }
            }
            MkeyMap::Repeat {
                block,
                count,
                entries,
            } => self.map_repeat(m, (*block, *count, entries), addr, end, write, chain, out)?,
        }
        Ok(())
    }

    /// The pieces of `addr..end` of the repeat-block mkey `m`: repetition r = (offset /
    /// block), then the entry the offset inside the repetition falls in, at `va + r·stride`.
    #[allow(clippy::too_many_arguments)]
    fn map_repeat(
        &self,
        m: &Mkey,
        (block, count, entries): (u32, u32, &[RepeatEntry]),
        addr: u64,
        end: u64,
        write: bool,
        chain: &mut Vec<u32>,
        out: &mut Vec<(u64, u32)>,
    ) -> Result<(), XlateError> {
        let block = u64::from(block);
        if block == 0 {
            return Err(XlateError::Protection);
        }
        let mut a = addr;
        while a < end {
            let off = a.checked_sub(m.start).ok_or(XlateError::Protection)?;
            let (rep, mut within) = (off / block, off % block);
            if rep >= u64::from(count) {
                return Err(XlateError::Protection);
            }
            let mut at = None;
            for e in entries {
                let len = u64::from(e.len);
                if within < len {
                    at = Some((e, within, len - within));
                    break;
                }
                within -= len;
            }
            let (e, inside, left) = at.ok_or(XlateError::Protection)?;
            let n = left.min(end - a);
            let va = rep
                .checked_mul(u64::from(e.stride))
                .and_then(|s| e.va.checked_add(s))
                .and_then(|v| v.checked_add(inside))
                .ok_or(XlateError::Protection)?;
            let klm = IndirectEntry {
                len: u32::from(e.len),
                key: e.key,
                va: e.va,
            };
            self.map_nested(m, &klm, va, n as u32, write, chain, out)?;
            a += n;
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
        chain: &mut Vec<u32>,
        out: &mut Vec<(u64, u32)>,
    ) -> Result<(), XlateError> {
        if len == 0 {
            return Ok(());
        }
        let depth = (self.caps.general("max_indirection") as usize).max(1);
        if chain.len() >= depth || chain.contains(&parent.key) || e.key == parent.key {
            return Err(XlateError::Protection);
        }
        let m = self.mkey(e.key).ok_or(XlateError::Protection)?;
        let allowed = if write {
            m.access.local_write
        } else {
            m.access.local_read
        };
        if m.pd != parent.pd || !allowed || chain.contains(&m.key) {
            return Err(XlateError::Protection);
        }
        chain.push(parent.key);
        let r = self.map_range(m, va, len, write, chain, out);
        chain.pop();
        r
    }
}
