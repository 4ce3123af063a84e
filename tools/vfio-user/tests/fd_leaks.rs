//! Descriptors that arrive with refused messages are closed, and those the server kept are
//! released when the client goes away. (Alone in its binary: it counts the process's fds.)

mod common;

use std::os::fd::AsFd;

use common::*;
use vfio_user_proto::wire::*;
use vfio_user_proto::*;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn refused_and_released_fds_are_closed() {
    let e: Vec<_> = (0..MAX_FDS + 8).map(|_| eventfd().unwrap()).collect();
    let fds: Vec<_> = e.iter().map(|f| f.as_fd()).collect();
    let mem = memfd("guest", 0x10000).unwrap();
    let before = open_fds();

    let (h, mut c) = Harness::start();
    let trigger = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    let set = |count| {
        IrqSetPayload {
            argsz: 20,
            flags: trigger,
            index: MSIX,
            start: 0,
            count,
        }
        .encode()
    };
    for _ in 0..10 {
        // Refused: wrong count, too many, unknown command, oversized, before-version-like junk.
        for (cmd, payload, n) in [
            (Command::DEVICE_SET_IRQS, set(2), 3),
            (Command::DEVICE_SET_IRQS, set(4), MAX_FDS + 8),
            (Command::DEVICE_FEATURE, vec![0; 8], 2),
            (Command::REGION_READ, vec![0; 16], 1),
            (Command::DMA_MAP, vec![0; 32], 2),
        ] {
            let id = c.next_id();
            let r = raw_call(&mut c, &encode_request(id, cmd, 0, &payload), &fds[..n]);
            assert!(r.errno().is_some());
        }
        let big = vec![0u8; ServerConfig::default().max_msg_size()];
        let r = raw_call(
            &mut c,
            &encode_request(1, Command::DMA_MAP, 0, &big),
            &fds[..4],
        );
        assert_eq!(r.errno(), Some(Errno::E2BIG));
        // Accepted, then given back.
        c.set_irqs(MSIX, trigger, 0, 4, &[], &fds[..4]).unwrap();
        c.set_irqs(MSIX, trigger, 0, 4, &[], &[]).unwrap();
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
        c.dma_unmap(0, 0x1000, 0).unwrap();
        probe(&mut c);
    }
    // Kept until the client disconnects.
    c.set_irqs(MSIX, trigger, 0, 4, &[], &fds[..4]).unwrap();
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
    assert!(open_fds() > before + 5);
    drop(c);
    h.join();
    assert_eq!(open_fds(), before);
}
