"""`suggest`: the change contract's bounds, derived from the last validation of every partition
(`validate/suggest.py`), printed as the config's own YAML to paste and edit, or `--json`
(docs/suggest.schema.json). Reads the state store only: no Spark."""

from __future__ import annotations

from pathlib import Path

import typer

from shadow_backfill.cli.spelling import JSON_HELP, ConfigArg
from shadow_backfill.cli.views import view

JsonOption = typer.Option(False, "--json", help=JSON_HELP)


def suggest(config: Path = ConfigArg, as_json: bool = JsonOption) -> None:
    """Print expected_changes bounds derived from the last validation, to paste into the config."""
    from shadow_backfill.api import Backfill
    from shadow_backfill.config import load_config

    view(as_json).suggestion(Backfill(load_config(config)).suggest())
