"""Measure names -> specs, in the style of ir_measures: ``parse("nDCG@10")``, ``compute(...)``.

Grammar: ``Name``, ``Name@k`` or ``Name(param=value,...)@k`` (e.g. ``AQWV(beta=20)@10``,
``P(rel=2)@5``). str(Measure) gives the canonical form: the registered name (aliases resolved),
parameters sorted by name with defaults dropped, so ``str(parse("nDCG@10")) == "nDCG@10"``.

Families register their measures from their own modules (metrics/ranking.py does it at import;
evidence or generation metrics can do the same): ``register(MeasureSpec(...))``. Each spec names
the input type its function reads (RankedLabels for ranking metrics); compute() hands every
measure the input of that type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError
from rageval_core.settings.presets import LOWER_IS_BETTER as _PRESET_LOWER
from rageval_core.settings.presets import PRESET_METRICS

Aggregate = Literal["mean", "sum"]


@dataclass(frozen=True, slots=True)
class Param:
    """One measure parameter: its type (int or float) and default (None = decided by the input)."""

    kind: type
    default: int | float | None = None


@dataclass(frozen=True, slots=True)
class MeasureSpec:
    """What a measure name means: its function, its input type and how it is aggregated.

    fn(input, cutoff, params) returns one float64 per query; params holds every declared
    parameter (defaults filled in).
    """

    name: str
    family: str
    needs_cutoff: bool
    allows_cutoff: bool
    fn: Callable[[Any, int | None, Mapping[str, Any]], NDArray[np.float64]]
    description: str
    range: tuple[float | None, float | None]
    input: type
    params: Mapping[str, Param] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    aggregate: Aggregate = "mean"
    #: the trec_eval measure it reproduces ("{k}" = the cut-off), None when it has none
    trec_eval: str | None = None
    #: per-query weights of a weighted mean (a micro average), read from the same input
    weight: Callable[[Any], NDArray[Any]] | None = None
    #: False for measures where a lower value is better (BestRank, HallucinationRate)
    higher_is_better: bool = True
    #: the kind, when not its family's (answer metrics by meaning share the answer family's
    #: inputs but are semantic, not lexical)
    kind_of: str | None = None
    #: True when a judged query absent from the run is scored (0) with or without --complete,
    #: as ir_measures scores every qrels query (Judged@k); False: trec_eval's selection (-c)
    every_judged_query: bool = False

    @property
    def kind(self) -> str:
        """What sort of measure it is, shown next to its name: ranking, evidence, lexical
        answer, semantic or judge (the lexical answer metrics compare tokens, nothing judged)."""
        return self.kind_of or KINDS.get(self.family, self.family)


@dataclass(frozen=True, slots=True)
class Measure:
    """A parsed measure: canonical name, optional cut-off and non-default parameters."""

    name: str
    cutoff: int | None = None
    params: tuple[tuple[str, int | float], ...] = ()

    def __str__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{k}={_format_value(v)}" for k, v in self.params) + ")"
        if self.cutoff is not None:
            text += f"@{self.cutoff}"
        return text

    @property
    def spec(self) -> MeasureSpec:
        spec = REGISTRY.get(self.name) or _DYNAMIC.get(self.name)
        return spec if spec is not None else _dynamic_spec(self.name)

    def param_values(self) -> dict[str, Any]:
        """Every parameter of the spec, given values over defaults."""
        values: dict[str, Any] = {key: p.default for key, p in self.spec.params.items()}
        values.update(self.params)
        return values


#: canonical name -> spec; filled by register() from each family's module
REGISTRY: dict[str, MeasureSpec] = {}
#: alias -> canonical name
ALIASES: dict[str, str] = {}
#: family -> the kind a report shows beside a metric's name
KINDS = {
    "ranking": "ranking",
    "evidence": "evidence",
    "generation": "lexical answer",
    "semantic": "semantic",
    "judge": "judge",
}
#: name prefix -> spec factory, for open-ended names (judge.<score>: metrics/judge.py); their
#: specs are made on first parse and kept apart from REGISTRY (they are not a fixed list)
_PREFIXES: dict[str, Callable[[str], MeasureSpec]] = {}
_DYNAMIC: dict[str, MeasureSpec] = {}


def add_prefix(prefix: str, factory: Callable[[str], MeasureSpec]) -> None:
    """Names starting with prefix parse to factory(name) (a family of open-ended names)."""
    _PREFIXES[prefix] = factory


def _dynamic_spec(name: str) -> MeasureSpec:
    for prefix, factory in _PREFIXES.items():
        if name.startswith(prefix):
            spec = _DYNAMIC.get(name)
            if spec is None:
                spec = _DYNAMIC[name] = factory(name)
            return spec
    raise UsageError(_unknown(name, name))


#: what a comparison, a gate or a report shows besides metrics, by the head of its name
#: (latency.<stage>.<stat>, latency_ms; cost.per_query, cost.total, cost_usd; tokens.<kind>):
#: every one of them is better when lower
LOWER_IS_BETTER_QUANTITIES = frozenset({"latency", "cost", "tokens"})


def higher_is_better(name: str) -> bool:
    """Whether a larger value of name is better: the one answer every report, table, colour
    and gate reads.

    A measure's own spec says it (BestRank, HallucinationRate and judge labels such as
    judge.faithfulness.contradicted are better lower); a preset's own names are declared in
    rageval_core.settings.presets (best_match_position); latency, cost and tokens are always better
    lower. UsageError for a name that is none of these.
    """
    if re.split(r"[._]", name, maxsplit=1)[0] in LOWER_IS_BETTER_QUANTITIES:
        return False
    if name in PRESET_METRICS:
        return name not in _PRESET_LOWER
    return parse(name).spec.higher_is_better


#: the words of a significant change in a quantity's good and bad direction
IMPROVED, REGRESSED = "improved", "regressed"


def verdict(name: str, change: float, significant: bool) -> str:
    """IMPROVED or REGRESSED for a significant change (candidate - baseline) of name, read in
    its direction (a fall of BestRank or latency improves); "" when not significant, no change
    or NaN."""
    if not significant or not change or math.isnan(change):
        return ""
    return IMPROVED if (change > 0) == higher_is_better(name) else REGRESSED


def describe(name: str) -> tuple[str, str]:
    """(kind, one-line definition) of a metric name, for a tooltip or --help."""
    spec = parse(name).spec
    return spec.kind, spec.description


_SYNTAX = re.compile(
    r"^(?P<name>[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[0-9]+))?$"
)
#: trec_eval spellings people type, for the error message's hint only
_TREC_EVAL_HINTS = {
    "map": "AP",
    "recip_rank": "RR",
    "ndcg": "nDCG",
    "Rprec": "Rprec",
    "P": "P@k",
    "recall": "R@k",
    "ndcg_cut": "nDCG@k",
    "map_cut": "AP@k",
    "success": "Hit@k",
    "set_P": "SetP",
    "set_recall": "SetR",
    "set_F": "SetF",
    "num_q": "NumQ",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
}


def register(spec: MeasureSpec) -> MeasureSpec:
    """Add a measure (and its aliases); a name taken twice is a programming error."""
    for name in (spec.name, *spec.aliases):
        if name in REGISTRY or name in ALIASES:
            raise ValueError(f"measure name {name!r} is already registered")
    if spec.needs_cutoff and not spec.allows_cutoff:
        raise ValueError(f"{spec.name}: needs_cutoff implies allows_cutoff")
    REGISTRY[spec.name] = spec
    for alias in spec.aliases:
        ALIASES[alias] = spec.name
    return spec


def known_names() -> list[str]:
    """Every measure as it is written, e.g. ['AP', 'AP@k', 'Hit@k', ...] (aliases excluded)."""
    out = []
    for name, spec in sorted(REGISTRY.items(), key=lambda item: item[0].lower()):
        if not spec.needs_cutoff:
            out.append(name)
        if spec.allows_cutoff:
            out.append(f"{name}@k")
    return out


def parse(text: str | Measure) -> Measure:
    """Parse one measure name (``nDCG@10``, ``MRR``, ``AQWV(beta=20)@10``) into a Measure."""
    if isinstance(text, Measure):
        return text
    raw = text.strip()
    if any(raw.startswith(prefix) for prefix in _PREFIXES):
        return Measure(_dynamic_spec(raw).name)
    match = _SYNTAX.match(raw)
    if match is None:
        raise UsageError(f"cannot read measure {text!r}: expected Name, Name@k or Name(p=v)@k")
    name = ALIASES.get(match["name"], match["name"])
    spec = REGISTRY.get(name)
    if spec is None:
        raise UsageError(_unknown(match["name"], text))
    cutoff = None if match["cutoff"] is None else int(match["cutoff"])
    if cutoff is not None and not spec.allows_cutoff:
        raise UsageError(f"measure {name} takes no cut-off (got {text!r})")
    if cutoff is None and spec.needs_cutoff:
        raise UsageError(f"measure {name} needs a cut-off, e.g. {name}@10 (got {text!r})")
    if cutoff == 0:
        raise UsageError(f"cut-off must be >= 1 (got {text!r})")
    params = _parse_params(spec, match["params"], text)
    return Measure(name, cutoff, params)


def parse_all(texts: Iterable[str | Measure]) -> list[Measure]:
    """parse() each name; duplicates (after canonicalisation) are kept once, in first order."""
    out: dict[Measure, None] = {}
    for text in texts:
        out.setdefault(parse(text), None)
    return list(out)


def compute(measures: Iterable[str | Measure], *inputs: Any) -> dict[str, NDArray[np.float64]]:
    """Per-query values of each measure, keyed by its canonical name.

    inputs: the data the measures read, one object per input type (e.g. a RankedLabels);
    each measure gets the first input that is an instance of its spec's input type.
    """
    results: dict[str, NDArray[np.float64]] = {}
    for measure in parse_all(measures):
        spec = measure.spec
        data = next((x for x in inputs if isinstance(x, spec.input)), None)
        if data is None:
            raise UsageError(f"measure {measure} needs {spec.input.__name__} data")
        values = spec.fn(data, measure.cutoff, measure.param_values())
        results[str(measure)] = np.asarray(values, dtype=np.float64)
    return results


def aggregate(
    measure: str | Measure, values: NDArray[np.float64], weights: NDArray[Any] | None = None
) -> float:
    """The run-level value over the scored (non-NaN) queries: the mean, weighted when the
    measure has weights (EvidenceRecall pools spans: weight = the query's span count), or the
    sum for counts; NaN when no query is scored."""
    spec = parse(measure).spec
    values = np.asarray(values, dtype=np.float64)
    if weights is None and spec.aggregate == "mean" and values.size and not np.isnan(values.sum()):
        return float(values.mean())  # every query scored: the common case, no mask needed
    scored = ~np.isnan(values)  # NaN = the query is not scored on this measure: left out
    if spec.aggregate == "sum":
        return float(np.sum(values[scored]))
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)[scored]
        total = float(w.sum())
        return float(np.dot(values[scored], w) / total) if total > 0 else math.nan
    return float(np.mean(values[scored])) if scored.any() else math.nan


def weights_of(measure: str | Measure, data: Any) -> NDArray[np.float64] | None:
    """Per-query weights of the measure's run value for this input (None: a plain mean)."""
    spec = parse(measure).spec
    return None if spec.weight is None else np.asarray(spec.weight(data), dtype=np.float64)


def _parse_params(
    spec: MeasureSpec, text: str | None, whole: str
) -> tuple[tuple[str, int | float], ...]:
    if text is None:
        return ()
    given: dict[str, int | float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = (s.strip() for s in item.partition("="))
        param = spec.params.get(key)
        if not sep or param is None:
            known = ", ".join(sorted(spec.params)) or "none"
            raise UsageError(
                f"measure {spec.name}: unknown parameter {item!r} in {whole!r} "
                f"(parameters: {known})"
            )
        if key in given:
            raise UsageError(f"measure {spec.name}: parameter {key} given twice in {whole!r}")
        given[key] = _convert(spec.name, key, value, param.kind)
    return tuple(sorted((k, v) for k, v in given.items() if v != spec.params[k].default))


def _convert(name: str, key: str, value: str, kind: type) -> int | float:
    try:
        if kind is int:
            return int(value)
        number = float(value)
    except ValueError:
        raise UsageError(
            f"measure {name}: {key} must be {'an integer' if kind is int else 'a number'}, "
            f"got {value!r}"
        ) from None
    if not math.isfinite(number):
        raise UsageError(f"measure {name}: {key} must be finite, got {value!r}")
    return number


def _format_value(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return repr(value)


def _unknown(name: str, text: str) -> str:
    cut = re.search(r"_([0-9]+)$", name)
    base = name[: cut.start()] if cut else name
    hint = _TREC_EVAL_HINTS.get(name) or _TREC_EVAL_HINTS.get(base)
    if hint and cut and hint.endswith("@k"):
        hint = hint[:-1] + cut.group(1)
    lowered = {n.lower(): n for n in (*REGISTRY, *ALIASES)}
    suggestion = hint or lowered.get(name.lower())
    message = f"unknown measure {text!r}"
    if suggestion:
        message += f" (did you mean {suggestion}?)"
    return message + "; known measures: " + ", ".join(known_names())
