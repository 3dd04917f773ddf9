"""LLM judge result sets, the judge's request cache and human labels (tables of migration 6).

The judging itself (prompts, HTTP, parsing) is rageval_core.judging's; the store keeps what it
returns and answers questions about it. Nothing here ever sees an API key: the cache is keyed
by a hash of the request without it, and a result set records the endpoint's host only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rageval_core.errors import NotFoundError
from rageval_core.store.schema import first_row
from rageval_core.store.store import RunRef, Store


def _run_id(store: Store, ref: RunRef) -> int:
    """The run's id; an int is taken as one (evaluate's own RunData may be of a run built in
    memory, never stored: it simply has no judge rows)."""
    return ref if isinstance(ref, int) else store.run(ref).run_id


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --- the request cache ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CachedReply:
    """A valid judge reply kept under its request's hash."""

    content: str
    prompt_tokens: int
    completion_tokens: int


def cached_replies(store: Store, keys: Sequence[str]) -> dict[str, CachedReply]:
    """The kept replies of those request hashes that have one."""
    if not keys:
        return {}
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT key, content, prompt_tokens, completion_tokens FROM judge_cache "
            "WHERE list_contains(?, key)",
            [list(keys)],
        ).fetchall()
    return {key: CachedReply(content, int(p), int(c)) for key, content, p, c in rows}


def keep_reply(store: Store, key: str, model: str, reply: CachedReply) -> None:
    """Keep a valid reply (only valid ones: an error is asked again next time)."""
    with store._cursor() as cur:
        cur.execute(
            "INSERT OR REPLACE INTO judge_cache VALUES (?, ?, ?, ?, ?, ?)",
            [key, model, reply.content, reply.prompt_tokens, reply.completion_tokens, _now()],
        )


# --- result sets ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JudgeSet:
    """One judge's pass over a run: who judged, with which prompts, and what it cost."""

    judge_id: int
    run_id: int
    name: str
    model: str
    base_host: str
    prompts: dict[str, str]  # prompt name -> prompt version
    repeats: int
    created_at: str
    status: str  # complete, partial, failed, budget, interrupted, cancelled
    requests: int
    cache_hits: int
    judge_errors: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    verdicts: int  # results that hold a verdict (not a judge error)

    @property
    def usable(self) -> bool:
        """Worth choosing by default: it holds a verdict and its run did not fail."""
        return self.verdicts > 0 and self.status != "failed"

    def to_json(self) -> dict[str, Any]:
        return {
            "judge_id": self.judge_id,
            "name": self.name,
            "model": self.model,
            "base_host": self.base_host,
            "prompts": self.prompts,
            "repeats": self.repeats,
            "created_at": self.created_at,
            "status": self.status,
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "judge_errors": self.judge_errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "verdicts": self.verdicts,
        }


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """One judged (query, prompt, repeat): a verdict (validated JSON object) or an error."""

    qidx: int
    prompt: str
    rep: int
    verdict: Mapping[str, Any] | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cached: bool


_SET_COLUMNS = (
    "judge_id, run_id, name, model, base_host, prompts, repeats, created_at, status, requests, "
    "cache_hits, judge_errors, prompt_tokens, completion_tokens, cost_usd"
)


#: what a set is read with: its columns and its count of verdicts
_SET_READ = (
    f"SELECT {_SET_COLUMNS}, (SELECT count(*) FROM judge_results r "
    "WHERE r.judge_id = s.judge_id AND r.verdict IS NOT NULL) FROM judge_sets s"
)


def _set(row: tuple[Any, ...]) -> JudgeSet:
    values = list(row)
    values[5] = json.loads(values[5])
    return JudgeSet(*values)


def save_judge_set(
    store: Store,
    ref: RunRef,
    facts: Mapping[str, Any],
    results: Sequence[JudgeResult],
) -> JudgeSet:
    """Keep one result set and its results in one transaction; returns it with its id.

    facts: name, model, base_host, prompts, repeats, status and the ledger's counts.
    """
    run_id = store.run(ref).run_id
    with store._cursor() as cur:
        cur.begin()
        try:
            row = first_row(cur.execute("SELECT nextval('judge_id_seq')").fetchall())
            judge_id = int(row[0]) if row else 0
            cur.execute(
                f"INSERT INTO judge_sets ({_SET_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    judge_id,
                    run_id,
                    facts["name"],
                    facts["model"],
                    facts["base_host"],
                    json.dumps(dict(facts["prompts"]), sort_keys=True),
                    int(facts["repeats"]),
                    _now(),
                    facts["status"],
                    int(facts["requests"]),
                    int(facts["cache_hits"]),
                    int(facts["judge_errors"]),
                    int(facts["prompt_tokens"]),
                    int(facts["completion_tokens"]),
                    float(facts["cost_usd"]),
                ],
            )
            if results:
                cur.executemany(
                    "INSERT INTO judge_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        [
                            judge_id,
                            run_id,
                            r.qidx,
                            r.prompt,
                            r.rep,
                            None if r.verdict is None else json.dumps(dict(r.verdict)),
                            r.error,
                            r.prompt_tokens,
                            r.completion_tokens,
                            r.cost_usd,
                            r.cached,
                        ]
                        for r in results
                    ],
                )
            cur.commit()
        except BaseException:
            cur.rollback()
            raise
    return judge_set(store, ref, str(judge_id))


def judge_sets(store: Store, ref: RunRef) -> list[JudgeSet]:
    """The run's judge result sets, oldest first."""
    run_id = _run_id(store, ref)
    with store._cursor() as cur:
        rows = cur.execute(f"{_SET_READ} WHERE run_id = ? ORDER BY judge_id", [run_id]).fetchall()
    return [_set(row) for row in rows]


def judge_set(store: Store, ref: RunRef, which: str | None = None) -> JudgeSet:
    """One result set of the run: by id or name (the newest of that name); None: the newest
    usable one (a failed set, or one without a verdict, is chosen only by name or id)."""
    sets = judge_sets(store, ref)
    if not sets:
        raise NotFoundError(f"run {store.run(ref).name} has no judge results (rageval judge)")
    if which is None:
        usable = [s for s in sets if s.usable]
        if not usable:
            raise NotFoundError(
                f"run {store.run(ref).name} has no judge result set with verdicts "
                f"(sets: {', '.join(f'{s.judge_id} ({s.status})' for s in sets)})"
            )
        return usable[-1]
    for s in reversed(sets):
        if str(s.judge_id) == str(which) or s.name == which:
            return s
    known = ", ".join(f"{s.judge_id} ({s.name})" for s in sets)
    raise NotFoundError(f"run {store.run(ref).name} has no judge {which!r} (judges: {known})")


def query_ids(store: Store, run_id: int) -> list[str]:
    """The run's query ids in qidx order: what a result's qidx (an internal row number) names."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT query_id FROM queries WHERE run_id = ? ORDER BY qidx", [run_id]
        ).fetchall()
    return [str(q) for (q,) in rows]


def judge_results(store: Store, judge: JudgeSet) -> list[JudgeResult]:
    """Every result of a set, by query, prompt and repeat."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT qidx, prompt, rep, verdict, error, prompt_tokens, completion_tokens, "
            "cost_usd, cached FROM judge_results WHERE judge_id = ? ORDER BY qidx, prompt, rep",
            [judge.judge_id],
        ).fetchall()
    return [
        JudgeResult(
            int(q), p, int(rep), None if v is None else json.loads(v), e, int(pt), int(ct), c, b
        )
        for q, p, rep, v, e, pt, ct, c, b in rows
    ]


def cost_per_query(store: Store, judge: JudgeSet) -> dict[int, float]:
    """qidx -> USD the set's replies for that query cost (every prompt and repeat)."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT qidx, sum(cost_usd) FROM judge_results WHERE judge_id = ? GROUP BY qidx",
            [judge.judge_id],
        ).fetchall()
    return {int(q): float(c) for q, c in rows}


def imported_judge(store: Store, ref: RunRef) -> list[tuple[int, dict[str, Any]]]:
    """(qidx, judge object) of every query whose run file carried judge scores."""
    run_id = _run_id(store, ref)
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT qidx, judge FROM queries WHERE run_id = ? AND judge IS NOT NULL ORDER BY qidx",
            [run_id],
        ).fetchall()
    return [(int(q), json.loads(j)) for q, j in rows]


# --- human labels --------------------------------------------------------------------------


def human_labels(store: Store, ref: RunRef) -> dict[int, dict[str, str]]:
    """qidx -> {name: label}: the run file's labels, with those given in the dashboard over them."""
    run_id = _run_id(store, ref)
    out: dict[int, dict[str, str]] = {}
    with store._cursor() as cur:
        imported = cur.execute(
            "SELECT qidx, name, label FROM labels WHERE run_id = ? ORDER BY qidx, pos", [run_id]
        ).fetchall()
        given = cur.execute(
            "SELECT qidx, name, label FROM human_labels WHERE run_id = ? ORDER BY labelled_at",
            [run_id],
        ).fetchall()
    for qidx, name, label in (*imported, *given):
        out.setdefault(int(qidx), {})[name] = label
    return out


def set_human_label(store: Store, ref: RunRef, qidx: int, name: str, label: str | None) -> None:
    """A person's label of one query (None: take back the one given here)."""
    run_id = store.run(ref).run_id
    with store._cursor() as cur:
        cur.begin()
        try:
            cur.execute(
                "DELETE FROM human_labels WHERE run_id = ? AND qidx = ? AND name = ?",
                [run_id, qidx, name],
            )
            if label is not None:
                cur.execute(
                    "INSERT INTO human_labels VALUES (?, ?, ?, ?, ?)",
                    [run_id, qidx, name, label, _now()],
                )
            cur.commit()
        except BaseException:
            cur.rollback()
            raise


def judge_signature(store: Store) -> tuple[tuple[int, int, str], ...]:
    """(run_id, judge_id, status) of every result set in the store: cheap, and it changes
    whenever a set is added or deleted, so a cache keyed by it sees a new judge run."""
    with store._cursor() as cur:
        rows = cur.execute(
            "SELECT run_id, judge_id, status FROM judge_sets ORDER BY judge_id"
        ).fetchall()
    return tuple((int(r), int(j), str(s)) for r, j, s in rows)
