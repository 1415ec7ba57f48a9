"""What each layer of a pipeline holds now, and what that allows: a layer's partition is ready
to recompute once its upstream partitions are written (and, with gate `upstream_passed`,
passed); it is stale when an upstream partition was rewritten after it; its verdict counts only
for the data it holds now. The pipeline's commands ask these questions many times per
partition, so the records and verdicts are read once per step and dropped (`forget`) after
every step that writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from shadow_backfill.pipeline.gate import BLOCKED
from shadow_backfill.state import PartitionRecord, VerdictRecord
from shadow_backfill.vocabulary import CheckStatus, PartitionStatus
from shadow_backfill.workflow import PromotionPolicy

if TYPE_CHECKING:
    from shadow_backfill.api import Backfill
    from shadow_backfill.pipeline.spec import PipelineFile


def written(rec: PartitionRecord | None) -> bool:
    return rec is not None and rec.status == PartitionStatus.WRITTEN


class LayerStates:
    """Each layer's partition records and verdicts as the store holds them, and the rules read
    from them."""

    def __init__(self, file: PipelineFile, layers: Mapping[str, Backfill]) -> None:
        self.file = file
        self.layers = layers
        self.forget()

    def records(self, key: str) -> dict[str, PartitionRecord]:
        """The layer's partition records, read once per step (see `forget`)."""
        cache = self._seen_records  # a read racing a `forget` fills the dropped cache, not the new
        if key not in cache:
            bf = self.layers[key]
            cache[key] = bf.store.records(bf.config.shadow)
        return cache[key]

    def verdicts_of(self, key: str) -> dict[str, VerdictRecord]:
        """The layer's stored verdicts, read once per step (see `forget`)."""
        cache = self._seen_verdicts
        if key not in cache:
            bf = self.layers[key]
            cache[key] = bf.store.verdicts(bf.config.shadow)
        return cache[key]

    def forget(self) -> None:
        """Why a cache: judging one partition reads every layer's records and verdicts, so a
        year of partitions in three layers would read the store tens of thousands of times. It
        is dropped after every step that writes them (a layer's run or validation) and at the
        start of every command, so nothing is judged on what a step has since changed."""
        self._seen_records: dict[str, dict[str, PartitionRecord]] = {}
        self._seen_verdicts: dict[str, dict[str, VerdictRecord]] = {}

    def _allowed(self, key: str) -> frozenset[CheckStatus]:
        return PromotionPolicy.of([self.file.configs[key]]).promotable

    def not_ready(self, key: str, partition: str, blocked: dict[str, dict[str, str]]) -> str | None:
        """Why a layer's partition may not be recomputed yet (None: it may): an upstream
        partition blocked, not written, or (gate `upstream_passed`) not passed."""
        for dep in self.file.depends_on(key):
            if partition in blocked.get(dep, {}):
                return f"upstream {dep} is blocked"
            rec = self.records(dep).get(partition)
            if not written(rec):
                return f"upstream {dep} has no partition {partition} written"
            if self.file.spec.run.gate == "upstream_passed":
                verdict = self.fresh_verdict(dep, partition)
                if verdict not in self._allowed(dep):
                    return f"upstream {dep} did not pass ({verdict or 'not validated'})"
        return None

    def fresh_verdict(self, key: str, partition: str) -> CheckStatus | None:
        """The layer's verdict of the data it holds now (None: not validated since it was written)."""
        verdict = self.verdicts_of(key).get(partition)
        rec = self.records(key).get(partition)
        if verdict is None or rec is None or verdict.partition_version != rec.shadow_version:
            return None
        return CheckStatus(verdict.verdict)

    def stale(self, key: str, partition: str) -> bool:
        """The layer's partition was written before one of its upstream partitions: it was
        computed from data the run has replaced."""
        mine = self.records(key).get(partition)
        if not written(mine) or mine is None or mine.finished_at is None:
            return False
        for dep in self.file.depends_on(key):
            up = self.records(dep).get(partition)
            if up is not None and up.finished_at is not None and up.finished_at > mine.finished_at:
                return True
        return False

    def layer_verdict(self, key: str, partition: str) -> str | None:
        """The layer's verdict on the data it holds now; `blocked` when that data was computed
        from upstream data since replaced, or when it was held back by its upstream."""
        deps = self.file.depends_on(key)
        if any(self.layer_verdict(dep, partition) == BLOCKED for dep in deps):
            return BLOCKED
        if any(not written(self.records(dep).get(partition)) for dep in deps) or self.stale(key, partition):
            return BLOCKED
        verdict = self.fresh_verdict(key, partition)
        if verdict is None and self.not_ready(key, partition, {}) is not None:
            return BLOCKED
        return verdict


__all__ = ["LayerStates", "written"]
