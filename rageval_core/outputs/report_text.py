"""A report as the terminal shows it (`rageval evaluate` without --json): settings, counts, metrics,
latency and cost, the breakdown by tag, and per-query values."""

from __future__ import annotations

from typing import Any

from rageval_core.metrics import latency_cost as ops
from rageval_core.terminal import text_table


def _num(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


#: what the report header says each relevance mode means
_MODES = {
    "ids": " (the run's qrels)",  # other labels counting: format_report says so
    "evidence": " (a chunk is relevant when it covers a gold span)",
    None: " (the run has neither qrels nor gold evidence: no ranking or evidence metrics)",
}


def metric_kind(name: str) -> str:
    """The kind shown beside a metric (ranking, evidence, lexical answer, semantic, judge); a
    preset's own names are "preset"."""
    from rageval_core.errors import UsageError
    from rageval_core.metrics import registry

    try:
        return registry.parse(name).spec.kind
    except UsageError:
        return "preset"


def labels_shown(settings: dict[str, Any]) -> str:
    """ " labels=people,imported (people 3, imported 120)": which labels the ranking metrics read
    and how many of each source counted (the counts only when any but the run's own count)."""
    if not settings.get("labels"):
        return ""
    counts = settings.get("label_counts") or {}
    counted = ", ".join(f"{source} {n}" for source, n in counts.items())
    return f" labels={settings['labels']}" + (f" ({counted})" if counted else "")


def format_report(report: Any, per_query: bool = False) -> str:
    """The human-readable report: settings, counts, metrics, ops, breakdown."""
    s = report.settings
    out = [
        f"run {report.run}: {report.n_queries} queries; relevance={s['relevance'] or 'none'}"
        + (
            " (relevant ids from the labels= sources)"
            if s["relevance"] == "ids" and s.get("labels", "imported") != "imported"
            else _MODES.get(s["relevance"], "")
        )
        + f" k={s['k']} "
        f"threshold={s['threshold']} scorer={s['scorer']}"
        + (f" embedder={s['embedder']}" if s.get("embedder") else "")
        + (f" cross_encoder={s['cross_encoder']}" if s.get("cross_encoder") else "")
        + f" norm={s['normalisation']}"
        + (f" score_threshold={s['score_threshold']}" if s["score_threshold"] is not None else "")
        + (f" preset={s['preset']}" if s.get("preset") else "")
        + labels_shown(s)
        + (
            f" judge={s['judge']['name']} (#{s['judge']['judge_id']}, {s['judge']['model']})"
            if isinstance(s.get("judge"), dict)
            else ""
        ),
        "counts: " + ", ".join(f"{k}={v}" for k, v in report.counts.items()),
        *(f"warning: {w}" for w in getattr(report, "warnings", ())),
        "",
        text_table(
            ["metric", "kind", "value"],
            [[name, metric_kind(name), _num(v)] for name, v in report.metrics.items()],
        ),
    ]
    latency = report.ops.get("latency_ms") or {}
    if latency:
        rows = [
            [
                ops.stage_label(stage, st),
                st["count"],
                *(ops.format_ms(st[p]) for p in ("mean", "p50", "p90", "p95", "p99")),
            ]
            for stage, st in latency.items()
        ]
        out += [
            "",
            "latency (ms)",
            text_table(["stage", "n", "mean", "p50", "p90", "p95", "p99"], rows),
        ]
    cost = report.ops.get("cost_usd") or {}
    if cost.get("n_queries_with_tokens"):
        total, mean = cost.get("total"), cost.get("per_query")
        line = (
            f"cost: total ${total:.4f}, per query ${mean:.6f}"
            if total is not None
            else f"cost: unknown ({ops.cost_gap(cost)})"
        )
        out += ["", line]
    if report.by:
        names = list(report.metrics)
        rows = [
            [g, d["n"], *(_num(d["metrics"].get(n)) for n in names)]
            for g, d in report.by["groups"].items()
        ]
        out += ["", f"by {report.by['tag']}", text_table([report.by["tag"], "n", *names], rows)]
    if per_query:
        names = list(report.per_query)
        rows = [
            [qid, *(_num(float(report.per_query[n][i])) for n in names)]
            for i, qid in enumerate(report.query_ids)
        ]
        out += ["", text_table(["query_id", *names], rows)]
    return "\n".join(out)
