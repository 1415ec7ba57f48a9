"""The order a pipeline's layers run in: upstream first, every dependency before its dependents.

Pure Python (no Spark), so a cycle or an unknown table is refused, and tested, before anything
starts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from shadow_backfill.errors import ConfigError


def layer_order(depends_on: Mapping[str, Sequence[str]]) -> list[str]:
    """The tables upstream first; ties keep the file's order, so a run is reproducible. A
    dependency on a table the pipeline does not list, or a cycle, is a ConfigError naming it."""
    for name, deps in depends_on.items():
        for dep in deps:
            if dep not in depends_on:
                raise ConfigError(f"pipeline: table {name!r} depends on {dep!r}, which the pipeline does not list")
            if dep == name:
                raise ConfigError(f"pipeline: table {name!r} depends on itself")
    order: list[str] = []
    done: set[str] = set()
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            cycle = [*visiting[visiting.index(name) :], name]
            raise ConfigError(f"pipeline: the dependencies form a cycle: {' -> '.join(cycle)}")
        visiting.append(name)
        for dep in depends_on[name]:
            visit(dep)
        visiting.pop()
        done.add(name)
        order.append(name)

    for name in depends_on:
        visit(name)
    return order


def downstream_of(depends_on: Mapping[str, Sequence[str]], name: str) -> set[str]:
    """Every table that reads `name`, directly or through other layers."""
    found: set[str] = set()
    frontier = [name]
    while frontier:
        current = frontier.pop()
        for other, deps in depends_on.items():
            if current in deps and other not in found:
                found.add(other)
                frontier.append(other)
    return found
