#!/usr/bin/env python3
"""Checks cx4's layering rule from the code's own imports (drivers/cx4/README.md):

- the core (drivers/cx4/core/) imports none of the layers above it: en, ib, ec, nor the
  composition root's modules;
- en, ib and ec import the core and never each other.

Every `crate::NAME` a file uses counts, in `use` trees (`use crate::{en::x, core::y}`) and in
paths written inline. Prints `FILE:LINE: uses crate::NAME (RULE)` per violation; exit 1 if any.

    python3 tools/lint/layers.py [CHECKOUT]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CX4 = ROOT / "drivers/cx4"
LAYERS = ("en", "ib", "ec")


def top_level_names(tree: str) -> list[str]:
    """The first path segment of each branch of a `use crate::...` tree (after `crate::`)."""
    tree = tree.strip()
    if not tree.startswith("{"):
        return [re.match(r"\w+", tree).group(0)] if re.match(r"\w+", tree) else []
    names, depth, item = [], 0, ""
    for c in tree[1:]:
        if c in "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                break
            depth -= 1
        if c == "," and depth == 0:
            names.append(item)
            item = ""
        else:
            item += c
    names.append(item)
    out = []
    for n in names:
        n = re.sub(r"//[^\n]*", "", n).strip()
        m = re.match(r"\w+", n)
        if m:
            out.append(m.group(0))
    return out


def crate_uses(text: str) -> list[tuple[int, str]]:
    """(line, name) for every `crate::name` the source uses."""
    code = re.sub(r"//[^\n]*", lambda m: " " * len(m.group(0)), text)
    found = []
    for m in re.finditer(r"\buse\s+crate::(.*?);", code, re.S):
        line = code.count("\n", 0, m.start()) + 1
        found += [(line, n) for n in top_level_names(m.group(1))]
    without_uses = re.sub(r"\buse\s+crate::.*?;", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                          code, flags=re.S)
    for m in re.finditer(r"\bcrate::(\w+)", without_uses):
        found.append((without_uses.count("\n", 0, m.start()) + 1, m.group(1)))
    return found


def layer_of(path: Path) -> str:
    rel = path.relative_to(CX4).parts
    return rel[0] if len(rel) > 1 else "root"


def kind(name: str) -> str:
    """What `crate::name` is: the core (its folder, or a module whose file lives in it), one of
    the layers, or the composition root's."""
    if name == "core" or (CX4 / "core" / f"{name}.rs").exists() or (CX4 / "core" / name).is_dir():
        return "core"
    if name in LAYERS:
        return name
    # The module's `THIS_MODULE` is every layer's to name (ops tables, registrations).
    return "any" if name == "THIS_MODULE" else "root"


def violations() -> list[str]:
    bad = []
    for path in sorted(CX4.rglob("*.rs")):
        layer = layer_of(path)
        for line, name in crate_uses(path.read_text()):
            k, rule = kind(name), None
            if k in ("core", "any") or k == layer:
                continue
            if layer == "core":
                rule = "the core imports nothing above it"
            elif layer in LAYERS and k in LAYERS:
                rule = f"{layer} never imports another layer"
            elif layer in LAYERS:
                rule = f"{layer} imports the core only, not the composition root"
            if rule:
                bad.append(f"{path.relative_to(ROOT)}:{line}: uses crate::{name} ({rule})")
    return bad


if __name__ == "__main__":
    if len(sys.argv) > 1:  # another checkout
        ROOT = Path(sys.argv[1]).resolve()
        CX4 = ROOT / "drivers/cx4"
    if not (CX4 / "core").is_dir():
        print("drivers/cx4/core/ does not exist")
        sys.exit(1)
    bad = violations()
    print("\n".join(bad))
    sys.exit(1 if bad else 0)
