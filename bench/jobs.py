"""Spark jobs a step ran, read from the driver's own status store (what the Spark UI shows).

Wall-clock seconds on a shared machine say little; the number of Spark jobs a step runs is
deterministic, and the time those jobs kept Spark busy (union of their spans) against the
step's wall time says whether the step's cost is in Spark or in the driver (Python, planning,
catalog and state-store calls). Read through py4j, so it needs a classic (not Connect) session,
and the UI need not be enabled: the status store exists without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JobStats:
    """What the jobs of one step cost: how many, their tasks, the seconds Spark was busy with
    at least one of them (`busy_s`), and the tasks' summed run time (`task_s`)."""

    jobs: int
    tasks: int
    busy_s: float
    task_s: float
    spilled_mb: float = 0.0  # written to disk by aggregations and sorts short of memory

    def as_dict(self) -> dict[str, Any]:
        return {
            "jobs": self.jobs,
            "tasks": self.tasks,
            "busy_s": round(self.busy_s, 2),
            "task_s": round(self.task_s, 2),
            "spilled_mb": round(self.spilled_mb),
        }


class JobLog:
    """Job ids seen so far; `since(mark)` is the stats of the jobs after a `mark()`.

    Needs `spark.ui.retainedJobs`/`retainedStages` above the jobs a run makes (the store drops
    the oldest beyond them; the default is 1000)."""

    def __init__(self, spark: Any) -> None:
        self._sc = spark.sparkContext._jsc.sc()

    def _flush(self) -> None:
        """The status store is filled by the listener bus, asynchronously: wait until it is."""
        self._sc.listenerBus().waitUntilEmpty()

    def _jobs(self) -> list[Any]:
        self._flush()
        seq = self._sc.statusStore().jobsList(None)
        return [seq.apply(i) for i in range(seq.size())]

    def mark(self) -> int:
        """The highest job id so far (-1 before the first job)."""
        return max((j.jobId() for j in self._jobs()), default=-1)

    def since(self, mark: int) -> JobStats:
        jobs = [j for j in self._jobs() if j.jobId() > mark]
        spans: list[tuple[float, float]] = []
        stage_ids: set[int] = set()
        for j in jobs:
            start, end = j.submissionTime(), j.completionTime()
            if start.isDefined() and end.isDefined():
                spans.append((start.get().getTime() / 1000, end.get().getTime() / 1000))
            ids = j.stageIds()
            stage_ids.update(ids.apply(i) for i in range(ids.size()))
        store = self._sc.statusStore()
        task_ms = spilled = 0
        for sid in stage_ids:
            try:
                stage = store.lastStageAttempt(sid)
            except Exception:  # a stage that never ran (skipped: its shuffle output was reused)
                continue
            task_ms += stage.executorRunTime()
            spilled += stage.diskBytesSpilled()
        return JobStats(len(jobs), sum(j.numTasks() for j in jobs), _union(spans), task_ms / 1000, spilled / 1e6)

    def by_site(self, mark: int) -> dict[str, float]:
        """Task seconds of the jobs after `mark`, by the module whose call started each job
        (`profile_job`, `facts_job`, ...): where a step's time goes. A stage shared by several
        jobs (a reused shuffle) counts once, for the first job that lists it."""
        out: dict[str, float] = {}
        seen: set[int] = set()
        store = self._sc.statusStore()
        for j in sorted((j for j in self._jobs() if j.jobId() > mark), key=lambda j: j.jobId()):
            site = _site(j.name())
            ids = j.stageIds()
            for sid in (ids.apply(i) for i in range(ids.size())):
                if sid in seen:
                    continue
                seen.add(sid)
                try:
                    ms = store.lastStageAttempt(sid).executorRunTime()
                except Exception:  # a stage that never ran (skipped: its shuffle output was reused)
                    continue
                out[site] = round(out.get(site, 0.0) + ms / 1000, 2)
        return out


class NoJobLog:
    """A Spark Connect session (an embedded Sail server) has no driver status store to read:
    its steps are timed by the wall clock alone, and their rows say nothing of jobs."""

    def mark(self) -> int:
        return -1

    def since(self, mark: int) -> NoJobs:
        return NoJobs()

    def by_site(self, mark: int) -> dict[str, float]:
        return {}


class NoJobs:
    """No job counts (see `NoJobLog`): an empty row, not zeros that would read as measured."""

    def as_dict(self) -> dict[str, Any]:
        return {}


def job_log(spark: Any) -> JobLog | NoJobLog:
    """The classic session's job log, or none over Spark Connect."""
    return NoJobLog() if type(spark).__module__.startswith("pyspark.sql.connect") else JobLog(spark)


def largest_generated_method(df: Any) -> int:
    """The bytes of the largest method whole-stage code generation makes for `df`'s plan (as
    planned in the session's present settings), read from Spark's debug package: what HotSpot's
    8,000-byte compile limit is held against (`session.RUNTIME_CONF`). Classic sessions only."""
    spark = df.sparkSession
    stages = spark._jvm.org.apache.spark.sql.execution.debug.package.codegenStringSeq(
        df._jdf.queryExecution().executedPlan()
    )
    return max((stages.apply(i)._3().maxMethodCodeSize() for i in range(stages.size())), default=0)


def _site(job_name: str) -> str:
    """The module of a job's call site, from Spark's short form `collect at /path/module.py:12`."""
    where = job_name.rsplit(" at ", 1)[-1].split(":", 1)[0]
    return where.rsplit("/", 1)[-1].removesuffix(".py") or job_name


def _union(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one span (jobs of parallel threads overlap)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total
