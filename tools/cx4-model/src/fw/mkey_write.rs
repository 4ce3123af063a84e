//! A device write through an mkey as copies rather than pieces: the repetitions of a
//! repeat-block entry whose stride is its length are contiguous in the entry's key, so they
//! are translated once, as one range, and the data's chunks are laid end to end over it —
//! one walk per code block of an EC result instead of one per 64-byte chunk
//! (`roce/vector_calc.rs`: libmlx5's and cx4's output mkey spreads the engine's
//! chunk-interleaved result over the m code blocks).
//!
//! Every check [`Firmware::translate`] makes is made, on the same ranges of the same keys,
//! and all of them before a byte is written. What may differ is only the order in which the
//! copies land, which shows only where two entries of one repeat block overlap in memory: a
//! list the PRM gives no result for.

use super::mkey::{RepeatEntry, RESERVED_LKEY};
use super::mkey_map::{in_range, Walk};
use super::{Firmware, Mkey, MkeyMap, XlateError};
use crate::guest_mem::GuestMem;

/// One copy of a device write: which bytes of the written data go where in guest memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Copy {
    /// `n` bytes of the data at `at`, to guest physical `pa`.
    Piece {
        /// Offset in the data.
        at: usize,
        /// Guest physical address.
        pa: u64,
        /// Bytes.
        n: u32,
    },
    /// `count` chunks of `chunk` bytes, the data's r-th at `at + r·step`, laid end to end
    /// over the guest physical pieces `dst`, in order (they add up to `count · chunk`).
    Strided {
        /// Offset in the data of the first chunk.
        at: usize,
        /// Distance in the data between two chunks.
        step: usize,
        /// Bytes per chunk.
        chunk: u32,
        /// Chunks.
        count: u32,
        /// Where they go.
        dst: Vec<(u64, u32)>,
    },
    /// `count` chunks of `chunk` bytes, the data's r-th at `at + r·step`, each over the same
    /// guest physical pieces `dst` (adding up to `chunk`), in order: the last one stays (a
    /// repeat-block entry of stride 0).
    Repeated {
        /// Offset in the data of the first chunk.
        at: usize,
        /// Distance in the data between two chunks.
        step: usize,
        /// Bytes per chunk.
        chunk: u32,
        /// Chunks.
        count: u32,
        /// Where each goes.
        dst: Vec<(u64, u32)>,
    },
}

/// Pieces in order, as copies of the data from its start.
fn piece_copies(pieces: Vec<(u64, u32)>, mut at: usize, out: &mut Vec<Copy>) {
    for (pa, n) in pieces {
        out.push(Copy::Piece { at, pa, n });
        at += n as usize;
    }
}

impl Firmware {
    /// [`Firmware::translate`] of `len` bytes at `addr` through `lkey` for the device to
    /// write, as the copies that place the data: whole repetitions of a repeat-block mkey as
    /// one [`Copy::Strided`] per entry whose stride equals its length, one [`Copy::Repeated`]
    /// per entry of stride 0, the rest as pieces.
    pub fn translate_write(
        &self,
        mem: &GuestMem,
        lkey: u32,
        pd: u32,
        addr: u64,
        len: u32,
    ) -> Result<Vec<Copy>, XlateError> {
        let repeat = match lkey {
            RESERVED_LKEY => None,
            k => self.mkey(k).and_then(|m| match &m.map {
                MkeyMap::Repeat {
                    block,
                    count,
                    entries,
                } => Some((m, (*block, *count, &entries[..]))),
                _ => None,
            }),
        };
        let mut out = Vec::new();
        let Some((m, rb)) = repeat else {
            piece_copies(self.translate(mem, lkey, pd, addr, len, true)?, 0, &mut out);
            return Ok(out);
        };
        self.top_key(lkey, pd, true)?;
        self.repeat_copies(m, rb, addr, len, &mut out)?;
        let mapped = |&(pa, n): &(u64, u32)| mem.ends_mapped(pa, u64::from(n));
        let all_mapped = out.iter().all(|c| match c {
            Copy::Piece { pa, n, .. } => mapped(&(*pa, *n)),
            Copy::Strided { dst, .. } | Copy::Repeated { dst, .. } => dst.iter().all(mapped),
        });
        if all_mapped {
            Ok(out)
        } else {
            Err(XlateError::NotMapped)
        }
    }

    /// The copies of `len` bytes at `addr` of the repeat-block mkey `m`: the partial
    /// repetitions at either end piece by piece ([`Firmware::map_repeat`]), the whole ones
    /// in between entry by entry.
    fn repeat_copies(
        &self,
        m: &Mkey,
        (block, count, entries): (u32, u32, &[RepeatEntry]),
        addr: u64,
        len: u32,
        out: &mut Vec<Copy>,
    ) -> Result<(), XlateError> {
        let end = in_range(m, addr, len)?;
        let b = u64::from(block);
        let sum: u64 = entries.iter().map(|e| u64::from(e.len)).sum();
        if b == 0 || sum != b {
            return Err(XlateError::Protection);
        }
        let off = addr.checked_sub(m.start).ok_or(XlateError::Protection)?;
        // Whole repetitions first..last (exclusive), if any.
        let (first, last) = (off.div_ceil(b), (off + u64::from(len)) / b);
        let rb = (block, count, entries);
        let mut walk = Walk::new(self);
        if first >= last {
            let mut pieces = Vec::new();
            self.map_repeat(m, rb, addr, end, true, &mut walk, &mut pieces)?;
            piece_copies(pieces, 0, out);
            return Ok(());
        }
        if last > u64::from(count) {
            return Err(XlateError::Protection);
        }
        let (mid, mid_end) = (m.start + first * b, m.start + last * b);
        if addr < mid {
            let mut pieces = Vec::new();
            self.map_repeat(m, rb, addr, mid, true, &mut walk, &mut pieces)?;
            piece_copies(pieces, 0, out);
        }
        let reps = last - first;
        let mut e_off = 0u64;
        for e in entries {
            let (n, stride) = (u64::from(e.len), u64::from(e.stride));
            let at = (first * b + e_off - off) as usize;
            e_off += n;
            if n == 0 {
                continue;
            }
            let key = self.nested_key(m, e.key, true, &walk)?;
            let va_of = |r: u64| {
                r.checked_mul(stride)
                    .and_then(|s| e.va.checked_add(s))
                    .ok_or(XlateError::Protection)
            };
            walk.chain.push(m.key);
            let r = if stride == n {
                // Contiguous: one range for all the repetitions.
                let mut dst = Vec::new();
                let bytes = u32::try_from(reps * n).map_err(|_| XlateError::Protection)?;
                self.map_range(key, va_of(first)?, bytes, true, &mut walk, &mut dst)
                    .map(|()| {
                        out.push(Copy::Strided {
                            at,
                            step: block as usize,
                            chunk: u32::from(e.len),
                            count: reps as u32,
                            dst,
                        })
                    })
            } else if stride == 0 {
                // Every repetition on the same bytes: one translation.
                let mut dst = Vec::new();
                self.map_range(key, va_of(first)?, n as u32, true, &mut walk, &mut dst)
                    .map(|()| {
                        out.push(Copy::Repeated {
                            at,
                            step: block as usize,
                            chunk: u32::from(e.len),
                            count: reps as u32,
                            dst,
                        })
                    })
            } else {
                (0..reps).try_for_each(|i| {
                    let mut pieces = Vec::new();
                    self.map_range(
                        key,
                        va_of(first + i)?,
                        n as u32,
                        true,
                        &mut walk,
                        &mut pieces,
                    )?;
                    piece_copies(pieces, at + (i * b) as usize, out);
                    Ok(())
                })
            };
            walk.chain.pop();
            r?;
        }
        if mid_end < end {
            let mut pieces = Vec::new();
            self.map_repeat(m, rb, mid_end, end, true, &mut walk, &mut pieces)?;
            piece_copies(pieces, (mid_end - addr) as usize, out);
        }
        Ok(())
    }
}

/// The walk of a [`Copy::Strided`]: `count` chunks of `chunk` bytes, the r-th at data
/// offset `at + r·step`, laid end to end over the pieces `dst`. Calls `f(piece, offset in the
/// piece, data offset, bytes)` for each span in order; false if `f` refuses one, the offsets
/// overflow or the pieces do not add up to the chunks.
pub fn strided_spans(
    dst: &[(u64, u32)],
    (at, step, chunk, count): (usize, usize, usize, usize),
    mut f: impl FnMut(usize, usize, usize, usize) -> bool,
) -> bool {
    let total = chunk.saturating_mul(count);
    let mut q = 0usize; // bytes of the chunks laid so far
    for (i, &(_, n)) in dst.iter().enumerate() {
        let n = n as usize;
        let mut p = 0;
        while p < n {
            if q >= total || chunk == 0 {
                return false;
            }
            let (r, w) = (q / chunk, q % chunk);
            let k = (chunk - w).min(n - p);
            let from = r
                .checked_mul(step)
                .and_then(|o| o.checked_add(at)?.checked_add(w));
            if !from.is_some_and(|from| f(i, p, from, k)) {
                return false;
            }
            p += k;
            q += k;
        }
    }
    q == total
}

#[cfg(test)]
impl Copy {
    /// What the copy does, byte range by byte range: (offset in the data, guest physical
    /// address, bytes), in the order it writes them.
    pub(crate) fn spans(&self) -> Vec<(usize, u64, u32)> {
        match self {
            Copy::Piece { at, pa, n } => vec![(*at, *pa, *n)],
            Copy::Strided {
                at,
                step,
                chunk,
                count,
                dst,
            } => {
                let mut out = Vec::new();
                let shape = (*at, *step, *chunk as usize, *count as usize);
                strided_spans(dst, shape, |i, p, from, k| {
                    out.push((from, dst[i].0 + p as u64, k as u32));
                    true
                });
                out
            }
            Copy::Repeated {
                at,
                step,
                count,
                dst,
                ..
            } => (0..*count as usize)
                .flat_map(|r| {
                    let mut from = at + r * step;
                    dst.iter().map(move |&(pa, n)| {
                        from += n as usize;
                        (from - n as usize, pa, n)
                    })
                })
                .collect(),
        }
    }
}
