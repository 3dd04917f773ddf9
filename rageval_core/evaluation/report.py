"""A report's settings and the report itself: Settings and Report (re-exported by evaluate).

Kept apart from rageval_core.evaluation.evaluate, which loads the store, DuckDB and the scorers, so that
`rageval evaluate RUN --qrels QRELS` straight from TREC files (rageval_core.evaluation.direct) builds and
prints a Report with numpy alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from rageval_core.metrics import latency_cost as ops
from rageval_core.errors import UsageError
from rageval_core.metrics.arrays import check_rel_level
from rageval_core.matching.normalise import Normalisation
from rageval_core.matching.keys import ScorerKey, is_semantic
from rageval_core.settings.label_sources import IMPORTED, parse_labels
from rageval_core.settings.schema import BY_NAME, DEFAULTS, RULES, SETTINGS, default_for

Relevance = Literal["ids", "evidence"]
Floats = NDArray[np.float64]

RANKING_DEFAULTS = ("P@{k}", "R@{k}", "RR", "AP", "nDCG@{k}", "Hit@{k}", "Rprec")
EVIDENCE_DEFAULTS = (
    "EvidenceRecall@{k}",
    "PerQueryCoverage@{k}",
    "FullCoverageRate@{k}",
    "ContextCoverage",
    "BestRank",
)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a report depends on besides the run.

    Defaults and bounds come from the settings schema (rageval_core.settings.schema.SETTINGS).
    """

    k: int = DEFAULTS["k"]
    threshold: float = DEFAULTS["threshold"]
    scorer: str = DEFAULTS["scorer"]
    norm: Normalisation = field(
        default_factory=lambda: Normalisation(
            **{s.name: s.default for s in SETTINGS if s.part_of == "norm"}
        )
    )
    #: None: ids when the run has qrels, else evidence
    relevance: Relevance | None = DEFAULTS["relevance"]
    #: a pair covers only when the chunk holds every number of the span (rageval_core.matching.numbers)
    numbers_must_match: bool = DEFAULTS["numbers_must_match"]
    score_threshold: float | None = DEFAULTS["score_threshold"]  # drop chunks scored below this
    rel_level: int = DEFAULTS["rel_level"]
    complete: bool = DEFAULTS["complete"]
    judged_only: bool = DEFAULTS["judged_only"]
    #: a seed-parity preset's metrics instead of rageval's, and the rules they read
    #: (rageval_core.settings.presets, rageval_core.evaluation.preset_parity)
    preset: str | None = DEFAULTS["preset"]
    chunk_inside_span_covers: bool = DEFAULTS["chunk_inside_span_covers"]
    one_chunk_one_span: bool = DEFAULTS["one_chunk_one_span"]
    file_gold_by_metadata: bool = DEFAULTS["file_gold_by_metadata"]
    precision_divisor: str = DEFAULTS["precision_divisor"]
    ap_per_gold_item: bool = DEFAULTS["ap_per_gold_item"]
    keep_whitespace: bool = DEFAULTS["keep_whitespace"]
    plain_similarity: bool = DEFAULTS["plain_similarity"]
    no_gold_scores_zero: bool = DEFAULTS["no_gold_scores_zero"]
    #: the judge result set judge.* metrics read (id or name; None: the newest; "none": none)
    judge: str | None = DEFAULTS["judge"]
    #: the semantic scorers' embedder (part of their kept scores' key: scorer_key)
    embedder: str = DEFAULTS["embedder"]
    #: the failure diagnosis's knobs (rageval_core.diagnosis): no metric reads them
    near_miss_band: float = DEFAULTS["near_miss_band"]
    split_min_chars: int = DEFAULTS["split_min_chars"]
    #: which relevance labels the ranking metrics read, in order of precedence
    #: (rageval_core.evaluation.labels; "imported": the run's own qrels)
    labels: str = DEFAULTS["labels"]
    #: a local cross-encoder model folder: the cross-encoder scorer and CrossEncoderSimilarity
    cross_encoder: str | None = DEFAULTS["cross_encoder"]

    def check(self) -> None:
        k_min, _ = BY_NAME["k"].bounds()
        t_min, t_max = BY_NAME["threshold"].bounds()
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < k_min:
            raise UsageError(f"k must be an integer >= {k_min:g}, got {self.k!r}")
        if not (isinstance(self.threshold, (int, float)) and t_min <= self.threshold <= t_max):
            raise UsageError(
                f"threshold must be between {t_min:g} and {t_max:g}, got {self.threshold!r}"
            )
        if self.relevance not in (None, *BY_NAME["relevance"].choices):
            raise UsageError(
                f"relevance must be {' or '.join(BY_NAME['relevance'].choices)}, "
                f"got {self.relevance!r}"
            )
        if self.score_threshold is not None and not math.isfinite(self.score_threshold):
            raise UsageError(f"score threshold must be finite, got {self.score_threshold!r}")
        check_rel_level(self.rel_level)
        _check_diagnosis_settings(self.near_miss_band, self.split_min_chars)
        # an unknown scorer or embedder, or a missing model, fails here
        ScorerKey.of(self.scorer, self.embedder, model=self.cross_encoder)
        for name in ("preset", "precision_divisor"):
            value, choices = getattr(self, name), BY_NAME[name].choices
            if value is not None and value not in choices:
                raise UsageError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
        parse_labels(self.labels)
        if parse_labels(self.labels) != (IMPORTED,) and self.preset is not None:
            raise UsageError(
                "--labels applies to rageval's ranking metrics; a preset's metrics do not read it"
            )
        if self.judged_only and self.preset is not None:  # refused, not silently ignored
            raise UsageError(
                "--judged-only applies to rageval's ranking metrics; a preset's metrics do not "
                "read it"
            )
        rules = [BY_NAME[n].flag for n in RULES if getattr(self, n) != DEFAULTS[n]]
        if rules and self.preset is None:  # refused, not silently ignored
            raise UsageError(
                f"{', '.join(rules)}: these rules apply to a preset's metrics (--preset); "
                "rageval's own metrics do not read them"
            )

    @property
    def scorer_key(self) -> ScorerKey:
        """What the pair scores are computed with and kept under: the scorer, its embedder (a
        scorer by meaning only) and the normalisation."""
        return ScorerKey.of(self.scorer, self.embedder, self.norm, self.cross_encoder)

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> Settings:
        """The Settings of a flat {setting name: value} (names of SETTINGS; missing: default,
        the scorer's own for the threshold: settings.default_for)."""
        unknown = set(values) - set(BY_NAME)
        if unknown:
            raise UsageError(f"unknown settings: {', '.join(sorted(unknown))}")
        flat = {**DEFAULTS, **values}
        if "threshold" not in values:
            flat["threshold"] = default_for("threshold", flat["scorer"])
        top = {s.name: flat[s.name] for s in SETTINGS if s.part_of is None}
        norm = Normalisation(**{s.name: flat[s.name] for s in SETTINGS if s.part_of == "norm"})
        return cls(**top, norm=norm)

    def values(self) -> dict[str, Any]:
        """{setting name: value} in schema order: from_values(s.values()) == s."""
        return {
            s.name: getattr(getattr(self, s.part_of) if s.part_of else self, s.name)
            for s in SETTINGS
        }

    def to_json(self, relevance: str | None) -> dict[str, Any]:
        return {
            "k": self.k,
            "threshold": self.threshold,
            "scorer": self.scorer,
            # the embedder only for a semantic scorer: other reports read as before
            **({"embedder": self.embedder} if is_semantic(self.scorer) else {}),
            # the cross-encoder's model folder only where it is read
            **({"cross_encoder": self.cross_encoder} if self.cross_encoder else {}),
            "normalisation": self.norm.key,
            "strip_punct": self.norm.strip_punct,
            "strip_articles": self.norm.strip_articles,
            "relevance": relevance,
            "score_threshold": self.score_threshold,
            "rel_level": self.rel_level,
            "complete": self.complete,
            # which relevance labels the ranking metrics read (evaluation/labels.py adds how
            # many of each source counted, "label_counts", when any but the run's own count)
            "labels": ",".join(parse_labels(self.labels)),
            # the guard, judged_only, the preset, its rules and the judge only when set:
            # reports without them read as before
            **{
                name: getattr(self, name)
                for name in ("numbers_must_match", "judged_only", "preset", "judge", *RULES)
                if getattr(self, name) != DEFAULTS[name]
            },
        }


def _check_diagnosis_settings(band: object, min_chars: object) -> None:
    b_min, b_max = BY_NAME["near_miss_band"].bounds()
    c_min, _ = BY_NAME["split_min_chars"].bounds()
    if isinstance(band, bool) or not isinstance(band, (int, float)) or not b_min <= band <= b_max:
        raise UsageError(f"near-miss band must be between {b_min:g} and {b_max:g}, got {band!r}")
    if isinstance(min_chars, bool) or not isinstance(min_chars, int) or min_chars < c_min:
        raise UsageError(f"split minimum must be an integer >= {c_min:g}, got {min_chars!r}")


def depth_warning(depth: int, cutoffs: Iterable[int | None]) -> tuple[str, ...]:
    """A note when a measure's cut-off exceeds the run's depth (its longest ranked list): the
    ranks beyond it are empty and read as not relevant, so P@10 of a depth-4 run is at most
    0.4. Every surface (CLI, JSON, API, HTML report, Overview) shows this one text, on both of
    evaluate's routes (the store's, and a TREC pair's direct one)."""
    beyond = sorted({c for c in cutoffs if c is not None and c > depth})
    if not beyond:
        return ()
    ks = ", ".join(str(c) for c in beyond)
    ats = ", ".join(f"@{c}" for c in beyond)
    first, last = depth + 1, beyond[-1]
    ranks = f"rank {last}" if first == last else f"ranks {first} to {last}"
    what = "cut-off k = {} exceeds" if len(beyond) == 1 else "cut-offs k = {} exceed"
    return (
        f"the {what.format(ks)} this run's depth of {depth} (its longest ranked list): no query has a "
        f"chunk at {ranks}, which every {ats} measure reads as not relevant, as trec_eval does",
    )


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
    ops: Mapping[str, Any]  # computed on first read (Deferred)
    by: dict[str, Any] | None = None
    #: per-query weights of the pooled metrics (EvidenceRecall: span counts), for with_breakdown
    weights: dict[str, Floats] = field(default_factory=dict, repr=False, compare=False)
    #: what the numbers suggest checking (rageval_core.evaluation.checks); in the JSON only when any
    warnings: tuple[str, ...] = ()

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
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return ops.to_json_value(out)  # type: ignore[no-any-return]
