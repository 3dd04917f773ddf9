"""Field validators shared by the native and table readers: each checks one optional field.

A Check reports problems at one place (file, line) to a ProblemLog; the parse_* functions
return the field's value with every bad entry reported and left out, so one bad tag never
hides the rest of a query.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from rageval_core.errors import ProblemLog
from rageval_core.formats.base import MAX_MEASURE, finite_number, too_large, type_name
from rageval_core.formats.safejson import MAX_COUNT, MAX_LABEL, MIN_LABEL

#: the keys of a native query record and of a retrieved chunk (native.py and native_duckdb.py)
QUERY_KEYS = frozenset(
    {
        "query_id",
        "query",
        "retrieved",
        "relevant_ids",
        "relevance",
        "evidence",
        "answer",
        "reference_answer",
        "latency_ms",
        "tokens",
        "tags",
        "judge",
        "labels",
    }
)
CHUNK_KEYS = frozenset({"doc_id", "text", "score", "metadata"})


T = TypeVar("T")


@dataclasses.dataclass(slots=True)
class Judgements:
    """qid -> {doc_id: label}, each query with the line where it is first judged (a qrels
    file, TREC's or BEIR's)."""

    file: str
    labels: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    first_line: dict[str, int] = dataclasses.field(default_factory=dict)
    #: (qid, doc_id) -> the line that judged it
    lines: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict, repr=False)

    def add(self, qid: str, doc_id: str, label: float, line: int) -> int | None:
        """Keep the label of doc_id for qid read on line; when the pair was judged before, keep
        nothing and return the earlier line (a duplicate judgement)."""
        first = self.lines.get((qid, doc_id))
        if first is None:
            self.lines[qid, doc_id] = line
            if qid not in self.labels:
                self.labels[qid] = {}
                self.first_line[qid] = line
            self.labels[qid][doc_id] = label
        return first


class Check:
    """Reports problems at one place (file, line) and remembers whether any was an error."""

    __slots__ = ("file", "line", "log", "ok")

    def __init__(self, file: str, line: int, log: ProblemLog) -> None:
        self.file, self.line, self.log, self.ok = file, line, log, True

    def error(self, field: str, problem: str) -> None:
        self.log.error(self.file, self.line, field, problem)
        self.ok = False

    def warn_once(self, field: str, problem: str, warned: set[str]) -> None:
        # one warning per key per file: a misnamed key on every line would fill the log
        if field not in warned:
            warned.add(field)
            self.log.warn(self.file, self.line, field, problem)


def optional_text(value: Any, field: str, check: Check) -> str | None:
    if value is None or isinstance(value, str):
        return value
    check.error(field, f"expected a string, got {type_name(value)}")
    return None


def label_problem(label: float) -> str | None:
    """Why a relevance label (an int, or a real grade such as 0.3) cannot be kept, or None."""
    if not isinstance(label, int) and not math.isfinite(label):  # an int is finite (and may
        return f"expected a finite number, got {label!r}"  # be too large for isfinite's float)
    if not MIN_LABEL <= label <= MAX_LABEL:  # the store keeps labels of 32-bit range
        return f"label out of range ({MIN_LABEL} to {MAX_LABEL}), got {shown_value(label)}"
    if label != 0 and abs(label) < sys.float_info.min:  # hashed apart from integers (rows.py)
        return f"label too close to 0 (below {sys.float_info.min:g}), got {label!r}"
    return None


def parse_relevance(ids: Any, labels: Any, check: Check) -> dict[str, float] | None:
    """relevant_ids (label 1 each) merged with relevance (which wins); None when neither given.
    A label is an integer or a real grade (0.3), kept as given."""
    if ids is None and labels is None:
        return None
    out: dict[str, float] = {}
    if ids is not None:
        if not isinstance(ids, list):
            check.error("relevant_ids", f"expected an array of strings, got {type_name(ids)}")
        else:
            for i, doc_id in enumerate(ids):
                if not isinstance(doc_id, str) or not doc_id:
                    check.error(
                        f"relevant_ids[{i}]",
                        f"expected a non-empty string, got {shown_value(doc_id)}",
                    )
                else:
                    out[doc_id] = 1
    if labels is not None:
        if not isinstance(labels, dict):
            check.error("relevance", f"expected an object doc_id -> label, got {type_name(labels)}")
        else:
            for doc_id, label in labels.items():
                if not doc_id:
                    check.error("relevance", "empty doc_id")
                elif isinstance(label, bool) or not isinstance(label, (int, float)):
                    check.error(
                        f"relevance.{doc_id}",
                        f"expected a number label, got {shown_value(label)}",
                    )
                elif (problem := label_problem(label)) is not None:
                    check.error(f"relevance.{doc_id}", problem)
                else:
                    out[doc_id] = label
    return out


def parse_evidence(value: Any, field: str, check: Check) -> tuple[str, ...]:
    """A list of non-empty strings; a plain string is one span."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        check.error(field, f"expected an array of strings, got {type_name(value)}")
        return ()
    spans = []
    for i, span in enumerate(value):
        if not isinstance(span, str):
            check.error(f"{field}[{i}]", f"expected a string, got {type_name(span)}")
        elif not span.strip():
            check.error(f"{field}[{i}]", "empty string")
        else:
            spans.append(span)
    return tuple(spans)


def parse_numbers(value: Any, field: str, check: Check, *, non_negative: bool) -> dict[str, float]:
    """An object name -> finite number (>= 0 when non_negative)."""
    return _parse_object(value, field, check, _non_negative if non_negative else _finite)


def parse_counts(value: Any, field: str, check: Check) -> dict[str, int]:
    """An object name -> integer >= 0."""
    return _parse_object(value, field, check, _count)


def parse_judge(value: Any, field: str, check: Check) -> dict[str, float | str]:
    """An object name -> finite number (a score) or non-empty string (a categorical label)."""
    return _parse_object(value, field, check, _score_or_label)


def parse_labels(value: Any, field: str, check: Check) -> dict[str, str]:
    """An object name -> non-empty string: a person's label (native `labels`)."""
    return _parse_object(value, field, check, _label)


def parse_tags(value: Any, field: str, check: Check) -> dict[str, str]:
    """An object key -> string; numbers and booleans become their JSON spelling."""
    return _parse_object(value, field, check, _tag)


class _Refused(Exception):
    """An object's value that a converter refuses; the message is the problem."""


def _parse_object(
    value: Any, field: str, check: Check, convert: Callable[[Any], T]
) -> dict[str, T]:
    """An object key -> convert(its value); a value refused is reported at field.key, left out."""
    out: dict[str, T] = {}
    if value is None:
        return out
    if not isinstance(value, dict):
        check.error(field, f"expected an object, got {type_name(value)}")
        return out
    for key, item in value.items():
        try:
            out[key] = convert(item)
        except _Refused as e:
            check.error(f"{field}.{key}", str(e))
    return out


def _finite(item: Any) -> float:
    number = finite_number(item)
    if number is None:
        raise _Refused(f"expected a finite number, got {shown_value(item)}")
    return number


def _non_negative(item: Any) -> float:
    number = finite_number(item)
    if number is None or number < 0:
        raise _Refused(f"expected a finite number >= 0, got {shown_value(item)}")
    if number > MAX_MEASURE:  # the only numbers kept this way are latencies
        raise _Refused(too_large(number))
    return number


def _count(item: Any) -> int:
    if isinstance(item, bool) or not isinstance(item, int) or item < 0:
        raise _Refused(f"expected an integer >= 0, got {shown_value(item)}")
    if item > MAX_COUNT:  # the store keeps 64-bit counts
        raise _Refused(f"expected an integer from 0 to {MAX_COUNT}, got {item}")
    return item


def _label(item: Any) -> str:
    if isinstance(item, str) and item.strip():
        return item.strip()
    if isinstance(item, bool):  # a yes/no label
        return json.dumps(item)
    raise _Refused(f"expected a non-empty string, got {shown_value(item)}")


def _score_or_label(item: Any) -> float | str:
    if isinstance(item, str) and item.strip():
        return item.strip()
    number = finite_number(item)
    if number is None:
        raise _Refused(
            f"expected a finite number or a non-empty label string, got {shown_value(item)}"
        )
    return number


def _tag(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, (bool, int)) or finite_number(item) is not None:
        return json.dumps(item)
    raise _Refused(f"expected a string, got {shown_value(item)}")


def quoted(text: str) -> str:
    """text in double quotes, as JSON spells it."""
    return json.dumps(text, ensure_ascii=False)


def shown_value(value: Any) -> str:
    """A value as a problem message quotes it: short, and JSON-spelled for non-finite numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (dict, list)) or value is None:
        return type_name(value)
    text = json.dumps(value, ensure_ascii=False, default=str)  # a Decimal, a date: its text
    return text if len(text) <= 40 else text[:37] + "..."
