"""The chunking stage: structure first (sections, blocks), size second (chunker.py); topic cuts for
text with no structure (topic_cuts.py). What other stages use is named here."""

from citeline.chunking.chunker import (
    GAP_SIMILARITIES,
    Chunker,
    ChunkingOptions,
    UnstructuredMode,
    context_prefix,
    has_structure,
)

__all__ = [
    "GAP_SIMILARITIES",
    "Chunker",
    "ChunkingOptions",
    "UnstructuredMode",
    "context_prefix",
    "has_structure",
]
