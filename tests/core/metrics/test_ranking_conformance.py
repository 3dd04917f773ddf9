"""Ranking metrics against trec_eval's own test outputs (shared/oracle/trec_eval), per query and mean.

Each out.* file holds what trec_eval 10.0 printed (``measure qid value``, rounded to 4 decimals).
Our measures must reproduce every trec_eval measure they claim to match, on every query and on
the ``all`` line, to that precision; the counts (num_q, num_ret, num_rel, num_rel_ret) exactly.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from rageval_core.errors import ProblemLog
from rageval_core.formats import trec
from rageval_core.metrics import aggregate, compute, ranked_labels_from_queries
from tests.paths import ORACLE

pytestmark = pytest.mark.oracle


# trec_eval name -> ours, written out independently of the registry's own hints
FIXED = {
    "map": "AP",
    "recip_rank": "RR",
    "ndcg": "nDCG",
    "Rprec": "Rprec",
    "set_P": "SetP",
    "set_recall": "SetR",
    "set_F": "SetF",
    "num_ret": "NumRet",
    "num_rel": "NumRel",
    "num_rel_ret": "NumRelRet",
    "num_q": "NumQ",
    "bpref": "Bpref",
}
CUT = {"P": "P", "recall": "R", "ndcg_cut": "nDCG", "map_cut": "AP", "success": "Hit"}
COUNTS = {"NumRet", "NumRel", "NumRelRet", "NumQ"}


def ours(trec_name: str) -> str | None:
    if trec_name in FIXED:
        return FIXED[trec_name]
    match = re.fullmatch(r"(P|recall|ndcg_cut|map_cut|success)_([0-9]+)", trec_name)
    return f"{CUT[match[1]]}@{match[2]}" if match else None


def oracle() -> Path:
    # every test calling this carries the oracle mark (tests/conftest.py: skipped with the reason
    # on a user's clone, a failure in CI); this keeps a missing file from reading as a pass
    assert ORACLE.is_dir(), f"trec_eval oracle files not found at {ORACLE}"
    return ORACLE


def read_out(path: Path) -> tuple[dict[str, dict[str, str]], str | None]:
    """{measure: {qid or 'all': value text}} and the runid, from trec_eval's output."""
    table: dict[str, dict[str, str]] = defaultdict(dict)
    runid = None
    for line in path.read_text(encoding="utf-8").splitlines():
        name, qid, value = line.split(None, 2)
        if name == "runid":
            runid = value.strip()
        table[name][qid] = value.strip()
    return table, runid


CASES = {
    # id: (qrels, run, out file, rel_level, complete, per-query output?)
    "test": ("qrels.test", "results.test", "out.test", 1, False),
    "test-with-comments": ("qrels.test.with-comments", "results.test", "out.test", 1, False),
    "aq": ("qrels.test", "results.test", "out.test.aq", 1, False),
    "aqc": ("qrels.test", "results.trunc", "out.test.aqc", 1, True),
    "aql": ("qrels.rel_level", "results.test", "out.test.aql", 2, False),
    "comment": ("qrels.comment.test", "results.comment.test", "out.comment.test", 1, False),
}
# what each output must let us check, so a silently shrinking comparison fails too
EXPECTED = {
    "test": {"AP", "RR", "Rprec", "P@5", "P@1000", "NumQ", "NumRet", "NumRel", "NumRelRet"},
    "aq": {
        "AP",
        "RR",
        "Rprec",
        "nDCG",
        "nDCG@10",
        "AP@100",
        "R@1000",
        "Hit@1",
        "Hit@10",
        "SetP",
        "SetR",
        "SetF",
        "P@30",
        "NumRelRet",
        "Bpref",
    },
}
EXPECTED["test"] |= {"Bpref"}  # bpref is in trec_eval's default set
EXPECTED["test-with-comments"] = EXPECTED["comment"] = EXPECTED["test"]
EXPECTED["aqc"] = EXPECTED["aql"] = EXPECTED["aq"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_trec_eval(case: str) -> None:
    qrels_name, run_name, out_name, rel_level, complete = CASES[case]
    base = oracle()
    log = ProblemLog()
    parsed = trec.read(base / run_name, base / qrels_name, log)
    queries = list(parsed.queries)
    assert log.errors == []
    arrays, selection = ranked_labels_from_queries(queries, rel_level=rel_level, complete=complete)
    expected, runid = read_out(base / out_name)

    assert parsed.info.name == runid
    assert int(expected["num_q"]["all"]) == arrays.n_queries
    mapped = {ours(name): name for name in expected if ours(name) is not None}
    assert EXPECTED[case] <= set(mapped), f"out file lacks {EXPECTED[case] - set(mapped)}"
    values = compute(sorted(mapped), arrays)  # type: ignore[arg-type]
    row = {qid: i for i, qid in enumerate(arrays.query_ids)}

    checked = 0
    for measure, trec_name in mapped.items():
        assert measure is not None
        for qid, text in expected[trec_name].items():
            if qid == "all":
                got = aggregate(measure, values[measure])
            else:
                got = float(values[measure][row[qid]])
            if measure in COUNTS:
                assert got == int(text), f"{trec_name} {qid}: {got} != {text}"
            else:
                assert abs(got - float(text)) <= 0.5e-4 + 1e-12, (
                    f"{trec_name} {qid}: {got} vs {text}"
                )
            checked += 1
    per_query = {qid for name in expected.values() for qid in name} - {"all"}
    if per_query:  # -q outputs: every query trec_eval scored is one of ours, and vice versa
        assert per_query == set(arrays.query_ids)
    assert checked >= len(mapped)
    if case == "aqc":
        assert selection.n_missing_from_run == 1 and "302" in row
    if case == "comment":
        assert selection.n_skipped_no_qrels == 301 - 31


def test_complete_changes_only_the_query_set() -> None:
    base = oracle()
    log = ProblemLog()
    queries = list(trec.read(base / "results.trunc", base / "qrels.test", log).queries)
    skipped, sel_skip = ranked_labels_from_queries(queries, complete=False)
    full, sel_full = ranked_labels_from_queries(queries, complete=True)
    assert skipped.query_ids == ("301", "303") and full.query_ids == ("301", "303", "302")
    assert sel_skip.n_missing_from_run == sel_full.n_missing_from_run == 1
    a = compute(["AP", "nDCG@10"], skipped)
    b = compute(["AP", "nDCG@10"], full)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name][:2])
        assert b[name][2] == 0.0
