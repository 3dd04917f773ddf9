"""A Diagnosis as text: `rageval diagnose`'s table, what-if lines, stages and per-query lines,
and the one sentence per missed item the drilldown opens with (spans numbered from 1, as the
app shows them)."""

from __future__ import annotations

import math

from rageval_core.diagnosis.model import NO_GOLD, STAGE_KINDS, Diagnosis, Missed
from rageval_core.terminal import text_table

#: example query ids shown per reason
EXAMPLES = 5


def sentence(d: Diagnosis, m: Missed, i: int) -> str:
    """The sentence of missed item i of m."""
    reason = d.reasons[int(m.reason[i])]
    k = d.settings["k"]
    rank, score = int(m.rank[i]), float(m.score[i])
    span = f"span {int(m.item[i]) + 1}"
    if reason == "numbers_differ":
        return (
            f"{span} reaches the threshold in chunk #{rank}, but its figures differ from the "
            "chunk's (the numbers guard refuses it)"
        )
    if reason == "ranked_below_k":
        return f"{span} is covered at rank {rank}, below k = {k}"
    if reason == "split_across_chunks":
        return (
            f"{span} is split: its first half is in chunk #{rank}, its second in #{int(m.rank2[i])}"
        )
    best = "no chunk in the top k" if math.isnan(score) else f"best score {score:.2f}"
    raw = float(m.raw_score[i])
    if not math.isnan(raw) and raw > score:  # the guard zeroed a better chunk: say so
        best += f"; {raw:.2f} by a chunk whose figures differ"
    if reason == "near_miss":
        under = d.settings["threshold"] - score
        return f"{span}: {best}, {under:.2f} under the threshold"
    if reason == "relevant_below_k":
        return f"the first relevant document is at rank {rank}, below k = {k}"
    if m.item[i] < 0:  # ids mode
        return "no relevant document is anywhere in the list"
    return f"{span} is in no retrieved chunk ({best})"


def _share(n: int, total: int) -> str:
    return f"{100 * n / total:.1f}%" if total else "-"


def format_diagnosis(d: Diagnosis, per_query: bool = False) -> str:
    s = d.settings
    n, failing = d.query_ids.size, d.n_failing
    queries = d.query_counts()
    lines = [
        f"run {d.run}: {failing} of {n} queries fail "
        f"({d.relevance or 'no gold'} mode, k = {s['k']}, threshold {s['threshold']:g}, "
        f"scorer {s['scorer']}); {queries[NO_GOLD]} have nothing to find (no_gold)"
    ]
    if d.relevance is None:
        return "\n".join(lines)
    spans = d.span_counts()
    n_items = sum(spans.values())
    what = "missed spans" if d.relevance == "evidence" else "failing queries"
    rows = [
        [
            reason,
            spans[reason],
            _share(spans[reason], n_items),
            queries[reason],
            _share(queries[reason], failing),
            ", ".join(d.examples(reason, EXAMPLES)),
        ]
        for reason in d.reasons
    ]
    lines += [
        "",
        text_table(["reason", what, "share", "queries", "share", "examples"], rows),
    ]
    if d.unjudged is not None:
        lines.append(
            f"unjudged documents in the top k of the failing queries: "
            f"{int(d.unjudged[d.failing].sum())} (a possible label hole, not a reason)"
        )
    if d.what_if:
        lines += ["", "what if:"] + [f"  {w.text()}" for w in d.what_if]
    if d.stages is not None:
        st = d.stages
        total = sum(st.counts.values()) + st.added
        lines += [
            "",
            f"two stages (first stage {st.first_stage}), per gold item ({total}):",
            text_table(
                ["", "items", "share"],
                [[kind, st.counts[kind], _share(st.counts[kind], total)] for kind in STAGE_KINDS],
            ),
            f"ceiling (the first stage's whole list): {_pct(st.ceiling)}; reranked top {s['k']}: "
            f"{_pct(st.reranked)}; delivered: {_pct(st.delivered)} of what it could reach",
        ]
        if st.added:
            lines.append(
                f"note: {st.added} gold items are in the reranked top {s['k']} but in no list of "
                f"{st.first_stage}: it does not look like this run's first stage"
            )
    if d.by is not None:
        rows = [
            [group, g["n"], g["failing"], *(g["queries"][r] for r in d.reasons)]
            for group, g in d.by["groups"].items()
        ]
        lines += [
            "",
            f"failing queries by {d.by['tag']} (primary reason):",
            text_table([d.by["tag"], "queries", "failing", *d.reasons], rows),
        ]
    if per_query:
        lines += ["", "per query:"]
        for q in d.failing.nonzero()[0].tolist():
            lines.append(f"{d.query_ids[q]}: {d.status[q]}")
            lines += [f"  {text}" for text in d.sentences(q)]
    return "\n".join(lines)


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"
