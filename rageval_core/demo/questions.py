"""Questions over the demo collection, with gold evidence and graded relevance known by construction.

Each question is generated from facts placed in the documents, so its evidence spans and the
chunks that hold them are known exactly. Relevance grades: 2 = the chunk holds a whole answer
span, 1 = it holds part of one (the span crosses a chunk boundary) or a supporting span (the
bridge of a multi-hop question).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from rageval_core.demo.corpus import Corpus, DemoChunk, Document
from rageval_core.demo.documents import Fact
from rageval_core.demo.paraphrase import paraphrase
from rageval_core.demo.resources import load

#: share of each query type in a question set (unanswerable: half with absent evidence)
TYPE_SHARES = {
    "numeric": 0.40,
    "definition": 0.14,
    "comparison": 0.16,
    "multi_hop": 0.16,
    "unanswerable": 0.14,
}
#: share of single-fact questions whose evidence is a light paraphrase of the source sentence
PARAPHRASED_SHARE = 0.22
#: share of numeric questions drawn from facts whose span crosses a chunk boundary
SPLIT_SHARE = 0.10
#: a chunk holding at least this many characters of a span (or half a short one) holds part of it
PART_CHARS = 30

ABSTAIN = "The documents provided do not contain this information."


@dataclass(slots=True)
class Need:
    """One span an answer depends on: the chunks that hold all of it, and those with part of it."""

    full: frozenset[str]
    part: frozenset[str]


@dataclass(slots=True)
class GoldQuery:
    """A question with everything known about its answer."""

    query_id: str
    text: str
    query_type: str
    source: str
    product: str
    evidence_form: str  # exact, paraphrased, split, absent or none
    near_duplicate: bool
    evidence: tuple[str, ...]
    relevance: dict[str, int]
    reference_answer: str
    correct_answers: tuple[str, ...]
    wrong_answers: tuple[str, ...]
    needs: list[Need] = field(default_factory=list)
    #: "literal" when the question reuses the document's words, "paraphrased" otherwise
    wording: str | None = None
    #: the document text each evidence span was made from (for absent evidence: the sentence of
    #: the near-duplicate that is in the collection)
    source_spans: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return self.query_type != "unanswerable"


# ---------------------------------------------------------------------------------------------
# Question wording (data/questions.json): the first template of each kind is the most literal,
# the others paraphrase.

_DATA = load("questions")
#: kind -> (noun phrase, templates with {ref})
_POLICY_Q: dict[str, tuple[str, list[str]]] = {
    kind: (q["noun"], q["templates"]) for kind, q in _DATA["policy_questions"].items()
}
#: kind -> (noun phrase, templates with {co}, {short}, {fy} and the fact's extras)
_COMPANY_Q: dict[str, tuple[str, list[str]]] = {
    kind: (q["noun"], q["templates"]) for kind, q in _DATA["company_questions"].items()
}
_DEFINITION_KINDS = frozenset(_DATA["definition_kinds"])
#: within-document pairs to compare: (kind a, kind b, adjective)
_PAIRS: dict[str, list[tuple[str, str, str]]] = {
    product: [(a, b, adj) for a, b, adj in pairs]
    for product, pairs in _DATA["comparison_pairs"].items()
}
#: product -> questions no document answers; {ref}/{co}/{fy} as above
_MISSING: dict[str, list[str]] = _DATA["missing_questions"]
#: product -> what a model makes up when asked for a figure no document states
_MADE_UP: dict[str, list[str]] = _DATA["made_up_answers"]
_PRODUCT_NOUN: dict[str, str] = _DATA["product_nouns"]
#: first words an answer lower-cases after a lead-in ("Based on the context, the ...")
_COMMON_FIRST = frozenset(_DATA["common_first_words"])
#: how a multi-hop question identifies a document by one of its facts
_BRIDGES: dict[str, str] = _DATA["bridges"]
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_YEAR = re.compile(r"\b20[1-3]\d\b")


# ---------------------------------------------------------------------------------------------
# Helpers


def _span_text(corpus: Corpus, f: Fact) -> str:
    return corpus.doc(f.doc).text[f.start : f.end]


def locate(chunks: list[DemoChunk], start: int, end: int) -> Need:
    """The chunks holding all of [start, end), and those holding a substantial part of it."""
    full, part = set(), set()
    threshold = min(PART_CHARS, (end - start) // 2)
    for c in chunks:
        if c.start <= start and end <= c.end:
            full.add(c.chunk_id)
        elif min(end, c.end) - max(start, c.start) >= threshold:
            part.add(c.chunk_id)
    return Need(frozenset(full), frozenset(part))


def perturb(value: str, rng: random.Random) -> str:
    """value with its first number changed to a plausible wrong one, keeping the format."""
    m = _NUMBER.search(value)
    if m is None:
        return value
    raw = m.group(0)
    digits = raw.replace(",", "")
    x = float(digits)
    y = x * rng.choice([0.5, 0.6, 0.75, 0.8, 1.25, 1.5, 2.0])
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    if round(y, decimals) == x:
        y = x + 1
    sep = "," if "," in raw or y >= 10_000 else ""
    new = f"{y:{sep}.{decimals}f}"
    return value[: m.start()] + new + value[m.end() :]


def _rephrase(statement: str, rng: random.Random) -> str:
    """A generated answer's wording of statement: an optional lead-in and citation marker."""
    lead = rng.choice(["", "", "According to the retrieved documents, ", "Based on the context, "])
    tail = rng.choice(["", "", " [1]", " [2]"])
    if lead and statement.split(" ", 1)[0] in _COMMON_FIRST:
        statement = statement[0].lower() + statement[1:]
    return lead + statement + tail


def _answers(
    statement: str, value: str, rng: random.Random
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(correct rewordings, wrong ones) of statement with value in place of {v}."""
    good = statement.replace("{v}", value)
    wrongs = []
    for _ in range(3):
        w = perturb(value, rng)
        if w != value:
            wrongs.append(statement.replace("{v}", w))
    if not wrongs:
        wrongs.append(ABSTAIN)
    return tuple(_rephrase(good, rng) for _ in range(2)), tuple(_rephrase(w, rng) for w in wrongs)


class _Builder:
    """Builds GoldQuery objects from facts; knows the corpus, its chunks and fact uniqueness."""

    def __init__(self, corpus: Corpus, rng: random.Random) -> None:
        self.corpus = corpus
        self.rng = rng
        self.facts = [f for d in corpus.documents for f in d.facts]
        text_count = Counter(_span_text(corpus, f) for f in self.facts)
        #: facts whose sentence is in exactly one document (near-duplicates share many)
        self.unique = [f for f in self.facts if text_count[_span_text(corpus, f)] == 1]
        self.family_size = Counter(d.family for d in corpus.documents)
        self.families: dict[str, list[Document]] = {}
        for d in corpus.documents:
            self.families.setdefault(d.family, []).append(d)
        phrases = {id(f): self.bridge_phrase(f) for f in self.facts if f.kind in _BRIDGES}
        phrase_count = Counter(phrases.values())
        #: facts whose bridge phrase identifies their document (multi-hop questions)
        self.identifying = {
            id(f) for f in self.unique if id(f) in phrases and phrase_count[phrases[id(f)]] == 1
        }

    def bridge_phrase(self, f: Fact) -> str:
        fy = self.corpus.doc(f.doc).ident.get("year", "")
        product = self.corpus.doc(f.doc).product
        return product + ": " + _BRIDGES[f.kind].format(v=f.value, fy=fy, **f.extra)

    # --- references to a document -------------------------------------------------------

    def ref(self, doc: Document, allow_code: bool = True) -> str:
        """How a question names a policy: by plan, insurer and plan, or policy form."""
        i = doc.ident
        twin = self.family_size[doc.family] > 1
        noun = _PRODUCT_NOUN[doc.product]
        if doc.product in i["plan"].lower() or "Home" in i["plan"]:
            noun = "policy"  # not "the Ridgeline Homeowners homeowners policy"
        options = [
            f"the {i['plan']} policy",
            f"{i['insurer']}'s {i['plan']} {noun}",
            f"the {i['plan']} {noun} from {i['insurer']}",
        ]
        if allow_code:
            options.append(f"policy form {i['code']}")
        ref = self.rng.choice(options)
        if twin and not ref.startswith("policy form"):
            ref += f" ({i['edition']} edition)"
        return ref

    def fill(self, template: str, doc: Document, fact: Fact | None = None) -> str:
        if doc.source == "policy":
            text = template.format(ref=self.ref(doc))
        else:
            extra = fact.extra if fact is not None else {}
            text = template.format(
                co=doc.ident["company"], short=doc.ident["short"], fy=doc.ident["year"], **extra
            )
        return text[0].upper() + text[1:]

    def templates(self, kind: str) -> tuple[str, list[str]] | None:
        return _POLICY_Q.get(kind) or _COMPANY_Q.get(kind)

    def need(self, f: Fact) -> Need:
        return locate(self.corpus.doc_chunks(f.doc), f.start, f.end)

    def relevance(
        self, answer: list[Fact], bridge: tuple[Fact, ...] | list[Fact] = ()
    ) -> dict[str, int]:
        rel: dict[str, int] = {}
        for f in bridge:
            n = self.need(f)
            for cid in n.full | n.part:
                rel[cid] = max(rel.get(cid, 0), 1)
        for f in answer:
            n = self.need(f)
            for cid in n.part:
                rel[cid] = max(rel.get(cid, 0), 1)
            for cid in n.full:
                rel[cid] = 2
        return dict(sorted(rel.items()))

    def query(self, **kw: object) -> GoldQuery:
        return GoldQuery(query_id="", **kw)  # type: ignore[arg-type]

    # --- single-fact questions (numeric, definition) --------------------------------------

    def single(self, f: Fact) -> GoldQuery | None:
        spec = self.templates(f.kind)
        if spec is None:
            return None
        doc = self.corpus.doc(f.doc)
        k = self.rng.randrange(len(spec[1]))
        text = self.fill(spec[1][k], doc, f)
        span = _span_text(self.corpus, f)
        need = self.need(f)
        if not need.full:
            form, evidence = "split", span
        elif self.rng.random() < PARAPHRASED_SHARE:
            evidence, _sim = paraphrase(span, self.rng.uniform(0.5, 0.95), self.rng)
            # dropping a trailing sentence or clause alone leaves an exact (shorter) span
            form = "exact" if evidence in doc.text else "paraphrased"
        else:
            form, evidence = "exact", span
        good, bad = _answers(f.statement, f.value, self.rng)
        return self.query(
            text=text,
            query_type="definition" if f.kind in _DEFINITION_KINDS else "numeric",
            source=doc.source,
            product=doc.product,
            evidence_form=form,
            near_duplicate=self.family_size[doc.family] > 1,
            evidence=(evidence,),
            relevance=self.relevance([f]),
            reference_answer=f.statement.replace("{v}", f.value),
            correct_answers=good,
            wrong_answers=bad,
            needs=[need],
            wording="literal" if k == 0 else "paraphrased",
            source_spans=(span,),
        )

    # --- comparisons ----------------------------------------------------------------------

    def compare(
        self, fa: Fact, fb: Fact, adjective: str, question: str, name_a: str, name_b: str
    ) -> GoldQuery:
        doc = self.corpus.doc(fa.doc)
        assert fa.number is not None and fb.number is not None
        if fa.number == fb.number:
            ref_answer = f"They are the same: {name_a} {fa.value} and {name_b} {fb.value}."
            wrong = f"{_cap(name_a)} ({fa.value}) is {adjective} than {name_b} ({perturb(fb.value, self.rng)})."
        else:
            hi, lo = (
                ((name_a, fa), (name_b, fb))
                if fa.number > fb.number
                else ((name_b, fb), (name_a, fa))
            )
            ref_answer = (
                f"{_cap(hi[0])} ({hi[1].value}) is {adjective} than {lo[0]} ({lo[1].value})."
            )
            wrong = f"{_cap(lo[0])} ({lo[1].value}) is {adjective} than {hi[0]} ({hi[1].value})."
        spans = [_span_text(self.corpus, fa), _span_text(self.corpus, fb)]
        return self.query(
            text=question,
            query_type="comparison",
            source=doc.source,
            product=doc.product,
            evidence_form="exact" if all(self.need(f).full for f in (fa, fb)) else "split",
            near_duplicate=any(
                self.family_size[self.corpus.doc(d).family] > 1 for d in (fa.doc, fb.doc)
            ),
            evidence=tuple(spans) if spans[0] != spans[1] else (spans[0],),
            relevance=self.relevance([fa, fb]),
            reference_answer=ref_answer,
            correct_answers=(_rephrase(ref_answer, self.rng), _rephrase(ref_answer, self.rng)),
            wrong_answers=(_rephrase(wrong, self.rng),),
            needs=[self.need(fa), self.need(fb)],
            source_spans=tuple(spans) if spans[0] != spans[1] else (spans[0],),
        )

    def comparisons(self) -> list[Callable[[], GoldQuery | None]]:
        """Candidate comparison questions, as thunks (built only when drawn)."""
        out: list[Callable[[], GoldQuery | None]] = []
        unique_ids = {id(f) for f in self.unique}
        by_doc_kind: dict[tuple[str, str], list[Fact]] = {}
        for f in self.facts:
            by_doc_kind.setdefault((f.doc, f.kind), []).append(f)
        for d in self.corpus.documents:
            for a, b, adj in _PAIRS.get(d.product, []):
                fa = by_doc_kind.get((d.name, a), [None])[0]
                fb = by_doc_kind.get((d.name, b), [None])[0]
                if fa is None or fb is None or id(fa) not in unique_ids or id(fb) not in unique_ids:
                    continue
                out.append(partial(self._within, d, fa, fb, adj))
            if d.product == "annual_report":
                segs = by_doc_kind.get((d.name, "segment_revenue"), [])
                if len(segs) >= 2 and all(id(f) in unique_ids for f in segs[:2]):
                    out.append(partial(self._segments, d, segs[0], segs[1]))
        # across documents: the same figure of two companies, two editions or two years
        reports = [d for d in self.corpus.documents if d.product == "annual_report"]
        for kind in ("revenue", "employees", "cash", "operating_margin"):
            for da, db in zip(reports[0::2], reports[1::2], strict=False):
                if da.family == db.family or da.ident["year"] != db.ident["year"]:
                    continue
                fa, fb = by_doc_kind[(da.name, kind)][0], by_doc_kind[(db.name, kind)][0]
                out.append(partial(self._two_companies, fa, fb, kind))
        for docs in self.families.values():
            if len(docs) < 2:
                continue
            da, db = sorted(docs, key=lambda d: int(d.ident.get("edition") or d.ident["year"]))
            for (doc_name, kind), facts in by_doc_kind.items():
                if doc_name != da.name or self.templates(kind) is None or kind in _DEFINITION_KINDS:
                    continue
                other = by_doc_kind.get((db.name, kind))
                if not other or other[0].value == facts[0].value or facts[0].number is None:
                    continue
                out.append(partial(self._two_editions, facts[0], other[0]))
        return out

    def _within(self, d: Document, fa: Fact, fb: Fact, adj: str) -> GoldQuery:
        adj = _adjective(fa, adj)
        na, nb = self.templates(fa.kind)[0], self.templates(fb.kind)[0]  # type: ignore[index]
        ref = self.ref(d)
        q = self.rng.choice(
            [
                f"Under {ref}, which is {adj}: the {na} or the {nb}?",
                f"Is the {na} of {ref} {adj} than its {nb}?",
                f"Compare the {na} and the {nb} of {ref}.",
            ]
        )
        return self.compare(fa, fb, adj, q[0].upper() + q[1:], f"the {na}", f"the {nb}")

    def _segments(self, d: Document, fa: Fact, fb: Fact) -> GoldQuery:
        co, fy = d.ident["company"], d.ident["year"]
        sa, sb = fa.extra["segment"], fb.extra["segment"]
        q = self.rng.choice(
            [
                f"Which segment of {co} had more revenue in fiscal {fy}: {sa} or {sb}?",
                f"Was {sa} bigger than {sb} at {d.ident['short']} in {fy}?",
            ]
        )
        return self.compare(fa, fb, "larger", q, f"the {sa} segment", f"the {sb} segment")

    def _two_companies(self, fa: Fact, fb: Fact, kind: str) -> GoldQuery:
        da, db = self.corpus.doc(fa.doc), self.corpus.doc(fb.doc)
        noun = _COMPANY_Q[kind][0]
        fy = da.ident["year"]
        ca, cb = da.ident["company"], db.ident["company"]
        q = self.rng.choice(
            [
                f"Which company had the higher {noun} in fiscal {fy}: {ca} or {cb}?",
                f"Compare the {noun} of {ca} and {cb} for {fy}.",
                f"Did {da.ident['short']} or {db.ident['short']} report more {noun} in {fy}?",
            ]
        )
        return self.compare(fa, fb, "higher", q, f"{ca}'s {noun}", f"{cb}'s {noun}")

    def _two_editions(self, fa: Fact, fb: Fact) -> GoldQuery:
        da, db = self.corpus.doc(fa.doc), self.corpus.doc(fb.doc)
        noun = self.templates(fa.kind)[0]  # type: ignore[index]
        if da.source == "policy":
            plan, ea, eb = da.ident["plan"], da.ident["edition"], db.ident["edition"]
            q = self.rng.choice(
                [
                    f"How did the {noun} of {plan} change between the {ea} and {eb} editions?",
                    f"Is the {noun} of the {eb} edition of {plan} {_adjective(fa, 'higher')} than in the {ea} edition?",
                ]
            )
            na, nb = f"the {ea} edition's {noun}", f"the {eb} edition's {noun}"
        else:
            co, ya, yb = da.ident["company"], da.ident["year"], db.ident["year"]
            q = self.rng.choice(
                [
                    f"How did {co}'s {noun} change from fiscal {ya} to fiscal {yb}?",
                    f"Was {da.ident['short']}'s {noun} {_adjective(fa, 'higher')} in {yb} than in {ya}?",
                ]
            )
            na, nb = f"the fiscal {ya} {noun}", f"the fiscal {yb} {noun}"
        return self.compare(fa, fb, _adjective(fa, "higher"), q, na, nb)

    # --- multi-hop ------------------------------------------------------------------------

    def multi_hops(self) -> list[Callable[[], GoldQuery | None]]:
        out: list[Callable[[], GoldQuery | None]] = []
        answerable = [
            f for f in self.unique if self.templates(f.kind) and f.kind not in _DEFINITION_KINDS
        ]
        by_doc: dict[str, list[Fact]] = {}
        for f in answerable:
            by_doc.setdefault(f.doc, []).append(f)
        for f in self.facts:
            if f.kind == "issuer":
                for target in by_doc.get(f.doc, []):
                    out.append(partial(self._via_code, f, target))
            elif id(f) in self.identifying and f.kind in _BRIDGES:
                for target in by_doc.get(f.doc, []):
                    if target.kind != f.kind:
                        out.append(partial(self._via_value, f, target))
        return out

    def _hop(self, question: str, bridge: Fact, target: Fact, prefix: str) -> GoldQuery:
        doc = self.corpus.doc(target.doc)
        good, bad = _answers(target.statement, target.value, self.rng)
        ref_answer = prefix + target.statement.replace("{v}", target.value)
        needs = [self.need(bridge), self.need(target)]
        return self.query(
            text=question,
            query_type="multi_hop",
            source=doc.source,
            product=doc.product,
            evidence_form="exact" if all(n.full for n in needs) else "split",
            near_duplicate=self.family_size[doc.family] > 1,
            evidence=(_span_text(self.corpus, bridge), _span_text(self.corpus, target)),
            relevance=self.relevance([target], [bridge]),
            reference_answer=ref_answer,
            correct_answers=tuple(prefix + g for g in good),
            wrong_answers=tuple(prefix + w for w in bad),
            needs=needs,
            source_spans=(_span_text(self.corpus, bridge), _span_text(self.corpus, target)),
        )

    def _via_code(self, bridge: Fact, target: Fact) -> GoldQuery:
        noun = self.templates(target.kind)[0]  # type: ignore[index]
        code = bridge.extra["code"]
        q = self.rng.choice(
            [
                f"Which insurer issues policy form {code}, and what is the {noun} of that policy?",
                f"Policy form {code}: who is the insurer and what {noun} does it have?",
            ]
        )
        return self._hop(q, bridge, target, f"Policy form {code} is issued by {bridge.value}. ")

    def _via_value(self, bridge: Fact, target: Fact) -> GoldQuery:
        doc = self.corpus.doc(target.doc)
        noun = self.templates(target.kind)[0]  # type: ignore[index]
        phrase = self.bridge_phrase(bridge).split(": ", 1)[1]
        if doc.source == "policy":
            thing = f"the {_PRODUCT_NOUN[doc.product]}"
            q = self.rng.choice(
                [
                    f"What is the {noun} of {thing} {phrase}?",
                    f"For {thing} {phrase}, what is the {noun}?",
                ]
            )
        else:
            q = self.rng.choice(
                [
                    f"What was the {noun} of the company that {phrase}?",
                    f"The company that {phrase}: what was its {noun}?",
                ]
            )
        return self._hop(q[0].upper() + q[1:], bridge, target, "")

    # --- unanswerable ---------------------------------------------------------------------

    def missing(self, doc: Document) -> GoldQuery:
        q = self.fill(self.rng.choice(_MISSING[doc.product]), doc)
        made_up = self.rng.choice(_MADE_UP[doc.product])
        who = doc.ident.get("short", "The policy")
        wrong = self.rng.choice(
            [f"{who} reports {made_up}.", f"It is {made_up}.", f"The documents suggest {made_up}."]
        )
        return self._unanswerable(q, doc, "none", (), wrong)

    def absent(self, f: Fact) -> GoldQuery | None:
        """Ask about an edition or fiscal year the collection lacks; the evidence is its sentence."""
        spec = self.templates(f.kind)
        if spec is None or f.kind in _DEFINITION_KINDS or f.number is None:
            return None
        doc = self.corpus.doc(f.doc)
        family = self.families[doc.family]
        key = "edition" if doc.source == "policy" else "year"
        years = sorted(d.ident[key] for d in family)
        # an older edition, or (reports) two years back or the year after the last one
        if key == "edition":
            missing_year = years[0] - self.rng.choice([2, 3])
        else:
            missing_year = self.rng.choice([years[0] - 2, years[-1] + 1])
        span = _span_text(self.corpus, f)
        new_value = perturb(f.value, self.rng)
        evidence = _YEAR.sub(lambda m: str(int(m.group(0)) + missing_year - doc.ident[key]), span)
        evidence = evidence.replace(f.value, new_value, 1)
        if evidence == span or any(evidence in d.text for d in self.corpus.documents):
            return None  # generic sentences may exist, by chance, in another company's report
        # the tempting wrong answer: the value of the edition or year that is in the collection
        wrong = f.statement.replace("{v}", f.value)
        template = self.rng.choice(spec[1])
        if doc.source == "policy":
            ref = self.rng.choice(
                [
                    f"the {missing_year} edition of the {doc.ident['plan']} policy",
                    f"{doc.ident['insurer']}'s {doc.ident['plan']} ({missing_year} edition)",
                ]
            )
            q = template.format(ref=ref)
        else:
            q = template.format(
                co=doc.ident["company"], short=doc.ident["short"], fy=missing_year, **f.extra
            )
        made = self._unanswerable(q[0].upper() + q[1:], doc, "absent", (evidence,), wrong)
        made.source_spans = (span,)
        return made

    def _unanswerable(
        self, q: str, doc: Document, form: str, evidence: tuple[str, ...], wrong: str
    ) -> GoldQuery:
        hallucinated = _rephrase(wrong, self.rng)
        return self.query(
            text=q,
            query_type="unanswerable",
            source=doc.source,
            product=doc.product,
            evidence_form=form,
            near_duplicate=self.family_size[doc.family] > 1,
            evidence=evidence,
            relevance={},
            reference_answer=ABSTAIN,
            correct_answers=(ABSTAIN, "I could not find this in the documents."),
            wrong_answers=(hallucinated,),
            needs=[],
        )


def build_questions(corpus: Corpus, n: int, seed: int = 7) -> list[GoldQuery]:
    """n questions over corpus (ids q0001...), mixed by TYPE_SHARES, deterministic for seed."""
    rng = random.Random(f"demo-questions:{seed}")
    b = _Builder(corpus, rng)
    counts = {t: round(share * n) for t, share in TYPE_SHARES.items()}
    counts["numeric"] += n - sum(counts.values())

    singles = [f for f in b.unique if b.templates(f.kind)]
    rng.shuffle(singles)
    numeric = [f for f in singles if f.kind not in _DEFINITION_KINDS]
    # spans that cross a chunk boundary are rare by nature; draw a fixed share of them
    split = [f for f in numeric if not b.need(f).full]
    numeric = [f for f in numeric if b.need(f).full]
    k_split = min(len(split), round(SPLIT_SHARE * counts["numeric"]))
    definitions = [f for f in singles if f.kind in _DEFINITION_KINDS]
    comparisons = b.comparisons()
    hops = b.multi_hops()
    rng.shuffle(comparisons)
    rng.shuffle(hops)

    out: list[GoldQuery] = []
    seen: set[str] = set()

    def take(makers: list[Callable[[], GoldQuery | None]], k: int) -> None:
        got = 0
        for make in makers:
            if got >= k:
                break
            q = make()
            if q is None or q.text in seen:
                continue
            seen.add(q.text)
            out.append(q)
            got += 1

    # cycle through products so every product appears even in a small set
    take([partial(b.single, f) for f in _interleave(split)], k_split)
    take([partial(b.single, f) for f in _interleave(numeric)], counts["numeric"] - k_split)
    take([partial(b.single, f) for f in _interleave(definitions)], counts["definition"])
    take(comparisons, counts["comparison"])
    take(hops, counts["multi_hop"])
    k_absent = counts["unanswerable"] // 2
    docs = list(corpus.documents)
    rng.shuffle(docs)
    # the absent-evidence questions reuse facts from the far end of the shuffled list
    absent: list[Callable[[], GoldQuery | None]] = [partial(b.absent, f) for f in numeric[::-1]]
    missing: list[Callable[[], GoldQuery | None]] = [partial(b.missing, d) for d in docs]
    take(absent, k_absent)
    take(missing, counts["unanswerable"] - k_absent)
    if len(out) < n:
        # a type ran out of candidates before its share: the others fill in, so a large n still
        # gives n questions while the collection has them (the mix then leans to the larger types)
        everything = [partial(b.single, f) for f in _interleave(split + numeric + definitions)]
        take([*everything, *comparisons, *hops, *absent, *missing], n - len(out))

    rng.shuffle(out)
    for i, q in enumerate(out, 1):
        q.query_id = f"q{i:04d}"
    return out


def _interleave(facts: list[Fact]) -> list[Fact]:
    """facts reordered to alternate between document kinds (life, home, auto, 10-K ...)."""
    groups: dict[str, list[Fact]] = {}
    for f in facts:
        groups.setdefault(f.doc.split("_")[0], []).append(f)
    lists = [groups[k] for k in sorted(groups)]
    ordered: list[Fact] = []
    for i in range(max((len(x) for x in lists), default=0)):
        ordered.extend(x[i] for x in lists if i < len(x))
    return ordered


def _adjective(f: Fact, default: str) -> str:
    """'longer' for periods of time, default otherwise."""
    return "longer" if f.value.endswith(("days", "months", "years")) else default


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]
