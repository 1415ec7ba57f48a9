"""Generate the reference pages from the code, so that they cannot drift from it.

Run by mkdocs-gen-files at every `mkdocs build` (see `plugins` in mkdocs.yml); nothing it
writes is kept in the repository. It imports the config models and the CLI, never starts Spark:

- reference/config.md: every key of the YAML config by its YAML path, from the pydantic models
  in `shadow_backfill/config/` (`BackfillConfig` down), with its type, default and the
  attribute docstring under the field (docs/config_reference.py);
- reference/cli.md: every command of `shadow_backfill.cli.app` with its arguments and options;
- reference/report-schema.md: docs/report.schema.json, embedded;
- changelog.md: CHANGELOG.md;
- assets/bench/*.svg: the benchmark plots under bench/results/.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
# the config page's generator, beside this file (mkdocs-gen-files runs this file as a script)
sys.path.insert(0, str(ROOT / "docs"))
from config_reference import cell, config_page  # noqa: E402

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
