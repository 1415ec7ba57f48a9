"""A pipeline command's checks before its first write, for every layer at once.

A layer's mistake found only when its turn comes is found after the layers upstream of it were
recomputed into their shadows (or promoted): so every layer's checks that need no engine run
before Spark starts, and those that need it but write nothing (each live table exists and is
readable, each transform loads) before the command takes its lease, the state store's first
write. See `shadow_backfill.preflight` for what one layer's checks are.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from shadow_backfill.errors import UsageError
from shadow_backfill.preflight import check_before_engine, check_before_writing, check_report_folder
from shadow_backfill.selection import Selection

if TYPE_CHECKING:
    from shadow_backfill.pipeline.spec import PipelineFile
    from shadow_backfill.preflight import CommandTarget


class PipelineTarget(Protocol):
    """What a pipeline command's checks read of the pipeline that runs it (`runner.Pipeline`):
    named here so the checks do not import the runner that calls them."""

    file: PipelineFile

    @property
    def order(self) -> list[str]: ...
    @property
    def layers(self) -> Mapping[str, CommandTarget]: ...
    def open_session(self) -> None: ...


# Per command: (it needs partitions, it recomputes). Others (rollback) take no partitions.
COMMANDS = {"run": (True, True), "backfill": (True, True), "validate": (False, False), "promote": (False, False)}


def check_layers(
    file: PipelineFile,
    chosen: Selection,
    *,
    required: bool,
    live: bool,
    report_dir: Path | None = None,
) -> None:
    """Every layer's checks that need no engine (no PySpark imported): the state store, each
    transform, the partitions as each layer reads them, and the report folders."""
    if required and not chosen.given:
        raise UsageError("give --start and --end, or --partitions")
    for key in file.order:
        check_before_engine(file.configs[key], chosen, required=required, live=live)
    if report_dir is not None:
        check_report_folder(report_dir, file.order)


def check_command(p: PipelineTarget, command: str, arguments: Mapping[str, Any]) -> None:
    """The checks of `command` called with `arguments` (by name), before its lease: for a
    command that recomputes, each layer's live table and transform through the engine too."""
    if command == "rollback":
        check_rollback_target(p, arguments["promotion_id"])
    if command not in COMMANDS:
        return
    required, live = COMMANDS[command]
    chosen = Selection(arguments.get("start"), arguments.get("end"), arguments.get("partitions"))
    report_dir = None
    if command == "backfill":
        report_dir = Path(arguments.get("report_dir") or p.file.path.parent / "report")
    check_layers(p.file, chosen, required=required, live=live, report_dir=report_dir)
    if not live:
        return
    p.open_session()
    for key in p.order:
        check_before_writing(p.layers[key], chosen, required=required)


def check_rollback_target(p: PipelineTarget, promotion_id: str) -> None:
    """An id that names no promotion of this pipeline is a usage error told from the store read
    as it is: the lease, and a cut-off set promotion the command would finish under it, come
    after (a typo must not change live and then exit 2)."""
    from shadow_backfill.state.store import reading  # SQLAlchemy: not for every import

    store = reading(p.layers[p.order[0]].config.state_url)
    try:
        rec = store.pipeline_record(promotion_id)
    finally:
        store.close()
    if rec is None or rec.pipeline != str(p.file.path):
        raise UsageError(f"no pipeline promotion {promotion_id!r} of this pipeline")
