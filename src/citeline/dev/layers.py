"""The layers of citeline, lowest first, and the check that keeps them: ``python -m citeline.dev.layers``.

A module may import its own layer and the layers below it, never one above; and no modules may
import each other in a circle, even through imports inside functions or under ``TYPE_CHECKING``
(a circle of annotations still ties the modules into one). A shared type therefore lives below
every module that uses it. Each failure names the importing file and line, the import, and the
layers: move the shared name down, or the importing code up. A new module falls under the entry
of LAYERS whose prefix names it; one that none names fails until it is placed.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: (layer, module prefixes), lowest first; the longest prefix that names a module places it
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "citeline.errors",
            "citeline.atomic",
            "citeline.jsonable",
            "citeline.terminal",
            "citeline.types",
            "citeline.page_labels",
            "citeline.filters",
            "citeline.chat",
            "citeline.text",
            "citeline.trace",
            "citeline.registry",
            "citeline.settings",
            "citeline.url_secrets",
        ),
    ),
    ("query", ("citeline.query",)),
    (
        "contracts",
        (
            "citeline.embedding.base",
            "citeline.index.base",
            "citeline.rerank.base",
            "citeline.answer.generators.base",
            "citeline.build_context",
        ),
    ),
    ("models", ("citeline.inference", "citeline.embedding")),
    ("chunking, index", ("citeline.chunking", "citeline.index")),
    ("retrieval", ("citeline.retrieval",)),
    ("rerank", ("citeline.rerank",)),
    ("ingest, answer", ("citeline.ingest", "citeline.answer")),
    ("wiring", ("citeline.wiring", "citeline.access", "citeline.trace_access")),
    ("knowledge base", ("citeline.kb",)),
    ("evaluation", ("citeline.eval",)),
    ("server", ("citeline.server",)),
    (
        "command line",
        (
            "citeline.cli.app",
            "citeline.cli.ending",
            "citeline.cli.main",
            "citeline.cli.progress",
            "citeline.cli.embed",
            "citeline.cli.config",
            "citeline.cli.documents",
            "citeline.cli.inspect",
            "citeline.cli.output",
            "citeline.cli.server",
            "citeline.cli.eval",
            "citeline.cli.eval_answers",
        ),
    ),
    ("entry points", ("citeline", "citeline.__main__", "citeline.dev")),
)

#: circles known and left for later, each as its modules: tolerated while they stand, and an
#: entry that no longer matches fails, so it is struck once the circle is gone
KNOWN_CIRCLES: tuple[frozenset[str], ...] = ()


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: Path
    line: int

    def where(self) -> str:
        path = self.path.relative_to(Path.cwd()) if self.path.is_relative_to(Path.cwd()) else self.path
        return f"{path}:{self.line}: {self.importer} imports {self.imported}"


def module_files(src: Path, package: str = "citeline") -> dict[str, Path]:
    """Every module of ``package`` under ``src``, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module that ``name`` (a module, or a name inside one) comes from."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, package: str, modules: Mapping[str, Path]) -> Iterator[str]:
    """The modules an import statement loads: `from citeline.index import sqlite` loads citeline.index.sqlite."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (found := _known(alias.name, modules)) is not None:
                yield found
        return
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        base = ".".join([*parts[: len(parts) - node.level + 1], *([base] if base else [])])
    for alias in node.names:
        if (found := _known(f"{base}.{alias.name}", modules)) is not None:
            yield found


def imports(modules: Mapping[str, Path]) -> list[Import]:
    """Each module's imports of the package's own modules, wherever they stand in its file."""
    found: set[Import] = set()
    for name, path in modules.items():
        own_package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(
                    Import(name, target, path, node.lineno)
                    for target in _targets(node, own_package, modules)
                    if target != name
                )
    return sorted(found, key=lambda i: (str(i.path), i.line, i.imported))


def layer_of(module: str, layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer index)
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), index)
    return None if best is None else best[1]


def upward(found: Sequence[Import], layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> list[str]:
    """An import into a higher layer, and a module that no layer names."""
    problems: list[str] = []
    for imp in found:
        low, high = layer_of(imp.importer, layers), layer_of(imp.imported, layers)
        if low is not None and high is not None and high > low:
            problems.append(f"{imp.where()}: layer '{layers[low][0]}' imports '{layers[high][0]}' above it")
    return problems


def unplaced(modules: Sequence[str], layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> list[str]:
    return [
        f"{m}: no layer names this module; add it to LAYERS" for m in modules if layer_of(m, layers) is None
    ]


def cycles(found: Sequence[Import]) -> list[list[Import]]:
    """The import circles: each strongly connected set of modules, as the imports inside it."""
    graph: dict[str, list[str]] = {}
    for imp in found:
        graph.setdefault(imp.importer, []).append(imp.imported)
        graph.setdefault(imp.imported, [])
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is a few hundred modules deep at most
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            members = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                members.add(top)
                if top == node:
                    break
            if len(members) > 1:
                circles.append(members)

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return [[i for i in found if i.importer in c and i.imported in c] for c in circles]


def check(
    src: Path,
    layers: Sequence[tuple[str, Sequence[str]]] = LAYERS,
    known: Sequence[frozenset[str]] = KNOWN_CIRCLES,
) -> list[str]:
    """Every problem, one line each; none when the layers hold."""
    modules = module_files(src)
    found = imports(modules)
    problems = unplaced(sorted(modules), layers) + upward(found, layers)
    seen: set[frozenset[str]] = set()
    for circle in cycles(found):
        names = frozenset(i.importer for i in circle)
        if names in known:
            seen.add(names)
            continue
        problems.append(f"import circle of {len(names)} modules: {', '.join(sorted(names))}")
        problems.extend(f"  {imp.where()}" for imp in circle)
    problems += [f"KNOWN_CIRCLES: no longer a circle: {', '.join(sorted(c))}" for c in known if c not in seen]
    return problems


def main(argv: Sequence[str] = ()) -> int:
    src = Path(argv[0]) if argv else Path(__file__).resolve().parents[2]
    problems = check(src)
    for line in problems:
        print(line)
    if problems:
        print(
            f"citeline.dev.layers: {len(problems)} problem(s); the layers are LAYERS in src/citeline/dev/layers.py"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
