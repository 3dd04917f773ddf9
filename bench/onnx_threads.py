"""onnxruntime on both cores: one run on two intra-op threads, or two single-threaded runs at a
time (rageval_core.matching.onnx_models.WORKERS), on a MiniLM-sized stand-in graph.

    python -m bench.onnx_threads [N_TEXTS]

The graph is built here with onnx.helper (the test extra): token embeddings (384 wide) then six
blocks of MatMul 384 x 1,536, Relu, MatMul 1,536 x 384 and a residual Add; the texts are 20-120
words of the tests' tiny vocabulary. Prints wall and CPU time per configuration, three rounds.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tests import onnx_models as tiny

WIDTH, HIDDEN, BLOCKS = 384, 1536, 6


def write_model(folder: Path) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    init = [
        numpy_helper.from_array(
            rng.normal(0, 0.1, (len(tiny.VOCAB), WIDTH)).astype(np.float32), "E"
        )
    ]
    nodes = [helper.make_node("Gather", ["E", "input_ids"], ["h0"])]
    for b in range(BLOCKS):
        init += [
            numpy_helper.from_array(
                rng.normal(0, 0.05, (WIDTH, HIDDEN)).astype(np.float32), f"A{b}"
            ),
            numpy_helper.from_array(
                rng.normal(0, 0.05, (HIDDEN, WIDTH)).astype(np.float32), f"B{b}"
            ),
        ]
        nodes += [
            helper.make_node("MatMul", [f"h{b}", f"A{b}"], [f"u{b}"]),
            helper.make_node("Relu", [f"u{b}"], [f"r{b}"]),
            helper.make_node("MatMul", [f"r{b}", f"B{b}"], [f"v{b}"]),
            helper.make_node("Add", [f"h{b}", f"v{b}"], [f"h{b + 1}"]),
        ]
    nodes.append(helper.make_node("Identity", [f"h{BLOCKS}"], ["last_hidden_state"]))
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"])
        for n in ("input_ids", "attention_mask")
    ]
    out = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", WIDTH]
    )
    model = helper.make_model(
        helper.make_graph(nodes, "stand_in", inputs, [out], init),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(folder / "model.onnx"))
    tiny.write_tokenizer(folder)
    return folder


def main(n_texts: int = 400) -> None:
    import onnxruntime as ort

    from rageval_core.matching.onnx_models import MODEL_FILE, OnnxModel

    rng = np.random.default_rng(0)
    words = list(tiny.VOCAB)[4:]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(20, 120)))) for _ in range(n_texts)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_model(Path(tmp) / "m")
        for round_ in range(3):
            for workers, intra in ((1, 1), (1, 2), (2, 1)):
                model = OnnxModel(folder, workers=workers)
                options = ort.SessionOptions()
                options.intra_op_num_threads, options.inter_op_num_threads = intra, 1
                model._session = ort.InferenceSession(
                    str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
                )
                model.run(texts[:32])  # warm
                wall, cpu = time.perf_counter(), time.process_time()
                model.run(texts)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                print(
                    f"round {round_}: {workers} run(s) at a time x {intra} intra-op thread(s): "
                    f"{wall:.2f} s wall, {cpu:.2f} s CPU, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
