"""Machine facts and the markdown page (docs/benchmarks.md) written from the results."""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.common import ScenarioResult, Table, fmt_ratio, fmt_seconds

PACKAGES = ("numpy", "duckdb", "rapidfuzz", "pytrec-eval-terrier", "ranx", "numba")


def cpu_model() -> str:
    """The 'model name' line of /proc/cpuinfo (platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_facts() -> dict[str, Any]:
    """Cores, CPU, memory, Python and library versions, date, and the load when asked."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 1,
        "usable_cores": usable,
        "memory_gib": _memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": versions,
        "load_before": load_average(),
    }


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError):
        pass
    return None


def load_average() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def headline(results: Sequence[ScenarioResult]) -> Table:
    """One line per target or comparison, for the top of the page."""
    rows: list[tuple[str, str, str]] = []
    by_key = {r.key: r for r in results}
    if "trec" in by_key:
        ratios = by_key["trec"].data["ratios"]
        rows.append(("TREC end to end, rageval direct path / pytrec_eval",
                     fmt_ratio(ratios["direct_vs_pytrec_eval"]), "time ratio (above 1x: rageval slower)"))
        rows.append(("TREC end to end, rageval store path / pytrec_eval",
                     fmt_ratio(ratios["store_vs_pytrec_eval"]), "time ratio"))
        rows.append(("TREC end to end, rageval Query-object route / pytrec_eval",
                     fmt_ratio(ratios["queries_vs_pytrec_eval"]), "time ratio"))
        if "direct_vs_ranx" in ratios:
            rows.append(("TREC end to end, rageval direct path / ranx (warm)",
                         fmt_ratio(ratios["direct_vs_ranx"]), "time ratio"))
            rows.append(("TREC end to end, rageval store path / ranx (warm)",
                         fmt_ratio(ratios["store_vs_ranx"]), "time ratio"))
    if "native_scale" in by_key and by_key["native_scale"].data["points"]:
        data = by_key["native_scale"].data
        largest = data["points"][-1]
        rows.append((f"native JSONL import, {largest['n_queries']:,} queries "
                     f"({largest['bytes'] / 1e9:.1f} GB)", f"{largest['mb_per_s']:.1f} MB/s",
                     f"target {data['target_mb_s']:.0f} MB/s: {'met' if data['met_speed'] else 'MISSED'}"))
        rows.append((f"native JSONL import, {largest['n_queries']:,} queries, peak RSS",
                     f"{largest['peak_rss_mb']:,.0f} MB",
                     f"target under {data['target_peak_mb']:,.0f} MB: "
                     f"{'met' if data['met_memory'] else 'MISSED'}"))
    if "recompute" in by_key:
        data = by_key["recompute"].data
        t = data["timings"]["new_k_threshold"]["median_s"]
        rows.append((f"new (k, threshold) on {data['n_queries']:,} queries", fmt_seconds(t),
                     f"target 50 ms: {'met' if data['within_target'] else 'MISSED'}"))
    if "matching" in by_key:
        data = by_key["matching"].data
        ratio = data["ratio_all_cores"]
        rows.append((f"partial (all {data['cpus']} cores) vs difflib, per pair", fmt_ratio(ratio),
                     f"target 20x: {'met' if ratio >= data['target_ratio'] else 'MISSED'}"))
    return Table(("comparison", "result", "meaning"), tuple(rows), text_columns=(0, 2))


def growth_svg(points: Sequence[dict[str, Any]], width: int = 760, height: int = 320) -> str:
    """Time and peak memory against queries, log-log, with a linear-growth reference (an SVG)."""
    panel_w, top, bottom, left = (width - 40) // 2, 40, 70, 60
    plot_w, plot_h = panel_w - left - 20, height - top - bottom
    xs = [float(p["n_queries"]) for p in points]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for panel, (key, title, unit) in enumerate((("seconds", "import time", "s"),
                                                 ("peak_rss_mb", "peak memory", "MB"))):
        ox = 20 + panel * (panel_w + 20)
        ys = [float(p[key]) for p in points]
        x_lo, x_hi = math.log10(min(xs)) - 0.1, math.log10(max(xs)) + 0.1
        reference = [ys[0] * x / xs[0] for x in xs]  # linear growth through the first point
        y_all = ys + reference
        y_lo, y_hi = math.log10(min(y_all)) - 0.1, math.log10(max(y_all)) + 0.1

        def px(x: float, ox: int = ox, x_lo: float = x_lo, x_hi: float = x_hi) -> float:
            return ox + left + (math.log10(x) - x_lo) / (x_hi - x_lo) * plot_w

        def py(y: float, y_lo: float = y_lo, y_hi: float = y_hi) -> float:
            return top + plot_h - (math.log10(y) - y_lo) / (y_hi - y_lo) * plot_h

        parts.append(f'<text x="{ox + left}" y="{top - 15}" font-weight="bold">{title} ({unit}), '
                     'log-log</text>')
        parts.append(f'<rect x="{ox + left}" y="{top}" width="{plot_w}" height="{plot_h}" '
                     'fill="none" stroke="#999"/>')
        ref = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, reference, strict=True))
        parts.append(f'<polyline points="{ref}" fill="none" stroke="#999" stroke-dasharray="4 3"/>')
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
        parts.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
        for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="#1f77b4"/>')
            label = f"{y:,.1f}" if y < 100 else f"{y:,.0f}"
            # the last label sits left of its point, inside the frame
            anchor, dx = ("end", -8) if i == len(xs) - 1 else ("start", 6)
            parts.append(f'<text x="{px(x) + dx:.1f}" y="{py(y) - 6:.1f}" '
                         f'text-anchor="{anchor}">{label}</text>')
            parts.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
                         f"{x:,.0f}</text>")
        parts.append(f'<text x="{ox + left + plot_w / 2:.1f}" y="{top + plot_h + 36}" '
                     'text-anchor="middle">queries</text>')
    parts.append(f'<text x="{width / 2:.0f}" y="{height - 8}" text-anchor="middle" fill="#666">'
                 "blue: measured; dashed: linear growth from the smallest size</text>")
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def render(
    results: Sequence[ScenarioResult], facts: dict[str, Any], elapsed_s: float, quick: bool,
    images: dict[str, str] | None = None,
) -> str:
    """The whole docs/benchmarks.md page (images: scenario key -> a picture beside the page)."""
    v = facts["versions"]
    machine = Table(("fact", "value"), text_columns=(0, 1), rows=(
        ("date", facts["date"]),
        ("CPU", facts["cpu"]),
        ("cores", f"{facts['cores']} ({facts['usable_cores']} usable by this process)"),
        ("memory", f"{facts['memory_gib']} GiB"),
        ("OS", facts["os"]),
        ("Python", facts["python"]),
        ("numpy / duckdb / rapidfuzz", f"{v['numpy']} / {v['duckdb']} / {v['rapidfuzz']}"),
        ("pytrec-eval-terrier / ranx / numba",
         f"{v['pytrec-eval-terrier']} / {v['ranx']} / {v['numba']}"),
        ("load average (1, 5, 15 min)",
         f"before: {facts['load_before']}; after: {facts.get('load_after', 'unknown')}"),
        ("whole run", f"{elapsed_s:.0f} s{' (--quick sizes)' if quick else ''}"),
    ))
    parts = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`.venv/bin/python -m bench`, sources in `bench/`); do not edit "
        "by hand, run it again. `python -m bench --quick` runs the same scenarios at small sizes; "
        "`--scale` adds the large ones (TREC at 100,000 queries, a 1,000,000-query native import).",
        "Times are wall-clock medians of repeated calls after one untimed warm-up call; ratios "
        "are rageval's time divided by the other tool's (above 1x: rageval is slower) except for "
        "matching, where the ratio is difflib's time per pair over partial's (the speed-up).",
        "The load average shows whether other work shared the machine during the run: with a "
        "load above the core count, absolute times are inflated and ratios are noisier.",
        "",
        "## Summary",
        "",
        headline(results).markdown(),
        "",
        "## Machine",
        "",
        machine.markdown(),
        "",
    ]
    for result in results:
        parts.append(result.text())
        if images and result.key in images:
            parts += [f"![{result.title}: growth]({images[result.key]})", ""]
    return "\n".join(parts).rstrip() + "\n"
