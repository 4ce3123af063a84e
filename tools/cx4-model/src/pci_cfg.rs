//! PCI configuration space of the modelled function.
//!
//! QEMU's vfio client reads the server's config space and emulates BARs and MSI-X itself, but
//! the model still behaves like a real function: read-only fields stay read-only, BAR sizing
//! works, and writes outside writable bits are ignored.

use cx4_hw::pci::{BAR0_SIZE, CLASS_ETHERNET, VENDOR_MELLANOX};

/// Size of the (extended) configuration space.
pub const CFG_SIZE: usize = 4096;
/// Offset of the PCI Express capability.
pub const CAP_PCIE: usize = 0x60;
/// Offset of the MSI-X capability.
pub const CAP_MSIX: usize = 0x9c;
/// Offset of the MSI-X table in BAR0 (the last 64 KiB of the BAR, clear of UAR pages in use).
pub const MSIX_TABLE_OFFSET: u32 = (BAR0_SIZE - 0x10000) as u32;
/// Offset of the MSI-X pending-bit array in BAR0.
pub const MSIX_PBA_OFFSET: u32 = MSIX_TABLE_OFFSET + 0x8000;

/// The configuration space and its write mask.
pub struct PciConfig {
    data: [u8; CFG_SIZE],
    wmask: [u8; CFG_SIZE],
}

impl PciConfig {
    /// Builds the config space of a ConnectX-4 family function.
    pub fn new(device_id: u16, msix_vectors: u16) -> Self {
        let mut c = PciConfig {
            data: [0; CFG_SIZE],
            wmask: [0; CFG_SIZE],
        };
        c.set16(0x00, VENDOR_MELLANOX);
        c.set16(0x02, device_id);
        c.set16(0x06, 0x0010); // status: capability list
        c.set32(0x08, CLASS_ETHERNET << 8); // class code, revision 0
        c.data[0x0e] = 0x00; // header type 0, single function
                             // BAR0: 64-bit prefetchable memory.
        c.set32(0x10, 0b1100);
        c.set32(0x14, 0);
        c.set16(0x2c, VENDOR_MELLANOX); // subsystem vendor
        c.set16(0x2e, device_id); // subsystem id
        c.data[0x34] = CAP_PCIE as u8;
        c.data[0x3d] = 0; // no INTx pin: MSI-X only, like the driver expects

        // PCI Express capability v2, endpoint.
        let p = CAP_PCIE;
        c.data[p] = 0x10;
        c.data[p + 1] = CAP_MSIX as u8;
        c.set16(p + 0x02, 0x0002); // version 2, type 0 (PCIe endpoint)
        c.set32(p + 0x04, 0x0000_8002); // devcap: MPS 512, role-based error reporting
        c.set16(p + 0x08, 0x2810); // devctl: MRRS 512, MPS 128, relaxed ordering
        c.set32(p + 0x0c, 0x0041_0083); // linkcap: 8 GT/s x8 (ConnectX-4 is PCIe 3.0 x8/x16)
        c.set16(p + 0x12, 0x0083); // linksta: 8 GT/s x8
        c.set32(p + 0x24, 0x0000_0010); // devcap2: completion timeout disable
        c.wmask[p + 0x08] = 0xff;
        c.wmask[p + 0x09] = 0x7f;
        c.wmask[p + 0x10] = 0xff; // linkctl low byte

        // MSI-X capability, table and PBA in BAR0.
        let m = CAP_MSIX;
        c.data[m] = 0x11;
        c.data[m + 1] = 0;
        c.set16(m + 0x02, msix_vectors - 1);
        c.set32(m + 0x04, MSIX_TABLE_OFFSET); // BIR 0
        c.set32(m + 0x08, MSIX_PBA_OFFSET); // BIR 0
        c.wmask[m + 0x03] = 0xc0; // enable, function mask

        // Command register: memory space, bus master, parity, SERR, INTx disable.
        c.wmask[0x04] = 0x46;
        c.wmask[0x05] = 0x05;
        // BAR0 address bits (size-aligned); BAR1 holds the upper half.
        let size_mask = !(BAR0_SIZE as u32 - 1);
        c.wmask[0x10..0x14].copy_from_slice(&size_mask.to_le_bytes());
        c.wmask[0x14..0x18].copy_from_slice(&[0xff; 4]);
        c.wmask[0x0c] = 0xff; // cache line size
        c.wmask[0x0d] = 0xff; // latency timer
        c.wmask[0x3c] = 0xff; // interrupt line
        c
    }

    fn set16(&mut self, off: usize, v: u16) {
        self.data[off..off + 2].copy_from_slice(&v.to_le_bytes());
    }

    fn set32(&mut self, off: usize, v: u32) {
        self.data[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// Reads `out.len()` bytes at `off`; out-of-range bytes read as all-ones, like a master abort.
    pub fn read(&self, off: u64, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            *b = usize::try_from(off)
                .ok()
                .and_then(|o| o.checked_add(i))
                .and_then(|o| self.data.get(o).copied())
                .unwrap_or(0xff);
        }
    }

    /// Writes bytes at `off`, honouring the write mask; out-of-range bytes are dropped.
    pub fn write(&mut self, off: u64, data: &[u8]) {
        for (i, &b) in data.iter().enumerate() {
            let Some(o) = usize::try_from(off).ok().and_then(|o| o.checked_add(i)) else {
                return;
            };
            if o >= CFG_SIZE {
                return;
            }
            let m = self.wmask[o];
            self.data[o] = (self.data[o] & !m) | (b & m);
        }
    }

    /// Whether bus mastering is enabled (the device may DMA).
    pub fn bus_master(&self) -> bool {
        self.data[0x04] & 0x04 != 0
    }

    /// Raw 16-bit read, for tests and the device.
    pub fn read16(&self, off: usize) -> u16 {
        u16::from_le_bytes([self.data[off], self.data[off + 1]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r32(c: &PciConfig, off: u64) -> u32 {
        let mut b = [0; 4];
        c.read(off, &mut b);
        u32::from_le_bytes(b)
    }

    #[test]
    fn identity_and_class() {
        let c = PciConfig::new(0x1013, 4);
        assert_eq!(r32(&c, 0), 0x1013_15b3);
        assert_eq!(r32(&c, 8) >> 8, 0x02_0000);
    }

    #[test]
    fn bar0_sizes_to_32_mib_64bit_prefetchable() {
        let mut c = PciConfig::new(0x1013, 4);
        c.write(0x10, &[0xff; 4]);
        c.write(0x14, &[0xff; 4]);
        let lo = r32(&c, 0x10);
        assert_eq!(lo & 0xf, 0xc, "64-bit prefetchable memory BAR");
        let size = !(u64::from(r32(&c, 0x14)) << 32 | u64::from(lo & !0xf)) + 1;
        assert_eq!(size, 32 << 20);
    }

    #[test]
    fn capability_chain_reaches_msix() {
        let c = PciConfig::new(0x1015, 8);
        let mut p = c.data[0x34] as usize;
        let mut seen = vec![];
        while p != 0 {
            seen.push(c.data[p]);
            p = c.data[p + 1] as usize;
        }
        assert_eq!(seen, vec![0x10, 0x11]);
        assert_eq!(c.read16(CAP_MSIX + 2) & 0x7ff, 7, "table size is N-1");
    }

    #[test]
    fn read_only_fields_ignore_writes_and_out_of_range_is_safe() {
        let mut c = PciConfig::new(0x1013, 4);
        c.write(0, &[0; 4]);
        assert_eq!(r32(&c, 0), 0x1013_15b3);
        c.write(4095, &[1, 2, 3]);
        let mut b = [0; 4];
        c.read(4094, &mut b);
        assert_eq!(&b[2..], &[0xff, 0xff]);
        c.read(u64::MAX, &mut b);
        assert_eq!(b, [0xff; 4]);
    }
}
