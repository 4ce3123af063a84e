#!/bin/bash
# Build cx4.ko out of tree against the cached test kernel.
# Usage: module.sh KDIR [extra make args, e.g. CLIPPY=1]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kdir=${1:?usage: module.sh KDIR [make args]}; shift

# bitflags is compiled into the module from its crates.io sources (the version the workspace
# pins in Cargo.lock); they are copied next to the build, never committed.
bf_src=$(cd "$CX4_ROOT" && cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(next(p["manifest_path"] for p in m["packages"] if p["name"] == "bitflags" and p["version"] == sys.argv[1]))' "$BITFLAGS_VERSION")
bf_dir=$(dirname "$bf_src")/src
dst="$CX4_ROOT/.build/bitflags"
if ! diff -rq "$bf_dir" "$dst" --exclude='bitflags.rs' --exclude='*.o' --exclude='.*' \
        --exclude='*.rmeta' --exclude='*.d' --exclude=lib.rs >/dev/null 2>&1 \
   || [ ! -e "$dst/bitflags.rs" ]; then
    rm -rf "$dst"; mkdir -p "$dst"
    cp -r "$bf_dir"/. "$dst"/
    mv "$dst/lib.rs" "$dst/bitflags.rs"
fi

# The kernel's own make variables (compiler flavour, rustc, bindgen), as kernel.sh recorded them.
mapfile -t makevars < "$kdir/.cx4-make-vars" || die "$kdir is not a kernel.sh build"
make -C "$kdir" M="$CX4_ROOT" "${makevars[@]}" CLIPPY_DRIVER=/usr/bin/clippy-driver \
    "$@" modules >&2
echo "$CX4_ROOT/cx4.ko"
