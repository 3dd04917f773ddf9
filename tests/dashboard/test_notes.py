"""Notes on a query: written in the drilldown, kept with the run, shown again on reopening."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from rageval_dashboard.annotations import note_key
from rageval_core.annotate import query_notes
from rageval_core.store import Store
from tests.dashboard.test_runs import db  # noqa: F401 (the fixture)


def test_a_note_is_saved_with_the_run_and_shown_again(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811
) -> None:
    at = make_app("queries.py", db=db, q="q1")
    assert not at.exception, [e.value for e in at.exception]
    with Store(db) as store:
        run_id = store.runs()[0].run_id
    note = "gold span looks wrong <b>bold?</b>"
    at.text_area(key=note_key(run_id, "q1")).input(note)
    at.button(key="queries.save_note").click().run()
    assert not at.exception
    with Store(db) as store:
        assert query_notes(store, run_id) == {"q1": note}
    # a new session (a reload) reads the note back from the store
    again = make_app("queries.py", db=db, q="q1")
    assert again.text_area(key=note_key(run_id, "q1")).value == note
