"""How a table command opens its config: read and checked before PySpark is imported, and
told to the announcements (`telling`) before any refusal, so a refused command is told too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from shadow_backfill.cli import telling
from shadow_backfill.config import load_config

if TYPE_CHECKING:
    from shadow_backfill.api import Backfill
    from shadow_backfill.config import BackfillConfig


def open_backfill(
    config: Path, check: Callable[[BackfillConfig], None] | None = None, **promote: bool | int | None
) -> Backfill:
    """The config is read and checked before PySpark is imported: a bad config is named in a
    fraction of a second, and the CLI's error lines are tested without PySpark (unit tier).
    `check`: the command's own checks that need no engine (`selection.check_first`); `promote`:
    the `promote` settings the command's options override (`--allow-warn`, `--canary`)."""
    checked = load_config(config).promoting(**promote)
    telling.opened(checked.live_table, checked.notify)  # a refusal below is told too
    if check is not None:
        check(checked)
    from shadow_backfill.api import Backfill

    opened = Backfill(checked)
    telling.working_on([(opened.live_table, opened)])
    return opened
