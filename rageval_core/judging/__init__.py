"""LLM judges on any OpenAI-compatible endpoint: run one over a stored run, read its scores.

    summary = run_judge(store, "bm25", JudgeConfig(base_url=..., model=...), progress=cb,
                        cancel=threading.Event())
    scores = judge_scores(store, data)            # per-query judge.* columns, for evaluate
    rep = repeatability(store, "bm25")            # with --repeats N: self-agreement

docs/judging.md describes the prompts, the cache, the cost ledger and the calibration.
"""

from __future__ import annotations

from rageval_core.judging.client import (
    ChatClient,
    JudgeAuthError,
    JudgeUnreachableError,
    RateLimiter,
)
from rageval_core.judging.prompts import PROMPTS, metric_names
from rageval_core.judging.runner import (
    DEFAULT_KEY_ENV,
    JudgeConfig,
    JudgeConfigError,
    JudgeSummary,
    estimate_judge,
    run_judge,
)
from rageval_core.judging.scores import Repeatability, judge_scores, repeatability

__all__ = [
    "DEFAULT_KEY_ENV",
    "PROMPTS",
    "ChatClient",
    "JudgeAuthError",
    "JudgeConfig",
    "JudgeConfigError",
    "JudgeSummary",
    "JudgeUnreachableError",
    "RateLimiter",
    "Repeatability",
    "estimate_judge",
    "judge_scores",
    "metric_names",
    "repeatability",
    "run_judge",
]
