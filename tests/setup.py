"""Set-up from nothing: the test-bed scripts against an empty `CX4_CACHE` (issue 7).

The scripts run in check mode (`CX4_SETUP_CHECK=1`): every stage up to, but not including, the
kernel compile and debootstrap runs for real against a cache directory that does not exist yet
(apt prerequisites and their checks, bindgen-cli install, the kernel .deb download and SHA256
check, unpack, configure with the Rust check, the cache key, the guest package resolution).
Then each stage is left broken the way an interrupted run leaves it, and the next run must
notice, clean that stage and redo it.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness import Env, soak

KVER = "7.2.12-1~bpo13+1"


class Cache:
    """A scratch `CX4_CACHE` below a fresh temporary directory (the cache itself not created)."""

    def __init__(self) -> None:
        self.top = Path(tempfile.mkdtemp(prefix="cx4-setup-test-"))
        self.path = self.top / "no" / "such" / "cache"

    def run(self, env: Env, script: str, *args: str, flavour: str = "default",
            timeout: float = 900) -> tuple[int, str, str]:
        e = dict(os.environ, CX4_CACHE=str(self.path), CX4_SETUP_CHECK="1",
                 CX4_KERNEL_FLAVOUR=flavour)
        r = subprocess.run(["bash", str(env.root / "tools/testbed" / script), *args], env=e,
                           text=True, capture_output=True, timeout=timeout)
        return r.returncode, r.stdout.strip(), r.stderr

    def close(self) -> None:
        shutil.rmtree(self.top, ignore_errors=True)


def tests(env: Env):
    state: dict[str, object] = {}
    atexit.register(lambda: state["cache"].close() if "cache" in state else None)  # type: ignore[union-attr]

    def cache() -> Cache:
        if "cache" not in state:
            state["cache"] = Cache()
        return state["cache"]  # type: ignore[return-value]

    def kernel_check(flavour: str = "default") -> tuple[Path, str]:
        rc, out, err = cache().run(env, "kernel.sh", flavour=flavour)
        assert rc == 0, f"kernel.sh (check mode, {flavour}) failed with {rc}:\n{err[-3000:]}"
        kdir = Path(out.splitlines()[-1])
        return kdir, err

    def fresh_cache_kernel_stage():
        c = cache()
        assert not c.path.exists()
        # The one seeded piece: bindgen-cli, which `cargo install` compiles for 2-5 min. The
        # seed is the main cache's binary, so host-deps.sh still runs its version check on it;
        # its install path runs on every cold machine (CI's first run).
        seed = Path(os.environ.get("CX4_CACHE", "/var/cache/cx4")) / "cargo/bin/bindgen"
        if seed.exists():
            (c.path / "cargo/bin").mkdir(parents=True)
            shutil.copy2(seed, c.path / "cargo/bin/bindgen")
        kdir, err = kernel_check()
        assert kdir.parent == c.path / "kernel", kdir
        assert re.fullmatch(r"build-default-[0-9a-f]{16}", kdir.name), kdir.name
        assert (c.path / "stamps").is_dir() and list((c.path / "stamps").glob("host-deps-*")), \
            "host-deps left no stamp"
        assert (c.path / "cargo/bin/bindgen").exists(), "bindgen-cli not installed in the cache"
        src = c.path / f"kernel/src-{KVER}"
        assert (src / ".cx4-extracted").exists() and (src / "Makefile").exists(), err[-2000:]
        deb = next((c.path / "kernel").glob("linux-source-7.2_*_all.deb"))
        assert deb.stat().st_size > 100 << 20, f"{deb} is {deb.stat().st_size} bytes"
        cfg = (kdir / ".config").read_text()
        for opt in ("CONFIG_RUST=y", "CONFIG_MLX5_CORE=m", "CONFIG_NET_IPGRE=m"):
            assert opt in cfg, f"{opt} missing from {kdir}/.config"
        assert "LLVM=" in (kdir / ".cx4-make-vars").read_text()
        assert "check mode" in err and not (kdir / ".cx4-done").exists(), err[-2000:]
        assert not list((c.path / "kernel").glob("x.*")) and \
            not list((c.path / "kernel").glob("download.*")), "temporary directories left"
        state["kdir"] = kdir

    def fresh_cache_guest_stage():
        kdir = state.get("kdir")
        assert kdir, "needs the kernel stage"
        rc, out, err = cache().run(env, "guest.sh", str(kdir))
        assert rc == 0, f"guest.sh (check mode) failed with {rc}:\n{err[-3000:]}"
        tree = Path(out.splitlines()[-1])
        assert tree.parent == cache().path / "guest" and tree.parent.is_dir(), tree
        assert re.search(r"guest packages resolve \(\d+ debs\), QEMU in trixie-backports", err), err
        state["tree"] = tree

    def debug_flavour_has_its_own_key_and_options():
        kdir, err = kernel_check("debug")
        assert kdir != state.get("kdir") and kdir.name.startswith("build-debug-"), kdir
        cfg = (kdir / ".config").read_text()
        for opt in ("CONFIG_KASAN=y", "CONFIG_PROVE_LOCKING=y", "CONFIG_DEBUG_ATOMIC_SLEEP=y",
                    "CONFIG_DEBUG_OBJECTS=y", "CONFIG_DEBUG_KMEMLEAK=y", "CONFIG_RUST=y",
                    "CONFIG_CC_IS_CLANG=y"):
            assert opt in cfg, f"{opt} missing from the debug flavour's .config"
        assert "CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF" not in cfg.replace(
            "# CONFIG_DEBUG_KMEMLEAK_DEFAULT_OFF is not set", ""), "kmemleak must default on"
        assert "LLVM=-19" in (kdir / ".cx4-make-vars").read_text()

    # make soak: it unpacks the whole kernel source again (~80 s, before any VM test runs);
    # the empty-cache check-mode test keeps the set-up's path covered in make test.
    @soak
    def truncated_deb_and_half_unpacked_source_are_redone():
        # What a run killed during download and unpack leaves: a short .deb, a source tree
        # without its stamp and with directories missing.
        c = cache()
        deb = next((c.path / "kernel").glob("linux-source-7.2_*_all.deb"))
        size = deb.stat().st_size
        with open(deb, "r+b") as f:
            f.truncate(size // 3)
        src = c.path / f"kernel/src-{KVER}"
        (src / ".cx4-extracted").unlink()
        shutil.rmtree(src / "drivers")
        _, err = kernel_check()
        assert "truncated or corrupt" in err, err[-2000:]
        assert deb.stat().st_size == size, "the .deb was not downloaded again"
        assert "removing the incomplete source tree" in err, err[-2000:]
        assert (src / "drivers/net/ethernet/mellanox/mlx5/core/main.c").exists()

    def interrupted_kernel_build_is_restarted():
        kdir = state.get("kdir")
        assert kdir, "needs the kernel stage"
        # What a killed `make` leaves: objects, no completion stamp.
        (kdir / "kernel").mkdir(exist_ok=True)
        (kdir / "kernel/fork.o").write_bytes(b"\x7fELF half-written")
        _, err = kernel_check()
        assert "removing the interrupted build" in err, err[-2000:]
        assert not (kdir / "kernel/fork.o").exists(), "a half-written object survived"

    def half_written_guest_tree_is_removed():
        tree = state.get("tree")
        assert tree, "needs the guest stage"
        (tree / "usr/bin").mkdir(parents=True)
        (tree / "usr/bin/half").write_text("x")
        rc, _, err = cache().run(env, "guest.sh", str(state["kdir"]))
        assert rc == 0, err[-2000:]
        assert "removing the half-written guest tree" in err and not tree.exists(), err[-2000:]

    yield "empty CX4_CACHE: prerequisites, .deb, unpack, configure, key (check mode)", \
        fresh_cache_kernel_stage
    yield "empty CX4_CACHE: guest packages and QEMU resolve (check mode)", fresh_cache_guest_stage
    yield "debug flavour: own cache key, KASAN/lockdep/debug objects/kmemleak, clang", \
        debug_flavour_has_its_own_key_and_options
    yield "a truncated kernel .deb and a half-unpacked source are fetched and unpacked again", \
        truncated_deb_and_half_unpacked_source_are_redone
    yield "an interrupted kernel build is cleaned and restarted", interrupted_kernel_build_is_restarted
    yield "a half-written guest tree is removed and rebuilt", half_written_guest_tree_is_removed
