"""Scorer keys: the name pair scores are kept under and every layer passes around.

A lexical scorer's key is its name (`partial`); a semantic one joins its embedder
(`semantic:wordllama`, `hybrid:sentence-transformers:/models/x`). Parsed here only: the scorers
(scorers.py, semantic.py), the store's scores and the settings read a key through these.
"""

from __future__ import annotations

from rageval_core.errors import UsageError
from rageval_core.matching.embedders import DEFAULT_EMBEDDER, check_embedder_name

#: the scorers of this module (the others are lexical, scorers.py)
SEMANTIC_SCORERS = ("semantic", "hybrid")


def is_semantic(scorer: str) -> bool:
    """Whether scorer (a name or a key such as "semantic:wordllama") scores by meaning."""
    return scorer.partition(":")[0] in SEMANTIC_SCORERS


def scorer_key(scorer: str, embedder: str = DEFAULT_EMBEDDER) -> str:
    """The key pair scores are kept under: the embedder joins a semantic scorer's name, so two
    embedders never share scores ("semantic:wordllama"); a lexical scorer's key is its name."""
    return f"{scorer}:{embedder}" if scorer in SEMANTIC_SCORERS else scorer


def canonical_key(key: str) -> str:
    """key with the default embedder named when a semantic scorer's key names none."""
    return scorer_key(*split_key(key)) if is_semantic(key) else key


def split_key(key: str) -> tuple[str, str]:
    """(scorer, embedder) of a semantic scorer key; a bare "semantic" uses the default embedder."""
    scorer, sep, embedder = key.partition(":")
    if scorer not in SEMANTIC_SCORERS:
        raise UsageError(f"{key!r} is not a semantic scorer")
    embedder = embedder if sep else DEFAULT_EMBEDDER
    check_embedder_name(embedder)
    return scorer, embedder
