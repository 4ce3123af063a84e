#!/bin/bash
# Fetch, configure and build the pinned cx4 test kernel, cached outside the checkout.
# Prints the build directory (usable as KDIR for out-of-tree modules) on stdout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bash "$CX4_ROOT/tools/testbed/host-deps.sh"

# Bump when the way the kernel is built changes.
KERNEL_BUILD_REV=1
key=$( { echo "$KERNEL_PKG_VERSION rev$KERNEL_BUILD_REV"; cat "$CX4_ROOT/tools/testbed/kernel.config";
         $RUSTC --version; "$BINDGEN" --version; gcc --version | head -1; } | sha256sum | cut -c1-16)
src="$CX4_CACHE/kernel/src-$KERNEL_PKG_VERSION"
out="$CX4_CACHE/kernel/build-$key"

if [ -e "$out/.cx4-done" ]; then
    echo "$out"
    exit 0
fi

if [ ! -e "$src/.cx4-extracted" ]; then
    step "kernel source: linux-source-7.2=$KERNEL_PKG_VERSION"
    deb="$CX4_CACHE/kernel/linux-source-7.2_${KERNEL_PKG_VERSION/:/%3a}_all.deb"
    if [ ! -e "$deb" ]; then
        ( cd "$CX4_CACHE/kernel" && apt-get download -q "linux-source-7.2=$KERNEL_PKG_VERSION" >&2 )
    fi
    tmp="$CX4_CACHE/kernel/x.$$"
    rm -rf "$tmp" "$src"; mkdir -p "$tmp" "$src"
    dpkg-deb -x "$deb" "$tmp"
    info "unpacking"
    tar -xJf "$tmp"/usr/src/linux-source-7.2.tar.xz -C "$src" --strip-components=1
    rm -rf "$tmp"
    touch "$src/.cx4-extracted"
fi

step "kernel build ($out)"
mkdir -p "$out"
kmake() {
    make -C "$src" O="$out" LLVM= RUSTC="$RUSTC" BINDGEN="$BINDGEN" \
         HOSTRUSTC="$RUSTC" "$@"
}
kmake -s x86_64_defconfig >&2
kmake -s kvm_guest.config >&2
( cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
      "$CX4_ROOT/tools/testbed/kernel.config" >/dev/null )
kmake -s olddefconfig >&2
kmake -s rustavailable >&2 || die "the Rust toolchain is not usable for the kernel"
# Every line of the fragment must have survived olddefconfig.
missing=0
while IFS= read -r line; do
    case "$line" in CONFIG_*=*) ;; *) continue ;; esac
    opt=${line%%=*}; val=${line#*=}
    if [ "$val" = n ]; then
        grep -q "^$opt=" "$out/.config" && { info "config: $opt should be off"; missing=1; }
    else
        grep -qx "$line" "$out/.config" || { info "config: $line did not stick"; missing=1; }
    fi
done < "$CX4_ROOT/tools/testbed/kernel.config"
[ $missing = 0 ] || die "kernel config fragment not applied"

jobs=$(( $(nproc) + 1 ))
info "make -j$jobs bzImage modules (~17 min on 2 cores); log: $out/build.log"
t0=$(date +%s)
( while sleep 60; do
      n=$(find "$out" -name '*.o' 2>/dev/null | wc -l)
      info "kernel build: $(( ($(date +%s) - t0) / 60 )) min, $n objects"
  done ) &
progress=$!
trap 'kill $progress 2>/dev/null || true' EXIT
if ! kmake -j"$jobs" bzImage modules > "$out/build.log" 2>&1; then
    tail -40 "$out/build.log" >&2
    die "kernel build failed (log: $out/build.log)"
fi
kill $progress 2>/dev/null || true
info "kernel built in $(( $(date +%s) - t0 )) s"
touch "$out/.cx4-done"
echo "$out"
