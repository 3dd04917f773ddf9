"""A run's metrics under a seed-parity preset (rageval_core.settings.presets), and why they differ.

Reads the run's queries from the store (texts, chunk metadata, gold spans and FILE gold ids),
matches every gold item against every chunk under the rule settings (rageval_core.settings.schema.RULES)
with the pair similarity in float64, and hands the result to rageval_core.metrics.parity. The
rules, as both projects' scripts apply them:
- normalisation: lower case with whitespace runs collapsed (rageval's), or lower case and strip
  only (keep_whitespace); strip_punct / strip_articles use rageval's own normaliser;
- a pair's similarity is the scorer's value, or 1.0 when the span lies inside the chunk (unless
  plain_similarity) or the chunk inside the span (chunk_inside_span_covers); empty texts match
  nothing unless plain_similarity, which asks the scorer about them too;
- a chunk covers a span when that similarity reaches the threshold; FILE gold items (the run's
  relevance ids, which the TAT-RAG reader fills from FILE entries) count as gold only with
  file_gold_by_metadata, and match a chunk whose metadata holds the file's base name;
- one_chunk_one_span: a chunk covers only the first item it matches, spans before files;
- chunks scored below score_threshold are dropped before anything is counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from rageval_core.errors import UsageError
from rageval_core.evaluation.breakdown import breakdown
from rageval_core.evaluation.report import Report, Settings
from rageval_core.latency.run_summary import Deferred, ops_summary
from rageval_core.matching.scorers import normalise, get_scorer
from rageval_core.metrics import parity as formulas
from rageval_core.model import Chunk, Query
from rageval_core.matching.numbers import missing_numbers
from rageval_core.settings.presets import PRESET_RELEVANCE, Preset, get_preset, rule_steps
from rageval_core.rundata import RunData
from rageval_core.settings.schema import BY_NAME
from rageval_core.store import Store

#: the chunk metadata TAT-RAG's evaluator searches for a FILE item's base name (and "tags")
FILE_METADATA_KEYS = ("table_path", "table_title", "source", "doc_id", "section_path")

PairCache = dict[tuple[str, str, str], float]


def normalised(text: str | None, settings: Settings) -> str:
    """text as the rules match it (empty for None)."""
    if not text:
        return ""
    if settings.norm.strip_punct or settings.norm.strip_articles:
        return normalise(text, settings.norm)[0]
    if settings.keep_whitespace:
        return text.lower().strip()
    return " ".join(text.split()).lower()


def similarity(span: str, chunk: str, settings: Settings, cache: PairCache) -> float:
    """The similarity of a normalised span and chunk under the rules (float64)."""
    if not settings.plain_similarity:
        if not span or not chunk:
            return 0.0
        if span in chunk:
            return 1.0
    if settings.chunk_inside_span_covers and chunk and chunk in span:
        return 1.0
    key = (settings.scorer, span, chunk)
    value = cache.get(key)
    if value is None:
        value = cache[key] = float(get_scorer(settings.scorer).pair(span, chunk))
    return value


def file_names(query: Query) -> list[str]:
    """The lower-cased base names of a query's FILE gold (its relevance ids), in file order."""
    return [
        PurePosixPath(doc).name.lower()
        for doc, grade in (query.relevance or {}).items()
        if grade > 0
    ]


def metadata_texts(chunk: Chunk) -> list[str]:
    """The chunk metadata values a FILE name is looked for in: "/" for "\\", lower case."""
    meta = chunk.metadata or {}
    values = [meta[k] for k in FILE_METADATA_KEYS if isinstance(meta.get(k), str)]
    tags = meta.get("tags")
    if isinstance(tags, list):
        values += [t for t in tags if isinstance(t, str)]
    return [v.replace("\\", "/").lower() for v in values]


def kept_chunks(query: Query, settings: Settings) -> list[Chunk]:
    """The query's chunks in rank order, those scored below score_threshold dropped."""
    chunks = list(query.retrieved or ())
    cut = settings.score_threshold
    if cut is None:
        return chunks
    return [c for c in chunks if c.score is None or not c.score < cut]


def cover_matrix(query: Query, settings: Settings, cache: PairCache) -> np.ndarray:
    """(chunks x gold items) True where the chunk covers the item under the rules."""
    spans = [
        t
        for t in (normalised(e, settings) for e in query.evidence)
        if t or settings.plain_similarity
    ]
    files = file_names(query) if settings.file_gold_by_metadata else []
    chunks = kept_chunks(query, settings)
    cover = np.zeros((len(chunks), len(spans) + len(files)), dtype=np.bool_)
    for r, chunk in enumerate(chunks):
        text = normalised(chunk.text, settings)
        for j, span in enumerate(spans):
            cover[r, j] = similarity(
                span, text, settings, cache
            ) >= settings.threshold and numbers_ok(span, text, settings)
        if files:
            meta = metadata_texts(chunk)
            for j, name in enumerate(files):
                cover[r, len(spans) + j] = any(name in v for v in meta)
        if settings.one_chunk_one_span and cover[r].any():
            first = int(np.argmax(cover[r]))
            cover[r] = False
            cover[r, first] = True
    return cover


def context_similarities(query: Query, settings: Settings, cache: PairCache) -> list[float] | None:
    """Each kept chunk's best similarity over the query's spans; None without spans."""
    spans = [normalised(e, settings) for e in query.evidence]
    if not spans:
        return None
    texts = [normalised(c.text, settings) for c in kept_chunks(query, settings)]
    return [
        max(
            similarity(span, t, settings, cache) if numbers_ok(span, t, settings) else 0.0
            for span in spans
        )
        for t in texts
    ]


def numbers_ok(span: str, chunk: str, settings: Settings) -> bool:
    """False when numbers_must_match and the chunk lacks a number of the span."""
    return not (settings.numbers_must_match and missing_numbers(span, chunk))


def preset_values_of(
    queries: Sequence[Query],
    preset: Preset,
    names: Sequence[str],
    settings: Settings,
    cache: PairCache,
) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
    """Per-query values of names, the pooled metrics' weights, and how many queries are scored."""
    by_retrieved = settings.precision_divisor == "retrieved"
    if preset.family == "tatrag":
        covers = [cover_matrix(q, settings, cache) for q in queries]
        values, weights = formulas.tatrag_scores(
            covers,
            names,
            precision_by_retrieved=by_retrieved,
            ap_per_gold_item=settings.ap_per_gold_item,
            no_gold_scores_zero=settings.no_gold_scores_zero,
        )
        scored = sum(1 for c in covers if c.shape[1] or settings.no_gold_scores_zero)
        return values, weights, scored
    sims = [context_similarities(q, settings, cache) for q in queries]
    values = formulas.eggai_scores(
        sims,
        names,
        settings.threshold,
        precision_by_retrieved=by_retrieved,
        no_gold_scores_zero=settings.no_gold_scores_zero,
    )
    scored = sum(1 for x in sims if x is not None or settings.no_gold_scores_zero)
    return values, np.ones(len(queries)), scored


def run_values(
    preset: Preset, values: Mapping[str, np.ndarray], weights: np.ndarray, scored: int
) -> dict[str, float]:
    return {
        name: formulas.aggregate(preset.family, name, v, weights, scored)
        for name, v in values.items()
    }


def preset_aggregate(
    preset: str, name: str, values: np.ndarray, weights: np.ndarray | None
) -> float:
    """A preset metric's run value over some queries (compare: the shared ones)."""
    scored = int(np.count_nonzero(~np.isnan(values)))
    w = np.ones(values.size) if weights is None else weights
    return formulas.aggregate(get_preset(preset).family, name, values, w, scored)


def preset_metric_names(preset: Preset, metrics: Sequence[str] | None) -> list[str]:
    """The asked metrics (all the preset's when None); UsageError for a name it does not print."""
    if not metrics:
        return list(preset.metrics)
    unknown = [m for m in metrics if m not in preset.metrics]
    if unknown:
        raise UsageError(
            f"preset {preset.name} reports {', '.join(preset.metrics)}; not {', '.join(unknown)}"
        )
    return list(metrics)


def stored_queries(store: Store, data: RunData) -> list[Query]:
    """The run's queries in RunData order (its rows are the queries' file order)."""
    queries = list(store.iter_queries(data.run.run_id))
    if [q.query_id for q in queries] != [str(x) for x in data.query_ids.tolist()]:
        raise UsageError(f"run {data.run.name}: its queries and arrays disagree; import it again")
    return queries


def with_preset(base: Settings, name: str) -> Settings:
    """base with a preset's values (flat setting names; the normalisation's go to norm)."""
    values = get_preset(name).values
    norm = {k: v for k, v in values.items() if BY_NAME[k].part_of == "norm"}
    fields: dict[str, Any] = {k: v for k, v in values.items() if k not in norm}
    if norm:
        fields["norm"] = dataclasses.replace(base.norm, **norm)
    return dataclasses.replace(base, **fields)


def evaluate_preset(
    store: Store, data: RunData, metrics: Sequence[str] | None, settings: Settings, by: str | None
) -> Report:
    """The Report of a run under s.preset: the preset's metrics under its own names."""
    assert settings.preset is not None
    preset = get_preset(settings.preset)
    names = preset_metric_names(preset, metrics)
    queries = stored_queries(store, data)
    values, weights, scored = preset_values_of(queries, preset, names, settings, {})
    pooled = {n: weights for n in names if preset.family == "tatrag" and n in formulas.POOLED}
    name = settings.preset
    by_out = (
        breakdown(
            data,
            dict(values),
            pooled,
            by,
            lambda metric, col, w: preset_aggregate(name, metric, col, w),
        )
        if by
        else None
    )
    return Report(
        run=data.run.name,
        settings=settings.to_json(PRESET_RELEVANCE),
        relevance=PRESET_RELEVANCE,
        metrics=run_values(preset, values, weights, scored),
        query_ids=data.query_ids,
        per_query=dict(values),
        counts={"queries": data.n_queries, "scored_preset": scored},
        ops=Deferred(lambda: ops_summary(data)),
        by=by_out,
        weights=pooled,
    )


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of an explanation: the setting switched toward the preset, and the metrics."""

    setting: str  # "defaults" for the first step
    value: Any
    metrics: dict[str, float]


@dataclasses.dataclass(frozen=True)
class Explanation:
    """A preset's metrics under rageval's defaults, then with its rules switched one at a time."""

    preset: str
    project: str
    steps: list[Step]

    def to_json(self) -> dict[str, Any]:
        last, first = self.steps[-1].metrics, self.steps[0].metrics
        return {
            "preset": self.preset,
            "project": self.project,
            "metrics": list(first),
            # what each is called among rageval's own metrics, which equal the defaults step
            "rageval_names": dict(get_preset(self.preset).counterparts),
            "defaults": first,
            "preset_values": last,
            "steps": [
                {
                    "setting": st.setting,
                    "value": st.value,
                    "metrics": st.metrics,
                    "change": {n: st.metrics[n] - prev.metrics[n] for n in st.metrics},
                }
                for prev, st in zip([self.steps[0], *self.steps], self.steps, strict=False)
            ],
        }

    def table(self) -> tuple[list[str], list[list[str]]]:
        """(headers, rows) for a text table: one row per step, then the whole difference."""
        names = list(self.steps[0].metrics)
        rows = []
        for i, st in enumerate(self.steps):
            label = "rageval defaults" if i == 0 else f"+ {st.setting}={_shown(st.value)}"
            rows.append([label, *(_num(st.metrics[n]) for n in names)])
        first, last = self.steps[0].metrics, self.steps[-1].metrics
        rows.append(["preset - defaults", *(_num(last[n] - first[n], True) for n in names)])
        return ["step", *names], rows


def _shown(value: Any) -> str:
    return "on" if value is True else "off" if value is False else str(value)


def _num(value: float, signed: bool = False) -> str:
    if value != value:
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def explain_preset(
    store: Store,
    data: RunData,
    name: str,
    given: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Explanation:
    """The preset's metrics under rageval's defaults, then switching one rule at a time.

    given: settings the user fixed (--threshold ...): kept at every step, so the explanation
    attributes only what the preset changes beyond them. The last step is the preset's numbers.
    """
    preset = get_preset(name)
    queries = stored_queries(store, data)
    cache: PairCache = {}
    steps = []
    for setting, values in _steps(name, given or {}):
        if progress is not None:
            progress(setting)
        s = Settings.from_values(values)
        s.check()
        vals, weights, scored = preset_values_of(queries, preset, preset.metrics, s, cache)
        steps.append(Step(setting, values.get(setting), run_values(preset, vals, weights, scored)))
    return Explanation(name, preset.project, steps)


def _steps(name: str, given: Mapping[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    for setting, values in rule_steps(name):
        if setting in given:
            continue
        yield setting, {**values, **given, "preset": name}
