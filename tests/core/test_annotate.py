"""Facts and notes added to a stored run after its import (rageval_core.annotate)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rageval_core.annotate import attach_facts, query_notes, run_tags, set_query_note
from rageval_core.errors import ProblemLog, UsageError
from rageval_core.formats import read_inputs
from rageval_core.store import Store
from rageval_core.store.schema import DERIVED_TABLES, LATEST_VERSION

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "tests" / "data" / "good" / "native_full.jsonl"


@pytest.fixture()
def store() -> Iterator[Store]:
    s = Store(":memory:")
    log = ProblemLog()
    s.import_run(read_inputs([RUN], None, log)[0], log)
    yield s
    s.close()


def test_facts_are_stored_and_read_back(store: Store) -> None:
    run = store.runs()[0]
    out = attach_facts(
        store, run.name, created_at="2026-05-01", prices=(0.5, 1.5), tags={"experiment": "k"}
    )
    again = store.run(run.run_id)
    assert out == again
    assert again.created_at == "2026-05-01"
    assert (again.price_prompt_per_1k, again.price_completion_per_1k) == (0.5, 1.5)
    assert run_tags(again) == {"experiment": "k"}
    # the run's other settings are kept; an empty tag value removes that tag
    assert {k: v for k, v in again.settings.items() if k != "tags"} == {
        k: v for k, v in run.settings.items() if k != "tags"
    }
    attach_facts(store, run.name, tags={"experiment": "", "team": "a"})
    assert run_tags(store.run(run.run_id)) == {"team": "a"}
    # one price given: the other is kept, not cleared
    attach_facts(store, run.name, prices=(None, 2.5))
    again = store.run(run.run_id)
    assert (again.price_prompt_per_1k, again.price_completion_per_1k) == (0.5, 2.5)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"created_at": "yesterday"}, "created_at"),
        ({"prices": (-1.0, None)}, "prompt price"),
        ({"prices": (None, float("nan"))}, "completion price"),
        ({"tags": {" ": "x"}}, "tags"),
    ],
)
def test_bad_facts_are_refused_and_nothing_stored(
    store: Store, kwargs: dict[str, object], field: str
) -> None:
    before = store.runs()[0]
    with pytest.raises(UsageError, match=field):
        attach_facts(store, before.name, **kwargs)  # type: ignore[arg-type]
    assert store.runs()[0] == before


def test_notes_are_kept_replaced_and_removed(store: Store) -> None:
    run = store.runs()[0]
    hostile = "'); DROP TABLE runs; --"
    set_query_note(store, run.name, "q1", hostile)
    assert query_notes(store, run.name) == {"q1": hostile}
    set_query_note(store, run.name, "q1", "second")
    assert query_notes(store, run.name) == {"q1": "second"}
    set_query_note(store, run.name, "q1", "  ")
    assert query_notes(store, run.name) == {}


def test_notes_go_with_their_run(store: Store) -> None:
    assert LATEST_VERSION >= 8 and "query_notes" in DERIVED_TABLES
    run = store.runs()[0]
    set_query_note(store, run.name, "q1", "a note")
    store.delete(run.name)
    assert store.table_counts()["query_notes"] == 0
