"""Pure helpers: core results -> pandas DataFrames and short texts for the pages (no Streamlit calls)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from rageval_dashboard.components.bands import read_bands
from rageval_core.annotate import run_tags
from rageval_core.evaluation.checks import SCORED_ON
from rageval_core.errors import Problem, UsageError
from rageval_core.evaluation.report import Report
from rageval_core.metrics import registry
from rageval_core.settings.presets import METRIC_HELP, PRESET_METRICS, get_preset

Band = Literal["good", "poor"]

#: Quality bands of the Overview's metric cards: measure -> (poor below, good above); the
#: defaults, which a bands file overrides per measure (rageval_dashboard/components/bands.py).
#: A bare name ("R") covers every cut-off of that measure; a name with a cut-off ("Hit@1")
#: only that one. Values between the two bounds, and measures not listed, are neutral.
#: Rules of thumb for the retrieval step of a RAG system, not standards: recall-like
#: measures should find most of what is needed; the first useful chunk should come early.
BANDS: dict[str, tuple[float, float]] = {
    "R": (0.5, 0.8),
    "EvidenceRecall": (0.5, 0.8),
    "PerQueryCoverage": (0.5, 0.8),
    "RR": (0.3, 0.7),  # MRR is RR's alias: report names are canonical
    "Hit@1": (0.2, 0.5),
}

#: curves drawn on a 0..1 axis leave these out (BestRank is a rank, not a share)
OFF_SCALE = frozenset({"BestRank"})
#: the measures the tag breakdown draws as bars in their cells (any cut-off); every measure is
#: in the table
MAIN_BARS = ("R", "nDCG", "RR", "Hit", "EvidenceRecall", "PerQueryCoverage", "FullCoverageRate")

#: card groups, in the order the Overview shows them; a preset's metrics are one group, titled by
#: the preset (preset_title)
FAMILY_TITLES = {
    "preset": "Preset",
    "ranking": "Ranking",
    "evidence": "Evidence coverage",
    "generation": "Answers",
    "semantic": "Semantic answers",
    "cross_encoder": "Cross-encoder answers",
    "judge": "Judge",
}


def family(name: str, preset: str | None = None) -> str:
    """The card group of a metric: "preset" for the view's preset's names (some are rageval's own
    names too, e.g. EvidenceRecall@10), else the registry's family."""
    if preset is not None and name in get_preset(preset).metrics:
        return "preset"
    return registry.parse(name).spec.family


def preset_title(preset: str) -> str:
    """The Overview's heading over a preset's metric cards."""
    return f"{preset}: {get_preset(preset).project}"


def band(name: str, value: float) -> Band | None:
    """'good' past the measure's good bound, 'poor' past its poor one, else None: above and
    below, or below and above where lower is better (BestRank: registry.higher_is_better)."""
    bands, _ = read_bands(BANDS)  # a few bytes of TOML: read each time, so an edit shows at once
    bounds = bands.get(name) or bands.get(name.split("@", 1)[0])
    if bounds is None or value is None or math.isnan(value):
        return None
    poor, good = bounds
    sign = 1.0 if registry.higher_is_better(name) else -1.0
    if sign * value > sign * good:
        return "good"
    if sign * value < sign * poor:
        return "poor"
    return None


def format_value(name: str, value: float) -> str:
    """A run value as a card shows it: 3 decimals ('—' when nothing was scored)."""
    if value is None or math.isnan(value):
        return "—"
    if name not in PRESET_METRICS and registry.parse(name).spec.aggregate == "sum":
        return f"{value:,.0f}"
    return f"{value:.3f}"


def metric_groups(
    metrics: Mapping[str, float], preset: str | None = None
) -> dict[str, list[tuple[str, float]]]:
    """Run values grouped by family (ranking, evidence, generation; a preset's metrics as one
    group), report order kept."""
    groups: dict[str, list[tuple[str, float]]] = {}
    for name, value in metrics.items():
        groups.setdefault(family(name, preset), []).append((name, value))
    order = list(FAMILY_TITLES)
    return dict(sorted(groups.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99))


def insert_after(
    metrics: Mapping[str, float], after: str, name: str, value: float
) -> dict[str, float]:
    """metrics with (name, value) placed right after the entry `after` (at the end if absent)."""
    out: dict[str, float] = {}
    for key, v in metrics.items():
        out[key] = v
        if key == after:
            out[name] = value
    out.setdefault(name, value)
    return out


def main_metrics(names: Sequence[str]) -> list[str]:
    """The names among a report's metrics that the breakdown draws (MAIN_BARS, report order)."""
    return [n for n in names if n.split("@", 1)[0] in MAIN_BARS]


def file_stem(text: str) -> str:
    """A download file name part from user text: letters, digits, '.', '-' and '_' only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "run"


def _of_preset(name: str, preset: str | None) -> bool:
    """Whether name is the view's preset's own metric (some are rageval's names too, e.g.
    EvidenceRecall@10: without a preset they are rageval's)."""
    return preset is not None and name in get_preset(preset).metrics


def kind(name: str, preset: str | None = None) -> str:
    """What sort of measure it is (ranking, evidence, lexical answer, semantic, judge; a
    preset's own names: preset), shown beside its name everywhere."""
    if _of_preset(name, preset) or not _known(name):
        return "preset"
    return registry.describe(name)[0]


def definition(name: str, preset: str | None = None) -> str:
    """The one-line definition of a measure: the view's preset's, or the registry's."""
    if _of_preset(name, preset) or not _known(name):
        return METRIC_HELP[name]
    return registry.describe(name)[1]


def _known(name: str) -> bool:
    """Whether the registry knows the measure (a preset's own name, e.g. MAP, it does not)."""
    try:
        registry.parse(name)
    except UsageError:
        return False
    return True


def describe(name: str, preset: str | None = None) -> str:
    """A card's help text: the measure's kind, then its one-line definition."""
    return f"{kind(name, preset)}: {definition(name, preset)}"


def metrics_frame(metrics: Mapping[str, float], preset: str | None = None) -> pd.DataFrame:
    """One row per metric: name, kind, run value, band (empty when neutral), definition."""
    rows = []
    for name, value in metrics.items():
        rows.append(
            {
                "metric": name,
                "kind": kind(name, preset),
                "value": value,
                "band": band(name, value) or "",
                "description": definition(name, preset),
            }
        )
    return pd.DataFrame(rows, columns=["metric", "kind", "value", "band", "description"])


def counts_text(report: Report) -> str:
    """What was scored, from Report.counts: a caption under the cards (no user text in it)."""
    c = report.counts
    parts = [f"{c.get('queries', report.n_queries):,} queries"]
    if report.relevance == "ids":
        parts.append(f"{c.get('scored_ids', 0):,} {SCORED_ON['ids']}")
        parts.append(f"{c.get('skipped_no_qrels', 0):,} skipped without qrels")
        if c.get("missing_from_run"):
            parts.append(f"{c['missing_from_run']:,} judged but missing from the run")
    if "scored_evidence" in c:
        parts.append(f"{c['scored_evidence']:,} {SCORED_ON['evidence']}")
        parts.append(f"{c.get('no_evidence', 0):,} without evidence")
    if "scored_answers" in c:
        parts.append(f"{c['scored_answers']:,} with an answer")
    mode = report.relevance or "none (no qrels, no evidence)"
    return " · ".join(parts) + f" · relevance mode: {mode}" + labels_text(report.settings)


def labels_text(settings: Mapping[str, Any]) -> str:
    """ " · labels: people,imported (people 3, imported 120)": which labels the ranking metrics
    read and how many of each source counted (an LLM set's model name is user text: escaped)."""
    from rageval_dashboard.components.text import escape_text

    if not settings.get("labels"):
        return ""
    counts = settings.get("label_counts") or {}
    counted = ", ".join(f"{source} {n:,}" for source, n in counts.items())
    text = f"{settings['labels']}" + (f" ({counted})" if counted else "")
    return " · labels: " + escape_text(text, one_line=True)


def judge_source_text(report: Report) -> str:
    """Where the report's judge.* values come from: the result set and its errors, or the
    scores imported with the run (the set's name and model are user text: escaped)."""
    from rageval_dashboard.components.text import escape_text

    source = report.settings.get("judge")
    errors = report.counts.get("judge_errors", 0)
    judged = report.counts.get("judged")
    parts = [] if judged is None else [f"{judged:,} queries judged"]
    if isinstance(source, Mapping):
        who = escape_text(f"{source.get('name')} ({source.get('model')})", one_line=True)
        when = escape_text(str(source.get("created_at", ""))[:16], one_line=True)
        parts.insert(0, f"judge result set #{source.get('judge_id')} {who}, {when}")
        parts.append(f"{errors:,} judge errors (not scored)")
    else:
        parts.insert(0, "judge scores imported with the run")
    return (
        " · ".join(parts)
        + " · judge.NAME: mean score over judged queries; judge.NAME.LABEL: share given that label"
    )


def breakdown_frame(report: Report, names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per tag value (report(view, by=tag)): its query count and each metric's value."""
    by = report.by or {"tag": "", "groups": {}}
    rows = []
    for value, group in by["groups"].items():
        metrics = group["metrics"]
        wanted = list(metrics) if names is None else [n for n in names if n in metrics]
        rows.append(
            {by["tag"] or "tag": value, "queries": group["n"], **{n: metrics[n] for n in wanted}}
        )
    return pd.DataFrame(rows)


def curves_frame(curves: Mapping[str, Any], x_name: str, x: Sequence[float]) -> pd.DataFrame:
    """Curves (name -> values along x) as one column per metric, for the CSV download."""
    return pd.DataFrame(
        {x_name: list(x), **{name: list(values) for name, values in curves.items()}}
    )


def runs_frame(runs: Sequence[Any]) -> pd.DataFrame:
    """One row per run: the facts a user scans to pick a run."""
    rows = []
    for r in runs:
        settings = r.settings or {}
        rows.append(
            {
                "name": r.name,
                "format": r.format,
                "queries": r.n_queries,
                "depth": r.max_depth,
                "created": r.created_at or "",
                "imported": str(r.imported_at)[:19].replace("T", " "),
                "top_k": settings.get("top_k"),
                "retriever": str(settings.get("retriever") or ""),
                "model": str(settings.get("model") or ""),
                "prompt $/1K": r.price_prompt_per_1k,
                "completion $/1K": r.price_completion_per_1k,
                "qrels": r.has_qrels,
                "evidence": r.has_evidence,
                "latency": r.has_latency,
                "tokens": r.has_tokens,
                "answers": r.has_answers,
                "run tags": ", ".join(f"{k}={v}" for k, v in run_tags(r).items()),
                "tags": ", ".join(r.tag_keys),
                "sources": ", ".join(r.sources),
                "settings": ", ".join(f"{k}={v}" for k, v in settings.items()),
            }
        )
    return pd.DataFrame(rows)


def problems_frame(problems: Sequence[Problem], hide_prefix: Path | None = None) -> pd.DataFrame:
    """Validation problems as a table (file, line, field, problem, severity), errors first.

    hide_prefix: a temporary folder uploads were written to, cut from the file names so the
    table shows the names the user uploaded.
    """

    def shown(file: str) -> str:
        if hide_prefix is not None:
            prefix = str(hide_prefix).rstrip("/") + "/"
            if file.startswith(prefix):
                return file[len(prefix) :]
        return file

    rows = [
        {
            "file": shown(p.file),
            "line": p.line or None,
            "field": p.field,
            "problem": p.problem,
            "severity": p.severity,
        }
        for p in problems
    ]
    frame = pd.DataFrame(rows, columns=["file", "line", "field", "problem", "severity"])
    frame["line"] = frame["line"].astype("Int64")
    return frame.sort_values("severity", kind="stable").reset_index(drop=True)
