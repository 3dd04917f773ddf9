"""One API over everything: evaluate(run, k=..., threshold=...) -> Report.

Data flow: store -> RunData (numpy arrays, loaded once) -> prepared inputs per family (cached on
the RunData by the settings they depend on) -> per-query metric arrays -> run values -> Report.
Moving k or the threshold touches only the last two steps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from rageval_core import ops
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.matching import Normalisation, get_scorer
from rageval_core.metrics import registry
from rageval_core.metrics.arrays import (
    RankedLabels,
    check_rel_level,
    ranked_labels_from_relevant,
    ranked_labels_from_rows,
)
from rageval_core.metrics.evidence import Coverage, covers, prepare_coverage
from rageval_core.metrics.generation import AnswerInputs
from rageval_core.rundata import RunData, evidence_tensor, load_run_data
from rageval_core.store import Store

Relevance = Literal["ids", "evidence"]
Floats = NDArray[np.float64]

RANKING_DEFAULTS = ("P@{k}", "R@{k}", "RR", "AP", "nDCG@{k}", "Hit@{k}", "Rprec")
EVIDENCE_DEFAULTS = (
    "EvidenceRecall@{k}", "PerQueryCoverage@{k}", "FullCoverageRate@{k}", "ContextCoverage",
    "BestRank",
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a report depends on besides the run."""

    k: int = 10
    threshold: float = 0.7
    scorer: str = "partial"
    norm: Normalisation = field(default_factory=Normalisation)
    relevance: Relevance | None = None  # None: ids when the run has qrels, else evidence
    score_threshold: float | None = None  # drop chunks whose retriever score is below this
    rel_level: int = 1
    complete: bool = False

    def check(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise UsageError(f"k must be an integer >= 1, got {self.k!r}")
        if not (isinstance(self.threshold, (int, float)) and 0.0 <= self.threshold <= 1.0):
            raise UsageError(f"threshold must be between 0 and 1, got {self.threshold!r}")
        if self.relevance not in (None, "ids", "evidence"):
            raise UsageError(f"relevance must be ids or evidence, got {self.relevance!r}")
        if self.score_threshold is not None and not math.isfinite(self.score_threshold):
            raise UsageError(f"score threshold must be finite, got {self.score_threshold!r}")
        check_rel_level(self.rel_level)
        get_scorer(self.scorer)

    def to_json(self, relevance: str | None) -> dict[str, Any]:
        return {
            "k": self.k, "threshold": self.threshold, "scorer": self.scorer,
            "normalisation": self.norm.key, "strip_punct": self.norm.strip_punct,
            "strip_articles": self.norm.strip_articles, "relevance": relevance,
            "score_threshold": self.score_threshold, "rel_level": self.rel_level,
            "complete": self.complete,
        }


@dataclass(frozen=True)
class Report:
    """A run's metrics at one setting: run values, per-query values, counts and ops."""

    run: str
    settings: dict[str, Any]
    relevance: Relevance | None
    metrics: dict[str, float]  # run values, NaN when nothing was scored
    query_ids: NDArray[np.object_]  # (n,) every query of the run, file order
    per_query: dict[str, Floats]  # metric -> (n,), NaN where the query is not scored on it
    counts: dict[str, int]
    ops: dict[str, Any]
    by: dict[str, Any] | None = None

    @property
    def n_queries(self) -> int:
        return int(self.query_ids.size)

    def to_json(self, per_query: bool = False) -> dict[str, Any]:
        """The documented JSON object (NaN -> null)."""
        out: dict[str, Any] = {
            "run": self.run,
            "n_queries": self.n_queries,
            "settings": self.settings,
            "counts": self.counts,
            "metrics": self.metrics,
        }
        if per_query:
            out["per_query"] = {
                str(qid): {name: values[i] for name, values in self.per_query.items()}
                for i, qid in enumerate(self.query_ids)
            }
        out["ops"] = self.ops
        if self.by is not None:
            out["by"] = self.by
        return ops.to_json_value(out)  # type: ignore[no-any-return]


# --- inputs per family, cached on the RunData -----------------------------------------------


def _memo(data: RunData, key: tuple[Any, ...], make: Any) -> Any:
    if key not in data._cache:
        data._cache[key] = make()
    return data._cache[key]


def _cut_order(data: RunData, score_threshold: float | None) -> tuple[NDArray[np.int64] | None, NDArray[np.int64]]:
    """(order, n_ret) after dropping chunks scored below the cut (None order: nothing dropped).

    Surviving chunks keep their order and move up; a chunk without a retriever score is kept.
    """
    if score_threshold is None:
        return None, data.n_ret

    def make() -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        exists = np.arange(data.depth)[None, :] < data.n_ret[:, None]
        with np.errstate(invalid="ignore"):
            keep = exists & ~(data.chunk_score < score_threshold)
        order = np.argsort(~keep, axis=1, kind="stable").astype(np.int64)
        return order, keep.sum(axis=1).astype(np.int64)

    return _memo(data, ("cut", score_threshold), make)  # type: ignore[no-any-return]


def id_labels(data: RunData, s: Settings) -> tuple[RankedLabels, NDArray[np.int64]]:
    """RankedLabels of the queries trec_eval would score, and their row numbers in data."""

    def make() -> tuple[RankedLabels, NDArray[np.int64]]:
        rows = np.flatnonzero(data.has_qrels & (data.in_run | s.complete)).astype(np.int64)
        full = _memo(
            data, ("ideal", s.rel_level),
            lambda: ranked_labels_from_rows(
                list(data.query_ids), np.zeros(0, np.int64), np.ones(0, np.int64),
                np.zeros(0, np.int32), data.judged_q, data.judged_label, rel_level=s.rel_level),
        )
        order, n_ret = _cut_order(data, s.score_threshold)
        labels = data.labels if order is None else np.take_along_axis(data.labels, order, axis=1)
        labels = np.where(np.arange(data.depth)[None, :] < n_ret[:, None], labels, 0)
        arrays = RankedLabels(
            query_ids=tuple(data.query_ids[rows]),
            labels=labels[rows],
            n_ret=n_ret[rows],
            n_rel=full.n_rel[rows],
            ideal=full.ideal[rows],
            rel_level=s.rel_level,
        )
        return arrays, rows

    key = ("ids", s.rel_level, s.complete, s.score_threshold)
    return _memo(data, key, make)  # type: ignore[no-any-return]


def coverage(store: Store, data: RunData, s: Settings) -> Coverage:
    """The evidence running maxima for (scorer, normalisation, cut), at the threshold s.threshold."""

    def make() -> Coverage:
        tensor = evidence_tensor(store, data, s.scorer, s.norm)
        return prepare_coverage(
            tensor, data.n_spans, data.n_ret, retriever_scores=data.chunk_score,
            score_cut=s.score_threshold,
        )

    cov: Coverage = _memo(data, ("coverage", s.scorer, s.norm.key, s.score_threshold), make)
    return cov.with_threshold(s.threshold)


def evidence_labels(store: Store, data: RunData, s: Settings) -> tuple[RankedLabels, NDArray[np.int64]]:
    """Evidence-mode relevance: a chunk is relevant when it covers at least one gold span.

    The qrels are derived from the run itself at the threshold: every covering chunk in the
    list is relevant (label 1), so n_rel counts the covering chunks of the whole list. The
    labels of the latest threshold are kept, so a new k reuses them and the prefix sums
    metrics/ranking.py caches on them.
    """
    cov = coverage(store, data, s)
    source = (s.scorer, s.norm.key, s.score_threshold)
    key = (*source, cov.threshold)
    kept = data._cache.get(("evidence_labels",))
    if kept is not None and kept[0] == key:
        return kept[1]
    ids = _memo(data, ("evidence_ids", *source), lambda: tuple(data.query_ids[cov.rows]))
    arrays = ranked_labels_from_relevant(ids, covers(cov).T, cov.n_ret)  # covers(cov).T: rank-major
    data._cache[("evidence_labels",)] = (key, (arrays, cov.rows))
    return arrays, cov.rows


def answer_inputs(store: Store, data: RunData) -> tuple[AnswerInputs, NDArray[np.int64]]:
    """The texts answer metrics read, for the queries with an answer (loaded once per run)."""

    def make() -> tuple[AnswerInputs, NDArray[np.int64]]:
        rid = data.run.run_id
        with store._cursor() as cur:
            q = cur.execute(
                "SELECT qidx, answer, reference_answer, query, in_run FROM queries "
                "WHERE run_id = ? AND answer IS NOT NULL ORDER BY qidx", [rid]).fetchall()
            ch = cur.execute(
                "SELECT c.qidx, c.text FROM chunks c JOIN queries q "
                "ON q.run_id = c.run_id AND q.qidx = c.qidx "
                "WHERE c.run_id = ? AND q.answer IS NOT NULL ORDER BY c.qidx, c.rank", [rid]
            ).fetchall()
        texts: dict[int, list[str | None]] = {}
        for qidx, text in ch:
            texts.setdefault(qidx, []).append(text)
        inputs = AnswerInputs(
            answers=[r[1] for r in q],
            references=[r[2] for r in q],
            queries=[r[3] for r in q],
            chunk_texts=[texts.get(r[0], []) if r[4] else None for r in q],
        )
        return inputs, np.asarray([r[0] for r in q], dtype=np.int64)

    return _memo(data, ("answers",), make)  # type: ignore[no-any-return]


# --- the report --------------------------------------------------------------------------


def resolve_relevance(data: RunData, s: Settings) -> Relevance | None:
    """ids when asked or when the run has qrels; evidence when asked or it has gold spans."""
    if s.relevance == "ids" and not data.run.has_qrels:
        raise UsageError(f"run {data.run.name} has no qrels (relevant ids): use --relevance evidence")
    if s.relevance == "evidence" and not data.run.has_evidence:
        raise UsageError(f"run {data.run.name} has no gold evidence: use --relevance ids")
    if s.relevance is not None:
        return s.relevance
    if data.run.has_qrels:
        return "ids"
    return "evidence" if data.run.has_evidence else None


def default_metrics(data: RunData, k: int, relevance: Relevance | None) -> list[str]:
    """The default set: ranking (in the relevance mode), evidence and answer metrics the run supports."""
    names: list[str] = []
    if relevance is not None:
        names += [m.format(k=k) for m in RANKING_DEFAULTS]
    if data.run.has_evidence:
        names += [m.format(k=k) for m in EVIDENCE_DEFAULTS]
    if data.run.has_answers:
        names += [spec.name for spec in registry.REGISTRY.values() if spec.family == "generation"]
    return names


def evaluate(
    source: RunData | str | Path,
    metrics: Sequence[str] | None = None,
    *,
    store: Store | None = None,
    settings: Settings | None = None,
    by: str | None = None,
    **overrides: Any,
) -> Report:
    """Evaluate a stored run (name, id or RunData) or a run file (read into a scratch store).

    settings fields may also be given as keywords: evaluate(run, k=5, threshold=0.8).
    """
    s = dataclasses.replace(settings or Settings(), **overrides)
    s.check()
    if isinstance(source, RunData):
        if store is None:
            raise UsageError("evaluating a RunData needs the store it came from")
        return _evaluate(store, source, metrics, s, by)
    path = Path(source) if isinstance(source, (str, Path)) else None
    if path is not None and path.is_file():
        scratch = open_file_in_scratch_store([path])
        with scratch:
            return _evaluate(scratch, load_run_data(scratch, scratch.runs()[0].run_id), metrics, s, by)
    if store is None:
        store = Store()
    return _evaluate(store, load_run_data(store, str(source)), metrics, s, by)


def open_file_in_scratch_store(paths: Sequence[Path], fmt: str | None = None, name: str | None = None) -> Store:
    """Read run files (one run; a TREC run may come with its qrels) into an in-memory store."""
    from rageval_core.formats import read_inputs

    log = ProblemLog()
    parsed = read_inputs(list(paths), fmt, log)
    log.raise_if_errors()
    if len(parsed) != 1:
        raise UsageError(f"expected one run, but the files hold {len(parsed)}")
    store = Store(":memory:")
    try:
        store.import_run(parsed[0], log, name=name)
    except BaseException:
        store.close()
        raise
    return store


def _evaluate(store: Store, data: RunData, metrics: Sequence[str] | None, s: Settings, by: str | None) -> Report:
    relevance = resolve_relevance(data, s)
    names = list(metrics) if metrics else default_metrics(data, s.k, relevance)
    measures = registry.parse_all(names)
    n = data.n_queries
    per_query: dict[str, Floats] = {}
    counts: dict[str, int] = {"queries": n}
    families = {m.spec.family for m in measures}

    def scatter(values: Floats, rows: NDArray[np.int64]) -> Floats:
        full = np.full(n, np.nan)
        full[rows] = values
        return full

    inputs: dict[str, tuple[Any, NDArray[np.int64]]] = {}
    if "ranking" in families:
        if relevance is None:
            raise UsageError(f"run {data.run.name} has neither qrels nor gold evidence: ranking metrics need one")
        inputs["ranking"] = id_labels(data, s) if relevance == "ids" else evidence_labels(store, data, s)
        if relevance == "ids":
            counts["scored_ids"] = int(inputs["ranking"][1].size)
            counts["skipped_no_qrels"] = int(np.count_nonzero(~data.has_qrels))
            counts["missing_from_run"] = int(np.count_nonzero(data.has_qrels & ~data.in_run))
    if "evidence" in families or (relevance == "evidence" and "ranking" in families):
        cov = coverage(store, data, s)
        inputs["evidence"] = (cov, cov.rows)
        counts["scored_evidence"] = cov.n_queries
        counts["no_evidence"] = cov.n_excluded
    if "generation" in families:
        inputs["generation"] = answer_inputs(store, data)
        counts["scored_answers"] = int(inputs["generation"][1].size)

    weights: dict[str, Floats] = {}
    run_values: dict[str, float] = {}
    for m in measures:
        family = m.spec.family
        if family not in inputs:
            raise UsageError(f"measure {m} ({family}) is not supported for run {data.run.name}")
        data_in, rows = inputs[family]
        name = str(m)
        values = registry.compute([m], data_in)[name]
        w = registry.weights_of(m, data_in)
        # the run value from the family's own rows: the scattered NaNs would only be dropped again
        run_values[name] = registry.aggregate(m, values, w)
        per_query[name] = scatter(values, rows)
        if w is not None:
            weights[name] = scatter(w, rows)

    # latency, tokens and cost do not depend on k, the threshold or the scorer: once per run
    report_ops = _memo(data, ("ops",), lambda: ops_summary(data))
    by_out = breakdown(data, per_query, weights, by) if by else None
    return Report(
        run=data.run.name,
        settings=s.to_json(relevance),
        relevance=relevance,
        metrics=run_values,
        query_ids=data.query_ids,
        per_query=per_query,
        counts=counts,
        ops=report_ops,
        by=by_out,
    )


def _aggregate(
    name: str, values: Floats, weights: Floats | None, rows: NDArray[np.bool_] | None = None
) -> float:
    """The run value of a per-query column (over the rows of a mask, when given)."""
    if rows is not None:
        values = values[rows]
        weights = None if weights is None else weights[rows]
    return registry.aggregate(name, values, weights)


def ops_summary(data: RunData, rows: NDArray[np.bool_] | None = None) -> dict[str, Any]:
    """Latency percentiles per stage, tokens, and cost, for all queries or a subset (mask)."""
    lat_sel = slice(None) if rows is None else rows[data.latency_q]
    tok_sel = slice(None) if rows is None else rows[data.tokens_q]
    latency = ops.latency_summary(data.latency_stage[lat_sel], data.latency_ms[lat_sel])
    tokens = ops.token_summary(data.tokens_kind[tok_sel], data.tokens_n[tok_sel])
    costs = query_costs(data)
    if rows is not None:
        costs = ops.QueryCosts(costs.cost_usd[rows], costs.has_tokens[rows], costs.price_missing)
    return {"latency_ms": latency, "tokens": tokens, "cost_usd": ops.cost_summary(costs)}


def query_costs(data: RunData) -> ops.QueryCosts:
    """USD per query from its prompt/completion tokens and the run's prices (per 1K tokens)."""

    def make() -> ops.QueryCosts:
        per_kind = {}
        for kind in ("prompt", "completion"):
            col = np.full(data.n_queries, np.nan)
            sel = data.tokens_kind == kind
            col[data.tokens_q[sel]] = data.tokens_n[sel]
            per_kind[kind] = col
        return ops.cost_per_query(
            per_kind["prompt"], per_kind["completion"],
            data.run.price_prompt_per_1k, data.run.price_completion_per_1k)

    return _memo(data, ("costs",), make)  # type: ignore[no-any-return]


def breakdown(
    data: RunData, per_query: dict[str, Floats], weights: dict[str, Floats], tag: str
) -> dict[str, Any]:
    """Every metric and ops summary inside each value of one tag, with counts (the ops part,
    independent of the settings, is computed once per run and tag)."""
    if tag not in data.tags:
        known = ", ".join(sorted(data.tags)) or "none"
        raise UsageError(f"run {data.run.name} has no tag {tag!r} (tags: {known})")
    values = data.tags[tag]
    labels = np.where(values == None, ops.NO_TAG, values).astype(str)  # noqa: E711
    groups: dict[str, Any] = {}
    for group in sorted(set(labels.tolist()), key=lambda g: (g == ops.NO_TAG, g)):
        mask = labels == group
        groups[group] = {
            "n": int(mask.sum()),
            "metrics": {
                name: _aggregate(name, col, weights.get(name), mask) for name, col in per_query.items()
            },
            **_memo(data, ("ops", tag, group), lambda mask=mask: ops_summary(data, mask)),
        }
    return {"tag": tag, "groups": groups}
