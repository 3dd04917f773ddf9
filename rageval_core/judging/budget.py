"""The judge's spending limit: a request's worst case (its prompt's bytes and max_tokens at the
judge's prices), reserved before it is sent and settled to its reply's reported cost."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any

#: tokens a chat template may add per message (role markers) and per request (the reply's
#: priming), on top of the messages' own: part of a request's worst case (Budget)
TEMPLATE_TOKENS_PER_MESSAGE = 8
TEMPLATE_TOKENS_PER_REQUEST = 8


def worst_prompt_tokens(messages: list[dict[str, str]]) -> int:
    """The most prompt tokens the messages can be: their UTF-8 bytes (a byte-level tokenizer's
    token is at least one byte) plus what a chat template adds."""
    return TEMPLATE_TOKENS_PER_REQUEST + sum(
        len(m["content"].encode("utf-8")) + TEMPLATE_TOKENS_PER_MESSAGE for m in messages
    )


@dataclass(frozen=True, slots=True)
class BudgetLedger:
    """A budget's account at the end of a run (USD): what replies cost, what was reserved."""

    limit_usd: float
    spent_usd: float
    reserved_usd: float  # still held (0 once every request in flight has settled)
    peak_reserved_usd: float  # the most held at once by requests in flight
    reservations: int  # requests sent under the budget
    refused_worst_case_usd: float | None  # the request that did not fit (None: none)
    overruns: int  # replies that cost more than their worst case (an endpoint that miscounts)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "left_usd": max(0.0, self.limit_usd - self.spent_usd)}


class Budget:
    """A hard spending limit shared by the judging threads.

    A request is sent only when its worst case (worst_prompt_tokens at the input price plus
    the body's max_tokens at the output price) fits beside what was spent and what the requests
    in flight hold; its reservation is settled to its reply's reported cost when it ends (0 when
    it got no reply). So the spend never passes the limit unless an endpoint reports more tokens
    than the worst case (counted as overruns). limit_usd None: no limit, the same bookkeeping.
    """

    def __init__(self, limit_usd: float | None, price_in: float, price_out: float) -> None:
        self.limit_usd = limit_usd
        self.price_in = price_in
        self.price_out = price_out
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.peak_reserved_usd = 0.0
        self.reservations = 0
        self.refused_usd: float | None = None
        self.overruns = 0
        self._lock = threading.Lock()

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return prompt_tokens * self.price_in / 1000 + completion_tokens * self.price_out / 1000

    def worst_usd(self, body: dict[str, Any]) -> float:
        return self.cost(worst_prompt_tokens(body["messages"]), int(body["max_tokens"]))

    def reserve(self, body: dict[str, Any]) -> float | None:
        """Hold the request's worst case and return it; None (nothing held) when it does not fit."""
        worst = self.worst_usd(body)
        with self._lock:
            if (
                self.limit_usd is not None
                and self.spent_usd + self.reserved_usd + worst > self.limit_usd
            ):
                self.refused_usd = worst
                return None
            self.reserved_usd += worst
            self.peak_reserved_usd = max(self.peak_reserved_usd, self.reserved_usd)
            self.reservations += 1
            return worst

    def settle(self, held: float, spent: float) -> None:
        """A request ended: release what it held, count what it cost."""
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - held)
            self.spent_usd += spent
            if spent > held * (1 + 1e-9):
                self.overruns += 1

    def ledger(self) -> BudgetLedger | None:
        if self.limit_usd is None:
            return None
        with self._lock:
            return BudgetLedger(
                self.limit_usd,
                self.spent_usd,
                self.reserved_usd,
                self.peak_reserved_usd,
                self.reservations,
                self.refused_usd,
                self.overruns,
            )
