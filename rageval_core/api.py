"""rageval as a library, for notebooks and test harnesses: load a run, evaluate it, compare runs,
gate a change. The CLI's evaluate, compare and gate are these functions; the dashboard evaluates
and compares with the same evaluate() and compare() underneath.

    import rageval as rv      # the package re-exports this module's names

    with rv.load("sample_runs/bm25.jsonl") as bm25, rv.load("sample_runs/hybrid_rerank.jsonl") as hybrid:
        report = rv.evaluate(bm25, k=5)               # settings as keywords, or settings=Settings(...)
        print(report.metrics["nDCG@5"], report.metrics["EvidenceRecall@5"])
        comparison = rv.compare([bm25, hybrid], metrics=["nDCG@10", "RR"])
        print(rv.gate(comparison, max_drop={"nDCG@10": 0.01}).passed)

A run comes from a file (any format `rageval import` reads, with its companions), from records in
the native shape (a list of dicts), from a table in the table shape (a pandas DataFrame or a
pyarrow Table, one row per chunk), or from a store by name. Bad input raises InputError, whose
problems are `place:line: field: problem` as the CLI prints them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval_core.compare import Comparison, GateResult, Rule, gate as _gate, parse_rules
from rageval_core.compare import compare as _compare
from rageval_core.diagnosis import Diagnosis
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.evaluation.agreement import Agreement
from rageval_core.evaluation.evaluate import open_file_in_scratch_store, open_in_scratch_store
from rageval_core.evaluation.report import Report, Settings
from rageval_core.evaluation.evaluate import evaluate as _evaluate
from rageval_core.evaluation.preset_parity import Explanation
from rageval_core.evaluation.preset_parity import explain_preset as _explain
from rageval_core.rundata import LoadedRun, load_run_data, load_stored
from rageval_core.store import Store

__all__ = [
    "Agreement",
    "Comparison",
    "Diagnosis",
    "GateResult",
    "LoadedRun",
    "Report",
    "Settings",
    "agreement",
    "compare",
    "diagnose",
    "evaluate",
    "explain_preset",
    "gate",
    "load",
]

#: what load() takes
Source = str | Path | Sequence[str | Path] | Sequence[Mapping[str, Any]] | Any


def load(
    source: Source,
    *,
    format: str | None = None,
    name: str | None = None,
    db: str | Path | None = None,
    store: Store | None = None,
) -> LoadedRun:
    """One run, ready for evaluate() and compare(); close it (or use `with`) when done.

    source: a run file's path; a list of paths (a run and its companions: TREC qrels, a sidecar);
    a list of dicts, each a native record (docs/formats.md; a first {"rageval_run": {...}} is
    the header); a pandas DataFrame or pyarrow Table with the table format's columns; or the name
    or id of a run already in the store `db` (default: $RAGEVAL_DB or .rageval/rageval.duckdb), or
    in `store`, a Store the caller keeps open (and closes).
    format forces a reader for files, as --format does; name names a run read from Python objects
    or files (default: the file's own name, "records" or "table").
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        if path.is_file():
            return _scratch(open_file_in_scratch_store([path], format, name))
        return _stored(str(source), db, store)
    if _is_table(source):
        from rageval_core.formats import table

        log = ProblemLog()
        return _scratch(
            open_in_scratch_store(table.read_arrow(_arrow(source), log), log, name or "table")
        )
    paths = (
        [p for p in source if isinstance(p, (str, Path))] if isinstance(source, Sequence) else []
    )
    if paths and len(paths) == len(source):
        return _scratch(open_file_in_scratch_store([Path(p) for p in paths], format, name))
    if isinstance(source, Sequence):
        from rageval_core.formats import native

        log = ProblemLog()
        return _scratch(
            open_in_scratch_store(native.read_records(source, log), log, name or "records")
        )
    raise UsageError(
        f"cannot load a {type(source).__name__}: give a path, a list of paths, a list of native "
        "records (dicts), a DataFrame or pyarrow Table, or a stored run's name"
    )


def evaluate(
    run: LoadedRun | str | Path,
    metrics: Sequence[str] | None = None,
    *,
    settings: Settings | None = None,
    by: str | None = None,
    db: str | Path | None = None,
    **overrides: Any,
) -> Report:
    """The metrics of one run (the defaults its data supports when metrics is None), with settings
    given whole or as keywords (k=5, threshold=0.8, scorer="ratio", relevance="evidence" ...); by
    a tag key breaks every metric down by that tag's values. A path or stored name is loaded and
    closed here."""
    if isinstance(run, LoadedRun):
        return _evaluate(run, metrics, settings=settings, by=by, **overrides)
    with load(run, db=db) as loaded:
        return _evaluate(loaded, metrics, settings=settings, by=by, **overrides)


def diagnose(
    run: LoadedRun | str | Path,
    *,
    first_stage: LoadedRun | str | Path | None = None,
    settings: Settings | None = None,
    by: str | None = None,
    db: str | Path | None = None,
    **overrides: Any,
) -> Diagnosis:
    """Why each failing query of a run fails, and what would fix it (docs/diagnosis.md), with
    settings given whole or as keywords (k=5, threshold=0.8, near_miss_band=0.05 ...).

    first_stage: the run it reranks (adds the two-stage split); left out, an OpenInference
    export's reranker stage (a file, or NAME@reranker stored beside NAME) is diagnosed against
    its retriever stage. by: a tag whose values each get their counts."""
    import contextlib

    from rageval_core.diagnosis import diagnose as _diagnose

    with contextlib.ExitStack() as stack:
        stored = [
            r for r in (run, first_stage) if isinstance(r, (str, Path)) and not Path(r).is_file()
        ]
        opened = stack.enter_context(Store(db)) if db is not None or stored else None
        loaded, traced = load_stages(run, store=opened)
        stack.enter_context(loaded)
        if traced is not None:
            stack.enter_context(traced)
        first = traced
        if first_stage is not None:
            first = (
                first_stage
                if isinstance(first_stage, LoadedRun)
                else stack.enter_context(load(first_stage, store=opened))
            )
        return _diagnose(
            loaded.store,
            loaded.data,
            settings,
            first_stage=None if first is None else (first.store, first.data),
            by=by,
            **overrides,
        )


def load_stages(
    source: LoadedRun | str | Path,
    *,
    companions: Sequence[str | Path] = (),
    store: Store | None = None,
    format: str | None = None,
) -> tuple[LoadedRun, LoadedRun | None]:
    """A run, and the first stage it reranks when it is an OpenInference export's reranker
    stage (its file, with companions such as its qrels; or NAME@reranker stored beside NAME);
    None otherwise. Close both."""
    if isinstance(source, LoadedRun):
        return _with_first(LoadedRun(source.store, source.data, owns_store=False))
    path = Path(source)
    if not path.is_file():
        if companions:
            raise UsageError(f"{source} is not a file: companions apply to run files only")
        return _with_first(_stored(str(source), None, store))
    from rageval_core.formats import read_inputs
    from rageval_core.formats.options import STAGE_KEY

    log = ProblemLog()
    paths = [path, *map(Path, companions)]
    parsed = read_inputs(paths, format, log)
    log.raise_if_errors()
    if len(parsed) != 2 or not all(STAGE_KEY in p.info.settings for p in parsed):
        return _scratch(open_file_in_scratch_store(paths, format)), None
    scratch = Store(":memory:")  # both stages of a trace export, the retriever first
    try:
        for run in parsed:
            scratch.import_run(run, log)
        loaded = LoadedRun(scratch, load_run_data(scratch, scratch.runs()[-1].run_id))
    except BaseException:
        scratch.close()
        raise
    return _with_first(loaded)


def _with_first(loaded: LoadedRun) -> tuple[LoadedRun, LoadedRun | None]:
    """loaded, and its trace export's retriever stage from the same store (or None)."""
    from rageval_core.diagnosis.stages import trace_first_stage

    found = trace_first_stage(loaded.store, loaded.data.run)
    if found is None:
        return loaded, None
    first = LoadedRun(loaded.store, load_run_data(loaded.store, found.run_id), owns_store=False)
    return loaded, first


def explain_preset(run: LoadedRun, preset: str, **settings: Any) -> Explanation:
    """Why a preset's numbers differ from rageval's: its metrics under rageval's defaults, then
    with one setting at a time switched to the preset's (rageval_core.evaluation.preset_parity.Explanation;
    .steps, .to_json()). Settings given as keywords (threshold=0.6 ...) stay fixed at every step.
    """
    fixed = {k: v for k, v in settings.items() if k != "preset"}
    return _explain(run.store, run.data, preset, fixed)


def compare(
    runs: Sequence[LoadedRun | str | Path],
    metrics: Sequence[str] | None = None,
    *,
    settings: Settings | None = None,
    db: str | Path | None = None,
    store: Store | None = None,
    **options: Any,
) -> Comparison:
    """runs[1:] against the baseline runs[0] (2 to 5 runs): paired tests, intervals, latency and
    cost changes (docs/compare.md). options: by, options (StatOptions), n_worst, and settings as
    keywords. Paths are read and stored names looked up in `store` (kept open by the caller) or
    `db` (opened and closed here)."""
    opened = Store(db) if store is None and db is not None else None
    try:
        return _compare(list(runs), metrics, store=store or opened, settings=settings, **options)
    finally:
        if opened is not None:
            opened.close()


def gate(
    comparison: Comparison,
    *,
    max_drop: str | Mapping[str, float | str] | None = None,
    max_increase: str | Mapping[str, float | str] | None = None,
    significant_only: bool = False,
) -> GateResult:
    """The gate's verdict on a comparison (`.passed`, `.to_json()`), as `rageval gate` gives it:
    max_drop {"nDCG@10": 0.01} or "nDCG@10=0.01,R@10=2%"; max_increase the same for latency and
    cost ("latency.total.p95=10%", "cost.per_query=5%")."""
    rules = rules_of(max_drop, max_increase)
    if not rules:
        raise UsageError("the gate has no rule: give max_drop and/or max_increase")
    return _gate(comparison, rules, significant_only=significant_only)


def rules_of(
    max_drop: str | Mapping[str, float | str] | None,
    max_increase: str | Mapping[str, float | str] | None,
) -> list[Rule]:
    """The gate's rules from the CLI's text or a mapping of the same."""
    return (parse_rules(_rule_text(max_drop), "drop") if max_drop is not None else []) + (
        parse_rules(_rule_text(max_increase), "increase") if max_increase is not None else []
    )


def _rule_text(rules: str | Mapping[str, float | str]) -> str:
    if isinstance(rules, str):
        return rules
    return ",".join(f"{target}={limit}" for target, limit in rules.items())


def agreement(
    run: LoadedRun | str,
    *,
    raters: Sequence[tuple[str, str] | str] | None = None,
    resamples: int = 1000,
    seed: int = 0,
    db: str | Path | None = None,
    store: Store | None = None,
) -> Agreement:
    """How far the annotators of the relevance grades agree on the run's queries: Cohen's kappa
    per pair, Krippendorff's ordinal alpha with its bootstrap interval, the disagreements (as
    `rageval agreement RUN`). raters: label sets by name ("alice", "llm:MODEL") or (source,
    annotator); default every person. The grades are read from `store` (default: the run's own
    store, or the store `db` for a stored run's name)."""
    from rageval_core.evaluation.agreement import agreement as _agreement

    if isinstance(run, LoadedRun):
        qids = [str(q) for q in run.data.query_ids]
        return _agreement(store or run.store, qids, raters=raters, resamples=resamples, seed=seed)
    with load(run, db=db, store=store) as loaded:
        return agreement(loaded, raters=raters, resamples=resamples, seed=seed)


def _scratch(store: Store) -> LoadedRun:
    try:
        return LoadedRun(store, load_run_data(store, store.runs()[0].run_id))
    except BaseException:
        store.close()
        raise


def _stored(ref: str, db: str | Path | None, given: Store | None) -> LoadedRun:
    store = given if given is not None else Store(db)
    try:
        return LoadedRun(store, load_stored(store, ref), owns_store=given is None)
    except BaseException:
        if given is None:
            store.close()
        raise


def _is_table(source: Any) -> bool:
    """A pyarrow Table, or something that converts to one (a pandas DataFrame), by its shape:
    the core never imports pandas."""
    import pyarrow as pa

    return isinstance(source, pa.Table) or (
        hasattr(source, "columns") and hasattr(source, "to_dict") and hasattr(source, "dtypes")
    )


def _arrow(source: Any) -> Any:
    import pyarrow as pa

    return (
        source
        if isinstance(source, pa.Table)
        else pa.Table.from_pandas(source, preserve_index=False)
    )
