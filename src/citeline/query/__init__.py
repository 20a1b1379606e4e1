"""The question, analysed once (analysis.py: Query), with what it asks for (slot.py) and its words (english.py)."""
