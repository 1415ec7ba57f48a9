"""Generate the reference pages from the code, so that they cannot drift from it.

Run by mkdocs-gen-files at every `mkdocs build` (see `plugins` in mkdocs.yml); nothing it
writes is kept in the repository. It imports the config models and the CLI, never starts Spark:

- reference/config.md: every key of the YAML config, from the pydantic models in
  `shadow_backfill/config/` (`BackfillConfig` down), with its type, default and the
  attribute docstring under the field;
- reference/cli.md: every command of `shadow_backfill.cli.app` with its arguments and options;
- reference/report-schema.md: docs/report.schema.json, embedded;
- changelog.md: CHANGELOG.md;
- assets/bench/*.svg: the benchmark plots under bench/results/.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import mkdocs_gen_files
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]


def cell(text: str) -> str:
    """One table cell: a single line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def anchor(model: type[BaseModel]) -> str:
    """The id the table of contents gives the model's heading."""
    return model.__name__.lower()


# ---- reference/config.md ---------------------------------------------------------------------

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path", type(None): "null"}


def _constraints(metadata: list[Any]) -> str:
    signs = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    found = [f"{signs[k]} {getattr(m, k)}" for m in metadata for k in signs if getattr(m, k, None) is not None]
    return f" ({', '.join(found)})" if found else ""


def type_text(annotation: Any, metadata: list[Any] | None = None) -> str:
    """A field's type as a reader of the YAML sees it; models link to their section."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_text(args[0], [*args[1:], *(metadata or [])])
    if origin is Literal:
        return " or ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (Union, types.UnionType):
        return " or ".join(type_text(a) for a in args)
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"mapping of {type_text(args[0])} to {type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{anchor(annotation)})"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation))) + _constraints(metadata or [])


def default_text(field: Any) -> str:
    if field.is_required():
        return "**required**"
    value = field.default_factory() if field.default_factory is not None else field.default
    if value is PydanticUndefined:
        return ""
    if isinstance(value, BaseModel):
        dumped = value.model_dump(mode="json")
        text = json.dumps(dumped, separators=(", ", ": "))
        return f"`{text}`" if len(text) <= 40 else "see its section"
    return f"`{json.dumps(value if not isinstance(value, Path) else str(value))}`"


def nested_models(annotation: Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in get_args(annotation):
        yield from nested_models(arg)


def key_path(parent: str, name: str, annotation: Any) -> str:
    path = f"{parent}.{name}" if parent else name
    return f"{path}.<column>" if get_origin(annotation) is dict else path


def walk(root: type[BaseModel]) -> tuple[list[type[BaseModel]], dict[type[BaseModel], list[str]]]:
    """Every model reachable from `root`, in the order met, and the keys where each is used."""
    order: list[type[BaseModel]] = [root]
    used_at: dict[type[BaseModel], list[str]] = {root: ["(top level)"]}
    queue: list[tuple[type[BaseModel], str]] = [(root, "")]
    while queue:
        model, path = queue.pop(0)
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            for sub in nested_models(field.annotation):
                where = key_path(path, name, field.annotation)
                if sub not in used_at:
                    order.append(sub)
                    used_at[sub] = []
                    queue.append((sub, where))
                used_at[sub].append(f"`{where}`")
    return order, used_at


def config_page() -> str:
    from shadow_backfill.config import BackfillConfig

    order, used_at = walk(BackfillConfig)
    lines = [
        "# Config reference",
        "",
        "Generated from the pydantic models in `shadow_backfill/config/` at every docs build.",
        "A config is one YAML file; unknown keys are errors, and every error names the file and",
        "the key. Relative paths are relative to the config file's folder. A guided tour with a",
        "whole example: [Getting started](../getting-started.md); what the gate's keys mean:",
        "[Concepts](../concepts.md).",
        "",
    ]
    lines += _model_sections(order, used_at)
    from shadow_backfill.pipeline.spec import PipelineSpec

    order, used_at = walk(PipelineSpec)
    lines += [
        "## The pipeline file",
        "",
        "A pipeline file (`shadow-backfill pipeline ...`) lists backfill configs as layers of one",
        "backfill; its keys, from `shadow_backfill/pipeline/spec.py`. A guide:",
        "[Pipelines of several tables](../guides/pipelines.md).",
        "",
        *_model_sections(order, used_at),
    ]
    return "\n".join(lines)


def _model_sections(order: list[type[BaseModel]], used_at: dict[type[BaseModel], list[str]]) -> list[str]:
    lines: list[str] = []
    for model in order:
        doc = " ".join((model.__doc__ or "").split())
        lines += [f"## {model.__name__}", ""]
        where = used_at[model]
        more = f" and {len(where) - 6} more" if len(where) > 6 else ""
        lines += [f"Used at: {', '.join(where[:6])}{more}.", ""]
        if doc:
            lines += [cell(doc).replace("\\|", "|"), ""]
        lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            typ = type_text(field.annotation, list(field.metadata))
            lines.append(f"| `{name}` | {cell(typ)} | {cell(default_text(field))} | {cell(field.description or '')} |")
        lines.append("")
    return lines


# ---- reference/cli.md ------------------------------------------------------------------------


def param_type(param: Any) -> str:
    """The type click shows, from click's ParamType or (Typer's own click) the annotation."""
    if getattr(param, "is_flag", False):
        return "flag"
    ptype = getattr(param, "type", None)
    name = getattr(ptype, "name", None) if ptype is not None else None
    if name is None and hasattr(param, "bare_type"):
        name = param.bare_type()
    name = {"Path": "path", "str": "text", "int": "integer", "float": "number"}.get(str(name), str(name))
    bounds = [
        f"{sign} {value}" for sign, value in (("≥", getattr(param, "min", None)), ("≤", getattr(param, "max", None)))
    ]
    bounds = [b for b in bounds if not b.endswith("None")]
    return name + (f" ({', '.join(bounds)})" if bounds else "")


def param_default(param: Any) -> str:
    if getattr(param, "required", False):
        return "**required**"
    default = getattr(param, "default", None)
    if default is None or callable(default):
        return ""
    secondary = getattr(param, "secondary_opts", None) or []
    if isinstance(default, bool) and secondary:
        return f"`{(param.opts if default else secondary)[0]}`"
    if isinstance(default, bool):
        return "" if default is False else "`on`"
    return f"`{default}`"


def usage(name: str, command: Any) -> str:
    args = [p.name.upper() for p in command.params if getattr(p, "param_type_name", "") == "argument"]
    return f"shadow-backfill {name} {' '.join(args)} [OPTIONS]".replace("  ", " ")


def _leaf_commands(group: Any, prefix: str = "") -> dict[str, Any]:
    """Every command by its full name: a group's (`pipeline`) as `pipeline run`, and so on."""
    out: dict[str, Any] = {}
    for name, command in group.commands.items():
        if getattr(command, "hidden", False):
            continue
        if hasattr(command, "commands"):
            out.update(_leaf_commands(command, f"{prefix}{name} "))
        else:
            out[f"{prefix}{name}"] = command
    return out


def cli_page() -> str:
    import typer.main

    from shadow_backfill.cli import app

    group = typer.main.get_command(app)
    lines = [
        "# Command reference",
        "",
        "Generated from the `shadow-backfill` command line (`shadow_backfill.cli.app`) at every",
        "docs build; `shadow-backfill COMMAND --help` prints the same. Exit codes and machine-",
        "readable output: [Running from a scheduler](../guides/scheduler.md).",
        "",
        " ".join((group.help or "").split()),
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    commands = _leaf_commands(group)
    for name, command in commands.items():
        first = (command.help or "").strip().split("\n\n")[0]
        lines.append(f"| [`{name}`](#{name.replace(' ', '-')}) | {cell(first)} |")
    lines.append("")
    for name, command in commands.items():
        lines += [f"## {name}", "", "```text", usage(name, command), "```", ""]
        lines += [(command.help or "").strip(), ""]
        lines += ["| argument or option | type | default | meaning |", "|---|---|---|---|"]
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            if getattr(param, "param_type_name", "") == "argument":
                flags = f"`{param.name.upper()}`"
            else:
                flags = " / ".join(f"`{o}`" for o in [*param.opts, *(getattr(param, "secondary_opts", None) or [])])
            help_text = getattr(param, "help", None) or ""
            lines.append(f"| {flags} | {cell(param_type(param))} | {param_default(param)} | {cell(help_text)} |")
        lines.append("")
    return "\n".join(lines)


# ---- reference/report-schema.md, changelog.md, plots ------------------------------------------


def report_schema_page() -> str:
    schema = (ROOT / "docs" / "report.schema.json").read_text()
    title = json.loads(schema).get("title", "report.json")
    return "\n".join(
        [
            "# report.json schema",
            "",
            f"`report.json` is the machine-readable report ({title}) that `shadow-backfill report`",
            "and `backfill` write beside `report.html`: one object per partition with its verdict,",
            "the checks that decided it, the column changes and samples. Below is its JSON Schema",
            "(draft 2020-12), the file `docs/report.schema.json`, generated from the report's own",
            "pydantic documents; a unit test fails when the two differ. A field added or removed moves",
            "`schema_version`. How to read a report: [Concepts](../concepts.md#reports).",
            "",
            "```json",
            schema.rstrip("\n"),
            "```",
            "",
        ]
    )


def changelog_page() -> str:
    text = (ROOT / "CHANGELOG.md").read_text()
    # CHANGELOG.md sits at the repository root: its relative links point from there
    return re.sub(r"\]\((?!https?://|#)docs/", "](", text)


def write(path: str, text: str) -> None:
    with mkdocs_gen_files.open(path, "w") as f:
        f.write(text)


write("reference/config.md", config_page())
write("reference/cli.md", cli_page())
write("reference/report-schema.md", report_schema_page())
write("changelog.md", changelog_page())
for plot in sorted((ROOT / "bench" / "results").glob("*.svg")):
    with mkdocs_gen_files.open(f"assets/bench/{plot.name}", "wb") as f:
        f.write(plot.read_bytes())
