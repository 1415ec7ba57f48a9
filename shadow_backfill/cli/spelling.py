"""How the command line spells itself: usage lines as the README writes them (`CONFIG`, not
Typer's `{config}`), flags without a `<bool>` placeholder, one name per meaning (`CANONICAL`),
and the old spellings of renamed options, still accepted for one release with a warning.

Why one module: the commands were declared one at a time and their words drifted (`--out` here,
`--report` there); the unit test walks every command against the table below.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, TypeVar

import typer
from pydantic import BaseModel
from typer.core import TyperCommand

from shadow_backfill.cli.output import OneLineErrors
from shadow_backfill.documents import dump
from shadow_backfill.errors import ShadowBackfillWarning, UsageError

T = TypeVar("T")

# A meaning -> the one option name every command gives it.
CANONICAL: dict[str, str] = {
    "report folder": "--report",
    "JSON output": "--json",
    "plan only": "--dry-run",
    "promote warned partitions": "--allow-warn",
    "canary size": "--canary",
    "partitions per chunk": "--chunk-size",
    "allow a changed transform": "--allow-code-change",
    "chunks at once": "--max-parallel",
}

# The old spelling -> the new one, for each command (`command path` as `--help` names it).
RENAMED: dict[str, tuple[str, str]] = {
    "report": ("--out", "--report"),
    "pipeline report": ("--out", "--report"),
}

JSON_HELP = "Print the result as one JSON document (see docs/*.schema.json)."
REPORT_HELP = "Folder for report.html, report.json, report.md and junit.xml."
ConfigArg = typer.Argument(..., metavar="CONFIG", help="The backfill config (YAML).", show_default=False)


def _untyped_flags(params: list[Any]) -> list[Any]:
    """A flag takes no value: its type column stays empty (Typer prints `<bool>`). Parameters
    are told by their attributes: Typer carries its own copy of Click's classes."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


def _plain_piece(param: Any, ctx: Any) -> list[str]:
    """An argument as the README writes it: `CONFIG`, `[DIRECTORY]` when optional."""
    if param.param_type_name != "argument":
        return list(param.get_usage_pieces(ctx))
    name = param.metavar or (param.name or "").upper()
    return [name if param.required else f"[{name}]"]


class Command(TyperCommand):
    """A command whose help uses the words above."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _untyped_flags(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            pieces.extend(_plain_piece(param, ctx))
        return pieces


class Commands(OneLineErrors):
    """A group of such commands (its own `--help` and `--version` without `<bool>`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _untyped_flags(super().get_params(ctx))


def spelled(app: typer.Typer) -> None:
    """Every command of `app` registered so far uses `Command` (call after the last one)."""
    for info in app.registered_commands:
        info.cls = Command


def old_option(old: str) -> Any:
    """The hidden option of an old spelling, so the old command lines still run."""
    return typer.Option(None, old, hidden=True, show_default=False)


def prefer(new_value: T | None, old_value: T | None, old: str, new: str) -> T | None:
    """The value of the renamed option: the new spelling's, else the old one's with one
    `warning:` line (removed in the next release)."""
    if old_value is None:
        return new_value
    warnings.warn(
        f"{old} is deprecated: use {new} (the old spelling goes in the next release)",
        ShadowBackfillWarning,
        stacklevel=2,
    )
    return new_value if new_value is not None else old_value


def report_folder(new_value: T | None, old_value: T | None) -> T:
    """`--report DIR`, required, which `report` and `pipeline report` spelled `--out` (`RENAMED`)."""
    value = prefer(new_value, old_value, "--out", "--report")
    if value is None:
        raise UsageError("give --report DIR")
    return value


def print_json(document: BaseModel) -> None:
    """One published document on stdout and nothing else (`--json`)."""
    sys.stdout.write(dump(document))
