"""The demo's synthetic collection: insurance policies and 10-K-like annual reports, chunked.

Every document is written from templates by a seeded generator, so the facts it states (and
their exact character offsets) are known: the questions in questions.py are built from them.
Near-duplicate documents (another edition of a policy, another fiscal year of a company) share
wording and differ in some numbers, which is what makes retrieval hard.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

_T = TypeVar("_T")

#: Chunker settings: pack whole sentences up to MAX_CHUNK_CHARS; each chunk after the first
#: opens with up to OVERLAP_CHARS of the previous one (cut at a word start).
MAX_CHUNK_CHARS = 640
OVERLAP_CHARS = 60


@dataclass(slots=True)
class Fact:
    """One fact stated in a document: the span [start, end) of its text holds value."""

    doc: str
    kind: str
    start: int
    end: int
    value: str
    #: the canonical answer with "{v}" where value goes (a wrong answer swaps another value in)
    statement: str
    number: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    sentences: int = 1


@dataclass(slots=True)
class Document:
    """One markdown document of the collection, with the facts placed in it."""

    name: str
    source: str  # "policy" or "10-K"
    product: str  # "life", "home", "auto" or "annual_report"
    family: str  # shared by near-duplicates (editions of one plan, years of one company)
    ident: dict[str, Any]
    text: str
    facts: list[Fact]


@dataclass(frozen=True, slots=True)
class DemoChunk:
    """A chunk of a document: text is exactly document.text[start:end]."""

    chunk_id: str
    doc: str
    start: int
    end: int
    text: str


@dataclass(slots=True)
class Corpus:
    """The documents and their chunks (in document order)."""

    documents: list[Document]
    chunks: list[DemoChunk]

    def doc(self, name: str) -> Document:
        return self._docs[name]

    def doc_chunks(self, name: str) -> list[DemoChunk]:
        return self._by_doc[name]

    def __post_init__(self) -> None:
        self._docs = {d.name: d for d in self.documents}
        self._by_doc: dict[str, list[DemoChunk]] = {d.name: [] for d in self.documents}
        for c in self.chunks:
            self._by_doc[c.doc].append(c)

    _docs: dict[str, Document] = field(default_factory=dict, init=False, repr=False)
    _by_doc: dict[str, list[DemoChunk]] = field(default_factory=dict, init=False, repr=False)


# ---------------------------------------------------------------------------------------------
# Chunking

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"(])")


def split_units(text: str) -> list[tuple[int, int]]:
    """Sentence-like units of text as (start, end) offsets: headings, then sentences of paragraphs."""
    units: list[tuple[int, int]] = []
    pos = 0
    for block in text.split("\n\n"):
        start = pos
        pos += len(block) + 2
        stripped = block.strip()
        if not stripped:
            continue
        start += len(block) - len(block.lstrip())
        end = start + len(stripped)
        if stripped.startswith("#"):
            units.append((start, end))
            continue
        s = start
        for m in _SENTENCE_END.finditer(text, start, end):
            units.append((s, m.start()))
            s = m.end()
        units.append((s, end))
    return units


def chunk_document(
    name: str, text: str, max_chars: int = MAX_CHUNK_CHARS, overlap_chars: int = OVERLAP_CHARS
) -> list[DemoChunk]:
    """Pack sentences into chunks of at most max_chars, each opening with a short overlap."""
    units = split_units(text)
    spans: list[tuple[int, int]] = []
    i = 0
    lead = -1  # where the next chunk starts, when it opens inside the previous chunk
    while i < len(units):
        start = units[i][0] if lead < 0 else lead
        j = i
        while j + 1 < len(units) and units[j + 1][1] - start <= max_chars:
            j += 1
        # a heading belongs with the text under it, not at the end of a chunk
        if j > i and text[units[j][0]] == "#" and j + 1 < len(units):
            j -= 1
        end = units[j][1]
        spans.append((start, end))
        i = j + 1
        if i < len(units):
            lead = _overlap_start(text, start, end, overlap_chars)
            if text[units[i][0]] == "#":
                lead = -1  # no overlap into a new section
    return [DemoChunk(f"{name}#{k}", name, s, e, text[s:e]) for k, (s, e) in enumerate(spans)]


def _overlap_start(text: str, start: int, end: int, overlap_chars: int) -> int:
    """The first word start at or after end - overlap_chars (never before start)."""
    pos = max(start, end - overlap_chars)
    while pos < end and pos > start and not (text[pos - 1].isspace() and not text[pos].isspace()):
        pos += 1
    return pos if pos < end else -1


# ---------------------------------------------------------------------------------------------
# Formatting helpers


def money(x: float, cents: bool = False) -> str:
    return f"${x:,.2f}" if cents else f"${x:,.0f}"


def money_m(millions: float) -> str:
    return f"${millions:,.0f} million" if millions >= 10 else f"${millions:,.1f} million"


def money_b(billions: float) -> str:
    return f"${billions:,.2f} billion"


def pct(x: float, digits: int = 0) -> str:
    return f"{x:.{digits}f}%"


def months(n: int) -> str:
    return f"{n} months"


def days(n: int) -> str:
    return f"{n} days"


# ---------------------------------------------------------------------------------------------
# The document builder


class _Builder:
    """Accumulates headings and paragraphs, recording each fact's character span."""

    def __init__(self, name: str, style: random.Random) -> None:
        self.name = name
        self.style = style
        self.blocks: list[list[tuple[str, dict[str, Any] | None]] | str] = []
        self._para: list[tuple[str, dict[str, Any] | None]] | None = None

    def h(self, text: str, level: int = 2) -> None:
        self.blocks.append("#" * level + " " + text)
        self._para = None

    def p(self) -> None:
        self._para = []
        self.blocks.append(self._para)

    def s(self, text: str) -> None:
        assert self._para is not None
        self._para.append((text, None))

    def pick(self, options: list[_T]) -> _T:
        return self.style.choice(options)

    def filler(self, options: list[str], k: int = 1) -> None:
        for text in self.style.sample(options, k):
            self.s(text)

    def f(
        self,
        kind: str,
        sentences: str | Sequence[str],
        value: str,
        statement: str,
        number: float | None = None,
        **extra: Any,
    ) -> None:
        """Add a fact stated by one or two consecutive sentences."""
        assert self._para is not None
        parts = [sentences] if isinstance(sentences, str) else list(sentences)
        meta = {
            "kind": kind,
            "value": value,
            "statement": statement,
            "number": number,
            "extra": extra,
            "n": len(parts),
        }
        for k, text in enumerate(parts):
            self._para.append((text, meta if k == 0 else {"cont": True}))

    def render(self) -> tuple[str, list[Fact]]:
        out: list[str] = []
        facts: list[Fact] = []
        pos = 0
        for block in self.blocks:
            if out:
                out.append("\n\n")
                pos += 2
            if isinstance(block, str):
                out.append(block)
                pos += len(block)
                continue
            open_fact: tuple[dict[str, Any], int, int] | None = None  # meta, start, left
            for k, (text, meta) in enumerate(block):
                if k:
                    out.append(" ")
                    pos += 1
                start = pos
                out.append(text)
                pos += len(text)
                if meta is not None and "kind" in meta:
                    open_fact = (meta, start, meta["n"] - 1)
                elif meta is not None and open_fact is not None:
                    open_fact = (open_fact[0], open_fact[1], open_fact[2] - 1)
                if open_fact is not None and open_fact[2] == 0:
                    m, s, _ = open_fact
                    facts.append(
                        Fact(
                            self.name,
                            m["kind"],
                            s,
                            pos,
                            m["value"],
                            m["statement"],
                            m["number"],
                            dict(m["extra"]),
                            m["n"],
                        )
                    )
                    open_fact = None
        return "".join(out) + "\n", facts


# ---------------------------------------------------------------------------------------------
# Names

_INSURER_A = [
    "Harbor",
    "Summit",
    "Northwind",
    "Bluegate",
    "Cedarline",
    "Ironwood",
    "Lakeshore",
    "Pinecrest",
    "Redstone",
    "Silverline",
    "Westbrook",
    "Granite State",
    "Meadowlark",
    "Oakridge",
    "Brightwater",
    "Falconer",
    "Kingsbridge",
    "Amberfield",
]
_INSURER_B = ["Mutual", "Assurance", "Insurance Company", "Life & Casualty", "Indemnity", "General"]
_PLAN_A = [
    "Evergreen",
    "Keystone",
    "Meridian",
    "Lighthouse",
    "Cornerstone",
    "Horizon",
    "Legacy",
    "Sentinel",
    "Anchor",
    "Beacon",
    "Heritage",
    "Compass",
    "Bedrock",
    "Summerset",
    "Tidewater",
    "Highland",
    "Juniper",
    "Northstar",
    "Riverbend",
    "Sterling",
    "Copperleaf",
    "Willow",
    "Foxglove",
    "Arbor",
    "Halcyon",
    "Bastion",
    "Clearwater",
    "Wayfarer",
    "Ridgeline",
    "Parkside",
    "Lodestar",
    "Harvest",
    "Trillium",
    "Kestrel",
    "Mariner",
    "Sequoia",
]
_PLAN_B = {
    "life": [
        "Term Life {t}",
        "Term Protect {t}",
        "Level Term {t}",
        "Whole Life",
        "Whole Life Plus",
    ],
    "home": ["Homeowners", "Home Plus", "HomeShield", "Dwelling Select", "Home Premier"],
    "auto": ["Auto", "Auto Select", "DriveWise", "Motor Plus", "Road Cover"],
}
_COMPANY_A = [
    "Corvantis",
    "Pellucid",
    "Altamira",
    "Brennerman",
    "Quillon",
    "Vantora",
    "Halvorsen",
    "Trellis",
    "Norland",
    "Kestrova",
    "Orison",
    "Caldera",
    "Mirabel",
    "Tessaro",
    "Zephyra",
    "Lumina",
    "Aldergrove",
    "Brightline",
    "Castellan",
    "Dunmore",
    "Everlake",
    "Fenwick",
    "Galloway",
    "Hollister",
    "Invera",
    "Jarrow",
    "Kelvion",
    "Larkspur",
    "Monterra",
    "Nexora",
    "Ostrander",
    "Pemberton",
    "Quarry Hill",
    "Rosemont",
    "Stanwick",
    "Tamarind",
    "Ulster",
    "Valemont",
    "Whitcombe",
    "Yardley",
    "Ashgrove",
    "Belmonte",
    "Cresswell",
    "Delacroix",
    "Elmstead",
    "Farrowdale",
    "Glenhaven",
    "Hartwell",
    "Ivybridge",
    "Kingsmere",
    "Lowther",
    "Marchetti",
    "Northam",
    "Oakhurst",
    "Prescott",
    "Ravensworth",
    "Sablewood",
    "Thornbury",
]
_COMPANY_B = ["Holdings", "Systems", "Industries", "Group", "Technologies", "Corporation", "Brands"]
_SECTORS = {
    "industrial": (
        "diversified industrial manufacturer",
        [
            "Flow Control",
            "Industrial Automation",
            "Aerospace Components",
            "Power Systems",
            "Precision Tools",
        ],
        ["specialty steel castings", "servo motors", "titanium forgings"],
    ),
    "software": (
        "provider of enterprise software and cloud services",
        [
            "Cloud Platform",
            "Security Solutions",
            "Data Analytics",
            "Professional Services",
            "Collaboration Tools",
        ],
        ["data-centre capacity", "semiconductor accelerators", "network hardware"],
    ),
    "consumer": (
        "maker of branded consumer products",
        ["Home Care", "Personal Care", "Snacks and Beverages", "Pet Nutrition", "Outdoor Living"],
        ["resin packaging", "palm oil derivatives", "aluminium cans"],
    ),
    "healthcare": (
        "medical technology company",
        [
            "Surgical Devices",
            "Diagnostics",
            "Patient Monitoring",
            "Orthopaedics",
            "Respiratory Care",
        ],
        ["sterilisation services", "sensor chips", "medical-grade polymers"],
    ),
}
_CITIES = [
    "Columbus, Ohio",
    "Denver, Colorado",
    "Charlotte, North Carolina",
    "Austin, Texas",
    "Minneapolis, Minnesota",
    "Portland, Oregon",
    "Pittsburgh, Pennsylvania",
    "Raleigh, North Carolina",
    "Milwaukee, Wisconsin",
    "Tampa, Florida",
    "Hartford, Connecticut",
    "Salt Lake City, Utah",
]
_MONTHS = ["January", "March", "April", "June", "August", "September", "October", "December"]

_HAZARDS = [
    "skydiving",
    "hang gliding",
    "scuba diving below 40 metres",
    "motor racing",
    "mountaineering above 5,000 metres",
    "private aviation as a pilot",
    "base jumping",
    "bull riding",
]

_FILL_POLICY_INTRO = [
    "It is not a contract; if this summary and the policy document differ, the policy document governs.",
    "Read it together with the declarations page and any endorsements attached to the policy.",
    "Terms printed in bold in the policy document have the meanings given in the Definitions section.",
    "Contact your agent or our customer service centre if anything in this summary is unclear.",
    "All amounts are in US dollars unless stated otherwise.",
]
_FILL_POLICY_CLAIMS = [
    "Claims must be reported as soon as reasonably possible and in any case within 60 days.",
    "We may ask for medical records, police reports or receipts before a claim is paid.",
    "Payments are made by bank transfer within 30 days of receiving all required documents.",
    "You must take reasonable steps to prevent further loss or damage after an incident.",
    "Disputes about the amount of a claim may be referred to an independent appraiser.",
]
_FILL_POLICY_GENERAL = [
    "Premiums are payable monthly, quarterly or annually by direct debit.",
    "Changes to the policy take effect only when confirmed in writing by the insurer.",
    "The policy is governed by the law of the state in which it was issued.",
    "Fraudulent statements in a claim void the claim and may void the policy.",
    "Written notice of cancellation may be given by the policyholder at any time.",
    "A summary of your rights under the policy is available on request.",
]
_FILL_10K = {
    "business": [
        "We sell through a direct sales force and a network of distributors and resellers.",
        "Our products compete on quality, reliability, service and total cost of ownership.",
        "Backlog is not a meaningful indicator of future revenue for most of our businesses.",
        "Research and development activities are carried out at centres in North America, Europe and Asia.",
    ],
    "risk": [
        "Economic downturns could reduce demand for our products and services.",
        "Failures or breaches of our information systems could disrupt operations and harm our reputation.",
        "Changes in tax laws or their interpretation could increase our effective tax rate.",
        "We may not be able to attract and retain the skilled employees our businesses need.",
        "Climate-related regulation may increase our operating costs.",
    ],
    "mdna": [
        "Pricing actions more than offset inflation in materials and freight during the year.",
        "Management evaluates segment performance on revenue and segment operating income.",
        "Foreign currency translation reduced reported revenue growth by about one percentage point.",
        "Restructuring charges related mainly to the consolidation of two manufacturing sites.",
    ],
    "liquidity": [
        "We believe cash on hand and cash from operations will be sufficient to meet our needs for at least the next twelve months.",
        "We were in compliance with all debt covenants at year end.",
        "Capital expenditures were directed mainly at capacity expansion and automation.",
    ],
}


# ---------------------------------------------------------------------------------------------
# Life policies


def _life_values(r: random.Random) -> dict[str, Any]:
    return {
        "term": r.choice([10, 15, 20, 25, 30]),
        "benefit": r.randrange(4, 81) * 25_000,
        "premium": round(r.uniform(18, 320), 2),
        "grace": r.choice([30, 31, 45, 60]),
        "free_look": r.choice([10, 14, 20, 30]),
        "adb": r.randrange(5, 16) * 5,
        "waiver": r.choice([3, 4, 6, 9]),
        "terminal": r.choice([6, 12, 18, 24]),
        "child": r.choice([5_000, 10_000, 15_000, 20_000, 25_000]) if r.random() < 0.6 else None,
        "adr": r.randrange(2, 21) * 25_000 if r.random() < 0.5 else None,
        "ci_wait": r.choice([30, 60, 90, 180]) if r.random() < 0.5 else None,
        "suicide": r.choice([12, 24]),
        "contest": r.choice([12, 18, 24]),
        "conversion": r.choice([60, 65, 70, 75]),
        "hazards": r.sample(_HAZARDS, 3),
        "disability_months": r.choice([3, 6, 12]),
        "disability_scope": r.choice(
            [
                "their own occupation",
                "any occupation for which they are reasonably suited by education, training or experience",
            ]
        ),
    }


_LIFE_CHANGEABLE = [
    "benefit",
    "premium",
    "grace",
    "adb",
    "waiver",
    "terminal",
    "contest",
    "conversion",
    "free_look",
]


def _life_doc(b: _Builder, ident: dict[str, Any], v: dict[str, Any]) -> None:
    plan, ins = ident["plan"], ident["insurer"]
    term = "Whole" not in plan
    b.h(f"{plan}: {'Term' if term else 'Whole'} Life Insurance Policy Summary", 1)
    b.p()
    b.f(
        "issuer",
        f"Issued by {ins}. Policy form {ident['code']}, {ident['edition']} edition.",
        ins,
        "Policy form {v} is issued by " + ins + ".",
        code=ident["code"],
    )
    b.p()
    b.s(f"This summary describes the main benefits, limits and exclusions of the {plan} policy.")
    b.filler(_FILL_POLICY_INTRO, 2)

    b.h("Coverage")
    b.p()
    if term:
        b.f(
            "term_length",
            b.pick(
                [
                    f"{plan} provides level term coverage for {v['term']} years from the effective date.",
                    f"Coverage under this policy lasts for a term of {v['term']} years, after which it ends unless converted or renewed.",
                ]
            ),
            f"{v['term']} years",
            "The coverage term is {v}.",
            v["term"],
        )
    else:
        b.s("Coverage lasts for the whole of the insured's life as long as premiums are paid.")
    benefit = money(v["benefit"])
    b.f(
        "death_benefit",
        b.pick(
            [
                [
                    f"The death benefit is {benefit}, payable in a lump sum to the named beneficiary.",
                    "The benefit is reduced by any outstanding policy loans and unpaid premiums.",
                ],
                [
                    f"On the death of the insured, {ins} pays the beneficiary a death benefit of {benefit}."
                ],
                [
                    f"The face amount of the policy, and therefore the death benefit, is {benefit}.",
                    "Any policy loan outstanding at the date of death is deducted from this amount.",
                ],
            ]
        ),
        benefit,
        "The death benefit is {v}.",
        v["benefit"],
    )
    b.filler(_FILL_POLICY_GENERAL, 1)

    b.h("Premiums")
    b.p()
    prem = money(v["premium"], cents=True)
    b.f(
        "monthly_premium",
        b.pick(
            [
                [
                    f"The monthly premium is {prem} and stays level for the whole {'term' if term else 'life of the policy'}.",
                    "Paying once a year instead of monthly reduces the total cost by about 5%.",
                ],
                [
                    f"Premiums of {prem} are due each month; the rate is guaranteed while the policy is in force."
                ],
            ]
        ),
        prem,
        "The monthly premium is {v}.",
        v["premium"],
    )
    b.f(
        "grace_period",
        b.pick(
            [
                [
                    f"A grace period of {days(v['grace'])} applies to every premium after the first.",
                    "Coverage stays in force during the grace period, and an unpaid premium is deducted from any claim.",
                ],
                [
                    f"If a premium is not paid on its due date, the policy stays in force for a grace period of {days(v['grace'])}."
                ],
            ]
        ),
        days(v["grace"]),
        "The grace period is {v}.",
        v["grace"],
    )
    b.p()
    b.f(
        "free_look",
        b.pick(
            [
                f"You may return the policy within {days(v['free_look'])} of delivery for a full refund of the premiums paid.",
                f"There is a free-look period of {days(v['free_look'])}, during which you can cancel and get every premium back.",
            ]
        ),
        days(v["free_look"]),
        "The free-look period is {v}.",
        v["free_look"],
    )
    b.filler(_FILL_POLICY_GENERAL, 1)

    b.h("Riders")
    b.p()
    b.f(
        "adb_rider",
        [
            b.pick(
                [
                    f"The Accelerated Death Benefit rider lets the insured receive up to {pct(v['adb'])} of the death benefit after a diagnosis of terminal illness.",
                    f"With the Accelerated Death Benefit rider, up to {pct(v['adb'])} of the face amount can be paid early if the insured is terminally ill.",
                ]
            ),
            "Any amount advanced is deducted from the death benefit that is paid later.",
        ],
        pct(v["adb"]),
        "The Accelerated Death Benefit rider advances up to {v} of the death benefit.",
        v["adb"],
    )
    b.f(
        "waiver_rider",
        b.pick(
            [
                [
                    f"Under the Waiver of Premium rider, premiums are waived once the insured has been totally disabled for {months(v['waiver'])}.",
                    "Premiums that are waived never have to be repaid, even if the insured recovers.",
                ],
                f"The Waiver of Premium rider stops premiums from falling due after {months(v['waiver'])} of continuous total disability.",
            ]
        ),
        months(v["waiver"]),
        "Premiums are waived after {v} of total disability.",
        v["waiver"],
    )
    if v["child"] is not None or v["adr"] is not None:
        b.p()
    if v["child"] is not None:
        b.f(
            "child_rider",
            f"The Children's Term rider covers each eligible child for {money(v['child'])} until the child turns 25.",
            money(v["child"]),
            "The Children's Term rider covers each child for {v}.",
            v["child"],
        )
    if v["adr"] is not None:
        b.f(
            "adr_rider",
            b.pick(
                [
                    f"The Accidental Death rider pays an additional {money(v['adr'])} if death results from an accident within 90 days of the injury.",
                    f"If the insured dies in an accident, the Accidental Death rider adds {money(v['adr'])} to the death benefit.",
                ]
            ),
            money(v["adr"]),
            "The Accidental Death rider pays an additional {v}.",
            v["adr"],
        )
    if v["ci_wait"] is not None:
        b.p()
        b.f(
            "ci_waiting",
            [
                f"Benefits under the Critical Illness rider are subject to a waiting period of {days(v['ci_wait'])} from the rider's effective date.",
                "A diagnosis made during the waiting period does not give rise to any benefit.",
            ],
            days(v["ci_wait"]),
            "The Critical Illness rider has a waiting period of {v}.",
            v["ci_wait"],
        )

    b.h("Definitions")
    b.p()
    b.f(
        "def_terminal_illness",
        b.pick(
            [
                f"In the {plan} policy, terminal illness means a condition that a licensed physician certifies is expected to result in death within {months(v['terminal'])}.",
                f"Terminal illness, for the purposes of this policy, is an illness or injury that is expected to cause death within {months(v['terminal'])}, as certified by a physician.",
            ]
        ),
        months(v["terminal"]),
        "Terminal illness means a condition expected to result in death within {v}, as certified by a physician.",
        v["terminal"],
        term="terminal illness",
    )
    b.f(
        "def_total_disability",
        f"Total disability means that the insured cannot perform the material duties of {v['disability_scope']} for at least {months(v['disability_months'])}.",
        months(v["disability_months"]),
        "Total disability means being unable to perform the material duties of "
        + v["disability_scope"]
        + " for at least {v}.",
        v["disability_months"],
        term="total disability",
    )
    b.filler(_FILL_POLICY_INTRO[2:3] + _FILL_POLICY_GENERAL[:2], 1)

    b.h("Exclusions and limitations")
    b.p()
    b.f(
        "suicide_exclusion",
        b.pick(
            [
                [
                    f"Suicide within {months(v['suicide'])} of the effective date is excluded.",
                    "In that case the insurer refunds the premiums paid, without interest.",
                ],
                [
                    f"No death benefit is paid for suicide within the first {months(v['suicide'])} of coverage; premiums are refunded instead."
                ],
            ]
        ),
        months(v["suicide"]),
        "Suicide within {v} of the effective date is excluded.",
        v["suicide"],
    )
    hazards = ", ".join(v["hazards"][:-1]) + " or " + v["hazards"][-1]
    b.f(
        "hazard_exclusion",
        b.pick(
            [
                f"Death resulting from {hazards} is not covered.",
                f"The policy does not pay if death is caused by {hazards}.",
            ]
        ),
        hazards,
        "Death resulting from {v} is excluded.",
        None,
        term="hazardous activities",
    )
    b.f(
        "contestability",
        f"The policy is contestable for {months(v['contest'])} after issue, during which a material misstatement in the application may void coverage.",
        months(v["contest"]),
        "The contestability period is {v}.",
        v["contest"],
    )
    if term:
        b.p()
        b.f(
            "conversion_age",
            f"The term coverage may be converted to a permanent plan before age {v['conversion']} without new evidence of insurability.",
            f"age {v['conversion']}",
            "Conversion to a permanent plan is allowed before {v}.",
            v["conversion"],
        )
    b.h("Claims")
    b.p()
    b.filler(_FILL_POLICY_CLAIMS, 3)


# ---------------------------------------------------------------------------------------------
# Home policies


def _home_values(r: random.Random) -> dict[str, Any]:
    dwelling = r.randrange(180, 951) * 1_000
    return {
        "dwelling": dwelling,
        "other_pct": r.choice([10, 15, 20]),
        "pp_pct": r.choice([50, 55, 60, 70, 75]),
        "loss_of_use": r.choice([12, 18, 24]),
        "liability": r.choice([100_000, 300_000, 500_000, 1_000_000]),
        "med_pay": r.choice([1_000, 2_000, 2_500, 5_000]),
        "aop": r.choice([500, 1_000, 1_500, 2_000, 2_500, 5_000]),
        "wind_pct": r.choice([1, 2, 3, 5]),
        "water_backup": r.choice([5_000, 10_000, 15_000, 25_000]),
        "jewelry": r.choice([1_000, 1_500, 2_500, 5_000]),
        "flood_wait": r.choice([10, 15, 30]) if r.random() < 0.5 else None,
        "roof_age": r.choice([10, 12, 15, 20]),
        "vacancy": r.choice([30, 45, 60, 90]),
        "acv": r.choice(
            [
                "the cost to repair or replace the property at the time of loss, less physical depreciation",
                "replacement cost less depreciation and obsolescence, determined at the date of loss",
                "the market value of the damaged property immediately before the loss",
            ]
        ),
    }


_HOME_CHANGEABLE = [
    "dwelling",
    "pp_pct",
    "liability",
    "aop",
    "wind_pct",
    "water_backup",
    "jewelry",
    "roof_age",
    "vacancy",
]


def _home_doc(b: _Builder, ident: dict[str, Any], v: dict[str, Any]) -> None:
    plan, ins = ident["plan"], ident["insurer"]
    b.h(f"{plan} Policy: Homeowners Coverage Summary", 1)
    b.p()
    b.f(
        "issuer",
        f"Issued by {ins}. Policy form {ident['code']}, {ident['edition']} edition.",
        ins,
        "Policy form {v} is issued by " + ins + ".",
        code=ident["code"],
    )
    b.p()
    b.s(
        f"This summary sets out the coverages, limits and deductibles of the {plan} homeowners policy."
    )
    b.filler(_FILL_POLICY_INTRO, 2)

    b.h("Property coverages")
    b.p()
    dwelling = money(v["dwelling"])
    b.f(
        "dwelling_limit",
        b.pick(
            [
                [
                    f"Coverage A (Dwelling) has a limit of {dwelling}.",
                    "The limit is adjusted at each renewal to reflect construction cost inflation in your area.",
                ],
                [f"The dwelling is insured up to {dwelling} under Coverage A."],
                f"Under the {plan} policy the house itself is covered for up to {dwelling} (Coverage A).",
            ]
        ),
        dwelling,
        "The dwelling limit (Coverage A) is {v}.",
        v["dwelling"],
    )
    other = money(v["dwelling"] * v["other_pct"] / 100)
    b.f(
        "other_structures",
        f"Coverage B (Other Structures) is limited to {pct(v['other_pct'])} of the dwelling limit, or {other}.",
        other,
        "Other structures (Coverage B) are covered up to {v}.",
        v["dwelling"] * v["other_pct"] / 100,
    )
    pp = money(v["dwelling"] * v["pp_pct"] / 100)
    b.f(
        "personal_property",
        b.pick(
            [
                f"Coverage C (Personal Property) is limited to {pp}, which is {pct(v['pp_pct'])} of the dwelling limit.",
                [
                    f"Personal belongings are covered up to {pp} under Coverage C.",
                    "Property kept in storage away from the home is covered up to 10% of this amount.",
                ],
            ]
        ),
        pp,
        "Personal property (Coverage C) is covered up to {v}.",
        v["dwelling"] * v["pp_pct"] / 100,
    )
    b.p()
    b.f(
        "loss_of_use",
        [
            f"Coverage D (Loss of Use) pays additional living expenses for up to {months(v['loss_of_use'])} while the home cannot be lived in.",
            "This includes hotel bills, meals above your normal costs and the cost of moving.",
        ],
        months(v["loss_of_use"]),
        "Additional living expenses are paid for up to {v}.",
        v["loss_of_use"],
    )

    b.h("Liability coverages")
    b.p()
    b.f(
        "liability_limit",
        b.pick(
            [
                [
                    f"Coverage E (Personal Liability) pays up to {money(v['liability'])} per occurrence.",
                    "Legal defence costs are paid in addition to this limit.",
                ],
                f"If you are legally responsible for injury to others or damage to their property, the policy pays up to {money(v['liability'])} for each occurrence.",
            ]
        ),
        money(v["liability"]),
        "Personal liability is covered up to {v} per occurrence.",
        v["liability"],
    )
    b.f(
        "med_pay",
        f"Coverage F (Medical Payments to Others) is limited to {money(v['med_pay'])} per person, regardless of fault.",
        money(v["med_pay"]),
        "Medical payments to others are limited to {v} per person.",
        v["med_pay"],
    )
    b.filler(_FILL_POLICY_GENERAL, 1)

    b.h("Deductibles")
    b.p()
    b.f(
        "aop_deductible",
        b.pick(
            [
                [
                    f"An all-peril deductible of {money(v['aop'])} applies to each property claim.",
                    "The deductible does not apply to liability or medical payments claims.",
                ],
                [
                    f"Each property loss is subject to a deductible of {money(v['aop'])}, which is subtracted from the amount we pay."
                ],
            ]
        ),
        money(v["aop"]),
        "The all-peril deductible is {v}.",
        v["aop"],
    )
    wind = money(v["dwelling"] * v["wind_pct"] / 100)
    b.f(
        "wind_deductible",
        f"Windstorm and hail losses carry a separate deductible of {pct(v['wind_pct'])} of the Coverage A limit, which is {wind}.",
        wind,
        "The windstorm and hail deductible is {v}.",
        v["dwelling"] * v["wind_pct"] / 100,
        pct=pct(v["wind_pct"]),
    )

    b.h("Endorsements")
    b.p()
    b.f(
        "water_backup",
        b.pick(
            [
                f"The Water Backup endorsement covers damage caused by water backing up through sewers or drains, up to {money(v['water_backup'])}.",
                f"Sewer and drain backup is covered by endorsement up to {money(v['water_backup'])}.",
            ]
        ),
        money(v["water_backup"]),
        "Water backup damage is covered up to {v}.",
        v["water_backup"],
    )
    b.f(
        "jewelry_sublimit",
        f"Theft of jewelry, watches and furs is limited to {money(v['jewelry'])} in total unless the items are scheduled.",
        money(v["jewelry"]),
        "Theft of jewelry is limited to {v}.",
        v["jewelry"],
    )
    if v["flood_wait"] is not None:
        b.f(
            "flood_waiting",
            [
                f"Flood coverage bought as an endorsement takes effect only after a waiting period of {days(v['flood_wait'])}.",
                "Losses from a flood that begins during the waiting period are not covered.",
            ],
            days(v["flood_wait"]),
            "The flood endorsement has a waiting period of {v}.",
            v["flood_wait"],
        )

    b.h("Definitions")
    b.p()
    b.f(
        "def_acv",
        f"In the {plan} policy, actual cash value means {v['acv']}.",
        v["acv"],
        "Actual cash value means {v}.",
        None,
        term="actual cash value",
    )
    b.f(
        "def_vacancy",
        f"A dwelling is vacant when it has had no occupants and no furnishings for more than {days(v['vacancy'])} in a row; vandalism and glass breakage are not covered while it is vacant.",
        days(v["vacancy"]),
        "A dwelling is vacant when it has been empty for more than {v} in a row.",
        v["vacancy"],
        term="vacant",
    )

    b.h("Exclusions")
    b.p()
    b.s("Flood, earth movement, war, nuclear hazard and wear and tear are excluded.")
    b.f(
        "roof_age",
        f"Roofs older than {v['roof_age']} years are settled at actual cash value rather than replacement cost.",
        f"{v['roof_age']} years",
        "Roofs older than {v} are settled at actual cash value.",
        v["roof_age"],
    )
    b.filler(_FILL_POLICY_CLAIMS, 2)


# ---------------------------------------------------------------------------------------------
# Auto policies


def _auto_values(r: random.Random) -> dict[str, Any]:
    bi = r.choice([(25, 50), (50, 100), (100, 300), (250, 500)])
    return {
        "bi": bi,
        "pd": r.choice([25_000, 50_000, 100_000, 250_000]),
        "um": r.choice([25_000, 50_000, 100_000]),
        "collision": r.choice([250, 500, 750, 1_000, 1_500, 2_000]),
        "comprehensive": r.choice([100, 250, 500, 750, 1_000]),
        "total_loss": r.choice([60, 70, 75, 80]),
        "new_car": r.choice([12, 24, 36]),
        "rental_day": r.choice([30, 35, 40, 50, 60]),
        "rental_days": r.choice([21, 30, 45]),
        "tow": r.choice([15, 25, 50, 100]),
        "gap": r.choice([20, 25, 30]),
        "glass_wait": r.choice([7, 14, 30]) if r.random() < 0.5 else None,
        "permissive": r.choice([25_000, 50_000, 100_000]),
    }


_AUTO_CHANGEABLE = [
    "pd",
    "um",
    "collision",
    "comprehensive",
    "total_loss",
    "rental_day",
    "tow",
    "gap",
    "permissive",
]


def _auto_doc(b: _Builder, ident: dict[str, Any], v: dict[str, Any]) -> None:
    plan, ins = ident["plan"], ident["insurer"]
    b.h(f"{plan} Personal Auto Policy: Coverage Summary", 1)
    b.p()
    b.f(
        "issuer",
        f"Issued by {ins}. Policy form {ident['code']}, {ident['edition']} edition.",
        ins,
        "Policy form {v} is issued by " + ins + ".",
        code=ident["code"],
    )
    b.p()
    b.s(
        f"This summary explains what the {plan} policy covers for each vehicle listed on the declarations page."
    )
    b.filler(_FILL_POLICY_INTRO, 2)

    b.h("Liability")
    b.p()
    per_person, per_accident = money(v["bi"][0] * 1000), money(v["bi"][1] * 1000)
    b.f(
        "bi_limits",
        b.pick(
            [
                [
                    f"Bodily injury liability is limited to {per_person} per person and {per_accident} per accident.",
                    "These limits meet or exceed the minimum required by state law.",
                ],
                f"For injuries you cause to others, the policy pays up to {per_person} per person and {per_accident} per accident.",
            ]
        ),
        f"{per_person} per person and {per_accident} per accident",
        "Bodily injury liability limits are {v}.",
        v["bi"][0] * 1000,
    )
    b.f(
        "pd_limit",
        [
            f"Property damage liability pays up to {money(v['pd'])} per accident for damage to other people's property.",
            "This includes damage to parked cars, fences and buildings.",
        ],
        money(v["pd"]),
        "Property damage liability is limited to {v} per accident.",
        v["pd"],
    )
    b.f(
        "um_limit",
        f"Uninsured and underinsured motorist coverage pays up to {money(v['um'])} per person for injuries caused by a driver without adequate insurance.",
        money(v["um"]),
        "Uninsured motorist coverage pays up to {v} per person.",
        v["um"],
    )

    b.h("Physical damage")
    b.p()
    b.f(
        "collision_deductible",
        b.pick(
            [
                [
                    f"Collision coverage pays for damage to your car from a crash after a deductible of {money(v['collision'])}.",
                    "The deductible applies to each collision separately.",
                ],
                [f"The collision deductible is {money(v['collision'])} per claim."],
                [f"For collision claims you pay the first {money(v['collision'])} of each loss."],
            ]
        ),
        money(v["collision"]),
        "The collision deductible is {v}.",
        v["collision"],
    )
    b.f(
        "comprehensive_deductible",
        b.pick(
            [
                [
                    f"Comprehensive losses such as theft, fire, hail and animal strikes are subject to a {money(v['comprehensive'])} deductible.",
                    "A windscreen that can be repaired rather than replaced is fixed without any deductible.",
                ],
                f"The comprehensive (other than collision) deductible is {money(v['comprehensive'])}.",
            ]
        ),
        money(v["comprehensive"]),
        "The comprehensive deductible is {v}.",
        v["comprehensive"],
    )
    b.p()
    b.f(
        "new_car",
        f"If a new vehicle is totalled within {months(v['new_car'])} of purchase, {ins} replaces it with a new car of the same make and model.",
        months(v["new_car"]),
        "New car replacement applies within {v} of purchase.",
        v["new_car"],
    )
    if v["glass_wait"] is not None:
        b.f(
            "glass_waiting",
            [
                f"Glass claims under comprehensive coverage are not payable during the first {days(v['glass_wait'])} after the coverage start date.",
                "The waiting period does not apply when the policy replaces continuous prior coverage.",
            ],
            days(v["glass_wait"]),
            "Glass claims have a waiting period of {v}.",
            v["glass_wait"],
        )

    b.h("Optional coverages")
    b.p()
    b.f(
        "rental",
        f"Rental reimbursement pays up to {money(v['rental_day'])} per day, for at most {v['rental_days']} days, while the covered vehicle is being repaired.",
        f"{money(v['rental_day'])} per day",
        "Rental reimbursement pays up to {v}.",
        v["rental_day"],
        max_days=v["rental_days"],
    )
    b.f(
        "roadside",
        b.pick(
            [
                f"The Roadside Assistance rider covers towing up to {v['tow']} miles to the nearest qualified repair shop.",
                f"With Roadside Assistance, a tow of up to {v['tow']} miles is included, as are jump starts and lockout service.",
            ]
        ),
        f"{v['tow']} miles",
        "Roadside Assistance covers towing up to {v}.",
        v["tow"],
    )
    b.f(
        "gap",
        f"Loan and lease gap coverage pays the difference between the actual cash value and the loan balance, up to {pct(v['gap'])} of the actual cash value.",
        pct(v["gap"]),
        "Gap coverage pays up to {v} of the actual cash value.",
        v["gap"],
    )

    b.h("Definitions")
    b.p()
    b.f(
        "def_total_loss",
        f"Under the {plan} policy, a vehicle is a total loss when the cost to repair it exceeds {pct(v['total_loss'])} of its actual cash value.",
        pct(v["total_loss"]),
        "A vehicle is a total loss when repairs would cost more than {v} of its actual cash value.",
        v["total_loss"],
        term="total loss",
    )
    b.f(
        "def_permissive",
        f"A permissive driver is anyone who drives a covered vehicle with your consent and holds a valid licence; liability coverage for a permissive driver is limited to {money(v['permissive'])}.",
        money(v["permissive"]),
        "A permissive driver drives with your consent and a valid licence; their liability cover is limited to {v}.",
        v["permissive"],
        term="permissive driver",
    )

    b.h("Exclusions")
    b.p()
    b.s(
        "No coverage applies while a covered vehicle carries passengers or goods for a fee, including ride-sharing, unless the Rideshare endorsement is attached."
    )
    b.s("Racing, speed contests and use on a track are excluded.")
    b.filler(_FILL_POLICY_CLAIMS, 2)


# ---------------------------------------------------------------------------------------------
# Annual reports (10-K-like)


def _company_values(r: random.Random, sector: str) -> dict[str, Any]:
    segments = r.sample(_SECTORS[sector][1], r.choice([2, 3]))
    revenue = round(r.uniform(0.8, 12.0), 2)
    shares = [r.uniform(0.2, 1.0) for _ in segments]
    total = sum(shares)
    return {
        "segments": segments,
        "seg_share": [x / total for x in shares],
        "revenue": revenue,
        "growth": round(r.uniform(-6.0, 14.0), 1),
        "margin": round(r.uniform(6.0, 28.0), 1),
        "margin_prior": round(r.uniform(6.0, 28.0), 1),
        "ni_ratio": r.uniform(0.04, 0.18),
        "shares_out": r.randrange(40, 900),  # millions of diluted shares
        "cash": round(r.uniform(90, 2400)),
        "notes_amt": r.randrange(3, 31) * 50,
        "notes_rate": r.randrange(10, 27) * 0.25,
        "notes_year": r.randrange(2025, 2034),
        "notes_month": r.choice(_MONTHS),
        "revolver": r.choice([0.5, 0.75, 1.0, 1.5, 2.0, 2.5]),
        "revolver_year": r.randrange(2026, 2030),
        "buyback_shares": round(r.uniform(0.4, 9.0), 1),
        "buyback_usd": r.randrange(5, 160) * 5,
        "buyback_left": r.randrange(10, 150) * 10,
        "dividend": round(r.randrange(5, 120) * 0.01, 2),
        "employees": r.randrange(12, 600) * 100,
        "intl": r.randrange(12, 65),
        "customer": r.randrange(4, 24),
        "rate_sens": round(r.uniform(1.0, 40.0), 1),
        "component": r.choice(_SECTORS[sector][2]),
        "supplier_share": r.randrange(3, 25),
        "ebitda_items": r.choice(
            [
                "interest, income taxes, depreciation and amortisation, adjusted for restructuring charges and stock-based compensation",
                "interest, taxes, depreciation, amortisation and impairment charges, excluding gains and losses on divestitures",
                "interest expense, income tax expense, depreciation, amortisation of acquired intangibles and acquisition-related costs",
            ]
        ),
        "ebitda_margin_add": r.uniform(4.0, 9.0),
        "fcf": r.choice(
            [
                "net cash provided by operating activities less capital expenditures",
                "operating cash flow minus purchases of property, plant and equipment, plus proceeds from asset sales",
                "cash from operations less capital expenditures and capitalised software development costs",
            ]
        ),
    }


def _next_year_values(r: random.Random, prev: dict[str, Any]) -> dict[str, Any]:
    """The following fiscal year of the same company: same profile, new results."""
    v = dict(prev)
    v["revenue"] = round(prev["revenue"] * (1 + r.uniform(-0.05, 0.15)), 2)
    v["growth"] = round((v["revenue"] / prev["revenue"] - 1) * 100, 1)
    v["margin_prior"], v["margin"] = prev["margin"], round(prev["margin"] + r.uniform(-3, 3), 1)
    v["shares_out"] = int(prev["shares_out"] * r.uniform(0.93, 1.01))
    v["cash"] = round(prev["cash"] * r.uniform(0.7, 1.4))
    v["buyback_shares"] = round(r.uniform(0.4, 9.0), 1)
    v["buyback_usd"] = r.randrange(5, 160) * 5
    v["buyback_left"] = r.randrange(10, 150) * 10
    v["dividend"] = round(prev["dividend"] + r.choice([0.0, 0.01, 0.02, 0.03, 0.05]), 2)
    v["employees"] = int(round(prev["employees"] * r.uniform(0.95, 1.1), -2))
    v["customer"] = max(3, prev["customer"] + r.choice([-2, -1, 1, 2]))
    v["rate_sens"] = round(r.uniform(1.0, 40.0), 1)
    v["intl"] = min(80, max(5, prev["intl"] + r.choice([-2, -1, 1, 2, 3])))
    return v


def _annual_doc(b: _Builder, ident: dict[str, Any], v: dict[str, Any]) -> None:
    co, short, year = ident["company"], ident["short"], ident["year"]
    sector_desc = _SECTORS[ident["sector"]][0]
    b.h(f"{co}: Annual Report on Form 10-K, Fiscal {year}", 1)
    b.p()
    b.s(
        f"This document summarises the annual report of {co} for the fiscal year ended December 31, {year}."
    )
    b.s(
        "Forward-looking statements in this report involve risks and uncertainties, and actual results may differ materially."
    )

    b.h("Item 1. Business")
    b.p()
    segs = v["segments"]
    seg_list = " and ".join(segs) if len(segs) == 2 else f"{segs[0]}, {segs[1]} and {segs[2]}"
    b.f(
        "segments",
        f"{co} is a {sector_desc} headquartered in {ident['city']}, and it reports {len(segs)} segments: {seg_list}.",
        seg_list,
        f"{co} reports the segments {{v}}.",
        len(segs),
    )
    b.f(
        "employees",
        b.pick(
            [
                f"As of December 31, {year}, {short} employed approximately {v['employees']:,} people, most of them in manufacturing, engineering and sales roles.",
                f"At the end of fiscal {year} the Company had about {v['employees']:,} full-time employees.",
            ]
        ),
        f"{v['employees']:,}",
        "The company had about {v} employees.",
        v["employees"],
    )
    b.filler(_FILL_10K["business"], 2)

    b.h("Item 1A. Risk Factors")
    b.p()
    b.f(
        "largest_customer",
        [
            f"Our largest customer accounted for {pct(v['customer'])} of total revenue in fiscal {year}.",
            "The loss of this customer, or a significant reduction in its orders, could materially reduce our results.",
        ],
        pct(v["customer"]),
        "The largest customer accounted for {v} of total revenue.",
        v["customer"],
    )
    b.f(
        "intl_revenue",
        f"Approximately {pct(v['intl'])} of our revenue is generated outside the United States, which exposes us to foreign currency fluctuations.",
        pct(v["intl"]),
        "About {v} of revenue is generated outside the United States.",
        v["intl"],
    )
    b.p()
    b.f(
        "supplier",
        f"We rely on a single supplier for {v['component']}, which represented about {pct(v['supplier_share'])} of cost of sales.",
        v["component"],
        f"{short} relies on a single supplier for {{v}}.",
        v["supplier_share"],
    )
    b.f(
        "rate_sensitivity",
        f"A 100 basis point increase in interest rates would raise our annual interest expense by approximately {money_m(v['rate_sens'])}.",
        money_m(v["rate_sens"]),
        "A 100 basis point rate increase would raise interest expense by about {v}.",
        v["rate_sens"],
    )
    b.filler(_FILL_10K["risk"], 2)

    b.h("Item 7. Management's Discussion and Analysis")
    b.h("Results of operations", 3)
    b.p()
    prior = v["revenue"] / (1 + v["growth"] / 100)
    direction = "an increase" if v["growth"] >= 0 else "a decrease"
    driver = (
        f"Growth came mainly from pricing and higher volumes in {segs[0]}."
        if v["growth"] >= 0
        else f"The decline reflected lower volumes in {segs[0]}, partly offset by pricing."
    )
    b.f(
        "revenue",
        b.pick(
            [
                [
                    f"Total revenue for fiscal {year} was {money_b(v['revenue'])}, {direction} of {pct(abs(v['growth']), 1)} from {money_b(prior)} in fiscal {year - 1}.",
                    driver,
                ],
                [
                    f"{short} reported total revenue of {money_b(v['revenue'])} in fiscal {year}, compared with {money_b(prior)} in fiscal {year - 1}, {direction} of {pct(abs(v['growth']), 1)}."
                ],
            ]
        ),
        money_b(v["revenue"]),
        f"Total revenue for fiscal {year} was {{v}}.",
        v["revenue"],
        prior=money_b(prior),
        prior_number=round(prior, 2),
    )
    op_income = v["revenue"] * v["margin"] / 100 * 1000
    b.f(
        "operating_margin",
        f"Operating income was {money_m(op_income)}, and the operating margin was {pct(v['margin'], 1)}, compared with {pct(v['margin_prior'], 1)} a year earlier.",
        pct(v["margin"], 1),
        f"The operating margin for fiscal {year} was {{v}}.",
        v["margin"],
        prior=pct(v["margin_prior"], 1),
    )
    ni = op_income * (0.55 + v["ni_ratio"])
    eps = money(ni / v["shares_out"], cents=True)
    b.f(
        "net_income",
        f"Net income was {money_m(ni)}, or {eps} per diluted share.",
        money_m(ni),
        f"Net income for fiscal {year} was {{v}}.",
        ni,
        eps=eps,
    )
    b.filler(_FILL_10K["mdna"], 1)
    b.h("Segment results", 3)
    b.p()
    for seg, share in zip(segs, v["seg_share"], strict=True):
        amount = v["revenue"] * share * 1000
        b.f(
            "segment_revenue",
            b.pick(
                [
                    f"The {seg} segment generated revenue of {money_m(amount)}, or {pct(share * 100)} of the total.",
                    f"Revenue in {seg} was {money_m(amount)} ({pct(share * 100)} of total revenue).",
                ]
            ),
            money_m(amount),
            f"{seg} segment revenue was {{v}}.",
            amount,
            segment=seg,
        )
    b.filler(_FILL_10K["mdna"], 1)

    b.h("Liquidity and capital resources", 3)
    b.p()
    b.f(
        "cash",
        [
            f"At fiscal year end, cash and cash equivalents were {money_m(v['cash'])}.",
            f"About {v['intl'] // 2 + 10}% of this cash was held by subsidiaries outside the United States.",
        ],
        money_m(v["cash"]),
        "Cash and cash equivalents were {v} at year end.",
        v["cash"],
    )
    notes_rate = f"{v['notes_rate']:.2f}%"
    b.f(
        "notes_maturity",
        [
            f"{money_m(v['notes_amt'])} of {notes_rate} senior notes mature in {v['notes_month']} {v['notes_year']}.",
            "We expect to repay or refinance these notes with cash from operations and new borrowings.",
        ],
        f"{v['notes_month']} {v['notes_year']}",
        f"The {notes_rate} senior notes ({money_m(v['notes_amt'])}) mature in {{v}}.",
        v["notes_year"],
        rate=notes_rate,
        amount=money_m(v["notes_amt"]),
    )
    b.f(
        "revolver",
        f"The Company also has a {money_b(v['revolver'])} revolving credit facility, undrawn at year end, that expires in {v['revolver_year']}.",
        money_b(v["revolver"]),
        "The revolving credit facility is {v}.",
        v["revolver"],
    )
    b.filler(_FILL_10K["liquidity"], 1)

    b.h("Share repurchases and dividends", 3)
    b.p()
    b.f(
        "buyback",
        [
            f"During fiscal {year}, {short} repurchased {v['buyback_shares']} million shares of common stock for {money_m(v['buyback_usd'])}.",
            f"As of year end, {money_m(v['buyback_left'])} remained available under the repurchase authorisation.",
        ],
        money_m(v["buyback_usd"]),
        f"In fiscal {year} {short} spent {{v}} on share repurchases.",
        v["buyback_usd"],
        shares=f"{v['buyback_shares']} million",
    )
    b.f(
        "dividend",
        [
            f"The Board declared quarterly dividends of {money(v['dividend'], cents=True)} per share.",
            "Dividends were paid in March, June, September and December.",
        ],
        money(v["dividend"], cents=True),
        "The quarterly dividend was {v} per share.",
        v["dividend"],
    )

    b.h("Non-GAAP financial measures", 3)
    b.p()
    ebitda = v["revenue"] * (v["margin"] + v["ebitda_margin_add"]) / 100 * 1000
    b.f(
        "def_adj_ebitda",
        f"{short} defines Adjusted EBITDA as net income before {v['ebitda_items']}.",
        v["ebitda_items"],
        "Adjusted EBITDA is net income before {v}.",
        None,
        term="Adjusted EBITDA",
    )
    b.f(
        "adj_ebitda",
        f"Adjusted EBITDA for fiscal {year} was {money_m(ebitda)}.",
        money_m(ebitda),
        f"Adjusted EBITDA for fiscal {year} was {{v}}.",
        ebitda,
    )
    b.p()
    b.f(
        "def_fcf",
        f"Free cash flow at {short} is defined as {v['fcf']}.",
        v["fcf"],
        "Free cash flow is {v}.",
        None,
        term="free cash flow",
    )


# ---------------------------------------------------------------------------------------------
# The collection

_POLICY_PRODUCTS = {
    "life": (_life_values, _life_doc, _LIFE_CHANGEABLE, "LP"),
    "home": (_home_values, _home_doc, _HOME_CHANGEABLE, "HO"),
    "auto": (_auto_values, _auto_doc, _AUTO_CHANGEABLE, "AP"),
}
#: documents per product: (families, families that get a second near-duplicate document)
_POLICY_COUNTS = (34, 8)
_COMPANY_COUNTS = (52, 24)


def build_corpus(seed: int = 7) -> Corpus:
    """The whole collection for seed: about 200 documents and their chunks, deterministic."""
    r = random.Random(f"demo-corpus:{seed}")
    planned: list[tuple[str, str, str, dict[str, Any], dict[str, Any], int]] = []
    # (product, source, family, ident, values, style seed)
    used_codes: set[str] = set()
    plan_names = r.sample(_PLAN_A, len(_PLAN_A))
    plan_i = 0
    for product, (values_fn, _doc_fn, changeable, prefix) in _POLICY_PRODUCTS.items():
        families, twins = _POLICY_COUNTS
        for f in range(families):
            # each family gets its own plan name; names recycle across products only
            base = plan_names[(plan_i + f) % len(plan_names)]
            values = values_fn(r)
            suffix = r.choice(_PLAN_B[product]).format(t=values.get("term", ""))
            plan = f"{base} {suffix}"
            insurer = f"{r.choice(_INSURER_A)} {r.choice(_INSURER_B)}"
            style = r.randrange(1 << 30)
            editions = [r.choice([2021, 2022, 2023, 2024])]
            if f < twins:
                editions.append(editions[0] - r.choice([1, 2, 3]))
            for k, edition in enumerate(editions):
                v = values if k == 0 else _edition_values(r, values, values_fn, changeable)
                code = _unique_code(r, prefix, used_codes)
                ident = {"plan": plan, "insurer": insurer, "code": code, "edition": edition}
                planned.append((product, "policy", f"{product}:{plan}", ident, v, style))
        plan_i += families
    companies = r.sample(_COMPANY_A, _COMPANY_COUNTS[0])
    for f, name in enumerate(companies):
        sector = r.choice(sorted(_SECTORS))
        company = f"{name} {r.choice(_COMPANY_B)}"
        ident0 = {"company": company, "short": name, "sector": sector, "city": r.choice(_CITIES)}
        style = r.randrange(1 << 30)
        year = r.choice([2022, 2023])
        values = _company_values(r, sector)
        years = [(year, values)]
        if f < _COMPANY_COUNTS[1]:
            years.append((year + 1, _next_year_values(r, values)))
        for y, v in years:
            planned.append(
                ("annual_report", "10-K", f"10-K:{company}", {**ident0, "year": y}, v, style)
            )

    # numbering is shuffled per product so that near-duplicates are not neighbours
    order = list(range(len(planned)))
    r.shuffle(order)
    position = {i: k for k, i in enumerate(order)}
    counters: dict[str, int] = {}
    documents: list[Document] = []
    for idx in sorted(order, key=lambda i: (planned[i][0], position[i])):
        product, source, family, ident, values, style = planned[idx]
        counters[product] = counters.get(product, 0) + 1
        stem = "annual_report" if product == "annual_report" else f"{product}_policy"
        name = f"{stem}_{counters[product]:03d}.md"
        b = _Builder(name, random.Random(style))
        doc_fn = _annual_doc if product == "annual_report" else _POLICY_PRODUCTS[product][1]
        doc_fn(b, ident, values)
        text, facts = b.render()
        documents.append(Document(name, source, product, family, ident, text, facts))
    chunks = [c for d in documents for c in chunk_document(d.name, d.text)]
    return Corpus(documents, chunks)


def _edition_values(
    r: random.Random, values: dict[str, Any], values_fn: Any, changeable: list[str]
) -> dict[str, Any]:
    """Another edition of a policy: the same terms except a few changed numbers."""
    fresh = values_fn(r)
    v = dict(values)
    changed = 0
    for key in r.sample(changeable, len(changeable)):
        if fresh[key] != values[key]:
            v[key] = fresh[key]
            changed += 1
        if changed >= 4:
            break
    return v


def _unique_code(r: random.Random, prefix: str, used: set[str]) -> str:
    while True:
        code = f"{prefix}-{r.randrange(10000, 100000)}"
        if code not in used:
            used.add(code)
            return code
