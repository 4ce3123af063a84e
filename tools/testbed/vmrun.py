#!/usr/bin/env python3
"""cx4 VM runner: boot test-kernel VMs, optionally each with a modelled ConnectX-4 over
vfio-user, run a guest script, collect its exit status, console and model logs.

Usable as a library (tests import it) and from the command line:

    vmrun.py --kdir KDIR --tree TREE --model BIN --script job.sh [--file F]... [--vms 2]
             [--net] [--no-model] [--model-arg=--cmdif-rev=4] [--timeout 120] [--kvm]
    vmrun.py --shell --kdir KDIR --tree TREE --model BIN --file cx4.ko [--vms 2] [--drive STEPS]

Every process it starts (QEMU, the model) runs in its own process group with a parent-death
signal; mounts QEMU needs (its chroot's /dev, /proc, the run directory) live in a private mount
namespace that vanishes with QEMU; the network namespace it may create is deleted on exit;
the run directory (sockets, shares) is removed unless kept. This holds on failure, timeout,
SIGINT and SIGTERM.
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
GUEST_INIT = HERE / "guest-init.sh"
NETNS_PREFIX = "cx4-"
RUN_MOUNT = "/run/cx4"          # where the run directory appears inside the chroot and guest
_RUN_SEQ = itertools.count()
HOST_ADDR = "10.99.0.254/24"    # the host side of the run's segment (br0 in the netns)
WIRE_MTU = 9978                 # TAPs of modelled ports carry the port's largest MTU
PR_SET_PDEATHSIG = 1


def _pdeathsig() -> None:
    """preexec: new process group, and die with the runner."""
    os.setpgid(0, 0)
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class VmSpec:
    """One VM of a run."""
    name: str
    model: bool = True                       # attach a modelled ConnectX-4
    cards: int = 1                           # how many modelled cards (each on its own root port)
    model_args: list[str] = field(default_factory=list)   # `{card}`: the card's name
    mem_mb: int = 1024
    mac: str | None = None                   # NIC on the run's L2 segment (needs Run(net=True))
    wire: bool = False                       # the modelled cards' ports on the run's segment:
                                             # a TAP per card, model run with --eth --tap
    cmdline: str = ""                        # extra kernel command line
    gpu: bool = False                        # a virtio-gpu (DRM card0: dumb buffers, dma-bufs)
    interactive: bool = False                # serial console on a socket (make shell)


@dataclass
class VmResult:
    """What one VM left behind."""
    name: str
    status: int | None                       # the job's exit status; None: no status (crash, timeout)
    console: str
    job_log: str
    dmesg: str
    model_log: str
    model_rc: int | None
    share: Path                              # the VM's share directory (valid until Run closes)
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def early_boot_race(self) -> bool:
        """The guest kernel died in IO-APIC set-up, long before any driver or job ran.

        Seen about once in a thousand TCG boots on a loaded host: a legacy interrupt arrives
        while setup_IO_APIC is moving the ISA IRQs onto the IO-APIC domain, and
        mask_ioapic_irq finds no chip data yet. It is a property of the emulated boot, not of
        anything under test, so callers may boot once more (and say so)."""
        return (self.status is None and "Kernel panic" in self.console
                and "setup_IO_APIC" in self.console and not self.job_log)


class RunError(Exception):
    pass


class Run:
    """A set of VMs booted together. Use as a context manager; close() cleans up everything."""

    def __init__(self, kdir: Path, tree: Path, model_bin: Path | None, vms: list[VmSpec],
                 net: bool = False, kvm: bool = False, keep: bool = False,
                 smp: int = 1, log=None):
        self.kdir, self.tree, self.model_bin = Path(kdir), Path(tree), model_bin
        self.vms, self.net, self.kvm, self.keep, self.smp = vms, net, kvm, keep, smp
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.procs: list[subprocess.Popen] = []
        self.netns: str | None = None
        # The owner's pid in every name and in every child's environment lets leak checks
        # tell this runner's leftovers from those of other runs on the same machine.
        self.dir = Path(tempfile.mkdtemp(prefix=f"cx4-run-{os.getpid()}-"))
        self.closed = False
        self.bzimage = self.kdir / "arch/x86/boot/bzImage"
        if not self.bzimage.exists():
            raise RunError(f"no kernel image at {self.bzimage}")
        if not (self.tree / "usr/bin/qemu-system-x86_64").exists():
            raise RunError(f"no QEMU in the guest tree {self.tree}")
        (self.tree / RUN_MOUNT.lstrip("/")).mkdir(parents=True, exist_ok=True)
        shutil.copy(self.bzimage, self.dir / "bzImage")
        shutil.copy(GUEST_INIT, self.dir / "guest-init.sh")
        os.chmod(self.dir / "guest-init.sh", 0o755)
        for vm in vms:
            share = self.share(vm.name)
            share.mkdir()
            (share / "hostname").write_text(vm.name + "\n")

    # -- layout -------------------------------------------------------------------------
    def share(self, name: str) -> Path:
        return self.dir / f"share-{name}"

    def put(self, src: Path | str, name: str | None = None, vms: list[str] | None = None) -> None:
        """Copies a file into the share of each VM (the guest sees it under /cx4)."""
        for vm in self.vms:
            if vms is None or vm.name in vms:
                dst = self.share(vm.name) / (name or Path(src).name)
                shutil.copy(src, dst)

    # -- network ------------------------------------------------------------------------
    @staticmethod
    def wire_tap(i: int, k: int) -> str:
        """TAP of card `k` of VM `i` (the port's wire; names stay below IFNAMSIZ)."""
        return f"c{i}p{k}"

    def _setup_net(self) -> None:
        # Runs of one process (run.py --jobs N: threads) differ by a sequence number; the
        # time keeps a reused pid apart from a dead run's leftovers.
        self.netns = (f"{NETNS_PREFIX}{os.getpid()}-{next(_RUN_SEQ)}-"
                      f"{int(time.time() * 1000) % 100000}")
        sh = lambda *a: subprocess.run(["ip", "netns", "exec", self.netns, *a], check=True)
        subprocess.run(["ip", "netns", "add", self.netns], check=True)
        sh("ip", "link", "set", "lo", "up")
        sh("ip", "link", "add", "br0", "type", "bridge")
        sh("ip", "link", "set", "br0", "up")
        # The host side of the segment, so that the host (in the netns) reaches the VMs.
        sh("ip", "addr", "add", HOST_ADDR, "dev", "br0")
        for i, vm in enumerate(self.vms):
            if vm.mac:
                tap = f"tap{i}"
                sh("ip", "tuntap", "add", tap, "mode", "tap")
                # Jumbo frames pass the bridge when a guest raises its NIC's MTU.
                sh("ip", "link", "set", tap, "mtu", str(WIRE_MTU))
                sh("ip", "link", "set", tap, "master", "br0")
                sh("ip", "link", "set", tap, "up")
            for k in range(vm.cards if vm.model and vm.wire else 0):
                tap = self.wire_tap(i, k)
                sh("ip", "tuntap", "add", tap, "mode", "tap")
                sh("ip", "link", "set", tap, "mtu", str(WIRE_MTU))
                sh("ip", "link", "set", tap, "master", "br0")
                sh("ip", "link", "set", tap, "up")

    def netns_run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        """Runs a command on the host side of the run's segment (inside its netns)."""
        if not self.netns:
            raise RunError("the run has no network namespace")
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(["ip", "netns", "exec", self.netns, *argv], **kw)

    # -- processes ----------------------------------------------------------------------
    def _spawn(self, argv: list[str], out: Path) -> subprocess.Popen:
        f = open(out, "wb")
        env = dict(os.environ, CX4_RUN_OWNER=str(os.getpid()))
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                             preexec_fn=_pdeathsig, close_fds=True, env=env)
        f.close()
        self.procs.append(p)
        return p

    @staticmethod
    def _card(vm: VmSpec, k: int) -> str:
        """Name of card `k` of a VM: its socket and log are named after it."""
        return vm.name if k == 0 else f"{vm.name}-{k}"

    def _start_model(self, vm: VmSpec, k: int = 0) -> subprocess.Popen:
        card = self._card(vm, k)
        sock = self.dir / f"{card}.sock"
        i = self.vms.index(vm)
        # Distinct MACs for every card of the run (two VMs share one segment).
        seed = k + 1 if not vm.wire else 16 * (i + 1) + k + 1
        # `{card}` in a model argument names the card (per-card control sockets).
        args = [a.replace("{card}", card) for a in vm.model_args]
        argv = [str(self.model_bin), "--socket", str(sock), "--seed", str(seed), *args]
        if vm.wire:
            # The model joins the run's netns to open its TAP there.
            # An InfiniBand port (`--link ib`) runs no Ethernet layer; its packets cross the
            # segment in frames of their own EtherType.
            eth = [] if "--link" in args else ["--eth"]
            argv = ["ip", "netns", "exec", self.netns, *argv, *eth, "--tap", self.wire_tap(i, k)]
        p = self._spawn(argv, self.dir / f"{card}.model.log")
        deadline = time.time() + 10
        while not sock.exists():
            if p.poll() is not None:
                raise RunError(f"{card}: model exited with {p.returncode} before listening:\n"
                               + (self.dir / f"{card}.model.log").read_text(errors="replace"))
            if time.time() > deadline:
                raise RunError(f"{card}: model did not create {sock} within 10 s")
            time.sleep(0.02)
        return p

    def _qemu_argv(self, i: int, vm: VmSpec) -> list[str]:
        accel = "kvm" if self.kvm else "tcg"
        run = RUN_MOUNT
        # no_timer_check: on a loaded host a TCG guest can miss the 8254 timer check at boot
        # ("IO-APIC + timer doesn't work!" panic); the check proves nothing about a VM.
        # no5lvl: `-cpu max` offers LA57; with 5-level paging the KASAN (debug) kernel reports a
        # wild-memory-access for an interrupt taken during early boot (identify_cpu), taints
        # itself and turns lockdep off for the whole run. 4-level paging is what the tests need.
        # kunit.enable=0: cx4.ko carries KUnit suites, which KUnit would run (and report in
        # the log) at every load; the KUnit test turns them on with its own kunit.enable=1,
        # which comes later on the line and wins.
        cmdline = (f"console=ttyS0 root=/dev/root rootfstype=9p "
                   f"rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro "
                   f"init={run}/guest-init.sh panic=-1 quiet loglevel=6 no_timer_check no5lvl "
                   f"kunit.enable=0 {vm.cmdline}").strip()
        argv = [
            "qemu-system-x86_64", "-nodefaults", "-no-user-config", "-nographic",
            "-machine", f"q35,accel={accel},memory-backend=mem",
            "-cpu", "max" if not self.kvm else "host", "-smp", str(self.smp),
            "-m", f"{vm.mem_mb}M",
            "-object", f"memory-backend-memfd,id=mem,size={vm.mem_mb}M,share=on",
            "-kernel", str(self.bzimage_in_chroot), "-append", cmdline,
            *(["-chardev", f"socket,id=con,path={run}/{vm.name}.console.sock,server=on,wait=off,"
                           f"logfile={run}/{vm.name}.console",
               "-serial", "chardev:con"] if vm.interactive else
              ["-serial", f"file:{run}/{vm.name}.console"]),
            "-monitor", "none", "-no-reboot",
            "-fsdev", "local,id=r9,path=/,security_model=passthrough,readonly=on,multidevs=remap",
            "-device", "virtio-9p-pci,fsdev=r9,mount_tag=/dev/root",
            "-fsdev", f"local,id=w9,path={run}/share-{vm.name},security_model=none",
            "-device", "virtio-9p-pci,fsdev=w9,mount_tag=cx4",
        ]
        for k in range(vm.cards if vm.model else 0):
            rp = f"rp{k + 1}"
            argv += ["-device", f"pcie-root-port,id={rp},chassis={k + 1}",
                     "-device", '{"driver":"vfio-user-pci","socket":{"type":"unix","path":"'
                     f'{run}/{self._card(vm, k)}.sock"}},"bus":"{rp}"}}']
        if vm.gpu:
            argv += ["-device", "virtio-gpu-pci"]
        if vm.mac:
            argv += ["-netdev", f"tap,id=n0,ifname=tap{i},script=no,downscript=no",
                     "-device", f"virtio-net-pci,netdev=n0,mac={vm.mac}"]
        return argv

    def _start_qemu(self, i: int, vm: VmSpec) -> subprocess.Popen:
        tree = shlex.quote(str(self.tree))
        d = shlex.quote(str(self.dir))
        # Private mount namespace: the bind mounts disappear with QEMU, whatever happens.
        setup = (f"set -e; mount --make-rprivate /; "
                 f"mount --bind /dev {tree}/dev; mount -t proc proc {tree}/proc; "
                 f"mount --bind {d} {tree}{RUN_MOUNT}; "
                 f"exec chroot {tree} " + " ".join(shlex.quote(a) for a in self._qemu_argv(i, vm)))
        argv = ["unshare", "--mount", "--", "sh", "-c", setup]
        if self.netns:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        return self._spawn(argv, self.dir / f"{vm.name}.qemu.log")

    @property
    def bzimage_in_chroot(self) -> str:
        return f"{RUN_MOUNT}/bzImage"

    # -- running ------------------------------------------------------------------------
    def boot(self, timeout: float = 120.0) -> list[VmResult]:
        """Boots every VM, waits for all to power off (or the timeout), returns their results."""
        t0 = time.time()
        if (self.net and any(vm.mac for vm in self.vms)) or any(vm.wire for vm in self.vms):
            self._setup_net()
        models: dict[str, subprocess.Popen] = {}
        qemus: dict[str, subprocess.Popen] = {}
        started: dict[str, float] = {}
        for i, vm in enumerate(self.vms):
            if vm.model:
                if not self.model_bin:
                    raise RunError("a VM wants a model but no model binary was given")
                models[vm.name] = self._start_model(vm)
                for k in range(1, vm.cards):
                    self._start_model(vm, k)
            qemus[vm.name] = self._start_qemu(i, vm)
            started[vm.name] = time.time()
        ended: dict[str, float] = {}
        timed_out = False
        while len(ended) < len(qemus):
            for name, q in qemus.items():
                if name not in ended and q.poll() is not None:
                    ended[name] = time.time()
            if time.time() - t0 > timeout:
                timed_out = True
                self.log(f"vmrun: timeout after {timeout:.0f} s, killing "
                         + ", ".join(n for n in qemus if n not in ended))
                diag = self._host_state()
                break
            time.sleep(0.05)
        # QEMU is gone (or being killed): the model sees its client disconnect.
        self._kill_all()
        results = []
        for vm in self.vms:
            share = self.share(vm.name)
            rd = lambda p: p.read_text(errors="replace") if p.exists() else ""
            st = rd(share / "status").strip()
            status = int(st) if st.lstrip("-").isdigit() else None
            console = rd(self.dir / f"{vm.name}.console") + rd(self.dir / f"{vm.name}.qemu.log")
            m = models.get(vm.name)
            extra = "".join(f"----- card {k} -----\n" + rd(self.dir / f"{self._card(vm, k)}.model.log")
                            for k in range(1, vm.cards))
            results.append(VmResult(
                name=vm.name, status=status, console=console, job_log=rd(share / "job.log"),
                dmesg=rd(share / "dmesg.txt"),
                model_log=rd(self.dir / f"{vm.name}.model.log") + extra,
                model_rc=m.returncode if m else None, share=share,
                seconds=ended.get(vm.name, time.time()) - started[vm.name]))
        if timed_out:
            for r in results:
                if r.status is None:
                    r.console += "\n[vmrun: timed out]\n" + diag
        return results

    def _host_state(self) -> str:
        """What the host looked like when the run timed out, for the failure report: its load,
        the busiest processes, and the packet counters of the run's segment (did frames move?)."""
        def out(argv: list[str]) -> str:
            try:
                return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
            except (OSError, subprocess.TimeoutExpired) as e:
                return f"{argv[0]}: {e}\n"
        text = "[host] loadavg " + out(["cat", "/proc/loadavg"])
        text += "".join("[host] " + l + "\n" for l in out(
            ["ps", "-eo", "pcpu,etimes,rss,comm", "--sort=-pcpu"]).splitlines()[:8])
        if self.netns:
            text += "".join("[segment] " + " ".join(l.split()) + "\n" for l in out(
                ["ip", "netns", "exec", self.netns, "cat", "/proc/net/dev"]).splitlines()[2:])
        return text

    def _kill_all(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            alive = [p for p in self.procs if p.poll() is None]
            for p in alive:
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.time() + 3
            for p in alive:
                try:
                    p.wait(max(0.0, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    pass

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._kill_all()
        if self.netns:
            subprocess.run(["ip", "netns", "del", self.netns], stderr=subprocess.DEVNULL)
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _console(sock: Path, wait: float = 30.0) -> "socket.socket":
    """A connection to a VM's serial console socket (QEMU creates it when it starts)."""
    import socket as so
    deadline = time.time() + wait
    while not sock.exists():
        if time.time() > deadline:
            raise RunError(f"no console socket {sock}")
        time.sleep(0.05)
    c = so.socket(so.AF_UNIX, so.SOCK_STREAM)
    for _ in range(200):
        try:
            c.connect(str(sock))
            break
        except OSError:
            time.sleep(0.05)
    return c


def attach(sock: Path, banner: str = "", wait: float = 30.0) -> None:
    """Relays the terminal to a VM's serial console socket until the VM goes away or the user
    types Ctrl-] (the VM keeps running then)."""
    import select
    import termios
    import tty
    c = _console(sock, wait)
    if banner:
        print(banner, file=sys.stderr, flush=True)
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd) if os.isatty(fd) else None
    try:
        if saved is not None:
            tty.setraw(fd)
        while True:
            r, _, _ = select.select([fd, c], [], [])
            if c in r:
                data = c.recv(4096)
                if not data:
                    break
                os.write(sys.stdout.fileno(), data)
            if fd in r:
                data = os.read(fd, 1024)
                if not data or b"\x1d" in data:
                    break
                c.sendall(data)
    finally:
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        c.close()


_ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


class Console:
    """A VM's shell on its serial console, typed into by a program (`vmrun.py --shell --drive`):
    what `make shell` gives a person, driven the way a person would use it."""

    def __init__(self, name: str, sock: Path, alive):
        self.name, self.alive = name, alive
        self.c = _console(sock)
        self.c.setblocking(False)
        self.buf = b""
        self.steps = 0

    def expect(self, pattern: bytes, timeout: float) -> re.Match | None:
        """Reads the console until `pattern` matches what came since the last match (the text
        up to the match is consumed); None on timeout or when the VMs went away."""
        import select
        deadline = time.time() + timeout
        rx = re.compile(pattern)
        while True:
            m = rx.search(self.buf)
            if m:
                self.seen, self.buf = self.buf[:m.end()], self.buf[m.end():]
                return m
            left = deadline - time.time()
            if left <= 0 or not self.alive():
                return None
            r, _, _ = select.select([self.c], [], [], min(left, 0.5))
            if r:
                data = self.c.recv(65536)
                if not data:
                    return None
                self.buf += data

    def run(self, cmd: str, timeout: float) -> tuple[int | None, str]:
        """Types `cmd` at the shell and waits for it to finish: (its exit status, its output).
        The end marker is quoted as typed, so the echo of the line never matches it."""
        self.steps += 1
        k = self.steps
        # Type at the prompt, not ahead of it (type-ahead is echoed twice).
        self.expect(rb"%s# " % self.name.encode(), timeout)
        sep = " " if cmd.rstrip().endswith("&") else "; "
        self.c.setblocking(True)
        self.c.sendall(f'{cmd}{sep}echo @@"step"-{k} $?\n'.encode())
        self.c.setblocking(False)
        m = self.expect(rb"@@step-%d (\d+)" % k, timeout)
        text = _ANSI.sub(b"", self.seen if m else self.buf).decode(errors="replace")
        # Drop the echo of the typed line (up to the quoted marker) and the marker itself.
        text = text.split(f'@@"step"-{k} $?\n', 1)[-1]
        text = re.sub(rf"@@step-{k} \d+$", "", text)
        return (int(m.group(1)) if m else None), text


def drive(run: Run, vms: list[VmSpec], steps: list[str], alive, timeout: float) -> int:
    """Waits for each VM's shell (its banner) and types `steps` into them in order, printing
    each command and its output: a line `vmN# command` goes to VM N, any other line to vm0.
    Then leaves every shell (`exit` powers the VM off). 0 when every step finished in time."""
    cons = {vm.name: Console(vm.name, run.dir / f"{vm.name}.console.sock", alive) for vm in vms}
    for con in cons.values():
        if not con.expect(rb"cx4 shell on [^\n]*\n(?:[^\n]*\n)*?[^\n]*leave:[^\n]*\n", timeout):
            print(f"[{con.name}: no shell within {timeout:.0f} s]\n"
                  + _ANSI.sub(b"", con.buf[-3000:]).decode(errors="replace"), flush=True)
            return 1
        print(_ANSI.sub(b"", con.seen[con.seen.index(b"cx4 shell on"):]).decode(errors="replace"),
              flush=True)
    for step in steps:
        m = re.match(r"(vm\d+)# (.*)", step)
        name, cmd = (m.group(1), m.group(2)) if m else ("vm0", step)
        status, out = cons[name].run(cmd, timeout)
        print(f"{name}# {cmd}\n{out.rstrip()}\n[{name}: " + (f"exit {status}]" if status is not None
              else f"no end within {timeout:.0f} s]"), flush=True)
        if status is None:
            return 1
    for con in cons.values():
        con.c.sendall(b"exit\n")
    return 0


# The modelled card `make shell` gives each VM: Ethernet and RoCE on (as tests/model_roce.py
# runs it); the shell also puts the card's port on the run's segment (VmSpec.wire).
SHELL_MODEL_ARGS = ["--roce"]

SHELL_JOB = r"""
cols=COLS; rows=ROWS; vms=@VMS@
n=$(hostname | tr -dc 0-9); ip4=10.99.0.$((n + 1))
# The address each VM gets on the segment is fixed (10.99.0.N+1, as the tests give them);
# gidx finds the RoCE v2 GID the card derived from it, the index ibv_*_pingpong -g wants.
cat > /tmp/cx4rc <<RC
PS1='\h# '
ip4=$ip4; gid4=ffff:0a63:$(printf %04x $((n + 1)))
RC
cat >> /tmp/cx4rc <<'RC'
# gidx [DEVICE]: the RoCE v2 GID index of this VM's IPv4 address on DEVICE (cx4_0).
gidx() {
    d=/sys/class/infiniband/${1:-cx4_0}/ports/1
    for f in $d/gids/*; do
        i=${f##*/}
        grep -qi "$gid4" $f 2>/dev/null && grep -q "RoCE v2" $d/gid_attrs/types/$i 2>/dev/null &&
            { echo $i; return 0; }
    done
    echo "gidx: no RoCE v2 GID of $ip4 on ${1:-cx4_0} (is eth0 up with $ip4?)" >&2; return 1
}
RC
cat > /tmp/motd <<MOTD

cx4 shell on $(hostname): kernel $(uname -r)
  modelled card:  $(lspci -nn -d 15b3: | head -1)
                  Ethernet and RoCE on; its port on the run's segment (the host: 10.99.0.254)
  driver:         insmod /cx4/cx4.ko   (upstream: modprobe mlx5_ib, devices eth0 and mlx5_0)
  then:           ip link set eth0 up; ip addr add $ip4/24 dev eth0
  expect:         ip -br link: eth0 UP, <...,LOWER_UP>;  rdma link: cx4_0/1 state ACTIVE
                  ibv_devinfo -d cx4_0: PORT_ACTIVE, link_layer Ethernet
MOTD
if [ "$vms" -gt 1 ]; then cat >> /tmp/motd <<MOTD
  between VMs:    vmN is 10.99.0.N+1 (load the driver and give the address on each, as above)
    vm0# ping -c 3 10.99.0.2
    vm1# ibv_rc_pingpong -d cx4_0 -g \$(gidx)             (server: start it first)
    vm0# ibv_rc_pingpong -d cx4_0 -g \$(gidx) 10.99.0.2   (client)
MOTD
else cat >> /tmp/motd <<MOTD
  try:            ping -c 3 10.99.0.254   (VMS=2: a second VM on the segment, RDMA between them)
MOTD
fi
cat >> /tmp/motd <<MOTD
  tools:          ip, ethtool, devlink, rdma, ibv_devinfo, ib_write_bw, iperf3, tcpdump
  debugfs:        /sys/kernel/debug/cx4/
  leave:          exit (powers the VM off)
MOTD
for f in /cx4/*.ko; do [ -e "$f" ] || rm -f /tmp/motd; done
export HOME=/tmp TERM=${TERM:-vt100}
dmesg -n 4   # kernel messages to the console only from warnings up; `dmesg` shows them all
exec setsid -w -c sh -c "stty rows $rows cols $cols; cat /tmp/motd; exec bash --rcfile /tmp/cx4rc -i" \
    </dev/ttyS0 >/dev/ttyS0 2>&1
"""


def sweep_stale() -> None:
    """Removes network namespaces and run directories of runners that no longer exist."""
    try:
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        names = ""
    for line in names.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(NETNS_PREFIX):
            pid = name[len(NETNS_PREFIX):].split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                subprocess.run(["ip", "netns", "del", name], stderr=subprocess.DEVNULL)


def _install_signal_cleanup(run: Run) -> None:
    def handler(signum, _frame):
        run.close()
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kdir", required=True, type=Path, help="built test kernel tree")
    ap.add_argument("--tree", required=True, type=Path, help="guest tree (root fs, holds QEMU)")
    ap.add_argument("--model", type=Path, help="cx4-model binary")
    ap.add_argument("--no-model", action="store_true", help="boot without the modelled card")
    ap.add_argument("--model-arg", action="append", default=[], help="extra model argument")
    ap.add_argument("--script", type=Path, help="guest script (run as /cx4/job.sh)")
    ap.add_argument("--file", action="append", default=[], type=Path, help="file to put in /cx4")
    ap.add_argument("--vms", type=int, default=1, help="number of VMs")
    ap.add_argument("--net", action="store_true", help="join the VMs on one L2 segment")
    ap.add_argument("--wire", action="store_true",
                    help="put the modelled cards' ports on the segment (TAP per card, --eth)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--kvm", action="store_true", help="use KVM (nested KVM is very slow here)")
    ap.add_argument("--keep", action="store_true", help="keep the run directory")
    ap.add_argument("--mem", type=int, default=1024, help="guest RAM in MiB")
    ap.add_argument("--shell", action="store_true",
                    help="interactive: a shell on each VM's console (vm0 on this terminal), the "
                         "modelled card with Ethernet and RoCE, its port on the segment")
    ap.add_argument("--drive", type=Path, metavar="STEPS",
                    help="with --shell: type STEPS' lines into the shells instead of relaying "
                         "this terminal (`vmN# command` for VM N), print what they answer")
    ap.add_argument("--attach", type=Path, metavar="SOCK",
                    help="attach this terminal to a running VM's console socket")
    args = ap.parse_args(argv)
    if args.attach:
        attach(args.attach, f"[console {args.attach}; Ctrl-] detaches]")
        return 0
    if not args.shell and not args.script:
        ap.error("--script is required (or --shell)")
    if args.drive and not args.shell:
        ap.error("--drive drives the shells of --shell")
    if args.shell and args.net:
        ap.error("--shell puts the cards' ports on one segment; --net would add a second NIC")
    sweep_stale()
    model_args = (SHELL_MODEL_ARGS if args.shell else []) + list(args.model_arg)
    vms = [VmSpec(name=f"vm{i}", model=not args.no_model, model_args=list(model_args),
                  mem_mb=args.mem, mac=f"52:54:00:c4:00:{i + 1:02x}" if args.net else None,
                  wire=args.wire or (args.shell and not args.no_model), interactive=args.shell)
           for i in range(args.vms)]
    with Run(args.kdir, args.tree, args.model, vms, net=args.net, kvm=args.kvm, keep=args.keep) as run:
        _install_signal_cleanup(run)
        if args.shell:
            # Driven, the lines are as long as the commands typed (no wrapped echo).
            size = os.terminal_size((500, 50)) if args.drive else shutil.get_terminal_size((80, 24))
            job = run.dir / "job.sh"
            job.write_text(SHELL_JOB.replace("COLS", str(size.columns)).replace("ROWS", str(size.lines))
                           .replace("@VMS@", str(len(vms))))
            run.put(job, "job.sh")
        else:
            run.put(args.script, "job.sh")
        for f in args.file:
            run.put(f)
        if args.shell:
            import threading
            box: list[list[VmResult]] = []
            t = threading.Thread(target=lambda: box.append(run.boot(timeout=args.timeout)),
                                 daemon=True)
            t.start()
            if args.drive:
                steps = [l for l in args.drive.read_text().splitlines() if l.strip()]
                rc = drive(run, vms, steps, t.is_alive, timeout=min(args.timeout, 300))
                t.join(60)
                return rc
            others = "".join(f"\r\n  {vm.name}: python3 {Path(__file__).relative_to(Path.cwd()) if Path(__file__).is_relative_to(Path.cwd()) else __file__} "
                             f"--attach {run.dir}/{vm.name}.console.sock" for vm in vms[1:])
            attach(run.dir / "vm0.console.sock",
                   f"[cx4 shell: vm0 on this terminal; Ctrl-] leaves (the VMs stop with it)"
                   + (f"; other consoles:{others}" if others else "") + "]")
            if t.is_alive():
                run._kill_all()
            t.join(10)
            return 0
        results = run.boot(timeout=args.timeout)
        rc = 0
        for r in results:
            print(f"===== {r.name}: status {r.status}, {r.seconds:.1f} s =====")
            print(r.job_log, end="")
            if r.model_log:
                print(f"----- {r.name} model log -----")
                print(r.model_log, end="")
            if r.status is None:
                print(f"----- {r.name} console -----")
                print(r.console[-6000:], end="")
            if r.status != 0:
                rc = 1
        if args.keep:
            print(f"run directory kept: {run.dir}")
        return rc


if __name__ == "__main__":
    sys.exit(main())
