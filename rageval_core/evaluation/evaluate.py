"""One API over everything: evaluate(run, k=..., threshold=...) -> Report.

Data flow: store -> RunData (numpy arrays, loaded once) -> prepared inputs per family (cached on
the RunData by the settings they depend on) -> per-query metric arrays -> run values -> Report.
Moving k or the threshold touches only the last two steps.
"""

from __future__ import annotations

import dataclasses
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
from rageval_core.evaluation.breakdown import breakdown as breakdown
from rageval_core.evaluation.labels import label_counts, labelled_data
from rageval_core.evaluation.relevance import _cut_order as _cut_order
from rageval_core.evaluation.relevance import _under_labels
from rageval_core.evaluation.relevance import coverage as coverage
from rageval_core.evaluation.relevance import evidence_labels as evidence_labels
from rageval_core.evaluation.relevance import id_labels as id_labels
from rageval_core.evaluation.relevance import resolve_relevance as resolve_relevance
from rageval_core.evaluation.report import (
    EVIDENCE_DEFAULTS,
    RANKING_DEFAULTS,
    Floats,
    Relevance,
    Report,
    Settings,
    depth_warning,
)
from rageval_core.metrics.generation import GENERATION_METRICS, AnswerInputs, generation_scores
from rageval_core.metrics.judge import JudgeScores
from rageval_core.rundata import (
    LoadedRun,
    RunData,
    _floats,
    load_run_data,
    memo,
)
from rageval_core.latency.run_summary import Deferred, ops_rows
from rageval_core.settings.schema import DEFAULTS, default_for
from rageval_core.store import Store, answers
from rageval_core.store.store import RunRef

DEFAULT_LABELS = DEFAULTS["labels"]

# --- inputs per family, cached on the RunData -----------------------------------------------


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


def judge_inputs(store: Store, data: RunData, settings: Settings) -> JudgeScores:
    """The run's judge.* columns: imported scores and the chosen judge result set (newest by
    default, Settings.judge to pick one; rageval_core.judging.scores)."""
    from rageval_core.judging.scores import judge_scores
    from rageval_core.store import judgements

    sets = tuple(j.judge_id for j in judgements.judge_sets(store, data.run.run_id))
    return memo(  # type: ignore[no-any-return]
        data,
        ("judge", settings.judge, sets),
        lambda: judge_scores(store, data.run.run_id, data.n_queries, settings.judge),
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
        if settings is not None and settings.cross_encoder:
            names.append("CrossEncoderSimilarity")
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
    store: Store, data: RunData, metrics: Sequence[str] | None, settings: Settings, by: str | None
) -> Report:
    # a preset: its own metrics and names (preset_parity.py)
    if settings.preset is not None:
        from rageval_core.evaluation.preset_parity import evaluate_preset

        return evaluate_preset(store, data, metrics, settings, by)
    # the qrels the ranking metrics read: the labels setting's (evaluation/labels.py)
    data = labelled_data(store, data, settings.labels)
    relevance = resolve_relevance(data, settings)
    names = (
        list(metrics) if metrics else default_metrics(data, settings.k, relevance, store, settings)
    )
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
                f"run {data.run.name} has neither qrels{_under_labels(settings)} nor gold "
                "evidence: ranking metrics need one"
            )
        inputs["ranking"] = (
            id_labels(data, settings)
            if relevance == "ids"
            else evidence_labels(store, data, settings)
        )
        if relevance == "ids":
            counts["scored_ids"] = int(inputs["ranking"][1].size)
            counts["skipped_no_qrels"] = int(np.count_nonzero(~data.has_qrels))
            counts["missing_from_run"] = int(np.count_nonzero(data.has_qrels & ~data.in_run))
    if "evidence" in families or (relevance == "evidence" and "ranking" in families):
        cov = coverage(store, data, settings)
        inputs["evidence"] = (cov, cov.rows)
        counts["scored_evidence"] = cov.n_queries
        counts["no_evidence"] = cov.n_excluded
    if "generation" in families:
        inputs["generation"] = answer_inputs(store, data)
        counts["scored_answers"] = int(inputs["generation"][1].size)
    if "cross_encoder" in families:
        from rageval_core.evaluation.cross_answers import cross_encoder_inputs

        inputs["cross_encoder"] = cross_encoder_inputs(store, data, settings)
    settings_json = settings.to_json(relevance)
    if settings_json["labels"] != DEFAULT_LABELS:  # how many labels of each source counted
        settings_json["label_counts"] = label_counts(data)
    if "judge" in families:
        scores = judge_inputs(store, data, settings)
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
        if relevance == "ids" and m.spec.every_judged_query and not settings.complete:
            data_in, rows = id_labels(data, dataclasses.replace(settings, complete=True))
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
    import rageval_core.evaluation.checks as checks  # it reads this module's coverage and labels

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
            store, data, settings, run_values, per_query, weights, relevance
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
