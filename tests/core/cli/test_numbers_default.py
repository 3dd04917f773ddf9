"""The numbers guard is on by default (issue 27, point 3): a chunk stating another figure than the
gold span ("32 megabytes (32MB)" for "128 megabytes (128MB)", 0.86 to `partial`) is not evidence
unless --no-numbers-must-match is given; the presets keep their scripts' rule (off)."""

from __future__ import annotations

import json
from pathlib import Path

from rageval_core.matching.scorers import score_pairs
from tests.cli import rageval, rageval_subprocess

GOLD = "128 megabytes (128MB)"
NEAR = "The default block size is 32 megabytes (32MB)."


def write_run(path: Path) -> Path:
    """One query whose only chunk states another figure than its gold span; relevant_ids make
    the id-based metrics meaningful too."""
    q = {
        "query_id": "block",
        "query": "What is the default block size?",
        "retrieved": [{"doc_id": "d1", "text": NEAR, "score": 0.9}],
        "evidence": [GOLD],
    }
    path.write_text(json.dumps(q) + "\n", encoding="utf-8")
    return path


def evidence_recall(*flags: str, run: Path) -> float:
    done = rageval("evaluate", str(run), "--metrics", "EvidenceRecall@1", "--json", *flags)
    assert done.returncode == 0, done.stderr
    return float(json.loads(done.stdout)["metrics"]["EvidenceRecall@1"])


def test_the_pair_is_a_fuzzy_match() -> None:
    """The premise: without the guard the pair covers at the default threshold 0.7."""
    score = float(score_pairs([GOLD], [NEAR], [0], [0], scorer="partial", workers=1).score[0])
    assert 0.7 <= score < 1.0


def test_a_different_figure_is_not_evidence_by_default(tmp_path: Path) -> None:
    run = write_run(tmp_path / "near.jsonl")
    done = rageval_subprocess(
        "evaluate", str(run), "--metrics", "EvidenceRecall@1", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["metrics"]["EvidenceRecall@1"] == 0.0
    assert "numbers_must_match" not in out["settings"]  # the default is not spelled out
    off = rageval_subprocess(
        "evaluate", str(run), "--metrics", "EvidenceRecall@1", "--json",
        "--no-numbers-must-match", cwd=tmp_path,
    )  # fmt: skip
    assert off.returncode == 0, off.stderr
    out = json.loads(off.stdout)
    assert out["metrics"]["EvidenceRecall@1"] == 1.0
    assert out["settings"]["numbers_must_match"] is False


def test_the_flags_turn_the_guard_on_and_off(tmp_path: Path) -> None:
    run = write_run(tmp_path / "near.jsonl")
    assert evidence_recall(run=run) == 0.0
    assert evidence_recall("--numbers-must-match", run=run) == 0.0
    assert evidence_recall("--no-numbers-must-match", run=run) == 1.0
    # the last one given wins, as argparse's store actions do
    assert evidence_recall("--no-numbers-must-match", "--numbers-must-match", run=run) == 0.0
    assert evidence_recall("--numbers-must-match", "--no-numbers-must-match", run=run) == 1.0
    bad = rageval("evaluate", str(run), "--no-numbers-must-match=1")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_presets_keep_their_scripts_rule(tmp_path: Path) -> None:
    """EggAI's recall_score: 1 when a chunk's difflib similarity reaches 0.5; its script reads no
    figures, so the near-duplicate counts under the preset, and the guard given beside it
    overrides the preset as any flag does."""
    run = write_run(tmp_path / "near.jsonl")

    def recall(*flags: str) -> float:
        done = rageval("evaluate", str(run), "--preset", "eggai", "--json", *flags)
        assert done.returncode == 0, done.stderr
        return float(json.loads(done.stdout)["metrics"]["recall_score"])

    ratio = float(score_pairs([GOLD], [NEAR], [0], [0], scorer="difflib", workers=1).score[0])
    assert ratio >= 0.5  # the script's own verdict on the pair: a match
    assert recall() == 1.0
    assert recall("--numbers-must-match") == 0.0
