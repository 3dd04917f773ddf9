"""The semantic scorers' vector cache in the store (table embeddings, by embedder and text hash).

A StoreVectors works on the cursor of the transaction that scores a run, so the vectors of an
interrupted scoring are rolled back with its scores. The semantic module defines what a vector
is; this one only keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray


class StoreVectors:
    """semantic.VectorCache on a DuckDB cursor (inside the caller's transaction)."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def get(self, embedder: str, hashes: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        if not hashes:
            return {}
        rageval_hashes = pa.table({"h": pa.array(list(hashes), type=pa.string())})  # noqa: F841
        found = self.cur.sql(
            "SELECT text_hash, vector FROM embeddings WHERE embedder = ? "
            "AND text_hash IN (SELECT h FROM rageval_hashes)",
            params=[embedder],
        ).to_arrow_table()
        if found.num_rows == 0:
            return {}
        column = found.column("vector").combine_chunks()
        flat = column.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        rows = flat.reshape(found.num_rows, -1)
        return dict(zip(found.column("text_hash").to_pylist(), rows, strict=True))

    def put(self, embedder: str, hashes: Sequence[str], vectors: NDArray[np.float32]) -> None:
        if not len(hashes):
            return
        n, dim = vectors.shape
        offsets = pa.array(np.arange(0, n * dim + 1, dim, dtype=np.int32))
        rageval_vectors = pa.table(  # noqa: F841 (read by name in the SQL below)
            {
                "h": pa.array(list(hashes), type=pa.string()),
                "v": pa.ListArray.from_arrays(offsets, pa.array(vectors.reshape(-1))),
            }
        )
        # a text kept meanwhile (another run scored in between) keeps its first vector
        self.cur.execute(
            "INSERT INTO embeddings SELECT ?, h, v FROM rageval_vectors ON CONFLICT DO NOTHING",
            [embedder],
        )


def kept_vector_count(store: Any, embedder: str) -> int:
    """How many vectors the store keeps for embedder."""
    with store._cursor() as cur:
        rows = cur.execute("SELECT count(*) FROM embeddings WHERE embedder = ?", [embedder])
        return int(rows.fetchall()[0][0])
