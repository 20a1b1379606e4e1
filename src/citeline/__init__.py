"""citeline: retrieval-augmented question answering that proves where every answer came from.

>>> import citeline
>>> kb = citeline.open("./.citeline")
>>> kb.add(["docs/"])
>>> answer = kb.ask("How do I rotate the API token?")
>>> print(answer.answer, [c.source for c in answer.citations])
"""

from __future__ import annotations

from citeline.errors import CitelineError
from citeline.kb import KnowledgeBase, open_kb
from citeline.models import REFUSAL, Answer, Chunk, Citation, Document, Hit
from citeline.retrieval.filters import Filter, Principal
from citeline.settings import Settings, load_settings

open = open_kb

__version__ = "0.1.0"

__all__ = [
    "REFUSAL",
    "Answer",
    "Chunk",
    "Citation",
    "CitelineError",
    "Document",
    "Filter",
    "Hit",
    "KnowledgeBase",
    "Principal",
    "Settings",
    "__version__",
    "load_settings",
    "open",
]
