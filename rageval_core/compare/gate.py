"""The deploy gate: rules on a baseline-vs-candidate comparison, each PASS or FAIL.

`rageval gate` exits 0 when every rule holds, 1 when one fails, 2 when a rule is malformed or
cannot be checked (a UsageError; cli.py maps the result). A metric rule limits the drop of a
metric (--max-drop), an ops rule the increase of a latency statistic or of cost
(--max-increase); a limit is absolute or a percentage of the baseline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rageval_core.metrics import latency_cost as ops
from rageval_core.compare.comparison import NOTE_SMALL, Comparison
from rageval_core.compare.latency_change import LATENCY_STATS, Change
from rageval_core.compare.statistics import p_text
from rageval_core.errors import UsageError
from rageval_core.settings.presets import PRESET_METRICS
from rageval_core.metrics import registry
from rageval_core.metrics.registry import higher_is_better

RuleKind = Literal["drop", "increase"]
_OPS_TARGET = re.compile(
    r"^latency\.(?P<stage>[^.=]+)\.(?P<stat>[A-Za-z0-9]+)$|^cost\.(?P<cost>per_query|total)$"
)


@dataclass(frozen=True, slots=True)
class Rule:
    """One gate rule: how far target may worsen, absolutely or relative to the baseline."""

    text: str  # as given, e.g. "nDCG@10=0.01"
    kind: RuleKind  # drop: a metric may worsen by at most limit; increase: latency/cost may grow
    target: str  # canonical metric name, "latency.<stage>.<stat>", "cost.per_query", "cost.total"
    limit: float
    relative: bool  # limit is a fraction of the baseline's value (given as "5%")

    @property
    def is_metric(self) -> bool:
        return self.kind == "drop"

    @property
    def worsening_word(self) -> str:
        """What a worsening of the target is called: latency's and cost's an increase (the
        flag's word), a metric's a drop, or a rise where lower is better (BestRank,
        HallucinationRate: registry.higher_is_better)."""
        if self.kind == "increase":
            return "increase"
        return "drop" if higher_is_better(self.target) else "rise"

    def describe(self) -> str:
        return f"{self.target} max {self.worsening_word} {_limit_text(self)}"


def _limit_text(rule: Rule) -> str:
    if rule.relative:
        return f"{100 * rule.limit:g}%"
    unit = (
        " ms"
        if rule.target.startswith("latency.")
        else (" USD" if rule.target.startswith("cost.") else "")
    )
    return f"{rule.limit:g}{unit}"


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses (a measure may read "P(rel=2)@5")."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_rules(text: str, kind: RuleKind) -> list[Rule]:
    """Rules from "nDCG@10=0.01,R@10=2%" (drop) or "latency.total.p95=10%,cost.per_query=5%"."""
    flag = "--max-drop" if kind == "drop" else "--max-increase"
    rules = []
    items = _split_top_level(text)
    if not items:
        raise UsageError(f"{flag}: no rule given (expected TARGET=LIMIT, comma-separated)")
    for item in items:
        target, sep, raw = item.rpartition("=")
        target, raw = target.strip(), raw.strip()
        if not sep or not target or not raw:
            example = "nDCG@10=0.01 or nDCG@10=2%" if kind == "drop" else "latency.total.p95=10%"
            raise UsageError(f"{flag} rule {item!r}: expected TARGET=LIMIT, e.g. {example}")
        relative = raw.endswith("%")
        number = raw[:-1] if relative else raw
        if kind == "increase" and not relative and number.endswith("ms"):
            number = number[:-2]
        try:
            limit = float(number)
        except ValueError:
            raise UsageError(
                f"{flag} rule {item!r}: the limit {raw!r} is not a number "
                "(an absolute value, or a percentage like 5%)"
            ) from None
        if not math.isfinite(limit) or limit < 0:
            raise UsageError(f"{flag} rule {item!r}: the limit must be a finite number >= 0")
        rules.append(
            Rule(
                item,
                kind,
                _rule_target(item, target, kind, flag),
                limit / 100.0 if relative else limit,
                relative,
            )
        )
    return rules


def _rule_target(item: str, target: str, kind: RuleKind, flag: str) -> str:
    ops_target = _OPS_TARGET.match(target)
    looks_ops = target.startswith(("latency.", "cost."))
    if kind == "drop":
        if looks_ops:
            raise UsageError(f"{flag} rule {item!r}: latency and cost limits go in --max-increase")
        if target in PRESET_METRICS:  # a preset's own names (rageval_core.settings.presets)
            return target
        try:
            return str(registry.parse(target))
        except UsageError as e:
            raise UsageError(f"{flag} rule {item!r}: {e}") from e
    if ops_target is None:
        hint = "metric limits go in --max-drop; " if not looks_ops else ""
        raise UsageError(
            f"{flag} rule {item!r}: {hint}expected latency.<stage>.<{'|'.join(LATENCY_STATS)}>, "
            "cost.per_query or cost.total"
        )
    if ops_target["stat"] is not None and ops_target["stat"] not in LATENCY_STATS:
        raise UsageError(
            f"{flag} rule {item!r}: unknown latency statistic "
            f"{ops_target['stat']!r} (one of {', '.join(LATENCY_STATS)})"
        )
    return target


@dataclass(frozen=True)
class RuleResult(Change):
    """A rule checked against a comparison."""

    rule: Rule
    baseline: float
    candidate: float
    worsening: float  # how much worse the candidate is (> 0: worse), in the rule's unit
    allowed: float  # the limit in absolute terms
    violated: bool  # worsening > allowed
    significant: bool  # drop: Holm permutation p < alpha; increase: CI of the change above 0
    evidence: str  # the p-value or interval behind `significant`
    passed: bool

    @property
    def after(self) -> float:
        return self.candidate

    def describe(self) -> str:
        r = self.rule
        unit = " ms" if r.target.startswith("latency.") else ""
        digits = 6 if r.target.startswith("cost.") else (1 if unit else 4)
        pct = "" if math.isnan(self.change_pct) else f"{self.change_pct:+.1f}%, "
        way = "worse" if self.worsening > 0 else ("better" if self.worsening < 0 else "same")
        text = (
            f"{'PASS' if self.passed else 'FAIL'}  {r.describe()}: baseline "
            f"{self.baseline:.{digits}f}{unit}, candidate {self.candidate:.{digits}f}{unit}, "
            f"change {self.change:+.{digits}f}{unit} ({pct}{way}), allowed "
            f"{r.worsening_word} {self.allowed:.{digits}f}{unit}"
        )
        if self.violated and not self.passed:
            return text + f"; {self.evidence}"
        if self.violated:
            return text + f"; over the limit but not significant ({self.evidence})"
        return text

    def to_json(self) -> dict[str, Any]:
        r = self.rule
        return ops.to_json_value(
            {  # type: ignore[no-any-return]
                "rule": r.text,
                "kind": r.kind,
                "target": r.target,
                "limit": r.limit,
                "relative": r.relative,
                "baseline": self.baseline,
                "candidate": self.candidate,
                "change": self.change,
                "change_pct": self.change_pct,
                "worsening": self.worsening,
                "allowed": self.allowed,
                "violated": self.violated,
                "significant": self.significant,
                "evidence": self.evidence,
                "passed": self.passed,
            }
        )


@dataclass(frozen=True)
class GateResult:
    """Every rule's result; passed when none failed."""

    baseline: str
    candidate: str
    n_shared: int
    significant_only: bool
    alpha: float
    results: list[RuleResult]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if not r.passed]

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "n_shared": self.n_shared,
            "significant_only": self.significant_only,
            "alpha": self.alpha,
            "rules": [r.to_json() for r in self.results],
            "failed": [r.rule.text for r in self.failed],
        }


def gate(
    comparison: Comparison, rules: Sequence[Rule], significant_only: bool = False
) -> GateResult:
    """Check rules on a baseline-vs-one-candidate comparison (UsageError: a rule cannot be checked).

    A rule fails when the candidate worsens by more than its limit; with significant_only, only
    when that worsening is also significant at the comparison's alpha.
    """
    if len(comparison.candidates) != 1:
        raise UsageError("a gate compares one candidate with the baseline")
    if not rules:
        raise UsageError("the gate has no rule: give --max-drop and/or --max-increase")
    candidate = comparison.candidates[0]
    alpha = comparison.options.alpha
    results = []
    for rule in rules:
        if rule.is_metric:
            if rule.target not in comparison.metrics:
                raise UsageError(f"rule {rule.text!r}: {rule.target} was not compared")
            t = comparison.test(candidate, rule.target)
            if t.n == 0:
                raise UsageError(
                    f"rule {rule.text!r}: no shared query is scored on {rule.target} "
                    "in both runs, so the rule cannot be checked"
                )
            base, cand, worse = t.baseline_mean, t.candidate_mean, -t.improvement
            significant = t.significant(alpha)
            evidence = (
                f"p(Holm) = {p_text(t.p_perm_holm)}"
                if t.n >= 2
                else f"significance undefined ({NOTE_SMALL})"
            )
        else:
            c = comparison.ops_change(candidate, rule.target)
            if c is None:
                raise UsageError(
                    f"rule {rule.text!r}: " + _missing_ops(comparison, candidate, rule)
                )
            # the change's interval read in the target's direction (latency and cost: lower)
            sign = -1.0 if higher_is_better(rule.target) else 1.0
            base, cand, worse = c.baseline, c.candidate_value, sign * c.change
            significant = bool(min(sign * c.ci_low, sign * c.ci_high) > 0)
            level = f"{100 * comparison.options.level:g}%"
            evidence = (
                f"{level} CI of the change [{c.ci_low:+.6g}, {c.ci_high:+.6g}]"
                if c.n >= 2
                else f"significance undefined ({NOTE_SMALL})"
            )
        allowed = rule.limit * abs(base) if rule.relative else rule.limit
        # a drop of exactly the limit passes, whatever the rounding of the subtraction
        violated = bool(worse > allowed + 1e-12 * max(1.0, abs(base), abs(cand)))
        passed = not violated or (significant_only and not significant)
        results.append(
            RuleResult(rule, base, cand, worse, allowed, violated, significant, evidence, passed)
        )
    return GateResult(
        comparison.baseline, candidate, comparison.n_shared, significant_only, alpha, results
    )


def _missing_ops(comparison: Comparison, candidate: str, rule: Rule) -> str:
    if rule.target.startswith("cost."):
        return "cost cannot be compared: " + (
            comparison.cost_note or "no query has a known cost in both runs"
        )
    stage = rule.target.split(".")[1]
    known = "; ".join(
        f"{run}: {', '.join(comparison.stages[run]) or 'none'}"
        for run in (comparison.baseline, candidate)
    )
    return f"no latency stage {stage!r} recorded in either run (stages of {known})"


def metrics_of(rules: Sequence[Rule]) -> list[str]:
    """The metrics the rules name, in order, once each."""
    return list(dict.fromkeys(r.target for r in rules if r.is_metric))
