"""The pure parts of the training-data builder: corruptions, reply parsing, splits, reserved packages.

No model and no download: everything here runs on strings and small in-memory corpora.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from training.checker_pairs import checker_groups
from training.common import (
    HARD_RESERVED,
    ReservedPackageError,
    check_not_reserved,
    is_reserved,
    load_manuals,
    read_reserved,
    reserved_globs,
)
from training.llm import example_questions, parse_list_reply
from training.questions import informativeness, question_problem
from training.reader_pairs import Corpus, reader_groups
from training.templates import template_question
from training.units import Unit, prefix_of, split_of

from training import claims as C
from training import corruptions as K

SENTENCES = [
    "The default value of the retry_interval option is 30 seconds.",
    "Setting check_spool_space to 10M makes Exim refuse messages when less than 10 megabytes are free.",
    "Exim 4.96 was released in 2022 and removed the old lookup syntax.",
    "The AllowOverride directive cannot be used in .htaccess files; it is only valid in Directory sections.",
    "Use the --archive option to preserve permissions, which is what most users want.",
    "By default, the server listens on port 8080 and keeps idle connections open for 5s.",
    "Compression is enabled for responses larger than 4 MB.",
    "The log file must not be world-readable.",
    "A maximum of 64 connections is allowed per client, and the limit is checked every 2 minutes.",
    "Since March 2019 the KeepAlive directive is enabled by default.",
]
VOCAB = C.name_vocabulary(
    [
        *SENTENCES,
        "queue_run_max smtp_accept_max --delete --verbose LimitRequestBody MaxClients -v -q "
        "$local_part $domain /etc/exim4/exim4.conf",
    ]
)


@pytest.mark.parametrize("kind", K.CORRUPTION_KINDS)
def test_corruptions_never_return_the_claim(kind: str) -> None:
    applied = 0
    for seed in range(25):
        for s in SENTENCES:
            out = K.corrupt(kind, s, s, random.Random(seed), VOCAB)
            if out is None:
                continue
            applied += 1
            assert out != s
            assert C.norm(out) != C.norm(s)
    assert applied > 0, f"{kind} never applied to the test sentences"


def test_number_change_changes_a_number_and_keeps_the_rest() -> None:
    s = "Compression is enabled for responses larger than 4 MB."
    for seed in range(20):
        out = K.change_number(s, s, random.Random(seed))
        assert out is not None
        assert C.numbers(out) != C.numbers(s)
        assert out.endswith(" MB.")
        assert out.replace(C.numbers(out)[0], "4", 1) == s
    assert K.change_number("No numbers here at all.", "No numbers here at all.", random.Random(0)) is None


def test_number_change_avoids_values_of_the_premise() -> None:
    premise = "Use 2 or 3 workers; the default is 2."
    for seed in range(30):
        out = K.change_number("The default is 2.", premise, random.Random(seed))
        assert out is not None
        new = C.numbers(out)[0]
        assert new not in ("2", "3")


def test_numbers_inside_identifiers_are_not_numbers() -> None:
    assert C.numbers("Load mod_http2 over IPv6 on x86_64 with 3DES.") == []
    assert C.numbers("Wait 30 seconds, then retry 1,000 times at 0.5 load.") == ["30", "1,000", "0.5"]


@pytest.mark.parametrize(
    ("claim", "expect_any"),
    [
        ("The cache holds 4 MB.", ("4 GB", "4 KB")),
        ("The timeout is 30s by default.", ("30 minutes", "30ms", "30 hours")),
        ("Entries expire after 10 seconds.", ("10 minutes", "10 milliseconds")),
        ("A limit of 512k applies.", ("512M",)),
    ],
)
def test_unit_changes(claim: str, expect_any: tuple[str, ...]) -> None:
    seen = set()
    for seed in range(30):
        out = K.change_unit(claim, claim, random.Random(seed))
        assert out is not None and out != claim
        seen.add(out)
    assert any(any(e in o for e in expect_any) for o in seen), seen


def test_date_change() -> None:
    s = "Since March 2019 the KeepAlive directive is enabled by default."
    for seed in range(20):
        out = K.change_date(s, s, random.Random(seed))
        assert out is not None and out != s
        assert ("2019" not in out) or ("March" not in out)
    assert K.change_date("No dates here.", "No dates here.", random.Random(1)) is None


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        ("The option is required.", "The option is not required."),
        ("Clients cannot change it.", "Clients can change it."),
        ("The file must be readable.", "The file must not be readable."),
        ("The log file must not be world-readable.", "The log file must be world-readable."),
        ("It does not support IPv6.", "It does support IPv6."),
        ("The cache is never flushed.", "The cache is always flushed."),
    ],
)
def test_negation_flips(claim: str, expected: str) -> None:
    outs = {K.flip_negation(claim, claim, random.Random(seed)) for seed in range(30)}
    assert expected in outs
    assert claim not in outs and None not in outs


def test_negation_words() -> None:
    for claim, word in [
        ("Compression is enabled for large responses.", "disabled"),
        ("Compression is disabled for large responses.", "enabled"),
    ]:
        outs = {K.flip_negation(claim, claim, random.Random(seed)) for seed in range(30)}
        assert any(o and word in o for o in outs)
        assert claim not in outs
    assert K.flip_negation("Logs rotate weekly.", "Logs rotate weekly.", random.Random(0)) is None


def test_name_swap_uses_another_name_of_the_manual_not_in_the_premise() -> None:
    s = "The default value of the retry_interval option is 30 seconds."
    for seed in range(20):
        out = K.swap_name(s, s, random.Random(seed), VOCAB)
        assert out is not None
        assert "retry_interval" not in out
        new = [t for _, t in C.identifiers(out)]
        assert any(t in VOCAB["snake"] for t in new)
    assert K.swap_name("Nothing to swap here.", "Nothing to swap here.", random.Random(0), VOCAB) is None


def test_added_entity_names_someone_the_premise_does_not() -> None:
    s = "Compression is enabled for responses larger than 4 MB."
    for seed in range(20):
        out = K.add_entity(s, s, random.Random(seed))
        assert out is not None and out != s
        names = [p for p in K.PERSONS if p in out] + [o for o in K.ORGANISATIONS if o.lower() in out.lower()]
        assert names
        assert all(n.lower() not in s.lower() for n in names)
    # an identifier keeps its case when the claim is embedded after a comma
    out = K.add_entity("KeepAlive is on.", "KeepAlive is on.", random.Random(3))
    assert out is not None and "KeepAlive" in out


def test_entailed_restatements() -> None:
    s = "The AllowOverride directive cannot be used in .htaccess files; it is only valid in Directory sections."
    assert C.sub_clause(s) == "The AllowOverride directive cannot be used in .htaccess files."
    assert C.sub_clause("If the queue is empty, the runner exits; nothing is logged.") is None
    short = C.short_restatement("Use the --archive option (-a) to keep permissions, which most users want.")
    assert short == "Use the --archive option to keep permissions."
    assert C.short_restatement("Short one.") is None


def test_keeps_facts() -> None:
    src = "The default value of the retry_interval option is 30 seconds."
    assert C.keeps_facts(src, "By default, the retry_interval option is set to 30 seconds.")
    assert not C.keeps_facts(src, src)  # a copy is no paraphrase
    assert not C.keeps_facts(src, "By default, the retry_interval option is set to 60 seconds.")
    assert not C.keeps_facts(src, "By default, the option is set to 30 seconds.")
    assert not C.keeps_facts(src, "John Smith set the retry_interval option to 30 seconds by default.")


# ------------------------------------------------------------------------- LLM reply parsing


@pytest.mark.parametrize(
    "raw",
    [
        '{"questions": ["A?", "B?", "C?"]}',
        'Sure! Here you go:\n```json\n{"questions": ["A?", "B?", "C?"]}\n```\nHope it helps.',
        '["A?", "B?", "C?"]',
        '{"questions": [{"n": 1, "q": "A?"}, {"n": 2, "q": "B?"}, {"n": 3, "q": "C?"}]}',
        '{"output": ["A?", "B?", "C?"]}',
        '{"questions": ["A?", "B?", "C?", "D?"]}',
    ],
)
def test_parse_list_reply_variants(raw: str) -> None:
    assert parse_list_reply(raw, "questions", 3) == ["A?", "B?", "C?"]


def test_parse_list_reply_junk_and_truncation() -> None:
    assert parse_list_reply("", "questions", 2) == ["", ""]
    assert parse_list_reply("I cannot help with that.", "questions", 2) == ["", ""]
    truncated = parse_list_reply('{"questions": ["How long is it?", "Wha', "questions", 3)
    assert truncated[0] == "How long is it?" and len(truncated) == 3
    assert parse_list_reply('{"questions": ["Only one?"]}', "questions", 3) == ["Only one?", "", ""]
    assert parse_list_reply('{"questions": [1, null, "ok?"]}', "questions", 3) == ["", "", "ok?"]
    assert parse_list_reply("{{{{[[[", "questions", 1) == [""]
    assert parse_list_reply('{"questions": ["x?"]}', "questions", 0) == []


def test_question_filters() -> None:
    unit = "The default value of the retry_interval option is 30 seconds."
    assert question_problem("What is the default retry interval?", unit) is None
    assert question_problem("", unit) == "empty"
    assert question_problem("What is the default retry interval", unit) == "no_question_mark"
    assert question_problem("Why?", unit) == "too_short"
    assert question_problem("The default value of the retry_interval option is 30 seconds?", unit) == "copy"
    ex = example_questions()[0]
    assert question_problem(ex, unit, example_questions()) in ("example_copy", "off_topic")
    assert question_problem("How do I bake bread at home quickly?", unit) == "off_topic"


def test_informativeness() -> None:
    assert informativeness("The default value of the retry_interval option is 30 seconds.", "sentence") > 2
    assert informativeness("Copyright 2020 The Apache Software Foundation.", "sentence") < 0
    assert informativeness("The options are as follows:", "sentence") < 0
    assert informativeness("Too short.", "sentence") < 0


# ------------------------------------------------------------------------------ splits


WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india".split()


def _corpus(n_docs: int = 30, manuals: int = 3) -> tuple[list[Unit], dict[str, str]]:
    units: list[Unit] = []
    for d in range(n_docs):
        manual = f"m{d % manuals}"
        doc = f"{manual}/doc{d}.html"
        for s in range(3):
            section = f"Section {s}"
            ids = []
            for k in range(4):
                uid = f"{doc}#{len(units)}"
                ids.append(uid)
                units.append(
                    Unit(
                        uid,
                        doc,
                        manual,
                        f"Doc {d}",
                        ("Doc", section),
                        section,
                        "sentence",
                        f"Option opt_{d}_{s}_{k} sets the {WORDS[(d + s + k) % 9]} {WORDS[(d * 3 + k) % 9]} "
                        f"limit of {WORDS[(s * 5 + k) % 9]} to {k + 2} items.",
                        0,
                        1,
                    )
                )
            for k in range(3):
                units.append(
                    Unit(
                        f"{doc}#w{s}{k}",
                        doc,
                        manual,
                        f"Doc {d}",
                        ("Doc", section),
                        section,
                        "window",
                        "window text " + str(k) + " of " + section + " in " + doc,
                        0,
                        1,
                        (ids[k], ids[k + 1]),
                    )
                )
    split = {u.doc: split_of(u.doc, 13, "test" if u.manual == "m2" else "") for u in units}
    return units, split


def test_split_is_deterministic_and_pinned() -> None:
    assert split_of("a/b.html", 13) == split_of("a/b.html", 13)
    assert split_of("a/b.html", 13, "dev") == "dev"
    counts = Counter(split_of(f"m/doc{i}", 13) for i in range(2000))
    assert 0.75 < counts["train"] / 2000 < 0.85
    assert 0.07 < counts["test"] / 2000 < 0.13


def test_no_document_crosses_splits() -> None:
    units, split = _corpus()
    corpus = Corpus(units, split)
    plain = [u for u in units if u.kind != "window"]
    questions = [
        {
            "batch": f"q:{u.id}",
            "units": [u.id],
            "questions": [f"What limit does widget number {i} get by default?"],
        }
        for i, u in enumerate(plain[::5])
    ]
    stats: Counter[str] = Counter()
    rows = []
    for g in reader_groups(questions, corpus, 13, 0.5, stats):
        for r in g["rows"]:
            rows.append((g["split"], r))
    premises = plain[::3]
    vocab = {m: C.name_vocabulary(u.text for u in plain if u.manual == m) for m in ("m0", "m1", "m2")}
    for g in checker_groups(premises, corpus, {}, vocab, 13, 0.3, stats):
        for r in g["rows"]:
            rows.append((g["split"], r))
    assert rows
    doc_splits: dict[str, set[str]] = {}
    for s, r in rows:
        assert split[r["source"]] == s
        assert split[r["b_source"]] == s
        doc_splits.setdefault(r["source"], set()).add(s)
        doc_splits.setdefault(r["b_source"], set()).add(s)
    assert all(len(v) == 1 for v in doc_splits.values())
    assert {s for s, _ in rows} >= {"train", "test"}
    # every reader group with a positive has negatives, and unanswerable groups have none positive
    groups: dict[str, list[int]] = {}
    for _, r in rows:
        groups.setdefault(r["group"], []).append(r["label"])
    for group, labels in groups.items():
        if group.startswith("u:"):
            assert set(labels) == {0}
        else:
            assert 1 in labels and 0 in labels


def test_checker_groups_are_balanced() -> None:
    units, split = _corpus()
    corpus = Corpus(units, split)
    plain = [u for u in units if u.kind != "window"]
    vocab = {m: C.name_vocabulary(u.text for u in plain if u.manual == m) for m in ("m0", "m1", "m2")}
    labels: Counter[int] = Counter()
    for g in checker_groups(plain, corpus, {}, vocab, 13, 0.2, Counter()):
        group_labels = Counter(r["label"] for r in g["rows"])
        assert group_labels[1] >= 1 and group_labels[0] >= 1
        assert group_labels[1] <= group_labels[0] + 1
        labels.update(group_labels)
    assert 0.4 < labels[1] / (labels[0] + labels[1]) < 0.6


# ------------------------------------------------------------------------------ reserved


@pytest.mark.parametrize(
    "package", ["postgresql-doc-15", "postgresql-16", "r-doc-html", "r-doc-pdf", "postfix", "postfix-doc"]
)
def test_hard_reserved_packages_are_refused(package: str) -> None:
    assert is_reserved(package, HARD_RESERVED)
    assert is_reserved(f"{package}=1.0-1", HARD_RESERVED)
    with pytest.raises(ReservedPackageError):
        check_not_reserved(package, HARD_RESERVED)


def test_reserved_file_is_read(tmp_path: Path) -> None:
    f = tmp_path / "RESERVED"
    f.write_text("# reserved for evaluation\npostfix-doc   # golden set\nmutt*\n\nsome-manual-doc 1.2\n")
    assert read_reserved(f) == ["postfix-doc", "mutt*", "some-manual-doc"]
    globs = reserved_globs(f)
    assert set(HARD_RESERVED) <= set(globs)
    assert is_reserved("mutt-doc", globs) and is_reserved("some-manual-doc", globs)
    assert not is_reserved("exim4-doc-html", globs)
    assert read_reserved(tmp_path / "missing") == []


def test_manual_list_refuses_reserved_packages(tmp_path: Path) -> None:
    toml = tmp_path / "manuals.toml"
    toml.write_text(
        '[[manual]]\npackage = "postfix-doc"\nversion = "3.7"\nlicence = "IPL"\ncopyright = "x"\n'
        'what = "x"\ninclude = ["*.html"]\n'
    )
    with pytest.raises(ReservedPackageError):
        load_manuals(toml)


def test_committed_manual_list_is_clean() -> None:
    manuals = load_manuals()
    assert 8 <= len(manuals) <= 12
    for m in manuals:
        assert not is_reserved(m.package)
        assert m.version and m.licence and m.copyright and m.include
        assert len(m.sha256) == 64
    assert {m.split for m in manuals} >= {"", "dev", "test"}


# ------------------------------------------------------------------------ template questions


def _unit(text: str, trail: tuple[str, ...] = (), kind: str = "sentence") -> Unit:
    return Unit("d#1", "m/d.html", "m", "T", trail, " > ".join(trail), kind, text, 0, len(text))


def _templated(unit: Unit) -> tuple[str, str]:
    """The (question, kind) of a unit that must get a template question."""
    made = template_question(unit, random.Random(0))
    assert made is not None, unit.text
    return made


def test_template_default_from_the_section_name() -> None:
    u = _unit(
        "Description:: Default:; Enables HTTP persistent connections: KeepAlive On.",
        ("Core", "KeepAlive Directive ¶"),
        "row",
    )
    q, kind = _templated(u)
    assert kind == "template_default" and "KeepAlive" in q and q.endswith("?")
    u = _unit(
        "type: integer; default: 1024; mandatory: no.", ("Input Parameters¶", "MaxSubmitAtOnce¶"), "row"
    )
    q, kind = _templated(u)
    assert "MaxSubmitAtOnce" in q


def test_template_default_needs_a_subject_close_to_default() -> None:
    near = _unit("If hosts_max_try is small (the default is 5) only a few hosts are tried.")
    assert _templated(near)[1] == "template_default"
    far = _unit("The default encoding for databases created using the old API in sqlite3_open16 is UTF-16.")
    assert template_question(far, random.Random(0)) is None
    sets = _unit("SQLITE_CONFIG_LOOKASIDE sets the default lookaside size.")
    assert template_question(sets, random.Random(0)) is None


def test_template_definition_for_man_page_options() -> None:
    u = _unit("--mkpath Create all missing path components of the destination path.")
    q, kind = _templated(u)
    assert kind == "template_definition" and "--mkpath" in q
    assert (
        template_question(_unit("GitHub is where the project lives and issues go."), random.Random(0)) is None
    )
    assert (
        template_question(_unit("Quoting can be used to disable special treatment."), random.Random(0))
        is None
    )


def test_restatements_keep_leading_options_and_identifiers() -> None:
    out = C.short_restatement("-t timeout Cause read to time out (or fail) if a line is not read in time.")
    assert out is not None and out.startswith("-t timeout")
    assert C.sub_clause("mod_rewrite rules are applied in order of appearance; later ones win.") == (
        "mod_rewrite rules are applied in order of appearance."
    )


def test_prefix_of_skips_blank_headings() -> None:
    assert prefix_of("Title", ("A", " ", "B")) == "A > B"
    assert prefix_of("Title", (" ", "")) == "Title"
    assert prefix_of("", ()) == ""
