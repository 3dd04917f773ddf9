"""ensure_scored's cancel event: the scoring stops between blocks and keeps nothing of itself."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from bench.native_scale import write_native_run
from rageval_core.importing import import_paths
from rageval_core.matching.scorers import Normalisation
from rageval_core.store import Store, scores
from rageval_core.store.scores import ScoringCancelled, ensure_scored, is_scored, load_pair_rows


def test_cancel_stops_between_blocks_and_keeps_the_other_scorings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    write_native_run(path, 23, n_chunks=4, text_chars=80, seed=2, spans=2)
    monkeypatch.setattr(scores, "BLOCK_QUERIES", 5)
    other = Normalisation(strip_punct=True)
    with Store(":memory:") as store:
        run = import_paths(store, [path], score=False).imported[0]
        assert not is_scored(store, run.run_id, "partial", Normalisation())
        ensure_scored(store, run.run_id)
        kept = load_pair_rows(store, run.run_id)
        assert is_scored(store, run.run_id, "partial", Normalisation())
        cancel = threading.Event()
        seen: list[int] = []

        def progress(done: int, total: int) -> None:
            seen.append(done)
            cancel.set()  # the user presses Cancel after the first block

        with pytest.raises(ScoringCancelled):
            ensure_scored(store, run.run_id, "partial", other, progress=progress, cancel=cancel)
        assert seen == [5]  # stopped at the next block boundary, not at the end
        assert not is_scored(store, run.run_id, "partial", other)
        again = load_pair_rows(store, run.run_id)
        assert np.array_equal(again.score, kept.score)  # the default scoring is untouched
        done = ensure_scored(store, run.run_id, "partial", other)  # and it can start again
        assert not done.cached and done.n_pairs == 23 * 4 * 2
