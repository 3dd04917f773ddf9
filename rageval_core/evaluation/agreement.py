"""How far the annotators of the store's relevance grades agree (issue 31): Cohen's kappa per pair
(unweighted and quadratic-weighted), Krippendorff's ordinal alpha over all of them with a
bootstrap interval, the confusion of each pair, the items they disagree on, and adjudication (a
final grade kept under the source 'adjudicated', beside theirs).

A rater is one (source, annotator) label set of store/ground_truth.py: every people annotator by
default; an LLM's `llm:MODEL` set compares with the people's the same way (calibration.py).
The statistics are metrics/agreement.py's; a figure that cannot be computed is None with the
reason (docs/metrics.md, "Agreement between annotators").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from rageval_core.errors import UsageError
from rageval_core.metrics import agreement as stats
from rageval_core.store import Store
from rageval_core.store import ground_truth as gt

Rater = tuple[str, str]  # (source, annotator)


@dataclass(frozen=True)
class PairAgreement:
    """Two raters over the items both labelled: kappa, quadratic-weighted kappa, the confusion
    (rows a, columns b, in the order of `grades`). reason: why a kappa is None."""

    a: str
    b: str
    n: int
    kappa: float | None
    weighted_kappa: float | None
    confusion: tuple[tuple[int, ...], ...]
    grades: tuple[float, ...]
    reason: str | None = None


@dataclass(frozen=True)
class Disagreement:
    """An item two or more raters graded differently: their grades, and the adjudicated one."""

    query_id: str
    doc_id: str
    grades: dict[str, float]
    adjudicated: float | None


@dataclass(frozen=True)
class Agreement:
    """Every pair's kappa, alpha over all raters with its interval, the disagreements; n_items:
    items labelled by two or more raters. reason: why a figure is withheld (None: none is)."""

    pairs: tuple[PairAgreement, ...]
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    n_items: int
    annotators: tuple[str, ...]
    disagreements: tuple[Disagreement, ...]
    reason: str | None


def rater_name(source: str, annotator: str) -> str:
    """How a label set is named: a person by their name, an LLM by its source (llm:MODEL), any
    other set as source:annotator (e.g. adjudicated:alice)."""
    if source == gt.PEOPLE:
        return annotator
    if source.startswith(gt.LLM_PREFIX) and source[len(gt.LLM_PREFIX) :] == annotator:
        return source
    return f"{source}:{annotator}"


def _pick_raters(store: Store, raters: Sequence[Rater | str] | None) -> list[Rater]:
    sets = [(s, a) for s, a, _ in gt.label_sources(store)]
    if raters is None:
        return [(s, a) for s, a in sets if s == gt.PEOPLE]
    by_name = {rater_name(s, a): (s, a) for s, a in sets}
    out: list[Rater] = []
    for r in raters:
        if isinstance(r, str):
            if r not in by_name:
                known = ", ".join(sorted(by_name)) or "none"
                raise UsageError(f"rater {r!r}: no such label set (label sets: {known})")
            r = by_name[r]
        gt.check_source(r[0])
        if r not in out:
            out.append((str(r[0]), str(r[1])))
    return out


Grades = dict[tuple[str, str], dict[Rater, float]]  # (query_id, doc_id) -> rater -> grade


def _grades(store: Store, query_ids: Iterable[str] | None, raters: Sequence[Rater]) -> Grades:
    wanted = set(raters)
    sources = sorted({s for s, _ in raters})
    out: Grades = {}
    for row in gt.grade_rows(store, query_ids, sources) if sources else []:
        if (row.source, row.annotator) in wanted:
            out.setdefault((row.query_id, row.doc_id), {})[(row.source, row.annotator)] = row.grade
    return out


def _adjudicated(store: Store, query_ids: Iterable[str] | None) -> dict[tuple[str, str], float]:
    """(query_id, doc_id) -> the adjudicated grade (the latest when several adjudicated it)."""
    rows = sorted(gt.grade_rows(store, query_ids, [gt.ADJUDICATED]), key=lambda r: r.labelled_at)
    return {(r.query_id, r.doc_id): r.grade for r in rows}


def pair_agreement(
    a: Sequence[float | None], b: Sequence[float | None], names: tuple[str, str]
) -> PairAgreement:
    """Two raters' grades of the same items (None: not graded) as a PairAgreement."""
    x = np.array([np.nan if v is None else v for v in a], dtype=np.float64)
    y = np.array([np.nan if v is None else v for v in b], dtype=np.float64)
    grades = stats.categories_of(x, y)
    both = ~np.isnan(x) & ~np.isnan(y)
    confusion = stats.confusion_matrix(x, y, grades)
    kappa = stats.kappa_from_confusion(confusion, grades)
    weighted = stats.kappa_from_confusion(confusion, grades, "quadratic")
    return PairAgreement(
        names[0],
        names[1],
        int(both.sum()),
        kappa.value,
        weighted.value,
        tuple(tuple(int(v) for v in row) for row in confusion),
        tuple(float(g) for g in grades),
        kappa.reason or weighted.reason,
    )


def agreement(
    store: Store,
    query_ids: Iterable[str] | None = None,
    *,
    raters: Sequence[Rater | str] | None = None,
    resamples: int = 1000,
    seed: int = 0,
) -> Agreement:
    """The agreement of the raters (default every people annotator) over the grades of query_ids
    (None: every query of the store). raters: (source, annotator) pairs, or their names
    (rater_name). resamples and seed: alpha's bootstrap interval (metrics/agreement.py)."""
    if resamples < 1:
        raise UsageError(f"resamples must be >= 1, got {resamples}")
    qids = None if query_ids is None else list(query_ids)
    chosen = _pick_raters(store, raters)
    names = tuple(rater_name(s, a) for s, a in chosen)
    grades = _grades(store, qids, chosen)
    items = sorted(grades)
    matrix = np.full((len(chosen), len(items)), np.nan)
    for j, item in enumerate(items):
        for i, r in enumerate(chosen):
            if r in grades[item]:
                matrix[i, j] = grades[item][r]
    pairs = tuple(
        pair_agreement(
            [None if np.isnan(v) else float(v) for v in matrix[i]],
            [None if np.isnan(v) else float(v) for v in matrix[j]],
            (names[i], names[j]),
        )
        for i, j in combinations(range(len(chosen)), 2)
    )
    common = (~np.isnan(matrix)).sum(axis=0) >= 2 if items else np.zeros(0, bool)
    reason: str | None = None
    alpha: float | None = None
    interval: tuple[float, float] | None = None
    if len(chosen) < 2:
        who = f"only {names[0]}" if names else "none"
        reason = f"{stats.FEWER_RATERS} ({who}): agreement needs two label sets on the same items"
    else:
        point = stats.krippendorff_alpha(matrix, "ordinal")
        alpha = point.value
        if alpha is None:
            reason = f"alpha: {point.reason}"
        else:
            ci = stats.alpha_interval(matrix, "ordinal", resamples=resamples, seed=seed)
            interval = ci.bounds
            if ci.bounds is None:
                reason = f"alpha's interval: {ci.reason}"
            elif ci.undefined:
                reason = (
                    f"alpha's interval leaves out {ci.undefined} of {ci.resamples} resamples "
                    "with one category only"
                )
    final = _adjudicated(store, qids)
    disagreements = tuple(
        Disagreement(
            q,
            d,
            {names[chosen.index(r)]: g for r, g in grades[(q, d)].items()},
            final.get((q, d)),
        )
        for (q, d), keep in zip(items, common, strict=True)
        if keep and len(set(grades[(q, d)].values())) > 1
    )
    return Agreement(pairs, alpha, interval, int(common.sum()), names, disagreements, reason)


def agreement_json(a: Agreement) -> dict[str, Any]:
    """The CLI's JSON: pairs (a, b, n, kappa, weighted_kappa, confusion, grades, reason), alpha,
    alpha_ci ([lo, hi], null when withheld), disagreements, n_items, annotators, reason."""
    return {
        "pairs": [
            {
                "a": p.a,
                "b": p.b,
                "n": p.n,
                "kappa": p.kappa,
                "weighted_kappa": p.weighted_kappa,
                "confusion": [list(row) for row in p.confusion],
                "grades": list(p.grades),
                "reason": p.reason,
            }
            for p in a.pairs
        ],
        "alpha": a.alpha,
        "alpha_ci": None if a.alpha_ci is None else list(a.alpha_ci),
        "disagreements": [
            {
                "query_id": d.query_id,
                "doc_id": d.doc_id,
                "grades": dict(d.grades),
                "adjudicated": d.adjudicated,
            }
            for d in a.disagreements
        ],
        "n_items": a.n_items,
        "annotators": list(a.annotators),
        "reason": a.reason,
    }


def adjudicate(
    store: Store, query_id: str, doc_id: str, grade: float | None, *, annotator: str
) -> None:
    """Keep annotator's final grade of doc_id for query_id under the source 'adjudicated' (None
    takes it back); the annotators' own grades stay as they are."""
    gt.set_grade(store, query_id, doc_id, grade, annotator=annotator, source=gt.ADJUDICATED)


# --- an LLM's relevance labels against the people's (the Judge calibration page) ----------


@dataclass(frozen=True)
class GradePrecision:
    """Of the items the LLM gave `grade`, the share the people gave that grade too."""

    grade: float
    n: int
    precision: float | None


@dataclass(frozen=True)
class LabelCalibration:
    """An llm:MODEL label set against the people's grade of each item (adjudicated when there is
    one, else the grade most people gave, ties to the lower): kappa, weighted kappa and the
    confusion (rows people, columns the LLM) over the items both graded, per-grade precision."""

    llm: str
    pair: PairAgreement
    precision: tuple[GradePrecision, ...]
    n_llm: int  # items the LLM graded
    n_people: int  # items people graded

    def to_json(self) -> dict[str, Any]:
        p = self.pair
        return {
            "llm": self.llm,
            "n": p.n,
            "n_llm": self.n_llm,
            "n_people": self.n_people,
            "kappa": p.kappa,
            "weighted_kappa": p.weighted_kappa,
            "grades": list(p.grades),
            "confusion": [list(row) for row in p.confusion],
            "precision": {f"{g.grade:g}": g.precision for g in self.precision},
            "reason": p.reason,
        }


def people_grades(store: Store, query_ids: Iterable[str] | None) -> dict[tuple[str, str], float]:
    """(query_id, doc_id) -> the people's grade: adjudicated when there is one, else the grade
    most people gave (a tie goes to the lower grade)."""
    votes: dict[tuple[str, str], list[float]] = {}
    for row in gt.grade_rows(store, query_ids, [gt.PEOPLE]):
        votes.setdefault((row.query_id, row.doc_id), []).append(row.grade)
    out = {item: min(set(v), key=lambda g: (-v.count(g), g)) for item, v in sorted(votes.items())}
    out.update(_adjudicated(store, query_ids))
    return out


def llm_label_sets(store: Store) -> list[str]:
    """The llm:MODEL label sources in the store, by name."""
    return sorted({s for s, _, _ in gt.label_sources(store) if s.startswith(gt.LLM_PREFIX)})


def calibrate_labels(store: Store, query_ids: Iterable[str] | None, llm: str) -> LabelCalibration:
    """llm (a source llm:MODEL) against the people's grades over query_ids' items."""
    gt.check_source(llm)
    qids = None if query_ids is None else list(query_ids)
    people = people_grades(store, qids)
    machine: dict[tuple[str, str], float] = {}
    for row in gt.grade_rows(store, qids, [llm]):
        machine[(row.query_id, row.doc_id)] = row.grade
    items = sorted(set(people) | set(machine))
    pair = pair_agreement(
        [people.get(i) for i in items], [machine.get(i) for i in items], ("people", llm)
    )
    precision = tuple(
        GradePrecision(g, int(sum(row[j] for row in pair.confusion)), e.value)
        for j, (g, e) in enumerate(
            zip(pair.grades, stats.per_grade_precision(pair.confusion, pair.grades), strict=True)
        )
        if any(row[j] for row in pair.confusion)
    )
    return LabelCalibration(llm, pair, precision, len(machine), len(people))


#: the label sets the calibration puts metrics side by side under: (what it is called, the
#: `labels` setting's value)
LABEL_VIEWS = (
    ("people only", "people"),
    ("people, the LLM filling the holes", "people,llm"),
    ("LLM only", "llm"),
)


def metrics_by_labels(
    data: Any, store: Store, settings: Any, metrics: Sequence[str]
) -> list[tuple[str, dict[str, float]]]:
    """The run's metrics under each of LABEL_VIEWS: evaluate with settings' `labels` set to it and
    relevance by document ids (labels are about documents)."""
    import dataclasses

    from rageval_core.evaluation.evaluate import evaluate

    out = []
    for name, value in LABEL_VIEWS:
        s = dataclasses.replace(settings, labels=value, relevance="ids")
        out.append((name, dict(evaluate(data, list(metrics), store=store, settings=s).metrics)))
    return out
