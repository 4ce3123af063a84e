#!/bin/bash
# Fetch, configure and build the pinned cx4 test kernel, cached outside the checkout.
# Prints the build directory (usable as KDIR for out-of-tree modules) on stdout.
#
#   CX4_KERNEL_FLAVOUR=debug   the debug flavour (kernel-debug.config on top; own cache key)
#   CX4_SETUP_CHECK=1          stop after fetch/verify/unpack/configure: prove every
#                              precondition of the build without compiling (tests/setup.py)
#
# Every stage leaves a stamp only when it is complete; a stage found without its stamp (a killed
# build, a truncated download, a half-unpacked tree) is removed and redone, never reused.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${CX4_KERNEL_FLAVOUR:-default}
case "$flavour" in
    default) fragments=("$CX4_ROOT/tools/testbed/kernel.config"); llvm= ;;
    debug)   fragments=("$CX4_ROOT/tools/testbed/kernel.config"
                        "$CX4_ROOT/tools/testbed/kernel-debug.config"); llvm=-19 ;;
    *) die "unknown kernel flavour '$flavour' (default, debug)" ;;
esac

bash "$CX4_ROOT/tools/testbed/host-deps.sh"
tools=(gcc make flex bison bc dpkg-deb apt-get tar xz sha256sum "$RUSTC" "$BINDGEN")
[ -n "$llvm" ] && tools+=("clang$llvm" "ld.lld$llvm" "llvm-ar$llvm")
for t in "${tools[@]}"; do
    command -v "$t" >/dev/null || die "kernel build needs '$t' (host-deps.sh should have installed it)"
done

# Read the fragments once: the cache key, the merge and the check below must all see the same
# text, even if a checkout's fragment is edited (or switched by git) while this build runs.
frag_dir=$(mktemp -d)
trap 'rm -rf "$frag_dir"' EXIT
snap=()
for i in "${!fragments[@]}"; do
    cp "${fragments[$i]}" "$frag_dir/$i.config"
    snap+=("$frag_dir/$i.config")
done
fragments=("${snap[@]}")

# Bump when the way the kernel is built changes.
KERNEL_BUILD_REV=2
key=$( { echo "$KERNEL_PKG_VERSION rev$KERNEL_BUILD_REV $flavour"; cat "${fragments[@]}";
         $RUSTC --version; "$BINDGEN" --version; gcc --version | head -1; } | sha256sum | cut -c1-16)
kcache="$CX4_CACHE/kernel"
src="$kcache/src-$KERNEL_PKG_VERSION"
out="$kcache/build-$flavour-$key"
mkdir -p "$kcache"

# A finished build never changes: use it without waiting for anyone.
if [ -e "$out/.cx4-done" ] && [ -z "${CX4_SETUP_CHECK:-}" ]; then
    echo "$out"
    exit 0
fi
# Otherwise one kernel.sh per build directory at a time (another checkout, CI beside a user):
# a second run waits here instead of taking the first one's build for an interrupted one.
# The shared source stage has its own lock; a finished flavour is never blocked by another
# flavour's build.
exec 8>"$out.lock"
if ! flock -n 8; then
    info "another kernel.sh is building $out; waiting for it"
    flock 8
    if [ -e "$out/.cx4-done" ] && [ -z "${CX4_SETUP_CHECK:-}" ]; then
        echo "$out"
        exit 0
    fi
fi
exec 9>"$kcache/.lock-src"
flock 9

# The source package, verified against the SHA256 apt's index records for it.
deb="$kcache/linux-source-7.2_${KERNEL_PKG_VERSION/:/%3a}_all.deb"
want=$(apt-cache show "linux-source-7.2=$KERNEL_PKG_VERSION" 2>/dev/null | awk '/^SHA256:/ && !n++ {print $2}')
[ -n "$want" ] || die "apt does not know linux-source-7.2=$KERNEL_PKG_VERSION (trixie-backports source missing?)"
deb_ok() { [ -s "$deb" ] && [ "$(sha256sum < "$deb" | cut -d' ' -f1)" = "$want" ]; }

if [ ! -e "$src/.cx4-extracted" ]; then
    step "kernel source: linux-source-7.2=$KERNEL_PKG_VERSION"
    if [ -e "$deb" ] && ! deb_ok; then
        info "$(basename "$deb") is truncated or corrupt (SHA256 mismatch): fetching it again"
        rm -f "$deb"
    fi
    if [ ! -e "$deb" ]; then
        part="$kcache/download.$$"
        rm -rf "$part"; mkdir -p "$part"
        ( cd "$part" && apt-get download -q "linux-source-7.2=$KERNEL_PKG_VERSION" >&2 )
        mv "$part"/*.deb "$deb"; rm -rf "$part"
        deb_ok || { rm -f "$deb"; die "downloaded linux-source-7.2 does not match apt's SHA256"; }
    fi
    tmp="$kcache/x.$$"
    [ -e "$src" ] && info "removing the incomplete source tree $src"
    rm -rf "$tmp" "$src"; mkdir -p "$tmp" "$src"
    dpkg-deb -x "$deb" "$tmp"
    info "unpacking"
    tar -xJf "$tmp"/usr/src/linux-source-7.2.tar.xz -C "$src" --strip-components=1
    rm -rf "$tmp"
    touch "$src/.cx4-extracted"
fi

flock -u 9    # the source is complete: other flavours may use it

step "kernel build, $flavour flavour ($out)"
if [ -e "$out" ]; then
    # Without .cx4-done the build was interrupted: objects written by a killed compiler can look
    # newer than their sources, so an incremental make could link them. Start this stage over.
    info "removing the interrupted build $out"
    rm -rf "$out"
fi
mkdir -p "$out"
# The make variables of this build; module.sh builds cx4.ko with the same ones.
makevars=(LLVM="$llvm" RUSTC="$RUSTC" BINDGEN="$BINDGEN" HOSTRUSTC="$RUSTC")
printf '%s\n' "${makevars[@]}" > "$out/.cx4-make-vars"
kmake() {
    make -C "$src" O="$out" "${makevars[@]}" "$@"
}
kmake -s x86_64_defconfig >&2
kmake -s kvm_guest.config >&2
( cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
      "${fragments[@]}" >/dev/null )
kmake -s olddefconfig >&2
kmake -s rustavailable >&2 || die "the Rust toolchain is not usable for the kernel"
# Every option of the fragments (a later fragment overrides an earlier one) must have survived
# olddefconfig.
declare -A want_cfg=()
while IFS= read -r line; do
    case "$line" in CONFIG_*=*) want_cfg[${line%%=*}]=${line#*=} ;; esac
done < <(cat "${fragments[@]}")
missing=0
for opt in "${!want_cfg[@]}"; do
    val=${want_cfg[$opt]}
    if [ "$val" = n ]; then
        grep -q "^$opt=" "$out/.config" && { info "config: $opt should be off"; missing=1; }
    else
        grep -qx "$opt=$val" "$out/.config" || { info "config: $opt=$val did not stick"; missing=1; }
    fi
done
[ $missing = 0 ] || die "kernel config fragment not applied"

if [ -n "${CX4_SETUP_CHECK:-}" ]; then
    info "check mode: source verified, configured, Rust available; not compiling"
    echo "$out"
    exit 0
fi

jobs=$(( $(nproc) + 1 ))
info "make -j$jobs bzImage modules (~17-27 min on 2 cores); log: $out/build.log"
t0=$(date +%s)
( while sleep 60; do
      n=$(find "$out" -name '*.o' 2>/dev/null | wc -l)
      info "kernel build: $(( ($(date +%s) - t0) / 60 )) min, $n objects"
  done ) &
progress=$!
trap 'kill $progress 2>/dev/null || true; rm -rf "$frag_dir"' EXIT
if ! kmake -j"$jobs" bzImage modules > "$out/build.log" 2>&1; then
    tail -40 "$out/build.log" >&2
    die "kernel build failed (log: $out/build.log)"
fi
kill $progress 2>/dev/null || true
info "kernel built in $(( $(date +%s) - t0 )) s"
touch "$out/.cx4-done"
echo "$out"
