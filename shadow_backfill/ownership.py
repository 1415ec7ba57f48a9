"""One owner per live table: a pipeline command holds each of its tables alone, a single-table
command that writes holds its table beside other single-table commands, never beside a pipeline.

Why: a pipeline chains its layers on shadows of one run and promotes and rolls them back as a
set. A single-table `promote` of one layer in the middle of that (or a `run` rewriting its
shadow) leaves the set mixed, new in one layer and old in the next, and the set's rollback would
then restore a state nobody promoted. Two single-table commands on one table, on the other hand,
share it by design: their partition leases split the work (`recompute`, `ledger`).

So there are two kinds of lease rows in the state store (`state.leases`):

- exclusive, `pipeline:<table>`, one row per table, taken by a pipeline command; a second
  pipeline command finds it held and is refused, naming the holder;
- shared, `command:<table>#<run id>`, one row per single-table command, so any number of them
  hold the table at once.

Each side writes its own row first, in a transaction of its own, and only then looks for rows of
the other kind; whoever finds one lets its own go and is refused at once, naming the holder. No
order of two such steps lets both through: if the single-table command's look found no pipeline
row, that look ran before the pipeline's row was committed, so the pipeline's look, which runs
after its own commit, finds the single-table row (it was committed before the single-table look
began). At worst both find each other and both are refused, and nothing was done by either. A
`LeaseLocks` shared/exclusive hold would wait for the other side instead of refusing, and a
refusal is what a command that cannot own its table must give.

The layers of a pipeline are ordinary single-table objects (`api.Backfill`): while the pipeline
holds their tables they pass through (`TableHold.owner`) instead of refusing their own pipeline.
A dry run holds nothing (it writes nothing). Every hold is renewed by a thread while its command
runs, released at its end, and ends at once when its holder is a dead process on this host (a
killed command does not block the rerun that finishes it) or after `TTL_S` elsewhere.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from shadow_backfill.errors import RefusedError
from shadow_backfill.state import StateStore, describe_owner, lock_owner, new_id

TTL_S = 300.0
Step = Callable[[], None]  # a test's named point between writing one's row and looking at the other kind


def pipeline_resource(live_table: str) -> str:
    return f"pipeline:{live_table}"


def _command_prefix(live_table: str) -> str:
    return f"command:{live_table}#"


def _busy(table: str, what: str, owner: str) -> RefusedError:
    return RefusedError(
        f"table {table} is in {what} {describe_owner(owner)}; nothing was done, try again when it has finished"
    )


def commands_on(store: StateStore, live_table: str) -> dict[str, str]:
    """The single-table commands holding `live_table` now: {resource: owner}. A table whose name
    holds `#` does not see the commands of a table named like its prefix."""
    prefix = _command_prefix(live_table)
    return {r: o for r, o in store.holders(prefix).items() if "#" not in r.removeprefix(prefix)}


@contextmanager
def holding_tables(store: StateStore, live_tables: Sequence[str], *, between: Step | None = None) -> Iterator[str]:
    """A pipeline command's exclusive hold on every table (yields its owner, which its layers
    pass through with), or a refusal at once naming a table and its holder."""
    owner = lock_owner(new_id("pipeline"))
    try:
        _, others = store.acquire([pipeline_resource(t) for t in live_tables], owner, TTL_S)
        if others:
            taken = sorted(others)[0]
            raise _busy(taken.removeprefix("pipeline:"), "another pipeline command,", others[taken])
        if between is not None:
            between()
        for table in live_tables:
            held = commands_on(store, table)
            if held:
                raise _busy(table, "command", held[sorted(held)[0]])
        with _renewing(store, owner):
            yield owner
    finally:
        store.release(owner)


@contextmanager
def holding_table(store: StateStore, live_table: str, command: str, *, between: Step | None = None) -> Iterator[None]:
    """A single-table command's shared hold on its table, or a refusal at once naming the
    pipeline command that holds it. `command` names the holder to whoever is refused by it."""
    owner = lock_owner(new_id(command))
    resource = _command_prefix(live_table) + owner.rsplit(":", 1)[-1]
    try:
        store.acquire([resource], owner, TTL_S)
        if between is not None:
            between()
        held = store.holders(pipeline_resource(live_table), exact=True)
        if held:
            raise _busy(live_table, "pipeline command", next(iter(held.values())))
        with _renewing(store, owner):
            yield
    finally:
        store.release(owner)


@contextmanager
def _renewing(store: StateStore, owner: str) -> Iterator[None]:
    stop = threading.Event()
    renewer = threading.Thread(target=_renew, args=(store, owner, stop), daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()


def _renew(store: StateStore, owner: str, stop: threading.Event) -> None:
    while not stop.wait(TTL_S / 3):
        try:
            store.renew(owner, TTL_S)
        except Exception:  # a missed renewal only shortens the lease; the next may succeed
            continue


class TableHold:
    """One `Backfill`'s hold on its live table: taken by the first writing command, released when
    the last one ends, since commands nest (`backfill` runs `run` and `promote`) and threads may
    share the object. `owner`: the pipeline command that holds the table for this object's
    commands (they pass through), None outside a pipeline."""

    def __init__(self) -> None:
        self.owner: str | None = None
        self._lock = threading.Lock()
        self._depth = 0
        self._held = contextlib.ExitStack()

    @contextmanager
    def held(self, store: Callable[[], StateStore], live_table: str, command: str) -> Iterator[None]:
        if self.owner is not None:
            yield
            return
        with self._lock:
            if self._depth == 0:
                self._held.enter_context(holding_table(store(), live_table, command))
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._held.close()


class HoldsTable(Protocol):
    def holding_table(self, command: str) -> contextlib.AbstractContextManager[None]: ...


S = TypeVar("S", bound=HoldsTable)
P = ParamSpec("P")
R = TypeVar("R")


def writes_table(
    command: str, checks: Callable[..., object] | None = None
) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """A command that writes the object's table (or its shadow) holds the table while it runs.

    `checks`, called with the command's own arguments, runs first: taking the hold writes a
    lease row (and makes the state store), so a usage error found after it would exit 2 with
    something written. Checks are read-only and may run again inside the command."""

    def wrap(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(method)
        def wrapper(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
            if checks is not None:
                checks(self, *args, **kwargs)
            with self.holding_table(command):
                return method(self, *args, **kwargs)

        return wrapper

    return wrap
