//! The server's record of the client's DMA mappings, used to validate `DMA_MAP`/`DMA_UNMAP`
//! before the backend sees them and to unmap everything when the client goes away.

use std::collections::BTreeMap;

use crate::backend::DmaMap;
use crate::Errno;

/// Non-overlapping DMA mappings keyed by first address.
#[derive(Debug, Default)]
pub(crate) struct DmaTable {
    maps: BTreeMap<u64, DmaMap>,
}

/// The last address of `size` bytes at `iova`, if `size > 0` and it does not wrap.
pub(crate) fn last_addr(iova: u64, size: u64) -> Option<u64> {
    iova.checked_add(size.checked_sub(1)?)
}

impl DmaTable {
    pub(crate) fn len(&self) -> usize {
        self.maps.len()
    }

    /// Whether any mapping shares a byte with `iova..=last`.
    pub(crate) fn overlaps(&self, iova: u64, last: u64) -> bool {
        // Mappings are disjoint, so the one starting last at or before `last` is the only
        // candidate that can reach back to `iova`.
        self.maps
            .range(..=last)
            .next_back()
            .is_some_and(|(_, m)| m.last() >= iova)
    }

    pub(crate) fn insert(&mut self, map: DmaMap) {
        self.maps.insert(map.iova, map);
    }

    pub(crate) fn remove(&mut self, iova: u64) {
        self.maps.remove(&iova);
    }

    /// The mappings an unmap of `size` bytes at `iova` withdraws: exactly one matching
    /// mapping, or all mappings inside the range if none sticks out of it.
    ///
    /// `EINVAL` for an empty/wrapping range or a mapping that straddles its edge, `ENOENT`
    /// if the range holds no mapping.
    pub(crate) fn covered(&self, iova: u64, size: u64) -> Result<Vec<DmaMap>, Errno> {
        let last = last_addr(iova, size).ok_or(Errno::EINVAL)?;
        if let Some(m) = self.maps.get(&iova).filter(|m| m.size == size) {
            return Ok(vec![*m]);
        }
        if self
            .maps
            .range(..iova)
            .next_back()
            .is_some_and(|(_, m)| m.last() >= iova)
        {
            return Err(Errno::EINVAL);
        }
        let inside: Vec<DmaMap> = self.maps.range(iova..=last).map(|(_, m)| *m).collect();
        if inside.iter().any(|m| m.last() > last) {
            return Err(Errno::EINVAL);
        }
        if inside.is_empty() {
            return Err(Errno::ENOENT);
        }
        Ok(inside)
    }

    /// All mappings, in address order.
    pub(crate) fn all(&self) -> Vec<DmaMap> {
        self.maps.values().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(iova: u64, size: u64) -> DmaMap {
        DmaMap {
            iova,
            size,
            offset: 0,
            flags: 3,
        }
    }

    #[test]
    fn overlap_and_cover() {
        let mut t = DmaTable::default();
        t.insert(map(0x1000, 0x1000));
        t.insert(map(0x3000, 0x1000));
        assert!(t.overlaps(0x1fff, 0x1fff));
        assert!(t.overlaps(0, 0x1000));
        assert!(!t.overlaps(0x2000, 0x2fff));
        assert!(t.overlaps(0, u64::MAX));
        assert_eq!(t.covered(0x1000, 0x1000).unwrap().len(), 1);
        assert_eq!(t.covered(0, 0x10000).unwrap().len(), 2);
        assert_eq!(t.covered(0x1800, 0x100), Err(Errno::EINVAL));
        assert_eq!(t.covered(0x3000, 0x800), Err(Errno::EINVAL));
        assert_eq!(t.covered(0x8000, 0x1000), Err(Errno::ENOENT));
        assert_eq!(t.covered(1, 0), Err(Errno::EINVAL));
        assert_eq!(last_addr(u64::MAX, 2), None);
        assert_eq!(last_addr(u64::MAX, 1), Some(u64::MAX));
    }
}
