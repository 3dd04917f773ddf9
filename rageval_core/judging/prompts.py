"""The judge's prompts, one per metric family, and the lenient reading of its replies.

The prompts follow the source documents: faithfulness labels an answer supported, insufficient
or contradicted by the numbered contexts and cites them; retrieval quality scores the contexts
(passing at retrieval_quality_score >= 0.7); answer quality scores correctness, completeness,
conciseness and citation accuracy. Each prompt has a version: changing its text changes the
version, so cached replies and stored result sets always say which prompt they answer.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: a chunk's text is cut to this many characters in a prompt (a judge reads the start)
MAX_CONTEXT_CHARS = 4_000
#: the retrieval judgment passes at this retrieval_quality_score (the source document's 0.7)
PASS_AT = 0.7
FAITHFULNESS_LABELS = ("supported", "insufficient", "contradicted")


@dataclass(frozen=True, slots=True)
class Item:
    """What one query gives a prompt: its texts, contexts numbered from 1."""

    query: str
    contexts: tuple[str, ...]
    answer: str | None
    reference_answer: str | None
    evidence: tuple[str, ...]


#: what the retry after an invalid reply adds to the conversation
RETRY_NOTE = (
    "Your reply could not be read: {problem}. Reply again with only the JSON object asked for."
)


class BadReply(ValueError):
    """A reply that is not the JSON object the prompt asks for; the message says why."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """One judge prompt: its messages for an item and the check of its reply."""

    name: str
    version: str
    #: the verdict's keys that are scores in [0, 1] (judge.<key>) or labels (judge.<key>.<label>)
    scores: tuple[str, ...]
    labels: Mapping[str, tuple[str, ...]]
    system: str
    build: Callable[[Item], str]
    needs_answer: bool
    #: reads a reply that is not JSON (the relevance prompt's "##final score: N"); None: JSON
    reader: Callable[[str], dict[str, Any]] | None = None
    #: what the retry after an invalid reply adds to the conversation ({problem}: why)
    retry_note: str = RETRY_NOTE

    def applies(self, item: Item) -> bool:
        """Whether the query can be judged with this prompt (an answer, contexts)."""
        if self.needs_answer and not item.answer:
            return False
        return bool(item.contexts) or self.needs_answer

    def messages(self, item: Item) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.build(item)},
        ]

    def validate(self, obj: Any) -> dict[str, Any]:
        """The verdict: the expected keys checked (extra keys dropped, notes and evidence kept)."""
        if not isinstance(obj, dict):
            raise BadReply(f"expected a JSON object, got {type(obj).__name__}")
        out: dict[str, Any] = {}
        for key in self.scores:
            value = obj.get(key)
            if isinstance(value, str):  # "0.8" from a loose model
                with contextlib.suppress(ValueError):
                    value = float(value)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise BadReply(f"{key}: expected a number in [0, 1], got {value!r}")
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                raise BadReply(f"{key}: expected a number in [0, 1], got {value!r}")
            out[key] = float(value)
        for key, allowed in self.labels.items():
            value = obj.get(key)
            label = value.strip().lower() if isinstance(value, str) else None
            if label not in allowed:
                raise BadReply(f"{key}: expected one of {', '.join(allowed)}, got {value!r}")
            out[key] = label
        if "evidence" in obj:
            evidence = obj["evidence"]
            if not isinstance(evidence, list):
                evidence = [evidence]
            out["evidence"] = sorted(
                {
                    int(e)
                    for e in evidence
                    if isinstance(e, (int, float)) and not isinstance(e, bool)
                }
                | {int(e) for e in evidence if isinstance(e, str) and e.strip().isdigit()}
            )
        if isinstance(obj.get("notes"), str):
            out["notes"] = obj["notes"][:2_000]
        return out


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def parse_reply(text: str, prompt: Prompt) -> dict[str, Any]:
    """The verdict in a reply: the whole text as JSON, else a fenced block, else the outermost
    {...}; then validated. BadReply when none of them is a valid verdict."""
    if prompt.reader is not None:
        return prompt.reader(text)
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    problem = "no JSON object in the reply"
    for candidate in candidates:
        try:
            obj = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        try:
            return prompt.validate(obj)
        except BadReply as e:
            problem = str(e)
    raise BadReply(problem)


def _contexts(item: Item) -> str:
    if not item.contexts:
        return "(no contexts were retrieved)"
    return "\n\n".join(
        f"[{i}] {text[:MAX_CONTEXT_CHARS]}" for i, text in enumerate(item.contexts, 1)
    )


_JSON_ONLY = "Reply with the JSON object only."

FAITHFULNESS = Prompt(
    name="faithfulness",
    version="faithfulness-v1",
    scores=(),
    labels={"faithfulness": FAITHFULNESS_LABELS},
    system=(
        "You check whether an answer is faithful to the retrieved contexts it was written from. "
        "Judge only against the contexts, not your own knowledge."
    ),
    build=lambda item: (
        f"Question:\n{item.query}\n\nContexts:\n{_contexts(item)}\n\nAnswer:\n{item.answer}\n\n"
        "Label the answer:\n"
        '- "supported": every claim in the answer is stated in or follows from the contexts;\n'
        '- "insufficient": some claim is not in the contexts (they do not say either way);\n'
        '- "contradicted": some claim conflicts with the contexts.\n'
        "List the numbers of the contexts that support or contradict it as evidence.\n"
        'Return {"faithfulness": "supported|insufficient|contradicted", "evidence": '
        '[context numbers], "notes": "one or two sentences"}. ' + _JSON_ONLY
    ),
    needs_answer=True,
)

RETRIEVAL_QUALITY = Prompt(
    name="retrieval_quality",
    version="retrieval_quality-v1",
    scores=("retrieval_quality_score", "completeness_score", "relevance_score"),
    labels={},
    system=(
        "You rate how well retrieved contexts serve a question, as a search quality rater would."
    ),
    build=lambda item: (
        f"Question:\n{item.query}\n\nRetrieved contexts:\n{_contexts(item)}\n\n"
        + (
            "Text a correct answer needs (gold evidence):\n"
            + "\n".join(f"- {e}" for e in item.evidence)
            + "\n\n"
            if item.evidence
            else ""
        )
        + (f"Reference answer:\n{item.reference_answer}\n\n" if item.reference_answer else "")
        + "Score from 0 to 1:\n"
        "- completeness_score: the contexts hold everything needed to answer;\n"
        "- relevance_score: the share of the contexts that is about the question;\n"
        "- retrieval_quality_score: overall, how well the contexts let someone answer "
        f"(>= {PASS_AT} means good enough).\n"
        'Return {"retrieval_quality_score": number, "completeness_score": number, '
        '"relevance_score": number, "notes": "one or two sentences"}. ' + _JSON_ONLY
    ),
    needs_answer=False,
)

ANSWER_QUALITY = Prompt(
    name="answer_quality",
    version="answer_quality-v1",
    scores=("correctness", "completeness", "conciseness", "citation_accuracy"),
    labels={},
    system="You grade an answer to a question against the contexts and a reference answer.",
    build=lambda item: (
        f"Question:\n{item.query}\n\nContexts:\n{_contexts(item)}\n\n"
        + (
            f"Reference answer:\n{item.reference_answer}\n\n"
            if item.reference_answer
            else "There is no reference answer: judge correctness against the contexts.\n\n"
        )
        + f"Answer:\n{item.answer}\n\n"
        "Score from 0 to 1:\n"
        "- correctness: the answer's claims are right;\n"
        "- completeness: it covers what the question asks;\n"
        "- conciseness: it says it without padding or repetition;\n"
        "- citation_accuracy: the contexts it cites (or relies on) do say what it claims "
        "(1 when it cites nothing and needs nothing).\n"
        'Return {"correctness": number, "completeness": number, "conciseness": number, '
        '"citation_accuracy": number, "notes": "one or two sentences"}. ' + _JSON_ONLY
    ),
    needs_answer=True,
)

PROMPTS: dict[str, Prompt] = {p.name: p for p in (FAITHFULNESS, RETRIEVAL_QUALITY, ANSWER_QUALITY)}

#: UMBRELA's zero-shot prompt (Upadhyay et al. 2024, castorini/umbrela's qrel_zeroshot_bing.txt,
#: after Thomas et al. 2023), word for word: docs/judging.md ("Relevance labels")
UMBRELA = (
    "Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with "
    "the following meanings:\n"
    "0 = represent that the passage has nothing to do with the query, \n"
    "1 = represents that the passage seems related to the query but does not answer it, \n"
    "2 = represents that the passage has some answer for the query, but the answer may be a bit "
    "unclear, or hidden amongst extraneous information and \n"
    "3 = represents that the passage is dedicated to the query and contains the exact answer.\n"
    "\n"
    "Important Instruction: Assign category 1 if the passage is somewhat related to the topic "
    "but not completely, category 2 if passage presents something very important related to the "
    "entire topic but also has some extra information and category 3 if the passage only and "
    "entirely refers to the topic. If none of the above satisfies give it category 0.\n"
    "\n"
    "Query: {query}\n"
    "Passage: {passage}\n"
    "\n"
    "Split this problem into steps:\n"
    "Consider the underlying intent of the search.\n"
    "Measure how well the content matches a likely intent of the query (M).\n"
    "Measure how trustworthy the passage is (T).\n"
    "Consider the aspects above and the relative importance of each, and decide on a final score "
    "(O). Final score must be an integer value only.\n"
    "Do not provide any code in result. Provide each score in the format of: ##final score: "
    "score without providing any reasoning."
)
RELEVANCE_GRADES = (0, 1, 2, 3)
_FINAL = re.compile(r"#*\s*final\s+score\s*[:=]\s*\**\s*([^\s*#,;]+)", re.IGNORECASE)


def read_final_score(text: str) -> dict[str, Any]:
    """{"relevance": N} from a reply's "##final score: N", N an integer 0..3 (2.0 is 2). BadReply
    when there is none, when it is not such an integer, or when two final scores differ: a grade
    is never guessed."""
    found = _FINAL.findall(text)
    if not found:
        raise BadReply("no '##final score: N' in the reply")
    grades = set()
    for raw in found:
        try:
            value = float(raw.strip().rstrip("."))
        except ValueError:
            raise BadReply(f"final score {raw!r} is not a number") from None
        if not (math.isfinite(value) and value.is_integer() and int(value) in RELEVANCE_GRADES):
            raise BadReply(f"final score {raw!r} is not an integer from 0 to 3")
        grades.add(int(value))
    if len(grades) > 1:
        raise BadReply(f"the reply gives several final scores: {sorted(grades)}")
    return {"relevance": grades.pop()}


RELEVANCE = Prompt(
    name="relevance",
    version="relevance-umbrela-v1",
    scores=(),
    labels={},
    system="You are a search quality rater evaluating the relevance of passages.",
    build=lambda item: UMBRELA.format(
        query=item.query, passage=(item.contexts[0] if item.contexts else "")[:MAX_CONTEXT_CHARS]
    ),
    needs_answer=False,
    reader=read_final_score,
    retry_note="Your reply could not be read: {problem}. Reply again with only "
    "'##final score: N', N an integer from 0 to 3.",
)

#: every prompt `rageval judge --metrics` knows: the per-query ones and relevance (one request
#: per top-k chunk, kept as llm:MODEL grades: judging/relevance.py)
ALL_PROMPTS: dict[str, Prompt] = {**PROMPTS, RELEVANCE.name: RELEVANCE}


def metric_names(prompts: Sequence[str]) -> list[str]:
    """The judge.* metrics those prompts fill (labels: one per label; pass_rate with retrieval)."""
    out: list[str] = []
    for name in prompts:
        p = ALL_PROMPTS[name]
        out += [f"judge.{key}" for key in p.scores]
        out += [f"judge.{key}.{label}" for key, labels in p.labels.items() for label in labels]
        if name == "retrieval_quality":
            out.append("judge.pass_rate")
    return out
