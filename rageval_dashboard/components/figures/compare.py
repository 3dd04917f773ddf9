"""Compare page figures and tables (pure: a Comparison -> plotly Figure / pandas DataFrame).

Run names, query ids, tag values and stage names are user text: they go through escape_text
(rageval_dashboard/components/text.py) before they reach plotly (which reads its own pseudo-HTML in
names, ticks and hover text) or an HTML block; the page escapes them (one_line=True) before a
Streamlit message box. No Streamlit calls here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from numpy.typing import NDArray

from rageval_dashboard.components.tables import kind
from rageval_dashboard.components.text import escape_text
from rageval_core.compare import Comparison, OpsChange, PairedTest
from rageval_core.metrics import registry

if TYPE_CHECKING:  # pandas' Styler imports jinja2 (~0.1 s): only the segment table needs it
    from pandas.io.formats.style import Styler

#: the core's verdict of a significant change (in the metric's direction) as the page labels it
MARKS = {registry.IMPROVED: "▲ improved", registry.REGRESSED: "▼ regressed"}
IMPROVED, REGRESSED = MARKS[registry.IMPROVED], MARKS[registry.REGRESSED]
#: latency or cost whose bootstrap interval of the change excludes 0: which way it moved and
#: whether that is better (both are better lower: registry.higher_is_better)
OPS_MARKS = {
    (True, registry.REGRESSED): "▲ higher, worse",
    (False, registry.IMPROVED): "▼ lower, better",
    (True, registry.IMPROVED): "▲ higher, better",
    (False, registry.REGRESSED): "▼ lower, worse",
}
GREEN, RED, GREY = "#2e9e4f", "#d62728", "#9e9e9e"
GOOD_BG, BAD_BG = (
    "background-color: rgba(46, 158, 79, 0.18)",
    "background-color: rgba(214, 39, 40, 0.16)",
)
LATENCY_STATS = ("mean", "p50", "p95", "p99")
#: above this many points the scatter draws with WebGL (SVG slows down past a few thousand)
WEBGL_POINTS = 2000
#: a scatter marker's opacity (overlapping markers darken)
OPACITY = 0.6
#: |difference| at or below this is a tie (the core's tolerance for wins/ties/losses)
TIE = 1e-12
LAYOUT: dict[str, Any] = {
    "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
    "legend": {"orientation": "h", "y": -0.15},
}

METRIC_COLUMNS = [
    "candidate",
    "metric",
    "kind",
    "better",
    "n",
    "baseline mean",
    "candidate mean",
    "delta",
    "CI low",
    "CI high",
    "p (t-test)",
    "p (perm.)",
    "p (Holm)",
    "effect d_z",
    "wins",
    "ties",
    "losses",
    "significant",
]
#: segment_frame's columns after value and queries: the metrics table's without the detail
_SEGMENT_COLUMNS = [
    c
    for c in METRIC_COLUMNS
    if c not in ("better", "p (t-test)", "p (perm.)", "effect d_z", "wins", "ties", "losses")
]


def _mark(t: PairedTest, alpha: float) -> str:
    return MARKS.get(t.verdict(alpha), "")


# --- summary -----------------------------------------------------------------------------------


def headline_metric(c: Comparison) -> str | None:
    """The metric the page opens on: nDCG@k when compared, else the first metric."""
    if not c.metrics:
        return None
    name = f"nDCG@{c.settings.get('k')}"
    return name if name in c.metrics else c.metrics[0]


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary_lines(c: Comparison) -> list[str]:
    """One plain-language sentence per candidate: metrics better/worse, how many significantly."""
    alpha = c.options.alpha
    head = headline_metric(c)
    lines = []
    for cand in c.candidates:
        tests = [t for t in c.tests if t.candidate == cand and t.n > 0]
        better = [t for t in tests if t.improvement > TIE]
        worse = [t for t in tests if t.improvement < -TIE]
        sig_better = sum(t.significant(alpha) for t in better)
        sig_worse = sum(t.significant(alpha) for t in worse)
        if better:
            text = (
                f"{cand} beats {c.baseline} on {len(better)} of {_count(len(tests), 'metric')}, "
                f"significantly on {sig_better}"
            )
        else:
            text = f"{cand} beats {c.baseline} on none of {_count(len(tests), 'metric')}"
        text += (
            f"; it is worse on {len(worse)}, significantly on {sig_worse}"
            if worse
            else "; it is worse on none"
        )
        ties = len(tests) - len(better) - len(worse)
        if ties:
            text += f"; {_count(ties, 'metric')} unchanged"
        text += "."
        if head is not None:
            t = c.test(cand, head)
            if t.n > 0:
                text += f" {head}: {t.baseline_mean:.3f} → {t.candidate_mean:.3f} ({t.diff:+.3f}"
                if not math.isnan(t.ci_low):
                    text += (
                        f", {100 * c.options.level:g}% CI {t.ci_low:+.3f} to "
                        f"{t.ci_high:+.3f}, p(Holm) {p_text(t.p_perm_holm)}"
                    )
                text += ")."
        lines.append(text)
    return lines


def verdicts(c: Comparison) -> dict[str, str]:
    """candidate -> "better" | "worse" | "mixed" | "no significant change" (for the colour)."""
    alpha = c.options.alpha
    out = {}
    for cand in c.candidates:
        marks = {_mark(t, alpha) for t in c.tests if t.candidate == cand} - {""}
        out[cand] = (
            "mixed"
            if len(marks) == 2
            else "better"
            if marks == {IMPROVED}
            else "worse"
            if marks == {REGRESSED}
            else "no significant change"
        )
    return out


def summary_html(c: Comparison) -> str:
    """The summary sentences as one escaped HTML block, a coloured bar per candidate."""
    colours = {"better": GREEN, "worse": RED, "mixed": "#f0a30a", "no significant change": GREY}
    verdict = verdicts(c)
    items = "".join(
        f'<div class="rageval-summary" style="border-left:6px solid {colours[verdict[cand]]};'
        f"padding:0.35rem 0.8rem;margin:0 0 0.4rem 0;background:rgba(128,128,128,0.06);"
        f'border-radius:4px;font-size:1.05rem">{escape_text(line)}</div>'
        for cand, line in zip(c.candidates, summary_lines(c), strict=True)
    )
    return f"<div>{items}</div>"


def p_text(p: float) -> str:
    """A p-value as the page shows it: three decimals, or two digits and an exponent below
    0.001 (a dash when there is none)."""
    if math.isnan(p):
        return "—"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


# --- the pairs -----------------------------------------------------------------------------------


def pairs_caption(c: Comparison) -> str:
    """The pairs in one sentence (plain text: the page escapes it)."""
    parts = []
    for p in c.alignment.pairs:
        alone = [
            f"{n:,} of {who}'s left out"
            for who, n in ((c.baseline, p.n_baseline_only), (p.candidate, p.n_candidate_only))
            if n
        ]
        parts.append(
            f"{p.candidate}: {p.n_shared:,} quer{'y' if p.n_shared == 1 else 'ies'}"
            + (f" ({', '.join(alone)})" if alone else "")
        )
    return (
        f"Each candidate is paired with {c.baseline} on the queries the two of them hold: "
        + "; ".join(parts)
        + "."
    )


# --- the metrics table ---------------------------------------------------------------------------


def metrics_frame(c: Comparison) -> pd.DataFrame:
    """One row per (candidate, metric): means over the pairs, delta, CI, p-values, d_z, W/T/L."""
    return pd.DataFrame([_test_row(t, c.options.alpha) for t in c.tests], columns=METRIC_COLUMNS)


def _test_row(t: PairedTest, alpha: float) -> dict[str, Any]:
    """One paired test as a row of METRIC_COLUMNS."""
    return {
        "candidate": t.candidate,
        "metric": t.metric,
        "kind": kind(t.metric),
        "better": "higher" if t.higher_is_better else "lower",
        "n": t.n,
        "baseline mean": t.baseline_mean,
        "candidate mean": t.candidate_mean,
        "delta": t.diff,
        "CI low": t.ci_low,
        "CI high": t.ci_high,
        "p (t-test)": t.p_t,
        "p (perm.)": t.p_perm,
        "p (Holm)": t.p_perm_holm,
        "effect d_z": t.effect_size,
        "wins": t.wins,
        "ties": t.ties,
        "losses": t.losses,
        "significant": _mark(t, alpha),
    }


def _fmt(digits: int, signed: bool = False) -> Any:
    def fmt(x: Any) -> str:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "—"
        if isinstance(x, float) and math.isinf(x):
            return "+inf" if x > 0 else "-inf"
        return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"

    return fmt


def metrics_display(frame: pd.DataFrame, level: float) -> pd.DataFrame:
    """metrics_frame() made narrow for the page: the interval and W/T/L as one column each,
    the significance a list of its mark (the page draws it as a coloured label: the table's
    only colour, so no Styler has to be built and sent for every cell on every move)."""
    ci = _fmt(4, True)
    # "better" and the uncorrected p stay in the CSV; the page says which metrics are lower=better
    out = frame.drop(
        columns=[
            "better",
            "p (perm.)",
            "CI low",
            "CI high",
            "wins",
            "ties",
            "losses",
            "significant",
        ]
    )
    out.insert(
        out.columns.get_loc("delta") + 1,
        "significant",
        [[mark] if mark else [] for mark in frame["significant"]],
    )
    out.insert(
        out.columns.get_loc("significant") + 1,
        f"{100 * level:g}% CI",
        [
            "—" if math.isnan(lo) else f"[{ci(lo)}, {ci(hi)}]"
            for lo, hi in zip(frame["CI low"], frame["CI high"], strict=True)
        ],
    )
    out["W / T / L"] = [
        f"{w} / {t} / {x}"
        for w, t, x in zip(frame["wins"], frame["ties"], frame["losses"], strict=True)
    ]
    for name in ("p (t-test)", "p (Holm)"):  # no printf format writes 1.5e-197 and 0.072 both
        out[name] = [p_text(float(p)) for p in frame[name]]
    return out


#: printf formats of metrics_display's number columns (the page's column_config)
METRIC_FORMATS = {
    "baseline mean": "%.4f",
    "candidate mean": "%.4f",
    "delta": "%+.4f",
    "effect d_z": "%+.2f",
}
#: the significance labels' colours in the metrics table
MARK_COLOURS = {IMPROVED: GREEN, REGRESSED: RED}


# --- per query -----------------------------------------------------------------------------------


def paired_frame(
    c: Comparison,
    candidate: str,
    metric: str,
    baseline_values: NDArray[np.float64],
    candidate_values: NDArray[np.float64],
) -> pd.DataFrame:
    """The shared queries both runs score on metric: query_id, baseline, candidate, delta.

    *_values are the runs' per-query arrays (Report.per_query[metric], in each run's own query
    order); the candidate's pair says which row of each run holds each query both hold.
    """
    pair = c.alignment.pair(candidate)
    base = np.asarray(baseline_values, dtype=np.float64)[pair.base_rows]
    cand = np.asarray(candidate_values, dtype=np.float64)[pair.cand_rows]
    keep = ~np.isnan(base) & ~np.isnan(cand)
    return pd.DataFrame(
        {
            "query_id": pair.shared_ids[keep].astype(str),
            "baseline": base[keep],
            "candidate": cand[keep],
            "delta": cand[keep] - base[keep],
        }
    )


def outcome(delta: NDArray[np.float64], higher_is_better: bool) -> NDArray[np.int8]:
    """+1 candidate better, 0 tie, -1 worse, per query (in the metric's direction)."""
    gain = delta if higher_is_better else -delta
    return np.where(gain > TIE, 1, np.where(gain < -TIE, -1, 0)).astype(np.int8)


def scatter(
    frame: pd.DataFrame, metric: str, higher_is_better: bool, baseline: str, candidate: str
) -> go.Figure:
    """Per-query baseline (x) against candidate (y), the diagonal drawn; customdata = query_id.

    Past WEBGL_POINTS queries, queries at the same (x, y) are drawn as one marker holding their
    count, as opaque as that many stacked markers (1 - 0.4^n), so the picture is the same while
    the browser gets one marker per distinct point; a click opens the first query there.
    """
    many = len(frame) > WEBGL_POINTS
    result = outcome(frame["delta"].to_numpy(), higher_is_better)
    traces = []
    for code, name, colour in (
        (1, "candidate better", GREEN),
        (0, "tie", GREY),
        (-1, "candidate worse", RED),
    ):
        sel = result == code
        ids = frame["query_id"].to_numpy()[sel]
        x = frame["baseline"].to_numpy()[sel]
        y = frame["candidate"].to_numpy()[sel]
        label = f"{name} ({int(sel.sum())})"
        opacity: float | NDArray[np.float64] = OPACITY
        if many and ids.size:
            points, first, counts = np.unique(
                np.column_stack([x, y]), axis=0, return_index=True, return_counts=True
            )
            x, y, ids = points[:, 0], points[:, 1], ids[first]
            if counts.size < sel.sum():
                label = f"{name} ({int(sel.sum())}, one marker per point)"
            opacity = 1 - (1 - OPACITY) ** counts
            here = "tied here" if code == 0 else "here"
            text = [
                escape_text(q) if n == 1 else f"{n:,} queries {here}, e.g. {escape_text(q)}"
                for n, q in zip(counts, ids, strict=True)
            ]
        else:
            text = [escape_text(q) for q in ids]
        traces.append(
            {
                "x": x,
                "y": y,
                "mode": "markers",
                "name": label,
                "marker": {"color": colour, "size": 8, "opacity": opacity, "line": {"width": 0}},
                "customdata": ids[:, None],
                "text": text,
                "hovertemplate": "%{text}<br>baseline %{x:.3f}<br>candidate %{y:.3f}<extra></extra>",
            }
        )
    # WebGL only when many markers are left to draw: SVG redraws a few hundred faster
    kind = "scattergl" if sum(len(t["x"]) for t in traces) > WEBGL_POINTS else "scatter"
    values = frame[["baseline", "candidate"]].to_numpy()
    lo = float(np.nanmin(values)) if values.size else 0.0
    hi = float(np.nanmax(values)) if values.size else 1.0
    pad = 0.04 * ((hi - lo) or 1.0)
    span = [lo - pad, hi + pad]
    diagonal = {
        "type": "line",
        "x0": span[0],
        "y0": span[0],
        "x1": span[1],
        "y1": span[1],
        "line": {"color": "#888", "dash": "dash", "width": 1},
        "layer": "below",
    }
    layout = {
        "title": {"text": f"{escape_text(metric)} per query"},
        "height": 460,
        "xaxis": {"title": {"text": f"{escape_text(baseline)} (baseline)"}, "range": span},
        "yaxis": {"title": {"text": f"{escape_text(candidate)} (candidate)"}, "range": span},
        "shapes": [diagonal],
        **LAYOUT,
    }
    # a spec taken unvalidated, as wtl_bars's (the tests validate it)
    return go.Figure(
        {"data": [{"type": kind, **t} for t in traces], "layout": layout}, _validate=False
    )


def wtl_bars(c: Comparison) -> go.Figure:
    """Wins / ties / losses per metric, one panel per candidate (in the metric's direction).

    Written as the figure's spec and taken unvalidated (tests/dashboard/test_compare.py
    validates it): make_subplots and plotly's per-property checks took ~20 ms of every k move
    at 22 metrics, the spec takes under 1 ms.
    """
    cands = list(c.candidates)
    gap = 0.03
    width = (1.0 - gap * (len(cands) - 1)) / len(cands)
    labels = [escape_text(m) for m in c.metrics]
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "barmode": "stack",
        "height": max(260, 26 * len(c.metrics) + 120),
        "title": {"text": "Queries won / tied / lost by the candidate"},
        # room between the figure's title and the panels' own titles
        **{**LAYOUT, "margin": {**LAYOUT["margin"], "t": 70}},
        "annotations": [],
    }
    for i, cand in enumerate(cands):
        axis = "" if i == 0 else str(i + 1)
        left = i * (width + gap)
        tests = [c.test(cand, m) for m in c.metrics]
        for field, colour in (("wins", GREEN), ("ties", "#c4c4c4"), ("losses", RED)):
            data.append(
                {
                    "type": "bar",
                    "y": labels,
                    "x": [getattr(t, field) for t in tests],
                    "orientation": "h",
                    "name": field,
                    "marker": {"color": colour},
                    "legendgroup": field,
                    "showlegend": i == 0,
                    "hovertemplate": f"%{{y}}<br>{field}: %{{x}}<extra></extra>",
                    "xaxis": f"x{axis}",
                    "yaxis": f"y{axis}",
                }
            )
        layout[f"xaxis{axis}"] = {
            "domain": [left, min(1.0, left + width)],
            "anchor": f"y{axis}",
            "title": {"text": "queries"},
        }
        layout[f"yaxis{axis}"] = {
            "anchor": f"x{axis}",
            "autorange": "reversed",
            "type": "category",
            **({"matches": "y", "showticklabels": False} if i else {}),
        }
        layout["annotations"].append(
            {
                "text": f"{escape_text(cand)} vs {escape_text(c.baseline)}",
                "x": left + width / 2,
                "y": 1.0,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "center",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 16},
            }
        )
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def worst_frame(c: Comparison, candidate: str, metric: str) -> pd.DataFrame:
    """The candidate's most regressed queries on metric, worst first."""
    rows = c.worst.get(candidate, {}).get(metric, [])
    return pd.DataFrame(rows, columns=["query_id", "baseline", "candidate", "diff"]).rename(
        columns={"diff": "delta"}
    )


# --- segments ------------------------------------------------------------------------------------


def segment_frame(c: Comparison, tag: str) -> pd.DataFrame:
    """One row per (tag value, candidate, metric): n, means, delta, CI, p (Holm), significance."""
    alpha = c.options.alpha
    rows = []
    for group, seg in c.by.get(tag, {}).items():
        for t in seg["tests"]:
            row = _test_row(t, alpha)
            rows.append(
                {"value": group, "queries": seg["n"], **{k: row[k] for k in _SEGMENT_COLUMNS}}
            )
    return pd.DataFrame(rows, columns=["value", "queries", *_SEGMENT_COLUMNS])


def segment_table(long: pd.DataFrame, metrics: Sequence[str]) -> Styler:
    """(value, queries, candidate) x metric deltas; significant cells green or red."""
    keys = ["value", "queries", "candidate"]
    order = list(dict.fromkeys(zip(long["value"], long["candidate"], strict=True)))
    wide = long.pivot(index=keys, columns="metric", values="delta")
    marks = long.pivot(index=keys, columns="metric", values="significant")
    index = pd.MultiIndex.from_tuples(
        [(v, int(long.loc[long["value"] == v, "queries"].iloc[0]), cand) for v, cand in order],
        names=keys,
    )
    cols = [m for m in metrics if m in wide.columns]
    wide, marks = wide.reindex(index)[cols].reset_index(), marks.reindex(index)[cols].reset_index()

    def colour(frame: pd.DataFrame) -> pd.DataFrame:
        out = pd.DataFrame("", index=frame.index, columns=frame.columns)
        for m in cols:
            out.loc[marks[m] == IMPROVED, m] = GOOD_BG
            out.loc[marks[m] == REGRESSED, m] = BAD_BG
        return out

    return wide.style.apply(colour, axis=None).format({m: _fmt(3, True) for m in cols})


# --- latency and cost ----------------------------------------------------------------------------


#: the columns _ops_row fills, in their order
_OPS_COLUMNS = [
    "n",
    "baseline",
    "candidate value",
    "change",
    "change %",
    "CI low",
    "CI high",
    "significant",
]


def _ops_row(x: OpsChange) -> dict[str, Any]:
    mark = OPS_MARKS[(x.change > 0, x.verdict)] if x.verdict else ""
    return {
        "n": x.n,
        "baseline": x.baseline,
        "candidate value": x.candidate_value,
        "change": x.change,
        "change %": x.change_pct,
        "CI low": x.ci_low,
        "CI high": x.ci_high,
        "significant": mark,
    }


def latency_frame(c: Comparison, stats: Sequence[str] = LATENCY_STATS) -> pd.DataFrame:
    """One row per (candidate, stage, statistic) in ms, the change and its bootstrap interval."""
    rows = []
    for x in c.latency:
        stat = x.target.split(".")[2]
        if stat in stats:
            rows.append(
                {"candidate": x.candidate, "stage": x.stage, "statistic": stat, **_ops_row(x)}
            )
    return pd.DataFrame(rows, columns=["candidate", "stage", "statistic", *_OPS_COLUMNS])


def cost_frame(c: Comparison) -> pd.DataFrame:
    """One row per (candidate, per_query | total) in USD, the change and its bootstrap interval."""
    rows = [
        {"candidate": x.candidate, "cost": x.target.split(".")[1], **_ops_row(x)} for x in c.cost
    ]
    return pd.DataFrame(rows, columns=["candidate", "cost", *_OPS_COLUMNS])


def ops_display(frame: pd.DataFrame) -> pd.DataFrame:
    """latency_frame() or cost_frame() for the page: the significance a list of its mark (a
    coloured label, OPS_COLOURS: a significant worsening red, an improvement green)."""
    out = frame.copy()
    out["significant"] = [[mark] if mark else [] for mark in frame["significant"]]
    return out


def ops_formats(digits: int) -> dict[str, str]:
    """printf formats of ops_display's number columns, values with digits decimals."""
    return {
        "baseline": f"%.{digits}f",
        "candidate value": f"%.{digits}f",
        "change": f"%+.{digits}f",
        "change %": "%+.1f",
        "CI low": f"%+.{digits}f",
        "CI high": f"%+.{digits}f",
    }


#: the significance labels' colours in the latency and cost tables: red worse, green better
OPS_COLOURS = {
    mark: GREEN if word == registry.IMPROVED else RED for (_, word), mark in OPS_MARKS.items()
}


def query_metrics_frame(
    metrics: Sequence[str],
    baseline: dict[str, NDArray[np.float64]],
    candidate: dict[str, NDArray[np.float64]],
    baseline_row: int,
    candidate_row: int,
) -> pd.DataFrame:
    """One query's value of each metric in both runs (per_query arrays, each run's own row)."""
    rows = []
    for m in metrics:
        b = float(baseline[m][baseline_row]) if m in baseline else math.nan
        v = float(candidate[m][candidate_row]) if m in candidate else math.nan
        rows.append({"metric": m, "baseline": b, "candidate": v, "delta": v - b})
    return pd.DataFrame(rows, columns=["metric", "baseline", "candidate", "delta"])
