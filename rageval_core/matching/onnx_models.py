"""Local ONNX text models from a folder on disk: a sentence embedder and a cross-encoder.

A model folder holds `model.onnx` and `tokenizer.json`, as fastembed and flashrank ship them and
optimum exports them (`optimum-cli export onnx --model NAME DIR`); onnxruntime runs the graph and
the Hugging Face `tokenizers` package the tokenizer (`pip install 'rageval[models]'`). Only a PATH
is ever read: nothing is downloaded, and a missing folder or file, an unreadable model or a graph
that does not take token ids is a UsageError (exit 2) naming the path.

The texts are tokenized, truncated to the model's max length, sorted by length and run in
batches padded to their longest text (so padding costs little), on both cores. The graph's own
inputs decide what is fed: input_ids always, attention_mask and token_type_ids when it declares
them.

- OnnxEmbedder (`--embedder onnx:PATH`): the token vectors (the first output, batch x tokens x
  dim) averaged over the attention mask, then scaled to unit length; a graph whose first output
  is already one vector per text (batch x dim) is only scaled.
- CrossEncoder (`--scorer cross-encoder --cross-encoder PATH`, CrossEncoderSimilarity): a pair of
  texts in one input (`[CLS] a [SEP] b [SEP]`, the tokenizer's pair template); the first output is
  the relevance logit, mapped to (0, 1) by the sigmoid (MS-MARCO cross-encoders export raw
  logits); a two-column output is read as (not relevant, relevant) and its softmax's second column
  taken.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError

MODEL_FILE, TOKENIZER_FILE = "model.onnx", "tokenizer.json"
#: the inputs a text model's graph may declare (any other required input: not a text model)
TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
#: the max length when neither the tokenizer nor the model's config states one (BERT's)
DEFAULT_MAX_LENGTH = 512
#: texts (or pairs) per batch: padded to their longest, so sorted by length first
BATCH_SIZE = 32
#: batches run at a time (onnxruntime releases the GIL): both cores of the machine
WORKERS = 2
INSTALL = "pip install 'rageval[models]'"


def _fail(path: Path | str, problem: str) -> UsageError:
    return UsageError(f"{path}: {problem}")


def model_files(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the model folder path (UsageError naming what is missing)."""
    folder = Path(path).expanduser()
    if not str(path).strip():
        raise UsageError("an ONNX model needs a folder: give its PATH (nothing is downloaded)")
    if not folder.is_dir():
        raise _fail(folder, "no such model folder (a folder with model.onnx and tokenizer.json)")
    model, tokenizer = folder / MODEL_FILE, folder / TOKENIZER_FILE
    for f in (model, tokenizer):
        if not f.is_file():
            raise _fail(f, f"missing: an ONNX model folder holds {MODEL_FILE} and {TOKENIZER_FILE}")
    return model, tokenizer


def model_hash(path: str | os.PathLike[str]) -> str:
    """12 hex digits of BLAKE2b over the folder's model.onnx and tokenizer.json: the model's
    identity in keys of kept scores and vectors (the same files at another path: the same).
    Read once per process while the files' sizes and modification times stay the same."""
    files = model_files(path)
    try:
        stamp = tuple((str(f.resolve()), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    except OSError as e:
        raise _fail(Path(path), f"unreadable ({e.strerror or e})") from e
    return _hash_files(stamp)


@functools.lru_cache(maxsize=64)
def _hash_files(stamp: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.blake2b(digest_size=6)
    for name, _, _ in stamp:
        f = Path(name)
        try:
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError as e:
            raise _fail(f, f"unreadable ({e.strerror or e})") from e
        h.update(b"\0")
    return h.hexdigest()


def model_identity(path: str) -> str:
    """ "PATH@HASH": the model folder as a key names it (scores and vectors kept per model)."""
    folder = str(Path(model_path(path)).expanduser().resolve())
    return f"{folder}@{model_hash(folder)}"


def model_path(identity: str) -> str:
    """The folder of a model's identity ("PATH@HASH" or a bare PATH), with its hash left off."""
    path, sep, digest = identity.strip().rpartition("@")
    if sep and len(digest) == 12 and all(c in "0123456789abcdef" for c in digest):
        return path
    return identity.strip()


def _max_length(folder: Path, tokenizer_json: dict[str, Any]) -> int:
    """The longest input the model takes: tokenizer.json's truncation, else config.json's
    max_position_embeddings or tokenizer_config.json's model_max_length, else 512."""
    found: list[int] = []
    trunc = tokenizer_json.get("truncation") or {}
    if isinstance(trunc.get("max_length"), int):
        found.append(trunc["max_length"])
    for name, key in (
        ("config.json", "max_position_embeddings"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        try:
            value = json.loads((folder / name).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        # tokenizer_config's "no limit" is 1e30 (then config.json's positions decide)
        if isinstance(value, int) and 0 < value < 1_000_000:
            found.append(value)
    return min(found) if found else DEFAULT_MAX_LENGTH


@dataclass
class OnnxModel:
    """A model folder loaded: the session, the tokenizer and the inputs the graph declares."""

    path: Path
    workers: int = WORKERS
    batch_size: int = BATCH_SIZE
    max_length: int = 0
    identity: str = ""
    inputs: dict[str, str] = field(default_factory=dict)  # name -> numpy dtype name
    _session: Any = field(init=False, repr=False)
    _tokenizer: Any = field(init=False, repr=False)
    _pad_id: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        model, tok_file = model_files(self.path)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise UsageError(
                f"{self.path}: an ONNX model needs onnxruntime and tokenizers: {INSTALL}"
            ) from e
        self.identity = model_hash(self.path)
        try:
            spec = json.loads(tok_file.read_text(encoding="utf-8"))
            self._tokenizer = Tokenizer.from_str(json.dumps(spec))
        except Exception as e:  # tokenizers raises its own Exception subclass for a bad file
            raise _fail(tok_file, f"not a tokenizers tokenizer.json ({_short(e)})") from e
        self.max_length = self.max_length or _max_length(self.path, spec)
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_length)
        padding = spec.get("padding") or {}
        self._pad_id = int(padding.get("pad_id", self._tokenizer.token_to_id("[PAD]") or 0))
        options = ort.SessionOptions()
        # one thread per run, runs on WORKERS threads (measured faster than one run on two
        # threads for batches of short texts: docs/semantic.md)
        options.intra_op_num_threads = 1 if self.workers > 1 else 2
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # onnxruntime's own errors (InvalidProtobuf, Fail ...)
            raise _fail(model, f"onnxruntime cannot load it ({_short(e)})") from e
        types = {"tensor(int64)": "int64", "tensor(int32)": "int32"}
        for node in self._session.get_inputs():
            if node.name not in TEXT_INPUTS:
                raise _fail(
                    model,
                    f"the graph wants an input {node.name!r}; a text model's are "
                    + ", ".join(TEXT_INPUTS),
                )
            if node.type not in types:
                raise _fail(model, f"input {node.name!r} is {node.type}, not integer token ids")
            self.inputs[node.name] = types[node.type]
        if "input_ids" not in self.inputs:
            raise _fail(model, "the graph takes no input_ids: not a text model")

    def run(self, texts: Sequence[str] | Sequence[tuple[str, str]]) -> list[NDArray[np.float32]]:
        """The first output of the graph for each text (or pair), in the order given: one array
        per text (its padding cut off for a per-token output), and the attention mask's count."""
        if not texts:
            return []
        encoded = self._tokenizer.encode_batch(list(texts), add_special_tokens=True)
        lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(encoded))
        order = np.argsort(lengths, kind="stable")
        batches = [order[lo : lo + self.batch_size] for lo in range(0, len(order), self.batch_size)]
        out: list[NDArray[np.float32]] = [np.empty(0, dtype=np.float32)] * len(texts)

        def one(batch: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
            return batch, self._run_batch([encoded[i] for i in batch.tolist()])

        if self.workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="rageval-onnx") as pool:
                done = list(pool.map(one, batches))
        else:
            done = [one(b) for b in batches]
        for batch, rows in done:
            for k, i in enumerate(batch.tolist()):
                n = int(lengths[i])
                out[i] = rows[k, :n] if rows.ndim == 3 else rows[k]
        return out

    def _run_batch(self, encodings: list[Any]) -> NDArray[np.float32]:
        width = max(1, max(len(e.ids) for e in encodings))
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for r, e in enumerate(encodings):
            n = len(e.ids)
            ids[r, :n], mask[r, :n], types[r, :n] = e.ids, e.attention_mask, e.type_ids
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = {name: given[name].astype(dtype) for name, dtype in self.inputs.items()}
        try:
            first = self._session.run(None, feed)[0]
        except Exception as e:  # a graph that fails on real inputs (wrong shapes, ops ...)
            raise _fail(
                self.path / MODEL_FILE, f"onnxruntime failed to run it ({_short(e)})"
            ) from e
        return np.asarray(first, dtype=np.float32)


def _short(e: BaseException) -> str:
    """The first line of an error's message, at most 200 characters (one-line errors)."""
    text = str(e).strip().splitlines()
    line = text[0] if text else type(e).__name__
    return line if len(line) <= 200 else line[:197] + "..."


def load_model(path: str) -> OnnxModel:
    """The model folder at path, loaded once per process while its files stay the same (a
    folder exported again is loaded again: its hash, and so its keys, changed)."""
    return _load(path, model_hash(Path(path).expanduser()))


@functools.cache
def _load(path: str, digest: str) -> OnnxModel:
    return OnnxModel(Path(path).expanduser())


def _load_as(flag: str, path: str) -> OnnxModel:
    """The model at path, its errors starting with the flag that named it."""
    try:
        return load_model(path)
    except UsageError as e:
        raise UsageError(f"{flag}{e}") from e


def mean_pool(rows: Sequence[NDArray[np.float32]], dim: int) -> NDArray[np.float32]:
    """Each text's token vectors (tokens x dim, padding already cut off) averaged; a text's
    single vector (dim) kept as it is; unit length, a zero row for a text with no token."""
    out = np.zeros((len(rows), dim), dtype=np.float32)
    for i, r in enumerate(rows):
        if r.ndim == 2 and r.shape[0]:
            out[i] = r.mean(axis=0, dtype=np.float64)
        elif r.ndim == 1:
            out[i] = r
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


@dataclass
class OnnxEmbedder:
    """`--embedder onnx:PATH`: a sentence-embedding model folder (embedders.Embedder's interface).

    name (the key of its kept vectors) joins the model's content hash: another model at the same
    path never reuses vectors."""

    model_path: str
    name: str = ""
    dim: int = 0
    additive: bool = False
    _model: OnnxModel = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.model_path = model_path(self.model_path)
        self._model = _load_as("--embedder onnx:", self.model_path)
        self.name = f"onnx:{self.model_path}@{self._model.identity}"
        probe = self._model.run(["probe"])[0]
        self.dim = int(probe.shape[-1])
        if probe.ndim not in (1, 2) or self.dim < 2:
            raise UsageError(
                f"--embedder onnx:{self._model.path / MODEL_FILE}: not a sentence-embedding "
                f"model: its first output has shape {probe.shape} per text (token vectors or one vector "
                "expected; a cross-encoder's one logit goes to --cross-encoder)"
            )

    def embed_raw(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit rows; a text with nothing but white space: a zero row (as wordllama's)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        if todo:
            out[todo] = mean_pool(self._model.run([texts[i] for i in todo]), self.dim)
        return out


def relevance(logits: NDArray[np.float32]) -> NDArray[np.float64]:
    """(0, 1) relevance of each pair from a cross-encoder's output: the sigmoid of a single logit
    (batch or batch x 1); of a (not relevant, relevant) pair of logits, the softmax's second."""
    x = np.asarray(logits, dtype=np.float64)
    if x.ndim == 2 and x.shape[1] == 2:
        x = x[:, 1] - x[:, 0]  # softmax([a, b])[1] == sigmoid(b - a)
    x = x.reshape(len(x), -1)[:, 0] if x.ndim > 1 else x
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # the sigmoid, without overflow for large logits


@dataclass
class CrossEncoder:
    """A cross-encoder model folder: relevance in (0, 1) of text pairs (a span and a chunk, an
    answer and a reference answer)."""

    model_path: str
    identity: str = ""
    _model: OnnxModel = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.model_path = model_path(self.model_path)
        self._model = _load_as("--cross-encoder ", self.model_path)
        self.identity = self._model.identity
        probe = self._model.run([("probe", "probe")])[0]
        if probe.size not in (1, 2):
            raise UsageError(
                f"--cross-encoder {self._model.path / MODEL_FILE}: not a cross-encoder: its first "
                f"output has {probe.size} values per pair (one relevance logit, or two: not "
                "relevant, relevant)",
            )

    def score(self, pairs: Sequence[tuple[str, str]]) -> NDArray[np.float64]:
        """Relevance of each (a, b) pair; an empty text on either side scores 0."""
        out = np.zeros(len(pairs), dtype=np.float64)
        todo = [i for i, (a, b) in enumerate(pairs) if a.strip() and b.strip()]
        if todo:
            rows = self._model.run([pairs[i] for i in todo])
            out[todo] = relevance(np.stack([r.reshape(-1) for r in rows]))
        return out


@functools.cache
def get_cross_encoder(path: str) -> CrossEncoder:
    """The cross-encoder at path, loaded once per process."""
    return CrossEncoder(path)
