"""The runs a command's lineage is made of, named before the command does anything: its own
run, each pipeline layer's run nested under it, and the scheduler's run above (if any). Plain
values, so `lineage` decides whether to import OpenLineage at all after reading them."""

from __future__ import annotations

import datetime as dt
import os
import uuid
from dataclasses import dataclass, field

from shadow_backfill import __version__

PRODUCER = f"urn:shadow-backfill:{__version__}"
DEFAULT_NAMESPACE = "default"  # as the OpenLineage client and its Spark integration default


@dataclass(frozen=True)
class Job:
    """A run of a job, as a parent facet names it."""

    namespace: str
    name: str
    run_id: str


def job_namespace() -> str:
    """The jobs' namespace: `OPENLINEAGE_NAMESPACE`, as Airflow's and Spark's integrations read it."""
    return os.environ.get("OPENLINEAGE_NAMESPACE") or DEFAULT_NAMESPACE


def job_name(command: str, target: str, kind: str, layer: str | None = None) -> str:
    """`shadow_backfill.<command>.<live table>`; a pipeline's `shadow_backfill.pipeline.<command>.
    <file>`, and its layer's with `.<layer key>` appended."""
    if kind == "table":
        return f"shadow_backfill.{command}.{target}"
    base = f"shadow_backfill.pipeline.{command}.{target}"
    return f"{base}.{layer}" if layer else base


@dataclass(frozen=True)
class RunPlan:
    """One command's run: `run_id` (a UUID, also what its alert quotes), when it started, the
    scheduler's run it nests under (`parent`, from `OPENLINEAGE_PARENT_ID`), and a run id for
    each pipeline layer (`layers`: key -> run id)."""

    command: str
    kind: str
    target: str
    run_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    parent: Job | None = None
    layers: dict[str, str] = field(default_factory=dict)

    @property
    def job(self) -> Job:
        return Job(job_namespace(), job_name(self.command, self.target, self.kind), self.run_id)

    def layer_job(self, key: str) -> Job:
        return Job(job_namespace(), job_name(self.command, self.target, self.kind, key), self.layers[key])
