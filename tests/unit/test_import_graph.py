"""The package's import graph has no cycle, not even one hidden behind a lazy import.

Read from the source (no module is imported): an edge for every import of a tool module, at
module level or inside a function (a cycle that only closes when a function runs is still a
cycle, as the old `config` -> `formats` -> `formats.base` -> `config` was through a module
`__getattr__`), plus the package `__init__` modules Python runs first when it imports a
submodule (`state.verdicts` importing `validate.check` used to run `validate/__init__`).
Imports under `if TYPE_CHECKING:` do not run, but a circle through them is still two modules
that each need the other to be read: `test_type_checking_imports_close_no_new_circle` counts
them too, and finds none (the table context of issue 59 removed the last two).
Not followed: `importlib.import_module` calls. Their targets are data, not code: the format
registry loads a format's module by its name in `formats.FORMATS`, the top package loads the
Spark-facing API on first use, and the transform loader imports the user's module; none of them
names a module of its importer's own chain.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "shadow_backfill"


def _module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _module_names()


def _imported(node: ast.AST) -> list[str]:
    """The tool modules one import statement names (`from a.b import c` names a.b.c when c is a
    module, else a.b)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODULES]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES]
        if len(subs) < len(node.names) and node.module in MODULES:
            subs.append(node.module)
        return subs
    return []


def _statements(body: list[ast.stmt], typing_too: bool = False) -> list[ast.AST]:
    """Every statement, nested ones included; what `if TYPE_CHECKING:` guards only if asked."""
    out: list[ast.AST] = []
    for node in body:
        if not typing_too and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out += _statements(node.orelse)
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody"):
            out += _statements(getattr(node, field, None) or [], typing_too)
        for handler in getattr(node, "handlers", None) or []:
            out += _statements(handler.body, typing_too)
    return out


def _packages_run_first(importer: str, target: str) -> list[str]:
    """The package `__init__` modules importing `target` runs, other than the importer's own."""
    parts = target.split(".")
    ancestors = {".".join(parts[:i]) for i in range(1, len(parts))}
    own = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 2)}
    return sorted(a for a in ancestors - own if a in MODULES)


def import_graph(typing_too: bool = False) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        edges: set[str] = set()
        for node in _statements(ast.parse(path.read_text()).body, typing_too):
            for target in _imported(node):
                edges |= {target, *_packages_run_first(name, target)}
        graph[name] = edges - {name}
    return graph


def test_the_graph_reads_imports_inside_functions_and_package_inits() -> None:
    graph = import_graph()
    # inside a function (cli/opening.py loads the API on first use)
    assert "shadow_backfill.api" in graph["shadow_backfill.cli.opening"]
    # a package __init__ that importing one of its modules runs
    assert "shadow_backfill.state" in graph["shadow_backfill.validate.validator"]
    assert "shadow_backfill.validate" in graph["shadow_backfill.api"]
    # the registry imports a format's module by name, never by an import statement
    assert not any(m.startswith("shadow_backfill.formats.") for m in graph["shadow_backfill.formats"])


def test_no_import_cycle() -> None:
    sorter = graphlib.TopologicalSorter(import_graph())
    try:
        sorter.prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The graph's circles: its strongly connected components of more than one module."""
    order: list[str] = []
    seen: set[str] = set()
    for start in graph:  # iterative DFS finishing order (Kosaraju's first pass)
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            node, edges = stack[-1]
            nxt = next((m for m in edges if m in graph and m not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(sorted(graph[nxt]))))
    reverse: dict[str, set[str]] = {m: set() for m in graph}
    for m, targets in graph.items():
        for t in targets & graph.keys():
            reverse[t].add(m)
    out, placed = [], set()
    for root in reversed(order):
        if root in placed:
            continue
        component, todo = set(), [root]
        while todo:
            m = todo.pop()
            if m not in placed:
                placed.add(m)
                component.add(m)
                todo += reverse[m] - placed
        if len(component) > 1:
            out.append(component)
    return out


# Circles closed only by `if TYPE_CHECKING:` imports: none. The checks before writing name what
# they read of the facade as a Protocol (`preflight.CommandTarget`, `pipeline.preflight.
# PipelineTarget`), and the canary takes the table's context and promoter, not the facade.
OPEN_TYPING_CIRCLES: list[set[str]] = []


def test_circles_finds_a_circle_and_only_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [{"a", "b", "c"}]


def test_type_checking_imports_close_no_new_circle() -> None:
    found = [{m.removeprefix("shadow_backfill.") for m in c} for c in circles(import_graph(typing_too=True))]
    assert sorted(map(sorted, found)) == sorted(map(sorted, OPEN_TYPING_CIRCLES))


def test_no_lazy_module_attributes_below_the_top_package() -> None:
    """A module `__getattr__` is how the old cycles hid; only the top package keeps one, to load
    the Spark-facing API (`Backfill`) on first use, so `import shadow_backfill.config` needs no
    Spark."""
    lazy = [
        name
        for name, path in MODULES.items()
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in ast.parse(path.read_text()).body)
    ]
    assert lazy == ["shadow_backfill"], lazy


def test_the_formats_read_settings_not_the_config() -> None:
    """`formats.base` and the formats take `formats.settings.SessionSettings`: the config imports
    the formats' registry, so a format importing the config is one edge from a cycle."""
    graph = import_graph()
    formats = [m for m in MODULES if m.startswith("shadow_backfill.formats")]
    assert [m for m in formats if "shadow_backfill.config" in graph[m]] == []
