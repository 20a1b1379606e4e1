"""The trained claim checker (answer/checker.py): a value restated in other words is supported by
the one unit that states it; a claim joining two units, or changing a value, is not."""

from __future__ import annotations

import pytest

from citeline.answer.checker import TrainedChecker
from citeline.answer.reader import packaged_model
from citeline.answer.verify import Cited

HEALTHCHECK = (
    "The options that can appear before `CMD` are:\n\n"
    "- `--interval=DURATION` (default: `30s`)\n"
    "- `--timeout=DURATION` (default: `30s`)\n"
    "- `--retries=N` (default: `3`)\n"
)
VARIABLES = (
    "| Variable | Description |\n| --- | --- |\n"
    "| `DOCKER_RAMDISK` | If set this will disable 'pivot_root'. |\n"
    "| `MOBY_DISABLE_PIGZ` | Disables the use of unpigz to decompress layers in parallel when pulling images. |\n"
)


@pytest.mark.parametrize(
    ("claim", "passage", "heading", "supported"),
    [
        # the packaged 1.5B's words for "(default: `30s`)" under HEALTHCHECK (the model alone: 0.06)
        (
            "The default interval for a Dockerfile HEALTHCHECK is 30 seconds.",
            HEALTHCHECK,
            "Dockerfile > HEALTHCHECK",
            True,
        ),
        (
            "The default number of retries for a HEALTHCHECK is `3`.",
            HEALTHCHECK,
            "Dockerfile > HEALTHCHECK",
            True,
        ),
        # a changed value, or a value of another line, is not restated
        (
            "The default interval for a Dockerfile HEALTHCHECK is 60 seconds.",
            HEALTHCHECK,
            "Dockerfile > HEALTHCHECK",
            False,
        ),
        (
            "The default number of retries for a HEALTHCHECK is `5`.",
            HEALTHCHECK,
            "Dockerfile > HEALTHCHECK",
            False,
        ),
        # one row's name joined to the other row's effect: no single unit holds both
        (
            "The `DOCKER_RAMDISK` environment variable stops dockerd from using unpigz to decompress "
            "layers in parallel when pulling images.",
            VARIABLES,
            "Environment variables",
            False,
        ),
    ],
)
def test_a_value_restated_in_other_words_is_supported_by_its_unit(
    claim: str, passage: str, heading: str, supported: bool
) -> None:
    support = TrainedChecker(packaged_model()).check(claim, [Cited(1, passage, 0, heading)])
    assert support.supported is supported, (claim, support.score)
    if supported:
        start, end = support.quotes[1]
        assert "default" in passage[start:end]


def test_a_claim_of_several_verbatim_sentences_of_one_passage_is_supported() -> None:
    passage = (
        "The command keyword forces execution of the specified command line upon login. "
        "This must be borg serve. Other text sits between them. "
        "The --restrict-to-repository option permits access to exactly one repository."
    )
    claim = (
        "The command keyword forces execution of the specified command line upon login. "
        "The --restrict-to-repository option permits access to exactly one repository."
    )
    support = TrainedChecker(packaged_model()).check(claim, [Cited(1, passage, 100)])
    assert support.supported and support.score == 1.0
    assert support.quotes[1] == (100, 100 + len(passage))
    # one sentence that is not in the passage: the claim is the model's to judge, and it is false
    changed = claim.replace("exactly one repository", "every repository of the server")
    assert not TrainedChecker(packaged_model()).check(changed, [Cited(1, passage, 100)]).supported
