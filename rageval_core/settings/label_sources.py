"""The `labels` setting's grammar: an ordered, duplicate-free, comma-separated list of label
sources (rageval_core.evaluation.labels resolves it). Pure Python: Settings.check and the CLI read
it without loading the store."""

from __future__ import annotations

from rageval_core.errors import UsageError
from rageval_core.settings.schema import LABEL_SOURCES

IMPORTED = "imported"
LLM = "llm"
LLM_PREFIX = "llm:"


def _known() -> str:
    return ", ".join(LABEL_SOURCES) + " or llm:MODEL"


def parse_labels(text: object) -> tuple[str, ...]:
    """The sources of a `labels` value, in order (UsageError naming the bad part)."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"labels {text!r}: expected a comma-separated list of {_known()}")
    seen: list[str] = []
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            raise UsageError(f"labels {text!r}: an empty part (two commas, or one at an end)")
        model = part[len(LLM_PREFIX) :] if part.startswith(LLM_PREFIX) else None
        if part not in LABEL_SOURCES and not (model and model == model.strip()):
            raise UsageError(f"labels {text!r}: unknown source {part!r}; expected {_known()}")
        if part in seen:
            raise UsageError(f"labels {text!r}: {part!r} is given twice")
        seen.append(part)
    return tuple(seen)


def labels_text(text: str) -> str:
    """The canonical text of a `labels` value (spaces around the commas dropped)."""
    return ",".join(parse_labels(text))
