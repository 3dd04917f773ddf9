"""Where the tests find what lies outside tests/data: the repository and trec_eval's oracle files."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: trec_eval's own test files and expected outputs; they sit beside the project (../shared) for its
#: developers and CI, not in a user's clone
ORACLE = Path(os.environ.get("RAGEVAL_ORACLE") or REPO.parent / "shared" / "oracle" / "trec_eval")
ORACLE_MISSING = "trec_eval oracle files not found at ../shared/oracle"
#: inputs built from TAT-RAG's and EggAI's repositories for the seed-parity presets (README.md
#: there); RAGEVAL_PARITY points elsewhere, e.g. from a worktree whose parent has no shared/
PARITY = Path(os.environ.get("RAGEVAL_PARITY") or REPO.parent / "shared" / "parity")
PARITY_MISSING = "seed-parity inputs not found at ../shared/parity"


def in_ci() -> bool:
    """CI=true (or any value but empty/0/false/no): what may be skipped elsewhere must be there."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
