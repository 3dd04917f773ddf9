"""The cross-encoder in the dashboard: its model folder from the sidebar (and the URL), its
threshold default, and a clear message without a model (AppTest; a tiny model: tests/onnx_models.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests import onnx_models as tiny
from tests.dashboard.conftest import wait_for_scores


def test_cross_encoder_from_the_url_scores_the_run(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    model = tiny.write_cross_encoder(tmp_path / "ce")
    at = make_app(run="bm25", scorer="cross-encoder", cross_encoder=str(model))
    wait_for_scores(at)
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.text_input(key="cross_encoder").value == str(model)
    assert at.sidebar.slider(key="threshold").value == 0.5  # the scorer's own default
    assert not at.error, [e.value for e in at.error]


def test_cross_encoder_without_a_model_says_what_to_give(make_app: Callable[..., AppTest]) -> None:
    at = make_app(run="bm25")
    at.sidebar.selectbox(key="scorer").select("cross-encoder").run()
    wait_for_scores(at)
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(str(e.value) for e in at.error) + " ".join(c.value for c in at.code)
    assert "--cross-encoder PATH" in shown


def test_an_onnx_embedder_from_the_url_is_the_sidebar_s_choice_and_scores_the_run(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    model = tiny.write_embedder(tmp_path / "emb")
    at = make_app(run="bm25", scorer="semantic", embedder=f"onnx:{model}")
    wait_for_scores(at)
    assert not at.exception, [e.value for e in at.exception]
    box = at.sidebar.selectbox(key="embedder")
    assert box.value == f"onnx:{model}"
    assert f"onnx:{model}" in box.options and "wordllama" in box.options
    assert box.proto.accept_new_options  # a model folder can be typed in, as --embedder takes it
    assert not at.error, [e.value for e in at.error]
