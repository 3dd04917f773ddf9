"""Compare two to five runs on their shared queries: alignment, paired tests, latency and cost.

The first run is the baseline; every other run is a candidate compared with it, query by query.
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

from rageval_core import ops
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
from rageval_core.compare.ops import OpsChange, ops_changes, stage_columns
from rageval_core.errors import UsageError
from rageval_core.parity import preset_aggregate, preset_metric_names, with_preset
from rageval_core.presets import get_preset
from rageval_core.evaluate import (
    Report,
    Settings,
    answer_inputs,
    coverage,
    default_metrics,
    evaluate,
    evidence_labels,
    id_labels,
    open_file_in_scratch_store,
    resolve_relevance,
)
from rageval_core.metrics import registry
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
class Alignment:
    """The queries every run holds (baseline order) and, per run, the ones it alone holds."""

    runs: tuple[str, ...]
    shared_ids: NDArray[np.object_]
    rows: tuple[NDArray[np.intp], ...]  # per run: its row of each shared query
    n_queries: dict[str, int]
    n_only_in: dict[str, int]
    only_in: dict[str, list[str]]  # up to MAX_IDS_SHOWN ids each

    @property
    def n_shared(self) -> int:
        return int(self.shared_ids.size)

    def to_json(self) -> dict[str, Any]:
        return {
            "n_shared": self.n_shared,
            "n_queries": dict(self.n_queries),
            "not_shared": {
                run: {"n": self.n_only_in[run], "query_ids": self.only_in[run]} for run in self.runs
            },
        }


def align(labels: Sequence[str], query_ids: Sequence[NDArray[np.object_]]) -> Alignment:
    """Align runs by query_id on the queries all of them hold; UsageError when none is shared."""
    ids = [np.asarray(q).astype(str) for q in query_ids]
    shared = ids[0]
    for other in ids[1:]:
        shared = shared[np.isin(shared, other)]
    rows: list[NDArray[np.intp]] = []
    for run_ids in ids:
        order = np.argsort(run_ids, kind="stable")
        rows.append(order[np.searchsorted(run_ids, shared, sorter=order)].astype(np.intp))
    n_only: dict[str, int] = {}
    only: dict[str, list[str]] = {}
    for label, run_ids in zip(labels, ids, strict=True):
        alone = run_ids[~np.isin(run_ids, shared)]
        n_only[label] = int(alone.size)
        only[label] = alone[:MAX_IDS_SHOWN].tolist()
    if shared.size == 0:
        parts = [
            f"{label} ({run_ids.size} queries"
            + (f", e.g. {', '.join(run_ids[:3].tolist())})" if run_ids.size else ")")
            for label, run_ids in zip(labels, ids, strict=True)
        ]
        raise UsageError("the runs share no query_id, nothing to compare: " + "; ".join(parts))
    return Alignment(
        runs=tuple(labels),
        shared_ids=shared.astype(object),
        rows=tuple(rows),
        n_queries={label: int(q.size) for label, q in zip(labels, ids, strict=True)},
        n_only_in=n_only,
        only_in=only,
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
    means: dict[str, dict[str, float]]  # run -> metric -> value over the shared queries
    n_scored: dict[str, dict[str, int]]  # run -> metric -> shared queries it scores
    tests: list[PairedTest]  # one per (candidate, metric), candidate-major; Holm across all
    worst: dict[str, dict[str, list[dict[str, Any]]]]  # candidate -> metric -> regressions
    latency: list[OpsChange]
    cost: list[OpsChange]
    cost_note: str
    stages: dict[str, list[str]]  # run -> latency stages it records (any query)
    by: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    @property
    def n_shared(self) -> int:
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

    def stages_not_compared(self) -> list[str]:
        """ "stage (run)" for every latency stage only one side of a (baseline, candidate) pair
        records: the candidates' own stages, then the baseline's that some candidate lacks."""
        base = self.stages[self.baseline]
        out = [
            f"{stage} ({cand})"
            for cand in self.candidates
            for stage in self.stages[cand]
            if stage not in base
        ]
        out += [
            f"{stage} ({self.baseline})"
            for stage in base
            if any(stage not in self.stages[cand] for cand in self.candidates)
        ]
        return out

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
            latency.setdefault(c.candidate, {}).setdefault(stage, {"n": c.n})[stat] = c.to_json()
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
    with open_runs(runs, store) as loaded:
        return _compare(loaded, metrics, s, list(by), opts, n_worst, resample, with_ops)


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
        return ops_changes(loaded, labels, alignment.rows, opts, resample)


def _labels(names: Sequence[str]) -> list[str]:
    """Run names, made unique with #2, #3 ... (the same run may be compared with itself)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def _choose_metrics(
    loaded: Sequence[tuple[Store, RunData]], metrics: Sequence[str] | None, s: Settings
) -> list[str]:
    if s.preset is not None:
        return preset_metric_names(get_preset(s.preset), metrics)
    if metrics is not None:  # an empty list compares no metric (latency and cost only)
        return [str(m) for m in registry.parse_all(metrics)]
    per_run = [default_metrics(d, s.k, resolve_relevance(d, s), st, s) for st, d in loaded]
    return [m for m in per_run[0] if all(m in other for other in per_run[1:])]


def _weights(
    store: Store, data: RunData, s: Settings, relevance: str | None, name: str
) -> Floats | None:
    """Per-query weights of a pooled metric (EvidenceRecall: span counts), NaN where unscored."""
    measure = registry.parse(name)
    family = measure.spec.family
    if measure.spec.weight is None:
        return None
    inp: Any
    if family == "evidence":
        inp = coverage(store, data, s)
        rows = inp.rows
    elif family == "ranking":
        inp, rows = id_labels(data, s) if relevance == "ids" else evidence_labels(store, data, s)
    elif family == "generation":
        inp, rows = answer_inputs(store, data)
    else:
        return None
    w = registry.weights_of(measure, inp)
    full = np.full(data.n_queries, np.nan)
    if w is not None:
        full[rows] = w
    return full


def _compare(
    loaded: list[tuple[Store, RunData]],
    metrics: Sequence[str] | None,
    s: Settings,
    by: list[str],
    opts: StatOptions,
    n_worst: int,
    resample: bool = True,
    with_ops: bool = True,
) -> Comparison:
    labels = _labels([d.run.name for _, d in loaded])
    alignment = align(labels, [d.query_ids for _, d in loaded])
    names = _choose_metrics(loaded, metrics, s)
    reports: list[Report | None] = [
        evaluate(d, names, store=st, settings=s) if names else None for st, d in loaded
    ]
    relevance = reports[0].relevance if reports[0] is not None else None
    uses_ranking = s.preset is None and any(
        registry.parse(m).spec.family == "ranking" for m in names
    )
    modes = {label: r.relevance for label, r in zip(labels, reports, strict=True) if r is not None}
    if uses_ranking and len(set(modes.values())) > 1:
        shown = ", ".join(f"{k}: {v}" for k, v in modes.items())
        raise UsageError(
            f"the runs judge relevance differently ({shown}); pass --relevance "
            "evidence (or ids) so ranking metrics mean the same thing in every run"
        )
    # every per-query column restricted to the shared queries, in the baseline's order
    cols: list[dict[str, Floats]] = []
    weights: list[dict[str, Floats | None]] = []
    for (st, d), report, rows in zip(loaded, reports, alignment.rows, strict=True):
        cols.append({m: report.per_query[m][rows] for m in names} if report else {})
        run_w = {
            m: (report.weights.get(m) if report else None)
            if s.preset is not None
            else _weights(st, d, s, report.relevance if report else None, m)
            for m in names
        }
        weights.append({m: None if w is None else w[rows] for m, w in run_w.items()})
    means = {
        label: {
            m: preset_aggregate(s.preset, m, cols[i][m], weights[i][m])
            if s.preset is not None
            else registry.aggregate(m, cols[i][m], weights[i][m])
            for m in names
        }
        for i, label in enumerate(labels)
    }
    n_scored = {
        label: {m: int(np.count_nonzero(~np.isnan(cols[i][m]))) for m in names}
        for i, label in enumerate(labels)
    }

    def family_tests(mask: NDArray[np.bool_] | None) -> list[PairedTest]:
        def cut(x: Floats | None) -> Floats | None:
            return x if x is None or mask is None else x[mask]

        inputs: list[TestInput] = [
            (
                m,
                labels[i],
                cut(cols[0][m]),  # type: ignore[misc]
                cut(cols[i][m]),  # type: ignore[misc]
                cut(weights[0][m]),
                cut(weights[i][m]),
            )
            for i in range(1, len(labels))
            for m in names
        ]
        return _with_holm(paired_tests(inputs, opts, resample))

    tests = family_tests(None)
    worst = {
        labels[i]: {
            m: _worst(alignment.shared_ids, cols[0][m], cols[i][m], m, n_worst) for m in names
        }
        for i in range(1, len(labels))
    }
    latency, cost, cost_note = (
        ops_changes(loaded, labels, alignment.rows, opts, resample) if with_ops else ([], [], "")
    )
    segments: dict[str, dict[str, dict[str, Any]]] = {}
    base = loaded[0][1]
    for tag in by:
        if tag not in base.tags:
            known = ", ".join(sorted(base.tags)) or "none"
            raise UsageError(f"run {labels[0]} has no tag {tag!r} (tags: {known})")
        values = ops._labels(base.tags[tag][alignment.rows[0]])
        segments[tag] = {}
        for group in ops._group_order(set(values.tolist())):
            mask = values == group
            segments[tag][group] = {"n": int(mask.sum()), "tests": family_tests(mask)}
    return Comparison(
        baseline=labels[0],
        candidates=tuple(labels[1:]),
        runs=[
            {"name": label, "created_at": d.run.created_at, "n_queries": d.n_queries}
            for label, (_, d) in zip(labels, loaded, strict=True)
        ],
        settings=s.to_json(relevance),
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
    )


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
