"""Locating gold evidence quotes in the stored document text (eval/answers/evidence.py)."""

from __future__ import annotations

from citeline.eval.answers import locate_quote


def test_locate_quote_exact_then_ignoring_case_and_whitespace() -> None:
    text = "Alpha beta.\nThe  Queue holds\n900 jobs. The queue holds 900 jobs."
    assert locate_quote(text, "queue holds 900 jobs") == [(text.rindex("queue"), len(text) - 1)]
    spans = locate_quote(text, "the queue holds 900 jobs.")
    assert [text[s:e] for s, e in spans] == ["The  Queue holds\n900 jobs.", "The queue holds 900 jobs."]
    assert locate_quote(text, "not there") == []
    assert locate_quote(text, "Alpha", lo=5) == []  # outside the searched range


def test_locate_quote_ignores_the_colon_a_parser_put_after_a_definitions_term() -> None:
    text = "Options:\n\n-n: Show only configuration parameters that have explicit settings.\n"
    (span,) = locate_quote(text, "-n Show only configuration parameters that have explicit settings.")
    assert text[span[0] : span[1]] == "-n: Show only configuration parameters that have explicit settings."
    text = "version (default: 2): Specifies the LDAP protocol version to use."
    (span,) = locate_quote(text, "version (default: 2) Specifies the LDAP protocol version")
    assert text[span[0] : span[1]] == "version (default: 2): Specifies the LDAP protocol version"
    assert locate_quote(text, "version (default 3)") == []
