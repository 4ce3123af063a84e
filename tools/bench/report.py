#!/usr/bin/env python3
"""The benchmark report: reads every bench's JSON in the results directory (results.py) and
writes report.md there — each bench's tables as Markdown with its notes — and one PNG per
declared plot (log-log, message sizes in bytes on x), linked from the report. matplotlib is
Debian's python3-matplotlib (tools/bench/deps.sh installs it when missing); run by another
python3 that lacks it, the report runs itself again with Debian's.

    python3 tools/bench/report.py [--dir target/bench]        (make bench, last)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from results import fmt, results_dir

HERE = Path(__file__).resolve().parent
# The benches in `make bench`'s order; any other JSON in the directory follows, by name.
ORDER = ["core", "eth", "eth-lro-gso", "roce", "ec", "raid6", "ai"]
DEBIAN_PYTHON = "/usr/bin/python3"


def markdown_table(columns: list[str], rows: list[list]) -> str:
    head = "| " + " | ".join(c or " " for c in columns) + " |"
    rule = "|" + "|".join(["---"] + ["---:"] * (len(columns) - 1)) + "|"
    body = ["| " + " | ".join(fmt(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join([head, rule] + body)


def load(d: Path) -> list[dict]:
    docs = {}
    for p in sorted(d.glob("*.json")):
        try:
            doc = json.loads(p.read_text())
        except ValueError as e:
            print(f"report: {p.name} is not JSON ({e}); left out", file=sys.stderr)
            continue
        if isinstance(doc, dict) and "tables" in doc:
            docs[doc.get("name", p.stem)] = doc
    rank = {n: i for i, n in enumerate(ORDER)}
    return [docs[n] for n in sorted(docs, key=lambda n: (rank.get(n, len(ORDER)), n))]


def size_label(x: float) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if x >= 1 << shift:
            return f"{x / (1 << shift):g}{unit}"
    return f"{x:g}"


def ensure_matplotlib() -> None:
    """Installs Debian's matplotlib if missing; runs this script again under Debian's python3
    if this interpreter (a pyenv one, say) cannot import it."""
    if importlib.util.find_spec("matplotlib"):
        return
    subprocess.run(["bash", str(HERE / "deps.sh")], check=True)
    if sys.executable != DEBIAN_PYTHON and Path(DEBIAN_PYTHON).exists():
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, *sys.argv])


def pyplot():
    """matplotlib's pyplot on the Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def render(d: Path, name: str, meta: dict, series: list[dict]) -> Path:
    """One plot as d/NAME.png: a line per series, log-log, sizes labelled in bytes."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    colours: dict[str, str] = {}
    for s in series:
        group = s.get("group", s["label"])
        colour = colours.setdefault(group, f"C{len(colours) % 10}")
        ax.plot(s["x"], s["y"], marker="o", markersize=3, label=s["label"], color=colour,
                linestyle="--" if s.get("dashed") else "-")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    xs = sorted({x for s in series for x in s["x"]})
    if len(xs) <= 12:
        ax.set_xticks(xs)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: size_label(x)))
    ax.set_title(meta.get("title", name))
    ax.set_xlabel(meta.get("xlabel", ""))
    ax.set_ylabel(meta.get("ylabel", ""))
    ax.grid(True, which="major", alpha=0.4)
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = d / f"{name}.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def write_report(d: Path) -> Path:
    docs = load(d)
    out = ["# cx4 benchmark report", "",
           f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} from "
           f"{', '.join(doc['name'] + '.json' for doc in docs) or 'no results'}. One run on the "
           "test host: TCG guests, a shared host; ratios side by side matter more than absolute "
           "figures.", ""]
    plots: dict[str, tuple[dict, list[dict]]] = {}
    for doc in docs:
        out += [f"## {doc.get('title', doc['name'])}", ""]
        for t in doc["tables"]:
            if t.get("title"):
                # One line, no tabs or trailing blanks: Markdown's bold breaks on them.
                out += [f"**{' '.join(t['title'].split())}**", ""]
            out += [markdown_table(t["columns"], t["rows"]), ""]
        for n in doc.get("notes", []):
            out += [n, ""]
        for name, meta in doc.get("plots", {}).items():
            plots.setdefault(name, (meta, []))
        for s in doc.get("series", []):
            plots.setdefault(s["plot"], ({}, []))[1].append(s)
    drawn = [(name, meta) for name, (meta, series) in plots.items() if series]
    if drawn:
        out += ["## Plots", ""]
        for name, meta in drawn:
            render(d, name, meta, plots[name][1])
            out += [f"![{meta.get('title', name)}]({name}.png)", ""]
    path = d / "report.md"
    path.write_text("\n".join(out))
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=None, help="results directory (default target/bench)")
    args = ap.parse_args()
    d = args.dir or results_dir()
    ensure_matplotlib()
    if not d.is_dir():
        print(f"report: no results directory {d}", file=sys.stderr)
        return 1
    path = write_report(d)
    print(f"report: {path} ({', '.join(p.name for p in sorted(d.glob('*.png'))) or 'no plots'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
