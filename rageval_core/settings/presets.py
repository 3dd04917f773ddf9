"""The seed-parity presets: named bundles of setting values plus the metrics a project prints.

A preset reproduces one project's own evaluation script on rageval's input (docs/metrics.md,
"Presets"): the rules it flips are ordinary settings (rageval_core.settings.schema.RULES) and its
metrics are computed by rageval_core.evaluation.preset_parity under that project's names. Flags given beside a
preset override its values (`--preset eggai --threshold 0.6`).

Pure Python, no import beyond the settings schema: the CLI reads it before parsing arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rageval_core.settings.schema import DEFAULTS, RULES


#: the relevance mode every preset scores in: a chunk is relevant when it covers a gold item
PRESET_RELEVANCE: Final = "evidence"


@dataclass(frozen=True, slots=True)
class Preset:
    """One project's rules (setting values) and the metrics its script prints, in its order."""

    name: str
    project: str  # where the script is, for the docs and --explain-preset
    family: str  # which formulas of rageval_core.metrics.parity compute its metrics
    metrics: tuple[str, ...]
    values: Mapping[str, Any] = field(default_factory=dict)
    #: metric -> rageval's own metric that equals it under rageval's default settings
    counterparts: Mapping[str, str] = field(default_factory=dict)
    #: the metric whose 0 marks a query as failing in the dashboard's Queries table
    failing: str = ""


PRESETS: Mapping[str, Preset] = {
    "tat-rag": Preset(
        "tat-rag",
        "CSE291A-TAT-RAG/TAT-RAG scripts/evaluate_retrieval.py",
        "tatrag",
        (
            "Precision@5",
            "EvidenceRecall@3",
            "EvidenceRecall@10",
            "PerQueryCoverage@3",
            "PerQueryCoverage@10",
            "FullCoverageRate@3",
            "FullCoverageRate@10",
            "MAP",
            "MRR",
            "HitRate@10",
        ),
        {
            "scorer": "difflib",
            "threshold": 0.7,  # its --fuzzy-threshold default
            "score_threshold": 0.1,  # RAG_SCORE_THRESHOLD's default: the retriever drops the rest
            "numbers_must_match": False,  # its fuzzy match reads no figures
            "chunk_inside_span_covers": True,
            "one_chunk_one_span": True,
            "file_gold_by_metadata": True,
            "precision_divisor": "retrieved",
            "ap_per_gold_item": True,
            "no_gold_scores_zero": True,
        },
        {
            "Precision@5": "P@5",
            "EvidenceRecall@3": "EvidenceRecall@3",
            "EvidenceRecall@10": "EvidenceRecall@10",
            "PerQueryCoverage@3": "PerQueryCoverage@3",
            "PerQueryCoverage@10": "PerQueryCoverage@10",
            "FullCoverageRate@3": "FullCoverageRate@3",
            "FullCoverageRate@10": "FullCoverageRate@10",
            "MAP": "AP",
            "MRR": "RR",
            "HitRate@10": "Hit@10",
        },
        failing="FullCoverageRate@10",
    ),
    "eggai": Preset(
        "eggai",
        "eggai-tech/EggAI agents/policies/tests/retrieval_performance "
        "(context_metrics.py, evaluator.py with the judge off, mlflow_reporter.py)",
        "eggai",
        (
            "recall_score",
            "context_coverage",
            "precision_at_k",
            "mrr_score",
            "ndcg_score",
            "best_match_position",
            "hit_rate_top_1",
            "hit_rate_top_3",
            "hit_rate_top_5",
        ),
        {
            "scorer": "difflib",
            "threshold": 0.5,  # ContextMetrics' similarity_threshold
            "numbers_must_match": False,  # its similarity reads no figures
            "keep_whitespace": True,
            "plain_similarity": True,
            "precision_divisor": "retrieved",
            "no_gold_scores_zero": True,
        },
        {  # recall_score reads the whole list: Hit@k with k at least the list's length
            "context_coverage": "ContextCoverage",
            "precision_at_k": "P@5",
            "mrr_score": "RR",
            "best_match_position": "BestRank",
        },
        failing="recall_score",
    ),
}


#: a one-line definition of each preset metric (the dashboard's hover; docs/metrics.md has the
#: formulas and edge cases)
METRIC_HELP: Mapping[str, str] = {
    "Precision@5": "relevant chunks in the top 5 / min(5, retrieved); mean over queries",
    "EvidenceRecall@3": "gold items covered in the top 3, pooled: covered items / all items",
    "EvidenceRecall@10": "gold items covered in the top 10, pooled: covered items / all items",
    "PerQueryCoverage@3": "share of a query's gold items covered in the top 3; mean",
    "PerQueryCoverage@10": "share of a query's gold items covered in the top 10; mean",
    "FullCoverageRate@3": "1 when every gold item is covered in the top 3; mean",
    "FullCoverageRate@10": "1 when every gold item is covered in the top 10; mean",
    "MAP": "TAT-RAG's MAP: precision at the ranks that cover a new gold item, / gold items",
    "MRR": "1 / rank of the first relevant chunk, whole list; mean",
    "HitRate@10": "1 when a chunk in the top 10 is relevant; mean",
    "recall_score": "1 when any chunk's similarity reaches the threshold; mean",
    "context_coverage": "the best similarity of the expected context over the chunks; mean",
    "precision_at_k": "relevant chunks among the top 5 / min(5, retrieved); mean",
    "mrr_score": "1 / the first relevant rank; mean",
    "ndcg_score": "nDCG@10 graded by the similarity, ranks 1 and 2 undiscounted; mean",
    "best_match_position": "first rank holding the best relevant similarity; mean over the "
    "cases that have one (lower is better)",
    "hit_rate_top_1": "share of cases whose best match position is 1",
    "hit_rate_top_3": "share of cases whose best match position is <= 3",
    "hit_rate_top_5": "share of cases whose best match position is <= 5",
}


#: every preset's metric names, and those of them where lower is better
PRESET_METRICS: frozenset[str] = frozenset(m for p in PRESETS.values() for m in p.metrics)
LOWER_IS_BETTER: frozenset[str] = frozenset({"best_match_position"})


def get_preset(name: str) -> Preset:
    """The preset called name; a ValueError naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}") from None


def preset_values(name: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """{setting: value} of a preset run: the preset's values, then given on top, preset named."""
    return {**get_preset(name).values, **(given or {}), "preset": name}


def rule_steps(name: str) -> list[tuple[str, dict[str, Any]]]:
    """The explanation's path from rageval's defaults to the preset, one setting at a time.

    [("defaults", values), (setting, values with it and every earlier one switched) ...]; the
    preset's own metrics are computed at every step, so each step's change is that rule's share.
    """
    preset = get_preset(name)
    values: dict[str, Any] = {"preset": name}
    steps = [("defaults", dict(values))]
    order = [n for n in DEFAULTS if n in preset.values]  # schema order: threshold ... rules
    for setting in order:
        if preset.values[setting] == DEFAULTS[setting]:
            continue
        values[setting] = preset.values[setting]
        steps.append((setting, dict(values)))
    return steps


__all__ = [
    "LOWER_IS_BETTER",
    "METRIC_HELP",
    "PRESETS",
    "PRESET_METRICS",
    "PRESET_RELEVANCE",
    "RULES",
    "Preset",
    "get_preset",
    "preset_values",
    "rule_steps",
]
