"""Runs built so that every missed gold item's reason is known by construction (k = 10, the
partial scorer, threshold 0.7, the numbers guard on). Each text's score is checked by
tests/core/diagnosis/test_reasons.py::test_the_constructed_scores_are_what_the_runs_need."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

DEPTH = 20
_WORDS = [
    "orchard",
    "ladder",
    "barn",
    "geese",
    "pond",
    "meadow",
    "tractor",
    "hedge",
    "scarecrow",
    "pumpkin",
    "silo",
    "fence",
    "wheat",
    "plough",
]

PASS = "Beekeepers in the valley move their hives uphill when the lime trees start to flower."
BELOW = (
    "The submarine cable between Oslo harbour and the island relay station was laid by the "
    "crew of the Nordkapp."
)
SPLIT_A = "Glaciers on the northern ridge retreat each summer because meltwater"
SPLIT_B = "carves tunnels beneath the ice sheet and loosens its grip on bedrock."
SPLIT = f"{SPLIT_A} {SPLIT_B}"
#: the chunks holding the split span's first half (rank 2) and second half (rank 5)
SPLIT_FIRST = f"Survey notes describe how the expedition mapped the valley before winter. {SPLIT_A}"
SPLIT_SECOND = f"{SPLIT_B} Later chapters cover the supply routes used by the mountain huts."
NEAR = (
    "Violin makers in Cremona seasoned spruce for decades before carving the resonant top plates."
)
#: scores 0.655 against NEAR: 0.04 under the threshold
NEAR_CHUNK = (
    "Fiddle makers of Cremona dried pine for years prior to shaping the resonant front boards."
)
NUMBERS = (
    "Annual revenue of the cooperative reached 48,881 thousand euros in 2019 after the merger."
)
#: NUMBERS with another figure: scores 0.99, refused by the numbers guard
NUMBERS_CHUNK = (
    "Annual revenue of the cooperative reached 48,812 thousand euros in 2019 after the merger."
)
NONE = (
    "Lighthouse keepers logged every passing schooner in leather-bound ledgers kept dry in tin "
    "boxes."
)
NONE_2 = "Copper kettles from the old foundry were sold at the spring fair to travelling merchants."
BELOW_2 = "Migrating cranes rest on the frozen lake for three nights before crossing the mountains."

#: query id -> (its reasons in span order, the rank or score its one missed span reports)
EXPECTED = {
    "q_pass": [],
    "q_below": ["ranked_below_k"],
    "q_split": ["split_across_chunks"],
    "q_near": ["near_miss"],
    "q_numbers": ["numbers_differ"],
    "q_none": ["not_retrieved"],
    # a tie (one each): the earlier reason is the query's; two to one: the more frequent
    "q_tie": ["ranked_below_k", "not_retrieved"],
    "q_most": ["ranked_below_k", "not_retrieved", "not_retrieved"],
}
PRIMARY = {
    "q_pass": "passing",
    "q_below": "ranked_below_k",
    "q_split": "split_across_chunks",
    "q_near": "near_miss",
    "q_numbers": "numbers_differ",
    "q_none": "not_retrieved",
    "q_tie": "ranked_below_k",
    "q_most": "not_retrieved",
    "q_nogold": "no_gold",
}


def filler(qid: str, rank: int) -> str:
    r = random.Random(f"{qid}/{rank}")
    return f"Filler {rank}: " + " ".join(r.choice(_WORDS) for _ in range(14)) + "."


def _record(qid: str, placed: dict[int, str], evidence: list[str]) -> dict[str, Any]:
    retrieved = [
        {
            "doc_id": f"{qid}-d{rank}",
            "text": placed.get(rank, filler(qid, rank)),
            "score": 1 - rank / 100,
        }
        for rank in range(1, DEPTH + 1)
    ]
    out: dict[str, Any] = {"query_id": qid, "query": f"question {qid}", "retrieved": retrieved}
    if evidence:
        out["evidence"] = evidence
    return out


def evidence_records() -> list[dict[str, Any]]:
    return [
        _record("q_pass", {1: PASS}, [PASS]),
        _record("q_below", {14: BELOW}, [BELOW]),
        _record("q_split", {2: SPLIT_FIRST, 5: SPLIT_SECOND}, [SPLIT]),
        _record("q_near", {3: NEAR_CHUNK}, [NEAR]),
        _record("q_numbers", {1: NUMBERS_CHUNK}, [NUMBERS]),
        _record("q_none", {}, [NONE]),
        _record("q_tie", {12: BELOW_2}, [BELOW_2, NONE]),
        _record("q_most", {12: BELOW_2}, [BELOW_2, NONE, NONE_2]),
        _record("q_nogold", {}, []),
    ]


def ids_records() -> list[dict[str, Any]]:
    """Ids mode: a relevant document at rank 14, one in no list, one at rank 1; a query whose
    qrels judge nothing relevant and one without qrels (both no_gold)."""

    def rec(qid: str, relevance: dict[str, int] | None) -> dict[str, Any]:
        out = _record(qid, {}, [])
        if relevance is not None:
            out["relevance"] = relevance
        return out

    return [
        rec("i_pass", {"i_pass-d1": 1}),
        rec("i_below", {"i_below-d14": 1, "i_below-d2": 0}),
        rec("i_none", {"elsewhere": 1, "i_none-d1": 0, "i_none-d3": 0}),
        rec("i_nothing", {"i_nothing-d1": 0}),
        rec("i_unjudged", None),
    ]


def write(path: Path, records: list[dict[str, Any]], name: str) -> Path:
    header = {"rageval_run": {"name": name}}
    path.write_text("\n".join(json.dumps(r) for r in [header, *records]) + "\n", encoding="utf-8")
    return path
