"""CrossEncoderSimilarity of a stored run: scored once per (run, model) and kept.

The other answer metrics are kept at import and never depend on a setting; this one depends on
the cross-encoder (`--cross-encoder PATH`), so it is scored on first use with that model and kept
in answer_scores under "CrossEncoderSimilarity@<the model's content hash>": another model never
reads its values, and a second evaluation runs nothing.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rageval_core.errors import UsageError
from rageval_core.evaluation.report import Settings
from rageval_core.metrics.semantic_answers import (
    CROSS_ENCODER_SIMILARITY,
    CrossEncoderScores,
    cross_encoder_similarity,
)
from rageval_core.rundata import RunData, _floats, memo
from rageval_core.store import Store, answers


def cross_encoder_inputs(
    store: Store, data: RunData, settings: Settings
) -> tuple[CrossEncoderScores, NDArray[np.int64]]:
    """CrossEncoderSimilarity of the run's answered queries, and their row numbers."""
    path = settings.cross_encoder
    if not path:
        raise UsageError(
            f"{CROSS_ENCODER_SIMILARITY} needs a cross-encoder: --cross-encoder PATH (a folder "
            "with model.onnx and tokenizer.json; nothing is downloaded)"
        )
    from rageval_core.matching.onnx_models import model_identity

    try:
        identity = model_identity(path)  # ABSOLUTE_PATH@HASH: a new export is another model
    except UsageError as e:
        raise UsageError(f"--cross-encoder {e}") from e
    metric = f"{CROSS_ENCODER_SIMILARITY}@{identity.rpartition('@')[2]}"

    def make() -> tuple[CrossEncoderScores, NDArray[np.int64]]:
        rid = data.run.run_id
        kept = answers.kept_answer_scores(store, rid, [metric])
        if kept is None:
            qidx, texts, refs = answers.answered_texts(store, rid)
            values = cross_encoder_similarity(texts, refs, identity)
            answers.keep_answer_metric(store, rid, metric, qidx, values)
            kept = answers.kept_answer_scores(store, rid, [metric])
        if kept is None:  # pragma: no cover - just kept
            raise UsageError(f"{metric} of run {data.run.name} could not be kept")
        res = kept[metric]
        return CrossEncoderScores(_floats(res["value"])), np.asarray(res["qidx"], dtype=np.int64)

    return memo(data, ("cross_encoder", metric), make)  # type: ignore[no-any-return]
