#!/bin/bash
# Host prerequisites of the benchmarks beyond the test bed's (tools/testbed/host-deps.sh):
# Debian's matplotlib, for report.py's plots (Debian's python3, /usr/bin/python3, imports it).
# Installs only what is missing.
set -euo pipefail
. "$(dirname "$0")/../testbed/lib.sh"

if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    step "bench prerequisites: apt-get install python3-matplotlib"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null || {
        info "apt-get update"
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
    }
fi
