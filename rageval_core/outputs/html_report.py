"""One self-contained HTML report of one or more runs: `rageval report RUN... --out report.html`.

The file holds everything it shows: styles inline, charts as inline SVG (rageval_core.outputs.svg_charts),
no script at all, no font, image or link to fetch; a Content-Security-Policy meta tag forbids
any request and any script, so the file opens offline and shows the same thing everywhere.
Every text that comes from a run (names, descriptions, metric and stage names) is HTML-escaped.

Sections: the runs and settings; the metric table (each run's evaluate() values); the curves
over k and over the coverage threshold; latency percentiles, tokens and cost per run; with
several runs, the comparison (rageval_core.compare: paired deltas, CIs, p-values on the shared
queries, the first run as the baseline); why queries fail (rageval_core.diagnosis: the failing
queries per reason and the what-if lines, per run). report_html() is what the dashboard's "download
report" calls with the runs it already has open.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import RagevalError, UsageError
from rageval_core.evaluation.evaluate import evaluate, resolve_relevance
from rageval_core.evaluation.labels import labelled_data
from rageval_core.evaluation.report import Report, Settings
from rageval_core.metrics.registry import higher_is_better
from rageval_core.rundata import LoadedRun, RunData
from rageval_core.store import Store
from rageval_core.outputs.svg_charts import line_chart

#: the coverage thresholds of the threshold curves
THRESHOLDS = tuple(round(t, 2) for t in np.linspace(0.0, 1.0, 21))
#: percentiles shown per latency stage (the keys of a report's ops)
LATENCY_COLUMNS = ("count", "mean", "p50", "p90", "p95", "p99")
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto;
  max-width: 1100px; padding: 0 1rem; color: #1b1b1b; line-height: 1.4; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { font-size: 1.25rem; margin-top: 2rem;
  border-bottom: 1px solid #ddd; padding-bottom: .2rem; } h3 { font-size: 1.05rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: right; }
th:first-child, td:first-child, td.text { text-align: left; }
thead th { background: #f4f4f4; } td.best { font-weight: 600; }
table.comparison { font-size: .8rem; } table.comparison td { white-space: nowrap; }
table.comparison td:first-child { white-space: normal; }
.muted { color: #666; font-size: .85rem; }
.improved { color: #0a6e31; font-weight: 600; } .regressed { color: #b3261e; font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; }
svg.chart { background: #fff; border: 1px solid #e4e4e4; }
svg .chart-title { font-size: 12px; font-weight: 600; } svg .tick { font-size: 9px; fill: #555; }
svg .axis { font-size: 10px; fill: #333; } svg .legend { font-size: 10px; }
svg .plot { fill: none; stroke: #ccc; } svg .grid { stroke: #eee; }
code { background: #f4f4f4; padding: 0 .2rem; } .warning { color: #8a4b00; }
"""


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return f"{float(value):.{digits}f}"


def _cell(value: Any, digits: int = 4, css: str = "", attrs: str = "") -> str:
    """A number's cell: shown rounded, its exact value in data-value (what the tests read)."""
    exact = "" if value is None or (isinstance(value, float) and math.isnan(value)) else repr(value)
    cls = f' class="{css}"' if css else ""
    return f'<td{cls} data-value="{escape(exact)}"{attrs}>{_num(value, digits)}</td>'


def _table(headers: Sequence[str], rows: Sequence[str], css: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _metric_section(reports: Sequence[Report]) -> str:
    names: list[str] = []
    for r in reports:
        names += [n for n in r.metrics if n not in names]
    rows = []
    for name in names:
        values = [r.metrics.get(name, math.nan) for r in reports]
        finite = [v for v in values if not math.isnan(v)]
        best = (max(finite) if higher_is_better(name) else min(finite)) if finite else None
        cells = "".join(
            _cell(
                v,
                css="best" if len(reports) > 1 and best is not None and v == best else "",
                attrs=f' data-run="{i}" data-metric="{escape(name)}"',
            )
            for i, v in enumerate(values)
        )
        arrow = "" if higher_is_better(name) else " (lower is better)"
        rows.append(f'<tr><td class="text">{escape(name)}{arrow}</td>{cells}</tr>')
    headers = ["metric", *(r.run for r in reports)]
    note = (
        '<p class="muted">Run values over each run\'s scored queries, as '
        "<code>rageval evaluate</code> gives them"
        + ("; the best value of each row in bold" if len(reports) > 1 else "")
        + ".</p>"
    )
    # the report's warnings, as `rageval evaluate` and the Overview give them
    warnings = "".join(
        f'<p class="warning">Warning ({escape(r.run)}): {escape(w)}.</p>'
        for r in reports
        for w in r.warnings
    )
    return "<h2>Metrics</h2>" + _table(headers, rows, "metrics") + note + warnings


def _counts_section(reports: Sequence[Report]) -> str:
    keys: list[str] = []
    for r in reports:
        keys += [k for k in r.counts if k not in keys]
    rows = [
        f'<tr><td class="text">{escape(k)}</td>'
        + "".join(_cell(r.counts.get(k)) for r in reports)
        + "</tr>"
        for k in keys
    ]
    return "<h3>Queries scored</h3>" + _table(["count", *(r.run for r in reports)], rows)


def _curves_section(
    loaded: Sequence[tuple[Store, RunData]], reports: Sequence[Report], settings: Settings
) -> str:
    from rageval_core.evaluation.curves import curve_names, curves_over_k, curves_over_threshold

    by_k: dict[str, list[tuple[str, list[float]]]] = {}
    by_t: dict[str, list[tuple[str, list[float]]]] = {}
    depth = max((data.depth for _, data in loaded), default=0)
    for (store, data), report in zip(loaded, reports, strict=True):
        relevance = resolve_relevance(labelled_data(store, data, settings.labels), settings)
        names = curve_names(data, relevance)
        if names and data.depth:
            curves = curves_over_k(store, data, settings, names)
            for name, ys in curves.items():
                padded = [float(y) for y in ys] + [math.nan] * (depth - len(ys))
                by_k.setdefault(name, []).append((report.run, padded))
        if data.run.has_evidence:
            swept = curves_over_threshold(store, data, settings, THRESHOLDS)
            for name, ys in swept.items():
                by_t.setdefault(f"{name}@{settings.k}", []).append(
                    (report.run, [float(y) for y in ys])
                )
    out = ""
    if by_k:
        xs = list(range(1, depth + 1))
        charts = "".join(
            line_chart(name, xs, series, "k", _range_of(name)) for name, series in by_k.items()
        )
        out += (
            "<h2>Curves over k</h2>"
            f'<p class="muted">Each metric at every cut-off k = 1..{depth}.</p>'
            f'<div class="charts">{charts}</div>'
        )
    if by_t:
        charts = "".join(
            line_chart(name, list(THRESHOLDS), series, "threshold", _range_of(name))
            for name, series in by_t.items()
        )
        out += (
            "<h2>Curves over the coverage threshold</h2>"
            f'<p class="muted">Evidence metrics at k = {settings.k} for thresholds 0 to 1.</p>'
            f'<div class="charts">{charts}</div>'
        )
    return out


def _range_of(name: str) -> tuple[float, float] | None:
    from rageval_core.metrics.registry import ALIASES, REGISTRY

    base = name.split("@")[0]  # curve names carry no cut-off, which parse() would ask for
    lo, hi = REGISTRY[ALIASES.get(base, base)].range
    return (lo, hi) if lo is not None and hi is not None else None


def _ops_section(reports: Sequence[Report]) -> str:
    parts = []
    for r in reports:
        summary = r.ops
        latency = summary.get("latency_ms") or {}
        block = f"<h3>{escape(r.run)}</h3>"
        if latency:
            rows = [
                f'<tr><td class="text">{escape(ops.stage_label(str(stage), st))}</td>'
                + "".join(
                    _cell(st.get(c), 0 if c == "count" else ops.ms_decimals(st.get(c)))
                    for c in LATENCY_COLUMNS
                )
                + "</tr>"
                for stage, st in latency.items()
            ]
            block += _table(["latency (ms)", *LATENCY_COLUMNS], rows, "latency")
        else:
            block += '<p class="muted">No latencies recorded.</p>'
        tokens = summary.get("tokens") or {}
        if tokens:
            rows = [
                f'<tr><td class="text">{escape(str(kind))}</td>'
                + _cell(st.get("count"), 0)
                + _cell(st.get("mean"), 1)
                + _cell(st.get("total"), 0)
                + "</tr>"
                for kind, st in tokens.items()
            ]
            block += _table(["tokens", "count", "mean", "total"], rows, "tokens")
        cost = summary.get("cost_usd") or {}
        if cost.get("n_queries_with_tokens"):
            if cost.get("total") is not None:
                block += (
                    f'<p>Cost: total <span class="cost" data-value="{cost["total"]!r}">'
                    f"${cost['total']:.4f}</span>, per query "
                    f'<span class="cost" data-value="{cost["per_query"]!r}">'
                    f"${cost['per_query']:.6f}</span></p>"
                )
            else:
                block += f"<p>Cost: unknown ({escape(ops.cost_gap(cost))})</p>"
        parts.append(block)
    return "<h2>Latency, tokens and cost</h2>" + "".join(parts)


def _comparison_section(comparison: Any) -> str:
    from rageval_core.outputs.compare_text import p_text, unpaired_lines

    alpha = comparison.options.alpha
    rows = []
    for m in comparison.metrics:
        label = escape(m) + ("" if higher_is_better(m) else " (lower is better)")
        for i, cand in enumerate(comparison.candidates):
            t = comparison.test(cand, m)
            # green: a significant improvement, red: a significant regression, in the
            # metric's direction (a fall of BestRank improves)
            css = t.verdict(alpha)
            ci = "-" if math.isnan(t.ci_low) else f"[{t.ci_low:+.4f}, {t.ci_high:+.4f}]"
            rows.append(
                f'<tr><td class="text">{"" if i else label}</td><td class="text">'
                + escape(cand)
                + "</td>"
                + _cell(t.n)
                + _cell(t.baseline_mean)
                + _cell(t.candidate_mean)
                + _cell(t.diff, css=css)
                + f'<td class="text {css}">{css}</td>'
                + f"<td>{ci}</td>"
                + f"<td>{p_text(t.p_t)}</td><td>{p_text(t.p_perm)}</td>"
                + f'<td class="{css}">{p_text(t.p_perm_holm)}</td>'
                + f"<td>{t.effect_size:+.2f}</td><td>{t.wins}/{t.ties}/{t.losses}</td></tr>"
            )
    headers = ["metric", "candidate", "n", f"{comparison.baseline} mean", "mean", "diff"]
    headers += ["verdict", f"{comparison.options.level:.0%} CI", "p(t)", "p(perm)", "p(Holm)"]
    headers += ["d_z", "W/T/L"]
    pairs = "; ".join(f"{escape(p.candidate)}: {p.n_shared}" for p in comparison.alignment.pairs)
    unpaired = unpaired_lines(comparison)
    note = (
        f'<p class="muted">Each candidate paired with the baseline '
        f"<b>{escape(comparison.baseline)}</b> on the queries both hold ({pairs}); n: the "
        "pairs, the shared queries both runs score, over which both means and the diff are "
        "taken. Paired t-test, paired permutation test "
        f"({comparison.options.n_permutations} sign flips) and its Holm correction over every "
        f"candidate and metric; green: a significant improvement, red: a significant "
        f"regression (p(Holm) &lt; {alpha:g}), read in each metric's direction. W/T/L: queries "
        "won, tied, lost.</p>"
    )
    if unpaired:
        note += (
            '<p class="muted unpaired">Scored in one run only (left out of n, the means and '
            "the tests): " + "; ".join(escape(line) for line in unpaired) + ".</p>"
        )
    return "<h2>Comparison</h2>" + _table(headers, rows, "comparison") + note


def _diagnosis_section(loaded: Sequence[tuple[Store, RunData]], settings: Settings) -> str:
    """Why queries fail: per run, the failing queries per reason (rageval_core.diagnosis, the
    split check included) with example query ids, and the what-if lines."""
    from rageval_core.diagnosis import NO_GOLD, diagnose

    parts = ["<h2>Why queries fail</h2>"]
    for store, data in loaded:
        parts.append(f"<h3>{escape(data.run.name)}</h3>")
        try:
            d = diagnose(store, data, settings)
        except RagevalError as e:  # a preset: the diagnosis reads rageval's own coverage
            parts.append(f"<p>Not diagnosed: {escape(str(e))}</p>")
            continue
        if d.relevance is None:
            parts.append("<p>Nothing to find (no qrels, no gold spans): no query can fail.</p>")
            continue
        queries, spans = d.query_counts(), d.span_counts()
        what = "missed spans" if d.relevance == "evidence" else "failing queries"
        rows = [
            f'<tr><td class="text">{escape(r)}</td>{_cell(spans[r])}{_cell(queries[r])}'
            f"{_cell(queries[r] / d.n_failing if d.n_failing else None, 3)}"
            f'<td class="text">{escape(", ".join(d.examples(r)))}</td></tr>'
            for r in d.reasons
        ]
        parts.append(
            f"<p>{d.n_failing} of {d.query_ids.size} queries fail ({escape(d.relevance)} mode); "
            f"{queries[NO_GOLD]} have nothing to find. Each missed gold span gets the first "
            "reason that holds, in the table's order; a query's reason is its missed spans' "
            "most frequent one.</p>"
        )
        parts.append(
            _table(["reason", what, "queries", "share of failing", "examples"], rows, "diagnosis")
        )
        if d.what_if:
            lines = "".join(f"<li>{escape(w.text())}</li>" for w in d.what_if)
            parts.append(
                f'<p>What would fix them (computed, not estimated):</p><ul class="what-if">{lines}</ul>'
            )
    return "".join(parts)


def report_html(
    loaded: Sequence[tuple[Store, RunData]],
    metrics: Sequence[str] | None = None,
    settings: Settings | None = None,
    options: Any = None,
    title: str | None = None,
) -> str:
    """The report of runs already open (store, RunData): the dashboard's "download report"."""
    if not loaded:
        raise UsageError("a report needs at least one run")
    s = settings or Settings()
    reports = [evaluate(data, metrics, store=store, settings=s) for store, data in loaded]
    runs_rows = []
    for (_, data), report in zip(loaded, reports, strict=True):
        run = data.run
        runs_rows.append(
            f'<tr><td class="text">{escape(run.name)}</td>{_cell(report.n_queries)}'
            f'<td class="text">{escape(report.relevance or "-")}</td>'
            f'<td class="text">{escape(run.created_at or "-")}</td>'
            f'<td class="text">{escape(run.description or "")}</td></tr>'
        )
    shown = {k: v for k, v in reports[0].settings.items() if k != "relevance"}
    if "label_counts" in shown:  # each run's own: how many labels of each source counted
        shown["label_counts"] = "; ".join(
            f"{r.run}: " + ", ".join(f"{s} {n}" for s, n in r.settings["label_counts"].items())
            for r in reports
        )
    settings_rows = [
        f'<tr><td class="text">{escape(str(k))}</td><td class="text">{escape(str(v))}</td></tr>'
        for k, v in shown.items()
    ]
    body = [
        f"<h1>{escape(title or 'rageval report')}</h1>",
        f'<p class="muted">Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by rageval. '
        "This file is self-contained: it runs no script and fetches nothing.</p>",
        "<h2>Runs</h2>",
        _table(["run", "queries", "relevance", "created", "description"], runs_rows, "runs"),
        "<h3>Settings</h3>",
        _table(["setting", "value"], settings_rows, "settings"),
        _metric_section(reports),
        _counts_section(reports),
    ]
    if len(loaded) > 1:
        from rageval_core.compare import compare

        sources = [LoadedRun(store, data, owns_store=False) for store, data in loaded]
        try:
            comparison = compare(sources, metrics, settings=s, options=options)
        except RagevalError as e:  # e.g. runs with no query in common: the rest still shows
            body.append(f"<h2>Comparison</h2><p>Not compared: {escape(str(e))}</p>")
        else:
            body.append(_comparison_section(comparison))
    body.append(_diagnosis_section(loaded, s))
    body.append(_curves_section(loaded, reports, s))
    body.append(_ops_section(reports))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title or 'rageval report: ' + ', '.join(r.run for r in reports))}</title>"
        f"<style>{STYLE}</style></head><body>" + "\n".join(body) + "</body></html>\n"
    )


def write_report(
    sources: Sequence[str],
    path: Path,
    metrics: Sequence[str] | None = None,
    store: Store | None = None,
    settings: Settings | None = None,
    options: Any = None,
) -> Path:
    """Open the runs (stored names or run files), write their report to path, return path."""
    from rageval_core.compare.comparison import open_runs

    with contextlib.ExitStack() as stack:
        loaded = stack.enter_context(open_runs(list(sources), store))
        text = report_html(loaded, metrics, settings, options)
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path
