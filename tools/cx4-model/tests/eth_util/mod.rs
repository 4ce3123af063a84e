//! Independent helpers for the Ethernet engine tests: a packet builder with its own
//! word-by-word checksum (sharing no code with the engine), checkers that re-sum headers, a
//! memory-key map implementing the engine's `Dma`, and a seeded generator.

#![allow(dead_code)] // each test binary uses its own part

use std::{cell::RefCell, collections::HashMap};

use cx4_model::eth::dma::{Dma, DmaError};

/// Ones' complement sum of 16-bit big-endian words, folded, computed the slow way.
pub fn naive_sum(parts: &[&[u8]]) -> u16 {
    let mut all = Vec::new();
    for p in parts {
        all.extend_from_slice(p);
    }
    if all.len() % 2 == 1 {
        all.push(0);
    }
    let mut s: u32 = 0;
    for w in all.chunks(2) {
        s += (u32::from(w[0]) << 8) | u32::from(w[1]);
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// An IP endpoint pair.
#[derive(Clone, Debug)]
pub struct Ip {
    /// IPv6 (else IPv4).
    pub v6: bool,
    /// Source address (4 or 16 bytes).
    pub src: Vec<u8>,
    /// Destination address.
    pub dst: Vec<u8>,
}

impl Ip {
    /// IPv4 pair.
    pub fn v4(src: [u8; 4], dst: [u8; 4]) -> Ip {
        Ip {
            v6: false,
            src: src.to_vec(),
            dst: dst.to_vec(),
        }
    }

    /// IPv6 pair.
    pub fn v6(src: [u8; 16], dst: [u8; 16]) -> Ip {
        Ip {
            v6: true,
            src: src.to_vec(),
            dst: dst.to_vec(),
        }
    }

    /// The pseudo-header bytes for `proto` and `len`.
    pub fn pseudo(&self, proto: u8, len: usize) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&self.src);
        p.extend_from_slice(&self.dst);
        if self.v6 {
            p.extend_from_slice(&(len as u32).to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, proto]);
        } else {
            p.extend_from_slice(&[0, proto]);
            p.extend_from_slice(&(len as u16).to_be_bytes());
        }
        p
    }

    /// The EtherType of this version.
    pub fn ethertype(&self) -> u16 {
        if self.v6 {
            0x86dd
        } else {
            0x0800
        }
    }
}

/// TCP flag bits.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const CWR: u8 = 0x80;

/// A TCP segment with a correct checksum (`options` padded by the caller to 4 bytes).
pub fn tcp(
    ip: &Ip,
    sport: u16,
    dport: u16,
    seq: u32,
    flags: u8,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let doff = (20 + options.len()) / 4;
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&0x1122_3344u32.to_be_bytes()); // ack
    t.push((doff as u8) << 4);
    t.push(flags);
    t.extend_from_slice(&0xfaf0u16.to_be_bytes()); // window
    t.extend_from_slice(&[0, 0, 0, 0]); // csum, urg
    t.extend_from_slice(options);
    t.extend_from_slice(payload);
    let c = !naive_sum(&[&ip.pseudo(6, t.len()), &t]);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

/// A UDP datagram with a correct checksum (or zero when `csum` is false).
pub fn udp(ip: &Ip, sport: u16, dport: u16, payload: &[u8], csum: bool) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    if csum {
        let mut c = !naive_sum(&[&ip.pseudo(17, u.len()), &u]);
        if c == 0 {
            c = 0xffff;
        }
        u[6..8].copy_from_slice(&c.to_be_bytes());
    }
    u
}

/// An IP packet around `payload`: IPv4 with a correct header checksum and `options`, or
/// IPv6 (options ignored).
pub fn ip_packet(ip: &Ip, proto: u8, id: u16, options: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    if ip.v6 {
        p.extend_from_slice(&[0x60, 0, 0, 0]);
        p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
        p.push(proto);
        p.push(64);
        p.extend_from_slice(&ip.src);
        p.extend_from_slice(&ip.dst);
    } else {
        let ihl = (20 + options.len()) / 4;
        p.push(0x40 | ihl as u8);
        p.push(0);
        p.extend_from_slice(&((ihl * 4 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
        p.push(64);
        p.push(proto);
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&ip.src);
        p.extend_from_slice(&ip.dst);
        p.extend_from_slice(options);
        let c = !naive_sum(&[&p]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
    }
    p.extend_from_slice(payload);
    p
}

/// An Ethernet frame with the given 802.1Q tags (outermost first).
pub fn ethernet(vlans: &[u16], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02];
    for tci in vlans {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A VXLAN header.
pub fn vxlan(vni: u32) -> Vec<u8> {
    let mut v = vec![0x08, 0, 0, 0];
    v.extend_from_slice(&(vni << 8).to_be_bytes());
    v
}

/// A GENEVE header with `opt_words` 4-byte option words and payload protocol `proto`.
pub fn geneve(vni: u32, opt_words: u8, proto: u16) -> Vec<u8> {
    let mut g = vec![opt_words & 0x3f, 0];
    g.extend_from_slice(&proto.to_be_bytes());
    g.extend_from_slice(&(vni << 8).to_be_bytes());
    for i in 0..opt_words {
        g.extend_from_slice(&[0x01, 0x02, 0x80 | i, 0]);
    }
    g
}

/// A GRE header (version 0) with an optional key.
pub fn gre(key: Option<u32>, proto: u16) -> Vec<u8> {
    let flags: u16 = if key.is_some() { 0x2000 } else { 0 };
    let mut g = flags.to_be_bytes().to_vec();
    g.extend_from_slice(&proto.to_be_bytes());
    if let Some(k) = key {
        g.extend_from_slice(&k.to_be_bytes());
    }
    g
}

/// Whether the IPv4 header at `off` (length from its IHL) re-sums to 0xffff.
pub fn ipv4_header_ok(f: &[u8], off: usize) -> bool {
    let ihl = usize::from(f[off] & 0xf) * 4;
    naive_sum(&[&f[off..off + ihl]]) == 0xffff
}

/// Whether the transport segment `f[l4..end]` with pseudo-header of `ip`/`proto` re-sums to
/// 0xffff.
pub fn l4_sum_ok(f: &[u8], ip: &Ip, proto: u8, l4: usize, end: usize) -> bool {
    naive_sum(&[&ip.pseudo(proto, end - l4), &f[l4..end]]) == 0xffff
}

/// Big-endian u16 at `at`.
pub fn be16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

/// Big-endian u32 at `at`.
pub fn be32(f: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]])
}

/// Memory keys over host buffers: lkey → (base address, bytes).
#[derive(Default)]
pub struct Mkeys {
    keys: HashMap<u32, (u64, RefCell<Vec<u8>>)>,
}

impl Mkeys {
    /// Adds a key covering `size` zero bytes from `base`.
    pub fn add(&mut self, lkey: u32, base: u64, size: usize) {
        self.keys.insert(lkey, (base, RefCell::new(vec![0; size])));
    }

    /// Copies `data` into key `lkey` at `addr`.
    pub fn fill(&self, lkey: u32, addr: u64, data: &[u8]) {
        let (base, mem) = &self.keys[&lkey];
        let at = (addr - base) as usize;
        mem.borrow_mut()[at..at + data.len()].copy_from_slice(data);
    }

    /// Reads `len` bytes of key `lkey` at `addr`.
    pub fn get(&self, lkey: u32, addr: u64, len: usize) -> Vec<u8> {
        let (base, mem) = &self.keys[&lkey];
        let at = (addr - base) as usize;
        mem.borrow()[at..at + len].to_vec()
    }

    fn range(
        &self,
        lkey: u32,
        addr: u64,
        len: usize,
    ) -> Result<(usize, &RefCell<Vec<u8>>), DmaError> {
        let (base, mem) = self.keys.get(&lkey).ok_or(DmaError::BadLkey { lkey })?;
        let prot = DmaError::Protection {
            lkey,
            addr,
            len: len as u64,
        };
        let off = addr.checked_sub(*base).ok_or(prot)?;
        let end = off.checked_add(len as u64).ok_or(prot)?;
        if end > mem.borrow().len() as u64 {
            return Err(prot);
        }
        Ok((off as usize, mem))
    }
}

impl Dma for Mkeys {
    fn read(&self, lkey: u32, addr: u64, out: &mut [u8]) -> Result<(), DmaError> {
        let (off, mem) = self.range(lkey, addr, out.len())?;
        out.copy_from_slice(&mem.borrow()[off..off + out.len()]);
        Ok(())
    }

    fn write(&self, lkey: u32, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        let (off, mem) = self.range(lkey, addr, data.len())?;
        mem.borrow_mut()[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// Seeded splitmix64 generator.
pub struct Rng(u64);

impl Rng {
    /// Seeded generator; `CX4_FUZZ_SEED` overrides the seed.
    pub fn new(salt: u64) -> Rng {
        let seed = std::env::var("CX4_FUZZ_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_e7e0_0000_0000u64);
        Rng(seed ^ salt)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `num/den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}
