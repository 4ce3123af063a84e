#!/usr/bin/env python3
"""Lists references in the project's documentation to files that are not in the repository.

A reference is a path into one of the repository's own folders (`drivers/cx4/en/sq.rs`,
`tools/testbed/`; upstream paths such as `include/linux/mlx5/qp.h` are not ours), a path that leaves the repository (`../shared/x.md`, or a
home or work folder of some machine),
or a bare Markdown file name (`ec.md`). Read are the Markdown files and the doc comments (`//!`,
`///`) and `#` comments of the Rust, Python and shell sources. Upstream file names in comments
(`cmd.c`, `mlx5_ifc.h`) are not references: only repository-rooted paths are checked.

    python3 tools/lint/doc_paths.py    # prints `FILE:LINE: REF` per dangling reference; exit 1 if any
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("drivers", "tools", "tests", "include", "Documentation", ".ci")
ROOTED = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*[\w/])" % "|".join(re.escape(t) for t in TOP))
OUTSIDE = re.compile(r"(?<![\w./-])(\.\./[\w./-]+|/(?:work|home|root)/[\w./-]+)")
BARE_MD = re.compile(r"(?<![\w./-])([\w-]+\.md)\b")
COMMENT = {".rs": re.compile(r"^\s*//[/!]?\s?(.*)$"), ".py": re.compile(r"#\s?(.*)$"),
           ".sh": re.compile(r"#\s?(.*)$")}


def tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                         text=True, capture_output=True, check=True).stdout
    return [ROOT / l for l in out.splitlines() if (ROOT / l).is_file()]


def texts(path: Path):
    """(line number, text) of the lines of `path` that are documentation."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return
    if path.suffix == ".md" or path.name == "README":
        yield from enumerate(lines, 1)
        return
    pat = COMMENT.get(path.suffix)
    if pat:
        for n, line in enumerate(lines, 1):
            m = pat.search(line)
            if m:
                yield n, m.group(1)


def dangling() -> list[str]:
    files = tracked()
    names = {p.name for p in files}
    rel = {p.relative_to(ROOT).as_posix() for p in files}
    dirs = {d for r in rel for d in (r.rsplit("/", i)[0] for i in range(1, r.count("/") + 1))}
    bad = []
    for path in files:
        for n, text in texts(path):
            for m in ROOTED.finditer(text):
                ref = m.group(1).rstrip("/.")
                # Globs and placeholders (`tests/*.py`, `drivers/<crate>/`) are not file names.
                if any(c in text[m.start():m.end() + 1] for c in "*<{"):
                    continue
                if ref in rel or ref in dirs:
                    continue
                # Upstream paths (`include/linux/mlx5/qp.h`, `drivers/infiniband/...`) share our
                # top-level names: a reference is ours when its first folder below the top one
                # is ours (tests/ is ours at any depth).
                # Our Documentation/ holds Markdown only: the kernel's is `.txt` and `.rst`.
                parts = ref.split("/")
                ours = parts[0] in ("tests", ".ci") or "/".join(parts[:2]) in dirs or \
                    (parts[0] == "Documentation" and ref.endswith(".md"))
                if not ours:
                    continue
                bad.append(f"{path.relative_to(ROOT)}:{n}: {ref}")
            for m in OUTSIDE.finditer(text):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {m.group(1)} (outside the repository)")
            for m in BARE_MD.finditer(text):
                if m.group(1) not in names:
                    bad.append(f"{path.relative_to(ROOT)}:{n}: {m.group(1)}")
    return bad


if __name__ == "__main__":
    bad = dangling()
    print("\n".join(bad))
    sys.exit(1 if bad else 0)
