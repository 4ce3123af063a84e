//! A small userspace mlx5 driver for the model's host tests.
//!
//! [`Model`] runs the real `cx4-model` binary (socket and control socket in a temporary
//! directory, stderr captured to a log file the tests read back, killed on drop). [`Driver`]
//! connects to it with the project's vfio-user client, shares one memfd as guest RAM, programs
//! the command queue and drives commands, firmware pages, EQs and CQs as mlx5_core does: entries
//! and 1 KiB-aligned mailbox chains in guest memory, doorbells through BAR0, ownership polled in
//! guest memory, events read from EQ rings, interrupts counted on MSI-X eventfds.
//!
//! Every command input and every structure in guest memory is built and read through the
//! `cx4_hw` layouts; the only raw offsets here are the PCI command register and the layout of
//! the harness's own guest RAM.

#![allow(dead_code)] // each test binary uses its own part of the library

use std::{
    collections::{BTreeMap, BTreeSet},
    fs::File,
    io::{BufRead, BufReader, Read, Write},
    os::{
        fd::{AsFd, AsRawFd},
        unix::{fs::FileExt, net::UnixStream},
    },
    path::PathBuf,
    process::{Child, Stdio},
    sync::atomic::{AtomicU32, Ordering},
    thread::sleep,
    time::{Duration, Instant},
};

use cx4_hw::{
    bits::Layout,
    caps::{self, cap_type, SetHcaCapIn},
    cmd::{self, delivery, CmdLayout, CmdProtBlock, MboxIn, MboxOut},
    command::{self as cmds, Command},
    cq::{
        cqe::{self, Cqe64},
        CreateCqIn,
    },
    eq::{eqe::Eqe, eqe_owned_by_sw, CreateEqIn, EQE_OWNER_INIT_VAL},
    hca::{issi_supported, QueryIssiOut},
    iseg::{self, CmdqSize},
    opcode::opcode_name,
    pages::{manage_pages_op_mod, ManagePagesIn, ManagePagesOut, QueryPagesOut, PAGE_SIZE},
    status::{self, status_name},
    uar::{self, CqArmDoorbell, EqDoorbell},
};
use cx4_model::device::{IRQ_MSIX, REGION_BAR0, REGION_CONFIG};
use vfio_user_proto::{
    Client, DmaMap, DMA_MAP_FLAG_READ, DMA_MAP_FLAG_WRITE, VFIO_IRQ_SET_ACTION_TRIGGER,
    VFIO_IRQ_SET_DATA_EVENTFD,
};
use zerocopy::{FromBytes, IntoBytes};

/// Guest physical address of the shared RAM.
pub const RAM_BASE: u64 = 0x1000_0000;
/// Size of the shared RAM.
pub const RAM_SIZE: u64 = 64 << 20;
/// The top of RAM the page allocator never hands out: fuzzers point garbage there.
pub const SCRATCH_SIZE: u64 = 16 << 20;
/// First byte of the scratch area.
pub const SCRATCH_BASE: u64 = RAM_BASE + RAM_SIZE - SCRATCH_SIZE;
/// A guest address no DMA mapping covers.
pub const UNMAPPED: u64 = 0x7f00_0000_0000;
/// The command slot mlx5_core reserves for MANAGE_PAGES (the last of 32).
pub const PAGES_SLOT: u32 = 31;
/// Regular command slots.
pub const REGULAR_SLOTS: u32 = 31;
/// How long a command may take before [`DeliveryStatus::Timeout`].
pub const CMD_TIMEOUT: Duration = Duration::from_secs(2);

/// Offset of the PCI command register in config space.
const PCI_COMMAND: u64 = 0x04;
/// Memory space enable and bus master enable.
const PCI_COMMAND_MEM_MASTER: u16 = 0x0006;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A running `cx4-model` process.
pub struct Model {
    child: Child,
    dir: PathBuf,
    /// The vfio-user socket.
    pub socket: PathBuf,
    /// The control socket.
    pub control: PathBuf,
    /// The model's stderr.
    pub log_path: PathBuf,
}

impl Model {
    /// Starts the model with `--init-delay-ms 0` and `args` (later options win).
    pub fn start(args: &[&str]) -> Model {
        let dir = std::env::temp_dir().join(format!(
            "cx4-model-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let socket = dir.join("vfio-user.sock");
        let control = dir.join("control.sock");
        let log_path = dir.join("model.log");
        let log = File::create(&log_path).expect("log file");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_cx4-model"))
            .arg("--socket")
            .arg(&socket)
            .arg("--control")
            .arg(&control)
            .args(["--init-delay-ms", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn cx4-model");
        let mut m = Model {
            child,
            dir,
            socket,
            control,
            log_path,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(m.socket.exists() && m.control.exists()) {
            assert!(
                m.is_alive(),
                "cx4-model exited at start (args {args:?}); log:\n{}",
                m.log()
            );
            assert!(
                Instant::now() < deadline,
                "cx4-model did not create its sockets; log:\n{}",
                m.log()
            );
            sleep(Duration::from_millis(2));
        }
        m
    }

    /// Everything the model logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The last `n` lines of the log (for failure messages).
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Waits until the log contains `needle`.
    pub fn wait_log(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.log().contains(needle) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            sleep(Duration::from_millis(5));
        }
    }

    /// Sends one line to the control socket and returns the answer line.
    pub fn control(&self, line: &str) -> String {
        let fail = |what: &str, e: std::io::Error| -> ! {
            panic!(
                "control {line:?}: {what}: {e}; model log:\n{}",
                self.log_tail(20)
            )
        };
        let mut s = UnixStream::connect(&self.control).unwrap_or_else(|e| fail("connect", e));
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        writeln!(s, "{line}").unwrap_or_else(|e| fail("write", e));
        let mut r = BufReader::new(s);
        let mut answer = String::new();
        r.read_line(&mut answer)
            .unwrap_or_else(|e| fail("no answer", e));
        answer.trim_end().to_string()
    }

    /// Sends a control line that must be accepted.
    pub fn control_ok(&self, line: &str) {
        let a = self.control(line);
        assert_eq!(a, "ok", "control {line:?}: expected \"ok\", seen {a:?}");
    }

    /// Whether the process still runs.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the process to exit on its own (after the client left).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            if Instant::now() > deadline {
                return None;
            }
            sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why a command entry did not deliver an output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// The entry came back with this non-OK delivery status ([`cx4_hw::cmd::delivery`]).
    Error(u8),
    /// The device kept the entry (ownership still HW) past the timeout.
    Timeout,
}

impl std::fmt::Display for DeliveryStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeliveryStatus::Error(d) => {
                write!(f, "{} ({d:#x})", delivery::delivery_status_name(*d))
            }
            DeliveryStatus::Timeout => f.write_str("timeout (entry still owned by HW)"),
        }
    }
}

/// A command written to its slot, not yet collected.
#[derive(Clone, Debug)]
pub struct Posted {
    /// Slot.
    pub slot: u32,
    /// Guest address of the entry.
    pub entry: u64,
    /// Token of the entry and its mailboxes.
    pub token: u8,
    /// Input mailbox blocks, in chain order.
    pub in_blocks: Vec<u64>,
    /// Output mailbox blocks, in chain order.
    pub out_blocks: Vec<u64>,
    /// Output length.
    pub out_len: usize,
    /// Opcode (for messages).
    pub opcode: u16,
}

/// The status byte of a command output.
pub fn out_status(out: &[u8]) -> u8 {
    view::<MboxOut>(out).status() as u8
}

/// The syndrome of a command output.
pub fn out_syndrome(out: &[u8]) -> u32 {
    view::<MboxOut>(out).syndrome()
}

/// A copy of the layout at the start of `bytes` (zero-padded if `bytes` is shorter).
pub fn view<T: Layout>(bytes: &[u8]) -> T {
    let mut b = vec![0u8; T::SIZE];
    let n = bytes.len().min(T::SIZE);
    b[..n].copy_from_slice(&bytes[..n]);
    T::read_from_bytes(&b).expect("sized buffer")
}

/// The input of command `C`: its fixed layout, zeroed, with the opcode set, then `f` applied.
pub fn input<C: Command>(f: impl FnOnce(&mut C::In)) -> Vec<u8> {
    let mut v = vec![0u8; <C::In as Layout>::SIZE];
    MboxIn::mut_from_prefix(&mut v[..])
        .expect("every input starts with mbox_in")
        .0
        .set_opcode(C::OPCODE.into());
    f(C::In::mut_from_prefix(&mut v[..]).expect("sized buffer").0);
    v
}

/// The opcode of an input message.
/// An ACCESS_REG input: read (`write` false) or write register `reg` with `data`.
pub fn reg_input(reg: u16, write: bool, data: &[u8]) -> Vec<u8> {
    let mut v = input::<cmds::AccessReg>(|i| {
        i.set_op_mod(
            if write {
                cx4_hw::regs::ACCESS_REG_WRITE
            } else {
                cx4_hw::regs::ACCESS_REG_READ
            }
            .into(),
        );
        i.set_register_id(reg.into());
    });
    v.extend_from_slice(data);
    v
}

pub fn in_opcode(input: &[u8]) -> u16 {
    view::<MboxIn>(input).opcode() as u16
}

fn describe(out: &[u8]) -> String {
    let s = out_status(out);
    format!(
        "status {} ({s:#x}) syndrome {:#x}",
        status_name(s),
        out_syndrome(out)
    )
}

/// One event queue as the harness sees it.
#[derive(Clone, Debug)]
pub struct EqRing {
    /// EQ number.
    pub eqn: u8,
    /// log2 of its entries.
    pub log_size: u8,
    /// Ring pages (4 KiB each).
    pub pas: Vec<u64>,
    /// Consumer index.
    pub ci: u32,
    /// MSI-X vector.
    pub vector: u16,
    /// UAR page of its doorbells.
    pub uar: u32,
}

/// One completion queue as the harness sees it.
#[derive(Clone, Debug)]
pub struct CqRing {
    /// CQ number.
    pub cqn: u32,
    /// log2 of its entries.
    pub log_size: u8,
    /// Ring pages (4 KiB each, 64-byte CQEs).
    pub pas: Vec<u64>,
    /// Doorbell record.
    pub dbr: u64,
    /// Consumer index.
    pub ci: u32,
    /// EQ it reports to.
    pub eqn: u8,
    /// UAR page of its arm doorbell.
    pub uar: u32,
    /// Arm sequence number.
    pub sn: u8,
}

/// The userspace driver.
pub struct Driver {
    /// vfio-user connection (dropped before the model).
    pub client: Client,
    /// The memfd behind guest RAM.
    pub ram: File,
    next_page: u64,
    free_pages: Vec<u64>,
    /// Pages currently lent to the firmware.
    pub fw_pages: BTreeSet<u64>,
    /// Guest address of the command queue page.
    pub cmdq: u64,
    token: u8,
    /// Command timeout.
    pub timeout: Duration,
    /// MSI-X eventfds (after [`Driver::enable_irqs`]).
    pub irqs: Vec<File>,
    /// The driver's UAR page (after [`Driver::alloc_uar`]).
    pub uar: Option<u32>,
    /// EQs created through [`Driver::create_eq`].
    pub eqs: BTreeMap<u8, EqRing>,
    /// CQs created through [`Driver::create_cq`].
    pub cqs: BTreeMap<u32, CqRing>,
    /// The model process.
    pub model: Model,
}

impl Driver {
    /// Starts a model with `args`, connects, maps RAM, enables bus mastering and programs the
    /// command queue.
    pub fn start(args: &[&str]) -> Driver {
        let model = Model::start(args);
        let deadline = Instant::now() + Duration::from_secs(5);
        let client = loop {
            match Client::connect(&model.socket) {
                Ok(c) => break c,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    sleep(Duration::from_millis(2));
                }
                Err(e) => panic!("connect to the model: {e}; log:\n{}", model.log()),
            }
        };
        client
            .stream()
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let ram = vfio_user_proto::memfd("cx4-test-ram", RAM_SIZE).expect("memfd");
        let mut d = Driver {
            client,
            ram,
            next_page: RAM_BASE,
            free_pages: Vec::new(),
            fw_pages: BTreeSet::new(),
            cmdq: 0,
            token: 0,
            timeout: CMD_TIMEOUT,
            irqs: Vec::new(),
            uar: None,
            eqs: BTreeMap::new(),
            cqs: BTreeMap::new(),
            model,
        };
        d.client
            .dma_map(
                DmaMap {
                    iova: RAM_BASE,
                    size: RAM_SIZE,
                    offset: 0,
                    flags: DMA_MAP_FLAG_READ | DMA_MAP_FLAG_WRITE,
                },
                Some(d.ram.as_fd()),
            )
            .expect("DMA_MAP of guest RAM");
        let mut c = [0u8; 2];
        d.client
            .region_read(REGION_CONFIG, PCI_COMMAND, &mut c)
            .unwrap();
        let cmd = u16::from_le_bytes(c) | PCI_COMMAND_MEM_MASTER;
        d.client
            .region_write(REGION_CONFIG, PCI_COMMAND, &cmd.to_le_bytes())
            .unwrap();
        d.wait_ready();
        let cmdif = iseg::cmdif_rev(d.iseg32(iseg::CMDIF_REV_FW_SUB));
        assert_eq!(
            cmdif,
            iseg::CMDIF_REV,
            "command interface revision: expected {}, seen {cmdif}",
            iseg::CMDIF_REV
        );
        let geo = CmdqSize::from_reg(d.iseg32(iseg::CMDQ_ADDR_L_SZ));
        assert_eq!(
            (geo.log_size, geo.log_stride),
            (5, 6),
            "cmdq geometry: expected 32 slots of 64 bytes, seen {geo:?}"
        );
        d.cmdq = d.alloc_page();
        d.program_cmdq(d.cmdq);
        d
    }

    /// Writes the command queue address (high word, then low word) into the init segment.
    pub fn program_cmdq(&mut self, addr: u64) {
        self.iseg_write(iseg::CMDQ_ADDR_H, (addr >> 32) as u32);
        self.iseg_write(iseg::CMDQ_ADDR_L_SZ, addr as u32);
    }

    /// Polls the initializing bit until it clears (bounded).
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.iseg32(iseg::INITIALIZING) & iseg::INITIALIZING_BIT != 0 {
            assert!(
                Instant::now() < deadline,
                "firmware stayed initializing for 5 s"
            );
            sleep(Duration::from_millis(2));
        }
    }

    /// Drops the connection and returns the model (which then logs its page report and exits).
    pub fn disconnect(self) -> Model {
        let Driver { client, model, .. } = self;
        drop(client);
        model
    }

    // ---- BAR0 ----

    /// Host-order value of the init segment word at `off` (big-endian on the bus).
    pub fn iseg32(&mut self, off: usize) -> u32 {
        let mut b = [0u8; 4];
        self.client
            .region_read(REGION_BAR0, off as u64, &mut b)
            .expect("BAR0 read");
        u32::from_be_bytes(b)
    }

    /// Writes an init segment word (big-endian on the bus).
    pub fn iseg_write(&mut self, off: usize, v: u32) {
        self.client
            .region_write(REGION_BAR0, off as u64, &v.to_be_bytes())
            .expect("BAR0 write");
    }

    /// Rings the command doorbell for the slots in `bits`.
    pub fn ring(&mut self, bits: u32) {
        self.iseg_write(iseg::CMD_DBELL, bits);
    }

    /// Writes `data` at `off` in UAR page `uar`.
    pub fn uar_write(&mut self, uar: u32, off: usize, data: &[u8]) {
        let addr = u64::from(uar) * uar::UAR_PAGE_SIZE as u64 + off as u64;
        self.client
            .region_write(REGION_BAR0, addr, data)
            .expect("UAR write");
    }

    // ---- guest RAM ----

    /// Reads guest RAM.
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        assert!(
            addr >= RAM_BASE && addr + buf.len() as u64 <= RAM_BASE + RAM_SIZE,
            "harness read outside RAM at {addr:#x}"
        );
        self.ram
            .read_exact_at(buf, addr - RAM_BASE)
            .expect("RAM read");
    }

    /// Writes guest RAM.
    pub fn write(&self, addr: u64, data: &[u8]) {
        assert!(
            addr >= RAM_BASE && addr + data.len() as u64 <= RAM_BASE + RAM_SIZE,
            "harness write outside RAM at {addr:#x}"
        );
        self.ram
            .write_all_at(data, addr - RAM_BASE)
            .expect("RAM write");
    }

    /// Reads a layout from guest RAM.
    pub fn read_obj<T: Layout>(&self, addr: u64) -> T {
        let mut b = vec![0u8; T::SIZE];
        self.read(addr, &mut b);
        T::read_from_bytes(&b).expect("sized buffer")
    }

    /// A zeroed 4 KiB page of guest RAM (below the scratch area).
    pub fn alloc_page(&mut self) -> u64 {
        let p = match self.free_pages.pop() {
            Some(p) => p,
            None => {
                let p = self.next_page;
                assert!(
                    p + PAGE_SIZE as u64 <= SCRATCH_BASE,
                    "harness out of guest RAM"
                );
                self.next_page += PAGE_SIZE as u64;
                p
            }
        };
        self.write(p, &[0u8; PAGE_SIZE]);
        p
    }

    /// Returns a page to the allocator.
    pub fn free_page(&mut self, p: u64) {
        self.free_pages.push(p);
    }

    // ---- command queue ----

    /// Address of the entry of `slot`.
    pub fn entry_addr(&self, slot: u32) -> u64 {
        self.cmdq + u64::from(slot) * CmdLayout::SIZE as u64
    }

    /// The entry of `slot` as it is in guest memory.
    pub fn entry(&self, slot: u32) -> CmdLayout {
        self.read_obj(self.entry_addr(slot))
    }

    /// Rewrites fields of a posted entry.
    pub fn patch_entry(&self, p: &Posted, f: impl FnOnce(&mut CmdLayout)) {
        let mut e: CmdLayout = self.read_obj(p.entry);
        f(&mut e);
        self.write(p.entry, e.as_bytes());
    }

    /// Rewrites fields of a mailbox block.
    pub fn patch_block(&self, addr: u64, f: impl FnOnce(&mut CmdProtBlock)) {
        let mut b: CmdProtBlock = self.read_obj(addr);
        f(&mut b);
        self.write(addr, b.as_bytes());
    }

    fn next_token(&mut self) -> u8 {
        // cmd.c alloc_token: 1..=255, never 0.
        self.token = self.token.wrapping_add(1).max(1);
        self.token
    }

    /// Writes a mailbox chain of `blocks` blocks carrying `data`, one block per fresh page.
    pub fn write_chain(&mut self, data: &[u8], blocks: usize, token: u8) -> Vec<u64> {
        let addrs: Vec<u64> = (0..blocks).map(|_| self.alloc_page()).collect();
        for (i, &a) in addrs.iter().enumerate() {
            let mut b = CmdProtBlock::new();
            let chunk = data.get(i * cmd::DATA_BLOCK_SIZE..).unwrap_or(&[]);
            let n = chunk.len().min(cmd::DATA_BLOCK_SIZE);
            b.data_mut()[..n].copy_from_slice(&chunk[..n]);
            b.set_next(addrs.get(i + 1).copied().unwrap_or(0));
            b.set_block_num(i as u32);
            b.set_token(token.into());
            self.write(a, b.as_bytes());
        }
        addrs
    }

    /// Writes a command into `slot` (entry, input and output chains, ownership HW) without
    /// ringing the doorbell.
    pub fn post(&mut self, slot: u32, input: &[u8], out_len: usize) -> Posted {
        assert!(slot < 32, "slot {slot} beyond the queue");
        let token = self.next_token();
        let in_blocks = self.write_chain(
            input.get(cmd::INLINE_LEN..).unwrap_or(&[]),
            cmd::mailbox_blocks(input.len()),
            token,
        );
        let out_blocks = self.write_chain(&[], cmd::mailbox_blocks(out_len), token);
        let mut e = CmdLayout::new();
        e.set_xport_type(cmd::PCI_CMD_XPORT.into());
        e.set_inlen(input.len() as u32);
        e.set_in_ptr(in_blocks.first().copied().unwrap_or(0));
        let n = input.len().min(cmd::INLINE_LEN);
        e.inline_in_mut()[..n].copy_from_slice(&input[..n]);
        e.set_out_ptr(out_blocks.first().copied().unwrap_or(0));
        e.set_outlen(out_len as u32);
        e.set_token(token.into());
        e.set_status_own(cmd::status_own(delivery::OK, cmd::OWNER_HW).into());
        let entry = self.entry_addr(slot);
        self.write(entry, e.as_bytes());
        Posted {
            slot,
            entry,
            token,
            in_blocks,
            out_blocks,
            out_len,
            opcode: if input.len() >= 2 {
                in_opcode(input)
            } else {
                0
            },
        }
    }

    /// Polls the entry's ownership bit until software owns it again (bounded by
    /// [`Driver::timeout`]) and collects the output. Mailbox pages are freed unless the command
    /// timed out (the device may still write them).
    pub fn wait(&mut self, p: &Posted) -> Result<Vec<u8>, DeliveryStatus> {
        let deadline = Instant::now() + self.timeout;
        let e = loop {
            let e: CmdLayout = self.read_obj(p.entry);
            if e.ownership() == u32::from(cmd::OWNER_SW) {
                break e;
            }
            if Instant::now() > deadline {
                return Err(DeliveryStatus::Timeout);
            }
            sleep(Duration::from_micros(200));
        };
        let res = match e.delivery_status() as u8 {
            delivery::OK => {
                let mut out = e.inline_out().to_vec();
                for &b in &p.out_blocks {
                    let blk: CmdProtBlock = self.read_obj(b);
                    out.extend_from_slice(blk.data());
                }
                out.truncate(p.out_len);
                Ok(out)
            }
            d => Err(DeliveryStatus::Error(d)),
        };
        for &b in p.in_blocks.iter().chain(&p.out_blocks) {
            self.free_page(b);
        }
        res
    }

    /// Executes one command in `slot`.
    pub fn exec_on(
        &mut self,
        slot: u32,
        input: &[u8],
        out_len: usize,
    ) -> Result<Vec<u8>, DeliveryStatus> {
        let p = self.post(slot, input, out_len);
        self.ring(1 << slot);
        self.wait(&p)
    }

    /// Executes one command in slot 0 (MANAGE_PAGES in its reserved slot).
    pub fn exec(&mut self, input: &[u8], out_len: usize) -> Result<Vec<u8>, DeliveryStatus> {
        let slot = if in_opcode(input) == cx4_hw::opcode::MANAGE_PAGES {
            PAGES_SLOT
        } else {
            0
        };
        self.exec_on(slot, input, out_len)
    }

    /// Posts every `(slot, input, out_len)`, rings one doorbell with all their bits, and
    /// collects each in order.
    pub fn exec_many(
        &mut self,
        cmds: &[(u32, Vec<u8>, usize)],
    ) -> Vec<Result<Vec<u8>, DeliveryStatus>> {
        let posted: Vec<Posted> = cmds
            .iter()
            .map(|(slot, input, out_len)| self.post(*slot, input, *out_len))
            .collect();
        let bits = posted.iter().fold(0u32, |b, p| b | 1 << p.slot);
        self.ring(bits);
        posted.iter().map(|p| self.wait(p)).collect()
    }

    /// Executes a raw input that must be delivered; returns the output.
    pub fn run(&mut self, input: &[u8], out_len: usize) -> Vec<u8> {
        let op = in_opcode(input);
        match self.exec(input, out_len) {
            Ok(out) => out,
            Err(d) => panic!(
                "{} ({op:#x}): expected delivery OK, seen {d}; model log:\n{}",
                opcode_name(op),
                self.model.log_tail(15)
            ),
        }
    }

    /// ACCESS_REG of register `reg` with `data` that must succeed; returns the register
    /// image of `T`'s size.
    pub fn reg_ok<T: Layout>(&mut self, reg: u16, write: bool, data: &T) -> T {
        let out = self.run_ok(
            &reg_input(reg, write, data.as_bytes()),
            cx4_hw::regs::AccessRegisterIn::SIZE + T::SIZE,
        );
        T::read_from_bytes(&out[cx4_hw::regs::AccessRegisterIn::SIZE..]).expect("sized")
    }

    /// Executes a raw input that must succeed.
    pub fn run_ok(&mut self, input: &[u8], out_len: usize) -> Vec<u8> {
        let out = self.run(input, out_len);
        let op = in_opcode(input);
        assert_eq!(
            out_status(&out),
            status::OK,
            "{} ({op:#x}): expected status OK, seen {}; model log:\n{}",
            opcode_name(op),
            describe(&out),
            self.model.log_tail(15)
        );
        out
    }

    /// Executes a raw input that must fail with `want` and a non-zero syndrome; returns the
    /// syndrome.
    pub fn run_err(&mut self, input: &[u8], out_len: usize, want: u8) -> u32 {
        let out = self.run(input, out_len);
        let op = in_opcode(input);
        assert_eq!(
            out_status(&out),
            want,
            "{} ({op:#x}): expected status {} ({want:#x}), seen {}",
            opcode_name(op),
            status_name(want),
            describe(&out)
        );
        let synd = out_syndrome(&out);
        assert_ne!(
            synd,
            0,
            "{} ({op:#x}): expected a non-zero syndrome with status {}, seen 0",
            opcode_name(op),
            status_name(want)
        );
        synd
    }

    /// Command `C` with its fixed input built by `f`, output of the fixed size; must succeed.
    pub fn ok<C: Command>(&mut self, f: impl FnOnce(&mut C::In)) -> Vec<u8> {
        self.run_ok(&input::<C>(f), <C::Out as Layout>::SIZE)
    }

    /// Command `C` that must fail with `want`; returns the syndrome.
    pub fn err<C: Command>(&mut self, want: u8, f: impl FnOnce(&mut C::In)) -> u32 {
        self.run_err(&input::<C>(f), <C::Out as Layout>::SIZE, want)
    }

    // ---- bring-up ----

    /// ENABLE_HCA.
    pub fn enable_hca(&mut self) {
        self.ok::<cmds::EnableHca>(|_| {});
    }

    /// QUERY_ISSI, then SET_ISSI 1 if supported; returns the ISSI in use.
    pub fn negotiate_issi(&mut self) -> u16 {
        let out = self.ok::<cmds::QueryIssi>(|_| {});
        let q: QueryIssiOut = view(&out);
        if issi_supported(q.supported_issi_dw0(), 1) {
            self.ok::<cmds::SetIssi>(|i| i.set_current_issi(1));
            1
        } else {
            0
        }
    }

    /// QUERY_PAGES for `op_mod` (1 boot, 2 init, 3 regular).
    pub fn query_pages(&mut self, op_mod: u16) -> i32 {
        let out = self.ok::<cmds::QueryPages>(|i| i.set_op_mod(op_mod.into()));
        view::<QueryPagesOut>(&out).num_pages() as i32
    }

    /// The MANAGE_PAGES give input for `pas`.
    pub fn give_input(pas: &[u64]) -> Vec<u8> {
        let mut v = input::<cmds::ManagePages>(|i| {
            i.set_op_mod(manage_pages_op_mod::GIVE.into());
            i.set_input_num_entries(pas.len() as u32);
        });
        v.resize(ManagePagesIn::SIZE + pas.len() * 8, 0);
        for (i, &pa) in pas.iter().enumerate() {
            ManagePagesIn::set_pas(&mut v, i, pa).expect("sized");
        }
        v
    }

    /// MANAGE_PAGES give of `pas` (in the pages slot); returns the output.
    pub fn give_pas(&mut self, pas: &[u64]) -> Vec<u8> {
        self.run(&Self::give_input(pas), ManagePagesOut::SIZE)
    }

    /// Allocates and gives `n` pages; returns them.
    pub fn give_pages(&mut self, n: usize) -> Vec<u64> {
        let pas: Vec<u64> = (0..n).map(|_| self.alloc_page()).collect();
        let out = self.give_pas(&pas);
        assert_eq!(
            out_status(&out),
            status::OK,
            "MANAGE_PAGES give of {n} pages: expected OK, seen {}",
            describe(&out)
        );
        self.fw_pages.extend(&pas);
        pas
    }

    /// QUERY_PAGES for `op_mod` and gives what it asks for; returns the count.
    pub fn satisfy_pages(&mut self, op_mod: u16) -> usize {
        let n = self.query_pages(op_mod);
        if n > 0 {
            self.give_pages(n as usize);
        }
        n.max(0) as usize
    }

    /// MANAGE_PAGES take of up to `n` pages with room for `n` in the output; returns them
    /// (checked to be pages the harness gave) and frees them.
    pub fn take_pages(&mut self, n: u32) -> Vec<u64> {
        let inp = input::<cmds::ManagePages>(|i| {
            i.set_op_mod(manage_pages_op_mod::TAKE.into());
            i.set_input_num_entries(n);
        });
        let out = self.run_ok(&inp, ManagePagesOut::SIZE + n as usize * 8);
        let count = view::<ManagePagesOut>(&out).output_num_entries() as usize;
        assert!(
            count <= n as usize,
            "MANAGE_PAGES take: expected at most {n} pages, seen {count}"
        );
        let pas: Vec<u64> = (0..count)
            .map(|i| ManagePagesOut::pas(&out, i).expect("room for the pages"))
            .collect();
        for &pa in &pas {
            assert!(
                self.fw_pages.remove(&pa),
                "MANAGE_PAGES take returned {pa:#x}, which the harness never gave (or twice)"
            );
            self.free_page(pa);
        }
        pas
    }

    /// Takes pages until the firmware returns none; returns how many came back.
    pub fn reclaim_pages(&mut self) -> usize {
        let mut total = 0;
        loop {
            let n = self.take_pages(256).len();
            if n == 0 {
                return total;
            }
            total += n;
        }
    }

    /// QUERY_HCA_CAP of a capability type; returns the 4 KiB page.
    pub fn query_cap(&mut self, ty: u16, cur: bool) -> Vec<u8> {
        let out =
            self.ok::<cmds::QueryHcaCap>(|i| i.set_op_mod(caps::query_op_mod(ty, cur).into()));
        view::<caps::QueryHcaCapOut>(&out).capability().0.to_vec()
    }

    /// SET_HCA_CAP of the general capabilities as main.c handle_hca_cap does: current values
    /// with pkey_table_size 0 (128), log_max_qp at most 18, checksums off, 4 KiB UAR pages.
    pub fn set_general_caps(&mut self) {
        let cur = self.query_cap(cap_type::GENERAL, true);
        let max = self.query_cap(cap_type::GENERAL, false);
        let maxq = view::<caps::HcaCapUnion>(&max).cmd_hca_cap().log_max_qp();
        self.ok::<cmds::SetHcaCap>(|i: &mut SetHcaCapIn| {
            i.set_op_mod(caps::set_op_mod(cap_type::GENERAL).into());
            i.capability_mut().0.copy_from_slice(&cur);
            let c = i.capability_mut().cmd_hca_cap_mut();
            c.set_pkey_table_size(0);
            c.set_log_max_qp(maxq.min(18));
            c.set_cmdif_checksum(0);
            c.set_log_uar_page_sz(0);
        });
    }

    /// INIT_HCA.
    pub fn init_hca(&mut self) {
        self.ok::<cmds::InitHca>(|_| {});
    }

    /// ALLOC_UAR; the first one becomes the driver's UAR.
    pub fn alloc_uar(&mut self) -> u32 {
        let out = self.ok::<cmds::AllocUar>(|_| {});
        let uar = view::<cx4_hw::uar::AllocUarOut>(&out).uar();
        self.uar.get_or_insert(uar);
        uar
    }

    /// SET_IRQS: one eventfd per MSI-X vector, non-blocking so counts can be sampled.
    pub fn enable_irqs(&mut self) {
        let n = self.client.irq_info(IRQ_MSIX).expect("IRQ info").count;
        self.irqs = (0..n)
            .map(|_| {
                let f = vfio_user_proto::eventfd().expect("eventfd");
                // SAFETY: fcntl on a descriptor we own, with integer arguments only.
                let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
                assert_eq!(r, 0, "O_NONBLOCK on an eventfd");
                f
            })
            .collect();
        let fds: Vec<_> = self.irqs.iter().map(|f| f.as_fd()).collect();
        self.client
            .set_irqs(
                IRQ_MSIX,
                VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
                0,
                n,
                &[],
                &fds,
            )
            .expect("SET_IRQS");
    }

    /// Interrupts raised on `vector` since the last call.
    pub fn irq_count(&mut self, vector: u16) -> u64 {
        let mut b = [0u8; 8];
        match self.irqs[vector as usize].read(&mut b) {
            Ok(8) => u64::from_ne_bytes(b),
            Ok(n) => panic!("short eventfd read of {n} bytes"),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(e) => panic!("eventfd read: {e}"),
        }
    }

    /// The usual bring-up up to a running function: ENABLE_HCA, ISSI, boot pages, general
    /// caps, init pages, INIT_HCA, a UAR and the MSI-X eventfds.
    pub fn bring_up(&mut self) {
        self.enable_hca();
        self.negotiate_issi();
        self.satisfy_pages(cx4_hw::pages::query_pages_op_mod::BOOT);
        self.set_general_caps();
        self.satisfy_pages(cx4_hw::pages::query_pages_op_mod::INIT);
        self.init_hca();
        self.alloc_uar();
        self.enable_irqs();
    }

    /// A started model brought up.
    pub fn up(args: &[&str]) -> Driver {
        let mut d = Driver::start(args);
        d.bring_up();
        d
    }

    /// The usual teardown: CQs, EQs, the UAR, TEARDOWN_HCA, page reclaim, DISABLE_HCA.
    pub fn shut_down(&mut self) {
        for cqn in self.cqs.keys().copied().collect::<Vec<_>>() {
            self.destroy_cq(cqn);
        }
        for eqn in self.eqs.keys().copied().collect::<Vec<_>>() {
            self.destroy_eq(eqn);
        }
        if let Some(uar) = self.uar.take() {
            self.ok::<cmds::DeallocUar>(|i| i.set_uar(uar));
        }
        self.ok::<cmds::TeardownHca>(|_| {});
        self.reclaim_pages();
        self.ok::<cmds::DisableHca>(|_| {});
    }

    // ---- EQs ----

    /// The CREATE_EQ input for a ring of `2^log_size` entries on `pas` (4 KiB pages).
    pub fn create_eq_input(uar: u32, log_size: u8, vector: u16, mask: u64, pas: &[u64]) -> Vec<u8> {
        let mut v = input::<cmds::CreateEq>(|i| {
            let c = i.eq_context_entry_mut();
            c.set_log_eq_size(log_size.into());
            c.set_uar_page(uar);
            c.set_intr(vector.into());
            c.set_log_page_size(0);
            i.set_event_bitmask(0, mask).expect("word 0");
        });
        v.resize(CreateEqIn::SIZE + pas.len() * 8, 0);
        for (i, &pa) in pas.iter().enumerate() {
            CreateEqIn::set_pas(&mut v, i, pa).expect("sized");
        }
        v
    }

    /// Allocates a ring of `2^log_size` EQEs with every owner byte at its initial value.
    pub fn alloc_eq_ring(&mut self, log_size: u8) -> Vec<u64> {
        let bytes = (Eqe::SIZE << log_size).max(PAGE_SIZE);
        let pas: Vec<u64> = (0..bytes / PAGE_SIZE).map(|_| self.alloc_page()).collect();
        let mut e = Eqe::new();
        e.set_owner(EQE_OWNER_INIT_VAL.into());
        for &p in &pas {
            for k in 0..PAGE_SIZE / Eqe::SIZE {
                self.write(p + (k * Eqe::SIZE) as u64, e.as_bytes());
            }
        }
        pas
    }

    /// CREATE_EQ of `2^log_size` entries on `vector` for the events in `mask`, on the driver's
    /// UAR; returns the EQ number. The EQ starts unarmed (arm it with [`Driver::eq_doorbell`]).
    pub fn create_eq(&mut self, log_size: u8, vector: u16, mask: u64) -> u8 {
        let uar = self.uar.expect("alloc_uar first");
        let pas = self.alloc_eq_ring(log_size);
        let out = self.run_ok(
            &Self::create_eq_input(uar, log_size, vector, mask, &pas),
            cx4_hw::eq::CreateEqOut::SIZE,
        );
        let eqn = view::<cx4_hw::eq::CreateEqOut>(&out).eq_number() as u8;
        self.eqs.insert(
            eqn,
            EqRing {
                eqn,
                log_size,
                pas,
                ci: 0,
                vector,
                uar,
            },
        );
        eqn
    }

    /// DESTROY_EQ.
    pub fn destroy_eq(&mut self, eqn: u8) {
        self.ok::<cmds::DestroyEq>(|i| i.set_eq_number(eqn.into()));
        if let Some(eq) = self.eqs.remove(&eqn) {
            for p in eq.pas {
                self.free_page(p);
            }
        }
    }

    /// The EQE at index `idx` (mod size) of an EQ.
    pub fn eqe_at(&self, eqn: u8, idx: u32) -> Eqe {
        let eq = &self.eqs[&eqn];
        let off = (idx & ((1 << eq.log_size) - 1)) as usize * Eqe::SIZE;
        self.read_obj(eq.pas[off / PAGE_SIZE] + (off % PAGE_SIZE) as u64)
    }

    /// The next EQE owned by software, consuming it (no doorbell).
    pub fn eq_next(&mut self, eqn: u8) -> Option<Eqe> {
        let (ci, log) = {
            let eq = &self.eqs[&eqn];
            (eq.ci, eq.log_size)
        };
        let e = self.eqe_at(eqn, ci);
        if !eqe_owned_by_sw(e.owner() as u8, ci, log.into()) {
            return None;
        }
        self.eqs.get_mut(&eqn).expect("known EQ").ci = ci.wrapping_add(1);
        Some(e)
    }

    /// Every EQE software owns now, consumed (no doorbell).
    pub fn eq_drain(&mut self, eqn: u8) -> Vec<Eqe> {
        std::iter::from_fn(|| self.eq_next(eqn)).collect()
    }

    /// Reports the EQ's consumer index through its UAR (+0x40 arms, +0x48 only updates).
    pub fn eq_doorbell(&mut self, eqn: u8, arm: bool) {
        let eq = &self.eqs[&eqn];
        let db = EqDoorbell { eqn, ci: eq.ci };
        let off = if arm {
            uar::EQ_DOORBELL_UPDATE_ARM
        } else {
            uar::EQ_DOORBELL_UPDATE
        };
        let uar = eq.uar;
        self.uar_write(uar, off, &db.to_bytes());
    }

    /// GEN_EQE of an event of type `ty` with `data` into `eqn`; returns the output.
    pub fn gen_eqe(&mut self, eqn: u8, ty: u8, data: &[u8]) -> Vec<u8> {
        let mut e = Eqe::new();
        e.set_event_type(ty.into());
        let n = data.len().min(e.data().len());
        e.data_mut()[..n].copy_from_slice(&data[..n]);
        let inp = input::<cmds::GenEqe>(|i| {
            i.set_eq_number(eqn.into());
            i.eqe_mut().copy_from_slice(e.as_bytes());
        });
        self.run(&inp, cx4_hw::eq::GenEqOut::SIZE)
    }

    // ---- CQs ----

    /// The CREATE_CQ input for a ring of `2^log_size` 64-byte CQEs.
    pub fn create_cq_input(uar: u32, eqn: u8, log_size: u8, dbr: u64, pas: &[u64]) -> Vec<u8> {
        let mut v = input::<cmds::CreateCq>(|i| {
            let c = i.cq_context_mut();
            c.set_log_cq_size(log_size.into());
            c.set_cqe_sz(cx4_hw::cq::cqe_stride::S64.into());
            c.set_uar_page(uar);
            c.set_c_eqn_or_apu_element(eqn.into());
            c.set_log_page_size(0);
            c.set_dbr_addr(dbr);
        });
        v.resize(CreateCqIn::SIZE + pas.len() * 8, 0);
        for (i, &pa) in pas.iter().enumerate() {
            CreateCqIn::set_pas(&mut v, i, pa).expect("sized");
        }
        v
    }

    /// CREATE_CQ of `2^log_size` 64-byte CQEs reporting to `eqn`, entries pre-filled with the
    /// invalid opcode and owner 1 as en_main.c does; returns the CQ number.
    pub fn create_cq(&mut self, log_size: u8, eqn: u8) -> u32 {
        let uar = self.uar.expect("alloc_uar first");
        let bytes = (Cqe64::SIZE << log_size).max(PAGE_SIZE);
        let pas: Vec<u64> = (0..bytes / PAGE_SIZE).map(|_| self.alloc_page()).collect();
        let mut c = Cqe64::new();
        c.set_op_own(cqe::OP_OWN_SW_INIT.into());
        for &p in &pas {
            for k in 0..PAGE_SIZE / Cqe64::SIZE {
                self.write(p + (k * Cqe64::SIZE) as u64, c.as_bytes());
            }
        }
        let dbr = self.alloc_page();
        let out = self.run_ok(
            &Self::create_cq_input(uar, eqn, log_size, dbr, &pas),
            cx4_hw::cq::CreateCqOut::SIZE,
        );
        let cqn = view::<cx4_hw::cq::CreateCqOut>(&out).cqn();
        self.cqs.insert(
            cqn,
            CqRing {
                cqn,
                log_size,
                pas,
                dbr,
                ci: 0,
                eqn,
                uar,
                sn: 0,
            },
        );
        cqn
    }

    /// DESTROY_CQ.
    pub fn destroy_cq(&mut self, cqn: u32) {
        self.ok::<cmds::DestroyCq>(|i| i.set_cqn(cqn));
        if let Some(cq) = self.cqs.remove(&cqn) {
            for p in cq.pas {
                self.free_page(p);
            }
            self.free_page(cq.dbr);
        }
    }

    /// The CQE at index `idx` (mod size) of a CQ.
    pub fn cqe_at(&self, cqn: u32, idx: u32) -> Cqe64 {
        let cq = &self.cqs[&cqn];
        let off = (idx & ((1 << cq.log_size) - 1)) as usize * Cqe64::SIZE;
        self.read_obj(cq.pas[off / PAGE_SIZE] + (off % PAGE_SIZE) as u64)
    }

    /// The next CQE owned by software, consumed (the doorbell record is not updated).
    pub fn cq_next(&mut self, cqn: u32) -> Option<Cqe64> {
        let (ci, log) = {
            let cq = &self.cqs[&cqn];
            (cq.ci, cq.log_size)
        };
        let c = self.cqe_at(cqn, ci);
        if !cqe::cqe_owned_by_sw(c.op_own() as u8, ci, log.into()) {
            return None;
        }
        self.cqs.get_mut(&cqn).expect("known CQ").ci = ci.wrapping_add(1);
        Some(c)
    }

    /// Publishes the consumer index in the CQ's doorbell record.
    pub fn cq_update_ci(&mut self, cqn: u32) {
        let cq = &self.cqs[&cqn];
        let at = cq.dbr + uar::CQ_DBR_SET_CI as u64;
        self.write(at, &(cq.ci & 0xff_ffff).to_be_bytes());
    }

    /// Arms the CQ (doorbell record arm word, then the UAR doorbell), as mlx5_cq_arm does.
    pub fn cq_arm(&mut self, cqn: u32, solicited: bool) {
        self.cq_update_ci(cqn);
        let cq = self.cqs.get_mut(&cqn).expect("known CQ");
        let db = CqArmDoorbell {
            sn: cq.sn,
            cmd: if solicited {
                uar::CQ_DB_REQ_NOT_SOL
            } else {
                uar::CQ_DB_REQ_NOT
            },
            ci: cq.ci,
            cqn,
        };
        cq.sn = (cq.sn + 1) & 3;
        let (dbr, uar) = (cq.dbr, cq.uar);
        self.write(dbr + uar::CQ_DBR_ARM as u64, &db.arm_word().to_be_bytes());
        self.uar_write(uar, uar::CQ_DOORBELL, &db.to_bytes());
    }

    /// Asks the model (control socket test hook) for one CQE on `cqn`.
    pub fn gen_cqe(&self, cqn: u32) -> String {
        self.model.control(&format!("gen-cqe cqn={cqn}"))
    }
}

/// A small deterministic PRNG (splitmix64) for the fuzzers.
pub struct Rng(u64);

impl Rng {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
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

    /// A random element.
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }
}
