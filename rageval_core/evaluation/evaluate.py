"""One API over everything: evaluate(run, k=..., threshold=...) -> Report.

Data flow: store -> RunData (numpy arrays, loaded once) -> prepared inputs per family (cached on
the RunData by the settings they depend on) -> per-query metric arrays -> run values -> Report.
Moving k or the threshold touches only the last two steps.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import ProblemLog, UsageError
from rageval_core.metrics import registry
from rageval_core.model import ParsedRun
from rageval_core.evaluation.report import (
    EVIDENCE_DEFAULTS,
    RANKING_DEFAULTS,
    Floats,
    Relevance,
    Report,
    Settings,
    depth_warning,
)
from rageval_core.metrics.arrays import (
    RankedLabels,
    judged_only,
    ranked_labels_from_relevant,
    ranked_labels_from_rows,
)
from rageval_core.metrics.evidence import Coverage, covers, prepare_coverage
from rageval_core.metrics.generation import GENERATION_METRICS, AnswerInputs, generation_scores
from rageval_core.metrics.judge import JudgeScores
from rageval_core.rundata import (
    LoadedRun,
    RunData,
    _floats,
    evidence_tensor,
    load_run_data,
    memo,
    numbers_guard,
)
from rageval_core.latency.run_summary import Deferred, group_ops, groups_of, ops_rows
from rageval_core.settings.schema import default_for
from rageval_core.store import Store, answers
from rageval_core.store.store import RunRef

# --- inputs per family, cached on the RunData -----------------------------------------------


def _cut_order(
    data: RunData, score_threshold: float | None
) -> tuple[NDArray[np.int64] | None, NDArray[np.int64]]:
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

    return memo(data, ("cut", score_threshold), make)  # type: ignore[no-any-return]


def id_labels(data: RunData, s: Settings) -> tuple[RankedLabels, NDArray[np.int64]]:
    """RankedLabels of the queries trec_eval would score, and their row numbers in data."""

    def make() -> tuple[RankedLabels, NDArray[np.int64]]:
        rows = np.flatnonzero(data.has_qrels & (data.in_run | s.complete)).astype(np.int64)
        full = memo(
            data,
            ("ideal", s.rel_level),
            lambda: ranked_labels_from_rows(
                list(data.query_ids),
                np.zeros(0, np.int64),
                np.ones(0, np.int64),
                np.zeros(0, np.int32),
                data.judged_q,
                data.judged_label,
                rel_level=s.rel_level,
            ),
        )
        order, n_ret = _cut_order(data, s.score_threshold)
        labels = data.labels if order is None else np.take_along_axis(data.labels, order, axis=1)
        inside = np.arange(data.depth)[None, :] < n_ret[:, None]
        labels = np.where(inside, labels, 0)
        judged = None
        if data.judged is not None:
            judged = data.judged if order is None else np.take_along_axis(data.judged, order, 1)
            judged = np.where(inside, judged, 0).astype(np.int8)[rows]
        arrays = RankedLabels(
            query_ids=tuple(data.query_ids[rows]),
            labels=labels[rows],  # int32, or float64 for real grades
            n_ret=n_ret[rows],
            n_rel=full.n_rel[rows],
            ideal=full.ideal[rows],
            rel_level=s.rel_level,
            judged=judged,
            n_judged=None if full.n_judged is None else full.n_judged[rows],
        )
        # trec_eval -J: the unjudged documents leave the ranking before any measure reads it
        return (judged_only(arrays) if s.judged_only else arrays), rows

    key = ("ids", s.rel_level, s.complete, s.score_threshold, s.judged_only)
    return memo(data, key, make)  # type: ignore[no-any-return]


def coverage(store: Store, data: RunData, s: Settings) -> Coverage:
    """The evidence running maxima for (scorer, normalisation, cut), at the threshold s.threshold."""

    def make() -> Coverage:
        tensor = evidence_tensor(store, data, s.scorer_key, s.norm)
        if s.numbers_must_match:  # a span whose number the chunk lacks is not covered by it
            tensor = np.where(numbers_guard(store, data), tensor, np.float32(0.0))
        return prepare_coverage(
            tensor,
            data.n_spans,
            data.n_ret,
            retriever_scores=data.chunk_score,
            score_cut=s.score_threshold,
        )

    key = ("coverage", s.scorer_key, s.norm.key, s.score_threshold, s.numbers_must_match)
    cov: Coverage = memo(data, key, make)
    return cov.with_threshold(s.threshold)


def evidence_labels(
    store: Store, data: RunData, s: Settings
) -> tuple[RankedLabels, NDArray[np.int64]]:
    """Evidence-mode relevance: a chunk is relevant when it covers at least one gold span.

    The qrels are derived from the run itself at the threshold: every covering chunk in the
    list is relevant (label 1), so n_rel counts the covering chunks of the whole list. The
    labels of the latest threshold are kept, so a new k reuses them and the prefix sums
    metrics/ranking.py caches on them.
    """
    cov = coverage(store, data, s)
    source = (s.scorer_key, s.norm.key, s.score_threshold, s.numbers_must_match)
    key = (*source, cov.threshold)
    kept = data._cache.get(("evidence_labels",))
    if kept is not None and kept[0] == key:
        return kept[1]
    ids = memo(data, ("evidence_ids", *source), lambda: tuple(data.query_ids[cov.rows]))
    arrays = ranked_labels_from_relevant(ids, covers(cov).T, cov.n_ret)  # covers(cov).T: rank-major
    data._cache[("evidence_labels",)] = (key, (arrays, cov.rows))
    return arrays, cov.rows


def answer_inputs(store: Store, data: RunData) -> tuple[AnswerInputs, NDArray[np.int64]]:
    """The answer metrics of the queries with an answer, and their row numbers (once per run).

    Read from the store's answer_scores, where the import keeps them; a run imported without
    scoring (or by an older rageval) has them computed and kept here, once.
    """

    def make() -> tuple[AnswerInputs, NDArray[np.int64]]:
        kept = _kept_answer_scores(store, data.run.run_id)
        if kept is None:
            ensure_answer_scores(store, data.run.run_id)
            kept = _kept_answer_scores(store, data.run.run_id)
        if kept is None:  # pragma: no cover - ensure_answer_scores keeps every metric
            raise UsageError(f"the answer metrics of run {data.run.name} could not be kept")
        return kept

    return memo(data, ("answers",), make)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class AnswerScoring:
    """How a run's answer metrics were kept: found already (cached) or just computed."""

    run_id: int
    n_answers: int  # queries with an answer (each has one row per metric)
    seconds: float
    cached: bool


def ensure_answer_scores(
    store: Store, ref: RunRef, progress: Callable[[int, int], None] | None = None
) -> AnswerScoring:
    """Compute the answer metrics of every query with an answer and keep them, unless kept.

    One transaction: an interrupted computation keeps nothing (evaluate computes them again).
    progress(done, total) is called per block of queries.
    """
    run = store.run(ref)
    rid = run.run_id
    names = tuple(GENERATION_METRICS)
    counts = answers.answer_score_counts(store, rid)
    if not run.has_answers or all(name in counts for name in names):
        return AnswerScoring(rid, int(counts.get(names[0], 0)), 0.0, cached=True)
    started = time.perf_counter()
    # replaces, whole, what an older rageval with fewer answer metrics kept
    n_answers = answers.keep_answer_scores(store, rid, run.n_queries, generation_scores, progress)
    return AnswerScoring(rid, n_answers, time.perf_counter() - started, cached=False)


def _kept_answer_scores(store: Store, run_id: int) -> tuple[AnswerInputs, NDArray[np.int64]] | None:
    """The kept answer metrics of a run, one column per metric; None when some are not kept."""
    kept = answers.kept_answer_scores(store, run_id, tuple(GENERATION_METRICS))
    if kept is None:
        return None
    columns: dict[str, Floats] = {name: _floats(res["value"]) for name, res in kept.items()}
    rows = next(
        (np.asarray(res["qidx"], dtype=np.int64) for res in kept.values()), np.zeros(0, np.int64)
    )
    return AnswerInputs.from_scores(columns), rows


# --- the report --------------------------------------------------------------------------


def resolve_relevance(data: RunData, s: Settings) -> Relevance | None:
    """ids when asked or when the run has qrels that a retrieved chunk is in (or no gold spans);
    evidence when asked or it has gold spans."""
    if s.relevance == "ids" and not data.run.has_qrels:
        raise UsageError(
            f"run {data.run.name} has no qrels (relevant ids): use --relevance evidence"
        )
    if s.relevance == "evidence" and not data.run.has_evidence:
        raise UsageError(f"run {data.run.name} has no gold evidence: use --relevance ids")
    if s.relevance is not None:
        return s.relevance
    # qrels that no retrieved chunk is in (TAT-RAG's FILE gold against chunk ids) would score
    # every query 0: a run that also has gold spans is judged by them instead
    if data.run.has_qrels and (not data.run.has_evidence or bool((data.labels > 0).any())):
        return "ids"
    return "evidence" if data.run.has_evidence else None


def judge_inputs(store: Store, data: RunData, s: Settings) -> JudgeScores:
    """The run's judge.* columns: imported scores and the chosen judge result set (newest by
    default, Settings.judge to pick one; rageval_core.judging.scores)."""
    from rageval_core.judging.scores import judge_scores
    from rageval_core.store import judgements

    sets = tuple(j.judge_id for j in judgements.judge_sets(store, data.run.run_id))
    return memo(  # type: ignore[no-any-return]
        data,
        ("judge", s.judge, sets),
        lambda: judge_scores(store, data.run.run_id, data.n_queries, s.judge),
    )


def default_metrics(
    data: RunData,
    k: int,
    relevance: Relevance | None,
    store: Store | None = None,
    settings: Settings | None = None,
) -> list[str]:
    """The default set: ranking (in the relevance mode), evidence and answer metrics the run
    supports, and its judge scores (given the store)."""
    names: list[str] = []
    if relevance is not None:
        names += [m.format(k=k) for m in RANKING_DEFAULTS]
    if data.run.has_evidence:
        names += [m.format(k=k) for m in EVIDENCE_DEFAULTS]
    if data.run.has_answers:
        names += [spec.name for spec in registry.REGISTRY.values() if spec.family == "generation"]
    if store is not None:
        names += sorted(judge_inputs(store, data, settings or Settings()).columns)
    return names


def evaluate(
    source: LoadedRun | RunData | str | Path,
    metrics: Sequence[str] | None = None,
    *,
    store: Store | None = None,
    settings: Settings | None = None,
    by: str | None = None,
    **overrides: Any,
) -> Report:
    """Evaluate a loaded run, a stored run (name, id or RunData) or a run file (read into a
    scratch store).

    settings fields may also be given as keywords: evaluate(run, k=5, threshold=0.8).
    preset="tat-rag" puts that preset's values over settings, then the other keywords over them.
    """
    base = settings or Settings()
    if overrides.get("preset") is not None:
        from rageval_core.evaluation.preset_parity import with_preset

        base = with_preset(base, overrides["preset"])
    if (
        "scorer" in overrides
        and "threshold" not in overrides
        and base.threshold == default_for("threshold", base.scorer)
    ):  # a threshold left at its default follows the scorer (a cosine is on another scale)
        overrides = {**overrides, "threshold": default_for("threshold", overrides["scorer"])}
    s = dataclasses.replace(base, **overrides)
    s.check()
    if isinstance(source, LoadedRun):
        return _evaluate(source.store, source.data, metrics, s, by)
    if isinstance(source, RunData):
        if store is None:
            raise UsageError("evaluating a RunData needs the store it came from")
        return _evaluate(store, source, metrics, s, by)
    path = Path(source) if isinstance(source, (str, Path)) else None
    if path is not None and path.is_file():
        scratch = open_file_in_scratch_store([path])
        with scratch:
            return _evaluate(
                scratch, load_run_data(scratch, scratch.runs()[0].run_id), metrics, s, by
            )
    if store is None:
        store = Store()
    return _evaluate(store, load_run_data(store, str(source)), metrics, s, by)


def open_file_in_scratch_store(
    paths: Sequence[Path], fmt: str | None = None, name: str | None = None
) -> Store:
    """Read run files (one run; a TREC run may come with its qrels) into an in-memory store."""
    from rageval_core.formats import read_inputs

    log = ProblemLog()
    parsed = read_inputs(list(paths), fmt, log)
    log.raise_if_errors()
    if len(parsed) != 1:
        stages = (
            " (stages of a trace export: pick one with --stage)"
            if any("stage" in p.info.settings for p in parsed)
            else ""
        )
        raise UsageError(f"expected one run, but the files hold {len(parsed)}{stages}")
    return open_in_scratch_store(parsed[0], log, name)


def open_in_scratch_store(parsed: ParsedRun, log: ProblemLog, name: str | None = None) -> Store:
    """One parsed run in an in-memory store of its own; InputError (nothing kept) if it has errors."""
    store = Store(":memory:")
    try:
        store.import_run(parsed, log, name=name)
    except BaseException:
        store.close()
        raise
    return store


def _evaluate(
    store: Store, data: RunData, metrics: Sequence[str] | None, s: Settings, by: str | None
) -> Report:
    if (
        s.preset is not None
    ):  # the preset's own metrics and names (rageval_core.evaluation.preset_parity)
        from rageval_core.evaluation.preset_parity import evaluate_preset

        return evaluate_preset(store, data, metrics, s, by)
    relevance = resolve_relevance(data, s)
    names = list(metrics) if metrics else default_metrics(data, s.k, relevance, store, s)
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
            raise UsageError(
                f"run {data.run.name} has neither qrels nor gold evidence: ranking metrics need one"
            )
        inputs["ranking"] = (
            id_labels(data, s) if relevance == "ids" else evidence_labels(store, data, s)
        )
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
    settings_json = s.to_json(relevance)
    if "judge" in families:
        scores = judge_inputs(store, data, s)
        inputs["judge"] = (scores, np.arange(n, dtype=np.int64))
        judged = [c for name, c in scores.columns.items() if registry.parse(name) in measures]
        counts["judged"] = int(np.count_nonzero(np.any(~np.isnan(judged), axis=0))) if judged else 0
        counts["judge_errors"] = scores.errors
        if scores.source is not None:
            settings_json["judge"] = dict(scores.source)

    weights: dict[str, Floats] = {}
    run_values: dict[str, float] = {}
    for m in measures:
        family = m.spec.family
        if family not in inputs:
            raise UsageError(f"measure {m} ({family}) is not supported for run {data.run.name}")
        data_in, rows = inputs[family]
        if relevance == "ids" and m.spec.every_judged_query and not s.complete:
            data_in, rows = id_labels(data, dataclasses.replace(s, complete=True))
        name = str(m)
        values = registry.compute([m], data_in)[name]
        w = registry.weights_of(m, data_in)
        # the run value from the family's own rows: the scattered NaNs would only be dropped again
        run_values[name] = registry.aggregate(m, values, w)
        per_query[name] = scatter(values, rows)
        if w is not None:
            weights[name] = scatter(w, rows)

    # latency, tokens and cost do not depend on k, the threshold or the scorer: once per run,
    # when first read (Deferred)
    rows_ops = ops_rows(data)
    report_ops = Deferred(rows_ops.summary)
    by_out = breakdown(data, per_query, weights, by) if by else None
    from rageval_core.evaluation import checks  # it reads this module's coverage and labels

    return Report(
        run=data.run.name,
        settings=settings_json,
        relevance=relevance,
        metrics=run_values,
        query_ids=data.query_ids,
        per_query=per_query,
        counts=counts,
        ops=report_ops,
        by=by_out,
        weights=weights,
        # the report's own EvidenceRecall@k (and, in ids mode, R@k) columns serve the check
        warnings=depth_warning(data.depth, [m.cutoff for m in measures])
        + checks.lenient_threshold_warning(
            store, data, s, run_values, per_query, weights, relevance
        ),
    )


def with_breakdown(data: RunData, report: Report, tag: str) -> Report:
    """report with its by-tag breakdown (report.by), from its per-query values: nothing is recomputed.

    Equals evaluate(..., by=tag) at the report's settings; data is the run it was evaluated on.
    """
    if report.n_queries != data.n_queries:
        raise UsageError(f"report of run {report.run} does not belong to run {data.run.name}")
    aggregate = None
    preset = report.settings.get("preset")
    if preset:  # a preset's metrics aggregate its script's way
        from rageval_core.evaluation.preset_parity import preset_aggregate

        def aggregate(metric: str, values: Floats, weights: Floats | None) -> float:
            return preset_aggregate(preset, metric, values, weights)

    by = breakdown(data, report.per_query, report.weights, tag, aggregate)
    return dataclasses.replace(report, by=by)


def _aggregate(
    name: str, values: Floats, weights: Floats | None, rows: NDArray[Any] | None = None
) -> float:
    """The run value of a per-query column (over the rows of a mask or an index, when given)."""
    if rows is not None:
        values = values[rows]
        weights = None if weights is None else weights[rows]
    return registry.aggregate(name, values, weights)


def breakdown(
    data: RunData,
    per_query: dict[str, Floats],
    weights: dict[str, Floats],
    tag: str,
    aggregate: Callable[[str, Floats, Floats | None], float] | None = None,
) -> dict[str, Any]:
    """Every metric and ops summary inside each value of one tag, with counts (the ops part,
    independent of the settings, is computed once per run and tag). aggregate(name, values,
    weights): a run value other than the registry's (a preset's metrics)."""
    if tag not in data.tags:
        known = ", ".join(sorted(data.tags)) or "none"
        raise UsageError(f"run {data.run.name} has no tag {tag!r} (tags: {known})")
    groups: dict[str, Any] = {}
    labels, found = memo(data, ("groups", tag), lambda: groups_of(data, tag))
    rows_ops = ops_rows(data)
    for group, rows in found:
        metrics = {
            name: _aggregate(name, col, weights.get(name), rows)
            if aggregate is None
            else aggregate(name, col[rows], None if name not in weights else weights[name][rows])
            for name, col in per_query.items()
        }
        # the ops part is read lazily (Deferred): the grouped percentiles are computed, once per
        # run and tag, by the first view that shows them
        groups[group] = Deferred(
            functools.partial(group_ops, rows_ops, tag, labels, group),
            eager={"n": int(rows.size), "metrics": metrics},
        )
    return {"tag": tag, "groups": groups}
