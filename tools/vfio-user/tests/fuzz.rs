//! Bounded fuzzing with a seeded PRNG: random, mutated and truncated messages. The server must
//! never panic (the test device asserts that nothing invalid reaches it, so a validation gap
//! shows up as a panic too), must answer well-formed, and must stay in step: after every
//! garbage message a probe request gets its own reply.
//!
//! Set `VFIO_USER_FUZZ_SEED` to replay a run; each test stops after a few seconds.

mod common;

use std::fs::File;
use std::io::Write;
use std::net::Shutdown;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::*;
use vfio_user_proto::wire::*;
use vfio_user_proto::*;

const BUDGET: Duration = Duration::from_secs(3);
/// Message ids at and above this are the probe's; garbage uses those below.
const PROBE_IDS: u16 = 0xf000;

/// xorshift64*: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn from_env(salt: u64) -> Self {
        let seed = std::env::var("VFIO_USER_FUZZ_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_cafe_f00d_d00d_u64);
        eprintln!("fuzz seed {seed} (salt {salt})");
        Self((seed ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// Random bytes of a random length below `max`.
    fn noise(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max) as usize;
        self.bytes(n)
    }

    /// A value that tends to sit on edges.
    fn interesting(&mut self) -> u64 {
        const EDGES: [u64; 12] = [
            0,
            1,
            2,
            3,
            4,
            8,
            0xfff,
            0x1000,
            0x7fff_ffff,
            0xffff_ffff,
            u64::MAX,
            u64::MAX - 1,
        ];
        if self.chance(60) {
            EDGES[self.below(EDGES.len() as u64) as usize]
        } else {
            self.next() >> self.below(64)
        }
    }
}

/// A valid request: command, payload, number of eventfds to attach (or a memfd).
struct Template {
    cmd: Command,
    payload: Vec<u8>,
    eventfds: usize,
    memfd: bool,
}

fn template(rng: &mut Rng) -> Template {
    let t = |cmd, payload, eventfds, memfd| Template {
        cmd,
        payload,
        eventfds,
        memfd,
    };
    match rng.below(13) {
        0 => {
            let mut p = VersionHead { major: 0, minor: 0 }.encode();
            p.extend(Client::proposed_caps().to_version_data(None));
            t(Command::VERSION, p, 0, false)
        }
        1 => {
            let iova = rng.below(64) * 0x1000;
            let size = (1 + rng.below(4)) * 0x1000;
            let p = DmaMapPayload {
                argsz: 32,
                flags: 1 + rng.below(3) as u32,
                offset: rng.below(8) * 0x1000,
                iova,
                size,
            };
            t(Command::DMA_MAP, p.encode(), 0, rng.chance(80))
        }
        2 => {
            let p = DmaUnmapPayload {
                argsz: 24,
                flags: 0,
                iova: rng.below(64) * 0x1000,
                size: (1 + rng.below(4)) * 0x1000,
            };
            t(Command::DMA_UNMAP, p.encode(), 0, false)
        }
        3 => t(
            Command::DEVICE_GET_INFO,
            DeviceInfoPayload {
                argsz: 16,
                ..Default::default()
            }
            .encode(),
            0,
            false,
        ),
        4 => {
            let p = RegionInfoPayload {
                argsz: 32,
                index: rng.below(10) as u32,
                ..Default::default()
            };
            t(Command::DEVICE_GET_REGION_INFO, p.encode(), 0, false)
        }
        5 => {
            let p = IrqInfoPayload {
                argsz: 16,
                index: rng.below(6) as u32,
                ..Default::default()
            };
            t(Command::DEVICE_GET_IRQ_INFO, p.encode(), 0, false)
        }
        6 => {
            let count = 1 + rng.below(4) as u32;
            let p = IrqSetPayload {
                argsz: 20,
                flags: VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
                index: MSIX,
                start: 0,
                count,
            };
            t(Command::DEVICE_SET_IRQS, p.encode(), count as usize, false)
        }
        7 => {
            let count = rng.below(5) as u32;
            let action = [
                VFIO_IRQ_SET_ACTION_MASK,
                VFIO_IRQ_SET_ACTION_UNMASK,
                VFIO_IRQ_SET_ACTION_TRIGGER,
            ][rng.below(3) as usize];
            let mut p = IrqSetPayload {
                argsz: 20 + count,
                flags: VFIO_IRQ_SET_DATA_BOOL | action,
                index: MSIX,
                start: 0,
                count,
            }
            .encode();
            p.extend(rng.bytes(count as usize));
            t(Command::DEVICE_SET_IRQS, p, 0, false)
        }
        8 => {
            let p = IrqSetPayload {
                argsz: 20,
                flags: VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
                index: MSIX,
                start: 0,
                count: rng.below(5) as u32,
            };
            t(Command::DEVICE_SET_IRQS, p.encode(), 0, false)
        }
        9 => {
            let region = [REGS, RO, CONFIG][rng.below(3) as usize];
            let p = RegionAccessPayload {
                offset: rng.below(256),
                region,
                count: 1 << rng.below(4),
            };
            t(Command::REGION_READ, p.encode(), 0, false)
        }
        10 => {
            let count = 1u32 << rng.below(4);
            // Mostly the DMA and IRQ registers, so the device does real work.
            let offset =
                [DMA_IOVA, DMA_LEN, DMA_GO, IRQ_FIRE, rng.below(0x400)][rng.below(5) as usize];
            let mut p = RegionAccessPayload {
                offset,
                region: REGS,
                count,
            }
            .encode();
            p.extend(rng.bytes(count as usize));
            t(Command::REGION_WRITE, p, 0, false)
        }
        11 => {
            let n = rng.below(4);
            let mut p = n.to_ne_bytes().to_vec();
            for _ in 0..n {
                let e = WriteMultiEntry {
                    offset: rng.below(0x400),
                    region: REGS,
                    count: 1 + rng.below(8) as u32,
                    data: rng.next(),
                };
                p.extend(e.encode());
            }
            t(Command::REGION_WRITE_MULTI, p, 0, false)
        }
        _ => t(Command::DEVICE_RESET, Vec::new(), 0, false),
    }
}

/// Damages a message in one of several ways; returns (header, payload).
fn mutate(rng: &mut Rng, mut header: Header, mut payload: Vec<u8>) -> (Header, Vec<u8>) {
    for _ in 0..1 + rng.below(3) {
        match rng.below(9) {
            0 if !payload.is_empty() => {
                let i = rng.below(payload.len() as u64) as usize;
                payload[i] ^= 1 << rng.below(8);
            }
            1 if payload.len() >= 4 => {
                let i = rng.below(payload.len() as u64 - 3) as usize;
                let v = rng.interesting() as u32;
                payload[i..i + 4].copy_from_slice(&v.to_ne_bytes());
            }
            2 if payload.len() >= 8 => {
                let i = rng.below(payload.len() as u64 - 7) as usize;
                let v = rng.interesting();
                payload[i..i + 8].copy_from_slice(&v.to_ne_bytes());
            }
            3 => payload.truncate(rng.below(payload.len() as u64 + 1) as usize),
            4 => {
                let n = rng.below(64) as usize;
                payload.extend(rng.bytes(n));
            }
            5 => {
                header.command = Command(if rng.chance(80) {
                    rng.below(20) as u16
                } else {
                    rng.next() as u16
                })
            }
            6 => {
                header.flags = rng.next() as u32 & [0x3f, 0xffff_ffff, 0x10][rng.below(3) as usize]
            }
            7 => header.error = rng.next() as u32,
            _ => payload = rng.noise(200),
        }
    }
    (header, payload)
}

struct Fuzzer {
    rng: Rng,
    eventfds: Vec<File>,
    mem: File,
    probes: u16,
}

impl Fuzzer {
    fn new(salt: u64) -> Self {
        Self {
            rng: Rng::from_env(salt),
            eventfds: (0..MAX_FDS + 4).map(|_| eventfd().unwrap()).collect(),
            mem: memfd("fuzz-guest", 0x10000).unwrap(),
            probes: 0,
        }
    }

    /// One garbage message: (bytes with an honest size field, descriptors to attach).
    fn garbage(&mut self) -> (Vec<u8>, Vec<BorrowedFd<'_>>) {
        let rng = &mut self.rng;
        let t = template(rng);
        let mut header = Header::request(rng.below(u64::from(PROBE_IDS)) as u16, t.cmd, 0);
        let mut payload = t.payload;
        let mode = rng.below(10);
        if mode < 7 {
            (header, payload) = mutate(rng, header, payload);
        } else if mode == 7 {
            header.command = Command(rng.below(20) as u16);
            payload = rng.noise(300);
        }
        // else: unchanged, a valid request.
        let mut bytes = Vec::new();
        if rng.chance(3) {
            // A header whose size field is below 16: on the wire it is just those 16 bytes.
            header.size = rng.below(16) as u32;
            bytes.extend_from_slice(&header.encode());
        } else {
            header.size = (HEADER_SIZE + payload.len()) as u32;
            bytes.extend_from_slice(&header.encode());
            bytes.extend_from_slice(&payload);
        }
        let mut fds: Vec<BorrowedFd<'_>> = Vec::new();
        if t.memfd {
            fds.push(self.mem.as_fd());
        }
        let n = if rng.chance(10) {
            rng.below(self.eventfds.len() as u64 + 1) as usize
        } else {
            t.eventfds
        };
        fds.extend(self.eventfds.iter().take(n).map(|f| f.as_fd()));
        if rng.chance(5) {
            fds.push(self.mem.as_fd());
        }
        (bytes, fds)
    }

    /// Sends a probe read and reads until its reply, checking every reply on the way.
    fn probe(&mut self, c: &mut Client, what: &str) {
        let id = PROBE_IDS + self.probes % (u16::MAX - PROBE_IDS);
        self.probes = self.probes.wrapping_add(1);
        let read = RegionAccessPayload {
            offset: 0x40,
            region: REGS,
            count: 4,
        }
        .encode();
        c.send_raw(&encode_request(id, Command::REGION_READ, 0, &read), &[])
            .unwrap();
        loop {
            let m = c
                .recv_raw()
                .unwrap_or_else(|e| panic!("after {what}: {e} (out of step?)"))
                .unwrap_or_else(|| panic!("after {what}: server closed the connection"));
            assert_eq!(m.header.msg_type(), TYPE_REPLY, "after {what}");
            if m.header.is_error() {
                assert_ne!(m.header.error, 0, "error reply without errno after {what}");
                assert_eq!(m.header.size as usize, HEADER_SIZE, "after {what}");
            }
            if m.header.id == id {
                assert_eq!(m.header.command, Command::REGION_READ, "after {what}");
                assert!(
                    m.errno().is_none(),
                    "probe failed after {what}: {:?}",
                    m.errno()
                );
                assert_eq!(m.body.len(), RegionAccessPayload::SIZE + 4);
                return;
            }
            assert!(
                m.header.id < PROBE_IDS,
                "reply to an old probe after {what}"
            );
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().take(64).map(|x| format!("{x:02x}")).collect()
}

#[test]
fn garbage_messages_keep_the_server_in_step() {
    let mut fz = Fuzzer::new(1);
    let (h, mut c) = Harness::start();
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < BUDGET && n < 20_000 {
        let (bytes, fds) = fz.garbage();
        let nfds = fds.len();
        let what = format!("message {n}: {} fds, {}", nfds, hex(&bytes));
        c.send_raw(&bytes, &fds).unwrap();
        drop(fds);
        fz.probe(&mut c, &what);
        n += 1;
    }
    eprintln!("{n} garbage messages in {:?}", start.elapsed());
    assert!(n > 100);
    probe(&mut c);
    drop(c);
    h.join();
}

#[test]
fn pipelined_garbage_keeps_the_server_in_step() {
    // Many messages back to back before reading anything, as QEMU pipelines posted writes.
    let mut fz = Fuzzer::new(2);
    let (h, mut c) = Harness::start();
    let start = Instant::now();
    let mut rounds = 0;
    while start.elapsed() < BUDGET && rounds < 2_000 {
        let mut all = Vec::new();
        for _ in 0..1 + fz.rng.below(16) {
            let (bytes, fds) = fz.garbage();
            // Fds would ride on the first byte of the whole batch; send them separately.
            if fds.is_empty() {
                all.extend(bytes);
            } else {
                c.send_raw(&all, &[]).unwrap();
                all.clear();
                c.send_raw(&bytes, &fds).unwrap();
            }
        }
        c.send_raw(&all, &[]).unwrap();
        fz.probe(&mut c, &format!("round {rounds}"));
        rounds += 1;
    }
    eprintln!("{rounds} pipelined rounds in {:?}", start.elapsed());
    drop(c);
    h.join();
}

#[test]
fn random_streams_and_truncated_messages_end_cleanly() {
    // Bytes that need not frame at all, then the client hangs up: the server must end its
    // loop with Ok (no panic, no error) whatever it was in the middle of.
    let mut rng = Rng::from_env(3);
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < BUDGET && n < 400 {
        let (a, b) = UnixStream::pair().unwrap();
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let dev = TestDev::new();
        let mut backend = dev.clone();
        let server = std::thread::spawn(move || {
            let mut conn = Connection::new(a, TestDev::info(), ServerConfig::default()).unwrap();
            conn.serve(&mut backend)
        });
        let mut c = Client::from_stream(b);
        if rng.chance(70) {
            c.negotiate().unwrap();
        }
        let stream = match rng.below(3) {
            // Pure noise.
            0 => rng.noise(600),
            // A valid message cut short.
            1 => {
                let t = template(&mut rng);
                let full = encode_request(1, t.cmd, 0, &t.payload);
                full[..rng.below(full.len() as u64) as usize].to_vec()
            }
            // A header promising more than ever comes.
            _ => {
                let mut hdr = Header::request(2, Command(rng.below(20) as u16), 0);
                hdr.size = rng.interesting() as u32;
                let mut s = hdr.encode().to_vec();
                s.extend(rng.noise(100));
                s
            }
        };
        let mut raw = c.stream().try_clone().unwrap();
        // The server may be answering while we write; ignore a reset from an early close.
        let _ = raw.write_all(&stream);
        raw.shutdown(Shutdown::Write).unwrap();
        loop {
            match c.recv_raw() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("case {n}: {e} on {}", hex(&stream)),
            }
        }
        let result = server.join().expect("server thread panicked");
        result.unwrap_or_else(|e| panic!("case {n}: serve failed: {e} on {}", hex(&stream)));
        assert_eq!(dev.state().disconnects, 1);
        n += 1;
    }
    eprintln!("{n} streams in {:?}", start.elapsed());
}
