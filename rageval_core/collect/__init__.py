"""`rageval collect`: run the user's retriever over a parameter grid, one stored run per grid
point (docs/collect.md). grid.py: the --grid flags and run names; mapping.py: where things are
in a request and a reply; questions.py: the questions from any file rageval reads; runner.py:
the requests and the storing."""

from rageval_core.collect.grid import Axis, parse_grid
from rageval_core.collect.mapping import Mapping_, load_mapping
from rageval_core.collect.questions import read_questions
from rageval_core.collect.runner import CollectConfig, CollectSummary, collect, plan

__all__ = [
    "Axis",
    "CollectConfig",
    "CollectSummary",
    "Mapping_",
    "collect",
    "load_mapping",
    "parse_grid",
    "plan",
    "read_questions",
]
