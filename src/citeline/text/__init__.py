"""Text helpers below every stage: the terms of a text as the keyword search sees them."""
