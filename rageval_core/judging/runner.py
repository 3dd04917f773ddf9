"""run_judge: an LLM judge over every query of a stored run, kept as a result set beside it.

Plan (one task per query x prompt x repeat) -> cached replies answered from the store -> the
rest sent by a thread pool (bounded by concurrency; with --max-cost each request is sent only
when its worst case fits the budget: a Budget reservation, settled to the reply's cost) ->
every finished result kept in one transaction at the end, also after a budget stop, a cancel or
Ctrl-C. A 401/403 stops everything and keeps no result set; the valid replies received before
it stay in the store's judge cache (each is kept as it arrives), and its message says how many.
An endpoint that never answers stops the run early (client.FAST_STOP_AFTER); a run in which no
judgment succeeded is `failed`, one with some judge errors `partial`.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rageval_core.errors import UsageError
from rageval_core.judging.client import (
    ChatClient,
    EndpointError,
    JudgeAuthError,
    JudgeUnreachableError,
    Reply,
    base_host,
    base_url_problem,
)
from rageval_core.judging.relevance import keep_grades, source_of, unjudged_chunks
from rageval_core.judging.budget import Budget, BudgetLedger
from rageval_core.judging.prompts import ALL_PROMPTS, PROMPTS, RELEVANCE, BadReply, Item, Prompt
from rageval_core.judging.prompts import parse_reply
from rageval_core.store import Store
from rageval_core.store import judgements as jstore
from rageval_core.store.judgements import CachedReply, JudgeResult, JudgeSet
from rageval_core.store.store import RunRef

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: a dry run's guess of one reply's length, in tokens (the verdicts are short JSON objects)
EST_COMPLETION_TOKENS = 120
#: characters per token, for a dry run's estimate (the usual rule of thumb for English)
CHARS_PER_TOKEN = 4.0


#: JudgeConfig's fields as `rageval judge` names them (a JudgeConfigError's default words)
CLI_FLAGS = {
    "base_url": "--base-url",
    "model": "--model",
    "api_key_env": "--api-key-env",
    "metrics": "--metrics",
    "concurrency": "--concurrency",
    "max_cost_usd": "--max-cost",
    "price_in_per_1k": "--price-in",
    "price_out_per_1k": "--price-out",
    "repeats": "--repeats",
    "name": "--name",
    "contexts": "--contexts",
    "timeout_s": "--timeout",
    "max_tokens": "--max-tokens",
    "max_attempts": "max_attempts",
    "temperature": "temperature",
    "backoff_s": "backoff_s",
}


#: the (query_id, doc_id) labelled under the `labels` setting, which relevance leaves alone
#: (None: the run's imported qrels; judging/relevance.py)
Labelled = set[tuple[str, str]] | None


class JudgeConfigError(UsageError):
    """A bad JudgeConfig value, worded for whichever front end shows it: `field` is the
    JudgeConfig field, `problem` follows its name and may name others as {field}; str() uses
    the CLI's flags, worded(labels) a form's labels."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(self.worded(CLI_FLAGS))

    def worded(self, names: dict[str, str]) -> str:
        """The problem with names for the fields (the CLI's flags where names has none)."""
        names = {**CLI_FLAGS, **names}
        return f"{names[self.field]} {self.problem.format_map(names)}"


@dataclass(frozen=True)
class JudgeConfig:
    """Everything a judge run depends on besides the run; the key is read from api_key_env."""

    base_url: str
    model: str
    api_key_env: str = DEFAULT_KEY_ENV
    metrics: tuple[str, ...] = tuple(PROMPTS)
    concurrency: int = 4
    max_cost_usd: float | None = None
    price_in_per_1k: float | None = None  # the judge's USD per 1,000 prompt tokens (None: unknown)
    price_out_per_1k: float | None = None
    repeats: int = 1
    name: str | None = None  # the result set's name (default: the model)
    temperature: float = 0.0
    max_tokens: int = 512
    contexts: int = 10  # the top chunks a prompt shows
    timeout_s: float = 60.0
    max_attempts: int = 6
    backoff_s: float = 0.5

    @property
    def priced(self) -> bool:
        """Both of the judge's prices are known (the run's own are its generator's, not these)."""
        return self.price_in_per_1k is not None and self.price_out_per_1k is not None

    def check(self) -> None:
        """JudgeConfigError naming the first bad value."""
        problem = base_url_problem(self.base_url)
        if problem is not None:
            raise JudgeConfigError("base_url", problem)
        if not self.model.strip():
            raise JudgeConfigError("model", "is empty: give the judge model's name")
        unknown = [m for m in self.metrics if m not in ALL_PROMPTS]
        if unknown or not self.metrics:
            raise JudgeConfigError(
                "metrics",
                f"names {'unknown prompts ' + ', '.join(unknown) if unknown else 'no prompt'}; "
                f"known: {', '.join(ALL_PROMPTS)}",
            )
        for name in ("concurrency", "repeats", "contexts", "max_tokens", "max_attempts"):
            if getattr(self, name) < 1:
                raise JudgeConfigError(name, f"must be >= 1, got {getattr(self, name)}")
        for name in ("max_cost_usd", "price_in_per_1k", "price_out_per_1k"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise JudgeConfigError(name, f"must be a finite number >= 0, got {value}")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise JudgeConfigError(
                "timeout_s", f"must be a number of seconds > 0, got {self.timeout_s}"
            )
        if self.max_cost_usd is not None and not self.priced:
            raise JudgeConfigError(
                "max_cost_usd",
                "needs the judge's prices: give {price_in_per_1k} and {price_out_per_1k} "
                "(USD per 1K tokens)",
            )
        if not self.api_key_env.strip():
            raise JudgeConfigError("api_key_env", "must name an environment variable")


@dataclass(frozen=True, slots=True)
class Task:
    """One request to make: a query judged with one prompt, one repeat."""

    qidx: int
    prompt: str
    rep: int
    body: dict[str, Any]
    key: str  # sha256 of the canonical request: the cache key
    est_prompt_tokens: int
    item: tuple[str, str] | None = None  # (query_id, doc_id) a relevance task grades


@dataclass
class JudgeSummary:
    """What a judge run did: the ledger, and the result set it kept (None: nothing kept)."""

    run: str
    model: str
    status: str  # complete, partial, failed, budget, interrupted, cancelled, dry-run
    tasks: int  # query x prompt x repeat judgments planned
    skipped_queries: int  # queries no prompt applies to (no query text, answer or contexts)
    done: int = 0  # judgments finished (answered from the cache, judged, or judge errors)
    requests: int = 0  # chat completions sent (a retry after an invalid reply counts)
    retries: int = 0  # sent again after a 429, 5xx or timeout
    cache_hits: int = 0
    judge_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    estimated_cost_usd: float | None = None
    priced: bool = True  # the judge's prices were given
    judge: JudgeSet | None = None
    errors: dict[str, int] = field(default_factory=dict)  # cause -> count
    cause: str | None = None  # why the endpoint was given up on (JudgeUnreachableError)
    ledger: BudgetLedger | None = None  # reserved vs spent, with --max-cost
    worst_case_usd: float | None = None  # a dry run: what --max-cost would reserve for it all
    relevance_labels: int | None = None  # documents given an llm:MODEL grade (None: not asked)

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "model": self.model,
            "status": self.status,
            "tasks": self.tasks,
            "done": self.done,
            "skipped_queries": self.skipped_queries,
            "requests": self.requests,
            "retries": self.retries,
            "cache_hits": self.cache_hits,
            "judge_errors": self.judge_errors,
            "errors": self.errors,
            "cause": self.cause,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd if self.priced else None,
            "estimated_cost_usd": self.estimated_cost_usd,
            "worst_case_usd": self.worst_case_usd,
            "relevance_labels": None
            if self.relevance_labels is None
            else {"source": source_of(self.model), "documents": self.relevance_labels},
            "budget": None if self.ledger is None else self.ledger.to_json(),
            "judge": None if self.judge is None else self.judge.to_json(),
        }


def request_key(body: dict[str, Any], rep: int) -> str:
    """sha256 of the canonical request (sorted JSON of model, messages and parameters; the key
    is in a header, never in the body). A repeat past the first is its own request."""
    canonical = dict(body)
    if rep:
        canonical["rageval_repeat"] = rep
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan(
    store: Store, ref: RunRef, config: JudgeConfig, labelled: Labelled = None
) -> tuple[list[Task], int]:
    """Every task of the run (query file order, then prompt, then repeat; relevance: one task
    per unlabelled top-k chunk, judging/relevance.py) and the number of queries with none."""
    prompts = [ALL_PROMPTS[m] for m in config.metrics if m != RELEVANCE.name]
    grading = RELEVANCE.name in config.metrics
    tasks: list[Task] = []
    skipped = 0

    def add(qidx: int, p: Prompt, item: Item, reps: int, graded: tuple[str, str] | None) -> None:
        messages = p.messages(item)
        body = {
            "model": config.model,
            "messages": messages,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
        }
        est = _tokens(sum(len(m["content"]) for m in messages))
        for rep in range(reps):
            tasks.append(Task(qidx, p.name, rep, body, request_key(body, rep), est, graded))

    for qidx, q in enumerate(store.iter_queries(ref)):
        contexts = tuple(
            c.text for c in (q.retrieved or ())[: config.contexts] if c.text is not None
        )
        item = Item(q.query or "", contexts, q.answer, q.reference_answer, tuple(q.evidence))
        applicable = [p for p in prompts if q.query and p.applies(item)]
        chunks = unjudged_chunks(q, config.contexts, labelled) if q.query else []
        if not applicable and not (grading and chunks):
            skipped += 1
        for p in applicable:
            add(qidx, p, item, config.repeats, None)
        for doc_id, text in chunks if grading else ():
            passage = Item(q.query or "", (text,), None, None, ())
            add(qidx, RELEVANCE, passage, 1, (q.query_id, doc_id))  # graded once: no repeats
    return tasks, skipped


def _tokens(chars: int) -> int:
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def _prices(config: JudgeConfig) -> tuple[float, float]:
    """(USD per 1K prompt tokens, per 1K completion tokens): the judge's, 0 when not given (the
    cost is then unknown: config.priced)."""
    return float(config.price_in_per_1k or 0.0), float(config.price_out_per_1k or 0.0)


def estimate_judge(
    store: Store,
    ref: RunRef,
    config: JudgeConfig,
    *,
    cache: Store | None = None,
    labelled: Labelled = None,
) -> JudgeSummary:
    """A dry run: the requests a run would send (cached ones left out) and their estimated cost
    (prompt tokens from text length, EST_COMPLETION_TOKENS per reply) and worst case (what
    --max-cost reserves). Sends nothing. cache: the store whose replies count (default store)."""
    config.check()
    tasks, skipped = plan(store, ref, config, labelled)
    cached = jstore.cached_replies(cache or store, [t.key for t in tasks])
    p_in, p_out = _prices(config)
    todo = [t for t in tasks if t.key not in cached]
    budget = Budget(None, p_in, p_out)
    estimate = sum(
        t.est_prompt_tokens * p_in / 1000 + EST_COMPLETION_TOKENS * p_out / 1000 for t in todo
    )
    return JudgeSummary(
        run=store.run(ref).name,
        model=config.model,
        status="dry-run",
        tasks=len(tasks),
        skipped_queries=skipped,
        requests=len(todo),
        cache_hits=len(tasks) - len(todo),
        prompt_tokens=sum(t.est_prompt_tokens for t in todo),
        completion_tokens=EST_COMPLETION_TOKENS * len(todo),
        estimated_cost_usd=estimate if config.priced else None,
        priced=config.priced,
        worst_case_usd=sum(budget.worst_usd(t.body) for t in todo) if config.priced else None,
    )


@dataclass(frozen=True, slots=True)
class _Outcome:
    verdict: dict[str, Any] | None
    error: str | None
    kind: str | None  # the error's cause, what the summary counts it by
    prompt_tokens: int
    completion_tokens: int
    requests: int
    content: str | None  # the valid reply's text, for the cache


def _judge_one(
    client: ChatClient,
    task: Task,
    prompt: Prompt,
    stop: threading.Event,
    budget: Budget,
    held: float,
) -> _Outcome:
    """Send one task (its worst case `held` in the budget already); an invalid reply is asked
    again once, if that request fits the budget too; a reply still invalid is an error."""
    tokens = [0, 0]
    requests = 0

    def send(body: dict[str, Any], held: float) -> Reply:
        nonlocal requests
        requests += 1
        try:
            reply = client.chat(body, stop)
        except BaseException:
            budget.settle(held, 0.0)  # no reply: nothing reported, nothing counted
            raise
        budget.settle(held, budget.cost(reply.prompt_tokens, reply.completion_tokens))
        tokens[0] += reply.prompt_tokens
        tokens[1] += reply.completion_tokens
        return reply

    try:
        reply = send(task.body, held)
        try:
            verdict = parse_reply(reply.content, prompt)
            return _Outcome(verdict, None, None, tokens[0], tokens[1], requests, reply.content)
        except BadReply as e:
            retry = dict(task.body)
            retry["messages"] = [
                *task.body["messages"],
                {"role": "assistant", "content": reply.content},
                {"role": "user", "content": prompt.retry_note.format(problem=e)},
            ]
            again = budget.reserve(retry)
            if again is None:  # the second ask's worst case does not fit: not judged
                return _Outcome(None, None, "budget", tokens[0], tokens[1], requests, None)
            second = send(retry, again)
            try:
                verdict = parse_reply(second.content, prompt)
                return _Outcome(verdict, None, None, tokens[0], tokens[1], requests, second.content)
            except BadReply as e2:
                return _Outcome(
                    None,
                    f"invalid reply: {e2}",
                    "invalid reply",
                    tokens[0],
                    tokens[1],
                    requests,
                    None,
                )
    except EndpointError as e:
        return _Outcome(None, f"request failed: {e}", e.cause, tokens[0], tokens[1], requests, None)


Progress = Callable[[int, int], None]


def _kept_after_auth(cached: int) -> str:
    """What a run stopped by a 401/403 leaves in the store, said exactly."""
    if not cached:
        return "nothing more was sent and nothing was stored"
    replies = "one reply" if cached == 1 else f"{cached} replies"
    return (
        f"nothing more was sent and no result set was kept; the {replies} judged valid before "
        f"it {'is' if cached == 1 else 'are'} kept in the store's judge cache, so a run with "
        "the right key answers "
        f"{'it' if cached == 1 else 'them'} from there without sending or paying again"
    )


def _outcome_status(status: str, results: list[JudgeResult], cause: str | None) -> str:
    """The run's status said as it is: `failed` when no judgment succeeded (or the endpoint was
    given up on with none), `partial` when some did and others are judge errors; a stop by the
    user or the budget keeps its own name."""
    verdicts = sum(r.verdict is not None for r in results)
    if (results or cause is not None) and verdicts == 0:
        return "failed"
    if status == "complete" and (cause is not None or verdicts < len(results)):
        return "partial"
    return status


def run_judge(
    store: Store,
    ref: RunRef,
    config: JudgeConfig,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    *,
    api_key: str | None = None,
    client: ChatClient | None = None,
    cache: Store | None = None,
    labelled: Labelled = None,
) -> JudgeSummary:
    """Judge every query of the run and keep the results as a new result set beside it.

    The key is read from the environment variable config.api_key_env (api_key: given directly,
    for a caller that has it already; never stored). progress(done, total) after each task;
    cancel: set it to stop (finished results are kept). Ctrl-C does the same. JudgeAuthError
    (exit 2) on a 401/403: no result set is kept; its message says how many valid replies of
    this run the judge cache kept (a run with the right key answers those from it). An endpoint
    that never answers ends the run at once with status `failed` and summary.cause saying why,
    once. cache: the store whose cached replies are read and new ones kept (default store; a run
    read from a file into a scratch store gives the user's store here). labelled: with the
    relevance prompt, the documents it leaves alone (None: those of the run's imported qrels).
    """
    cache = cache or store
    config.check()
    run = store.run(ref)
    tasks, skipped = plan(store, ref, config, labelled)
    p_in, p_out = _prices(config)
    summary = JudgeSummary(
        run.name, config.model, "complete", len(tasks), skipped, priced=config.priced
    )
    key = api_key if api_key is not None else os.environ.get(config.api_key_env) or None
    if client is None:
        client = ChatClient(
            config.base_url,
            key,
            config.api_key_env,
            timeout_s=config.timeout_s,
            max_attempts=config.max_attempts,
            backoff_s=config.backoff_s,
        )
    del key
    stop = cancel or threading.Event()
    results: list[JudgeResult] = []
    cached_now = 0  # valid replies of this run kept in the judge cache
    graded: list[tuple[str, str, int]] = []  # relevance: (query_id, doc_id, grade)

    def keep(t: Task, result: JudgeResult) -> None:
        results.append(result)
        if t.item is not None and result.verdict is not None:
            graded.append((*t.item, int(result.verdict["relevance"])))

    budget = Budget(config.max_cost_usd, p_in, p_out)
    cost = budget.cost

    def note(kind: str) -> None:
        summary.judge_errors += 1
        summary.errors[kind] = summary.errors.get(kind, 0) + 1

    cached = jstore.cached_replies(cache, [t.key for t in tasks])
    pending: list[Task] = []
    for t in tasks:
        hit = cached.get(t.key)
        verdict = None
        if hit is not None:
            try:
                verdict = parse_reply(hit.content, ALL_PROMPTS[t.prompt])
            except BadReply:
                verdict = None
        if verdict is None or hit is None:
            pending.append(t)
            continue
        summary.cache_hits += 1
        summary.done += 1
        keep(
            t,
            JudgeResult(
                t.qidx,
                t.prompt,
                t.rep,
                verdict,
                None,
                hit.prompt_tokens,
                hit.completion_tokens,
                cost(hit.prompt_tokens, hit.completion_tokens),
                True,
            ),
        )
    total = len(tasks)
    if progress is not None:
        progress(summary.cache_hits, total)

    def finish(t: Task, out: _Outcome) -> None:
        nonlocal cached_now
        spent = cost(out.prompt_tokens, out.completion_tokens)
        summary.prompt_tokens += out.prompt_tokens  # a reply is paid for, judged or not
        summary.completion_tokens += out.completion_tokens
        summary.cost_usd += spent
        if out.kind == "cancelled":
            return  # stopped while waiting to retry: not judged, and no fault of the judge
        summary.requests += out.requests
        if out.kind == "budget":
            summary.status = "budget"  # its second ask did not fit: not judged
            return
        summary.done += 1
        if out.error is not None:
            note(out.kind or out.error)
        elif out.content is not None:
            jstore.keep_reply(
                cache,
                t.key,
                config.model,
                CachedReply(out.content, out.prompt_tokens, out.completion_tokens),
            )
            cached_now += 1
        keep(
            t,
            JudgeResult(
                t.qidx,
                t.prompt,
                t.rep,
                out.verdict,
                out.error,
                out.prompt_tokens,
                out.completion_tokens,
                spent,
                False,
            ),
        )
        if progress is not None:
            progress(summary.done, total)

    pool = cf.ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="judge")
    running: dict[cf.Future[_Outcome], Task] = {}
    holds: dict[cf.Future[_Outcome], float] = {}  # each one's reservation, settled by the task
    queue = iter(pending)
    held_back: Task | None = None  # refused by the budget while others were in flight
    interrupted = False
    try:
        exhausted = False
        while True:
            # keep the pool busy; each new request's worst case must fit the budget beside
            # what was spent and what the requests in flight hold
            while not exhausted and not stop.is_set() and len(running) < config.concurrency:
                nxt = held_back or next(queue, None)
                held_back = None
                if nxt is None:
                    exhausted = True
                    break
                held = budget.reserve(nxt.body)
                if held is None:
                    if running:  # their replies may cost less than they hold: ask again then
                        held_back = nxt
                    else:
                        summary.status = "budget"
                        exhausted = True
                    break
                fut = pool.submit(
                    _judge_one, client, nxt, ALL_PROMPTS[nxt.prompt], stop, budget, held
                )
                running[fut] = nxt
                holds[fut] = held
            if not running:
                break
            done, _ = cf.wait(running, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                t = running.pop(fut)
                holds.pop(fut)
                try:
                    outcome = fut.result()  # JudgeAuthError propagates from here
                except JudgeUnreachableError as e:
                    # given up on: this task is a judge error, nothing more is sent
                    summary.cause = e.cause
                    stop.set()
                    outcome = _Outcome(None, f"request failed: {e.cause}", e.cause, 0, 0, 1, None)
                finish(t, outcome)
            if stop.is_set() and summary.status == "complete" and summary.cause is None:
                summary.status = "cancelled"
            exhausted = exhausted or stop.is_set()
    except JudgeAuthError as e:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise JudgeAuthError(f"{e}; {_kept_after_auth(cached_now)}") from None
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
        summary.status = "interrupted"
    except Exception as e:
        # DuckDB turns a Ctrl-C inside a statement (the cache write) into its own error
        if type(e).__name__ != "InterruptException":
            raise
        interrupted = True
        stop.set()
        summary.status = "interrupted"
    finally:
        stop_now = stop.is_set() or interrupted
        pool.shutdown(wait=not stop_now, cancel_futures=True)
        for fut, held in holds.items():
            if fut.cancelled():  # never started: what it held is released, nothing was spent
                budget.settle(held, 0.0)
    summary.retries = client.retries
    summary.ledger = budget.ledger()
    summary.status = _outcome_status(summary.status, results, summary.cause)
    if RELEVANCE.name in config.metrics:
        summary.relevance_labels = keep_grades(store, config.model, graded)
    results = [r for r in results if r.prompt != RELEVANCE.name]  # kept as grades, not here
    if results:
        summary.judge = jstore.save_judge_set(
            store,
            ref,
            {
                "name": config.name or config.model,
                "model": config.model,
                "base_host": base_host(config.base_url),
                "prompts": {m: PROMPTS[m].version for m in config.metrics if m in PROMPTS},
                "repeats": config.repeats,
                "status": summary.status,
                "requests": summary.requests,
                "cache_hits": summary.cache_hits,
                "judge_errors": summary.judge_errors,
                "prompt_tokens": summary.prompt_tokens,
                "completion_tokens": summary.completion_tokens,
                "cost_usd": summary.cost_usd,
            },
            sorted(results, key=lambda r: (r.qidx, r.prompt, r.rep)),
        )
    return summary
