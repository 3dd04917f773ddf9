"""Malformed and adversarial files for every reader: a whole import or clear file:line errors.

Hypothesis builds files for each format from mostly-right records (wrong types, NaN and
infinities, negative ranks, duplicate ids, ids equal after Unicode normalisation, empty and
over-long evidence, hostile text, lone surrogates, integers of hundreds of digits), writes them
with byte-level damage (truncation, a BOM, CRLF or CR-only line ends, invalid UTF-8, a Latin-1
stretch, NUL bytes and other control characters, deep nesting, a huge line, a lone surrogate
escaped in JSON, an integer literal of 400 or 5,000 digits) and imports them through the real
import verb, detecting the format or forcing the intended one. Each case must end in exactly
one of:

- a whole import: the store holds every query the reader yields, equal field by field (read
  back and compared), and its row counts agree with the run's;
- a refusal: every problem is `file:line: field: problem` about one of the given files, at
  least one is an error, and the store is exactly as before (no partial import).

Anything else (an exception, a problem without a place, a changed store after a refusal) fails.
A per-case alarm turns a hang into a failure. The number of cases run is in CASES.

test_cli_imports_or_refuses_any_file runs the same files through the real CLI (in process):
exit 0, or exit 2 with every problem printed as `path:line: ...`, no traceback, and the store's
row counts unchanged.

RAGEVAL_FUZZ_EXAMPLES sets the cases per test (default EXAMPLES, sized for CI); a long run:
RAGEVAL_FUZZ_EXAMPLES=5000 python -m pytest -p no:cacheprovider -q tests/core/formats/test_fuzz_readers.py
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import signal
import unicodedata
from collections import Counter
from decimal import Decimal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rageval_core.errors import Problem, ProblemLog
from rageval_core.formats import read_inputs
from rageval_core.formats.base import display_path
from rageval_core.importing import import_paths
from rageval_core.store import Store
from tests.cli import rageval
from tests.core.formats.test_hostile_inputs import bystander_store
from tests.core.formats.test_hostile_inputs import counts as db_counts

#: cases run per reader (docs/reliability.md quotes the totals)
CASES: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()
#: seconds one case may take before it counts as a hang
CASE_TIMEOUT_S = 60
#: cases per fuzz test: CI-sized unless RAGEVAL_FUZZ_EXAMPLES asks for a long run
EXAMPLES = int(os.environ.get("RAGEVAL_FUZZ_EXAMPLES") or 100)
PROBLEM_LINE = re.compile(
    r"^(?P<file>.+):(?P<line>\d+): (?P<field>[^:].*?): (?P<problem>.+)$", re.S
)


# --- values --------------------------------------------------------------------------------------

NFC, NFD = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
HOSTILE = [
    "",
    " ",
    "q1",
    "Q1",
    NFC,
    NFD,
    "ﬁ",
    "fi",
    "\u00a0q1",
    "q1\u200b",
    "'; DROP TABLE runs; --",
    "<script>alert(1)</script>",
    "\ufeffq1",
    "line\nbreak",
    "tab\tbed",
    "cr\rhere",
    "\u2028",
    "\x00",
    "\x1b[31m",
    "[x](javascript:alert(1))",
    "0",
    "-1",
    "1e999",
    "NaN",
    "null",
    "\ud800",
    "a\udfff",
    "\udcff",
    "\x01\x7f\x85",
    "\u202e",  # lone surrogates: "\ud800" in JSON
]
texts = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40))
ids = st.one_of(
    st.sampled_from(["q1", "q2", NFC, NFD, "ﬁ", "fi", "", " q1 ", "'; DROP TABLE runs; --"]),
    st.text(min_size=1, max_size=8),
)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from(
        [0, -1, -0.0, 1e308, -1e-320, 2**63, 2**64 + 1, 10**400, -(10**400), 10**308, 2 * 10**308]
    ),
)
#: where a number goes (a score, a latency, a time, a price): also null, and numbers as text
numeric = st.one_of(
    numbers,
    numbers,
    st.none(),
    st.booleans(),
    st.sampled_from(["0.5", "NaN", "Infinity", "-1", "1e999", "", "12"]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
#: any JSON value: where a field is given the wrong type
anything = st.recursive(
    scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3), max_leaves=8
)
counts = st.one_of(st.integers(-5, 10**12), st.sampled_from([2**63 - 1, 2**63, 2**64 + 1, 10**400]))
labels = st.one_of(
    st.integers(-3, 3), st.sampled_from([2**31 - 1, 2**31, -(2**31) - 1, 10**20, 10**400])
)
#: a placeholder replaced, once serialised, by nesting this deep (json.dumps would recurse)
DEEP = "\u0001deep\u0001"


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the right kind of value; sometimes anything at all, or the deep placeholder."""
    return st.integers(0, 19).flatmap(
        lambda i: anything if i == 0 else st.just(DEEP) if i == 1 else strategy
    )


def chunk_texts(evidence: str) -> st.SearchStrategy[str]:
    return st.one_of(
        texts, st.just(evidence), st.just(evidence[: len(evidence) // 2]), st.just("x" * 3000)
    )


# --- damage to the bytes ------------------------------------------------------------------------


def encoded(text: str) -> bytes:
    """text as UTF-8; a raw lone surrogate (json.dumps(ensure_ascii=False) keeps one) as the
    invalid bytes CESU-8 would write."""
    return text.encode("utf-8", "surrogatepass")


@st.composite
def damaged(draw: st.DrawFn, text: str) -> bytes:
    """text as UTF-8, then zero or more kinds of damage."""
    depth = draw(st.sampled_from([50, 2_000, 100_000]))
    text = text.replace(json.dumps(DEEP), "[" * depth + "]" * depth).replace(DEEP, "[" * depth)
    text = draw(text_damage(text))
    line_end = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))  # CR alone: an old Mac file
    text = text.replace("\n", line_end)
    if draw(st.integers(0, 9)) == 0:  # a huge line
        text = (
            text
            + "\n"
            + json.dumps({"query_id": "huge", "retrieved": [], "query": "y" * 2_000_000})
        )
    data = encoded(text)
    if draw(st.integers(0, 4)) == 0:
        data = b"\xef\xbb\xbf" + data  # a BOM
    kind = draw(
        st.sampled_from(
            ["none"] * 6 + ["truncate", "invalid", "latin1", "nul", "control", "drop_line"]
        )
    )
    if kind == "truncate" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif kind == "invalid" and data:
        at = draw(st.integers(0, len(data)))
        data = (
            data[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]))
            + data[at:]
        )
    elif kind == "latin1":
        data = data + "\nnaïve café £".encode("latin-1")  # a second encoding after the first
    elif kind in ("nul", "control") and data:
        at = draw(st.integers(0, len(data)))
        char = b"\x00" if kind == "nul" else bytes([draw(st.sampled_from([*range(1, 32), 127]))])
        data = data[:at] + char + data[at:]
    elif kind == "drop_line":
        lines = data.split(b"\n")
        if len(lines) > 1:
            del lines[draw(st.integers(0, len(lines) - 1))]
        data = b"\n".join(lines)
    return data


#: JSON text the generated values cannot hold (json.dumps would refuse, or escape differently)
ESCAPES = ["\\ud800", "\\udfff", "\\uDBFF", "\\ud800\\ud800", "\\udc00\\ud800"]


@st.composite
def text_damage(draw: st.DrawFn, text: str) -> str:
    """Damage at the JSON level: a lone surrogate escaped inside a string, or an integer literal
    of hundreds or thousands of digits where a number was (or anywhere)."""
    kind = draw(st.sampled_from(["none"] * 4 + ["surrogate", "digits"]))
    if kind == "surrogate":
        quotes = [m.end() for m in re.finditer('"', text)] or [0]
        at = draw(st.sampled_from(quotes))
        return text[:at] + draw(st.sampled_from(ESCAPES)) + text[at:]
    if kind == "digits":
        digits = "9" * draw(st.sampled_from([309, 400, 5_000]))
        numbers_at = [m.span() for m in re.finditer(r"(?<![\w.])-?\d+(?![\w.])", text)]
        if numbers_at:
            lo, hi = draw(st.sampled_from(numbers_at))
            return text[:lo] + draw(st.sampled_from(["", "-"])) + digits + text[hi:]
        at = draw(st.integers(0, len(text)))
        return text[:at] + digits + text[at:]
    return text


def dumps(value: Any) -> str:
    # NaN and Infinity literals on purpose: Python's json writes them and other tools do too
    return json.dumps(value, ensure_ascii=draw_ascii(value), allow_nan=True)


def draw_ascii(value: Any) -> bool:
    return len(str(value)) % 2 == 0  # both spellings of non-ASCII text, deterministically


# --- records per format --------------------------------------------------------------------------


@st.composite
def native_query(draw: st.DrawFn) -> dict[str, Any]:
    evidence = draw(st.lists(st.one_of(texts, st.just("z" * 5000)), max_size=3))
    span = evidence[0] if evidence else "gold"
    chunk = st.fixed_dictionaries(
        {"doc_id": maybe(ids)},
        optional={
            "text": maybe(chunk_texts(span)),
            "score": maybe(numbers),
            "metadata": maybe(st.dictionaries(texts, scalars, max_size=2)),
        },
    )
    fields = {"query_id": maybe(ids)}
    optional = {
        "query": maybe(texts),
        "relevance": maybe(st.dictionaries(ids, labels, max_size=3)),
        "relevant_ids": maybe(st.lists(ids, max_size=3)),
        "evidence": maybe(st.just(evidence)),
        "answer": maybe(texts),
        "latency_ms": maybe(st.dictionaries(texts, numbers, max_size=2)),
        "tokens": maybe(st.dictionaries(texts, counts, max_size=2)),
        "tags": maybe(st.dictionaries(texts, scalars, max_size=2)),
        "judge": maybe(st.dictionaries(texts, numbers, max_size=2)),
    }
    out = draw(st.fixed_dictionaries(fields, optional=optional))
    out["retrieved"] = draw(st.one_of(maybe(st.lists(chunk, max_size=4)), st.none()))
    return out


@st.composite
def native_file(draw: st.DrawFn) -> tuple[str, str]:
    queries = draw(st.lists(native_query(), min_size=0, max_size=6))
    header = draw(
        st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={
                    "name": maybe(texts),
                    "settings": maybe(
                        st.dictionaries(texts, st.one_of(scalars, st.lists(numeric, max_size=2)))
                    ),
                    "price_per_1k": maybe(numeric),
                    "prices_per_1k": maybe(
                        st.fixed_dictionaries(
                            {}, optional={"prompt": numeric, "completion": numeric}
                        )
                    ),
                },
            ),
        )
    )
    records = ([{"rageval_run": header}] if header is not None else []) + queries
    if draw(st.booleans()):
        return "run.json", "[" + ",\n".join(dumps(r) for r in records) + "]"
    return "run.jsonl", "\n".join(dumps(r) for r in records) + "\n"


@st.composite
def table_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    row = st.fixed_dictionaries(
        {"query_id": maybe(ids), "doc_id": maybe(ids)},
        optional={
            "rank": maybe(st.integers(-3, 5)),
            "score": maybe(numbers),
            "text": maybe(texts),
            "query": texts,
            "evidence": maybe(st.lists(texts, max_size=2).map(json.dumps)),
            "relevant_ids": st.one_of(st.lists(ids, max_size=2).map(json.dumps), texts),
            "relevance": maybe(st.dictionaries(ids, labels).map(json.dumps)),
            "latency_ms.retrieve": maybe(numbers),
            "tokens.prompt": maybe(st.one_of(numbers, counts)),
            "tag.topic": texts,
            "metadata.page": scalars,
            "judge.f": maybe(numbers),
        },
    )
    return draw(st.lists(row, min_size=0, max_size=8))


def csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow(
            [
                "" if r.get(c) is None else r[c] if isinstance(r.get(c), str) else dumps(r[c])
                for c in columns
            ]
        )
    return out.getvalue()


@st.composite
def table_file(draw: st.DrawFn) -> tuple[str, str]:
    rows = draw(table_rows())
    columns = sorted({c for r in rows for c in r} | {"query_id", "doc_id"})
    if draw(st.integers(0, 6)) == 0:
        columns.remove(draw(st.sampled_from(columns)))  # a required column missing, perhaps
    return "run.csv", csv_text(rows, columns)


@st.composite
def trec_files(draw: st.DrawFn) -> list[tuple[str, str]]:
    word = st.one_of(
        ids.filter(lambda s: s.strip() and not any(c.isspace() for c in s)),
        st.sampled_from(["Q0", "0", "nan", "inf", "-inf", "1e999", "-3", "x"]),
    )
    number = st.one_of(st.integers(-5, 10).map(str), numbers.map(repr), word)
    line = st.tuples(
        word,
        st.sampled_from(["Q0", "q0", "0", "X"]),
        word,
        number,
        number,
        st.sampled_from(["tag", "other"]),
    ).map(" ".join)
    lines = draw(
        st.lists(st.one_of(line, line, line, texts, st.just("# comment")), min_size=1, max_size=12)
    )
    files = [("run.trec", "\n".join(lines) + "\n")]
    if draw(st.booleans()):
        qrel = st.tuples(word, st.just("0"), word, st.one_of(labels.map(str), word)).map(" ".join)
        files.append(("qrels.txt", "\n".join(draw(st.lists(qrel, min_size=1, max_size=8))) + "\n"))
    return files


@st.composite
def tatrag_files(draw: st.DrawFn) -> list[tuple[str, str]]:
    questions = draw(st.lists(texts, min_size=1, max_size=4))
    gold = [
        draw(
            st.fixed_dictionaries(
                {
                    "query": maybe(st.just(q)),
                    "gold": maybe(
                        st.lists(
                            st.fixed_dictionaries(
                                {"content": maybe(texts)},
                                optional={
                                    "type": maybe(st.sampled_from(["TEXT", "FILE", "text", "?"]))
                                },
                            ),
                            max_size=3,
                        )
                    ),
                },
                optional={"answer": maybe(texts), "source": maybe(texts)},
            )
        )
        for q in questions
    ]
    doc = st.fixed_dictionaries(
        {"id": maybe(ids), "content": maybe(texts)},
        optional={
            "score": maybe(numbers),
            "metadata": maybe(st.dictionaries(texts, scalars, max_size=2)),
        },
    )
    retrieval = [
        draw(
            st.fixed_dictionaries(
                {
                    "query": maybe(st.sampled_from(questions)),
                    "documents": maybe(st.lists(doc, max_size=3)),
                }
            )
        )
        for _ in range(draw(st.integers(0, len(questions) + 1)))
    ]
    return [("gold.json", dumps(gold)), ("retrieval.json", dumps(retrieval))]


@st.composite
def qa_files(draw: st.DrawFn) -> list[tuple[str, str]]:
    n = draw(st.integers(1, 4))
    pairs = [
        draw(
            st.fixed_dictionaries(
                {"qa_pair_id": maybe(st.one_of(st.integers(-2, 5), ids)), "question": maybe(texts)},
                optional={
                    "answer": maybe(texts),
                    "context": maybe(st.one_of(texts, st.lists(texts, max_size=2))),
                    "source_document": maybe(texts),
                },
            )
        )
        for _ in range(n)
    ]
    doc = st.fixed_dictionaries(
        {"id": maybe(st.one_of(ids, st.integers()))},
        optional={"text": maybe(texts), "score": maybe(numbers), "page": scalars},
    )
    results = [
        draw(
            st.fixed_dictionaries(
                {
                    "qa_pair_id": maybe(st.one_of(st.integers(-2, 5), ids)),
                    "results": maybe(st.lists(doc, max_size=3)),
                },
                optional={
                    "latency_ms": maybe(st.dictionaries(texts, numbers, max_size=2)),
                    "tokens": maybe(st.dictionaries(texts, counts, max_size=2)),
                },
            )
        )
        for _ in range(draw(st.integers(0, n + 1)))
    ]
    return [
        ("pairs.jsonl", "\n".join(dumps(p) for p in pairs) + "\n"),
        ("results.json", dumps(results)),
    ]


@st.composite
def ragas_file(draw: st.DrawFn) -> tuple[str, str]:
    rows = draw(
        st.lists(
            st.fixed_dictionaries(
                {"user_input": maybe(texts)},
                optional={
                    "retrieved_contexts": maybe(st.lists(texts, max_size=3)),
                    "reference_contexts": maybe(
                        st.lists(st.one_of(texts, st.just("w" * 4000)), max_size=2)
                    ),
                    "response": maybe(texts),
                    "reference": maybe(texts),
                    "id": maybe(ids),
                    "retrieved_context_ids": maybe(st.lists(ids, max_size=3)),
                    "faithfulness": maybe(numbers),
                },
            ),
            min_size=0,
            max_size=5,
        )
    )
    if draw(st.booleans()):
        columns = sorted({c for r in rows for c in r} | {"user_input"})
        return "rows.csv", csv_text(rows, columns)
    return "rows.jsonl", "\n".join(dumps(r) for r in rows) + "\n"


def score_map(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> str:
    """{qid: {doc_id: number}} (ranx and BEIR), sometimes with a wrong value in place."""
    docs = st.one_of(st.dictionaries(ids, values, max_size=4), anything)
    return dumps(draw(st.dictionaries(ids, docs, max_size=4)))


@st.composite
def ranx_files(draw: st.DrawFn) -> list[tuple[str, str]]:
    files = [("run.json", score_map(draw, st.one_of(numbers, numbers, anything)))]
    if draw(st.booleans()):
        files.append(("qrels.json", score_map(draw, st.one_of(labels, labels, anything))))
    return files


@st.composite
def beir_files(draw: st.DrawFn) -> list[tuple[str, str]]:
    entry = st.fixed_dictionaries(
        {"_id": maybe(ids)}, optional={"title": maybe(texts), "text": maybe(texts)}
    )
    corpus = "\n".join(dumps(e) for e in draw(st.lists(entry, max_size=5))) + "\n"
    queries = "\n".join(dumps(e) for e in draw(st.lists(entry, max_size=4))) + "\n"
    cell = st.one_of(ids, labels.map(str), texts).map(lambda t: t.replace("\t", " "))
    rows = draw(st.lists(st.tuples(cell, cell, cell).map("\t".join), max_size=6))
    run = score_map(draw, st.one_of(numbers, numbers, anything))
    files = [("results.json", run), ("qrels.tsv", "query-id\tcorpus-id\tscore\n" + "\n".join(rows))]
    if draw(st.booleans()):
        files += [("corpus.jsonl", corpus), ("queries.jsonl", queries)]
    return files


#: where OpenInference's flat attributes put a document: positions, and what is not one
DOC_INDEXES = ["0", "0", "1", "1", "2", "-1", "7", "99999999999999999999", "x", "01"]
#: span times: ISO text at the edges of what can be, and numbers (ms, or ns as OTLP gives them)
SPAN_TIMES = [
    "2024-05-01T10:00:00.000000+00:00",
    "2024-05-01T10:00:00.250000+00:00",
    "1900-01-01T00:00:00",
    "9999-12-31T23:59:59.999999",
    "0001-01-01T00:00:00",
    "1714557600000000000",
    "9" * 40,
]


def flat_documents(draw: st.DrawFn) -> dict[str, Any]:
    """retrieval.documents as OpenTelemetry's flat keys, at drawn (sometimes impossible) indexes."""
    out: dict[str, Any] = {}
    for index in draw(st.lists(st.sampled_from(DOC_INDEXES), max_size=4)):
        out[f"retrieval.documents.{index}.document.id"] = draw(maybe(ids))
        if draw(st.booleans()):
            out[f"retrieval.documents.{index}.document.score"] = draw(numeric)
    return out


@st.composite
def openinference_file(draw: st.DrawFn) -> tuple[str, str]:
    doc = st.fixed_dictionaries(
        {"document.id": maybe(ids)},
        optional={"document.content": maybe(texts), "document.score": maybe(numeric)},
    )
    kind = st.sampled_from(["RETRIEVER", "RERANKER", "LLM", "CHAIN", "retriever"])
    attributes = st.fixed_dictionaries(
        {"openinference.span.kind": st.one_of(kind, kind, anything)},
        optional={
            "input.value": maybe(texts),
            "retrieval.documents": st.one_of(st.lists(doc, max_size=3), anything),
            "reranker.output_documents": st.one_of(st.lists(doc, max_size=3), anything),
            "llm.token_count.prompt": maybe(st.one_of(counts, numeric)),
            "metadata": st.one_of(st.just('{"query_id": "q1"}'), anything),
        },
    )
    span = st.fixed_dictionaries(
        {
            "name": texts,
            "context": st.one_of(st.fixed_dictionaries({"trace_id": maybe(ids)}), anything),
            "attributes": st.one_of(attributes, attributes, anything),
        },
        optional={
            "start_time": st.one_of(st.sampled_from(SPAN_TIMES), numeric, anything),
            "end_time": st.one_of(st.sampled_from(SPAN_TIMES), numeric, anything),
            "startTimeUnixNano": st.one_of(st.sampled_from(SPAN_TIMES), numeric),
            "endTimeUnixNano": st.one_of(st.sampled_from(SPAN_TIMES), numeric),
        },
    )
    spans = draw(st.lists(span, min_size=1, max_size=6))
    for s in spans:  # documents as flat keys too, at any index
        if isinstance(s.get("attributes"), dict) and draw(st.booleans()):
            s["attributes"].update(flat_documents(draw))
    if draw(st.booleans()):
        return "spans.json", dumps(spans)
    return "spans.jsonl", "\n".join(dumps(s) for s in spans) + "\n"


@st.composite
def deepeval_file(draw: st.DrawFn) -> tuple[str, str]:
    case = st.fixed_dictionaries(
        {"input": maybe(texts), "actual_output": maybe(texts)},
        optional={
            "expected_output": maybe(texts),
            "retrieval_context": st.one_of(st.lists(texts, max_size=3), anything),
            "context": st.one_of(st.lists(texts, max_size=2), anything),
            "name": maybe(ids),
            "metricsData": st.one_of(st.lists(deepeval_metric, max_size=3), anything),
        },
    )
    cases = draw(st.lists(case, min_size=1, max_size=5))
    if draw(st.booleans()):  # a saved test run: the cases under test_cases
        return "run.json", dumps({"test_cases": cases})
    return "cases.json", dumps(cases)


#: one entry of a DeepEval test run's metricsData: a name (or none) and a score (or anything)
deepeval_metric = st.fixed_dictionaries(
    {"name": st.one_of(texts, texts, st.none(), anything), "score": numeric},
    optional={"error": st.one_of(st.none(), texts), "threshold": numeric},
)


@st.composite
def llamaindex_file(draw: st.DrawFn) -> tuple[str, str]:
    result = st.fixed_dictionaries(
        {
            "query": maybe(texts),
            "expected_ids": st.one_of(st.lists(ids, max_size=3), anything),
            "retrieved_ids": st.one_of(st.lists(ids, max_size=4), anything),
        },
        optional={
            "expected_texts": st.one_of(st.lists(texts, max_size=2), anything),
            "retrieved_texts": st.one_of(st.lists(texts, max_size=4), anything),
            "metric_dict": st.one_of(
                st.dictionaries(
                    texts,
                    st.one_of(
                        st.fixed_dictionaries({"score": numeric}, optional={"metadata": anything}),
                        numeric,  # a bare number: not a RetrievalMetricResult
                        anything,
                    ),
                    max_size=3,
                ),
                anything,
            ),
        },
    )
    rows = draw(st.lists(result, min_size=1, max_size=5))
    return "results.jsonl", "\n".join(dumps(r) for r in rows) + "\n"


# --- the check -----------------------------------------------------------------------------------


@contextmanager
def alarm(seconds: int) -> Iterator[None]:
    """A hang becomes a failure (the tests run in the main thread)."""

    def ring(signum: int, frame: Any) -> None:
        raise TimeoutError(f"a case took more than {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    with Store(":memory:") as s:
        yield s


def check_import(store: Store, paths: list[Path], fmt: str | None, reader: str) -> str:
    """Import paths; assert a whole import or a clean refusal; returns which it was."""
    CASES[reader] += 1
    before = store.table_counts()
    with alarm(CASE_TIMEOUT_S):
        out = import_paths(store, paths, fmt=fmt)
    given = {display_path(p) for p in paths} | {display_path(p) + ".run.json" for p in paths}
    for problem in out.problems:
        assert isinstance(problem, Problem)
        assert problem.file in given, problem
        assert problem.line >= 0 and problem.field and problem.problem, problem
        assert PROBLEM_LINE.match(str(problem)), str(problem)
    stored = out.imported + out.existing
    if out.failed:
        assert not stored, "one primary file: all or nothing"
        assert any(p.severity == "error" for p in out.problems), out.problems
        assert store.table_counts() == before, "a refused import changed the store"
        OUTCOMES["refused"] += 1
        return "refused"
    # read the files again and compare with what the store gives back: every query, whole
    # (an OpenInference export is one run per stage, in the order the reader gives them)
    log = ProblemLog()
    parsed_runs = read_inputs(paths, fmt, log)
    assert len(stored) == len(parsed_runs) and (len(stored) == 1 or reader == "openinference")
    for run, parsed in zip(stored, parsed_runs, strict=True):
        expected = list(parsed.queries)
        log.raise_if_errors()
        got = list(store.iter_queries(run.run_id))
        assert got == expected
        json.dumps(run.settings, allow_nan=False)  # run facts hold no NaN: --json stays JSON
        assert run.n_queries == len(expected) == len({q.query_id for q in expected})
        assert run.n_chunks == sum(len(q.retrieved or ()) for q in expected)
        with store._cursor() as cur:
            n = cur.execute("SELECT count(*) FROM chunks WHERE run_id = ?", [run.run_id]).fetchall()
            assert n[0][0] == run.n_chunks
    for run in out.imported:
        store.delete(run.run_id)
    assert store.table_counts() == before
    OUTCOMES["imported"] += 1
    return "imported"


def write(tmp: Path, files: list[tuple[str, bytes]]) -> list[Path]:
    paths = []
    for name, data in files:
        path = tmp / name
        path.write_bytes(data)
        paths.append(path)
    return paths


def run_case(
    store: Store, tmp_factory: Any, reader: str, files: list[tuple[str, bytes]], force: bool
) -> None:
    tmp = tmp_factory.mktemp(reader)
    paths = write(tmp, files)
    check_import(store, paths, reader if force else None, reader)


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
        HealthCheck.large_base_example,
    ],
)


def fuzz(reader: str, make: Callable[[st.DrawFn], list[tuple[str, str]]]) -> Callable[..., None]:
    @pytest.mark.slow
    @FUZZ
    @given(data=st.data(), force=st.booleans())
    def test(store: Store, tmp_path_factory: Any, data: st.DataObject, force: bool) -> None:
        files = make(data.draw)
        damage_one = data.draw(st.integers(0, len(files) - 1))
        raw = [
            (name, data.draw(damaged(text)) if i == damage_one else encoded(text))
            for i, (name, text) in enumerate(files)
        ]
        run_case(store, tmp_path_factory, reader, raw, force)

    return test


#: how each reader's files are made, for the CLI test
MAKERS: dict[str, Callable[[st.DrawFn], list[tuple[str, str]]]] = {
    "native": lambda draw: [draw(native_file())],
    "table": lambda draw: [draw(table_file())],
    "trec": lambda draw: draw(trec_files()),
    "tatrag": lambda draw: draw(tatrag_files()),
    "qa_pairs": lambda draw: draw(qa_files()),
    "ragas": lambda draw: [draw(ragas_file())],
    "ranx": lambda draw: draw(ranx_files()),
    "beir": lambda draw: draw(beir_files()),
    "openinference": lambda draw: [draw(openinference_file())],
    "deepeval": lambda draw: [draw(deepeval_file())],
    "llamaindex": lambda draw: [draw(llamaindex_file())],
}


test_native = fuzz("native", MAKERS["native"])
test_table = fuzz("table", MAKERS["table"])
test_trec = fuzz("trec", MAKERS["trec"])
test_tatrag = fuzz("tatrag", MAKERS["tatrag"])
test_qa_pairs = fuzz("qa_pairs", MAKERS["qa_pairs"])
test_ragas = fuzz("ragas", MAKERS["ragas"])
test_ranx = fuzz("ranx", MAKERS["ranx"])
test_beir = fuzz("beir", MAKERS["beir"])
test_openinference = fuzz("openinference", MAKERS["openinference"])
test_deepeval = fuzz("deepeval", MAKERS["deepeval"])
test_llamaindex = fuzz("llamaindex", MAKERS["llamaindex"])


@pytest.fixture(scope="module")
def cli_db(tmp_path_factory: Any) -> Path:
    """A store file for the CLI, holding one run from the start (so unchanged means something)."""
    return bystander_store(tmp_path_factory.mktemp("cli"))


@pytest.mark.slow
@settings(FUZZ, max_examples=max(EXAMPLES // 2, 1))
@given(data=st.data())
def test_cli_imports_or_refuses_any_file(
    cli_db: Path, tmp_path_factory: Any, data: st.DataObject
) -> None:
    """`rageval import FILES`, in process: exit 0, or exit 2 with every problem at `path:line:`,
    no traceback and the store unchanged; any uncaught exception fails the case."""
    reader = data.draw(st.sampled_from(sorted(MAKERS)))
    files = MAKERS[reader](data.draw)
    damage_one = data.draw(st.integers(0, len(files) - 1))
    raw = [
        (name, data.draw(damaged(text)) if i == damage_one else encoded(text))
        for i, (name, text) in enumerate(files)
    ]
    paths = write(tmp_path_factory.mktemp(f"cli-{reader}"), raw)
    forced = ["--format", reader] if data.draw(st.booleans()) else []
    CASES[f"cli ({reader})"] += 1
    before = db_counts(cli_db)
    with alarm(CASE_TIMEOUT_S):
        done = rageval("import", *map(str, paths), *forced, db=cli_db)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr
    assert done.returncode in (0, 2), (done.returncode, done.stderr)
    if done.returncode == 0:
        OUTCOMES["cli imported"] += 1
        return
    OUTCOMES["cli refused"] += 1
    assert db_counts(cli_db) == before, "a refused import changed the store"
    given_files = tuple(display_path(p) for p in paths)
    starts = tuple(f"{name}:" for name in given_files) + tuple(
        f"{name}.run.json:" for name in given_files
    )
    lines = done.stderr.splitlines()
    assert lines and lines[-1].endswith(": import failed, nothing was stored"), done.stderr
    placed = [line for line in lines if line.startswith(starts)]
    assert placed, done.stderr
    for line in placed:
        if line.endswith("import failed, nothing was stored"):
            continue
        name = next(s for s in starts if line.startswith(s))
        assert re.match(r"\d+: \S", line[len(name) :]), line  # path:line: field: problem
    # a line of its own that is no problem can only be the rest of a problem whose user text
    # holds a line break (a key "a\nb" in a field name): never the first line
    assert lines[0] in placed, done.stderr


@pytest.mark.slow
@FUZZ
@given(rows=table_rows(), data=st.data())
def test_parquet(
    store: Store, tmp_path_factory: Any, rows: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Parquet: columns typed as the values come (mixed types fall back to text)."""
    columns = sorted({c for r in rows for c in r} | {"query_id", "doc_id"})
    arrays = {}
    for c in columns:
        values = [r.get(c) for r in rows]
        kinds = {type(v) for v in values if v is not None}
        small = (
            all(v is None or abs(v) < 10**17 for v in values) if kinds <= {int, float} else False
        )
        if kinds and small and data.draw(st.integers(0, 3)) == 0:  # as a database writes them
            arrays[c] = pa.array(
                [None if v is None else Decimal(v).quantize(Decimal("1e-6")) for v in values],
                type=pa.decimal128(24, 6),
            )
        elif kinds <= {int} and all(v is None or -(2**63) <= v < 2**63 for v in values):
            arrays[c] = pa.array(values, type=pa.int64())
        elif kinds <= {int, float}:  # an integer beyond a float is Infinity, as a writer would
            arrays[c] = pa.array(
                [
                    None
                    if v is None
                    else float(v)
                    if abs(v) < 2**1023
                    else math.inf
                    if v > 0
                    else -math.inf
                    for v in values
                ],
                type=pa.float64(),
            )
        else:  # Parquet text is UTF-8: a lone surrogate becomes U+FFFD (invalid bytes: see
            # test_hostile_inputs.py, which patches them in)
            arrays[c] = pa.array(
                [
                    None
                    if v is None
                    else encoded(v if isinstance(v, str) else dumps(v)).decode("utf-8", "replace")
                    for v in values
                ],
                type=pa.string(),
            )
    tmp = tmp_path_factory.mktemp("parquet")
    path = tmp / "run.parquet"
    pq.write_table(pa.table(arrays), path)
    if data.draw(st.integers(0, 3)) == 0:  # a damaged file: truncated, or a flipped byte
        raw = path.read_bytes()
        cut = data.draw(st.integers(0, len(raw) - 1))
        path.write_bytes(
            raw[:cut] if data.draw(st.booleans()) else raw[:cut] + b"\x00" + raw[cut + 1 :]
        )
    check_import(store, [path], data.draw(st.sampled_from([None, "table"])), "table (parquet)")


# --- the named cases, each once ------------------------------------------------------------------


def imported_or_refused(
    store: Store, tmp: Path, name: str, data: bytes, fmt: str | None = None, reader: str = "named"
) -> tuple[str, list[str]]:
    path = tmp / name
    path.write_bytes(data)
    log_before = OUTCOMES["refused"]
    outcome = check_import(store, [path], fmt, reader)
    del log_before
    return outcome, []


def native_line(qid: str, chunks: list[dict[str, Any]], **more: Any) -> str:
    return json.dumps({"query_id": qid, "retrieved": chunks, **more}, ensure_ascii=False)


@pytest.mark.slow
def test_one_query_with_100k_chunks(store: Store, tmp_path: Path) -> None:
    chunks = [{"doc_id": f"d{i}", "score": 1.0 - i / 200_000} for i in range(100_000)]
    line = native_line("q1", chunks, relevance={"d5": 1, "d99999": 2})
    assert imported_or_refused(store, tmp_path, "wide.jsonl", line.encode())[0] == "imported"
    trec = "".join(f"q1 Q0 d{i} {i + 1} {1.0 - i / 200_000} t\n" for i in range(100_000))
    assert imported_or_refused(store, tmp_path, "wide.trec", trec.encode())[0] == "imported"


def test_ids_that_differ_only_by_normalisation_are_two_queries(
    store: Store, tmp_path: Path
) -> None:
    """NFC and NFD spellings of one id are kept apart, as written (never silently merged)."""
    text = native_line(NFC, [{"doc_id": NFC}]) + "\n" + native_line(NFD, [{"doc_id": NFD}]) + "\n"
    assert imported_or_refused(store, tmp_path, "nf.jsonl", text.encode())[0] == "imported"


def test_evidence_longer_than_every_chunk_and_empty_evidence(store: Store, tmp_path: Path) -> None:
    long = native_line("q1", [{"doc_id": "d1", "text": "short"}], evidence=["short " * 2000])
    assert imported_or_refused(store, tmp_path, "long.jsonl", long.encode())[0] == "imported"
    empty = native_line("q1", [{"doc_id": "d1", "text": "short"}], evidence=[""])
    path = tmp_path / "empty_ev.jsonl"
    path.write_text(empty)
    out = import_paths(store, [path])
    assert out.failed and "evidence[0]" in str(out.problems[0])


def test_deep_nesting_is_a_json_error_not_a_crash(store: Store, tmp_path: Path) -> None:
    deep = '{"query_id": "q1", "retrieved": [], "tags": ' + "[" * 200_000 + "]" * 200_000 + "}\n"
    for name in ("deep.jsonl", "deep.json"):
        data = deep if name.endswith("l") else "[" + deep + "]"
        path = tmp_path / name
        path.write_text(data)
        out = import_paths(store, [path])
        assert out.failed and out.problems[0].line == 1, out.problems


def test_a_huge_line_is_read_whole(store: Store, tmp_path: Path) -> None:
    line = native_line("q1", [{"doc_id": "d1", "text": "a" * 30_000_000}])
    assert imported_or_refused(store, tmp_path, "huge.jsonl", line.encode())[0] == "imported"


def test_bom_crlf_and_nan_in_every_text_format(store: Store, tmp_path: Path) -> None:
    text = "\ufeff" + native_line("q1", [{"doc_id": "d1", "score": 1.0}]) + "\r\n"
    assert imported_or_refused(store, tmp_path, "bom.jsonl", text.encode())[0] == "imported"
    nan = native_line("q1", [{"doc_id": "d1"}]).replace('"d1"}', '"d1", "score": NaN}')
    path = tmp_path / "nan.jsonl"
    path.write_text(nan)
    out = import_paths(store, [path])
    assert out.failed and str(out.problems[0]).endswith(
        "retrieved[0].score: expected a finite number, got NaN"
    )


@pytest.fixture(scope="module", autouse=True)
def report_cases() -> Iterator[None]:
    """Print how many cases ran (`pytest -s`; docs/reliability.md quotes the figure)."""
    yield
    print(f"\nfuzz cases: {sum(CASES.values())} {dict(CASES)}; outcomes {dict(OUTCOMES)}")
