//! Guest memory reached through the DMA mappings the client sends (memfds, mapped shared).
//!
//! Every DMA the model performs goes through here, bounds-checked by vm-memory: an address
//! outside the mapped ranges is an error, never a wild access.

use std::{fs::File, sync::Arc};

use vm_memory::{
    Bytes, FileOffset, GuestAddress, GuestMemoryBackend, GuestMemoryMmap, GuestMemoryRegion,
    GuestRegionMmap, MmapRegion,
};

/// One DMA mapping as the client described it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaRange {
    /// I/O virtual address (guest physical address with QEMU).
    pub iova: u64,
    /// Length in bytes.
    pub size: u64,
}

/// The set of mapped guest ranges.
#[derive(Default)]
pub struct GuestMem {
    regions: Vec<(DmaRange, Arc<GuestRegionMmap>)>,
    mem: GuestMemoryMmap,
    /// Maps that arrived without a file descriptor (ROM areas); not reachable by the model.
    pub unbacked: Vec<DmaRange>,
}

impl GuestMem {
    /// Adds a mapping backed by `fd` at `offset`.
    pub fn map(
        &mut self,
        iova: u64,
        size: u64,
        offset: u64,
        fd: Option<File>,
    ) -> std::io::Result<()> {
        let err = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, m);
        let range = DmaRange { iova, size };
        if size == 0 || iova.checked_add(size).is_none() {
            return Err(err(format!("bad DMA range {iova:#x}+{size:#x}")));
        }
        let Some(fd) = fd else {
            self.unbacked.push(range);
            return Ok(());
        };
        let len = usize::try_from(size).map_err(|_| err("DMA range too large".into()))?;
        let mmap = MmapRegion::from_file(FileOffset::new(fd, offset), len)
            .map_err(|e| err(format!("mmap of DMA range {iova:#x}+{size:#x}: {e}")))?;
        let region = GuestRegionMmap::new(mmap, GuestAddress(iova))
            .ok_or_else(|| err(format!("DMA range {iova:#x}+{size:#x} not representable")))?;
        let region = Arc::new(region);
        let mem = self
            .mem
            .insert_region(region.clone())
            .map_err(|e| err(format!("DMA range {iova:#x}+{size:#x} overlaps: {e}")))?;
        self.mem = mem;
        self.regions.push((range, region));
        Ok(())
    }

    /// Removes the mapping that starts at `iova` with `size`.
    pub fn unmap(&mut self, iova: u64, size: u64) -> std::io::Result<()> {
        if let Some(i) = self
            .unbacked
            .iter()
            .position(|r| r.iova == iova && r.size == size)
        {
            self.unbacked.remove(i);
            return Ok(());
        }
        let i = self
            .regions
            .iter()
            .position(|(r, _)| r.iova == iova && r.size == size)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("no DMA mapping {iova:#x}+{size:#x}"),
                )
            })?;
        self.regions.remove(i);
        let (mem, _) = self
            .mem
            .remove_region(GuestAddress(iova), size)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::NotFound, e.to_string()))?;
        self.mem = mem;
        Ok(())
    }

    /// Drops every mapping (reset or disconnect).
    pub fn clear(&mut self) {
        self.regions.clear();
        self.unbacked.clear();
        self.mem = GuestMemoryMmap::default();
    }

    /// Reads guest memory at `addr`.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), vm_memory::GuestMemoryError> {
        // One mapping holds the whole range (the common case): one lookup, one copy.
        if let Ok(s) = self.mem.get_slice(GuestAddress(addr), buf.len()) {
            s.copy_to(buf);
            return Ok(());
        }
        self.mem.read_slice(buf, GuestAddress(addr))
    }

    /// `len` bytes at `addr` in place, for a calculation to read without copying them
    /// (`ec::dot`): `None` unless one mapping holds them all.
    pub fn input(&self, addr: u64, len: usize) -> Option<crate::ec::dot::Input<'_>> {
        let s = self.mem.get_slice(GuestAddress(addr), len).ok()?;
        Some(s.into())
    }

    /// Whether the byte at `addr` is in a mapping (a 1-byte [`GuestMem::read`] there would
    /// succeed), without copying anything.
    pub fn is_mapped(&self, addr: u64) -> bool {
        self.mem.address_in_range(GuestAddress(addr))
    }

    /// Whether the bytes at `addr` and at `addr + len - 1` are in mappings (true for
    /// `len` 0): [`GuestMem::is_mapped`] of both, with one lookup when one mapping holds both.
    pub fn ends_mapped(&self, addr: u64, len: u64) -> bool {
        let Some(last) = len.checked_sub(1).map(|l| addr.checked_add(l)) else {
            return true;
        };
        let Some(last) = last else {
            return false;
        };
        match self.mem.find_region(GuestAddress(addr)) {
            Some(r) => last <= r.last_addr().0 || self.is_mapped(last),
            None => false,
        }
    }

    /// Writes a [`crate::fw::Copy::Strided`] of `data` (`shape`: its `at`, `step`, `chunk`,
    /// `count`) over the guest physical pieces `dst`, each piece's mapping looked up once;
    /// false if the data or guest memory is short (what was copied before stays).
    pub fn write_strided(
        &self,
        dst: &[(u64, u32)],
        data: &[u8],
        shape: (usize, usize, usize, usize),
    ) -> bool {
        let mut slice = None;
        crate::fw::strided_spans(dst, shape, |i, p, from, k| {
            if slice.as_ref().is_none_or(|(j, _)| *j != i) {
                let (pa, n) = dst[i];
                match self.mem.get_slice(GuestAddress(pa), n as usize) {
                    Ok(s) => slice = Some((i, s)),
                    Err(_) => return false,
                }
            }
            let src = data.get(from..from + k);
            matches!((&slice, src), (Some((_, s)), Some(src)) if s.write_slice(src, p).is_ok())
        })
    }

    /// Writes guest memory at `addr`.
    pub fn write(&self, addr: u64, buf: &[u8]) -> Result<(), vm_memory::GuestMemoryError> {
        if let Ok(s) = self.mem.get_slice(GuestAddress(addr), buf.len()) {
            s.copy_from(buf);
            return Ok(());
        }
        self.mem.write_slice(buf, GuestAddress(addr))
    }
}

/// A memfd of `len` zero bytes, as QEMU backs guest RAM (for unit tests).
#[cfg(test)]
pub(crate) fn test_backing(len: usize) -> File {
    vfio_user_proto::memfd("cx4-test", len as u64).expect("memfd")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memfd(len: usize) -> File {
        test_backing(len)
    }

    #[test]
    fn access_inside_mapping_works_and_outside_fails() {
        let mut g = GuestMem::default();
        g.map(0x10000, 0x2000, 0, Some(memfd(0x2000))).unwrap();
        g.write(0x10ff0, &[1, 2, 3, 4]).unwrap();
        assert!(g.is_mapped(0x10000) && g.is_mapped(0x11fff));
        assert!(!g.is_mapped(0xffff) && !g.is_mapped(0x12000));
        let mut b = [0; 4];
        g.read(0x10ff0, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        assert!(
            g.read(0x11ffe, &mut b).is_err(),
            "read crossing the end must fail"
        );
        assert!(
            g.write(0x0, &b).is_err(),
            "write below the mapping must fail"
        );
        g.unmap(0x10000, 0x2000).unwrap();
        assert!(
            g.read(0x10ff0, &mut b).is_err(),
            "unmapped range must not be reachable"
        );
    }

    #[test]
    fn accesses_across_adjacent_mappings_work() {
        let mut g = GuestMem::default();
        g.map(0x10000, 0x1000, 0, Some(memfd(0x1000))).unwrap();
        g.map(0x11000, 0x1000, 0, Some(memfd(0x1000))).unwrap();
        g.write(0x10ffe, &[1, 2, 3, 4]).unwrap();
        let mut b = [0; 4];
        g.read(0x10ffe, &mut b).unwrap();
        assert_eq!(b, [1, 2, 3, 4]);
        g.read(0x11000, &mut b[..2]).unwrap();
        assert_eq!(b[..2], [3, 4]);
        assert!(g.read(0x11ffe, &mut b).is_err(), "past the second mapping");
        assert!(g.ends_mapped(0x10ffe, 4) && g.ends_mapped(0x10000, 0x2000));
        assert!(!g.ends_mapped(0x11ffe, 4) && !g.ends_mapped(0xfffe, 4));
        assert!(g.ends_mapped(0x5, 0) && !g.ends_mapped(u64::MAX, 2));
        assert!(g.write(0x11ffe, &b).is_err());
    }

    #[test]
    fn bad_maps_are_refused() {
        let mut g = GuestMem::default();
        assert!(g
            .map(u64::MAX - 10, 0x1000, 0, Some(memfd(0x1000)))
            .is_err());
        assert!(g.map(0, 0, 0, None).is_err());
        g.map(0x0, 0x1000, 0, Some(memfd(0x1000))).unwrap();
        assert!(
            g.map(0x800, 0x1000, 0, Some(memfd(0x1000))).is_err(),
            "overlap"
        );
        assert!(g.unmap(0x5000, 0x1000).is_err());
    }
}
