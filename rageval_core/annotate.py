"""What a person adds to a stored run later: a date, prices, run tags (checked here, stored by
rageval_core.store.runfacts), qrels, and notes on its queries; and the ground truth made in
rageval, store-wide (grades and added gold spans, rageval_core.store.ground_truth). The dashboard's Runs page and
drilldown and `rageval attach` call these; nothing here re-scores a run."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from rageval_core.errors import ProblemLog, UsageError
from rageval_core.formats.base import MAX_MEASURE, too_large
from rageval_core.model import ParsedRun, Query
from rageval_core.store import RunRecord, RunRef, Store
from rageval_core.store.ground_truth import (
    AddedSpan,
    GradeRow,
    add_span,
    added_spans,
    grade_rows,
    grades_signature,
    remove_span,
    set_grade,
)
from rageval_core.store.runfacts import (
    RUN_TAGS,
    query_notes,
    set_query_note,
    stored_labels,
    take_over,
    update_run_facts,
)

__all__ = [
    "RUN_TAGS",
    "AddedSpan",
    "GradeRow",
    "add_span",
    "added_spans",
    "attach_facts",
    "attach_qrels",
    "check_facts",
    "grade_rows",
    "grades_signature",
    "query_notes",
    "remove_span",
    "run_tags",
    "set_grade",
    "set_query_note",
]


def run_tags(record: RunRecord) -> dict[str, str]:
    """The run's own tags ({"experiment": "chunking"}) from its run settings; {} when none."""
    tags = record.settings.get(RUN_TAGS)
    return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {}


def attach_facts(
    store: Store,
    ref: RunRef,
    *,
    created_at: str | None = None,
    prices: tuple[float | None, float | None] | None = None,
    tags: dict[str, str] | None = None,
) -> RunRecord:
    """Check and store a run's date (ISO 8601), prices (USD per 1K, >= 0) and tags.

    UsageError names the fact and its problem; nothing is stored then.
    """
    created_at = check_facts(created_at=created_at, prices=prices, tags=tags)
    return update_run_facts(store, ref, created_at=created_at, prices=prices, tags=tags)


def check_facts(
    *,
    created_at: str | None = None,
    prices: tuple[float | None, float | None] | None = None,
    tags: dict[str, str] | None = None,
) -> str | None:
    """UsageError naming the first fact that is not one (a date that is not ISO 8601, a price
    that is negative or not finite, a tag without a name); the date stripped when it is fine."""
    if created_at is not None:
        created_at = created_at.strip()
        try:
            datetime.fromisoformat(created_at.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"created_at: {created_at!r} is not an ISO 8601 date (e.g. 2026-05-01 or "
                "2026-05-01T09:30:00Z)"
            ) from None
    if prices is not None:
        for label, value in zip(("prompt", "completion"), prices, strict=True):
            if value is not None and (not math.isfinite(value) or value < 0):
                raise UsageError(f"{label} price: {value!r} is not a price (USD per 1K, >= 0)")
            if value is not None and value > MAX_MEASURE:
                raise UsageError(f"{label} price: {too_large(value)}")
    if tags:
        for key in tags:
            if not key.strip():
                raise UsageError("tags: a tag needs a name")
    return created_at


def attach_qrels(store: Store, ref: RunRef, path: Path, shown: str | None = None) -> RunRecord:
    """Give a stored run the relevance labels of a qrels file (TREC, BEIR's TSV or ranx's JSON),
    in place of any it had: the run then holds what importing it together with that file holds.

    Every stored query keeps its place and its chunks, evidence and answers; its relevance
    becomes the file's labels for it (none when the file does not judge it), and queries the file
    judges that the run does not hold are added as judged-but-absent (trec_eval's -c counts
    them). The run is stored again under its own name with its scores, labels, judge results and
    notes moved over, so nothing is re-scored and a cache keyed on the old run id never serves
    it. A malformed file raises InputError (`file:line: field: problem`) and changes nothing.
    """
    from rageval_core.formats.scored import read_qrels

    log = ProblemLog()
    judged = read_qrels(path, log)
    log.raise_if_errors()
    assert judged is not None
    record = store.run(ref)
    labels = judged.labels
    if stored_labels(store, record.run_id) == labels:
        return record  # the labels it has (its content hash may predate facts attached since)
    held: set[str] = set()

    def queries() -> Iterator[Query]:
        for q in store.iter_queries(record.run_id):
            held.add(q.query_id)
            yield dataclasses.replace(q, relevance=labels.get(q.query_id))
        for qid, rels in labels.items():
            if qid not in held:
                yield Query(query_id=qid, retrieved=None, relevance=rels)

    parsed = ParsedRun(
        info=record.info,
        queries=queries(),
        format=record.format,
        sources=(*record.sources, shown or judged.file),
        expected_queries=record.n_queries,
    )
    result = store.import_run(parsed, log)
    if not result.created:
        raise UsageError(
            f"{record.name} with these qrels is the run already stored as {result.run.name!r}"
        )
    return take_over(store, record.run_id, result.run.run_id)


def attach_grades(store: Store, ref: RunRef, path: Path, annotator: str) -> tuple[int, int]:
    """Keep the grades of a qrels file made elsewhere (TREC, BEIR's TSV or ranx's JSON) as
    annotator's (source people; ground_truth: store-wide, by query and document id), replacing
    their earlier grade of each document. Returns (grades kept, of them on ref's queries). A
    malformed file raises InputError (`file:line: field: problem`), a file that judges none of
    the run's queries UsageError: either way nothing is kept."""
    from rageval_core.formats.scored import read_qrels
    from rageval_core.store.ground_truth import PEOPLE, run_qrels, set_grades

    if not annotator or not annotator.strip():
        raise UsageError("--annotator must not be empty")
    log = ProblemLog()
    judged = read_qrels(path, log)
    log.raise_if_errors()
    assert judged is not None
    record = store.run(ref)
    ids, _ = run_qrels(store, record.run_id)
    held = set(ids)
    rows = [(q, d, float(g)) for q, docs in judged.labels.items() for d, g in docs.items()]
    on_run = sum(1 for q, _, _ in rows if q in held)
    if not on_run:
        raise UsageError(
            f"{judged.file}: none of its {len(judged.labels)} queries is a query of run "
            f"{record.name}: nothing kept"
        )
    set_grades(store, rows, annotator=annotator, source=PEOPLE)
    return len(rows), on_run
