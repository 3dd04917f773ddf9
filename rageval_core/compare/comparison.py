"""Compare two to five runs: alignment, paired tests, latency and cost.

The first run is the baseline; every other run is a candidate compared with it, query by query,
on the queries the two of them hold (each pair on its own: a candidate that holds few of the
baseline's queries narrows only its own comparison; one that holds none is left out, named).
For each metric: the runs' means, the paired difference with a bootstrap confidence interval,
p-values of a paired t-test and a paired randomisation (sign-flip) test, Holm-corrected across
all (candidate, metric) tests, Cohen's d_z, and wins/ties/losses (statistics.py does the maths).
Latency and cost changes per stage, and the same metric comparison inside every value of a tag.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.compare.memo import CompareMemo
from rageval_core.compare.paired import (
    NOTE_SMALL,
    PairedTest,
    TestInput,
    _with_holm,
    higher_is_better,
    paired_test,
    paired_tests,
)
from rageval_core.compare.statistics import Floats, StatOptions
from rageval_core.compare.latency_change import OpsChange, ops_changes, stage_columns
from rageval_core.errors import UsageError
from rageval_core.evaluation.preset_parity import preset_aggregate, preset_metric_names, with_preset
from rageval_core.settings.presets import get_preset
from rageval_core.evaluation.evaluate import (
    default_metrics,
    evaluate,
    open_file_in_scratch_store,
    resolve_relevance,
)
from rageval_core.evaluation.labels import labelled_data
from rageval_core.evaluation.report import Report, Settings
from rageval_core.metrics import registry
from rageval_core.evaluation.report import depth_warning
from rageval_core.rundata import LoadedRun, RunData, load_run_data, load_stored
from rageval_core.store import Store, reads

Source = LoadedRun | RunData | str | Path

DEFAULT_WORST = 10
MIN_RUNS, MAX_RUNS = 2, 5
#: query ids listed per run in the alignment (the count is always exact)
MAX_IDS_SHOWN = 20
#: latency statistics a comparison reports and a gate rule may name
#: |per-query difference| at or below this is a tie
_TIE = 1e-12

__all__ = ["NOTE_SMALL", "PairedTest", "higher_is_better", "paired_test"]  # from paired.py


# --- alignment -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """The baseline and one candidate matched by query_id: the queries both hold (in the
    baseline's order), each one's row in either run, and the queries only one of them holds."""

    candidate: str
    shared_ids: NDArray[np.object_]
    base_rows: NDArray[np.intp]  # the baseline's row of each shared query
    cand_rows: NDArray[np.intp]  # the candidate's row of each shared query
    n_baseline_only: int
    baseline_only: list[str]  # up to MAX_IDS_SHOWN ids
    n_candidate_only: int
    candidate_only: list[str]

    @property
    def n_shared(self) -> int:
        return int(self.shared_ids.size)

    def to_json(self) -> dict[str, Any]:
        return {
            "n_shared": self.n_shared,
            "baseline_only": {"n": self.n_baseline_only, "query_ids": self.baseline_only},
            "candidate_only": {"n": self.n_candidate_only, "query_ids": self.candidate_only},
        }


def pair_queries(
    candidate: str, base_ids: NDArray[np.object_], cand_ids: NDArray[np.object_]
) -> Pair:
    """Match one candidate's queries with the baseline's by query_id (none shared: n_shared 0).

    A query id the candidate holds twice pairs with its first row. One dict lookup per id:
    np.isin over string ids was slow on every first render of Compare (docs/benchmarks.md).
    """
    base = [str(q) for q in np.asarray(base_ids).tolist()]
    cand = [str(q) for q in np.asarray(cand_ids).tolist()]
    first: dict[str, int] = {}
    for i, q in enumerate(cand):
        first.setdefault(q, i)
    rows = [first.get(q, -1) for q in base]
    base_rows = [i for i, r in enumerate(rows) if r >= 0]
    shared = [base[i] for i in base_rows]
    shared_set = set(shared)
    base_alone = [q for q, r in zip(base, rows, strict=True) if r < 0]
    cand_alone = [q for q in cand if q not in shared_set]
    return Pair(
        candidate=candidate,
        shared_ids=np.array(shared, dtype=object),
        base_rows=np.array(base_rows, dtype=np.intp),
        cand_rows=np.array([r for r in rows if r >= 0], dtype=np.intp),
        n_baseline_only=len(base_alone),
        baseline_only=base_alone[:MAX_IDS_SHOWN],
        n_candidate_only=len(cand_alone),
        candidate_only=cand_alone[:MAX_IDS_SHOWN],
    )


#: why a candidate that shares no query with the baseline is left out of a comparison
NO_SHARED = "shares no query_id with the baseline"


@dataclass(frozen=True)
class Alignment:
    """Each candidate paired with the baseline on the queries the two of them hold.

    A candidate is compared on its own pair, so a candidate that holds few of the baseline's
    queries narrows only its own comparison. A candidate that shares no query is left out,
    with the reason (left_out), and the others are compared.
    """

    baseline: str
    n_queries: dict[str, int]  # every run given, left-out candidates included
    pairs: tuple[Pair, ...]  # the candidates compared, in the given order
    left_out: dict[str, str]  # candidate -> why it is not compared

    def pair(self, candidate: str) -> Pair:
        for p in self.pairs:
            if p.candidate == candidate:
                return p
        raise KeyError(candidate)

    @property
    def baseline_rows(self) -> NDArray[np.intp]:
        """The baseline's rows paired with at least one candidate, in the baseline's order."""
        return np.unique(np.concatenate([p.base_rows for p in self.pairs])).astype(np.intp)

    @property
    def n_shared(self) -> int:
        """The baseline's queries paired with at least one candidate (one candidate: its pair)."""
        return int(self.baseline_rows.size)

    @property
    def same_queries(self) -> bool:
        """Whether every pair holds the same queries (then one n describes them all)."""
        return len({p.n_shared for p in self.pairs}) <= 1 and all(
            np.array_equal(p.base_rows, self.pairs[0].base_rows) for p in self.pairs[1:]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "n_shared": self.n_shared,
            "n_queries": dict(self.n_queries),
            "pairs": {p.candidate: p.to_json() for p in self.pairs},
            "left_out": dict(self.left_out),
        }


def align(labels: Sequence[str], query_ids: Sequence[NDArray[np.object_]]) -> Alignment:
    """Pair each candidate (labels[1:]) with the baseline (labels[0]) by query_id, on the
    queries the two of them hold; UsageError when no candidate shares a query with it."""
    pairs: list[Pair] = []
    left_out: dict[str, str] = {}
    for label, ids in zip(labels[1:], query_ids[1:], strict=True):
        p = pair_queries(label, query_ids[0], ids)
        if p.n_shared:
            pairs.append(p)
        else:
            left_out[label] = NO_SHARED
    if not pairs:
        parts = [
            f"{label} ({len(ids)} queries"
            + (
                f", e.g. {', '.join(np.asarray(ids[:3]).astype(str).tolist())})"
                if len(ids)
                else ")"
            )
            for label, ids in zip(labels, query_ids, strict=True)
        ]
        raise UsageError("the runs share no query_id, nothing to compare: " + "; ".join(parts))
    return Alignment(
        baseline=labels[0],
        n_queries={label: len(q) for label, q in zip(labels, query_ids, strict=True)},
        pairs=tuple(pairs),
        left_out=left_out,
    )


def shared_query_counts(store: Store, run_id: int) -> dict[int, int]:
    """{run_id: how many of its query ids the run run_id also holds}, for every stored run (0:
    nothing to pair with it)."""
    return reads.shared_query_counts(store, run_id)


# --- the comparison --------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """Everything compare() found; to_json() gives the documented object."""

    baseline: str
    candidates: tuple[str, ...]
    runs: list[dict[str, Any]]  # name, created_at, n_queries of each run, in the given order
    settings: dict[str, Any]
    relevance: str | None
    options: StatOptions
    alignment: Alignment
    metrics: list[str]
    # run -> metric -> value: a candidate's over its pair's queries, the baseline's over its
    # queries paired with any candidate (each test holds the baseline's value on its own pair)
    means: dict[str, dict[str, float]]
    n_scored: dict[str, dict[str, int]]  # run -> metric -> those queries it scores
    tests: list[PairedTest]  # one per (candidate, metric), candidate-major; Holm across all
    worst: dict[str, dict[str, list[dict[str, Any]]]]  # candidate -> metric -> regressions
    latency: list[OpsChange]
    cost: list[OpsChange]
    cost_note: str
    stages: dict[str, list[str]]  # run -> latency stages it records (any query)
    by: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # run -> evaluate's depth note, where a compared cut-off exceeds that run's depth
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def n_shared(self) -> int:
        """The baseline's queries paired with some candidate (one candidate: that pair's n)."""
        return self.alignment.n_shared

    def test(self, candidate: str, metric: str) -> PairedTest:
        for t in self.tests:
            if t.candidate == candidate and t.metric == metric:
                return t
        raise KeyError((candidate, metric))

    def ops_change(self, candidate: str, target: str) -> OpsChange | None:
        return next(
            (
                c
                for c in (*self.latency, *self.cost)
                if c.candidate == candidate and c.target == target
            ),
            None,
        )

    def to_json(self) -> dict[str, Any]:
        alpha = self.options.alpha
        metrics = []
        for name in self.metrics:
            metrics.append(
                {
                    "metric": name,
                    "higher_is_better": higher_is_better(name),
                    "means": {run: self.means[run].get(name) for run in self.means},
                    "n_scored": {run: self.n_scored[run].get(name) for run in self.n_scored},
                    "vs_baseline": {
                        t.candidate: t.to_json(alpha) for t in self.tests if t.metric == name
                    },
                }
            )
        latency: dict[str, dict[str, dict[str, Any]]] = {}
        for c in self.latency:
            _, stage, stat = c.target.split(".")
            per_stage = latency.setdefault(c.candidate, {})
            per_stage.setdefault(stage, {"n": c.n, "status": c.status})[stat] = c.to_json()
        cost: dict[str, dict[str, Any]] = {}
        for c in self.cost:
            cost.setdefault(c.candidate, {})[c.target.split(".")[1]] = c.to_json()
        out = {
            "baseline": self.baseline,
            "candidates": list(self.candidates),
            "runs": self.runs,
            "settings": self.settings,
            "statistics": {
                "n_permutations": self.options.n_permutations,
                "n_bootstrap": self.options.n_bootstrap,
                "seed": self.options.seed,
                "alpha": alpha,
                "ci_level": self.options.level,
                "holm_tests": len(self.tests),
            },
            "alignment": self.alignment.to_json(),
            "metrics": metrics,
            "worst": self.worst,
            "latency_ms": latency,
            "cost_usd": cost,
            "cost_note": self.cost_note or None,
            "latency_stages": self.stages,
        }
        if self.warnings:
            out["warnings"] = {run: list(notes) for run, notes in self.warnings.items()}
        if self.by:
            out["by"] = {
                tag: {
                    group: {
                        "n": seg["n"],
                        "metrics": {
                            name: {
                                t.candidate: t.to_json(alpha)
                                for t in seg["tests"]
                                if t.metric == name
                            }
                            for name in self.metrics
                        },
                    }
                    for group, seg in groups.items()
                }
                for tag, groups in self.by.items()
            }
        return ops.to_json_value(out)  # type: ignore[no-any-return]


@contextlib.contextmanager
def open_runs(
    sources: Sequence[Source], store: Store | None = None
) -> Iterator[list[tuple[Store, RunData]]]:
    """Each source as (its store, its RunData): a LoadedRun, a RunData or a name/id in store, or
    a run file.

    A file is read into its own in-memory store; a name with no store given opens the default
    store. Every store opened here is closed on exit.
    """
    with contextlib.ExitStack() as stack:
        out: list[tuple[Store, RunData]] = []
        named = store
        for source in sources:
            if isinstance(source, LoadedRun):  # each in its own store, closed by its owner
                out.append((source.store, source.data))
                continue
            if isinstance(source, RunData):
                if store is None:
                    raise UsageError("comparing a RunData needs the store it came from")
                out.append((store, source))
                continue
            path = Path(source)
            if path.is_file():
                scratch = stack.enter_context(open_file_in_scratch_store([path]))
                out.append((scratch, load_run_data(scratch, scratch.runs()[0].run_id)))
                continue
            if named is None:
                named = stack.enter_context(Store())
            out.append((named, load_stored(named, str(source))))
        yield out


def compare(
    runs: Sequence[Source],
    metrics: Sequence[str] | None = None,
    *,
    store: Store | None = None,
    settings: Settings | None = None,
    by: Sequence[str] = (),
    options: StatOptions | None = None,
    n_worst: int = DEFAULT_WORST,
    resample: bool = True,
    with_ops: bool = True,
    reports: Sequence[Report | None] | None = None,
    memo: CompareMemo | None = None,
    **overrides: Any,
) -> Comparison:
    """Compare runs[1:] with the baseline runs[0] (2 to 5 runs: LoadedRun, RunData, names or
    files).

    metrics None: the default metrics every run supports (as evaluate() chooses them); an
    empty list: none (latency and cost only).
    settings fields may also be given as keywords: compare(runs, k=5).
    resample=False skips the bootstrap intervals and randomisation tests (left NaN): the
    means, deltas, t-tests and wins come back at a fraction of the cost, for a first look.
    with_ops=False leaves latency and cost out (compare_ops computes them: they do not depend
    on the settings, so a caller that caches them need not redo them when k moves).
    reports: each run's Report at these settings, where a caller holds one (a dashboard's
    cache): a run whose report has every compared metric is not evaluated again.
    memo: what earlier comparisons of these runs computed (memo.py): only the tests whose
    per-query values changed since are computed again, with the same numbers.
    """
    base = settings or Settings()
    if overrides.get("preset") is not None:  # its values, then the other keywords over them
        base = with_preset(base, overrides["preset"])
    s = dataclasses.replace(base, **overrides)
    s.check()
    opts = options or StatOptions()
    opts.check()
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise UsageError(
            f"compare takes {MIN_RUNS} to {MAX_RUNS} runs (a baseline and its "
            f"candidates), got {len(runs)}"
        )
    if n_worst < 0:
        raise UsageError(f"the number of worst queries must be >= 0, got {n_worst}")
    if reports is not None and len(reports) != len(runs):
        raise UsageError(f"{len(runs)} runs but {len(reports)} reports")
    with open_runs(runs, store) as loaded:
        memo = memo if memo is not None else CompareMemo()
        return _compare(
            loaded, metrics, s, list(by), opts, n_worst, resample, with_ops, reports, memo
        )


def compare_ops(
    runs: Sequence[Source],
    *,
    store: Store | None = None,
    options: StatOptions | None = None,
    resample: bool = True,
) -> tuple[list[OpsChange], list[OpsChange], str]:
    """The latency and cost part of compare(runs): (latency changes, cost changes, cost note)."""
    opts = options or StatOptions()
    opts.check()
    with open_runs(runs, store) as loaded:
        labels = _labels([d.run.name for _, d in loaded])
        alignment = align(labels, [d.query_ids for _, d in loaded])
        return ops_changes(loaded, labels, alignment, opts, resample)


def _labels(names: Sequence[str]) -> list[str]:
    """Run names, made unique with #2, #3 ... (the same run may be compared with itself)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _choose_metrics(
    loaded: Sequence[tuple[Store, RunData]], metrics: Sequence[str] | None, settings: Settings
) -> list[str]:
    if settings.preset is not None:
        return preset_metric_names(get_preset(settings.preset), metrics)
    if metrics is not None:  # an empty list compares no metric (latency and cost only)
        return [str(m) for m in registry.parse_all(metrics)]
    per_run = [
        default_metrics(
            d,
            settings.k,
            resolve_relevance(labelled_data(st, d, settings.labels), settings),
            st,
            settings,
        )
        for st, d in loaded
    ]
    return [m for m in per_run[0] if all(m in other for other in per_run[1:])]


def _compare(
    loaded: list[tuple[Store, RunData]],
    metrics: Sequence[str] | None,
    settings: Settings,
    by: list[str],
    opts: StatOptions,
    n_worst: int,
    resample: bool = True,
    with_ops: bool = True,
    given: Sequence[Report | None] | None = None,
    memo: CompareMemo | None = None,
) -> Comparison:
    memo = memo if memo is not None else CompareMemo()
    all_labels = _labels([d.run.name for _, d in loaded])
    ids = [d.query_ids for _, d in loaded]
    # the same arrays (a dashboard's cached runs) align as before: the entry holds them, so
    # their ids cannot be reused by other arrays while it lives
    held_alignment = memo.get(("alignment", tuple(all_labels), tuple(map(id, ids))))
    alignment = held_alignment[0] if held_alignment else align(all_labels, ids)
    memo.put(("alignment", tuple(all_labels), tuple(map(id, ids))), (alignment, ids))
    # the runs compared: the baseline and the candidates that share a query with it
    kept = [0] + [all_labels.index(p.candidate) for p in alignment.pairs]
    runs_info = [
        {"name": label, "created_at": d.run.created_at, "n_queries": d.n_queries}
        for label, (_, d) in zip(all_labels, loaded, strict=True)
    ]
    loaded = [loaded[i] for i in kept]
    labels = [all_labels[i] for i in kept]
    held = [given[i] for i in kept] if given is not None else [None] * len(kept)
    pairs = alignment.pairs
    names = _choose_metrics(loaded, metrics, settings)

    def report_of(i: int) -> Report | None:
        if not names:
            return None
        r = held[i]
        if r is not None and all(m in r.per_query for m in names):
            return r
        st, d = loaded[i]
        return evaluate(d, names, store=st, settings=settings)

    reports = [report_of(i) for i in range(len(loaded))]
    for i, report in zip(kept, reports, strict=True):  # each run's labels counted (--labels)
        if report is not None and "label_counts" in report.settings:
            runs_info[i]["label_counts"] = report.settings["label_counts"]
    relevance = reports[0].relevance if reports[0] is not None else None
    uses_ranking = settings.preset is None and any(
        registry.parse(m).spec.family == "ranking" for m in names
    )
    modes = {label: r.relevance for label, r in zip(labels, reports, strict=True) if r is not None}
    if uses_ranking and len(set(modes.values())) > 1:
        shown = ", ".join(f"{k}: {v}" for k, v in modes.items())
        raise UsageError(
            f"the runs judge relevance differently ({shown}); pass --relevance "
            "evidence (or ids) so ranking metrics mean the same thing in every run"
        )
    # every run's per-query columns and weights in its own query order; each pair picks its rows
    cols: list[dict[str, Floats]] = []
    weights: list[dict[str, Floats | None]] = []
    for report in reports:
        # the pooled metrics' per-query weights (EvidenceRecall: span counts) as evaluate() has
        # them, NaN where a query is not scored
        cols.append({m: report.per_query[m] for m in names} if report else {})
        weights.append({m: report.weights.get(m) if report else None for m in names})
    # the rows each run's own value is taken over: the baseline's paired with any candidate
    own_rows = [alignment.baseline_rows, *(p.cand_rows for p in pairs)]

    def pick(x: Floats | None, rows: NDArray[np.intp]) -> Floats | None:
        return None if x is None else x[rows]

    def aggregate(i: int, m: str) -> float:
        col, w = cols[i][m][own_rows[i]], pick(weights[i][m], own_rows[i])
        if settings.preset is not None:
            return preset_aggregate(settings.preset, m, col, w)  # type: ignore[no-any-return]
        return registry.aggregate(m, col, w)  # type: ignore[no-any-return]

    means = {label: {m: aggregate(i, m) for m in names} for i, label in enumerate(labels)}
    n_scored = {
        label: {m: int(np.count_nonzero(~np.isnan(cols[i][m][own_rows[i]]))) for m in names}
        for i, label in enumerate(labels)
    }

    def family_tests(base_mask: NDArray[np.bool_] | None) -> list[PairedTest]:
        """Every (candidate, metric) test on its pair's queries (base_mask: only the baseline's
        queries it marks), Holm over them all."""
        inputs: list[TestInput] = []
        for i, p in enumerate(pairs, start=1):
            b_rows, c_rows = p.base_rows, p.cand_rows
            if base_mask is not None:
                keep = base_mask[b_rows]
                b_rows, c_rows = b_rows[keep], c_rows[keep]
            inputs += [
                (
                    m,
                    labels[i],
                    cols[0][m][b_rows],
                    cols[i][m][c_rows],
                    pick(weights[0][m], b_rows),
                    pick(weights[i][m], c_rows),
                )
                for m in names
            ]
        return _with_holm(paired_tests(inputs, opts, resample, memo))

    tests = family_tests(None)
    worst = {
        labels[i]: {
            m: _worst(p.shared_ids, cols[0][m][p.base_rows], cols[i][m][p.cand_rows], m, n_worst)
            for m in names
        }
        for i, p in enumerate(pairs, start=1)
    }
    latency, cost, cost_note = (
        ops_changes(loaded, labels, alignment, opts, resample) if with_ops else ([], [], "")
    )
    segments: dict[str, dict[str, dict[str, Any]]] = {}
    base = loaded[0][1]
    paired_rows = alignment.baseline_rows
    for tag in by:
        if tag not in base.tags:
            known = ", ".join(sorted(base.tags)) or "none"
            raise UsageError(f"run {labels[0]} has no tag {tag!r} (tags: {known})")
        values = ops._labels(base.tags[tag])
        segments[tag] = {}
        for group in ops._group_order(set(values[paired_rows].tolist())):
            mask = values == group
            segments[tag][group] = {
                "n": int(mask[paired_rows].sum()),
                "tests": family_tests(mask),
            }
    return Comparison(
        baseline=labels[0],
        candidates=tuple(labels[1:]),
        runs=runs_info,
        settings=settings.to_json(relevance),
        relevance=relevance,
        options=opts,
        alignment=alignment,
        metrics=names,
        means=means,
        n_scored=n_scored,
        tests=tests,
        worst=worst,
        latency=latency,
        cost=cost,
        cost_note=cost_note,
        stages={
            label: list(stage_columns(d)) for label, (_, d) in zip(labels, loaded, strict=True)
        },
        by=segments,
        warnings=_depth_notes(labels, [d for _, d in loaded], names),
    )


def _depth_notes(
    labels: Sequence[str], runs: Sequence[RunData], names: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """Each run's depth note (report.depth_warning, evaluate's words) for the compared
    measures' cut-offs; a preset's own names carry none."""
    cutoffs = []
    for name in names:
        with contextlib.suppress(UsageError):  # a preset's own name (recall_score) is no measure
            cutoffs.append(registry.parse(name).cutoff)
    notes = {label: depth_warning(d.depth, cutoffs) for label, d in zip(labels, runs, strict=True)}
    return {label: note for label, note in notes.items() if note}


def _worst(
    ids: NDArray[np.object_], base: Floats, cand: Floats, metric: str, n: int
) -> list[dict[str, Any]]:
    """The queries that regressed most (in the metric's direction), worst first."""
    sign = 1.0 if higher_is_better(metric) else -1.0
    with np.errstate(invalid="ignore"):
        gain = (cand - base) * sign
    rows = np.flatnonzero(gain < -_TIE)
    rows = rows[np.argsort(gain[rows], kind="stable")][:n]
    return [
        {
            "query_id": str(ids[r]),
            "baseline": float(base[r]),
            "candidate": float(cand[r]),
            "diff": float(cand[r] - base[r]),
        }
        for r in rows.tolist()
    ]
