"""README.md and docs/*.md show only what exists: every `citeline ...` command and flag (checked
against the click command tree, as `citeline CMD --help` would list them), every repository script's
flags, `make` targets and variables, `CITELINE_*` variables, settings, and relative links (files and
#anchors). Offline and in-process: nothing is run but the parsing of the pages."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import click
import pytest

from citeline.cli.main import main
from citeline.settings import setting_fields

ROOT = Path(__file__).resolve().parents[1]
COMMAND_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK_PAGES = [*COMMAND_PAGES, ROOT / "CHANGELOG.md"]
#: fenced blocks whose lines are shell commands (text, json, python, toml blocks are not)
SHELL_FENCES = ("", "bash", "sh", "shell", "console")
#: flags of other tools that the pages name on their own (a made-up flag is in none of these)
EXTERNAL_FLAGS = {
    "--ray-client-server-port": "ray start",
    "--node-manager-port": "ray start",
    "--object-manager-port": "ray start",
    "--include-dashboard": "ray start",
    "--port": "ray start",
    "--address": "ray start",
    "--head": "ray start",
    "--generate": "ray get-auth-token",
    "--transport": "claude mcp add",
    "--header": "claude mcp add",
}
#: folders whose Python scripts the pages run with their own flags
SCRIPT_FOLDERS = ("benchmarks", "evalsets", "training", "fuzz")
WRAPPERS = {"nice": 2, "exec": 0, "time": 0, "sudo": 0, "env": 0}  # word -> arguments it takes

FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\[(?:[^\]\n]|\][^(])*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*$", re.M)
ENV_VAR = re.compile(r"\bCITELINE_[A-Z0-9_]*[A-Z0-9*]")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
SEGMENT_BREAK = re.compile(r"\s+\|\|?\s+|\s+&&\s+|;\s+|\$\(|\s+--\s+(?=citeline\b)")


# ---- reading the pages -------------------------------------------------------------------------


def without_fences(text: str) -> str:
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def shell_lines(text: str) -> Iterator[str]:
    """Each command of the shell blocks (continuation lines joined), then each inline code span."""
    for m in FENCE.finditer(text):
        if m.group(1).lower() not in SHELL_FENCES:
            continue
        joined = re.sub(r"\\\n\s*", " ", m.group(2))
        for line in joined.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                yield line.removeprefix("$ ")
    for m in INLINE.finditer(without_fences(text)):
        yield m.group(1).replace("\\|", "|")


def words(segment: str) -> list[str]:
    """Shell words of one command, comments dropped; a line shlex cannot read is split on spaces."""
    try:
        return shlex.split(segment, comments=True)
    except ValueError:
        return re.split(r"\s+", re.split(r"\s#\s", segment)[0].strip())


def clean(word: str) -> str:
    """A word as the pages write it in a synopsis: [--json] -> --json, --quiet)" -> --quiet."""
    return word.strip("[]").rstrip(")\"'")


# ---- what exists -------------------------------------------------------------------------------


def option_named(command: click.Command, name: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and name in (*param.opts, *param.secondary_opts):
            return param
    return None


@cache
def every_citeline_flag() -> frozenset[str]:
    flags: set[str] = {"--help"}

    def walk(command: click.Command) -> None:
        for param in command.params:
            if isinstance(param, click.Option):
                flags.update(param.opts, param.secondary_opts)
        if isinstance(command, click.Group):
            for sub in command.commands.values():
                walk(sub)

    walk(main)
    return frozenset(flags)


@cache
def script_flags() -> frozenset[str]:
    found: set[str] = set()
    for folder in SCRIPT_FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            found.update(re.findall(r"""["'](--[a-z0-9][a-z0-9-]*)["']""", path.read_text(encoding="utf-8")))
    return frozenset(found)


@cache
def makefile() -> str:
    return (ROOT / "Makefile").read_text(encoding="utf-8")


def is_flag(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not word[1].isdigit() and word != "--"


# ---- checking one command ----------------------------------------------------------------------


def check_citeline(args: list[str]) -> list[str]:
    """Problems of `citeline ARGS`: an unknown command or an option its command does not have."""
    command: click.Command = main
    path = ["citeline"]
    problems = []
    i = 0
    while i < len(args):
        word = clean(args[i])
        if is_flag(word):
            name, _, inline_value = word.partition("=")
            option = option_named(command, name)
            if option is None and name != "--help":
                problems.append(f"`{' '.join(path)}` has no option {name}")
            elif option is not None and not option.is_flag and not option.count and not inline_value:
                i += option.nargs  # its value
        elif isinstance(command, click.Group):
            if word in command.commands:
                command = command.commands[word]
                path.append(word)
            elif re.fullmatch(r"[A-Z_]+|<.*>|\.\.\.", word):
                return problems  # a placeholder for any command
            else:
                problems.append(f"`{' '.join(path)}` has no command {word!r}")
                return problems
        i += 1
    return problems


def check_python(args: list[str]) -> list[str]:
    """`python SCRIPT.py ...` or `python -m MODULE ...` of this repository: the script exists and
    has every flag shown."""
    if not args:
        return []
    if args[0] == "-m":
        if len(args) < 2:
            return []
        if args[1] == "citeline":
            return check_citeline(args[2:])
        module = ROOT / args[1].replace(".", "/")
        script = next((p for p in (module.with_suffix(".py"), module / "__main__.py") if p.exists()), None)
        if script is None:
            return []  # pytest, pip and other installed modules
        rest = args[2:]
    elif args[0].endswith(".py"):
        script = ROOT / args[0]
        if not script.exists():
            return [f"no script {args[0]}"]
        rest = args[1:]
    else:
        return []
    source = script.read_text(encoding="utf-8")
    return [
        f"{script.relative_to(ROOT)} has no option {flag}"
        for flag in (clean(w).partition("=")[0] for w in rest if is_flag(clean(w)))
        if f'"{flag}"' not in source and f"'{flag}'" not in source
    ]


def check_make(args: list[str]) -> list[str]:
    problems = []
    for word in args:
        assignment = ASSIGNMENT.match(word)
        if assignment:
            if not re.search(rf"^{assignment.group(1)}\s*[?:]?=", makefile(), re.M):
                problems.append(f"the Makefile has no variable {assignment.group(1)}")
        elif word != "..." and not is_flag(word) and not re.search(rf"^{re.escape(word)}:", makefile(), re.M):
            problems.append(f"the Makefile has no target {word!r}")
    return problems


def check_segment(segment: str) -> list[str]:
    args = [w for w in words(segment) if w]
    while args and (assignment := ASSIGNMENT.match(args[0])):  # VAR=value, or ExecStart=PROGRAM
        if Path(assignment.group(2)).name in ("citeline", "python", "python3", "python3.11"):
            args[0] = assignment.group(2)
            break
        args = args[1:]
    while args and args[0] in WRAPPERS:
        args = args[1 + WRAPPERS[args[0]] :]
    if not args:
        return []
    program, rest = Path(args[0]).name, args[1:]
    if program == "citeline":
        return check_citeline(rest)
    if re.fullmatch(r"python(3(\.\d+)?)?|\$PY", program):
        return check_python(rest)
    if program == "make":
        return check_make(rest)
    if program in main.commands and rest:  # `ask --json`, `keys create --expires` in prose
        return check_citeline([program, *rest])
    if is_flag(clean(program)):  # `--keep-missing`, `--as user:NAME --groups a,b` in prose
        known = every_citeline_flag() | script_flags() | set(EXTERNAL_FLAGS)
        return [
            f"no command has the option {flag}"
            for flag in (clean(w).partition("=")[0] for w in args if is_flag(clean(w)))
            if flag not in known
        ]
    return []


def check_command(line: str) -> list[str]:
    return [problem for segment in SEGMENT_BREAK.split(line) for problem in check_segment(segment)]


# ---- links -------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found = set()
    for m in HEADING.finditer(without_fences(page.read_text(encoding="utf-8"))):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return frozenset(found)


def link_problems(page: Path) -> list[str]:
    problems = []
    for m in LINK.finditer(without_fences(page.read_text(encoding="utf-8"))):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            problems.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            problems.append(f"{target}: no heading with the anchor #{anchor}")
    return problems


# ---- the tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda p: p.name)
def test_every_command_and_flag_shown_exists(page: Path) -> None:
    problems = [
        f"{line!r}: {problem}"
        for line in shell_lines(page.read_text(encoding="utf-8"))
        for problem in check_command(line)
    ]
    assert problems == [], f"{page.relative_to(ROOT)}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page", LINK_PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert link_problems(page) == []


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=lambda p: p.name)
def test_every_citeline_variable_shown_is_a_setting(page: Path) -> None:
    settings = {f.name.upper() for f in setting_fields()}
    unknown = set()
    for name in ENV_VAR.findall(page.read_text(encoding="utf-8")):
        rest = name.removeprefix("CITELINE_")
        if rest.startswith("TEST_") or rest in settings:
            continue
        if rest.endswith("*") and any(s.startswith(rest[:-1]) for s in settings):
            continue
        unknown.add(name)
    assert unknown == set()


def test_the_configuration_page_lists_every_setting_and_no_other() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \|", text, re.M))
    names = {f.name for f in setting_fields()} - {"index"}
    assert rows == names


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = "\n".join(text.splitlines()[:25])
    assert len(text.splitlines()) <= 200
    assert "make run" in first_screen and "make test" in first_screen


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("citeline ask --json 'q'", None),
        ("citeline --index DIR eval answers GOLDEN.jsonl --docs DIR --max-drop 0.02", None),
        ("CITELINE_GENERATOR=openai citeline ask --generator openai -- 'q'", None),
        ("citeline keys create --user a --expires 30d --quiet", None),
        ("citeline documents --json | head -1", None),
        ("citeline config set KEY VALUE", None),
        ("make bench-peers PEERS_ARGS='--docs 5183'", None),
        ("python evalsets/run.py --split dev --sets borg", None),
        ("`--keep-missing`", None),
        ("citeline ask --jsn 'q'", "`citeline ask` has no option --jsn"),
        ("citeline add --made-up docs/", "`citeline add` has no option --made-up"),
        ("citeline --index DIR ask --as user:a --grops eng 'q'", "`citeline ask` has no option --grops"),
        ("citeline keys mint --user a", "`citeline keys` has no command 'mint'"),
        ("nice -n 10 citeline serach x", "`citeline` has no command 'serach'"),
        ("x=$(citeline keys create --user a --quit)", "`citeline keys create` has no option --quit"),
        ("python evalsets/run.py --splits dev", "evalsets/run.py has no option --splits"),
        ("python benchmarks/bench_nothing.py", "no script benchmarks/bench_nothing.py"),
        ("make bench-everything", "the Makefile has no target 'bench-everything'"),
        ("make run QUESTON=x", "the Makefile has no variable QUESTON"),
        ("ask --explian 'q'", "`citeline ask` has no option --explian"),
        ("--keep-mising", "no command has the option --keep-mising"),
    ],
)
def test_the_checker_finds_what_does_not_exist(line: str, problem: str | None) -> None:
    line = line.strip("`")
    assert check_command(line) == ([] if problem is None else [problem])


def test_the_link_checker_finds_a_missing_file_and_anchor(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(
        "# Title\n\n## Exit codes\n\n```\n# not a heading\n```\n", encoding="utf-8"
    )
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#exit-codes) [self](#b) [gone](nothing.md) [bad](a.md#not-a-heading) [web](https://x.org)\n\n# B\n",
        encoding="utf-8",
    )
    assert link_problems(page) == [
        "nothing.md: no such file",
        "a.md#not-a-heading: no heading with the anchor #not-a-heading",
    ]
