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

from rageval_core.demo.corpus import Corpus, DemoChunk, Document, Fact
from rageval_core.demo.paraphrase import paraphrase

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
# Question wording: the first template of each kind is the most literal, the others paraphrase.

_POLICY_Q: dict[str, tuple[str, list[str]]] = {
    # kind: (noun phrase, templates with {ref})
    "term_length": (
        "coverage term",
        [
            "What is the term length of {ref}?",
            "How long does the coverage of {ref} last?",
            "For how many years does {ref} provide cover?",
        ],
    ),
    "death_benefit": (
        "death benefit",
        [
            "What is the death benefit of {ref}?",
            "How much is paid to the beneficiary when the insured dies under {ref}?",
            "What sum does {ref} pay out on death?",
            "face amount payable on death, {ref}",
        ],
    ),
    "monthly_premium": (
        "monthly premium",
        [
            "What is the monthly premium for {ref}?",
            "How much does {ref} cost per month?",
            "Monthly price of cover under {ref}?",
        ],
    ),
    "grace_period": (
        "grace period",
        [
            "How long is the grace period of {ref}?",
            "How many days after a missed payment does {ref} stay in force?",
            "If I pay a premium late, how much time do I have under {ref}?",
        ],
    ),
    "free_look": (
        "free-look period",
        [
            "What is the free-look period for {ref}?",
            "How long do I have to cancel {ref} and get a full refund?",
            "Within how many days can {ref} be returned for my money back?",
        ],
    ),
    "adb_rider": (
        "accelerated death benefit limit",
        [
            "What share of the death benefit can be advanced under the Accelerated Death Benefit rider of {ref}?",
            "If the insured is terminally ill, how much of the benefit can be paid early under {ref}?",
            "Maximum early payout percentage for a terminal diagnosis, {ref}?",
        ],
    ),
    "waiver_rider": (
        "waiver of premium qualifying period",
        [
            "After how long a disability are premiums waived under {ref}?",
            "When does the Waiver of Premium rider of {ref} start to apply?",
            "How many months of being unable to work before {ref} stops charging premiums?",
        ],
    ),
    "child_rider": (
        "children's term benefit",
        [
            "How much cover does the Children's Term rider of {ref} give per child?",
            "What is the benefit for each child under {ref}?",
        ],
    ),
    "adr_rider": (
        "accidental death benefit",
        [
            "What additional amount is paid under the Accidental Death rider of {ref}?",
            "How much extra does {ref} pay if the insured dies in an accident?",
        ],
    ),
    "ci_waiting": (
        "critical illness waiting period",
        [
            "What is the waiting period of the Critical Illness rider in {ref}?",
            "How soon after buying {ref} can a critical illness claim be made?",
        ],
    ),
    "suicide_exclusion": (
        "suicide exclusion period",
        [
            "How long is the suicide exclusion period in {ref}?",
            "For how many months after the start date is suicide excluded by {ref}?",
            "Does {ref} pay for suicide in the early years, and when does that exclusion end?",
        ],
    ),
    "contestability": (
        "contestability period",
        [
            "What is the contestability period of {ref}?",
            "How long after issue can {ref} be contested?",
            "For how long can the insurer challenge errors in the application for {ref}?",
        ],
    ),
    "conversion_age": (
        "conversion age limit",
        [
            "Until what age can {ref} be converted to a permanent plan?",
            "What is the latest age for switching {ref} to permanent coverage?",
        ],
    ),
    "def_terminal_illness": (
        "definition of terminal illness",
        [
            "How does {ref} define terminal illness?",
            "What counts as a terminal illness under {ref}?",
            "Meaning of 'terminally ill' in {ref}?",
        ],
    ),
    "def_total_disability": (
        "definition of total disability",
        [
            "How is total disability defined in {ref}?",
            "When is the insured considered totally disabled under {ref}?",
        ],
    ),
    "hazard_exclusion": (
        "excluded hazardous activities",
        [
            "Which hazardous activities are excluded by {ref}?",
            "What dangerous pastimes are not covered by {ref}?",
            "Does {ref} pay if death is caused by extreme sports, and which ones are excluded?",
        ],
    ),
    "dwelling_limit": (
        "dwelling limit",
        [
            "What is the Coverage A dwelling limit of {ref}?",
            "Up to what amount is the house itself insured under {ref}?",
            "How much would {ref} pay to rebuild the home?",
        ],
    ),
    "other_structures": (
        "other structures limit",
        [
            "What is the limit for other structures under {ref}?",
            "How much cover does {ref} give for detached garages and sheds?",
        ],
    ),
    "personal_property": (
        "personal property limit",
        [
            "What is the personal property limit of {ref}?",
            "How much are my belongings covered for under {ref}?",
            "Contents cover amount in {ref}?",
        ],
    ),
    "loss_of_use": (
        "loss of use period",
        [
            "How long does {ref} pay additional living expenses?",
            "For how many months will {ref} cover hotel costs if the house is unlivable?",
        ],
    ),
    "liability_limit": (
        "personal liability limit",
        [
            "What is the personal liability limit of {ref}?",
            "How much does {ref} pay if I am sued for injuring someone?",
            "Per-occurrence liability cover in {ref}?",
        ],
    ),
    "med_pay": (
        "medical payments limit",
        [
            "What is the medical payments to others limit of {ref}?",
            "How much does {ref} pay for a guest's medical bills?",
        ],
    ),
    "aop_deductible": (
        "all-peril deductible",
        [
            "What is the all-peril deductible of {ref}?",
            "How much do I pay myself on each property claim under {ref}?",
            "Standard deductible for {ref}?",
        ],
    ),
    "wind_deductible": (
        "windstorm deductible",
        [
            "What is the windstorm and hail deductible in dollars for {ref}?",
            "How much is the storm deductible of {ref}?",
            "What do I pay first on a hail damage claim under {ref}?",
        ],
    ),
    "water_backup": (
        "water backup limit",
        [
            "What is the water backup endorsement limit of {ref}?",
            "How much does {ref} cover for sewer backup?",
        ],
    ),
    "jewelry_sublimit": (
        "jewelry theft limit",
        [
            "What is the theft limit for jewelry under {ref}?",
            "How much will {ref} pay if my watches and rings are stolen?",
        ],
    ),
    "flood_waiting": (
        "flood waiting period",
        [
            "What is the waiting period for flood coverage in {ref}?",
            "How soon does the flood endorsement of {ref} take effect?",
        ],
    ),
    "roof_age": (
        "roof age limit",
        [
            "At what roof age does {ref} settle at actual cash value?",
            "How old can a roof be before {ref} stops paying replacement cost?",
        ],
    ),
    "def_acv": (
        "definition of actual cash value",
        [
            "How does {ref} define actual cash value?",
            "What does ACV mean in {ref}?",
        ],
    ),
    "def_vacancy": (
        "definition of vacancy",
        [
            "When is a dwelling considered vacant under {ref}?",
            "How long can my house stay empty before {ref} treats it as unoccupied?",
        ],
    ),
    "bi_limits": (
        "bodily injury limits",
        [
            "What are the bodily injury liability limits of {ref}?",
            "How much does {ref} pay for injuries I cause to other people?",
        ],
    ),
    "pd_limit": (
        "property damage limit",
        [
            "What is the property damage liability limit of {ref}?",
            "How much does {ref} pay for damage to someone else's property?",
        ],
    ),
    "um_limit": (
        "uninsured motorist limit",
        [
            "How much uninsured motorist coverage does {ref} include?",
            "If an uninsured driver injures me, what does {ref} pay per person?",
        ],
    ),
    "collision_deductible": (
        "collision deductible",
        [
            "What is the collision deductible of {ref}?",
            "How much do I pay out of pocket after a crash under {ref}?",
            "Crash repair excess for {ref}?",
        ],
    ),
    "comprehensive_deductible": (
        "comprehensive deductible",
        [
            "What is the comprehensive deductible of {ref}?",
            "What deductible applies to theft or hail damage under {ref}?",
        ],
    ),
    "new_car": (
        "new car replacement window",
        [
            "How long after purchase does new car replacement apply under {ref}?",
            "If my new car is written off, within what time does {ref} replace it with a new one?",
        ],
    ),
    "glass_waiting": (
        "glass claim waiting period",
        [
            "What is the waiting period for glass claims under {ref}?",
            "How long after the start date can I claim for a broken windscreen under {ref}?",
        ],
    ),
    "rental": (
        "rental reimbursement limit",
        [
            "How much rental reimbursement per day does {ref} pay?",
            "What is the daily limit for a hire car while mine is repaired under {ref}?",
        ],
    ),
    "roadside": (
        "towing distance",
        [
            "How many miles of towing are covered by {ref}?",
            "How far will {ref} tow my car?",
        ],
    ),
    "gap": (
        "gap coverage limit",
        [
            "How much does the gap coverage of {ref} pay?",
            "What is the limit of loan/lease gap cover in {ref}?",
        ],
    ),
    "def_total_loss": (
        "definition of total loss",
        [
            "When is a vehicle a total loss under {ref}?",
            "At what repair cost is my car written off under {ref}?",
            "How does {ref} define a total loss?",
        ],
    ),
    "def_permissive": (
        "definition of permissive driver",
        [
            "Who is a permissive driver under {ref}?",
            "If I lend my car to a friend, how does {ref} treat them and what is their liability cover?",
        ],
    ),
}

_COMPANY_Q: dict[str, tuple[str, list[str]]] = {
    # kind: (noun phrase, templates with {co}, {fy}, and fact extras)
    "employees": (
        "headcount",
        [
            "How many people did {co} employ at the end of fiscal {fy}?",
            "What was {co}'s headcount in {fy}?",
            "Number of staff at {short} ({fy})?",
        ],
    ),
    "largest_customer": (
        "share of revenue from the largest customer",
        [
            "What share of {co}'s fiscal {fy} revenue came from its largest customer?",
            "How dependent is {short} on its top client: what percent of {fy} sales did that client make up?",
        ],
    ),
    "intl_revenue": (
        "share of revenue outside the United States",
        [
            "What portion of {co}'s revenue is generated outside the United States (fiscal {fy})?",
            "How much of {short}'s sales are international, according to its {fy} 10-K?",
        ],
    ),
    "rate_sensitivity": (
        "interest rate sensitivity",
        [
            "How much would a 100 basis point increase in interest rates add to {co}'s annual interest expense (fiscal {fy})?",
            "If rates rose by one percentage point, how much more interest would {short} pay per year ({fy} report)?",
        ],
    ),
    "revenue": (
        "total revenue",
        [
            "What was {co}'s total revenue in fiscal {fy}?",
            "How much did {short} sell in {fy}?",
            "{short} top line for the {fy} financial year?",
            "What were the overall sales of {co} for {fy}?",
        ],
    ),
    "operating_margin": (
        "operating margin",
        [
            "What was {co}'s operating margin in fiscal {fy}?",
            "How profitable was {short} at the operating level in {fy}, as a percentage of sales?",
        ],
    ),
    "net_income": (
        "net income",
        [
            "What was {co}'s net income for fiscal {fy}?",
            "How much profit after tax did {short} make in {fy}?",
        ],
    ),
    "segment_revenue": (
        "segment revenue",
        [
            "How much revenue did {co}'s {segment} segment generate in fiscal {fy}?",
            "What were {segment} sales at {short} in {fy}?",
        ],
    ),
    "cash": (
        "cash balance",
        [
            "How much cash and cash equivalents did {co} hold at the end of fiscal {fy}?",
            "What was {short}'s cash pile at year end {fy}?",
        ],
    ),
    "notes_maturity": (
        "maturity of the senior notes",
        [
            "When do {co}'s {rate} senior notes mature?",
            "In what year is {short}'s {amount} bond due ({fy} report)?",
            "Maturity date of the {rate} notes issued by {short}?",
        ],
    ),
    "revolver": (
        "revolving credit facility",
        [
            "How large is {co}'s revolving credit facility (fiscal {fy})?",
            "What is the size of the credit line available to {short} in {fy}?",
        ],
    ),
    "buyback": (
        "share repurchase spending",
        [
            "How much did {co} spend on share repurchases in fiscal {fy}?",
            "What was the dollar amount of {short}'s stock buybacks in {fy}?",
            "{short} buyback spend {fy}?",
        ],
    ),
    "dividend": (
        "quarterly dividend",
        [
            "What quarterly dividend per share did {co} declare in fiscal {fy}?",
            "How much did {short} pay shareholders per share each quarter in {fy}?",
        ],
    ),
    "adj_ebitda": (
        "Adjusted EBITDA",
        [
            "What was {co}'s Adjusted EBITDA for fiscal {fy}?",
            "How much Adjusted EBITDA did {short} report for {fy}?",
        ],
    ),
    "def_adj_ebitda": (
        "definition of Adjusted EBITDA",
        [
            "How does {co} define Adjusted EBITDA?",
            "What does {short} exclude from net income to arrive at its adjusted earnings measure?",
        ],
    ),
    "def_fcf": (
        "definition of free cash flow",
        [
            "How does {co} define free cash flow?",
            "What is {short}'s formula for FCF?",
        ],
    ),
}

_DEFINITION_KINDS = {
    "def_terminal_illness",
    "def_total_disability",
    "hazard_exclusion",
    "def_acv",
    "def_vacancy",
    "def_total_loss",
    "def_permissive",
    "def_adj_ebitda",
    "def_fcf",
}

#: within-document pairs to compare: (kind a, kind b, adjective)
_PAIRS = {
    "auto": [("collision_deductible", "comprehensive_deductible", "higher")],
    "home": [
        ("aop_deductible", "wind_deductible", "higher"),
        ("water_backup", "jewelry_sublimit", "higher"),
    ],
    "life": [
        ("grace_period", "free_look", "longer"),
        ("suicide_exclusion", "contestability", "longer"),
    ],
}

#: questions no document answers: (template, product); {ref}/{co}/{fy} as above
_MISSING = {
    "life": [
        "What is the interest rate charged on policy loans under {ref}?",
        "How much does {ref} pay towards funeral expenses on top of the death benefit?",
        "What is the monthly limit of the long-term care rider in {ref}?",
        "What dental benefit does {ref} include?",
    ],
    "home": [
        "What is the identity theft expense limit of {ref}?",
        "How much does {ref} pay for food spoiled in a power outage?",
        "What discount does {ref} give for a monitored burglar alarm?",
        "What is the home business property limit under {ref}?",
    ],
    "auto": [
        "What is the pet injury coverage limit of {ref}?",
        "How much does {ref} cover for custom equipment and aftermarket parts?",
        "After how many claim-free years does {ref} offer accident forgiveness?",
        "What is the personal injury protection limit of {ref}?",
    ],
    "annual_report": [
        "How much did {co} spend on research and development in fiscal {fy}?",
        "How many retail stores did {co} operate at the end of fiscal {fy}?",
        "What goodwill impairment did {co} record in fiscal {fy}?",
        "What was the total compensation of {co}'s chief executive in fiscal {fy}?",
        "What was {co}'s effective tax rate in fiscal {fy}?",
    ],
}

#: what a model makes up when asked for a figure no document states
_MADE_UP = {
    "life": ["$5,000", "4.5% a year", "$250 a month", "up to $10,000"],
    "home": ["$2,500", "$500", "a 10% discount", "$25,000"],
    "auto": ["$1,000", "$5,000", "three claim-free years", "$10,000 per person"],
    "annual_report": ["$310 million", "about 420", "21.5%", "$12.4 million", "$86 million"],
}
_PRODUCT_NOUN = {"life": "life policy", "home": "homeowners policy", "auto": "auto policy"}
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


_COMMON_FIRST = {
    "The",
    "Total",
    "Personal",
    "Rental",
    "New",
    "Premiums",
    "Suicide",
    "Death",
    "Terminal",
    "Adjusted",
    "Free",
    "Cash",
    "Net",
    "Other",
    "Medical",
    "Water",
    "Theft",
    "Flood",
    "Roofs",
    "Glass",
    "Gap",
    "Roadside",
    "Uninsured",
    "Property",
    "Bodily",
    "Conversion",
    "Additional",
    "About",
    "Actual",
    "A",
    "Coverage",
    "Policy",
    "Windstorm",
    "In",
    "They",
    "Legal",
}


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


#: how a multi-hop question identifies a document by one of its facts
_BRIDGES = {
    "death_benefit": "with a death benefit of {v}",
    "monthly_premium": "whose monthly premium is {v}",
    "dwelling_limit": "with a dwelling limit of {v}",
    "wind_deductible": "whose windstorm deductible is {v}",
    "personal_property": "that covers personal property up to {v}",
    "revenue": "reported fiscal {fy} revenue of {v}",
    "buyback": "repurchased {shares} shares in fiscal {fy}",
    "employees": "had about {v} employees at the end of fiscal {fy}",
    "cash": "held {v} of cash at the end of fiscal {fy}",
    "net_income": "earned net income of {v} in fiscal {fy}",
}


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
