from __future__ import annotations

from collections.abc import Iterator

import pytest

import rageval as rv
from tests.core.diagnosis import runs


@pytest.fixture(scope="module")
def built() -> Iterator[rv.LoadedRun]:
    """The evidence run whose every reason is known by construction (runs.py)."""
    with rv.load(runs.evidence_records(), name="built") as run:
        yield run


@pytest.fixture(scope="module")
def built_ids() -> Iterator[rv.LoadedRun]:
    with rv.load(runs.ids_records(), name="built-ids") as run:
        yield run
