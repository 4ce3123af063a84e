# Shared settings of the cx4 test bed; sourced by the scripts beside it.
# Every pinned version lives here, in one place.

CX4_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Heavy artefacts live outside the checkout, keyed by their inputs.
CX4_CACHE="${CX4_CACHE:-/var/cache/cx4}"

KERNEL_PKG_VERSION="7.2.12-1~bpo13+1"   # linux-source-7.2, trixie-backports
BINDGEN_VERSION="0.73.2"
GUEST_SUITE="trixie"

RUSTC=/usr/bin/rustc
BINDGEN="$CX4_CACHE/cargo/bin/bindgen"
LIBCLANG_PATH=/usr/lib/llvm-19/lib
export LIBCLANG_PATH

_t0=$(date +%s)
step() { printf '\n==> [%s] %s\n' "$(date +%T)" "$*" >&2; }
info() { printf '    %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }
BITFLAGS_VERSION="2.13.2"      # must match Cargo.toml [workspace.dependencies]
