"""A comparison and a gate result as plain text tables (what `rageval compare` / `gate` print)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rageval_core.compare.comparison import Comparison, higher_is_better
from rageval_core.metrics import latency_cost as ops
from rageval_core.compare.latency_change import BOTH, OpsChange
from rageval_core.compare.statistics import p_text
from rageval_core.metrics.registry import IMPROVED, REGRESSED
from rageval_core.terminal import text_table

if TYPE_CHECKING:
    from rageval_core.compare.gate import GateResult


def _f(x: float, digits: int = 4, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "-" if x is None or math.isnan(x) else ("+inf" if x > 0 else "-inf")
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def format_comparison(c: Comparison, worst: int = 5) -> str:
    """The comparison as text tables: metrics, latency, cost, regressions, segments."""
    o = c.options
    s = c.settings
    level = f"{100 * o.level:g}%"
    out = [
        f"baseline {c.baseline}; candidate{'s' if len(c.candidates) > 1 else ''} "
        f"{', '.join(c.candidates)}",
        *_pair_lines(c),
        f"settings: relevance={s['relevance'] or 'none'} k={s['k']} threshold={s['threshold']} "
        f"scorer={s['scorer']}"
        + (f" embedder={s['embedder']}" if s.get("embedder") else "")
        + (f" cross_encoder={s['cross_encoder']}" if s.get("cross_encoder") else "")
        + (f" labels={s['labels']}" if s.get("labels") else ""),
        *(
            f"labels counted in {r['name']}: "
            + ", ".join(f"{source} {n}" for source, n in r["label_counts"].items())
            for r in c.runs
            if r.get("label_counts")
        ),
        f"tests: paired on queries scored in both runs; {o.n_permutations} sign-flip "
        f"permutations, {o.n_bootstrap} bootstrap resamples, seed {o.seed}; Holm over "
        f"{len(c.tests)} tests; * = p(Holm) < {o.alpha:g}",
    ]
    # evaluate's depth note, in its words, for each run a cut-off reaches past
    out += [f"warning: {run}: {note}" for run, notes in c.warnings.items() for note in notes]
    if c.metrics:
        out += [
            "",
            "n = pairs: shared queries both runs score; both means and the diff are over them; "
            "verdict: a significant change read in the metric's direction",
            _metric_table(c, level),
        ]
        unpaired = unpaired_lines(c)
        if unpaired:
            out += ["", "scored in one run only (left out of n, the means and the tests):"]
            out += [f"  {line}" for line in unpaired]
    lat = _latency_table(c)
    if lat:
        out += [
            "",
            "latency (ms; queries where both runs recorded the stage, or where one did for a "
            "stage added or removed: 0 ms in the run without it; change vs "
            f"baseline; * = {level} CI of the change excludes 0)",
            lat,
        ]
    if c.cost:
        rows: list[list[Any]] = []
        first = c.cost[0]
        rows.append(
            [
                c.baseline,
                first.n,
                _f(first.baseline, 6),
                _f(c.cost[1].baseline, 4) if len(c.cost) > 1 else "-",
            ]
        )
        for cand in c.candidates:
            pq = c.ops_change(cand, "cost.per_query")
            tot = c.ops_change(cand, "cost.total")
            if pq and tot:
                rows.append([cand, pq.n, _ops_cell(pq, 6), _ops_cell(tot, 4)])
        out += [
            "",
            "cost (USD; queries with a known cost in both runs)",
            text_table(["run", "n", "per query", "total"], rows),
        ]
    elif c.cost_note:
        out += ["", f"cost: not compared ({c.cost_note})"]
    if c.metrics and worst:
        # nDCG@k (the usual headline) when compared, else the first metric
        headline = f"nDCG@{s['k']}"
        m = headline if headline in c.metrics else c.metrics[0]
        for cand in c.candidates:
            items = c.worst[cand][m][:worst]
            if items:
                rows = [
                    [
                        w["query_id"],
                        _f(w["baseline"]),
                        _f(w["candidate"]),
                        _f(w["diff"], signed=True),
                    ]
                    for w in items
                ]
                out += [
                    "",
                    f"most regressed on {m}: {cand} vs {c.baseline}",
                    text_table(["query_id", c.baseline, cand, "diff"], rows),
                ]
    for tag, groups in c.by.items():
        headers = [tag, "n", "candidate", *(f"{m} diff" for m in c.metrics)]
        rows = []
        for group, seg in groups.items():
            for cand in c.candidates:
                cells = []
                for m in c.metrics:
                    t = next(t for t in seg["tests"] if t.candidate == cand and t.metric == m)
                    word = t.verdict(o.alpha)
                    cells.append(_f(t.diff, signed=True) + (f"* {word}" if word else ""))
                rows.append([group, seg["n"], cand, *cells])
        out += [
            "",
            f"by {tag} (Holm within each group; * = p(Holm) < {o.alpha:g}, with its verdict)",
            text_table(headers, rows),
        ]
    return "\n".join(out)


def _ids(run: str, n: int, ids: list[str]) -> str:
    return f"{run} {n} ({', '.join(ids[:5])}{' ...' if n > 5 else ''})"


def _pair_lines(c: Comparison) -> list[str]:
    """How many queries each (baseline, candidate) pair holds and which each side leaves out."""
    al = c.alignment
    lines = []
    for p in al.pairs:
        alone = [
            _ids(run, n, ids)
            for run, n, ids in (
                (c.baseline, p.n_baseline_only, p.baseline_only),
                (p.candidate, p.n_candidate_only, p.candidate_only),
            )
            if n
        ]
        lines.append(f"{p.n_shared} shared; not shared: {'; '.join(alone) or 'none'}")
    if len(lines) == 1:
        out = [f"queries: {lines[0]}"]
    else:
        out = [f"queries, each candidate paired with {c.baseline} on the queries both hold:"]
        out += [f"  {p.candidate}: {line}" for p, line in zip(al.pairs, lines, strict=True)]
    out += [f"left out: {run} ({why})" for run, why in al.left_out.items()]
    return out


def _metric_table(c: Comparison, level: str) -> str:
    """One row per (metric, candidate): the pair's n, both means over those n pairs, their
    difference and its tests, and the verdict in the metric's direction."""
    o = c.options
    rows: list[list[Any]] = []
    for m in c.metrics:
        label = m if higher_is_better(m) else f"{m} (lower=better)"
        for i, cand in enumerate(c.candidates):
            t = c.test(cand, m)
            star = "*" if t.significant(o.alpha) else ""
            ci = (
                "-"
                if math.isnan(t.ci_low)
                else f"[{_f(t.ci_low, signed=True)}, {_f(t.ci_high, signed=True)}]"
            )
            rows.append(
                [
                    "" if i else label,
                    cand,
                    t.n,
                    _f(t.baseline_mean),
                    _f(t.candidate_mean),
                    _f(t.diff, signed=True) + star,
                    t.verdict(o.alpha),
                    ci,
                    p_text(t.p_t),
                    p_text(t.p_perm),
                    p_text(t.p_perm_holm),
                    _f(t.effect_size, 2, signed=True),
                    f"{t.wins}/{t.ties}/{t.losses}",
                ]
            )
    headers = [
        "metric",
        "candidate",
        "n",
        f"{c.baseline} mean" if len(c.baseline) <= 12 else "baseline mean",
        "mean",
        "diff",
        "verdict",
        f"{level} CI",
        "p(t)",
        "p(perm)",
        "p(Holm)",
        "d_z",
        "W/T/L",
    ]
    return text_table(headers, rows)


def unpaired_lines(c: Comparison) -> list[str]:
    """Per (metric, candidate) whose runs score different shared queries: how many each scores
    and how many both do (only those are in the means, the diff and the tests)."""
    return [
        f"{t.metric}, {t.candidate}: {c.baseline} scores {t.n_baseline_scored} of the shared "
        f"queries, {t.candidate} {t.n_candidate_scored}; the {t.n} both score are compared"
        for t in c.tests
        if t.unpaired
    ]


#: a significant change of latency or cost, in the latency table's short words
_OPS_WORDS = {IMPROVED: "better", REGRESSED: "worse"}


def _ops_cell(change: OpsChange, digits: int) -> str:
    """The candidate's value, its change in %, * when the interval of the change excludes 0,
    with its verdict (latency and cost are better lower)."""
    pct = "" if math.isnan(change.change_pct) else f"{change.change_pct:+.1f}%"
    star = "*" if change.verdict else ""
    word = f", {_OPS_WORDS[change.verdict]}" if change.verdict else ""
    inside = f"{pct}{star}{word}".lstrip(", ")
    return f"{_f(change.candidate_value, digits)}" + (f" ({inside})" if inside else "")


def _latency_table(c: Comparison) -> str:
    stats = ("mean", "p50", "p95", "p99")
    rows: list[list[Any]] = []
    # the candidates' pipelines merged: a stage one of them added sits where it runs
    means = [x for x in c.latency if x.target.endswith(".mean")]
    stages = ops.pipeline_order(
        [c.candidates.index(x.candidate) for x in means], [x.target.split(".")[1] for x in means]
    )
    for stage in stages:
        first = True
        for cand in c.candidates:
            changes = [c.ops_change(cand, f"latency.{stage}.{st}") for st in stats]
            if changes[0] is None:
                continue
            if first:
                rows.append(
                    [
                        stage,
                        c.baseline,
                        changes[0].n,
                        *(ops.format_ms(x.baseline) if x else "-" for x in changes),
                    ]
                )
                first = False
            status = "" if changes[0].status == BOTH else f"({changes[0].status})"
            cells = (
                _ops_cell(x, ops.ms_decimals(x.candidate_value)) if x else "-" for x in changes
            )
            rows.append([status, cand, changes[0].n, *cells])
    return text_table(["stage", "run", "n", *stats], rows) if rows else ""


def format_gate(g: GateResult) -> str:
    """One line per rule (PASS/FAIL with the numbers), then the verdict."""
    mode = f"; a rule fails only when significant (alpha {g.alpha:g})" if g.significant_only else ""
    lines = [
        f"gate: baseline {g.baseline} vs candidate {g.candidate} on {g.n_shared} shared "
        f"queries{mode}"
    ]
    lines += [r.describe() for r in g.results]
    n_failed = len(g.failed)
    lines.append(
        "gate passed: every rule holds"
        if g.passed
        else f"gate failed: {n_failed} of {len(g.results)} rule{'s' if len(g.results) > 1 else ''} "
        f"broken ({', '.join(r.rule.text for r in g.failed)})"
    )
    return "\n".join(lines)
