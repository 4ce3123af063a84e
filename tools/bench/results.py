"""The benchmarks' results on disk: each bench saves its tables, notes and plot series as one
JSON file in the results directory (target/bench/, or $CX4_BENCH_DIR), and report.py turns the
directory into report.md and PNG plots.

A file holds {"name", "title", "tables": [{"title", "columns", "rows"}], "notes": [...],
"series": [{"plot", "label", "x", "y", "group", "dashed"}], "plots": {plot: {"title", "xlabel", "ylabel"}}};
a row is a list of cells (text or numbers, null where nothing was measured)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def results_dir() -> Path:
    """Where the benches write their JSON and report.py its report."""
    return Path(os.environ.get("CX4_BENCH_DIR") or ROOT / "target/bench")


def fmt(v) -> str:
    """A table cell as text: numbers to about three significant digits, n/m where nothing
    was measured."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/m"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int) or (abs(v) >= 1000 and v == int(v)):
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if v else "0"


def _cell(v):
    """A JSON-safe cell: NaN and infinities (nothing measured) become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class Results:
    """One bench's results, saved with `save()`."""

    def __init__(self, name: str, title: str):
        self.doc = {"name": name, "title": title, "tables": [], "notes": [], "series": [],
                    "plots": {}}

    def table(self, title: str, columns: list[str], rows: list[list], show: bool = True) -> None:
        """A table: its column names and rows (first cell: the row's name); `show` prints it
        too, aligned."""
        self.doc["tables"].append({"title": title, "columns": list(columns),
                                   "rows": [[_cell(v) for v in r] for r in rows]})
        if show:
            cells = [list(columns)] + [[fmt(v) for v in r] for r in rows]
            w = [max(len(r[i]) for r in cells) for i in range(len(columns))]
            print(f"\n{title}\n")
            for r in cells:
                print(f"{r[0]:{w[0]}}  " + "  ".join(f"{c:>{n}}" for c, n in zip(r[1:], w[1:])))

    def note(self, text: str) -> None:
        """A paragraph under the tables (how it was measured, what bounds it)."""
        self.doc["notes"].append(text)

    def plot(self, plot: str, title: str, xlabel: str, ylabel: str) -> None:
        """Declares a plot (one PNG, log-log) that `series` add lines to."""
        self.doc["plots"][plot] = {"title": title, "xlabel": xlabel, "ylabel": ylabel}

    def series(self, plot: str, label: str, points: list[tuple[float, float]],
               group: str | None = None, dashed: bool = False) -> None:
        """One line of `plot`: (x, y) points, those without a measurement left out; lines of
        one `group` share a colour, `dashed` ones are drawn dashed."""
        pts = [(x, y) for x, y in points if _cell(y) is not None and y is not None]
        if pts:
            self.doc["series"].append({"plot": plot, "label": label, "x": [x for x, _ in pts],
                                       "y": [y for _, y in pts], "group": group or label,
                                       "dashed": dashed})

    def save(self) -> Path:
        d = results_dir()
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{self.doc['name']}.json"
        path.write_text(json.dumps(self.doc, indent=1) + "\n")
        return path

    def finish(self, problems: list[str]) -> int:
        """Saves, says where, lists the problems seen; the bench's exit status (1: problems)."""
        print(f"\nresults: {self.save()}")
        if problems:
            print("\nproblems:\n" + "\n".join(problems))
            return 1
        return 0
