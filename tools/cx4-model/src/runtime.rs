//! The model's runtime: the threads that drive the device besides the vfio-user transport —
//! the wire's receive loop and carrier poller ([`spawn_wire`]) and the CQ moderation timer
//! ([`spawn_cq_timer`]). Each takes the device lock for the work it does, as the transport does
//! for a region access; what the device does then is in [`crate::device::Device`]'s parts.

use std::sync::{
    Arc,
    Mutex,
    MutexGuard, //
};

use crate::{
    device::Device,
    wake::{
        poll_two,
        Wake, //
    },
    wire::Port, //
};

fn lock(d: &Mutex<Device>) -> MutexGuard<'_, Device> {
    // A panic while holding the lock would be a model bug; keep the state as is.
    d.lock().unwrap_or_else(|e| e.into_inner())
}

/// Most frames the receive loop takes from the TAP under one hold of the device lock (a
/// superframe counts as its segments, and is never split across holds).
const RX_BATCH: usize = 64;

/// Starts the wire's two threads for `tap`: the receive loop (the frames waiting on the segment
/// go through [`Device::receive_offloaded`] in batches under the device lock; while pause or
/// RoCE timer state is pending it also wakes at [`Device::wire_deadline`] for
/// [`Device::wire_tick`]) and the carrier poller (every 100 ms; a change moves the port's
/// operational state, [`Device::set_carrier`]).
pub fn spawn_wire(tap: Arc<crate::wire::Tap>, dev: Arc<Mutex<Device>>) -> std::io::Result<()> {
    let (rx_tap, rx_dev) = (tap.clone(), dev.clone());
    let wake = Arc::new(Wake::new()?);
    lock(&dev).set_timer_wake(wake.clone());
    std::thread::Builder::new()
        .name("wire-rx".into())
        .spawn(move || {
            let mut buf = vec![0u8; crate::wire::RECV_BUF];
            loop {
                // While a pause runs, frames are held, XOFF is asserted or an `rx-starve`
                // fault runs, wake for the pause timer (`port.rs`) even if the segment is quiet.
                // So does a RoCE requester's ACK or RNR timer, and a received RoCE frame the
                // `roce-wire` fault delays or holds back.
                let deadline = { lock(&rx_dev).wire_deadline() };
                match rx_tap.wait_readable(deadline, &wake) {
                    Ok(true) => {}
                    Ok(false) => {
                        let mut d = lock(&rx_dev);
                        d.wire_tick();
                        continue;
                    }
                    Err(e) => {
                        log::debug!("{}: poll: {e}", rx_tap.name());
                    }
                }
                // Drain what is waiting under one lock: a busy segment costs one poll and
                // one lock per batch, not per frame. The batch is bounded so that doorbells
                // and commands, which take the same lock, wait for at most that many frames.
                let mut d = lock(&rx_dev);
                let mut budget = RX_BATCH;
                // LRO merges stay open over the burst and close when it ends.
                d.rx_burst_begin();
                let mut down = false;
                while budget > 0 {
                    match rx_tap.recv(&mut buf) {
                        Ok(r) if r.frame.is_empty() && !r.truncated => budget -= 1,
                        Ok(r) => {
                            let n = d.receive_offloaded(&mut buf[r.frame], r.offload, r.truncated);
                            budget = budget.saturating_sub(n.max(1));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        Err(e) => {
                            // A TAP that is down reads EIO until it comes up again.
                            log::debug!("{}: receive: {e}", rx_tap.name());
                            down = true;
                            break;
                        }
                    }
                }
                d.rx_burst_end();
                drop(d);
                if down {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            }
        })?;
    std::thread::Builder::new()
        .name("wire-carrier".into())
        .spawn(move || {
            let mut last = tap.carrier();
            loop {
                std::thread::sleep(std::time::Duration::from_millis(100));
                let now = tap.carrier();
                if now != last {
                    last = now;
                    lock(&dev).set_carrier(now);
                }
            }
        })?;
    Ok(())
}

/// Starts the timer thread of a card with no wire: the RoCE timers ([`Device::wire_tick`])
/// still run for what loops back inside it (a DCT that drops a request, a page fault that
/// makes a requester resend).
pub fn spawn_timers(dev: Arc<Mutex<Device>>) -> std::io::Result<()> {
    let wake = Arc::new(Wake::new()?);
    lock(&dev).set_timer_wake(wake.clone());
    std::thread::Builder::new()
        .name("roce-timers".into())
        .spawn(move || loop {
            let deadline = { lock(&dev).wire_deadline() };
            match poll_two(-1, &wake, deadline) {
                Ok([_, woken]) => {
                    if woken {
                        wake.clear();
                    }
                    lock(&dev).wire_tick();
                }
                Err(e) => {
                    log::warn!("timer thread: poll: {e}");
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
        })?;
    Ok(())
}

/// Starts the CQ moderation timer (`fw/moderation.rs`): a thread that sleeps, without the
/// device lock, until the earliest completion event a CQ holds back, then raises the events
/// due. Whoever holds an event back for an earlier time than the thread sleeps to wakes it.
/// Periods are microseconds, so the thread asks for a 1 µs timer slack (50 µs by default).
pub fn spawn_cq_timer(dev: Arc<Mutex<Device>>) -> std::io::Result<()> {
    let wake = Arc::new(std::sync::Condvar::new());
    lock(&dev).set_cq_timer_wake(wake.clone());
    std::thread::Builder::new()
        .name("cq-timer".into())
        .spawn(move || {
            // SAFETY: PR_SET_TIMERSLACK takes a number and changes only this thread's slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
            let mut d = lock(&dev);
            loop {
                let now = crate::clock::now_ns();
                d.cq_tick(now);
                d = match d.cq_timer_next() {
                    None => wake.wait(d).unwrap_or_else(|e| e.into_inner()),
                    Some(at) => {
                        let wait = std::time::Duration::from_nanos(at.saturating_sub(now));
                        wake.wait_timeout(d, wait)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                };
            }
        })?;
    Ok(())
}
