"""Pure helpers for judge results on the pages: verdict blocks, the contexts a judge cited, the
result sets' ledgers, calibration tables and figures (no Streamlit calls).

A judge's notes are an LLM's output about user text: user text too, escaped like a chunk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from rageval_dashboard.components.text import escape_text
from rageval_core.judging.prompts import PROMPTS
from rageval_core.store.judgements import JudgeResult, JudgeSet

#: the outline of a chunk card the judge cited as evidence
CITED_COLOUR = "#2563eb"
#: the judge numbers the contexts it is shown [1], [2] ... (the run's first chunks with text)
DEFAULT_CONTEXTS = 10
#: the Judge form's names of JudgeConfig's fields: its widgets' labels and its messages' words
FORM_LABELS = {
    "base_url": "Base URL",
    "model": "Model",
    "api_key_env": "API key environment variable",
    "name": "Result set name",
    "repeats": "Repeats",
    "metrics": "Prompts",
    "concurrency": "Concurrency",
    "max_cost_usd": "Budget",
    "price_in_per_1k": "Price in",
    "price_out_per_1k": "Price out",
}
PRICE_HELP = (
    "The judge model's price. Empty: the cost is unknown (the run's own prices are its "
    "generator's, never taken for the judge's)."
)


def context_numbers(chunks: Sequence[Any], limit: int = DEFAULT_CONTEXTS) -> dict[int, int]:
    """original rank -> the context number the judge saw it under: the run's chunks in rank
    order, those with text, the first `limit` (rageval_core.judging.runner.plan)."""
    with_text = sorted((c for c in chunks if c.text is not None), key=lambda c: c.original_rank)
    return {c.original_rank: i + 1 for i, c in enumerate(with_text[:limit])}


def cited(verdicts: Sequence[JudgeResult]) -> set[int]:
    """The context numbers any verdict cites as evidence (faithfulness' `evidence`)."""
    out: set[int] = set()
    for r in verdicts:
        for n in (r.verdict or {}).get("evidence") or ():
            if isinstance(n, int) and not isinstance(n, bool):
                out.add(n)
    return out


def verdict_summary(r: JudgeResult) -> str:
    """One verdict as plain text: its labels and scores, or the judge error."""
    if r.verdict is None:
        return f"judge error: {r.error or 'unknown'} (not scored)"
    p = PROMPTS.get(r.prompt)
    keys = [*p.labels, *p.scores] if p is not None else sorted(r.verdict)
    parts = []
    for key in keys:
        value = r.verdict.get(key)
        if isinstance(value, float):
            parts.append(f"{key} {value:.2f}")
        elif value is not None:
            parts.append(f"{key}: {value}")
    return " · ".join(parts)


def verdict_block(r: JudgeResult, repeats: int = 1) -> str:
    """One verdict as an HTML block: prompt (and repeat), verdict, cited contexts, notes.

    Every part but our own labels is escaped: the notes and an error message quote an LLM."""
    head = r.prompt + (f" (repeat {r.rep + 1})" if repeats > 1 else "")
    colour = "#dc2626" if r.verdict is None else CITED_COLOUR
    evidence = sorted(cited([r]))
    lines = [
        f'<div style="font-weight:600">{escape_text(head)}</div>',
        f"<div>{escape_text(verdict_summary(r))}</div>",
    ]
    if evidence:
        lines.append(
            "<div>cited contexts: " + escape_text(", ".join(f"[{n}]" for n in evidence)) + "</div>"
        )
    notes = (r.verdict or {}).get("notes")
    if notes:
        lines.append(f'<div style="opacity:0.85"><i>notes:</i> {escape_text(str(notes))}</div>')
    return (
        f'<div class="rageval-verdict" data-prompt="{escape_text(r.prompt, one_line=True)}" '
        f'style="border-left:4px solid {colour};padding:0.3rem 0.7rem;margin:0 0 0.5rem 0;'
        f'background:rgba(37,99,235,0.05);border-radius:4px">{"".join(lines)}</div>'
    )


def cited_card(card: str, number: int) -> str:
    """A chunk card (highlight.chunk_card) outlined as cited by the judge as context [number]."""
    return (
        f'<div class="rageval-cited" data-context="{number}" style="outline:2px solid '
        f'{CITED_COLOUR};border-radius:4px;margin:0 0 0.6rem 0">'
        f'<div style="font-size:0.8rem;color:{CITED_COLOUR};padding:0.1rem 0.5rem">'
        f"cited by the judge as context [{number}]</div>{card}</div>"
    )


def sets_frame(sets: Sequence[JudgeSet]) -> pd.DataFrame:
    """One row per judge result set, newest first: who judged, when, status and ledger."""
    rows = [
        {
            "id": j.judge_id,
            "name": j.name,
            "model": j.model,
            "host": j.base_host,
            "created": j.created_at[:19].replace("T", " "),
            "status": j.status,
            "prompts": ", ".join(f"{k} ({v})" for k, v in sorted(j.prompts.items())),
            "repeats": j.repeats,
            "requests": j.requests,
            "cache hits": j.cache_hits,
            "verdicts": j.verdicts,
            "judge errors": j.judge_errors,
            "prompt tokens": j.prompt_tokens,
            "completion tokens": j.completion_tokens,
            "cost (USD)": j.cost_usd,
        }
        for j in reversed(sets)
    ]
    return pd.DataFrame(rows)


def summary_line(summary: Mapping[str, Any]) -> str:
    """A judge run's ledger (JudgeSummary.to_json()) as one line of our own words."""
    cost = summary.get("cost_usd")
    est = summary.get("estimated_cost_usd")
    parts = [
        f"{summary.get('done', 0):,} / {summary.get('tasks', 0):,} judgments",
        f"{summary.get('requests', 0):,} requests",
        f"{summary.get('cache_hits', 0):,} cache hits",
        f"{summary.get('judge_errors', 0):,} judge errors",
        f"{summary.get('prompt_tokens', 0):,} prompt + "
        f"{summary.get('completion_tokens', 0):,} completion tokens",
    ]
    if cost is not None:
        parts.append(f"${cost:.4f}")
    if est is not None:
        parts.append(f"estimated ${est:.4f}")
    return " · ".join(parts)


def outcome(summary: Mapping[str, Any]) -> tuple[str, str, str]:
    """How a finished judge run (JudgeSummary.to_json()) is shown: the Streamlit call (success,
    warning or error), its status, and a note after its ledger (a failure's cause, said once)."""
    status = escape_text(str(summary.get("status")), one_line=True)
    cause = summary.get("cause")
    if status == "failed":
        why = f"the judge endpoint gave no answer: {cause}" if cause else "no judgment succeeded"
        return (
            "error",
            status,
            f" · {escape_text(why, one_line=True)} · kept, never read by default",
        )
    if status == "complete":
        return "success", status, ""
    if status == "partial":
        return "warning", status, " · some judgments are judge errors (not scored)"
    return "warning", status, " · what finished is kept"  # budget, cancelled


def estimate_line(est: Mapping[str, Any]) -> str:
    """A dry run (estimate_judge(...).to_json()) in our own words."""
    cost = est.get("estimated_cost_usd")
    priced = (
        f"estimated cost ${cost:.4f}"
        if cost is not None
        else "cost unknown: give the judge's prices (Price in, Price out)"
    )
    return (
        f"Dry run, nothing sent: {est.get('requests', 0):,} requests to send "
        f"({est.get('cache_hits', 0):,} of {est.get('tasks', 0):,} judgments answered from the "
        f"cache; {est.get('skipped_queries', 0):,} queries with nothing to judge), about "
        f"{est.get('prompt_tokens', 0):,} prompt + {est.get('completion_tokens', 0):,} "
        f"completion tokens, {priced}."
    )


def disagreements_frame(rep: Any) -> pd.DataFrame:
    """The items a judge disagrees with itself on (scores.Repeatability.disagreements)."""
    rows = [
        {
            "query_id": d.query_id,
            "key": d.key,
            "values": ", ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in d.values),
            "agreement": d.agreement,
            "spread": d.spread,
        }
        for d in rep.disagreements
    ]
    return pd.DataFrame(rows, columns=["query_id", "key", "values", "agreement", "spread"])


def repeat_frame(rep: Any) -> pd.DataFrame:
    """Mean per-item agreement and spread per verdict key."""
    return pd.DataFrame(
        [
            {"key": k, "agreement": rep.agreement[k], "spread": rep.spread.get(k, math.nan)}
            for k in sorted(rep.agreement)
        ],
        columns=["key", "agreement", "spread"],
    )


# --- calibration ---------------------------------------------------------------------------


def confusion_figure(
    labels: Sequence[str],
    confusion: Sequence[Sequence[int]],
    judge: str = "judge",
    unit: str = "queries",
) -> go.Figure:
    """The confusion matrix as a heatmap: rows people, columns the judge, counts in the cells."""
    shown = [escape_text(str(x), one_line=True) for x in labels]
    judge = escape_text(judge, one_line=True)
    fig = go.Figure(
        go.Heatmap(
            z=[list(row) for row in confusion],
            x=shown,
            y=shown,
            colorscale="Blues",
            text=[[str(v) for v in row] for row in confusion],
            texttemplate="%{text}",
            hovertemplate=f"people: %{{y}}<br>{judge}: %{{x}}<br>{unit}: %{{z}}<extra></extra>",
            showscale=False,
        )
    )
    fig.update_layout(
        xaxis_title=judge,
        yaxis_title="people",
        yaxis_autorange="reversed",
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig


def grade_figure(cal: Any) -> go.Figure:
    """An LLM's relevance grades against the people's (agreement.LabelCalibration) as a heatmap:
    rows the people's grade, columns the LLM's, documents in the cells."""
    return confusion_figure(
        [f"{g:g}" for g in cal.pair.grades], cal.pair.confusion, cal.llm, "documents"
    )


def grade_precision_frame(cal: Any) -> pd.DataFrame:
    """Per grade the LLM gave: how many documents, and the share people graded the same."""
    return pd.DataFrame(
        {
            "LLM grade": [f"{g.grade:g}" for g in cal.precision],
            "documents": [g.n for g in cal.precision],
            "people gave it too": [g.precision for g in cal.precision],
        }
    )


def labels_frame(side: Sequence[tuple[str, Mapping[str, float]]]) -> pd.DataFrame:
    """Metrics (rows) under each label set (columns: people only, filled by the LLM, LLM only)."""
    names = list(side[0][1]) if side else []
    return pd.DataFrame(
        {"metric": names, **{label: [values[n] for n in names] for label, values in side}}
    )


def rates_frame(c: Any) -> pd.DataFrame:
    """Per label, one against the rest: support, TPR, TNR."""
    return pd.DataFrame(
        [
            {"label": r.label, "people gave it": r.support, "TPR": r.tpr, "TNR": r.tnr}
            for r in c.rates
        ],
        columns=["label", "people gave it", "TPR", "TNR"],
    )


def pairs_frame(c: Any) -> pd.DataFrame:
    """Every paired query: its id, the people's label, the judge's, and whether they agree."""
    return pd.DataFrame(
        {
            "query_id": c.query_ids,
            "people": c.human,
            "judge": c.judged,
            "agree": [h == j for h, j in zip(c.human, c.judged, strict=True)],
        }
    )


def threshold_figure(c: Any, current: float | None = None) -> go.Figure:
    """Agreement and kappa of the coverage decision with the judge's verdict per threshold."""
    xs = [t.threshold for t in c.thresholds]
    fig = go.Figure()
    fig.add_scatter(
        x=xs, y=[t.agreement for t in c.thresholds], name="agreement", mode="lines+markers"
    )
    fig.add_scatter(
        x=xs,
        y=[None if math.isnan(t.kappa) else t.kappa for t in c.thresholds],
        name="Cohen's kappa",
        mode="lines+markers",
    )
    if current is not None:
        fig.add_vline(x=current, line_dash="dot", annotation_text="sidebar threshold")
    best = c.best_threshold
    if best is not None:
        fig.add_vline(x=best.threshold, line_color="green", annotation_text="best kappa")
    fig.update_layout(
        xaxis_title="fuzzy coverage threshold",
        yaxis_title="agreement with the judge",
        yaxis_range=[-1.05, 1.05],
        height=340,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return fig
