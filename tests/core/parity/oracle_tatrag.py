"""Test oracle: TAT-RAG's scripts/evaluate_retrieval.py metric logic, re-implemented from reading it.

Plain Python on the raw JSON (the golden set and one list of hits per golden entry, in order),
float64 and difflib, as that script computes. FILE gold files are taken as absent from disk (the
project's csvs/ folder is not in its repository), so a FILE item matches by base name in the
hit's metadata only. The script's retriever keeps hits with score >= RAG_SCORE_THRESHOLD (0.1 by
default; Qdrant's score_threshold) and at most top_k (20); both are applied here to the given
hits before anything is counted.
"""

from __future__ import annotations

from difflib import SequenceMatcher
from pathlib import PurePosixPath
from typing import Any

K_VALUES = (1, 3, 5, 10)
META_KEYS = ("table_path", "table_title", "source", "doc_id", "section_path")
NAMES = (
    "Precision@5",
    "EvidenceRecall@3",
    "EvidenceRecall@10",
    "PerQueryCoverage@3",
    "PerQueryCoverage@10",
    "FullCoverageRate@3",
    "FullCoverageRate@10",
    "MAP",
    "MRR",
    "HitRate@10",
)


def squash(text: str | None) -> str:
    """Whitespace runs to one space, then lower case (empty for None)."""
    return " ".join(text.split()).lower() if text else ""


def _path_lower(text: str) -> str:
    return text.replace("\\", "/").lower() if text else ""


def _gold_items(entry: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    """(index, normalised text, lower-cased file base name) per gold item, in order."""
    items = []
    for index, gold in enumerate(entry.get("gold", [])):
        kind = (gold.get("type") or "TEXT").upper()
        text, name = "", None
        if kind == "TEXT":
            text = squash(gold.get("content", ""))
        elif kind == "FILE":
            ref = gold.get("content", "")
            if isinstance(ref, str) and ref:
                # Path(ref).name on POSIX, as the script runs: a backslash is no separator
                name = PurePosixPath(ref).name.lower()
        items.append((index, text, name))
    return items


def _match(
    doc: dict[str, Any], items: list[tuple[int, str, str | None]], threshold: float
) -> int | None:
    text = squash(doc.get("content", ""))
    for index, gold, _ in items:
        if gold and text:
            if gold in text or text in gold:
                return index
            if SequenceMatcher(None, gold, text).ratio() >= threshold:
                return index
    meta = doc.get("metadata") or {}
    values = [_path_lower(meta[k]) for k in META_KEYS if isinstance(meta.get(k), str)]
    tags = meta.get("tags")
    if isinstance(tags, list):
        values.extend(_path_lower(str(t)) for t in tags if isinstance(t, str))
    for index, _, name in items:
        if name and any(name in value for value in values):
            return index
    return None


def retrieved(
    hits: list[dict[str, Any]], score_threshold: float = 0.1, top_k: int = 20
) -> list[dict[str, Any]]:
    """What the script's retriever hands over: hits scoring at least the threshold, top_k of them."""
    return [h for h in hits if h.get("score") is not None and h["score"] >= score_threshold][:top_k]


def evaluate_query(
    docs: list[dict[str, Any]], entry: dict[str, Any], threshold: float = 0.7
) -> dict[str, Any]:
    """The script's per-query numbers for one golden entry."""
    items = _gold_items(entry)
    total = sum(1 for _, text, name in items if text or name)
    zeros = {k: 0.0 for k in K_VALUES}
    if total == 0:
        return {
            "precision": dict(zeros),
            "recall": dict(zeros),
            "covered": {k: 0 for k in K_VALUES},
            "full": dict(zeros),
            "hit": dict(zeros),
            "ap": 0.0,
            "rr": 0.0,
            "total": 0,
        }
    matches = [_match(d, items, threshold) for d in docs]
    out: dict[str, Any] = {
        "precision": {},
        "recall": {},
        "covered": {},
        "full": {},
        "hit": {},
        "total": total,
    }
    for k in K_VALUES:
        top = matches[:k]
        denom = min(k, len(matches))
        relevant = sum(1 for m in top if m is not None)
        covered = len({m for m in top if m is not None})
        out["precision"][k] = relevant / denom if denom else 0.0
        out["covered"][k] = covered
        out["recall"][k] = covered / total
        out["full"][k] = 1.0 if covered >= total else 0.0
        out["hit"][k] = 1.0 if relevant > 0 else 0.0
    seen: set[int] = set()
    ap, found = 0.0, 0
    for rank, m in enumerate(matches, start=1):
        if m is None or m in seen:
            continue
        seen.add(m)
        found += 1
        ap += found / rank
    out["ap"] = ap / total
    out["rr"] = next((1.0 / r for r, m in enumerate(matches, start=1) if m is not None), 0.0)
    return out


def per_query(
    golden: list[dict[str, Any]],
    output: list[list[dict[str, Any]]],
    threshold: float = 0.7,
    score_threshold: float = 0.1,
) -> list[dict[str, float]]:
    """Each entry's values under the printed names (entries without a query are skipped, as there)."""
    rows = []
    for entry, hits in zip(golden, output, strict=True):
        if not entry.get("query"):
            continue
        r = evaluate_query(retrieved(hits, score_threshold), entry, threshold)
        rows.append(
            {
                "Precision@5": r["precision"][5],
                "EvidenceRecall@3": r["recall"][3],
                "EvidenceRecall@10": r["recall"][10],
                "PerQueryCoverage@3": r["recall"][3],
                "PerQueryCoverage@10": r["recall"][10],
                "FullCoverageRate@3": r["full"][3],
                "FullCoverageRate@10": r["full"][10],
                "MAP": r["ap"],
                "MRR": r["rr"],
                "HitRate@10": r["hit"][10],
                "_covered@3": float(r["covered"][3]),
                "_covered@10": float(r["covered"][10]),
                "_total": float(r["total"]),
            }
        )
    return rows


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    """The script's printed summary: means over queries; EvidenceRecall pooled over all gold items."""
    n = len(rows)
    total = sum(r["_total"] for r in rows)
    out = {}
    for name in NAMES:
        if name.startswith("EvidenceRecall@"):
            k = name.split("@")[1]
            out[name] = sum(r[f"_covered@{k}"] for r in rows) / total if total else 0.0
        else:
            out[name] = sum(r[name] for r in rows) / n
    return out
