"""Judge calibration: how far an LLM judge agrees with people, and with the fuzzy threshold.

calibrate() pairs each query's human label (the run file's `labels`, or those given in the
dashboard) with the judge's verdict on the same name (a judge result set's, majority over
repeats; or a label imported with the run), and returns the confusion matrix, Cohen's kappa
and per-label TPR/TNR. It also sweeps the fuzzy coverage threshold: at each threshold, does
"every gold span is covered in the top k" agree with the judge's verdict on the retrieval
(its pass at retrieval_quality_score >= 0.7, else its faithfulness label being "supported")?
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError
from rageval_core.judging.prompts import FAITHFULNESS_LABELS, PASS_AT
from rageval_core.judging.scores import pick_judge
from rageval_core.store import Store
from rageval_core.store import judgements as jstore
from rageval_core.store.store import RunRef

#: the thresholds the coverage sweep visits
SWEEP = tuple(round(0.5 + 0.05 * i, 2) for i in range(11))


@dataclass(frozen=True, slots=True)
class LabelRates:
    """One label treated as the positive class: how often the judge finds it when people did."""

    label: str
    support: int  # queries people gave this label
    tpr: float  # judge said it too, among those (NaN: no support)
    tnr: float  # judge did not say it, among the queries people gave another label


@dataclass(frozen=True, slots=True)
class ThresholdAgreement:
    """The coverage decision at one threshold against the judge's verdict, over judged queries."""

    threshold: float
    n: int
    agreement: float
    kappa: float
    #: 95% bootstrap interval of the balanced accuracy of coverage against the judge's verdict
    #: (tuning.balanced_accuracy_interval); above 0.5 exactly when kappa is confidently above 0
    interval: tuple[float, float] = (math.nan, math.nan)

    @property
    def beats_chance(self) -> bool:
        return self.interval[0] > 0.5


@dataclass(frozen=True)
class Calibration:
    """A judge against human labels on one name (e.g. faithfulness)."""

    run: str
    name: str
    judge: dict[str, Any] | None  # the result set's facts (None: labels imported with the run)
    labels: list[str]  # row and column order of the matrix
    confusion: list[list[int]]  # [human][judge]
    n: int  # queries with both a human label and a judge verdict
    n_human: int  # queries with a human label
    agreement: float
    kappa: float
    rates: list[LabelRates]
    query_ids: list[str]  # of the n paired queries
    human: list[str]
    judged: list[str]
    thresholds: list[ThresholdAgreement] = field(default_factory=list)
    threshold_basis: str | None = None  # which judge verdict the sweep compares with

    @property
    def best_agreeing(self) -> ThresholdAgreement | None:
        """The threshold of highest kappa (then agreement), whether or not it beats chance."""
        rows = [t for t in self.thresholds if not math.isnan(t.kappa)]
        return max(rows, key=lambda t: (t.kappa, t.agreement)) if rows else None

    @property
    def best_threshold(self) -> ThresholdAgreement | None:
        """best_agreeing when it agrees with the judge better than chance with confidence (the
        Threshold page's rule, tuning.suggest_threshold); else None: no advice at chance."""
        best = self.best_agreeing
        return best if best is not None and best.beats_chance else None

    def to_json(self) -> dict[str, Any]:
        best = self.best_threshold
        return _nan_to_none(
            {
                "run": self.run,
                "name": self.name,
                "judge": self.judge,
                "labels": self.labels,
                "confusion": self.confusion,
                "n": self.n,
                "n_human": self.n_human,
                "agreement": self.agreement,
                "kappa": self.kappa,
                "rates": {
                    r.label: {"support": r.support, "tpr": r.tpr, "tnr": r.tnr} for r in self.rates
                },
                "pairs": [
                    {"query_id": q, "human": h, "judge": j}
                    for q, h, j in zip(self.query_ids, self.human, self.judged, strict=True)
                ],
                "thresholds": [
                    {
                        "threshold": t.threshold,
                        "n": t.n,
                        "agreement": t.agreement,
                        "kappa": t.kappa,
                        "balanced_accuracy_interval": list(t.interval),
                    }
                    for t in self.thresholds
                ],
                "threshold_basis": self.threshold_basis,
                "best_threshold": None if best is None else best.threshold,
            }
        )


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


def confusion_matrix(
    human: Sequence[str], judged: Sequence[str], labels: Sequence[str]
) -> NDArray[np.int64]:
    """counts[i, j]: items people labelled labels[i] and the judge labels[j]."""
    index = {label: i for i, label in enumerate(labels)}
    out = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for h, j in zip(human, judged, strict=True):
        out[index[h], index[j]] += 1
    return out


def cohen_kappa(confusion: NDArray[np.int64]) -> float:
    """Cohen's kappa = (p_o - p_e) / (1 - p_e): observed agreement p_o (the diagonal's share)
    against the agreement p_e two raters with these label frequencies reach by chance. NaN when
    p_e = 1 (both raters used one and the same label throughout: chance explains everything)."""
    n = float(confusion.sum())
    if n == 0:
        return math.nan
    p_o = float(np.trace(confusion)) / n
    p_e = float(np.dot(confusion.sum(axis=1), confusion.sum(axis=0))) / (n * n)
    if p_e >= 1.0:
        return math.nan
    return (p_o - p_e) / (1.0 - p_e)


def label_rates(confusion: NDArray[np.int64], labels: Sequence[str]) -> list[LabelRates]:
    """TPR and TNR of each label, one-vs-rest."""
    out = []
    total = int(confusion.sum())
    for i, label in enumerate(labels):
        tp = int(confusion[i, i])
        pos = int(confusion[i].sum())
        neg = total - pos
        fp = int(confusion[:, i].sum()) - tp
        tn = neg - fp
        out.append(
            LabelRates(label, pos, tp / pos if pos else math.nan, tn / neg if neg else math.nan)
        )
    return out


def _majority(values: Sequence[str]) -> str:
    """The most common value; a tie goes to the first given (repeat 0)."""
    counts = Counter(values)
    top = max(counts.values())
    return next(v for v in values if counts[v] == top)


def judge_labels(
    store: Store, ref: RunRef, name: str, judge: str | None
) -> tuple[dict[int, str], dict[str, Any] | None]:
    """qidx -> the judge's label on name (majority over repeats), and the set's facts (None:
    labels imported with the run, when no result set gives that name)."""
    chosen = pick_judge(store, ref, judge)
    if chosen is not None:
        votes: dict[int, list[str]] = {}
        for r in jstore.judge_results(store, chosen):
            if r.verdict is not None and isinstance(r.verdict.get(name), str):
                votes.setdefault(r.qidx, []).append(r.verdict[name])
        if votes:
            return {q: _majority(v) for q, v in votes.items()}, chosen.to_json()
        if judge is not None and judge != "none":
            raise UsageError(f"judge {chosen.judge_id} ({chosen.name}) gives no {name} labels")
    imported = {
        q: obj[name]
        for q, obj in jstore.imported_judge(store, ref)
        if isinstance(obj.get(name), str)
    }
    return imported, None


def calibrate(
    store: Store,
    ref: RunRef,
    *,
    judge: str | None = None,
    label: str = "faithfulness",
    settings: Any = None,
) -> Calibration:
    """The judge's labels against the human labels of the run (see the module's docstring).

    judge: the result set (id or name; None: settings.judge, else the newest; "none": the
    labels imported with the run). settings: the evaluation Settings of the threshold sweep
    (its k, scorer, normalisation; the threshold is what it sweeps)."""
    from rageval_core.evaluation.report import Settings

    s = settings if settings is not None else Settings()
    judge = judge if judge is not None else s.judge
    run = store.run(ref)
    people = {
        q: labels[label] for q, labels in jstore.human_labels(store, ref).items() if label in labels
    }
    if not people:
        raise UsageError(
            f"run {run.name} has no human {label} labels: give a `labels` object per query "
            "(docs/formats.md) or label queries in the dashboard"
        )
    machine, source = judge_labels(store, ref, label, judge)
    if not machine:
        raise UsageError(
            f"run {run.name} has no judge {label} labels: run `rageval judge {run.name} ...` "
            "or import them in the `judge` object"
        )
    from rageval_core.rundata import load_run_data

    data = load_run_data(store, run.run_id)
    paired = sorted(set(people) & set(machine))
    known = [lab for lab in FAITHFULNESS_LABELS if label == "faithfulness"]
    seen = sorted({people[q] for q in paired} | {machine[q] for q in paired})
    labels = known + [lab for lab in seen if lab not in known]
    human = [people[q] for q in paired]
    judged = [machine[q] for q in paired]
    matrix = confusion_matrix(human, judged, labels)
    n = len(paired)
    thresholds, basis = threshold_sweep(store, ref, data, judge, s)
    return Calibration(
        run=run.name,
        name=label,
        judge=source,
        labels=labels,
        confusion=matrix.tolist(),
        n=n,
        n_human=len(people),
        agreement=float(np.trace(matrix)) / n if n else math.nan,
        kappa=cohen_kappa(matrix),
        rates=label_rates(matrix, labels),
        query_ids=[str(data.query_ids[q]) for q in paired],
        human=human,
        judged=judged,
        thresholds=thresholds,
        threshold_basis=basis,
    )


def _judge_verdict_per_query(
    store: Store, ref: RunRef, n: int, judge: str | None
) -> tuple[NDArray[np.float64], str | None]:
    """1/0 per query (NaN: not judged): the judge's retrieval pass, else faithfulness supported."""
    from rageval_core.judging.scores import judge_scores

    columns = judge_scores(store, ref, n, judge).columns
    if "judge.pass_rate" in columns:
        return (columns["judge.pass_rate"] >= 0.5).astype(float) + np.where(
            np.isnan(columns["judge.pass_rate"]), np.nan, 0.0
        ), f"judge.pass_rate (retrieval_quality_score >= {PASS_AT})"
    if "judge.faithfulness.supported" in columns:
        col = columns["judge.faithfulness.supported"]
        return (col >= 0.5).astype(float) + np.where(np.isnan(col), np.nan, 0.0), (
            "judge.faithfulness.supported"
        )
    return np.full(n, np.nan), None


def threshold_sweep(
    store: Store, ref: RunRef, data: Any, judge: str | None = None, settings: Any = None
) -> tuple[list[ThresholdAgreement], str | None]:
    """At each threshold of SWEEP: does "every gold span covered in the top k" (FullCoverageRate)
    agree with the judge's verdict? Agreement and kappa over queries with both."""
    if not data.run.has_evidence:
        return [], None
    from rageval_core.evaluation.evaluate import evaluate
    from rageval_core.evaluation.report import Settings
    from rageval_core.evaluation.tuning import balanced_accuracy_interval

    verdict, basis = _judge_verdict_per_query(store, ref, data.n_queries, judge)
    if basis is None:
        return [], None
    s = settings if settings is not None else Settings()
    name = f"FullCoverageRate@{s.k}"
    out = []
    for t in SWEEP:
        covered = evaluate(data, [name], store=store, settings=s, threshold=t).per_query[name]
        both = ~np.isnan(covered) & ~np.isnan(verdict)
        if not both.any():
            continue
        a = ["yes" if v >= 0.5 else "no" for v in covered[both]]
        b = ["yes" if v >= 0.5 else "no" for v in verdict[both]]
        matrix = confusion_matrix(a, b, ["yes", "no"])  # [coverage][judge]
        (tp, fp), (fn, tn) = matrix.tolist()
        out.append(
            ThresholdAgreement(
                t,
                int(both.sum()),
                float(np.trace(matrix)) / both.sum(),
                cohen_kappa(matrix),
                balanced_accuracy_interval(tp, fn, tn, fp),
            )
        )
    return out, basis


def format_calibration(c: Calibration) -> str:
    """The terminal's view: who judged, the matrix, kappa, per-label rates, the sweep."""
    from rageval_core.terminal import text_table

    def num(v: float) -> str:
        return "-" if math.isnan(v) else f"{v:.3f}"

    who = (
        f"judge {c.judge['judge_id']} ({c.judge['name']}, {c.judge['model']})"
        if c.judge
        else "the judge labels imported with the run"
    )
    out = [
        f"run {c.run}: {c.name} labels of {c.n_human} queries against {who}; {c.n} paired",
        f"agreement {num(c.agreement)}, Cohen's kappa {num(c.kappa)}",
        "",
        "rows: people, columns: judge",
        text_table(
            ["", *c.labels], [[lab, *row] for lab, row in zip(c.labels, c.confusion, strict=True)]
        ),
        "",
        text_table(
            ["label", "support", "TPR", "TNR"],
            [[r.label, r.support, num(r.tpr), num(r.tnr)] for r in c.rates],
        ),
    ]
    if c.thresholds:
        best = c.best_threshold
        out += [
            "",
            f"fuzzy coverage (every gold span in the top k) against {c.threshold_basis}",
            text_table(
                ["threshold", "n", "agreement", "kappa"],
                [[f"{t.threshold:.2f}", t.n, num(t.agreement), num(t.kappa)] for t in c.thresholds],
            ),
        ]
        if best is not None:
            out.append(f"best agreement with the judge at threshold {best.threshold:.2f}")
        elif c.best_agreeing is not None:
            top = c.best_agreeing
            out.append(
                "no threshold agrees with the judge better than chance with confidence: the "
                f"best, {top.threshold:.2f} (kappa {num(top.kappa)}), has a 95% bootstrap "
                f"interval of balanced accuracy {num(top.interval[0])}-{num(top.interval[1])}, "
                "which reaches 0.5"
            )
    return "\n".join(out)
