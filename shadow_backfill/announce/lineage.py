"""A command as OpenLineage run events: START when it opens its config, then COMPLETE, FAIL or
ABORT as its exit code says, sent through the OpenLineage client with the user's own client
configuration (any transport the client supports).

Nothing here runs, and `openlineage` is not imported, unless the client is configured
(`configured`): a user without lineage pays nothing. The events name tables as OpenLineage's
Spark integration names them (`formats.locations.lineage_name`), so they join the user's own
Spark jobs' lineage; `validate` and `backfill` attach each judged partition's checks to the
shadow as `dataQualityAssertions`, and a promotion's or rollback's live table carries the tool's
`shadowBackfill` facet (`documents.lineage`). A pipeline's command is one run, and each layer a
run nested under it (`parent`). A lineage backend that fails costs one `warning:` line.
"""

from __future__ import annotations

import logging
import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from shadow_backfill.announce.runs import Job, RunPlan
from shadow_backfill.announce.told import Told
from shadow_backfill.errors import ShadowBackfillWarning

_SWITCHES = ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG")


def configured(environ: dict[str, str] | None = None) -> bool:
    """Whether the OpenLineage client has somewhere to send events: its URL, its config file
    (named, in the working folder, or in ~/.openlineage) or `OPENLINEAGE__` variables, and
    `OPENLINEAGE_DISABLED` is not true."""
    env = dict(os.environ) if environ is None else environ
    if env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if any(env.get(k) for k in _SWITCHES) or any(k.startswith("OPENLINEAGE__") for k in env):
        return True
    return any(p.is_file() for p in (Path.cwd() / "openlineage.yml", Path.home() / ".openlineage" / "openlineage.yml"))


def quiet_client_log() -> None:
    """The client logs its own warnings (e.g. "Couldn't find any OpenLineage transport
    configuration") through `logging`; with no handler anywhere, Python prints them to stderr
    beside the command's one `error:` line. A do-nothing handler on its logger keeps them off the
    terminal, and they still reach a handler the user's own logging set up (an Airflow worker's)."""
    log = logging.getLogger("openlineage")
    if not log.handlers:
        log.addHandler(logging.NullHandler())


@contextmanager
def environment_kept() -> Iterator[None]:
    """The OpenLineage client, as it starts, copies `OPENLINEAGE_URL` into
    `OPENLINEAGE__TRANSPORT__TRANSPORTS__...` variables of this process (its own aliasing) and
    leaves them there: every process this one starts later would then send events too (a test
    suite's next CLI process, or an Airflow worker's next task run in process). The client has
    resolved its transport when it returns, so the environment is put back as it was."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(before):
            del os.environ[key]
        os.environ.update(before)


def _events() -> ModuleType:
    """The event builders, which import OpenLineage: only once lineage is on."""
    from shadow_backfill.announce import lineage_events

    return lineage_events


def parent_of(value: str | None) -> Job | None:
    """`OPENLINEAGE_PARENT_ID` as Airflow's provider passes it, `namespace/job name/run id` (the
    job's name may hold slashes); None if unset or malformed (a warning names the variable)."""
    if not value:
        return None
    namespace, _, rest = value.partition("/")
    name, _, run_id = rest.rpartition("/")
    try:
        uuid.UUID(run_id)
    except ValueError:
        name = ""
    if not namespace or not name:
        warnings.warn(ShadowBackfillWarning("lineage: OPENLINEAGE_PARENT_ID is not namespace/job/run-id"), stacklevel=2)
        return None
    return Job(namespace, name, run_id)


@dataclass
class Lineage:
    """One command's lineage run: `start` once the config names the job, `end` with its ending."""

    plan: RunPlan
    client: Any = None
    started: bool = False
    broken: bool = False  # a send failed: the rest is not tried (one warning, one delay)

    @classmethod
    def open(cls, plan: RunPlan) -> Lineage | None:
        """The run's lineage if the client is configured and installed, else None (a warning
        if configured but `openlineage-python` is missing)."""
        if not configured():
            return None
        try:
            from openlineage.client import OpenLineageClient
        except ImportError:
            warnings.warn(
                ShadowBackfillWarning(
                    "lineage: OpenLineage is configured but not installed: pip install openlineage-python"
                ),
                stacklevel=2,
            )
            return None
        quiet_client_log()
        with environment_kept():
            client = OpenLineageClient()
        return cls(plan, client)

    def start(self) -> None:
        if not self.started:
            self.started = self._emit(lambda: [_events().start_event(self.plan)])

    def end(self, told: Told) -> None:
        self._emit(lambda: _events().end_events(self.plan, told))

    def _emit(self, events: Callable[[], list[Any]]) -> bool:
        """Build and send the events; a backend that refuses or is down (or an event that cannot
        be built) is one warning, never a failure, and the run sends nothing more."""
        if self.broken:
            return False
        try:
            for event in events():
                self.client.emit(event)
            return True
        except Exception as exc:  # a lineage backend must not fail the command
            self.broken = True
            # the exception's type only: its message quotes the backend's URL, which may hold a key
            line = f"lineage: the OpenLineage backend did not take the events ({type(exc).__name__})"
            warnings.warn(ShadowBackfillWarning(line), stacklevel=2)
            return False
