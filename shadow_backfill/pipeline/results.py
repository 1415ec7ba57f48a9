"""What the pipeline commands return: typed results the CLI renders and scripts inspect."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shadow_backfill.pipeline.gate import PipelineVerdict
from shadow_backfill.state.pipelines import PipelineRecord
from shadow_backfill.vocabulary import CheckStatus

if TYPE_CHECKING:  # the recompute imports PySpark; `pipeline status` never needs it
    from shadow_backfill.results import RunResult


@dataclass
class PipelineRun:
    """A recompute of every layer: each layer's run (None: nothing to do in it), and per layer
    the partitions held back because an upstream partition was not ready, with the reason."""

    requested: list[str]
    runs: dict[str, RunResult | None] = field(default_factory=dict)
    blocked: dict[str, dict[str, str]] = field(default_factory=dict)
    stopped: str | None = None
    """Why chunks stopped starting (a time box, SIGTERM); None: every chunk started."""
    not_started: dict[str, list[str]] = field(default_factory=dict)
    """Per layer, the partitions of the chunks a stop kept from starting."""

    @property
    def complete(self) -> bool:
        """Every layer recomputed every requested partition (none failed, held, blocked or left
        by a stop)."""
        done = all(r is None or r.complete for r in self.runs.values())
        return done and not any(self.blocked.values()) and not any(self.not_started.values())

    @property
    def finished(self) -> list[str]:
        """The requested partitions written in every layer that took them: none left by a stop,
        failed, held or blocked in any layer (what `--promote-partial` judges)."""
        left = {p for keys in self.not_started.values() for p in keys}
        left |= {p for held in self.blocked.values() for p in held}
        for run in self.runs.values():
            if run is not None:
                left |= set(run.failed) | set(run.held)
        return [p for p in self.requested if p not in left]

    def summary(self) -> dict[str, Any]:
        return {
            "requested": len(self.requested),
            "layers": {
                key: {
                    **(run.summary() if run is not None else {"written": 0, "skipped": 0, "failed": 0}),
                    "blocked": dict(self.blocked.get(key, {})),
                }
                for key, run in self.runs.items()
            },
        }


@dataclass
class PipelineValidation:
    """Each partition's verdict in every layer, in the cross-layer checks, and for the pipeline."""

    verdicts: list[PipelineVerdict]

    @property
    def ok(self) -> bool:
        return all(v.verdict != CheckStatus.FAIL for v in self.verdicts)

    @property
    def counts(self) -> dict[str, int]:
        out = {str(s): 0 for s in (CheckStatus.PASS, CheckStatus.WARN, CheckStatus.FAIL)}
        for v in self.verdicts:
            out[str(v.verdict)] += 1
        return out


@dataclass
class PipelinePromotion:
    """A promotion of the set: the partitions promoted in every layer and the record (None when
    none was), the partitions that passed but some layer refused (partition -> `layer: why`),
    and a promotion a kill had cut off that this command finished first."""

    partitions: list[str]
    record: PipelineRecord | None
    refused: dict[str, str] = field(default_factory=dict)
    finished: PipelineRecord | None = None


@dataclass
class PipelineBackfill:
    """The main job over every layer: recompute -> validate -> promote the set -> report."""

    run: PipelineRun
    validation: PipelineValidation
    promotion: PipelinePromotion | None
    reports: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.run.complete and self.validation.ok
