//! Client and server over a socketpair: the commands a VMM uses, working as they should.

mod common;

use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixStream;

use common::*;
use vfio_user_proto::wire::*;
use vfio_user_proto::*;

#[test]
fn version_and_device_info() {
    let (h, mut c) = Harness::start();
    let caps = c.server_caps().clone();
    assert_eq!(caps.max_msg_fds, 16);
    assert_eq!(caps.max_data_xfer_size, 1 << 20);
    assert_eq!(caps.pgsizes, 4096);
    assert!(!caps.write_multiple);
    let info = c.device_info().unwrap();
    assert_eq!(info.argsz, 16);
    assert_eq!(info.flags, VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET);
    assert_eq!((info.num_regions, info.num_irqs), (9, 5));
    drop(c);
    h.join();
}

#[test]
fn region_and_irq_info() {
    let (h, mut c) = Harness::start();
    let (r, fd) = c.region_info(REGS).unwrap();
    assert!(fd.is_none());
    assert_eq!(
        (r.argsz, r.index, r.size, r.cap_offset),
        (32, REGS, 4096, 0)
    );
    assert_eq!(
        r.flags,
        VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE
    );
    let (r, _) = c.region_info(RO).unwrap();
    assert_eq!(r.flags, VFIO_REGION_INFO_FLAG_READ);
    // Listed-nowhere indexes below num_regions exist with size 0.
    let (r, _) = c.region_info(3).unwrap();
    assert_eq!((r.size, r.flags), (0, 0));
    let irq = c.irq_info(MSIX).unwrap();
    assert_eq!((irq.index, irq.count, irq.argsz), (MSIX, MSIX_VECTORS, 16));
    assert_eq!(c.irq_info(1).unwrap().count, 0);
    drop(c);
    h.join();
}

#[test]
fn mmap_region_sends_its_fd() {
    let mem = memfd("bar2", 8192).unwrap();
    mem.write_all_at(b"mapped", 4096).unwrap();
    let mut info = TestDev::info();
    info.regions.push(RegionInfo {
        index: 2,
        size: 4096,
        flags: VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_MMAP,
        mmap: Some(RegionMmap {
            fd: std::sync::Arc::new(mem.into()),
            offset: 4096,
        }),
    });
    let (h, mut c) = Harness::start_raw_with(info, ServerConfig::default());
    c.negotiate().unwrap();
    let (r, fd) = c.region_info(2).unwrap();
    assert_eq!(r.offset, 4096);
    assert_ne!(r.flags & VFIO_REGION_INFO_FLAG_MMAP, 0);
    let mut buf = [0u8; 6];
    fd.expect("no fd with the MMAP region")
        .read_exact_at(&mut buf, r.offset)
        .unwrap();
    assert_eq!(&buf, b"mapped");
    drop(c);
    h.join();
}

#[test]
fn region_read_write_and_posted_writes() {
    let (h, mut c) = Harness::start();
    c.region_write(REGS, 0x10, &[1, 2, 3, 4, 5, 6, 7, 8])
        .unwrap();
    let mut buf = [0u8; 8];
    c.region_read(REGS, 0x10, &mut buf).unwrap();
    assert_eq!(buf, [1, 2, 3, 4, 5, 6, 7, 8]);
    c.region_write(CONFIG, 0, &0x1234_5678u32.to_ne_bytes())
        .unwrap();
    let mut cfg = [0u8; 4];
    c.region_read(CONFIG, 0, &mut cfg).unwrap();
    assert_eq!(u32::from_ne_bytes(cfg), 0x1234_5678);
    // Posted writes get no reply; a later read is ordered after them.
    for i in 0..64u32 {
        c.region_write_posted(REGS, 0x80, &i.to_ne_bytes()).unwrap();
    }
    c.region_read(REGS, 0x80, &mut cfg).unwrap();
    assert_eq!(u32::from_ne_bytes(cfg), 63);
    // Zero-length accesses are fine; a whole 4 KiB region in one go too.
    c.region_read(REGS, 4096, &mut []).unwrap();
    let mut all = vec![0u8; 4096];
    c.region_read(REGS, 0, &mut all).unwrap();
    assert_eq!(&all[0x10..0x18], &[1, 2, 3, 4, 5, 6, 7, 8]);
    drop(c);
    h.join();
}

#[test]
fn write_multi_applies_in_order() {
    let (h, mut c) = Harness::start();
    let entry = |offset: u64, data: &[u8]| {
        let mut d = [0u8; 8];
        d[..data.len()].copy_from_slice(data);
        WriteMultiEntry {
            offset,
            region: REGS,
            count: data.len() as u32,
            data: u64::from_ne_bytes(d),
        }
        .encode()
    };
    let mut body = 3u64.to_ne_bytes().to_vec();
    body.extend(entry(0x20, &[0xaa; 4]));
    body.extend(entry(0x20, &[0xbb; 2]));
    body.extend(entry(0x28, &[0xcc; 8]));
    let reply = c
        .request(Command::REGION_WRITE_MULTI, 0, &body, &[])
        .unwrap();
    assert_eq!(reply.body, 3u64.to_ne_bytes());
    // Posted, as QEMU sends it.
    let mut posted = 1u64.to_ne_bytes().to_vec();
    posted.extend(entry(0x30, &[0xdd]));
    c.post(Command::REGION_WRITE_MULTI, &posted, &[]).unwrap();
    let mut buf = [0u8; 17];
    c.region_read(REGS, 0x20, &mut buf).unwrap();
    assert_eq!(&buf[..4], &[0xbb, 0xbb, 0xaa, 0xaa]);
    assert_eq!(&buf[8..16], &[0xcc; 8]);
    assert_eq!(buf[16], 0xdd);
    drop(c);
    h.join();
}

fn set_u64(c: &mut Client, off: u64, v: u64) {
    c.region_write(REGS, off, &v.to_ne_bytes()).unwrap();
}

fn set_u32(c: &mut Client, off: u64, v: u32) {
    c.region_write(REGS, off, &v.to_ne_bytes()).unwrap();
}

fn status(c: &mut Client) -> u32 {
    let mut b = [0u8; 4];
    c.region_read(REGS, DMA_STATUS, &mut b).unwrap();
    u32::from_ne_bytes(b)
}

#[test]
fn dma_map_uses_the_fd_and_unmap_withdraws_it() {
    let (h, mut c) = Harness::start();
    let mem = memfd("guest", 0x4000).unwrap();
    let map = DmaMap {
        iova: 0x10000,
        size: 0x2000,
        offset: 0x1000,
        flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE,
    };
    c.dma_map(map, Some(mem.as_fd())).unwrap();
    assert_eq!(h.dev.state().maps.len(), 1);
    assert!(h.dev.state().maps[0].1.is_some());

    // Device writes guest memory.
    c.region_write(REGS, 0, b"device to guest!").unwrap();
    set_u64(&mut c, DMA_IOVA, 0x10100);
    set_u32(&mut c, DMA_LEN, 16);
    set_u32(&mut c, DMA_GO, GO_TO_GUEST);
    assert_eq!(status(&mut c), 0);
    let mut got = [0u8; 16];
    mem.read_exact_at(&mut got, 0x1100).unwrap();
    assert_eq!(&got, b"device to guest!");

    // Device reads guest memory.
    mem.write_all_at(b"guest to device.", 0x2ff0).unwrap();
    set_u64(&mut c, DMA_IOVA, 0x11ff0);
    set_u32(&mut c, DMA_GO, GO_FROM_GUEST);
    assert_eq!(status(&mut c), 0);
    let mut scratch = [0u8; 16];
    c.region_read(REGS, 0, &mut scratch).unwrap();
    assert_eq!(&scratch, b"guest to device.");

    // Past the end of the mapping.
    set_u64(&mut c, DMA_IOVA, 0x11ff8);
    set_u32(&mut c, DMA_GO, GO_TO_GUEST);
    assert_eq!(status(&mut c), libc::EFAULT as u32);

    c.dma_unmap(0x10000, 0x2000, 0).unwrap();
    assert!(h.dev.state().maps.is_empty());
    set_u64(&mut c, DMA_IOVA, 0x10100);
    set_u32(&mut c, DMA_GO, GO_TO_GUEST);
    assert_eq!(status(&mut c), libc::EFAULT as u32);
    drop(c);
    h.join();
}

#[test]
fn dma_map_without_fd_and_unmap_all() {
    let (h, mut c) = Harness::start();
    let mem = memfd("guest", 0x2000).unwrap();
    c.dma_map(
        DmaMap {
            iova: 0,
            size: 0x1000,
            offset: 0,
            flags: DMA_MAP_FLAG_READ,
        },
        None,
    )
    .unwrap();
    c.dma_map(
        DmaMap {
            iova: 0x1000,
            size: 0x1000,
            offset: 0x1000,
            flags: 3,
        },
        Some(mem.as_fd()),
    )
    .unwrap();
    c.dma_map(
        DmaMap {
            iova: 0x8000,
            size: 0x1000,
            offset: 0,
            flags: 3,
        },
        Some(mem.as_fd()),
    )
    .unwrap();
    assert!(h.dev.state().maps[0].1.is_none());
    // One unmap covering two whole mappings is split into two backend calls.
    c.dma_unmap(0, 0x2000, 0).unwrap();
    assert_eq!(h.dev.state().maps.len(), 1);
    // What QEMU sends when the address space goes away.
    c.dma_unmap(0, 0, DMA_UNMAP_FLAG_ALL).unwrap();
    assert!(h.dev.state().maps.is_empty());
    // Memory can be mapped again at the same place.
    c.dma_map(
        DmaMap {
            iova: 0,
            size: 0x1000,
            offset: 0,
            flags: 3,
        },
        Some(mem.as_fd()),
    )
    .unwrap();
    drop(c);
    h.join();
}

#[test]
fn irq_eventfds_are_delivered() {
    let (h, mut c) = Harness::start();
    let e: Vec<_> = (0..4).map(|_| eventfd().unwrap()).collect();
    let fds: Vec<_> = e.iter().map(|f| f.as_fd()).collect();
    c.set_irqs(
        MSIX,
        VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
        0,
        4,
        &[],
        &fds,
    )
    .unwrap();

    set_u32(&mut c, IRQ_FIRE, 2);
    assert!(signalled(&e[2]));
    assert_eq!(take(&e[2]), 1);
    assert!(!signalled(&e[0]) && !signalled(&e[1]) && !signalled(&e[3]));

    // Masking (DATA_NONE) holds an interrupt back.
    c.set_irqs(
        MSIX,
        VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_MASK,
        1,
        1,
        &[],
        &[],
    )
    .unwrap();
    set_u32(&mut c, IRQ_FIRE, 1);
    assert!(!signalled(&e[1]));
    c.set_irqs(
        MSIX,
        VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_UNMASK,
        1,
        1,
        &[],
        &[],
    )
    .unwrap();
    set_u32(&mut c, IRQ_FIRE, 1);
    assert_eq!(take(&e[1]), 1);

    // DATA_BOOL reaches the backend as DATA_NONE runs.
    c.set_irqs(
        MSIX,
        VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_TRIGGER,
        0,
        4,
        &[1, 0, 1, 1],
        &[],
    )
    .unwrap();
    assert_eq!(take(&e[0]), 1);
    assert!(!signalled(&e[1]));
    assert_eq!((take(&e[2]), take(&e[3])), (1, 1));
    {
        let st = h.dev.state();
        let none_trigger = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
        let tail = &st.set_irqs_calls[st.set_irqs_calls.len() - 2..];
        assert_eq!(
            tail,
            &[(MSIX, none_trigger, 0, 1, 0), (MSIX, none_trigger, 2, 2, 0)]
        );
    }

    // Eventfds without fds de-assign (QEMU's way of sending -1).
    c.set_irqs(
        MSIX,
        VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
        2,
        2,
        &[],
        &[],
    )
    .unwrap();
    set_u32(&mut c, IRQ_FIRE, 2);
    assert!(!signalled(&e[2]));
    assert!(h.dev.state().vectors[0].is_some());
    // count 0 with DATA_NONE disables the index.
    c.set_irqs(
        MSIX,
        VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
        0,
        0,
        &[],
        &[],
    )
    .unwrap();
    assert!(h.dev.state().vectors.iter().all(Option::is_none));
    drop(c);
    h.join();
}

#[test]
fn reset_clears_the_device() {
    let (h, mut c) = Harness::start();
    c.region_write(REGS, 0, &[9; 4]).unwrap();
    c.reset().unwrap();
    let mut b = [0xffu8; 4];
    c.region_read(REGS, 0, &mut b).unwrap();
    assert_eq!(b, [0; 4]);
    assert_eq!(h.dev.state().resets, 1);
    drop(c);
    h.join();
}

#[test]
fn disconnect_unmaps_and_notifies() {
    let (h, mut c) = Harness::start();
    let mem = memfd("guest", 0x1000).unwrap();
    c.dma_map(
        DmaMap {
            iova: 0x1000,
            size: 0x1000,
            offset: 0,
            flags: 3,
        },
        Some(mem.as_fd()),
    )
    .unwrap();
    let e = eventfd().unwrap();
    c.set_irqs(
        MSIX,
        VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
        0,
        1,
        &[],
        &[e.as_fd()],
    )
    .unwrap();
    drop(c);
    let dev = h.dev.clone();
    h.join();
    let st = dev.state();
    assert!(st.maps.is_empty());
    assert_eq!(st.disconnects, 1);
    assert!(st.vectors.iter().all(Option::is_none));
}

/// The `VERSION` request QEMU 11 sends (hw/vfio-user/proxy.c `caps_json()`).
fn qemu_version_request(id: u16) -> Vec<u8> {
    let json = r#"{"capabilities": {"migration": {"pgsize": 4096, "max_bitmap_size": 268435456}, "max_msg_fds": 16, "max_data_xfer_size": 1048576, "pgsizes": 4096, "max_dma_maps": 65535, "write_multiple": true}}"#;
    let mut payload = VersionHead { major: 0, minor: 0 }.encode();
    payload.extend_from_slice(json.as_bytes());
    payload.push(0);
    encode_request(id, Command::VERSION, 0, &payload)
}

fn check_qemu_version_reply(req: &[u8], reply: &Message) -> Caps {
    assert!(reply.errno().is_none());
    assert!(
        reply.header.size as usize <= req.len(),
        "QEMU would drop a reply longer than its request"
    );
    let head = VersionHead::decode(&reply.body).unwrap();
    assert_eq!((head.major, head.minor), (0, 0));
    assert_eq!(
        reply.body.last(),
        Some(&0),
        "QEMU wants the capabilities NUL-terminated"
    );
    let caps = Caps::parse(&reply.body[4..]).unwrap();
    assert!(!caps.present.contains(&caps::key::MIGRATION));
    caps
}

#[test]
fn qemu_version_handshake() {
    let (h, mut c) = Harness::start_raw(ServerConfig::default());
    let req = qemu_version_request(0);
    let reply = raw_call(&mut c, &req, &[]);
    let caps = check_qemu_version_reply(&req, &reply);
    assert_eq!(
        (caps.max_msg_fds, caps.max_data_xfer_size, caps.pgsizes),
        (16, 1 << 20, 4096)
    );
    assert!(!caps.write_multiple);
    // A client that proposes nothing gets nothing back but the version.
    let reply = raw_call(
        &mut c,
        &encode_request(1, Command::VERSION, 0, &[0, 0, 0, 0]),
        &[],
    );
    assert_eq!(reply.header.size, 20);
    probe(&mut c);
    drop(c);
    h.join();

    let config = ServerConfig {
        write_multiple: true,
        ..Default::default()
    };
    let (h, mut c) = Harness::start_raw(config);
    let reply = raw_call(&mut c, &req, &[]);
    assert!(check_qemu_version_reply(&req, &reply).write_multiple);
    drop(c);
    h.join();
}

#[test]
fn server_to_client_requests_and_replies() {
    let (a, b) = UnixStream::pair().unwrap();
    let dev = TestDev::new();
    let mut backend = dev.clone();
    let server = std::thread::spawn(move || {
        let mut conn = Connection::new(a, TestDev::info(), ServerConfig::default()).unwrap();
        // A DMA_READ in QEMU's layout: u64 address, u32 count.
        let mut payload = 0x1000u64.to_ne_bytes().to_vec();
        payload.extend_from_slice(&8u32.to_ne_bytes());
        let first = conn
            .send_request(Command::DMA_READ, 0, &payload, &[])
            .unwrap();
        let second = conn
            .send_request(Command::DMA_READ, 0, &payload, &[])
            .unwrap();
        assert_ne!(first, second);
        let mut replies = Vec::new();
        let mut requests = 0;
        while replies.len() < 2 {
            match conn.handle_one(&mut backend).unwrap() {
                Event::Reply(m) => replies.push(m),
                Event::Request { result, .. } => {
                    result.unwrap();
                    requests += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(replies[0].header.id, first);
        assert_eq!(replies[0].body, b"8 bytes!");
        assert_eq!(replies[1].header.id, second);
        assert_eq!(replies[1].errno(), Some(Errno::ENOTSUP));
        assert!(requests >= 1, "client requests were served while waiting");
        conn.serve(&mut backend).unwrap();
    });
    let mut c = Client::from_stream(b);
    // Answer the first request by hand, after sending a request of our own.
    let req = c.recv_raw().unwrap().unwrap();
    assert_eq!(req.header.command, Command::DMA_READ);
    let version = qemu_version_request(77);
    c.send_raw(&version, &[]).unwrap();
    let mut reply = req.header.reply();
    reply.size = 24;
    let mut bytes = reply.encode().to_vec();
    bytes.extend_from_slice(b"8 bytes!");
    c.send_raw(&bytes, &[]).unwrap();
    // The second request is still queued ahead of the replies: the Client refuses it by
    // itself while it waits (and skips the reply to the hand-made VERSION as stray).
    c.negotiate().unwrap();
    probe(&mut c);
    drop(c);
    server.join().unwrap();
}

#[test]
fn handle_one_with_a_read_timeout_interleaves() {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_read_timeout(Some(std::time::Duration::from_millis(20)))
        .unwrap();
    let mut dev = TestDev::new();
    let mut conn = Connection::new(a, TestDev::info(), ServerConfig::default()).unwrap();
    assert!(matches!(conn.handle_one(&mut dev).unwrap(), Event::Idle));
    // A message that arrives in two halves, with a pause longer than the timeout between.
    let client = std::thread::spawn(move || {
        let mut c = Client::from_stream(b);
        let req = qemu_version_request(5);
        c.send_raw(&req[..10], &[]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        c.send_raw(&req[10..], &[]).unwrap();
        let reply = c.recv_raw().unwrap().unwrap();
        assert_eq!(reply.header.id, 5);
        probe(&mut c);
    });
    let mut handled = 0;
    loop {
        match conn.handle_one(&mut dev).unwrap() {
            Event::Idle => {}
            Event::Request { result, .. } => {
                result.unwrap();
                handled += 1;
            }
            Event::Closed => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(handled, 3);
    client.join().unwrap();

    // Non-blocking works the same way.
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    let mut conn = Connection::new(a, TestDev::info(), ServerConfig::default()).unwrap();
    assert!(matches!(conn.handle_one(&mut dev).unwrap(), Event::Idle));
    let client = std::thread::spawn(move || {
        let mut c = Client::from_stream(b);
        c.negotiate().unwrap();
        probe(&mut c);
    });
    conn.serve(&mut dev).unwrap();
    client.join().unwrap();
}
