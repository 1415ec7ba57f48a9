"""The CLI's side of announcing (`shadow_backfill.announce`): which commands are told, and the
three moments it takes: the command opens its config (`opened`: the lineage run starts), it has
its typed account (`told`), and it exits (`announced`'s wrapper: alerts and the lineage end).

A command's code stays as it was: it opens its config through `open_backfill`/`open_pipeline`,
renders its result, and exits through `output.end`/`fail`; each of those hands this module what
it knows. Nothing is told before the config is read (a config that cannot be read has no
`notify:`), and telling never changes the exit code: it runs after the code is decided.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import os
import sys
import uuid
import warnings
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from shadow_backfill.announce.runs import RunPlan
from shadow_backfill.cli.consoles import out
from shadow_backfill.errors import ShadowBackfillWarning
from shadow_backfill.outcome import EXIT_USAGE

if TYPE_CHECKING:
    from shadow_backfill.announce.lineage import Lineage
    from shadow_backfill.api import Backfill
    from shadow_backfill.command_result import CommandResult
    from shadow_backfill.config import NotifySpec
    from shadow_backfill.documents.command import DatasetDoc
    from shadow_backfill.outcome import Ending

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Telling:
    """What one told command has gathered so far."""

    command: str
    kind: str
    plan: RunPlan | None = None
    notify: Sequence[NotifySpec] = ()
    lineage: Lineage | None = None
    tables: list[tuple[str, Backfill]] = field(default_factory=list)
    result: CommandResult | None = None
    error: str | None = None
    as_json: bool = False
    stdout: Any = sys.stdout  # `--json`: where the document goes (the command's own stdout goes to stderr)


_current: ContextVar[Telling | None] = ContextVar("telling", default=None)


def announced(kind: str) -> Callable[[F], F]:
    """Tell the ending of the decorated command (of a table or a `pipeline`) to the config's
    webhooks and to OpenLineage. Outside `output.handle_errors`, so it sees the exit code."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            telling = Telling(fn.__name__, kind)
            token = _current.set(telling)
            code = 1
            try:
                fn(*args, **kwargs)
                code = 0
            except typer.Exit as exc:
                code = exc.exit_code
                raise
            finally:
                _current.reset(token)
                if telling.as_json:
                    _print_result(telling, code)
                finish(telling, code)

        return wrapper  # type: ignore[return-value]

    return decorate


def opened(target: str, notify: Sequence[NotifySpec], layers: Sequence[str] = ()) -> None:
    """The command read its config (and a pipeline's `layers`): name its run, and start its
    lineage run. Before the command's own checks and before PySpark is imported."""
    telling = _current.get()
    if telling is None or telling.plan is not None:
        return
    runs = {key: str(uuid.uuid4()) for key in layers}
    telling.plan = RunPlan(telling.command, telling.kind, target, layers=runs)
    telling.notify = notify
    telling.plan, telling.lineage = _lineage(telling.plan)


def _lineage(plan: RunPlan) -> tuple[RunPlan, Lineage | None]:
    """The run's lineage, started, if the OpenLineage client is configured (with the scheduler's
    run as its parent); a client that cannot be set up is one warning, and no lineage."""
    from shadow_backfill.announce.lineage import Lineage, configured, parent_of

    try:
        if not configured():
            return plan, None
        plan = dataclasses.replace(plan, parent=parent_of(os.environ.get("OPENLINEAGE_PARENT_ID")))
        lineage = Lineage.open(plan)
        if lineage is not None:
            lineage.start()
        return plan, lineage
    except Exception as exc:  # the client's own configuration is wrong: the command goes on
        warnings.warn(ShadowBackfillWarning(f"lineage: OpenLineage is not set up ({type(exc).__name__})"), stacklevel=2)
        return plan, None


def working_on(tables: list[tuple[str, Backfill]]) -> None:
    """The tables the command works on, passed its checks: their facts are read as it ends."""
    telling = _current.get()
    if telling is not None:
        telling.tables = tables


def told(result: CommandResult) -> Ending:
    """Keep the command's account, as it is about to exit by its ending (returned)."""
    telling = _current.get()
    if telling is not None:
        telling.result = result
    return result.ending


def json_result() -> None:
    """`--json` on a command that writes: stdout carries one JSON document, the command's result
    (docs/command.schema.json), whatever its exit code; its text goes to stderr. A scheduler's
    operator reads it (`integrations.airflow`) instead of parsing lines meant for people."""
    telling = _current.get()
    if telling is not None and not telling.as_json:
        telling.as_json = True
        telling.stdout = sys.stdout
        sys.stdout = out.file = sys.stderr  # a transform's print() must not corrupt the document


def _print_result(telling: Telling, code: int) -> None:
    """The result document of a `--json` command, with the exit code it exits with: a command
    refused before it had a result (exit 2) still prints one, its `line` the error line."""
    from shadow_backfill.command_result import CommandResult
    from shadow_backfill.documents import dump
    from shadow_backfill.outcome import Ending

    sys.stdout = telling.stdout
    out.file = None  # type: ignore[assignment]  # rich's own default again: whatever sys.stdout is
    result, line = telling.result, telling.error
    if result is None:
        target = telling.plan.target if telling.plan is not None else ""
        result = CommandResult(telling.command, "pipeline" if telling.kind == "pipeline" else "table", target)
    line = line or (result.ending.line if code else "")
    doc = dataclasses.replace(result, ending=Ending(code, line)).document()
    sys.stdout.write(dump(doc.model_copy(update={"outputs": _outputs(telling, code)})))


def _outputs(telling: Telling, code: int) -> list[DatasetDoc]:
    """The live tables as lineage names them, read only from a command that started its engine
    and was not refused (a refusal must not start Spark to say where its tables lie)."""
    from shadow_backfill.announce.facts import gather
    from shadow_backfill.documents.command import DatasetDoc

    if code == EXIT_USAGE:
        return []
    found = [gather(key, bf, [], datasets=bf.session_started).live for key, bf in telling.tables]
    return [DatasetDoc(namespace=d.namespace, name=d.name) for d in found if d is not None]


def skip() -> None:
    """This command is not told after all (a dry run: it writes nothing)."""
    telling = _current.get()
    if telling is not None:
        _current.set(None)


def error(line: str) -> None:
    """The command's `error:` line (the last one given is the one it exits with)."""
    telling = _current.get()
    if telling is not None:
        telling.error = line


def finish(telling: Telling, code: int) -> None:
    """Alerts and the lineage end, once the exit code is decided; nothing if the config was
    never read. Whatever goes wrong in telling (a bug, Ctrl-C while posting) is one warning:
    the exit code is the command's."""
    try:
        _finish(telling, code)
    except (Exception, KeyboardInterrupt) as exc:
        warnings.warn(
            ShadowBackfillWarning(f"could not tell how the command ended ({type(exc).__name__})"), stacklevel=2
        )


def _finish(telling: Telling, code: int) -> None:
    plan = telling.plan
    if plan is None or (not telling.notify and telling.lineage is None):
        return
    from shadow_backfill.announce import Told
    from shadow_backfill.announce.facts import gather

    result = telling.result
    line = telling.error or (result.ending.line if result is not None and code else None)
    partitions = [*result.judged, *result.promoted] if result is not None else []
    # where the tables lie: for lineage, after a command that reached its engine and was not refused
    datasets = telling.lineage is not None and code != EXIT_USAGE
    facts = [gather(key, bf, partitions, datasets=datasets and bf.session_started) for key, bf in telling.tables]
    ending = Told(
        telling.command,
        "pipeline" if telling.kind == "pipeline" else "table",
        plan.target,
        code,
        plan.run_id,
        plan.started,
        dt.datetime.now(dt.timezone.utc),
        result=result,
        error=line or None,
        tables=tuple(facts),
    )
    if telling.notify:
        from shadow_backfill.announce.webhooks import notify

        notify(telling.notify, ending)
    if telling.lineage is not None:
        telling.lineage.end(ending)


__all__ = ["announced", "error", "json_result", "opened", "skip", "told", "working_on"]
