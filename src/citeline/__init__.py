"""citeline: retrieval-augmented question answering that proves where every answer came from.

>>> import citeline
>>> kb = citeline.open("./.citeline")
>>> kb.add(["docs/"])
>>> answer = kb.ask("How do I rotate the API token?")
>>> print(answer.answer, [c.source for c in answer.citations])
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from citeline.errors import CitelineError

if TYPE_CHECKING:
    from citeline.filters import Filter, Principal
    from citeline.kb import KnowledgeBase, open_kb
    from citeline.settings import Settings, load_settings
    from citeline.types import REFUSAL, Answer, Chunk, Citation, Document, Hit

    open = open_kb

__version__ = "0.1.0"

# The public names are imported on first use: `citeline --help` and other short commands must not
# pay for numpy, the store and the models (python -X importtime: 0.5 s of 0.8 s).
_LAZY = {
    "KnowledgeBase": "citeline.kb",
    "open": "citeline.kb:open_kb",
    "open_kb": "citeline.kb",
    "REFUSAL": "citeline.types",
    "Answer": "citeline.types",
    "Chunk": "citeline.types",
    "Citation": "citeline.types",
    "Document": "citeline.types",
    "Hit": "citeline.types",
    "Filter": "citeline.filters",
    "Principal": "citeline.filters",
    "Settings": "citeline.settings",
    "load_settings": "citeline.settings",
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'citeline' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(import_module(module), attr or name)
    globals()[name] = value
    return value


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
