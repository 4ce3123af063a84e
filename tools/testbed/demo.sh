#!/bin/bash
# The main job: build whatever is missing, boot a VM with the modelled ConnectX-4,
# load cx4.ko and show what the driver logged; then two VMs, cx4 in one and NVIDIA's mlx5
# drivers in the other, pass traffic: ping and iperf3 over cx4's netdev, and unmodified
# rdma-core's rping through rdma_cm over cx4's RDMA device. Prints how long each stage took.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

declare -a stages=()
timed() {
    local name=$1; shift
    local t0; t0=$(date +%s)
    "$@"
    stages+=("$(printf '%-28s %5d s' "$name" $(( $(date +%s) - t0 )))")
}

timed "host prerequisites" bash "$CX4_ROOT/tools/testbed/host-deps.sh"
timed "test kernel" bash -c "bash '$CX4_ROOT/tools/testbed/kernel.sh' > '$CX4_CACHE/.kdir'"
kdir=$(cat "$CX4_CACHE/.kdir")
timed "guest tree" bash -c "bash '$CX4_ROOT/tools/testbed/guest.sh' '$kdir' > '$CX4_CACHE/.tree'"
tree=$(cat "$CX4_CACHE/.tree")
step "device model (cargo build --release)"
timed "device model" cargo build --release --locked --quiet -p cx4-model \
    --manifest-path "$CX4_ROOT/Cargo.toml"
step "cx4.ko (out-of-tree build)"
timed "cx4.ko" bash "$CX4_ROOT/tools/testbed/module.sh" "$kdir" CX4_TEST_HOOKS=y >/dev/null

job=$(mktemp)
trap 'rm -f "$job"' EXIT
cat > "$job" <<'JOB'
echo "--- lspci -nn -vv (the modelled card)"
lspci -nn -d 15b3: -vv | grep -E '15b3|Region 0|MSI-X|Express' | sed 's/^/    /'
echo "--- insmod cx4.ko"
insmod /cx4/cx4.ko || exit 1
sleep 0.5
echo "--- dmesg (cx4)"
dmesg | grep -E ' cx4[ :]' | sed 's/^/    /'
echo "--- rmmod cx4"
rmmod cx4
dmesg | grep -q 'firmware version' || exit 2
JOB
step "boot a VM with the modelled ConnectX-4 and load cx4.ko"
t0=$(date +%s)
rc=0
out=$(mktemp)
trap 'rm -f "$job" "$out"' EXIT
python3 "$CX4_ROOT/tools/testbed/vmrun.py" --kdir "$kdir" --tree "$tree" \
    --model "$CX4_ROOT/target/release/cx4-model" --script "$job" \
    --file "$CX4_ROOT/cx4.ko" --timeout 180 | tee "$out" || rc=$?
stages+=("$(printf '%-28s %5d s' "VM run" $(( $(date +%s) - t0 )))")
printf '\n==> stage times\n'
printf '    %s\n' "${stages[@]}"
line=$(grep -m1 'firmware version' "$out" | sed 's/^ *//')
if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "demo FAILED: the driver did not report the firmware version (status $rc)" >&2
    exit 1
fi
printf '\n==> the driver in the guest says:\n%s\n' "$line"

step "two VMs: cx4 in vm0, NVIDIA's mlx5e/mlx5_ib in vm1, one segment (RoCE on)"
t0=$(date +%s)
traffic=$(python3 "$CX4_ROOT/tools/testbed/demo_traffic.py" "$kdir" "$tree" \
    "$CX4_ROOT/target/release/cx4-model" "$CX4_ROOT/cx4.ko") || {
    echo "demo FAILED: cx4 did not pass traffic (netdev or rping) to the second VM" >&2
    exit 1
}
printf '    (%d s)\n\n==> %s\n' $(( $(date +%s) - t0 )) "$traffic"
