"""The demo's synthetic collection: insurance policies and 10-K-like annual reports, chunked.

Every document is written from a template (documents.py, data/*.json) by a seeded generator,
so the facts it states (and their exact character offsets) are known: the questions in
questions.py are built from them. Near-duplicate documents (another edition of a policy,
another fiscal year of a company) share wording and differ in some numbers, which is what
makes retrieval hard.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval_core.demo.documents import (
    POLICY_PRODUCTS,
    Fact,
    ValuesFn,
    company_values,
    next_year_values,
    write_document,
)
from rageval_core.demo.resources import load

#: Chunker settings: pack whole sentences up to MAX_CHUNK_CHARS; each chunk after the first
#: opens with up to OVERLAP_CHARS of the previous one (cut at a word start).
MAX_CHUNK_CHARS = 640
OVERLAP_CHARS = 60


@dataclass(slots=True)
class Document:
    """One markdown document of the collection, with the facts placed in it."""

    name: str
    source: str  # "policy" or "10-K"
    product: str  # "life", "home", "auto" or "annual_report"
    family: str  # shared by near-duplicates (editions of one plan, years of one company)
    ident: dict[str, Any]
    text: str
    facts: list[Fact]


@dataclass(frozen=True, slots=True)
class DemoChunk:
    """A chunk of a document: text is exactly document.text[start:end]."""

    chunk_id: str
    doc: str
    start: int
    end: int
    text: str


@dataclass(slots=True)
class Corpus:
    """The documents and their chunks (in document order)."""

    documents: list[Document]
    chunks: list[DemoChunk]

    def doc(self, name: str) -> Document:
        return self._docs[name]

    def doc_chunks(self, name: str) -> list[DemoChunk]:
        return self._by_doc[name]

    def __post_init__(self) -> None:
        self._docs = {d.name: d for d in self.documents}
        self._by_doc: dict[str, list[DemoChunk]] = {d.name: [] for d in self.documents}
        for c in self.chunks:
            self._by_doc[c.doc].append(c)

    _docs: dict[str, Document] = field(default_factory=dict, init=False, repr=False)
    _by_doc: dict[str, list[DemoChunk]] = field(default_factory=dict, init=False, repr=False)


# ---------------------------------------------------------------------------------------------
# Chunking

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")


def split_units(text: str) -> list[tuple[int, int]]:
    """Sentence-like units of text as (start, end) offsets: headings, then sentences of paragraphs."""
    units: list[tuple[int, int]] = []
    pos = 0
    for block in text.split("\n\n"):
        start = pos
        pos += len(block) + 2
        stripped = block.strip()
        if not stripped:
            continue
        start += len(block) - len(block.lstrip())
        end = start + len(stripped)
        if stripped.startswith("#"):
            units.append((start, end))
            continue
        s = start
        for m in _SENTENCE_END.finditer(text, start, end):
            units.append((s, m.start()))
            s = m.end()
        units.append((s, end))
    return units


def chunk_document(
    name: str, text: str, max_chars: int = MAX_CHUNK_CHARS, overlap_chars: int = OVERLAP_CHARS
) -> list[DemoChunk]:
    """Pack sentences into chunks of at most max_chars, each opening with a short overlap."""
    units = split_units(text)
    spans: list[tuple[int, int]] = []
    i = 0
    lead = -1  # where the next chunk starts, when it opens inside the previous chunk
    while i < len(units):
        start = units[i][0] if lead < 0 else lead
        j = i
        while j + 1 < len(units) and units[j + 1][1] - start <= max_chars:
            j += 1
        # a heading belongs with the text under it, not at the end of a chunk
        if j > i and text[units[j][0]] == "#" and j + 1 < len(units):
            j -= 1
        end = units[j][1]
        spans.append((start, end))
        i = j + 1
        if i < len(units):
            lead = _overlap_start(text, start, end, overlap_chars)
            if text[units[i][0]] == "#":
                lead = -1  # no overlap into a new section
    return [DemoChunk(f"{name}#{k}", name, s, e, text[s:e]) for k, (s, e) in enumerate(spans)]


def _overlap_start(text: str, start: int, end: int, overlap_chars: int) -> int:
    """The first word start at or after end - overlap_chars (never before start)."""
    pos = max(start, end - overlap_chars)
    while pos < end and pos > start and not (text[pos - 1].isspace() and not text[pos].isspace()):
        pos += 1
    return pos if pos < end else -1


# ---------------------------------------------------------------------------------------------
# The collection

#: names of plans, insurers, companies and places (data/vocabulary.json)
_NAMES = load("vocabulary")
#: documents per product: (families, families that get a second near-duplicate document)
_POLICY_COUNTS = (34, 8)
_COMPANY_COUNTS = (52, 24)


def build_corpus(seed: int = 7) -> Corpus:
    """The whole collection for seed: about 200 documents and their chunks, deterministic."""
    r = random.Random(f"demo-corpus:{seed}")
    planned: list[tuple[str, str, str, dict[str, Any], dict[str, Any], int]] = []
    # (product, source, family, ident, values, style seed)
    used_codes: set[str] = set()
    plan_names = r.sample(_NAMES["plan_names"], len(_NAMES["plan_names"]))
    plan_i = 0
    for product, (values_fn, changeable, prefix) in POLICY_PRODUCTS.items():
        families, twins = _POLICY_COUNTS
        for f in range(families):
            # each family gets its own plan name; names recycle across products only
            base = plan_names[(plan_i + f) % len(plan_names)]
            values = values_fn(r)
            suffix = r.choice(_NAMES["plan_suffixes"][product]).format(t=values.get("term", ""))
            plan = f"{base} {suffix}"
            insurer = f"{r.choice(_NAMES['insurer_first'])} {r.choice(_NAMES['insurer_second'])}"
            style = r.randrange(1 << 30)
            editions = [r.choice([2021, 2022, 2023, 2024])]
            if f < twins:
                editions.append(editions[0] - r.choice([1, 2, 3]))
            for k, edition in enumerate(editions):
                v = values if k == 0 else _edition_values(r, values, values_fn, changeable)
                code = _unique_code(r, prefix, used_codes)
                ident = {"plan": plan, "insurer": insurer, "code": code, "edition": edition}
                planned.append((product, "policy", f"{product}:{plan}", ident, v, style))
        plan_i += families
    companies = r.sample(_NAMES["company_names"], _COMPANY_COUNTS[0])
    for f, name in enumerate(companies):
        sector = r.choice(sorted(_NAMES["sectors"]))
        company = f"{name} {r.choice(_NAMES['company_suffixes'])}"
        ident0 = {
            "company": company,
            "short": name,
            "sector": sector,
            "city": r.choice(_NAMES["cities"]),
        }
        style = r.randrange(1 << 30)
        year = r.choice([2022, 2023])
        values = company_values(r, sector)
        years = [(year, values)]
        if f < _COMPANY_COUNTS[1]:
            years.append((year + 1, next_year_values(r, values)))
        for y, v in years:
            planned.append(
                ("annual_report", "10-K", f"10-K:{company}", {**ident0, "year": y}, v, style)
            )

    # numbering is shuffled per product so that near-duplicates are not neighbours
    order = list(range(len(planned)))
    r.shuffle(order)
    position = {i: k for k, i in enumerate(order)}
    counters: dict[str, int] = {}
    documents: list[Document] = []
    for idx in sorted(order, key=lambda i: (planned[i][0], position[i])):
        product, source, family, ident, values, style = planned[idx]
        counters[product] = counters.get(product, 0) + 1
        stem = "annual_report" if product == "annual_report" else f"{product}_policy"
        name = f"{stem}_{counters[product]:03d}.md"
        text, facts = write_document(name, product, ident, values, random.Random(style))
        documents.append(Document(name, source, product, family, ident, text, facts))
    chunks = [c for d in documents for c in chunk_document(d.name, d.text)]
    return Corpus(documents, chunks)


def _edition_values(
    r: random.Random, values: dict[str, Any], values_fn: ValuesFn, changeable: Sequence[str]
) -> dict[str, Any]:
    """Another edition of a policy: the same terms except a few changed numbers."""
    fresh = values_fn(r)
    v = dict(values)
    changed = 0
    for key in r.sample(changeable, len(changeable)):
        if fresh[key] != values[key]:
            v[key] = fresh[key]
            changed += 1
        if changed >= 4:
            break
    return v


def _unique_code(r: random.Random, prefix: str, used: set[str]) -> str:
    while True:
        code = f"{prefix}-{r.randrange(10000, 100000)}"
        if code not in used:
            used.add(code)
            return code
