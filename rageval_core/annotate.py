"""What a person adds to a stored run later: a date, prices, run tags (checked here, stored by
rageval_core.store.runfacts), and notes on its queries. The dashboard's Runs page and drilldown
call these; nothing here re-imports or re-scores a run."""

from __future__ import annotations

import math
from datetime import datetime

from rageval_core.errors import UsageError
from rageval_core.store import RunRecord, RunRef, Store
from rageval_core.store.runfacts import RUN_TAGS, query_notes, set_query_note, update_run_facts

__all__ = ["RUN_TAGS", "attach_facts", "query_notes", "run_tags", "set_query_note"]


def run_tags(record: RunRecord) -> dict[str, str]:
    """The run's own tags ({"experiment": "chunking"}) from its run settings; {} when none."""
    tags = record.settings.get(RUN_TAGS)
    return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {}


def attach_facts(
    store: Store,
    ref: RunRef,
    *,
    created_at: str | None = None,
    prices: tuple[float | None, float | None] | None = None,
    tags: dict[str, str] | None = None,
) -> RunRecord:
    """Check and store a run's date (ISO 8601), prices (USD per 1K tokens, >= 0) and tags.

    UsageError names the fact and its problem; nothing is stored then.
    """
    if created_at is not None:
        created_at = created_at.strip()
        try:
            datetime.fromisoformat(created_at.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"created_at: {created_at!r} is not an ISO 8601 date (e.g. 2026-05-01 or "
                "2026-05-01T09:30:00Z)"
            ) from None
    if prices is not None:
        for label, value in zip(("prompt", "completion"), prices, strict=True):
            if value is not None and (not math.isfinite(value) or value < 0):
                raise UsageError(f"{label} price: {value!r} is not a price (USD per 1K, >= 0)")
    if tags:
        for key in tags:
            if not key.strip():
                raise UsageError("tags: a tag needs a name")
    return update_run_facts(store, ref, created_at=created_at, prices=prices, tags=tags)
