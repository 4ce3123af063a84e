#!/usr/bin/env python3
"""Lists the project's non-test source files longer than the limit (1000 lines by default):
one concept per file, as nova-core keeps it. Test files (`tests/`, `*_tests.rs`, `tests.rs`)
are left out: a table of cases may be long.

    python3 tools/lint/sizes.py [LIMIT]    # `LINES FILE` per file over the limit; exit 1 if any
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (".rs", ".c", ".h", ".py", ".sh")


def is_test(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return "tests" in parts[:-1] or name.endswith("_tests.rs") or name == "tests.rs"


def too_long(limit: int) -> list[tuple[int, str]]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, text=True,
                         capture_output=True, check=True).stdout
    long = []
    for rel in out.splitlines():
        p = ROOT / rel
        if p.suffix in SOURCES and p.is_file() and not is_test(rel):
            n = len(p.read_text(errors="replace").splitlines())
            if n > limit:
                long.append((n, rel))
    return sorted(long, reverse=True)


if __name__ == "__main__":
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    long = too_long(limit)
    print("\n".join(f"{n} {rel}" for n, rel in long))
    sys.exit(1 if long else 0)
