"""Text helpers below every stage: terms.py (the terms of a text as the keyword search sees them), sentences.py (sentence spans)."""
