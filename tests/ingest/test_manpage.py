"""Manual pages in one <pre> read as sections and paragraphs (man2html, Postfix's HTML pages)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from citeline.ingest.formats.html import HtmlParser
from citeline.ingest.formats.manpage import is_man_page, man_page_blocks

PAGE = """POSTQUEUE(1)                                                      POSTQUEUE(1)

<b>NAME</b>
       postqueue - Postfix queue control

<b>SYNOPSIS</b>
   <b>To flush the mail queue</b>:

       <b>postqueue</b> [<b>-v</b>] <b>-f</b>

<b>DESCRIPTION</b>
       The  <b>postqueue</b>(1)  command  implements  the  Postfix user interface for
       queue management.  See the <b>postsuper</b>(1) command for operations such as  delet-
       ing a message from the queue.

       <b>-c</b> <i>config</i><b>_</b><i>dir</i>
              The <b>main.cf</b> configuration file is in the named directory.

       <b>-f</b>     Flush the queue: attempt to deliver all queued mail.

                                                                  POSTQUEUE(1)
"""


def test_a_manual_page_in_pre_becomes_sections_and_paragraphs() -> None:
    html = f"<html><head><title>Postfix manual - postqueue(1)</title></head><body><pre>{PAGE}</pre></body></html>"
    doc = HtmlParser().parse(html.encode(), Path("postqueue.1.html"))
    blocks = [(b.kind, b.heading_trail, doc.text[b.start : b.end]) for b in doc.blocks]
    assert blocks == [
        ("heading", ("Name",), "Name"),
        ("paragraph", ("Name",), "postqueue - Postfix queue control"),
        ("heading", ("Synopsis",), "Synopsis"),
        ("heading", ("Synopsis", "To flush the mail queue"), "To flush the mail queue"),
        ("paragraph", ("Synopsis", "To flush the mail queue"), "postqueue [-v] -f"),
        ("heading", ("Description",), "Description"),
        (
            "paragraph",
            ("Description",),
            "The postqueue(1) command implements the Postfix user interface for queue management. "
            "See the postsuper(1) command for operations such as deleting a message from the queue.",
        ),
        (
            "paragraph",
            ("Description",),
            "-c config_dir: The main.cf configuration file is in the named directory.",
        ),
        ("paragraph", ("Description",), "-f: Flush the queue: attempt to deliver all queued mail."),
    ]


@pytest.mark.parametrize(
    ("text", "manual"),
    [
        (re.sub(r"<[^>]+>", "", PAGE), True),
        ("def main():\n    return 1\n", False),
        ("NAME\n  only one section header\n", False),
        ("USAGE\n  run it\nNOTES\n  none\n", False),  # no known manual section
    ],
)
def test_only_manual_pages_are_recognised(text: str, manual: bool) -> None:
    assert is_man_page(text) is manual
    assert (man_page_blocks(text) is not None) is manual


# posttls-finger(1)'s description opens with "posttls-finger(1) connects to ...": that line was
# taken for the page's running title and dropped, and the description began mid-sentence.
NAMED_PAGE = (
    "POSTTLS-FINGER(1)                                            POSTTLS-FINGER(1)\n\n"
    "NAME\n       posttls-finger - Probe the TLS properties of an ESMTP or LMTP server.\n\n"
    "DESCRIPTION\n"
    "       posttls-finger(1)  connects  to  the  specified destination and reports\n"
    "       TLS-related information about the server.\n\n"
    "       tlsproxy(8) to load the same certificate.\n\n"
    "POSTTLS-FINGER(1)       General Commands Manual       POSTTLS-FINGER(1)\n"
    "                                                              POSTTLS-FINGER(1)\n"
)


def test_a_paragraph_that_opens_with_the_pages_name_is_kept() -> None:
    assert man_page_blocks(NAMED_PAGE) == [
        ("heading", "Name", 2),
        ("paragraph", "posttls-finger - Probe the TLS properties of an ESMTP or LMTP server.", 0),
        ("heading", "Description", 2),
        (
            "paragraph",
            "posttls-finger(1) connects to the specified destination and reports TLS-related "
            "information about the server.",
            0,
        ),
        ("paragraph", "tlsproxy(8) to load the same certificate.", 0),
    ]
