#!/bin/bash
# Build the cached guest tree: Debian trixie with rdma-core tools and QEMU 11 (for the host side,
# run through chroot), plus the test kernel's modules. Prints the tree's path on stdout.
# Usage: guest.sh KDIR
#
#   CX4_SETUP_CHECK=1   prove the preconditions (cache directories, a half-written tree removed,
#                       the mirror resolves the package set, QEMU with vfio-user available in
#                       trixie-backports) without running debootstrap or installing modules.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kdir=${1:?usage: guest.sh KDIR}

bash "$CX4_ROOT/tools/testbed/host-deps.sh"

# nvme-cli: NVMe over Fabrics (nvme-rdma); mdadm: md RAID-6 over the EC offload; ucx-utils,
# openmpi-bin, python3-mpi4py: UCX perftest and an MPI all-reduce over the RDMA devices;
# dpdk, dpdk-dev (it holds dpdk-testpmd), librte-net-mlx5-25, librte-mempool-ring25: testpmd
# over the mlx5 PMD (raw packet QPs); opensm, infiniband-diags: the IB link layer; linuxptp:
# PTP between PHCs; socat, bpftool: XDP and AF_XDP tests; python3-yaml: the kernel's ynl
# (copied from the kernel source with the modules, below: `ynl --family netdev --dump
# qstats-get`); nfs-kernel-server, nfs-common: NFS over RDMA.
GUEST_PACKAGES=kmod,iproute2,tcpdump,ibverbs-utils,ibverbs-providers,rdmacm-utils,perftest,rdma-core,ethtool,iputils-ping,procps,pciutils,iperf3,python3,python3-pyverbs,util-linux,nvme-cli,ucx-utils,openmpi-bin,python3-mpi4py,mdadm,dpdk,dpdk-dev,librte-net-mlx5-25,librte-mempool-ring25,opensm,infiniband-diags,linuxptp,socat,bpftool,python3-yaml,nfs-kernel-server,nfs-common
GUEST_BUILD_REV=1
key=$(echo "$GUEST_SUITE $GUEST_PACKAGES rev$GUEST_BUILD_REV" | sha256sum | cut -c1-16)
tree="$CX4_CACHE/guest/trixie-$key"
mkdir -p "$CX4_CACHE/guest"
exec 9>"$CX4_CACHE/guest/.lock"
if ! flock -n 9; then
    info "another guest.sh holds $CX4_CACHE/guest/.lock; waiting for it"
    flock 9
fi
for t in debootstrap chroot make depmod; do
    command -v "$t" >/dev/null || [ -x "/sbin/$t" ] || die "guest tree needs '$t'"
done

if [ -n "${CX4_SETUP_CHECK:-}" ]; then
    if [ -e "$tree" ] && [ ! -e "$tree/.cx4-done" ]; then
        info "removing the half-written guest tree $tree"
        rm -rf "$tree"
    fi
    probe="$CX4_CACHE/guest/probe.$$"
    rm -rf "$probe"; mkdir -p "$probe"
    debs=$(debootstrap --variant=minbase --include="$GUEST_PACKAGES" --print-debs \
               "$GUEST_SUITE" "$probe" http://deb.debian.org/debian 2>"$probe.log") \
        || { tail -5 "$probe.log" >&2; rm -rf "$probe" "$probe.log"; die "debootstrap cannot resolve the guest packages"; }
    rm -rf "$probe" "$probe.log"
    for p in ${GUEST_PACKAGES//,/ }; do
        grep -qw -- "$p" <<<"$debs" || die "guest package $p not resolved by debootstrap"
    done
    # (No `grep -q` on a pipe: its early exit would fail the pipeline under pipefail.)
    qemu=$(apt-cache madison qemu-system-x86)
    grep -q "${GUEST_SUITE}-backports" <<<"$qemu" \
        || die "qemu-system-x86 not available from ${GUEST_SUITE}-backports"
    info "check mode: guest packages resolve ($(wc -w <<<"$debs") debs), QEMU in ${GUEST_SUITE}-backports"
    echo "$tree"
    exit 0
fi

if [ ! -e "$tree/.cx4-done" ]; then
    step "guest tree: debootstrap $GUEST_SUITE ($tree)"
    [ -e "$tree" ] && info "removing the half-written guest tree $tree"
    rm -rf "$tree"
    t0=$(date +%s)
    debootstrap --variant=minbase --include="$GUEST_PACKAGES" "$GUEST_SUITE" "$tree" \
        http://deb.debian.org/debian > "$tree.log" 2>&1 || { tail -20 "$tree.log" >&2; die "debootstrap failed"; }
    info "debootstrap took $(( $(date +%s) - t0 )) s"
    step "guest tree: QEMU from ${GUEST_SUITE}-backports"
    echo "deb http://deb.debian.org/debian ${GUEST_SUITE}-backports main" \
        > "$tree/etc/apt/sources.list.d/backports.list"
    chroot "$tree" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive chroot "$tree" apt-get install -y -qq \
        -t "${GUEST_SUITE}-backports" --no-install-recommends qemu-system-x86 >/dev/null
    devices=$(chroot "$tree" qemu-system-x86_64 -device help 2>/dev/null)
    grep -q vfio-user-pci <<<"$devices" \
        || die "QEMU in the guest tree has no vfio-user-pci"
    chroot "$tree" apt-get clean
    mkdir -p "$tree/cx4"   # mount point for the project share
    touch "$tree/.cx4-done"
fi

# The test kernel's modules, installed and depmod'ed inside the tree.
krel=$(cat "$kdir/include/config/kernel.release")
if [ ! -e "$tree/lib/modules/$krel/.cx4-$(basename "$kdir")" ]; then
    step "guest tree: modules of $krel"
    rm -rf "$tree/lib/modules/$krel"
    make -s -C "$kdir" INSTALL_MOD_PATH="$tree" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod \
        modules_install >&2
    # ynl (tools/net/ynl: the netlink families' YAML specs and their CLI) is not packaged by
    # Debian: take it from the same kernel source, so the specs match the kernel.
    ksrc=$(readlink -f "$kdir/source")
    ynl="$tree/usr/local/share/ynl"
    rm -rf "$ynl"
    mkdir -p "$ynl/tools/net/ynl" "$ynl/Documentation" "$tree/usr/local/bin"
    cp -r "$ksrc/tools/net/ynl/pyynl" "$ynl/tools/net/ynl/"
    cp -r "$ksrc/Documentation/netlink" "$ynl/Documentation/"
    printf '#!/bin/sh\nexec python3 /usr/local/share/ynl/tools/net/ynl/pyynl/cli.py --no-schema "$@"\n' \
        > "$tree/usr/local/bin/ynl"
    chmod +x "$tree/usr/local/bin/ynl"
    touch "$tree/lib/modules/$krel/.cx4-$(basename "$kdir")"
fi
echo "$tree"
