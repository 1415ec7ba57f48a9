"""The config reference page (reference/config.md), organised by YAML path.

A reader looks a key up by where it sits in the file (`validation.columns.<column>`), not by the
pydantic class that happens to hold it, so every section is named by its path and every row by
its key under that path. Small value shapes (a threshold's `warn`/`fail`, a tolerance's
`abs`/`rel`) are written out in their parent's row, `psi.warn` and `psi.fail`, rather than as
a section of their own that every threshold would link to. Imported by docs/gen_reference.py at
every docs build and by tests/unit/test_docs_config_reference.py (which checks that no key of
the models is missing and none is invented); it imports no mkdocs plugin, so the unit tier can.
"""

from __future__ import annotations

import json
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path", type(None): "null"}
# The placeholder a mapping's key takes in a path; any other mapping of sections: `<name>`.
_PLACEHOLDERS = {"columns": "<column>", "expected_changes": "<column>", "tables": "<table>"}
# A model with at most this many fields, none of them a model, is a value written in its
# parent's row (`psi.warn`, `psi.fail`), not a section.
_VALUE_FIELDS = 2


def cell(text: str) -> str:
    """One table cell: a single line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def slug(path: str) -> str:
    """A section's id: its path, letters and digits only (`validation-columns-column`)."""
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "top-level"


def fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """The keys a YAML file may hold: the excluded fields are set by the loader, not the file."""
    return {name: f for name, f in model.model_fields.items() if not f.exclude}


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models(arg)]


def is_value(model: type[BaseModel]) -> bool:
    """Whether the model is written in its parent's row (see _VALUE_FIELDS)."""
    own = fields(model)
    return len(own) <= _VALUE_FIELDS and not any(_models(f.annotation) for f in own.values())


@dataclass(frozen=True)
class Nested:
    """A field holding a model: directly, as a mapping's values or as a list's items."""

    model: type[BaseModel]
    shape: Literal["direct", "mapping", "list"]

    def path(self, parent: str, name: str) -> str:
        base = f"{parent}.{name}" if parent else name
        if self.shape == "mapping":
            return f"{base}.{_PLACEHOLDERS.get(name, '<name>')}"
        return f"{base}[]" if self.shape == "list" else base


def nested(annotation: Any) -> Nested | None:
    """The model a field holds, if any (`X | None` counts as `X`)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return nested(args[0])
    if origin in (Union, types.UnionType):
        found = [n for a in args if (n := nested(a)) is not None]
        return found[0] if found else None
    if origin is dict and (found := _models(args[1])):
        return Nested(found[0], "mapping")
    if origin is list and (found := _models(args[0])):
        return Nested(found[0], "list")
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return Nested(annotation, "direct")
    return None


def _constraints(metadata: list[Any]) -> str:
    signs = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    found = [f"{signs[k]} {getattr(m, k)}" for m in metadata for k in signs if getattr(m, k, None) is not None]
    return f" ({', '.join(found)})" if found else ""


def type_text(annotation: Any, metadata: list[Any] | None = None) -> str:
    """A scalar field's type as a reader of the YAML sees it."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_text(args[0], [*args[1:], *(metadata or [])])
    if origin is Literal:
        return " or ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(type_text(a, None if a is type(None) else metadata) for a in args)
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"mapping of {type_text(args[0])} to {type_text(args[1])}"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation))) + _constraints(metadata or [])


def default_value(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return info.default


def default_text(info: FieldInfo) -> str:
    if info.is_required():
        return "**required**"
    value = default_value(info)
    if value is PydanticUndefined:
        return ""
    return f"`{json.dumps(str(value) if isinstance(value, Path) else value)}`"


@dataclass
class Section:
    """One heading of the page: a YAML path that holds a mapping of keys, and its rows."""

    path: str
    title: str
    doc: str
    rows: list[str] = field(default_factory=list)


def _value_row(name: str, info: FieldInfo, model: type[BaseModel], first: bool) -> str:
    """A value model in its parent's row: each sub-key on its own line, `psi.warn`, `psi.fail`;
    what the shape means (its class docstring) in the section's `first` row of that shape."""
    subs = fields(model)
    keys = "<br>".join(f"`{name}.{sub}`" for sub in subs)
    types_ = sorted({type_text(s.annotation, list(s.metadata)) for s in subs.values()})
    parent = None if info.is_required() else default_value(info)
    defaults = []
    for sub, sub_info in subs.items():
        if info.is_required():
            defaults.append(default_text(sub_info))
        elif isinstance(parent, BaseModel):
            defaults.append(f"`{json.dumps(getattr(parent, sub))}`")
        else:
            defaults.append("`null`")
    if len(subs) == 1:
        meaning = next(iter(subs.values())).description or info.description or ""
    else:
        own = " ".join((info.description or "").split())
        shape = " ".join((model.__doc__ or "").split()) if first else ""
        meaning = shape if shape.startswith(own.rstrip(".")) else f"{own} {shape}"
    return f"| {keys} | {cell(' or '.join(types_))} | {'<br>'.join(defaults)} | {cell(meaning)} |"


def sections(root: type[BaseModel], prefix: str = "") -> list[Section]:
    """Every section from `root` down, depth first, in the order the models declare them."""
    out: list[Section] = []

    def visit(model: type[BaseModel], path: str) -> None:
        title = f"`{path}`" if path else "Top level"
        section = Section(path, title, " ".join((model.__doc__ or "").split()))
        out.append(section)
        below: list[tuple[type[BaseModel], str]] = []
        shapes: set[type[BaseModel]] = set()
        for name, info in fields(model).items():
            held = nested(info.annotation)
            if held is not None and held.shape == "direct" and is_value(held.model):
                section.rows.append(_value_row(name, info, held.model, held.model not in shapes))
                shapes.add(held.model)
                continue
            if held is None:
                typ, default = type_text(info.annotation, list(info.metadata)), default_text(info)
            else:
                sub = held.path(path, name)
                link = f"[`{sub}`](#{slug(prefix + sub)})"
                typ = {"direct": "section {}", "mapping": "mapping of sections {}", "list": "list of {}"}[held.shape]
                typ, default = typ.format(link), "**required**" if info.is_required() else ""
                below.append((held.model, sub))
            section.rows.append(f"| `{name}` | {cell(typ)} | {cell(default)} | {cell(info.description or '')} |")
        for sub_model, sub_path in below:
            visit(sub_model, sub_path)

    visit(root, "")
    return out


def render(found: list[Section], prefix: str) -> list[str]:
    lines: list[str] = []
    for section in found:
        lines += [f"### {section.title} {{#{slug(prefix + section.path)}}}", ""]
        if section.doc:
            lines += [section.doc, ""]
        lines += ["| key | type | default | meaning |", "|---|---|---|---|", *section.rows, ""]
    return lines


def config_page() -> str:
    """The whole page: the backfill config's sections, then the pipeline file's."""
    from shadow_backfill.config import BackfillConfig
    from shadow_backfill.pipeline.spec import PipelineSpec

    return "\n".join(
        [
            "# Config reference",
            "",
            "Generated from the pydantic models in `shadow_backfill/config/` at every docs build, one",
            "section per YAML path: a key's full path is its section's path, a dot, and the key",
            "(`validation.columns.<column>` and `psi.warn` is `validation.columns.amount.psi.warn`).",
            "A config is one YAML file; unknown keys are errors, and every error names the file and",
            "the key. Relative paths are relative to the config file's folder. A guided tour with a",
            "whole example: [Getting started](../getting-started.md); what the gate's keys mean:",
            "[Concepts](../concepts.md).",
            "",
            "## The backfill config",
            "",
            *render(sections(BackfillConfig), ""),
            "## The pipeline file {#pipeline-file}",
            "",
            "A pipeline file (`shadow-backfill pipeline ...`) lists backfill configs as layers of one",
            "backfill; its keys, from `shadow_backfill/pipeline/spec.py`. A guide:",
            "[Pipelines of several tables](../guides/pipelines.md).",
            "",
            *render(sections(PipelineSpec, "pipeline."), "pipeline."),
        ]
    )
