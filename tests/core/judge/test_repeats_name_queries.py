"""Issue 27, point 10: the items a judge disagrees with itself on are named by their query id
(the run's own), never by the store's internal row number (qidx)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.core.judge.test_judge_run import fixture_queries, judge_cli
from tests.fakellm import FakeServer


def test_disagreements_name_the_query_id_not_an_internal_index(
    server: FakeServer, db: Path
) -> None:
    queries = fixture_queries()
    flips = "Is food zero-rated?"
    (flipped,) = [q["query_id"] for q in queries if q["query"] == flips]
    position = [q["query_id"] for q in queries].index(flipped)
    assert flipped != str(position) and flipped != f"#{position}"  # the two can be told apart
    server.state.flip = lambda q, n: (
        ("supported" if n % 2 == 0 else "insufficient") if q == flips else "supported"
    )
    done = judge_cli(server, db, "--json", "--repeats", "3", "--metrics", "faithfulness")
    assert done.returncode == 0, done.stderr
    (item,) = json.loads(done.stdout)["repeatability"]["disagreements"]
    assert item["query_id"] == flipped and "qidx" not in item
    # the text output names it the same way (a second run: every reply from the cache)
    text = judge_cli(server, db, "--repeats", "3", "--metrics", "faithfulness")
    assert text.returncode == 0, text.stderr
    assert f"  query {flipped} faithfulness: " in text.stdout
    assert "query #" not in text.stdout
