// SPDX-License-Identifier: GPL-2.0
//! The command queue (PRM "command interface"; core/cmd.c).
//!
//! One 4 KiB coherent page holds `2^log_size` queue entries ([`CmdLayout`]) of `2^log_stride`
//! bytes; messages longer than the 16 inline bytes continue in mailbox chains ([`crate::mbox`]).
//! All slots can be in flight at once: regular commands take any free slot but the last, which
//! is reserved for `MANAGE_PAGES` (so that page requests can be served while every other slot
//! waits for pages). A command is posted by writing its entry with the ownership bit set to
//! hardware and ringing the doorbell bit of its slot.
//!
//! Completion is noticed by polling the ownership bit (polling mode, from the start) or, once
//! the command EQ exists, by a command-completion EQE whose vector names the slot (event mode),
//! handled in the EQ's hard-interrupt handler, which wakes the waiter directly (so the queue
//! state is under an [`IrqSafeLock`]); in event mode the waiter still checks the ownership bit
//! periodically as a fallback. Each slot keeps its mailbox chains from one command to the next.
//!
//! The statistics count, like upstream's (`ts1`/`ts2` in cmd.c), from handing the entry to the
//! device (just before the doorbell) to the moment the completion is seen: by the EQ handler in
//! event mode, by the poll loop in polling mode. A command
//! that does not complete within the timeout fails with `ETIMEDOUT`; its slot stays reserved
//! (the device may still write its mailboxes) until a later completion or check finds it
//! returned to software. Once the device is in error ([`Cmdq::set_error`]) every waiting and
//! new command fails at once with `ENXIO`.
//!
//! A timeout fences the queue: until the device shows it is alive again (a command completes,
//! or it returns a timed-out entry), new commands get [`FENCED_TIMEOUT`] instead of the full
//! timeout. One that times out as well means the command interface is unresponsive: the queue
//! goes into the error state, so a teardown after a firmware hang costs one timeout plus one
//! fenced timeout, not a full timeout per command.

use core::sync::atomic::{
    AtomicBool,
    Ordering, //
};

use cx4_hw::{
    bits::Layout,
    cmd::{
        delivery::{
            self,
            delivery_status_name, //
        },
        mailbox_blocks,
        CmdLayout,
        MboxIn,
        MboxOut,
        INLINE_LEN,
        OWNER_HW,
        OWNER_SW,
        PCI_CMD_XPORT, //
    },
    command::Command,
    opcode::{
        self,
        opcode_name, //
    },
    status::{
        self,
        status_name, //
    },
};
use kapi::{
    barrier::dma_rmb,
    new_irq_safe_lock,
    ratelimit::Ratelimit,
    BoundDevice,
    IrqSafeGuard,
    IrqSafeLock, //
};
use kernel::{
    new_condvar,
    prelude::*,
    processor::cpu_relax,
    sync::{
        Arc,
        CondVar,
        CondVarTimeoutResult, //
    },
    time::{
        delay::fsleep,
        msecs_to_jiffies,
        Delta,
        Instant,
        Jiffies,
        Monotonic, //
    },
};
use zerocopy::FromBytes;

use crate::{
    dmabuf::DmaBuf,
    iseg::Bar0,
    mbox::{
        Chain,
        MboxPool, //
    },
    msg::Msg,
    stats::{
        CmdStats,
        Completion, //
    },
};

/// Size of the command queue page.
const QUEUE_BYTES: usize = 4096;
/// The most slots a doorbell (and the completion vector) can name.
const MAX_SLOTS: usize = 32;
/// How often a waiter in event mode checks the ownership bit itself.
const EVENT_FALLBACK_MS: u32 = 1000;
/// The timeout of commands posted while an earlier one timed out and the device has not shown
/// signs of life since.
const FENCED_TIMEOUT: Delta = Delta::from_millis(1000);

/// The mailbox chains of one slot, kept from one command to the next.
struct SlotBufs {
    inp: Chain,
    out: Chain,
}

impl SlotBufs {
    const fn new() -> Self {
        Self {
            inp: Chain::new(),
            out: Chain::new(),
        }
    }
}

/// The queue state, shared with the command EQ's interrupt handler: nothing done under its lock
/// may sleep or allocate.
struct State {
    /// Free regular slots (bit per slot).
    free: u32,
    /// The `MANAGE_PAGES` slot is in use.
    pages_busy: bool,
    /// Slots whose completion EQE arrived and whose waiter has not seen it yet.
    done: u32,
    /// When the completion EQE of each slot in `done` was handled.
    seen: [Option<Instant<Monotonic>>; MAX_SLOTS],
    /// Slots posted in event mode.
    event_slots: u32,
    /// Slots of timed-out commands: the device may still own the entry and write its
    /// mailboxes, so the slot (and its chains) stays reserved until the device returns it.
    zombies: u32,
    /// Completions are signalled by EQEs.
    events: bool,
    /// The last token handed out.
    token: u8,
    /// The mailbox chains of each slot not in use (a command takes its slot's while it runs).
    bufs: [Option<SlotBufs>; MAX_SLOTS],
}

/// Maps a command status to the errno the upstream driver uses (cmd.c `cmd_status_to_err`).
pub(crate) fn status_to_errno(status: u8) -> Error {
    match status {
        status::INT_ERR | status::BAD_SYS_STATE | status::BAD_INP_LEN | status::BAD_OUTP_LEN => EIO,
        status::BAD_OP
        | status::BAD_PARAM
        | status::BAD_RES
        | status::BAD_RES_STATE
        | status::IX
        | status::BAD_QP_STATE
        | status::BAD_PKT
        | status::BAD_SIZE_OUTS_CQES => EINVAL,
        status::RES_BUSY => EBUSY,
        status::LIM => ENOMEM,
        status::NO_RES | status::NOT_READY => EAGAIN,
        _ => EIO,
    }
}

/// A zeroed input message for command `C`, with its opcode set and `tail` extra bytes.
pub(crate) fn input<C: Command>(tail: usize) -> Result<Msg<C::In>> {
    let mut m = Msg::<C::In>::new(tail)?;
    let (hdr, _) = MboxIn::mut_from_prefix(m.bytes_mut()).map_err(|_| EINVAL)?;
    hdr.set_opcode(C::OPCODE.into());
    Ok(m)
}

/// The command queue of one function.
#[pin_data]
pub(crate) struct Cmdq {
    dev: BoundDevice,
    bar: Arc<Bar0>,
    queue: DmaBuf,
    log_size: u32,
    log_stride: u32,
    timeout: Delta,
    error: AtomicBool,
    /// A command timed out and nothing completed since: new commands get [`FENCED_TIMEOUT`].
    fenced: AtomicBool,
    #[pin]
    mbox: MboxPool,
    #[pin]
    state: IrqSafeLock<State>,
    #[pin]
    wake: CondVar,
    #[pin]
    stats: CmdStats,
    /// Holds back failure reports past the printk burst: a broken or lying card can fail
    /// every command (mlx5's `mlx5_core_err_rl`). Every failure still counts in `stats`.
    #[pin]
    errlog: Ratelimit,
}

impl Cmdq {
    /// Allocates the queue page for a queue of `2^log_size` entries of `2^log_stride` bytes.
    /// The caller programs its address ([`Cmdq::dma`]) into the initialization segment.
    pub(crate) fn new(
        dev: BoundDevice,
        bar: Arc<Bar0>,
        log_size: u8,
        log_stride: u8,
        timeout: Delta,
    ) -> Result<impl PinInit<Self, Error>> {
        let (log_size, log_stride) = (u32::from(log_size), u32::from(log_stride));
        let slots = 1usize << log_size;
        if !(2..=MAX_SLOTS).contains(&slots)
            || (slots << log_stride) > QUEUE_BYTES
            || (1usize << log_stride) < CmdLayout::SIZE
        {
            dev_err!(
                dev.dev(),
                "unsupported command queue geometry: 2^{} entries of 2^{} bytes\n",
                log_size,
                log_stride
            );
            return Err(EINVAL);
        }
        let queue = DmaBuf::alloc(dev.get(), QUEUE_BYTES)?;
        // Every slot but the last (reserved for MANAGE_PAGES) is free.
        let free = (1u32 << (slots - 1)) - 1;
        let state = State {
            free,
            pages_busy: false,
            done: 0,
            seen: [None; MAX_SLOTS],
            event_slots: 0,
            zombies: 0,
            events: false,
            token: 0,
            bufs: core::array::from_fn(|_| Some(SlotBufs::new())),
        };
        Ok(try_pin_init!(Self {
            dev,
            bar,
            queue,
            log_size,
            log_stride,
            timeout,
            error: AtomicBool::new(false),
            fenced: AtomicBool::new(false),
            mbox <- MboxPool::new(),
            state <- new_irq_safe_lock!(state, "cx4::cmdq"),
            wake <- new_condvar!("cx4::cmdq"),
            stats <- CmdStats::new()?,
            errlog <- Ratelimit::new(c"cx4 command"),
        }))
    }

    /// Bus address of the queue page.
    pub(crate) fn dma(&self) -> u64 {
        self.queue.dma()
    }

    /// Number of slots.
    pub(crate) fn slots(&self) -> u32 {
        1 << self.log_size
    }

    /// The per-opcode statistics.
    pub(crate) fn stats(&self) -> &CmdStats {
        &self.stats
    }

    fn pages_slot(&self) -> u32 {
        self.slots() - 1
    }

    fn entry(&self, slot: u32) -> usize {
        (slot as usize) << self.log_stride
    }

    fn owner(&self, slot: u32) -> u8 {
        let off = self.entry(slot) + CmdLayout::SIZE - 1;
        // An unreadable entry cannot happen (the offset is inside the page); treat it as still
        // owned by the device.
        self.queue.read_u8(off).map_or(OWNER_HW, |b| b & 1)
    }

    /// Whether the queue fails commands because the device is in error.
    pub(crate) fn in_error(&self) -> bool {
        self.error.load(Ordering::Acquire)
    }

    /// Marks the device as in error: waiting and new commands fail with `ENXIO` from now on.
    pub(crate) fn set_error(&self) {
        self.error.store(true, Ordering::Release);
        let _g = self.state.lock();
        self.wake.notify_all();
    }

    /// Switches to event mode: commands posted from now on complete by command EQEs.
    pub(crate) fn use_events(&self) {
        self.state.lock().events = true;
    }

    /// Switches back to polling mode (before the command EQ goes away).
    pub(crate) fn use_polling(&self) {
        self.state.lock().events = false;
    }

    /// Whether commands complete by events.
    pub(crate) fn events(&self) -> bool {
        self.state.lock().events
    }

    /// A command-completion EQE: the slots in `vector` are done. Called from the command EQ's
    /// hard-interrupt handler: it notes the time, marks the slots and wakes their waiters.
    pub(crate) fn complete(&self, vector: u32) {
        let now = Instant::<Monotonic>::now();
        let mut g = self.state.lock();
        let ours = vector & g.event_slots;
        g.done |= ours;
        for slot in 0..MAX_SLOTS {
            if ours & (1 << slot) != 0 {
                g.seen[slot] = Some(now);
            }
        }
        if vector & g.zombies != 0 {
            self.reap_zombies(&mut g);
        }
        drop(g);
        self.wake.notify_all();
    }

    /// Frees the slots of timed-out commands the device has since returned (their chains stay
    /// with the slot).
    fn reap_zombies(&self, g: &mut IrqSafeGuard<'_, State>) -> usize {
        let mut n = 0;
        for slot in 0..self.slots() {
            if g.zombies & (1 << slot) == 0 || self.owner(slot) != OWNER_SW {
                continue;
            }
            g.zombies &= !(1 << slot);
            self.free_slot_locked(g, slot);
            n += 1;
        }
        if n > 0 {
            // The device returned timed-out entries: it is alive.
            self.fenced.store(false, Ordering::Relaxed);
        }
        n
    }

    fn free_slot_locked(&self, g: &mut IrqSafeGuard<'_, State>, slot: u32) {
        if slot == self.pages_slot() {
            g.pages_busy = false;
        } else {
            g.free |= 1 << slot;
        }
        g.done &= !(1 << slot);
        g.event_slots &= !(1 << slot);
    }

    fn wait_jiffies(ms: i64) -> Jiffies {
        let ms = ms.clamp(1, i64::from(EVENT_FALLBACK_MS)) as u32;
        msecs_to_jiffies(ms)
    }

    /// Sleeps on the condition variable for at most `ms`; a pending signal must not turn the
    /// wait into a busy loop, so it then sleeps without the lock instead.
    ///
    /// Returns the guard and whether the wait timed out (nobody notified).
    fn sleep<'a>(
        &'a self,
        mut g: IrqSafeGuard<'a, State>,
        ms: i64,
    ) -> (IrqSafeGuard<'a, State>, bool) {
        let j = Self::wait_jiffies(ms);
        match self.wake.wait_interruptible_timeout(&mut g, j) {
            CondVarTimeoutResult::Signal { .. } => {
                drop(g);
                fsleep(Delta::from_millis(1));
                (self.state.lock(), false)
            }
            CondVarTimeoutResult::Timeout => (g, true),
            CondVarTimeoutResult::Woken { .. } => (g, false),
        }
    }

    /// Takes a free slot (the `MANAGE_PAGES` one for that opcode), its mailbox chains and a
    /// token.
    fn acquire(
        &self,
        op: u16,
        start: Instant<Monotonic>,
        timeout: Delta,
    ) -> Result<(u32, u8, SlotBufs)> {
        let mut g = self.state.lock();
        loop {
            if self.in_error() {
                return Err(ENXIO);
            }
            let slot = if op == opcode::MANAGE_PAGES {
                (!g.pages_busy).then(|| {
                    g.pages_busy = true;
                    self.pages_slot()
                })
            } else {
                (g.free != 0).then(|| {
                    let slot = g.free.trailing_zeros();
                    g.free &= !(1 << slot);
                    slot
                })
            };
            if let Some(slot) = slot {
                g.token = g.token.wrapping_add(1).max(1);
                let token = g.token;
                // A free slot always has its chains: they go back with the slot.
                let bufs = g.bufs[slot as usize].take().unwrap_or(SlotBufs::new());
                return Ok((slot, token, bufs));
            }
            if self.reap_zombies(&mut g) > 0 {
                continue;
            }
            let left = (timeout - start.elapsed()).as_millis();
            if left <= 0 {
                dev_err!(
                    self.dev.dev(),
                    "{}({:#x}): no free command slot within {} ms\n",
                    opcode_name(op),
                    op,
                    timeout.as_millis()
                );
                return Err(ETIMEDOUT);
            }
            g = self.sleep(g, left).0;
        }
    }

    /// Gives back a slot and its chains.
    fn release(&self, slot: u32, bufs: SlotBufs) {
        let mut g = self.state.lock();
        g.bufs[slot as usize] = Some(bufs);
        self.free_slot_locked(&mut g, slot);
        drop(g);
        self.wake.notify_all();
    }

    /// Keeps a slot whose command failed after posting: the device may still own the entry.
    fn fence_slot(&self, slot: u32, bufs: SlotBufs) {
        let mut g = self.state.lock();
        g.bufs[slot as usize] = Some(bufs);
        g.zombies |= 1 << slot;
        g.event_slots &= !(1 << slot);
        g.done &= !(1 << slot);
    }

    /// Waits for the command in `slot` to return to software; returns how and when its
    /// completion was seen.
    fn wait(
        &self,
        slot: u32,
        events: bool,
        start: Instant<Monotonic>,
        timeout: Delta,
    ) -> Result<(Completion, Instant<Monotonic>)> {
        let bit = 1u32 << slot;
        if !events {
            loop {
                if self.owner(slot) == OWNER_SW {
                    return Ok((Completion::Polled, Instant::now()));
                }
                if self.in_error() {
                    return Err(ENXIO);
                }
                if start.elapsed() > timeout {
                    return Err(ETIMEDOUT);
                }
                // Commands usually complete within tens of microseconds: spin (like upstream's
                // poll loop) for the first millisecond, then back off to sleeping polls.
                if start.elapsed() < Delta::from_millis(1) {
                    cpu_relax();
                } else {
                    fsleep(Delta::from_micros(50));
                }
            }
        }
        let mut g = self.state.lock();
        loop {
            if g.done & bit != 0 {
                g.done &= !bit;
                if self.owner(slot) == OWNER_SW {
                    let seen = g.seen[slot as usize].take().unwrap_or_else(Instant::now);
                    return Ok((Completion::Event, seen));
                }
                // A stale event (for an earlier command of this slot): keep waiting.
            }
            if self.in_error() {
                return Err(ENXIO);
            }
            let left = (timeout - start.elapsed()).as_millis();
            if left <= 0 {
                return if self.owner(slot) == OWNER_SW {
                    Ok((Completion::Fallback, Instant::now()))
                } else {
                    Err(ETIMEDOUT)
                };
            }
            let (guard, timed_out) = self.sleep(g, left);
            g = guard;
            if timed_out && g.done & bit == 0 && self.owner(slot) == OWNER_SW {
                // Nothing woke us for this slot within the fallback period, yet the device
                // has returned the entry: the EQE was lost or is late.
                return Ok((Completion::Fallback, Instant::now()));
            }
        }
    }

    /// Writes the command into `slot` and its chains, hands the entry to the device and rings
    /// the doorbell. Returns whether it completes by event, and when it was handed over.
    fn post(
        &self,
        slot: u32,
        token: u8,
        input: &[u8],
        out_len: usize,
        bufs: &SlotBufs,
    ) -> Result<(bool, Instant<Monotonic>)> {
        let inline = input.len().min(INLINE_LEN);
        let (n_in, n_out) = (mailbox_blocks(input.len()), mailbox_blocks(out_len));
        bufs.inp.write(n_in, &input[inline..], token)?;
        bufs.out.prepare(n_out, token)?;
        let mut lay = CmdLayout::new();
        lay.set_xport_type(PCI_CMD_XPORT.into());
        lay.set_inlen(input.len() as u32);
        lay.set_in_ptr(bufs.inp.head(n_in));
        lay.inline_in_mut()[..inline].copy_from_slice(&input[..inline]);
        lay.set_out_ptr(bufs.out.head(n_out));
        lay.set_outlen(out_len as u32);
        lay.set_token(token.into());
        lay.set_status_own(0);
        let at = self.entry(slot);
        // Everything but status_own first; the ownership byte last hands the entry over.
        self.queue.write(at, &lay.0[..CmdLayout::SIZE - 1])?;
        let events = {
            let mut g = self.state.lock();
            if g.events {
                g.event_slots |= 1 << slot;
            }
            g.done &= !(1 << slot);
            g.events
        };
        let posted = Instant::<Monotonic>::now();
        self.queue.write_u8(at + CmdLayout::SIZE - 1, OWNER_HW)?;
        // No barrier between the entry (its ownership byte last) and the doorbell: the
        // doorbell is an ordered `writel`, after every earlier store to memory (cmd.c's `wmb`
        // comes before its `iowrite32be`, which orders the same way).
        self.bar.ring_cmd_doorbell(1 << slot)?;
        Ok((events, posted))
    }

    /// Executes one command: `input` is the whole input message, `out_len` the size of the
    /// whole output message. Returns the output after checking its status.
    pub(crate) fn exec_raw(&self, input: &[u8], out_len: usize) -> Result<KVec<u8>> {
        let (hdr, _) = MboxIn::ref_from_prefix(input).map_err(|_| EINVAL)?;
        let (op, op_mod) = (hdr.opcode() as u16, hdr.op_mod());
        let out_len = out_len.max(MboxOut::SIZE);
        if self.in_error() {
            self.stats.record_failure(op, false);
            return Err(ENXIO);
        }
        let start = Instant::<Monotonic>::now();
        let timeout = if self.fenced.load(Ordering::Relaxed) {
            FENCED_TIMEOUT.min(self.timeout)
        } else {
            self.timeout
        };
        let (slot, token, mut bufs) = match self.acquire(op, start, timeout) {
            Ok(s) => s,
            Err(e) => {
                self.stats.record_failure(op, e == ETIMEDOUT);
                return Err(e);
            }
        };
        let dev = self.dev.get();
        let fitted = self
            .mbox
            .fit(dev, &mut bufs.inp, mailbox_blocks(input.len()))
            .and_then(|()| self.mbox.fit(dev, &mut bufs.out, mailbox_blocks(out_len)));
        if let Err(e) = fitted {
            self.release(slot, bufs);
            self.stats.record_failure(op, false);
            return Err(e);
        }
        let waited = self
            .post(slot, token, input, out_len, &bufs)
            .and_then(|(events, posted)| {
                self.wait(slot, events, start, timeout)
                    .map(|(how, seen)| (how, seen - posted))
            });
        let (how, took) = match waited {
            Ok(w) => {
                // Orders the load that saw the ownership bit back at `OWNER_SW` (in `wait`,
                // polled or after the event) before the loads of the output and its
                // mailboxes in `collect` (cmd.c `cmd_work_handler`: `rmb` after
                // `poll_timeout`).
                dma_rmb();
                w
            }
            Err(e) => {
                if e == ETIMEDOUT {
                    dev_err!(
                        self.dev.dev(),
                        "{}({:#x}) op_mod {:#x} timed out after {} ms (slot {}, token {:#x})\n",
                        opcode_name(op),
                        op,
                        op_mod,
                        timeout.as_millis(),
                        slot,
                        token
                    );
                } else {
                    dev_err!(
                        self.dev.dev(),
                        "{}({:#x}) op_mod {:#x} failed: {:?}\n",
                        opcode_name(op),
                        op,
                        op_mod,
                        e
                    );
                }
                // The device may still own the entry: keep the slot and its mailboxes.
                self.fence_slot(slot, bufs);
                let unresponsive = e == ETIMEDOUT && self.fenced.swap(true, Ordering::AcqRel);
                if unresponsive {
                    dev_err!(
                        self.dev.dev(),
                        "command interface unresponsive: a second command timed out with \
                         nothing completed in between; failing commands from now on\n"
                    );
                    self.set_error();
                }
                self.stats.record_failure(op, e == ETIMEDOUT);
                return Err(e);
            }
        };
        let ns = took.as_nanos().max(0) as u64;
        let mbox = mailbox_blocks(input.len()) + mailbox_blocks(out_len) > 0;
        let result = self.collect(slot, &bufs.out, out_len);
        if self.fenced.load(Ordering::Relaxed) {
            self.fenced.store(false, Ordering::Relaxed);
        }
        self.release(slot, bufs);
        let output = match result {
            Ok(o) => o,
            Err(e) => {
                self.stats.record(op, ns, how, true, mbox);
                return Err(e);
            }
        };
        let (ohdr, _) = MboxOut::ref_from_prefix(&output).map_err(|_| EIO)?;
        let (st, synd) = (ohdr.status() as u8, ohdr.syndrome());
        self.stats.record(op, ns, how, st != status::OK, mbox);
        if st != status::OK {
            let err = status_to_errno(st);
            if !self.errlog.allow() {
                return Err(err);
            }
            dev_err!(
                self.dev.dev(),
                "{}({:#x}) op_mod {:#x} failed: status {}({:#x}) syndrome {:#x}, err {}\n",
                opcode_name(op),
                op,
                op_mod,
                status_name(st),
                st,
                synd,
                err.to_errno()
            );
            return Err(err);
        }
        Ok(output)
    }

    /// Reads the completed entry of `slot`: delivery status and output message.
    fn collect(&self, slot: u32, out: &Chain, out_len: usize) -> Result<KVec<u8>> {
        let mut lay = CmdLayout::new();
        self.queue.read(self.entry(slot), &mut lay.0)?;
        let ds = lay.delivery_status() as u8;
        if ds != delivery::OK {
            dev_err!(
                self.dev.dev(),
                "command slot {}: delivery status {}({:#x})\n",
                slot,
                delivery_status_name(ds),
                ds
            );
            return Err(EIO);
        }
        let mut output = KVec::from_elem(0u8, out_len, GFP_KERNEL)?;
        let inline = out_len.min(INLINE_LEN);
        output[..inline].copy_from_slice(&lay.inline_out()[..inline]);
        out.read(&mut output[inline..])?;
        Ok(output)
    }

    /// Executes command `C` with a prepared input (see [`input`]); the output has `out_tail`
    /// bytes after its fixed part.
    pub(crate) fn exec<C: Command>(
        &self,
        inp: &Msg<C::In>,
        out_tail: usize,
    ) -> Result<Msg<C::Out>> {
        let out = self.exec_raw(inp.bytes(), <C::Out as Layout>::SIZE + out_tail)?;
        Msg::from_vec(out)
    }
}

#[kunit_tests(cx4_cmd_status)]
#[allow(unsafe_code)] // The suite's registration, generated by the kernel's `kunit_tests` macro.
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_upstream_errnos() {
        // cmd.c `cmd_status_to_err`, by the PRM's numeric statuses (device.h), so that a wrong
        // constant in the schema fails here as well as a wrong arm.
        let table: [(u8, Error); 16] = [
            (0x01, EIO),
            (0x02, EINVAL),
            (0x03, EINVAL),
            (0x04, EIO),
            (0x05, EINVAL),
            (0x06, EBUSY),
            (0x07, EAGAIN),
            (0x08, ENOMEM),
            (0x09, EINVAL),
            (0x0a, EINVAL),
            (0x0f, EAGAIN),
            (0x10, EINVAL),
            (0x30, EINVAL),
            (0x40, EINVAL),
            (0x50, EIO),
            (0x51, EIO),
        ];
        for (status, errno) in table {
            assert_eq!(status_to_errno(status).to_errno(), errno.to_errno());
        }
        // Statuses the PRM does not define are I/O errors, as upstream's default.
        for status in [0x0b, 0x11, 0x41, 0x52, 0xff] {
            assert_eq!(status_to_errno(status).to_errno(), EIO.to_errno());
        }
    }
}
