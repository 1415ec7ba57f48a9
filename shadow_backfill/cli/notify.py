"""`notify-test` (of a config and of a pipeline file): post a sample message to each webhook of
`notify:`, so a user checks the wiring before a night's job depends on it. It prints one line per
webhook (its variable or host, never its URL) and exits 1 if any did not take the message, 2 if
the file lists none; `--dry-run` prints the messages and posts nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from shadow_backfill.cli.consoles import out
from shadow_backfill.cli.output import EXIT_FAILED
from shadow_backfill.cli.spelling import ConfigArg
from shadow_backfill.errors import UsageError

if TYPE_CHECKING:
    from shadow_backfill.config import NotifySpec

NotifyDryRunOption = typer.Option(False, "--dry-run", help="Print each webhook's sample message; post nothing.")


def notify_test(config: Path = ConfigArg, dry_run: bool = NotifyDryRunOption) -> None:
    """Post a sample message to every webhook of the config's notify: (exit 1 if one did not take it)."""
    from shadow_backfill.config import load_config

    cfg = load_config(config)
    send_sample(cfg.notify, cfg.live_table, "table", dry_run=dry_run, source=str(config))


def send_sample(specs: Sequence[NotifySpec], target: str, kind: str, *, dry_run: bool, source: str) -> None:
    """Post (or print) the sample message to every webhook in `specs`, whatever its `on`."""
    from shadow_backfill.announce.alerts import message
    from shadow_backfill.announce.sample import sample_told
    from shadow_backfill.announce.webhooks import deliver

    if not specs:
        raise UsageError(f"{source}: notify lists no webhook")
    told = sample_told(target, kind)
    failed = 0
    for spec in specs:
        body = message(told, spec.format)
        if dry_run:
            out.print(f"{spec.where} ({spec.format}):\n{json.dumps(body, indent=2, ensure_ascii=False)}", markup=False)
            continue
        done = deliver(spec, body)
        if done.delivered:
            out.print(f"{spec.where} ({spec.format}): delivered", markup=False)
        else:
            failed += 1
            tries = f" after {done.tries} tries" if done.tries > 1 else ""
            out.print(f"{spec.where} ({spec.format}): not delivered{tries} ({done.problem})", markup=False)
    if failed:
        raise typer.Exit(EXIT_FAILED)
