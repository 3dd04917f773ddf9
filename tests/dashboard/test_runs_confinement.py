"""The Runs page's folder confinement holds for every file the readers open, not only the paths
typed (issue 28, point 10): a BEIR dataset inside the allowed folder whose queries.jsonl or
corpus.jsonl is a symlink to a file outside is refused, nothing is stored, and the outside
file's text appears nowhere. Before, the typed run and qrels passed the check and the reader
then read the linked file beside them and stored its text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rageval_core.store import Store
from tests.core.formats.test_confined_reads import SECRET, beir_dataset, secret_file, stored_texts
from tests.dashboard.test_runs import db, names, runs_page  # noqa: F401 (db: a fixture)


def page_text(at: AppTest) -> str:
    """Every text the page shows: messages, code blocks, markdown and table cells."""
    parts = [e.value for e in (*at.error, *at.warning, *at.success, *at.info)]
    parts += [c.value for c in at.code] + [m.value for m in at.markdown]
    parts += [d.value.to_csv() for d in at.dataframe]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("companion", ["queries.jsonl", "corpus.jsonl"])
def test_a_companion_linked_outside_the_folders_is_refused_in_the_app(
    make_app: Callable[..., AppTest],
    db: Path,  # noqa: F811 (the fixture)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    companion: str,
) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    ds = beir_dataset(allowed / "ds")
    (ds / companion).unlink()
    (ds / companion).symlink_to(secret_file(tmp_path / "outside", companion))
    monkeypatch.setenv("RAGEVAL_IMPORT_DIRS", str(allowed))
    at = runs_page(make_app, db)
    at.text_area(key="runs.paths").input(f"{ds / 'results.json'}\n{ds / 'qrels' / 'test.tsv'}")
    at.button(key="runs.import_paths").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert names(db) == ["first"]
    assert any("nothing was stored" in e.value for e in at.error)
    problems = next(d.value for d in at.dataframe if "severity" in d.value.columns)
    row = problems[problems["file"].str.endswith(companion)].iloc[0]
    assert row["problem"].startswith("outside the folders imports may read from")
    assert SECRET not in page_text(at)
    with Store(db) as store:
        assert SECRET not in stored_texts(store)
    # the same dataset with the link pointing inside imports, texts and all
    (ds / companion).unlink()
    (ds / companion).write_text(
        (Path(__file__).parents[1] / "data/beir/mini" / companion).read_text()
    )
    at.button(key="runs.import_paths").click().run()
    assert not at.exception
    assert names(db) == ["first", "results"]
