"""Compare's transition table: each shared query's baseline status against its candidate status,
in the core (transitions) and in `rageval compare --json` ("diagnosis_transitions")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import rageval as rv
from rageval_core.diagnosis import transitions
from tests.cli import rageval
from tests.core.diagnosis import runs


def candidate_records() -> list[dict[str, Any]]:
    """The built run with q_below's span moved to rank 1 (fixed), q_pass's chunk replaced by a
    filler (broken), q_none's span put at rank 14 (changed reason) and q_numbers left out."""
    out = []
    for record in runs.evidence_records():
        qid, chunks = record["query_id"], record["retrieved"]
        if qid == "q_below":
            chunks[0]["text"], chunks[13]["text"] = runs.BELOW, runs.filler(qid, 1)
        elif qid == "q_pass":
            chunks[0]["text"] = runs.filler(qid, 1)
        elif qid == "q_none":
            chunks[13]["text"] = runs.NONE
        elif qid == "q_numbers":
            continue
        out.append(record)
    return out


EXPECTED = {
    ("passing", "not_retrieved"): ("broken", ["q_pass"]),
    ("ranked_below_k", "passing"): ("fixed", ["q_below"]),
    ("ranked_below_k", "ranked_below_k"): ("same", ["q_tie"]),
    ("split_across_chunks", "split_across_chunks"): ("same", ["q_split"]),
    ("near_miss", "near_miss"): ("same", ["q_near"]),
    ("not_retrieved", "ranked_below_k"): ("changed", ["q_none"]),
    ("not_retrieved", "not_retrieved"): ("same", ["q_most"]),
    ("no_gold", "no_gold"): ("same", ["q_nogold"]),
}


def _cells(table: dict[str, Any]) -> dict[tuple[str, str], tuple[str, list[str]]]:
    return {(c["from"], c["to"]): (c["kind"], c["query_ids"]) for c in table["cells"]}


def test_each_shared_query_moves_as_it_was_built(built: rv.LoadedRun) -> None:
    with rv.load(candidate_records(), name="cand") as cand:
        table = transitions(rv.diagnose(built), rv.diagnose(cand))
    assert table.n_shared == 8  # q_numbers is the baseline's only
    assert _cells(table.to_json()) == EXPECTED
    assert table.count("ranked_below_k", "passing") == 1
    assert [(c.before, c.after) for c in table.cells] == list(EXPECTED)  # reasons' order


def test_compare_json_carries_the_table(tmp_path: Path) -> None:
    base = runs.write(tmp_path / "base.jsonl", runs.evidence_records(), "base")
    cand = runs.write(tmp_path / "cand.jsonl", candidate_records(), "cand")
    done = rageval("compare", str(base), str(cand), "--json", "--relevance", "evidence")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    (table,) = out["diagnosis_transitions"]
    assert (table["baseline"], table["candidate"], table["shared"]) == ("base", "cand", 8)
    assert _cells(table) == EXPECTED
    assert out["baseline"] == "base" and "metrics" in out  # the comparison itself is unchanged
    # a preset's rules change what covers, which the diagnosis does not read: no table, and the
    # comparison is printed as before
    done = rageval("compare", str(base), str(cand), "--json", "--preset", "eggai")
    assert done.returncode == 0, done.stderr
    assert "diagnosis_transitions" not in json.loads(done.stdout)
