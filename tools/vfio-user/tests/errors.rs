//! Every error path answers with the right errno, header-only, and leaves the stream in step:
//! a valid request right afterwards still works.

mod common;

use std::os::fd::{AsFd, BorrowedFd};

use common::*;
use vfio_user_proto::wire::*;
use vfio_user_proto::*;

/// Sends a request made of `payload` and checks it fails with `errno`, then probes.
fn expect_err(c: &mut Client, cmd: Command, payload: &[u8], fds: &[BorrowedFd<'_>], errno: Errno) {
    let id = c.next_id();
    let req = encode_request(id, cmd, 0, payload);
    let reply = raw_call(c, &req, fds);
    assert_eq!(reply.header.id, id);
    assert_eq!(reply.header.command, cmd);
    assert_eq!(reply.header.msg_type(), TYPE_REPLY);
    assert_eq!(reply.errno(), Some(errno), "{cmd:?} {payload:02x?}");
    assert_ne!(reply.header.error, 0);
    assert_eq!(
        reply.header.size as usize, HEADER_SIZE,
        "error replies are header-only"
    );
    assert!(reply.fds.is_empty());
    probe(c);
}

#[test]
fn unknown_and_unsupported_commands() {
    let (h, mut c) = Harness::start();
    for cmd in [0u16, 6, 11, 12, 14, 16, 17, 18, 19, 0x7fff, 0xffff] {
        expect_err(&mut c, Command(cmd), &[0xa5; 40], &[], Errno::ENOTSUP);
        expect_err(&mut c, Command(cmd), &[], &[], Errno::ENOTSUP);
    }
    let e = eventfd().unwrap();
    expect_err(
        &mut c,
        Command::DEVICE_FEATURE,
        &[1; 24],
        &[e.as_fd()],
        Errno::ENOTSUP,
    );
    drop(c);
    h.join();
}

#[test]
fn requests_before_version_are_refused() {
    let (h, mut c) = Harness::start_raw(ServerConfig::default());
    let read = RegionAccessPayload {
        offset: 0,
        region: REGS,
        count: 4,
    }
    .encode();
    let id = c.next_id();
    let reply = raw_call(
        &mut c,
        &encode_request(id, Command::REGION_READ, 0, &read),
        &[],
    );
    assert_eq!(reply.errno(), Some(Errno::EINVAL));
    c.negotiate().unwrap();
    probe(&mut c);
    drop(c);
    h.join();
}

#[test]
fn bad_regions_and_indexes() {
    let (h, mut c) = Harness::start();
    for region in [3, 8, 9, 99, u32::MAX] {
        let read = RegionAccessPayload {
            offset: 0,
            region,
            count: 4,
        }
        .encode();
        expect_err(&mut c, Command::REGION_READ, &read, &[], Errno::EINVAL);
        let mut write = RegionAccessPayload {
            offset: 0,
            region,
            count: 4,
        }
        .encode();
        write.extend_from_slice(&[1, 2, 3, 4]);
        expect_err(&mut c, Command::REGION_WRITE, &write, &[], Errno::EINVAL);
    }
    for index in [9, 100, u32::MAX] {
        let ri = RegionInfoPayload {
            argsz: 32,
            index,
            ..Default::default()
        }
        .encode();
        expect_err(
            &mut c,
            Command::DEVICE_GET_REGION_INFO,
            &ri,
            &[],
            Errno::EINVAL,
        );
    }
    for index in [5, u32::MAX] {
        let ii = IrqInfoPayload {
            argsz: 16,
            index,
            ..Default::default()
        }
        .encode();
        expect_err(
            &mut c,
            Command::DEVICE_GET_IRQ_INFO,
            &ii,
            &[],
            Errno::EINVAL,
        );
    }
    assert_eq!(c.region_info(9).unwrap_err().errno(), Some(Errno::EINVAL));
    drop(c);
    h.join();
}

#[test]
fn out_of_range_and_forbidden_accesses() {
    let (h, mut c) = Harness::start();
    let read = |offset, region, count| {
        RegionAccessPayload {
            offset,
            region,
            count,
        }
        .encode()
    };
    let write = |offset, region, count, len: usize| {
        let mut p = RegionAccessPayload {
            offset,
            region,
            count,
        }
        .encode();
        p.extend(std::iter::repeat_n(0x5a, len));
        p
    };
    for (off, count) in [
        (4094, 4),
        (4096, 1),
        (u64::MAX, 4),
        (u64::MAX - 1, 2),
        (0, 4097),
    ] {
        expect_err(
            &mut c,
            Command::REGION_READ,
            &read(off, REGS, count),
            &[],
            Errno::EINVAL,
        );
    }
    expect_err(
        &mut c,
        Command::REGION_READ,
        &read(0, REGS, (1 << 20) + 1),
        &[],
        Errno::E2BIG,
    );
    expect_err(
        &mut c,
        Command::REGION_WRITE,
        &write(4092, REGS, 8, 8),
        &[],
        Errno::EINVAL,
    );
    // Read-only region.
    expect_err(
        &mut c,
        Command::REGION_WRITE,
        &write(0, RO, 4, 4),
        &[],
        Errno::EINVAL,
    );
    // count disagreeing with the data that came.
    expect_err(
        &mut c,
        Command::REGION_WRITE,
        &write(0, REGS, 8, 4),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::REGION_WRITE,
        &write(0, REGS, 4, 8),
        &[],
        Errno::EINVAL,
    );
    // REGION_WRITE_MULTI: bad count field, oversized entry, out-of-range entry.
    let entry = |offset, count| {
        WriteMultiEntry {
            offset,
            region: REGS,
            count,
            data: 0,
        }
        .encode()
    };
    let multi = |n: u64, entries: &[Vec<u8>]| {
        let mut b = n.to_ne_bytes().to_vec();
        entries.iter().for_each(|e| b.extend(e));
        b
    };
    expect_err(
        &mut c,
        Command::REGION_WRITE_MULTI,
        &multi(2, &[entry(0, 4)]),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::REGION_WRITE_MULTI,
        &multi(1, &[entry(0, 9)]),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::REGION_WRITE_MULTI,
        &multi(201, &[]),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::REGION_WRITE_MULTI,
        &multi(u64::MAX, &[]),
        &[],
        Errno::EINVAL,
    );
    // A bad entry after a good one: nothing is written.
    c.region_write(REGS, 0x60, &[0; 4]).unwrap();
    let mut good = WriteMultiEntry {
        offset: 0x60,
        region: REGS,
        count: 4,
        data: 0,
    };
    good.data = u64::from_ne_bytes([7; 8]);
    expect_err(
        &mut c,
        Command::REGION_WRITE_MULTI,
        &multi(2, &[good.encode(), entry(4095, 4)]),
        &[],
        Errno::EINVAL,
    );
    let mut b = [0u8; 4];
    c.region_read(REGS, 0x60, &mut b).unwrap();
    assert_eq!(b, [0; 4]);
    drop(c);
    h.join();
}

#[test]
fn truncated_bodies() {
    let (h, mut c) = Harness::start();
    let cases: [(Command, usize); 10] = [
        (Command::VERSION, VersionHead::SIZE),
        (Command::DMA_MAP, DmaMapPayload::SIZE),
        (Command::DMA_UNMAP, DmaUnmapPayload::SIZE),
        (Command::DEVICE_GET_INFO, DeviceInfoPayload::SIZE),
        (Command::DEVICE_GET_REGION_INFO, RegionInfoPayload::SIZE),
        (Command::DEVICE_GET_IRQ_INFO, IrqInfoPayload::SIZE),
        (Command::DEVICE_SET_IRQS, IrqSetPayload::SIZE),
        (Command::REGION_READ, RegionAccessPayload::SIZE),
        (Command::REGION_WRITE, RegionAccessPayload::SIZE),
        (Command::REGION_WRITE_MULTI, 8),
    ];
    for (cmd, size) in cases {
        for len in [0, 1, size / 2, size - 1] {
            expect_err(&mut c, cmd, &vec![0; len], &[], Errno::EINVAL);
        }
    }
    // argsz below the struct size.
    expect_err(
        &mut c,
        Command::DEVICE_GET_INFO,
        &DeviceInfoPayload {
            argsz: 8,
            ..Default::default()
        }
        .encode(),
        &[],
        Errno::EINVAL,
    );
    let ri = RegionInfoPayload {
        argsz: 16,
        index: 0,
        ..Default::default()
    }
    .encode();
    expect_err(
        &mut c,
        Command::DEVICE_GET_REGION_INFO,
        &ri,
        &[],
        Errno::EINVAL,
    );
    drop(c);
    h.join();
}

#[test]
fn bad_message_sizes_keep_the_stream_in_step() {
    let (h, mut c) = Harness::start();
    // Declared size below the header: the 16 bytes are the whole message.
    for size in [0u32, 1, 15] {
        let mut hdr = Header::request(500, Command::REGION_READ, 0);
        hdr.size = size;
        let reply = raw_call(&mut c, &hdr.encode(), &[]);
        assert_eq!((reply.header.id, reply.errno()), (500, Some(Errno::EINVAL)));
        probe(&mut c);
    }
    // Oversized: the body is drained, then refused.
    let big = vec![0u8; 2 << 20];
    let id = c.next_id();
    let reply = raw_call(
        &mut c,
        &encode_request(id, Command::REGION_WRITE, 0, &big),
        &[],
    );
    assert_eq!((reply.header.id, reply.errno()), (id, Some(Errno::E2BIG)));
    probe(&mut c);
    // Just above the limit, with fds attached: the fds are closed, the stream stays.
    let e = eventfd().unwrap();
    let body = vec![0u8; ServerConfig::default().max_msg_size() - HEADER_SIZE + 1];
    let reply = raw_call(
        &mut c,
        &encode_request(9, Command::DMA_MAP, 0, &body),
        &[e.as_fd()],
    );
    assert_eq!(reply.errno(), Some(Errno::E2BIG));
    probe(&mut c);
    drop(c);
    h.join();
}

#[test]
fn bad_version_data() {
    let (h, mut c) = Harness::start();
    let version = |major: u16, data: &[u8]| {
        let mut p = VersionHead { major, minor: 0 }.encode();
        p.extend_from_slice(data);
        p
    };
    for bad in [
        &b"{not json\0"[..],
        b"{\"capabilities\": [1]}\0",
        b"{\"capabilities\": {\"max_msg_fds\": \"16\"}}\0",
        b"{\"capabilities\": {\"max_data_xfer_size\": -1}}",
        b"{\"capabilities\": {\"write_multiple\": null}}\0",
        b"\"just a string\"\0",
        b"\xc3\x28\0",
        b"{\"capabilities\": {\"max_msg_fds\": 1e400}}\0",
        b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    ] {
        expect_err(&mut c, Command::VERSION, &version(0, bad), &[], Errno::EINVAL);
    }
    let deep = "[".repeat(100_000);
    expect_err(
        &mut c,
        Command::VERSION,
        &version(0, deep.as_bytes()),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::VERSION,
        &version(1, b"{}\0"),
        &[],
        Errno::ENOTSUP,
    );
    // Fds on VERSION are refused (and closed).
    let e = eventfd().unwrap();
    expect_err(
        &mut c,
        Command::VERSION,
        &version(0, b"{}\0"),
        &[e.as_fd()],
        Errno::EINVAL,
    );
    // A good VERSION afterwards still negotiates; unknown keys and trailing bytes are fine.
    let reply = raw_call(
        &mut c,
        &encode_request(1, Command::VERSION, 0, &version(0, b"{\"x\": 1}\0junk")),
        &[],
    );
    assert!(reply.errno().is_none());
    c.negotiate().unwrap();
    probe(&mut c);
    drop(c);
    h.join();
}

#[test]
fn set_irqs_errors() {
    let (h, mut c) = Harness::start();
    let e: Vec<_> = (0..MAX_FDS + 4).map(|_| eventfd().unwrap()).collect();
    let fds: Vec<_> = e.iter().map(|f| f.as_fd()).collect();
    let eventfd_trigger = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    let set = |flags, index, start, count, data: &[u8]| {
        let mut p = IrqSetPayload {
            argsz: (20 + data.len()) as u32,
            flags,
            index,
            start,
            count,
        }
        .encode();
        p.extend_from_slice(data);
        p
    };
    // Wrong fd counts.
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(eventfd_trigger, MSIX, 0, 2, &[]),
        &fds[..1],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(eventfd_trigger, MSIX, 0, 2, &[]),
        &fds[..3],
        Errno::EINVAL,
    );
    // More than max_msg_fds: the kernel cuts them off, the server refuses the message.
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(eventfd_trigger, MSIX, 0, 4, &[]),
        &fds,
        Errno::EINVAL,
    );
    // Fds where the data type takes none.
    let none_trigger = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(none_trigger, MSIX, 0, 1, &[]),
        &fds[..1],
        Errno::EINVAL,
    );
    // Ranges and indexes.
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(none_trigger, MSIX, 3, 2, &[]),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(none_trigger, MSIX, u32::MAX, 2, &[]),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(none_trigger, 5, 0, 1, &[]),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(eventfd_trigger, 4, 0, 1, &[]),
        &fds[..1],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(none_trigger, MSIX, 1, 0, &[]),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(eventfd_trigger, MSIX, 0, 0, &[]),
        &[],
        Errno::EINVAL,
    );
    // Flags: two data types, two actions, none, unknown bits.
    for flags in [
        VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_TRIGGER,
        VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_MASK | VFIO_IRQ_SET_ACTION_TRIGGER,
        VFIO_IRQ_SET_DATA_NONE,
        VFIO_IRQ_SET_ACTION_TRIGGER,
        none_trigger | 0x40,
    ] {
        expect_err(
            &mut c,
            Command::DEVICE_SET_IRQS,
            &set(flags, MSIX, 0, 1, &[]),
            &[],
            Errno::EINVAL,
        );
    }
    // Bool data shorter than count.
    let bool_trigger = VFIO_IRQ_SET_DATA_BOOL | VFIO_IRQ_SET_ACTION_TRIGGER;
    expect_err(
        &mut c,
        Command::DEVICE_SET_IRQS,
        &set(bool_trigger, MSIX, 0, 4, &[1, 1]),
        &[],
        Errno::EINVAL,
    );
    // argsz below the struct.
    let mut small = set(none_trigger, MSIX, 0, 1, &[]);
    small[..4].copy_from_slice(&8u32.to_ne_bytes());
    expect_err(&mut c, Command::DEVICE_SET_IRQS, &small, &[], Errno::EINVAL);
    // None of these reached the backend.
    assert!(h.dev.state().set_irqs_calls.is_empty());
    drop(c);
    h.join();
}

#[test]
fn dma_errors() {
    let config = ServerConfig {
        max_dma_maps: 3,
        ..Default::default()
    };
    let (h, mut c) = Harness::start_raw(config);
    c.negotiate().unwrap();
    let mem = memfd("guest", 0x10000).unwrap();
    let map = |iova, size, flags| {
        DmaMapPayload {
            argsz: 32,
            flags,
            offset: 0,
            iova,
            size,
        }
        .encode()
    };
    let unmap = |iova, size, flags| {
        DmaUnmapPayload {
            argsz: 24,
            flags,
            iova,
            size,
        }
        .encode()
    };
    let m = mem.as_fd();
    c.dma_map(
        DmaMap {
            iova: 0x10000,
            size: 0x2000,
            offset: 0,
            flags: 3,
        },
        Some(m),
    )
    .unwrap();
    expect_err(
        &mut c,
        Command::DMA_MAP,
        &map(0x11000, 0x1000, 3),
        &[m],
        Errno::EEXIST,
    );
    expect_err(
        &mut c,
        Command::DMA_MAP,
        &map(0xf000, 0x1001, 3),
        &[m],
        Errno::EEXIST,
    );
    expect_err(&mut c, Command::DMA_MAP, &map(0, 0, 3), &[m], Errno::EINVAL);
    expect_err(
        &mut c,
        Command::DMA_MAP,
        &map(u64::MAX, 2, 3),
        &[m],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DMA_MAP,
        &map(0, 0x1000, 4),
        &[m],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DMA_MAP,
        &map(0, 0x1000, 3),
        &[m, m],
        Errno::EINVAL,
    );
    c.dma_map(
        DmaMap {
            iova: u64::MAX - 0xfff,
            size: 0x1000,
            offset: 0,
            flags: 1,
        },
        Some(m),
    )
    .unwrap();
    c.dma_map(
        DmaMap {
            iova: 0,
            size: 0x1000,
            offset: 0,
            flags: 1,
        },
        None,
    )
    .unwrap();
    expect_err(
        &mut c,
        Command::DMA_MAP,
        &map(0x40000, 0x1000, 3),
        &[m],
        Errno::ENOSPC,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x80000, 0x1000, 0),
        &[],
        Errno::ENOENT,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x10000, 0x1000, 0),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x11000, 0x2000, 0),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x10000, 0, 0),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x10000, 0x2000, DMA_UNMAP_FLAG_ALL),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x10000, 0x2000, 1),
        &[],
        Errno::ENOTSUP,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x10000, 0x2000, 8),
        &[],
        Errno::EINVAL,
    );
    expect_err(
        &mut c,
        Command::DMA_UNMAP,
        &unmap(0x10000, 0x2000, 0),
        &[m],
        Errno::EINVAL,
    );
    assert_eq!(h.dev.state().maps.len(), 3);
    // The exact unmap works and frees a slot.
    let reply = c
        .request(Command::DMA_UNMAP, 0, &unmap(0x10000, 0x2000, 0), &[])
        .unwrap();
    assert_eq!(
        reply.body,
        unmap(0x10000, 0x2000, 0),
        "the reply echoes the request"
    );
    c.dma_map(
        DmaMap {
            iova: 0x40000,
            size: 0x1000,
            offset: 0,
            flags: 3,
        },
        Some(m),
    )
    .unwrap();
    drop(c);
    h.join();
}

#[test]
fn reset_of_a_device_without_reset() {
    let mut info = TestDev::info();
    info.resettable = false;
    let (h, mut c) = Harness::start_raw_with(info, ServerConfig::default());
    c.negotiate().unwrap();
    assert_eq!(c.device_info().unwrap().flags, VFIO_DEVICE_FLAGS_PCI);
    expect_err(&mut c, Command::DEVICE_RESET, &[], &[], Errno::ENOTSUP);
    assert_eq!(h.dev.state().resets, 0);
    drop(c);
    h.join();
}

#[test]
fn no_reply_failures_stay_silent() {
    let (h, mut c) = Harness::start();
    // A failing posted write, an unknown posted command, a posted malformed header: no replies.
    let mut write = RegionAccessPayload {
        offset: 4095,
        region: REGS,
        count: 4,
    }
    .encode();
    write.extend_from_slice(&[1, 2, 3, 4]);
    c.post(Command::REGION_WRITE, &write, &[]).unwrap();
    c.post(Command(99), &[1, 2, 3], &[]).unwrap();
    let mut hdr = Header::request(3, Command::REGION_READ, FLAG_NO_REPLY);
    hdr.size = 3;
    c.send_raw(&hdr.encode(), &[]).unwrap();
    // Replies and invalid message types from the client.
    let mut reply = Header::request(4, Command::DMA_READ, 0);
    reply.flags = TYPE_REPLY;
    reply.size = 16;
    c.send_raw(&reply.encode(), &[]).unwrap();
    let mut odd = Header::request(5, Command::REGION_READ, 0);
    odd.flags = 7;
    odd.size = 16;
    let r = raw_call(&mut c, &odd.encode(), &[]);
    assert_eq!((r.header.id, r.errno()), (5, Some(Errno::EINVAL)));
    // The next reply is the probe's own.
    let id = c.next_id();
    let read = RegionAccessPayload {
        offset: 0,
        region: REGS,
        count: 4,
    }
    .encode();
    let r = raw_call(
        &mut c,
        &encode_request(id, Command::REGION_READ, 0, &read),
        &[],
    );
    assert_eq!(r.header.id, id);
    assert!(r.errno().is_none());
    probe(&mut c);
    drop(c);
    h.join();
}

#[test]
fn client_reports_remote_errors() {
    let (h, mut c) = Harness::start();
    let err = c.region_write(RO, 0, &[1]).unwrap_err();
    assert_eq!(err.errno(), Some(Errno::EINVAL));
    assert!(err.to_string().contains("server error"));
    let mut big = vec![0u8; (1 << 20) + 1];
    assert_eq!(
        c.region_read(REGS, 0, &mut big).unwrap_err().errno(),
        Some(Errno::E2BIG)
    );
    probe(&mut c);
    drop(c);
    h.join();
}
