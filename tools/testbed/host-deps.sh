#!/bin/bash
# Install the host prerequisites of the cx4 test bed on Debian bookworm.
# Idempotent: a stamp keyed by this file's content skips the work on re-runs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mkdir -p "$CX4_CACHE/stamps"
stamp="$CX4_CACHE/stamps/host-deps-$(sha256sum "$0" | cut -c1-16)"
[ -e "$stamp" ] && exit 0

step "host prerequisites (apt sources, packages, bindgen-cli)"
if [ ! -e /etc/apt/sources.list.d/cx4-extra.sources ]; then
    cat > /etc/apt/sources.list.d/cx4-extra.sources <<'SRC'
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm-backports trixie trixie-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    cat > /etc/apt/preferences.d/cx4-extra <<'PIN'
Package: *
Pin: release n=trixie
Pin-Priority: 100

Package: *
Pin: release n=trixie-backports
Pin-Priority: 100
PIN
fi
export DEBIAN_FRONTEND=noninteractive
# An apt run killed half-way leaves dpkg asking for this before it installs anything again.
dpkg --configure -a >/dev/null 2>&1 || true
info "apt-get update"
apt-get update -qq
info "apt-get install (rustc-web, libclang-19, kernel build deps, debootstrap, ...)"
apt-get install -y -qq --no-install-recommends \
    rustc-web rust-web-src rust-web-clippy libclang-19-dev llvm-19 clang-19 lld-19 \
    flex bison bc libelf-dev libssl-dev dwarves cpio kmod xz-utils \
    debootstrap iproute2 iputils-ping psmisc util-linux ca-certificates git >/dev/null
# The erasure-coding references of the model's vector-calc tests (tools/ec-ref): GF-Complete
# and Jerasure (w = 4), ISA-L (w = 8), compiled against with gcc by the test.
info "apt-get install (erasure-coding references: gf-complete, jerasure, isa-l)"
apt-get install -y -qq --no-install-recommends \
    gcc libc6-dev libgf-complete-dev libjerasure-dev libisal-dev >/dev/null
# The erasure-coding user library (tools/cx4ec) builds on the host against bookworm's
# rdma-core 44 headers (mlx5dv_wr_raw_wqe since v36) and runs in the guest on its 56.1.
info "apt-get install (rdma-core headers for tools/cx4ec: libibverbs-dev)"
apt-get install -y -qq --no-install-recommends libibverbs-dev >/dev/null

# Host crates (schema, model) build with the machine's cargo; a machine without one gets
# Debian's, which matches the kernel's rustc-web 1.96.
if ! command -v cargo >/dev/null; then
    info "no cargo on PATH: apt-get install cargo-web rustfmt-web"
    apt-get install -y -qq --no-install-recommends cargo-web rustfmt-web >/dev/null
fi

have=$("$BINDGEN" --version 2>/dev/null || true)
if [[ "$have" != *"$BINDGEN_VERSION"* ]]; then
    info "cargo install bindgen-cli $BINDGEN_VERSION (~2 min)"
    LIBCLANG_PATH=/usr/lib/llvm-19/lib cargo install --locked --quiet --force \
        --root "$CX4_CACHE/cargo" bindgen-cli --version "$BINDGEN_VERSION"
fi
for t in "$RUSTC" /usr/bin/clippy-driver "$BINDGEN" debootstrap gcc make flex bison bc \
         dpkg-deb cpio unshare ip ping; do
    command -v "$t" >/dev/null || die "host prerequisite '$t' missing after installation"
done
for h in /usr/include/gf_complete.h /usr/include/jerasure.h /usr/include/isa-l/erasure_code.h \
         /usr/include/infiniband/mlx5dv.h; do
    [ -e "$h" ] || die "host prerequisite header $h missing after installation"
done
[ -e "$LIBCLANG_PATH/libclang.so" ] || ls "$LIBCLANG_PATH"/libclang*.so* >/dev/null 2>&1 \
    || die "libclang not found in $LIBCLANG_PATH"
touch "$stamp"
