// SPDX-License-Identifier: GPL-2.0
//! CRC-32 (IEEE 802.3, reflected, polynomial 0xedb88320 — zlib's `crc32`), so that the test
//! hook can report a block's checksum instead of its bytes and the test compare it with
//! Python's `zlib.crc32` of the reference.

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut b = 0;
        while b < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            b += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = table();

/// A running CRC-32.
pub(crate) struct Crc32(u32);

impl Crc32 {
    /// The empty message's state.
    pub(crate) fn new() -> Self {
        Self(0xffff_ffff)
    }

    /// Adds `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        for &b in data {
            self.0 = TABLE[((self.0 ^ u32::from(b)) & 0xff) as usize] ^ (self.0 >> 8);
        }
    }

    /// The checksum.
    pub(crate) fn finish(&self) -> u32 {
        !self.0
    }
}
