"""Every command example of README.md and docs/ runs as written (tests/doc_examples.py).

Each document's examples run in order in a sandbox holding the sample runs; an example ends with
the exit code the doc gives (0 unless `# exit N`), and the output a `console` block shows under
it is the output it prints. An example the doc marks `# needs: WHAT` is not run: the doc says
why to its reader. `make docs-examples` writes the shown outputs anew when the numbers move.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.doc_examples import (
    DOCS,
    Example,
    copy_sandbox,
    examples,
    make_sandbox,
    output_lines,
    run_in,
)
from tests.paths import ORACLE, ORACLE_MISSING, REPO, in_ci

RUN = [doc for doc in DOCS if examples(doc)]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sandbox(tmp_path_factory.mktemp("docs") / "sandbox")


@pytest.mark.parametrize("doc", RUN, ids=[str(d.relative_to(REPO)) for d in RUN])
def test_every_command_example_runs_as_written(doc: Path, template: Path, tmp_path: Path) -> None:
    sandbox = copy_sandbox(template, tmp_path / "sandbox")
    problems: list[str] = []
    left: list[str] = []
    for e in examples(doc):
        if e.needs is not None:
            continue
        if e.uses_oracle and not ORACLE.is_dir():
            if in_ci():
                pytest.fail(f"{ORACLE_MISSING} ({ORACLE}); {e.where} reads them")
            left.append(e.where)
            continue
        done = run_in(sandbox, e.command)
        if done.returncode != e.exit_code:
            problems.append(
                f"{e.where}: `{e.command}` exited {done.returncode}, not {e.exit_code}: "
                f"{done.stderr.strip()[-500:]}"
            )
        elif e.shown is not None and output_lines(done) != list(e.shown[2]):
            problems.append(
                f"{e.where}: `{e.command}` printed other lines than the doc shows "
                "(`make docs-examples` writes them anew):\n" + "\n".join(output_lines(done))
            )
    assert not problems, "\n\n".join(problems)
    if left:
        pytest.skip(f"{ORACLE_MISSING}: not run: {', '.join(left)}")


def test_the_docs_hold_examples_and_say_why_one_is_not_run() -> None:
    found = [e for doc in DOCS for e in examples(doc)]
    assert len(found) >= 20
    # the sample comparison of docs/compare.md is an example whose whole output is checked
    (sample,) = [e for e in found if e.command == "rageval compare bm25 tfidf_char hybrid_rerank"]
    assert sample.doc.name == "compare.md" and sample.shown and len(sample.shown[2]) > 50
    for e in found:
        # a synopsis (RUN, FILE_OR_GLOB, [--flag]) belongs in a text block, not among examples
        words = re.findall(r"(?<![\w/.$:-])[A-Z][A-Z_]{2,}(?![\w/.])", e.command.split("#")[0])
        assert not words and "[--" not in e.command, (e.where, words)
    needs = [e for e in found if e.needs]
    # what the sandbox cannot have: an LLM endpoint's key, Spark, a model on disk, a browser
    assert all(e.needs and len(e.needs) >= 5 for e in needs)
    assert len(needs) <= 10, [e.where for e in needs]


def test_examples_are_read_as_the_module_says(template: Path, tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n\n```console\n$ rageval runs --json\n[]\n$ rageval show x  # exit 2\n```\n\n"
        "```text\nrageval import FILE...\n$ rageval runs\n```\n\n"
        "```sh\nrageval judge r --base-url U \\\n    --model m  # needs: an endpoint\n"
        "pip install x\n```\n"
    )
    found = examples(doc)
    assert [(e.line, e.command, e.exit_code, e.needs) for e in found] == [
        (4, "rageval runs --json", 0, None),
        (6, "rageval show x  # exit 2", 2, None),
        (11, "rageval runs", 0, None),
        (
            15,
            "rageval judge r --base-url U \\\n    --model m  # needs: an endpoint",
            0,
            "an endpoint",
        ),
    ]
    assert found[0].shown == (4, 5, ("[]",)) and found[1].shown is None
    sandbox = copy_sandbox(template, tmp_path / "box")
    assert output_lines(run_in(sandbox, found[0].command)) != ["[]"]  # the sample runs are there
    assert run_in(sandbox, found[1].command).returncode == 2
    assert isinstance(found[0], Example)
