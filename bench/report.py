"""Machine facts and the markdown page (docs/benchmarks.md) written from the results."""

from __future__ import annotations

import html
import math
import os
import platform
import statistics
from collections.abc import Callable, Sequence
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
        "memory_gb_s": memory_bandwidth_gb_s(),
    }


def memory_bandwidth_gb_s(mb: int = 256, repeats: int = 5) -> float:
    """Bytes moved per second by a large numpy copy (read + write), best of a few: the ceiling
    for any step that only streams arrays through memory."""
    import time

    import numpy as np

    src = np.ones(mb * 2**20 // 8)
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - started)
    return 2 * src.nbytes / best / 1e9


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


def limits_table(results: Sequence[ScenarioResult]) -> Table:
    """Every scenario's data["limits"] rows: figure, measured, limit and why, how far from it."""
    rows = tuple(
        (row["figure"], row["measured"], row["limit"], row["distance"])
        for result in results
        for row in result.data.get("limits", ())
    )
    return Table(
        ("figure", "measured", "the limit on this machine", "how far from it"),
        rows,
        text_columns=(0, 2, 3),
    )


#: issue 18's targets for `rageval evaluate` from TREC files, against a pytrec_eval script
CLI_TIME_TARGET, CLI_MEMORY_TARGET, HELP_TARGET_S = 0.5, 1.0, 0.25


def _cli_rows(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The CLI as a process against a pytrec_eval script (time and peak memory, at each size
    measured), and `rageval --help`, with the issue's targets."""
    sizes: list[tuple[int, dict[str, Any], Callable[[list[float]], float]]] = []
    if data.get("processes"):
        # median of the alternating calls, as the section's table
        sizes.append((data["n_queries"], data["processes"], statistics.median))
    if data.get("scale"):
        sizes.append((data["scale"]["n_queries"], data["scale"]["tools"], min))
    rows = []
    depth = data.get("depth", 100)
    for n, tools, pick in sizes:
        cli, script = tools["cli"], tools["pytrec_eval_script"]
        time_ratio = pick(cli["seconds"]) / pick(script["seconds"])
        memory_ratio = cli["peak_mb"] / script["peak_mb"]
        rows.append(
            (
                f"rageval evaluate from TREC files (a process), {n:,} queries x {depth} / a "
                "pytrec_eval script, wall time",
                fmt_ratio(time_ratio),
                f"target {CLI_TIME_TARGET:g}x: {'met' if time_ratio <= CLI_TIME_TARGET else 'MISSED'}",
            )
        )
        rows.append(
            (
                f"rageval evaluate from TREC files (a process), {n:,} queries x {depth} / a "
                "pytrec_eval script, peak memory",
                fmt_ratio(memory_ratio),
                f"target {CLI_MEMORY_TARGET:g}x: "
                + ("met" if memory_ratio <= CLI_MEMORY_TARGET else "MISSED"),
            )
        )
    if data.get("help_s") is not None:
        rows.append(
            (
                "`rageval --help` as a process",
                fmt_seconds(data["help_s"]),
                f"target {HELP_TARGET_S:g} s: "
                + ("met" if data["help_s"] <= HELP_TARGET_S else "MISSED"),
            )
        )
    return rows


def headline(results: Sequence[ScenarioResult]) -> Table:
    """One line per target or comparison, for the top of the page."""
    rows: list[tuple[str, str, str]] = []
    by_key = {r.key: r for r in results}
    if "trec" in by_key:
        ratios = by_key["trec"].data["ratios"]
        rows.append(
            (
                "TREC end to end, rageval direct path / pytrec_eval",
                fmt_ratio(ratios["direct_vs_pytrec_eval"]),
                "time ratio (above 1x: rageval slower)",
            )
        )
        rows.append(
            (
                "TREC end to end, rageval store path / pytrec_eval",
                fmt_ratio(ratios["store_vs_pytrec_eval"]),
                "time ratio",
            )
        )
        rows.append(
            (
                "TREC end to end, rageval Query-object route / pytrec_eval",
                fmt_ratio(ratios["queries_vs_pytrec_eval"]),
                "time ratio",
            )
        )
        rows.extend(_cli_rows(by_key["trec"].data))
        if "direct_vs_ranx" in ratios:
            rows.append(
                (
                    "TREC end to end, rageval direct path / ranx (warm)",
                    fmt_ratio(ratios["direct_vs_ranx"]),
                    "time ratio",
                )
            )
            rows.append(
                (
                    "TREC end to end, rageval store path / ranx (warm)",
                    fmt_ratio(ratios["store_vs_ranx"]),
                    "time ratio",
                )
            )
    if "native_scale" in by_key and by_key["native_scale"].data["points"]:
        data = by_key["native_scale"].data
        largest = data["points"][-1]
        rows.append(
            (
                f"native JSONL import, {largest['n_queries']:,} queries "
                f"({largest['bytes'] / 1e9:.1f} GB)",
                f"{largest['mb_per_s']:.1f} MB/s",
                f"target {data['target_mb_s']:.0f} MB/s: {'met' if data['met_speed'] else 'MISSED'}",
            )
        )
        rows.append(
            (
                f"native JSONL import, {largest['n_queries']:,} queries, peak RSS",
                f"{largest['peak_rss_mb']:,.0f} MB",
                f"target under {data['target_peak_mb']:,.0f} MB: "
                f"{'met' if data['met_memory'] else 'MISSED'}",
            )
        )
    if "recompute" in by_key:
        data = by_key["recompute"].data
        t = data["timings"]["new_k_threshold"]["median_s"]
        rows.append(
            (
                f"new (k, threshold) on {data['n_queries']:,} queries",
                fmt_seconds(t),
                f"target 50 ms: {'met' if data['within_target'] else 'MISSED'}",
            )
        )
    if "matching" in by_key:
        data = by_key["matching"].data
        ratio = data["ratio_all_cores"]
        rows.append(
            (
                f"partial (all {data['cpus']} cores) vs difflib, per pair",
                fmt_ratio(ratio),
                f"target 20x: {'met' if ratio >= data['target_ratio'] else 'MISSED'}",
            )
        )
    if "pair_scoring" in by_key:
        data = by_key["pair_scoring"].data
        rows.append(
            (
                f"pair scoring, {data['n_pairs']:,} (span, chunk) pairs, partial, all cores",
                f"{data['pairs_per_s']:,.0f} pairs/s",
                f"{fmt_ratio(data['ratio_vs_difflib'])} difflib's rate on a sample of the same pairs",
            )
        )
        rows.append(
            (
                "pair scoring again, same run and scorer (kept scores reused)",
                fmt_seconds(data["reused"]["call_median_s"]),
                f"{data['reused']['new_pairs_scored']} pairs scored",
            )
        )
    if "dashboard_scale" in by_key:
        data = by_key["dashboard_scale"].data
        big = data["points"][0]
        judged = big["browser"] or big["apptest"]  # as the scenario judges it
        rows.append(
            (
                f"dashboard, {big['n_queries']:,} queries: Overview's first render "
                f"({data['measured_in']})",
                fmt_seconds(judged["first_s"]),
                f"target {data['target_first_s']:g} s: {'met' if data['met_first'] else 'MISSED'}",
            )
        )
        page, worst = max(data["slowest_move_s"].items(), key=lambda kv: kv[1])
        rows.append(
            (
                f"dashboard, {big['n_queries']:,} queries: slowest page's median slider move "
                f"({data['measured_in']}, {page})",
                fmt_seconds(worst),
                f"target {data['target_move_s'] * 1000:.0f} ms: "
                f"{'met' if data['met_moves'] else 'MISSED'}",
            )
        )
    if "browser" in by_key:  # bench/browser_speed.py
        data = by_key["browser"].data
        where = f"browser, {data['n_queries']:,} queries x 3 runs"
        rows.append(
            (
                f"{where}: Compare's first render (deltas)",
                fmt_seconds(data["compare_first_s"]),
                f"target {data['target_compare_first_s']:g} s: "
                f"{'met' if data['met_compare_first'] else 'MISSED'}",
            )
        )
        for scenario, label in ((data, where), (data.get("large"), None)):
            if scenario is None:
                continue
            bare = statistics.median(scenario["bare_s"])
            label = label or f"browser, one run of {scenario['n_queries']:,} queries"
            moves = {p: s for p, s in scenario["slowest_move_s"].items() if s == s}
            page, worst = max(moves.items(), key=lambda kv: kv[1])
            rows.append(
                (
                    f"{label}: slowest page's median slider move (keydown to settled)",
                    fmt_seconds(worst),
                    f"{page}, {worst / bare:.1f}x the bare page; target "
                    f"{scenario['target_move_s'] * 1000:.0f} ms: "
                    f"{'met' if scenario['met_moves'] else 'MISSED'}",
                )
            )
        if "rescoring_progress_s" in data:
            rows.append(
                (
                    f"{where}: progress bar after a rescoring change (slowest)",
                    fmt_seconds(max(data["rescoring_progress_s"])),
                    f"target {data['target_progress_s']:g} s: "
                    f"{'met' if data['met_progress'] else 'MISSED'}",
                )
            )
    if "distributed" in by_key:
        data = by_key["distributed"].data
        ratio = data["timings"]["spark"]["median_s"] / data["timings"]["single"]["median_s"]
        rows.append(
            (
                f"Spark local[{data['workers']}] / one machine, {data['n_queries']:,} queries, "
                "file to metrics",
                fmt_ratio(ratio),
                f"time ratio; values within {data['max_difference']:.0e} of evaluate()'s (scale-out.md)",
            )
        )
    if "semantic" in by_key:
        data = by_key["semantic"].data
        embed = data["embed"]
        n_embed = round(embed["seconds"] * embed["texts_per_s"])
        rows.append(
            (
                f"embed {n_embed:,} chunks (wordllama, one core)",
                fmt_seconds(embed["seconds"]),
                f"target under 20 s: {'met' if embed['seconds'] < 20 else 'MISSED'}",
            )
        )
        rows.append(
            (
                "evaluate --scorer semantic / the default scorer (first view)",
                fmt_ratio(data["semantic_over_default"]),
                f"target at most 3x: {'met' if data['semantic_over_default'] <= 3 else 'MISSED'}",
            )
        )
    if "diagnosis" in by_key:
        data = by_key["diagnosis"].data
        rows.append(
            (
                f"failure diagnosis of {data['n_queries']:,} queries from kept scores",
                fmt_seconds(data["timing"]["median_s"]),
                f"target 1 s: {'met' if data['met'] else 'MISSED'}",
            )
        )
    if "judge_pacing" in by_key:
        data = by_key["judge_pacing"].data
        rows.append(
            (
                f"judge, {data['n_queries']} items x 3 prompts, concurrency "
                f"{data['concurrency']}: every 3rd first attempt 429 (Retry-After 1 s) / no 429",
                fmt_ratio(data["ratio"]),
                f"time ratio; target about 2x: {'met' if data['ratio'] <= 2.2 else 'MISSED'}",
            )
        )
    return Table(("comparison", "result", "meaning"), tuple(rows), text_columns=(0, 2))


#: line colours of the growth plot's series, in order
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")


def growth_series(results: Sequence[ScenarioResult]) -> list[dict[str, Any]]:
    """Every scenario's time/memory-by-size points: [{label, points: [{n_queries, seconds, peak_mb}]}].

    A scenario offers them as data["growth"] (with "seconds" and "peak_mb" per point) and
    data["growth_label"]; the native import's sizes are its data["points"].
    """
    series = []
    for result in results:
        if result.key == "native_scale":
            points = [
                {"n_queries": p["n_queries"], "seconds": p["seconds"], "peak_mb": p["peak_rss_mb"]}
                for p in result.data.get("points", [])
            ]
            label = "import: rageval import (native JSONL, child process)"
        else:
            points = [
                {"n_queries": p["n_queries"], "seconds": p["seconds"], "peak_mb": p["peak_mb"]}
                for p in result.data.get("growth", [])
            ]
            label = result.data.get("growth_label", result.key)
        if len(points) > 1:
            series.append({"label": label, "points": points})
    return series


def growth_table(series: Sequence[dict[str, Any]]) -> Table:
    """Time and memory per size, and how much each grew per x10 queries (1.0 = linear)."""
    rows = []
    for s in series:
        pts = s["points"]
        for prev, cur in zip([None, *pts[:-1]], pts, strict=True):
            if prev is None:
                exponent_t = exponent_m = ""
            else:
                x = math.log(cur["n_queries"] / prev["n_queries"])
                exponent_t = f"{math.log(cur['seconds'] / prev['seconds']) / x:.2f}"
                exponent_m = f"{math.log(cur['peak_mb'] / prev['peak_mb']) / x:.2f}"
            rows.append(
                (
                    s["label"],
                    f"{cur['n_queries']:,}",
                    fmt_seconds(cur["seconds"]),
                    f"{cur['peak_mb']:,.0f} MB",
                    exponent_t,
                    exponent_m,
                )
            )
    return Table(
        ("step", "queries", "time", "memory", "time growth exponent", "memory growth exponent"),
        tuple(rows),
    )


def growth_svg(series: Sequence[dict[str, Any]], width: int = 860, height: int = 360) -> str:
    """Time and memory against queries, log-log, one line per series, with linear references."""
    panel_w, top, bottom, left = (width - 40) // 2, 40, 110, 60
    plot_w, plot_h = panel_w - left - 20, height - top - bottom
    xs_all = [float(p["n_queries"]) for s in series for p in s["points"]]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    x_lo, x_hi = math.log10(min(xs_all)) - 0.15, math.log10(max(xs_all)) + 0.15
    for panel, (key, title, unit) in enumerate(
        (("seconds", "time", "s"), ("peak_mb", "memory", "MB"))
    ):
        ox = 20 + panel * (panel_w + 20)
        lines = []
        for s in series:
            xs = [float(p["n_queries"]) for p in s["points"]]
            ys = [max(float(p[key]), 1e-6) for p in s["points"]]
            lines.append((xs, ys, [ys[0] * x / xs[0] for x in xs]))  # linear through the first
        y_all = [y for _, ys, ref in lines for y in ys + ref]
        y_lo, y_hi = math.log10(min(y_all)) - 0.15, math.log10(max(y_all)) + 0.15

        def px(x: float, ox: int = ox) -> float:
            return ox + left + (math.log10(x) - x_lo) / (x_hi - x_lo) * plot_w

        def py(y: float, y_lo: float = y_lo, y_hi: float = y_hi) -> float:
            return top + plot_h - (math.log10(y) - y_lo) / (y_hi - y_lo) * plot_h

        parts.append(
            f'<text x="{ox + left}" y="{top - 15}" font-weight="bold">{title} ({unit}), '
            "log-log</text>"
        )
        parts.append(
            f'<rect x="{ox + left}" y="{top}" width="{plot_w}" height="{plot_h}" '
            'fill="none" stroke="#999"/>'
        )
        for x in sorted(set(xs_all)):
            parts.append(
                f'<text x="{px(x):.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
                f"{x:,.0f}</text>"
            )
        parts.append(
            f'<text x="{ox + left + plot_w / 2:.1f}" y="{top + plot_h + 36}" '
            'text-anchor="middle">queries</text>'
        )
        for colour, (xs, ys, ref) in zip(COLOURS, lines, strict=False):
            pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ref, strict=True))
            parts.append(
                f'<polyline points="{pts}" fill="none" stroke="{colour}" '
                'stroke-opacity="0.5" stroke-dasharray="4 3"/>'
            )
            pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
            parts.append(
                f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
            for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
                parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{colour}"/>')
                label = f"{y:,.2f}" if y < 10 else f"{y:,.0f}"
                anchor, dx = ("end", -8) if i == len(xs) - 1 else ("start", 6)
                parts.append(
                    f'<text x="{px(x) + dx:.1f}" y="{py(y) - 6:.1f}" fill="{colour}" '
                    f'text-anchor="{anchor}">{label}</text>'
                )
    for i, (colour, s) in enumerate(zip(COLOURS, series, strict=False)):
        y = top + plot_h + 56 + i * 16
        parts.append(
            f'<line x1="80" y1="{y - 4}" x2="104" y2="{y - 4}" stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="110" y="{y}">{html.escape(s["label"])}</text>')
    parts.append(
        f'<text x="{width - 20}" y="{height - 8}" text-anchor="end" fill="#666">'
        "solid: measured; dashed: linear growth from the smallest size</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def render(
    results: Sequence[ScenarioResult],
    facts: dict[str, Any],
    elapsed_s: float,
    quick: bool,
    growth_image: str | None = None,
) -> str:
    """The whole docs/benchmarks.md page (growth_image: the growth plot beside the page)."""
    v = facts["versions"]
    machine = Table(
        ("fact", "value"),
        text_columns=(0, 1),
        rows=(
            ("date", facts["date"]),
            ("CPU", facts["cpu"]),
            ("cores", f"{facts['cores']} ({facts['usable_cores']} usable by this process)"),
            ("memory", f"{facts['memory_gib']} GiB"),
            ("memory bandwidth (numpy copy, read + write)", f"{facts['memory_gb_s']:.1f} GB/s"),
            ("OS", facts["os"]),
            ("Python", facts["python"]),
            ("numpy / duckdb / rapidfuzz", f"{v['numpy']} / {v['duckdb']} / {v['rapidfuzz']}"),
            (
                "pytrec-eval-terrier / ranx / numba",
                f"{v['pytrec-eval-terrier']} / {v['ranx']} / {v['numba']}",
            ),
            (
                "load average (1, 5, 15 min)",
                f"before: {facts['load_before']}; after: {facts.get('load_after', 'unknown')}",
            ),
            ("whole run", f"{elapsed_s:.0f} s{' (--quick sizes)' if quick else ''}"),
        ),
    )
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
        "Past one machine: how scoring and metrics run on a distributed engine (Spark, Ray) is "
        "described in [scale-out.md](scale-out.md); its small working example is the Spark "
        "scenario below.",
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
    limits = limits_table(results)
    if limits.rows:
        parts += [
            "## Where the time goes, and the limit on this machine",
            "",
            "For each headline figure: what bounds it on this machine (measured in the same run), "
            "and how far the figure is from that bound. Each scenario's section has the profile "
            "the bound comes from.",
            "",
            limits.markdown(),
            "",
        ]
    for result in results:
        parts.append(result.text())
    series = growth_series(results)
    if series:
        parts += [
            "## Growth with the number of queries",
            "",
            "Each step's time and memory at every size it ran at. The growth exponent between two "
            "sizes is log(ratio of times or memories) / log(ratio of queries): 1.0 is linear "
            "growth, below 1 the fixed costs (start-up, imports) still weigh, above 1 a "
            "superlinear step.",
            "",
            growth_table(series).markdown(),
            "",
        ]
        if growth_image:
            parts += [f"![time and memory against queries, log-log]({growth_image})", ""]
    parts += [CODE_FIGURES]
    return "\n".join(parts).rstrip() + "\n"


def update_page(page: str, results: Sequence[ScenarioResult], facts: dict[str, Any]) -> str:
    """An existing page with the sections and summary rows of results replaced by theirs.

    For a scenario re-run on its own (`python -m bench --update --only NAME`): its section says
    when and under what load it ran; the Machine table and every other section stay those of
    the run that wrote the page; a summary row the page lacks goes after the row before it.
    Raises ValueError when the page lacks a section to replace, or the scenario's first row.
    """
    lines = page.splitlines()
    previous = None  # the line of the summary row before this one
    for row in headline(results).rows:
        label = f"| {row[0]} "
        at = [i for i, line in enumerate(lines) if line.startswith(label)]
        if not at:
            if previous is None:
                raise ValueError(f"the page has no summary row {row[0]!r}")
            # a row the page's run did not have (a new figure): after the one before it
            lines.insert(previous + 1, lines[previous])
            at = [previous + 1]
        old = lines[at[0]]
        widths = [len(cell) for cell in old.strip("|").split("|")]
        cells = [
            f" {row[0]} ".ljust(widths[0]),
            f" {row[1]} ".rjust(widths[1]),
            f" {row[2]} ".ljust(widths[2]),
        ]
        lines[at[0]] = "|" + "|".join(cells) + "|"
        previous = at[0]
    text = "\n".join(lines) + "\n"
    for result in results:
        head = f"## {result.title}\n"
        start = text.find(head)
        if start < 0:
            raise ValueError(f"the page has no section {result.title!r}")
        end = text.find("\n## ", start + len(head))
        end = len(text) if end < 0 else end + 1
        section = result.text() + (
            f"- This section was re-run on its own (`python -m bench --update`) at {facts['date']}, "
            f"load average before {facts['load_before']}, after {facts.get('load_after', 'unknown')}; "
            "the rest of the page comes from the run described under Machine.\n\n"
        )
        text = text[:start] + section + text[end:]
    return text


#: the timings behind choices in the code (issue 29: a comment quoting a timing goes stale), the
#: last section of every page render() writes: a full `make bench` keeps them
CODE_FIGURES = """\
## Figures behind the code

Timings that once sat in the code's comments, moved here so the code says why it is shaped so
and this page says how much (a figure in a comment goes stale without anyone noticing). Each
was measured when the code was written, on the 2-core machine of this page unless said
otherwise; `make bench` does not re-measure them.

| where | choice | figure when it was chosen |
|---|---|---|
| `matching/pool.py` `POOL_MIN_PAIRS` | below 10,000 pairs needing Python-level scoring, score in-process | a pool's first start ~0.3 s; it saves ~30 us per pair on two cores |
| `matching/pool.py` `BATCH_MIN`, `BATCH_MAX` | 500 to 4,000 pairs per pool job | a job's pickling and hand-over ~1 ms; scoring ~40 us a pair |
| `matching/pool.py` `_context` | forkserver, `matching.scorers` preloaded | the fork server starts once per process (~0.3 s); then a pool starts in ~20 ms |
| `evaluation/direct.py` | no token counts read when none are stored | reading them loads numpy.ma: 6 ms |
| `matching/embedders.py` word tokenizer | each space-separated word tokenized once and kept | ~3x faster than tokenizing whole texts |
| `matching/embedders.py` pooling | token counts times the distinct tokens' rows, one BLAS product | ~30x faster than gathering every token's row and summing per text |
| `formats/trec_columns.py` blocks | 256 KB blocks, one thread | 15% less CPU time than 4 MB blocks; two threads cost more CPU and gained nothing on a busy 2-core machine |
| `formats/trec_columns.py` decimal parse (SWAR) | 64-bit words, multiply-shift-mask | two to three times faster than numpy's string cast |
| `compare/statistics.py` sign flips | one (256, m) lookup table per byte position | about 10x faster than one gather over all positions |
| `compare/comparison.py` pairing | one dict lookup per query id | np.isin over 10,000 string ids took ~50 ms a pair |
| `cli` direct route (`_load_numpy_with_one_blas_thread`) | numpy imported with one OpenBLAS thread | the per-core spinning threads took 0.05-0.08 s of CPU from the reader (0.49 s to 0.41 s wall under load) |
| `store/reads.py` `_PAIR_TEXTS_SQL` | the asked queries' chunks and evidence read first (MATERIALIZED) | at 100,000 queries: 200 pairs 97 ms with a probed join, 47 ms this way; 8 pairs 73 and 12 ms |
| `store/store.py` bulk insert | Arrow tables by DuckDB's replacement scan | executemany ~1000x slower |
| `store/lease.py` `LeasedStore` | one open of the file per burst of calls (a page render) | reopening the store costs about 50-100 ms |
"""
