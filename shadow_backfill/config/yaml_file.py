"""The hardened YAML reader every file the tool reads goes through (configs, pipelines, suites):
bounded in size and nesting, no duplicate keys, no arbitrary objects, and every problem one
`ConfigError` naming the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from shadow_backfill.errors import ConfigError

MAX_CONFIG_BYTES = 1024 * 1024
MAX_CONFIG_DEPTH = 32


class _DuplicateKeyError(yaml.YAMLError):
    def __init__(self, key: Any, line: int, first_line: int) -> None:
        super().__init__(f"duplicate key {key!r} on line {line} (first given on line {first_line})")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; a config where `live_table` appears twice is a
    mistake whose outcome nobody chose, so it is refused instead of silently resolved."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` entries may be overridden by explicit keys by design
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise _DuplicateKeyError(key, line, seen[key])
                seen[key] = line
            except TypeError:
                continue  # an unhashable key: SafeLoader reports it itself
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


class _TooDeepError(yaml.YAMLError):
    def __init__(self, line: int | None) -> None:
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"nested more than {MAX_CONFIG_DEPTH} levels deep{where}; a config is a few levels deep")


class _BoundedLoader(_UniqueKeyLoader):
    """Refuses nesting beyond MAX_CONFIG_DEPTH while composing: PyYAML composes nested nodes by
    recursion, and a file nested some thousand levels would end in a RecursionError."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        nested = self.check_event(yaml.MappingStartEvent, yaml.SequenceStartEvent)
        if nested:
            self._depth += 1
            if self._depth > MAX_CONFIG_DEPTH:
                raise _TooDeepError(self.peek_event().start_mark.line + 1)
        try:
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            if nested:
                self._depth -= 1


def nested_deeper_than(data: Any, limit: int) -> bool:
    """True when mappings and lists nest more than `limit` levels (a cycle nests without end).
    Aliases can build a deeper structure than the text shows, so the data is measured too;
    without recursion, and a shared object is walked again only when reached deeper."""
    seen: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)) or seen.get(id(item), 0) >= depth:
            continue
        if depth > limit:
            return True
        seen[id(item)] = depth
        stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's messages span several lines; the CLI promises one."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(exc).split())


def read_text_file(path: Path, what: str, max_bytes: int | None = None) -> str:
    """The one place that turns 'not a readable text file' into a ConfigError naming the path;
    a file over `max_bytes` is refused before it is read whole. Line ends are read as Python's
    text mode reads them (CRLF and CR as LF)."""
    if path.is_dir():
        raise ConfigError(f"{what} {str(path)!r} is a directory, not a file")
    if not path.is_file():
        raise ConfigError(f"{what} {str(path)!r} does not exist")
    try:
        with path.open("rb") as f:
            raw = f.read() if max_bytes is None else f.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(f"{what} {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    if max_bytes is not None and len(raw) > max_bytes:
        raise ConfigError(
            f"{what} {str(path)!r} is larger than {max_bytes / 2**20:g} MiB, the limit for a {what}: "
            "is it the right file?"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_yaml(p: Path, what: str) -> tuple[Any, str]:
    """A YAML file's data and text, as configs are read: bounded in size and nesting, no
    duplicate keys, no arbitrary objects; every problem a ConfigError naming the file."""
    text = read_text_file(p, what, MAX_CONFIG_BYTES)
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass: no arbitrary objects
    except (_DuplicateKeyError, _TooDeepError) as exc:
        raise ConfigError(f"{p}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {_yaml_problem(exc)}") from None
    except RecursionError:  # aliases nesting without end, built before they could be measured
        raise ConfigError(f"{p}: nested more than {MAX_CONFIG_DEPTH} levels deep (through aliases)") from None
    if nested_deeper_than(data, MAX_CONFIG_DEPTH):
        raise ConfigError(f"{p}: nested more than {MAX_CONFIG_DEPTH} levels deep (through aliases)")
    return data, text
