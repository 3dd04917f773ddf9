"""The pieces of `rageval collect`: grid values typed, the grid's product, run names, and the
mapping's paths in a request and a reply."""

from __future__ import annotations

import pytest

from rageval_core.collect.grid import parse_grid, points, run_names, typed
from rageval_core.collect.mapping import (
    Mapping_,
    Paths,
    ReplyProblem,
    parse_path,
    read_reply,
    set_path,
)
from rageval_core.errors import UsageError


def test_grid_values_are_typed_as_json_would_type_them() -> None:
    assert [typed(v) for v in ("5", "-2", "0.5", "1e-3", "true", "False", "hybrid", "nan", "07")] == [
        5, -2, 0.5, 0.001, True, False, "hybrid", "nan", "07",
    ]  # fmt: skip
    assert type(typed("5")) is int and type(typed("true")) is bool


def test_the_grid_is_the_cartesian_product_last_axis_fastest() -> None:
    axes = parse_grid(["search_type=hybrid,keyword", "top_k=1,5,10"])
    grid = points(axes)
    assert len(grid) == 6
    assert grid[:3] == [
        {"search_type": "hybrid", "top_k": 1},
        {"search_type": "hybrid", "top_k": 5},
        {"search_type": "hybrid", "top_k": 10},
    ]
    assert points([]) == [{}]
    with pytest.raises(UsageError, match="at most 1,000"):
        parse_grid([f"p{i}=1,2,3,4" for i in range(5)])  # 1,024 points


def test_run_names_fill_the_template_and_refuse_a_collision() -> None:
    grid = points(parse_grid(["rerank=true,false"]))
    fields = {"endpoint_host": "h:1", "questions": "qa"}
    assert run_names("{questions} {endpoint_host} r={rerank}", grid, fields) == [
        "qa h:1 r=true",
        "qa h:1 r=false",
    ]
    with pytest.raises(UsageError, match="two grid points the name"):
        run_names("{endpoint_host}", grid, fields)


def test_paths_read_keys_and_list_items() -> None:
    assert parse_path("data.hits[0].doc.id") == ("data", "hits", 0, "doc", "id")
    assert parse_path("") == ()
    assert Paths.of(["missing", "a[1]"]).find({"a": [0, {"x": 1}]}) == ("a[1]", {"x": 1})
    body: dict = {"keep": 1}
    set_path(body, parse_path("options.filters[1].k"), 5)
    assert body == {"keep": 1, "options": {"filters": [None, {"k": 5}]}}


def test_the_default_mapping_fits_the_common_shape() -> None:
    m = Mapping_()
    assert m.request("q1", "what?", {"top_k": 5, "search_type": "vector"}) == {
        "top_k": 5,
        "search_type": "vector",
        "query": "what?",
    }
    got = read_reply(
        b'{"documents": [{"doc_id": 7, "content": "t", "relevance": 0.5}], "timings_ms": 3}',
        m,
    )
    assert [(c.doc_id, c.text, c.score) for c in got.chunks] == [("7", "t", 0.5)]
    assert got.latency_ms == {"request.server": 3.0}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"[" * 100_000, "reply: nests too deeply to be read"),
        (b'{"results": [1]}', "results[0]: is a number, not a chunk object"),
        (b'{"results": [{"id": true}]}', "results[0].id: is true/false, not an id"),
        (b'{"results": [{"id": "a", "score": 1e999}]}', "not a score (a finite number)"),
        (b'{"results": [{"id": "a", "text": 3}]}', "results[0].text: is a number, not text"),
        (b'{"results": [], "latency_ms": {"embed": -1}}', "latency_ms.embed: -1 is not a time"),
        (b'{"results": [], "usage": {"prompt": "many"}}', "usage.prompt: is text, not a number"),
    ],
)
def test_a_bad_reply_names_its_field(reply: bytes, message: str) -> None:
    with pytest.raises(ReplyProblem) as e:
        read_reply(reply, Mapping_())
    assert message in str(e.value)


def test_help_names_every_flag_the_default_name_and_the_docs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rageval_core.cli.dispatch import main

    with pytest.raises(SystemExit) as e:
        main(["collect", "--help"])
    assert e.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for flag in (
        "--questions", "--endpoint", "--grid", "--concurrency", "--name-template", "--mapping",
        "--timeout", "--retries", "--header-env", "--keep-partial", "--dry-run", "--json",
        "--db", "--format",
    ):  # fmt: skip
        assert flag in text
    assert "localhost:8000 search_type={search_type} top_k={top_k}" in text
    assert "docs/collect.md" in text
