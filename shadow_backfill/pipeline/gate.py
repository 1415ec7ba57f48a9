"""A partition's verdict for the pipeline: the worst of its verdicts in every layer and of the
checks across layers. Pure code: the layers' verdicts and row counts come in as plain values,
so the rules are tested without Spark."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from shadow_backfill.pipeline.spec import Consistency
from shadow_backfill.vocabulary import CheckStatus

BLOCKED = "blocked"  # not recomputed: an upstream partition it needs was not written or failed


@dataclass(frozen=True)
class CrossCheck:
    """One consistency check on one partition."""

    name: str  # e.g. "rows_ratio raw -> staging"
    status: CheckStatus
    observed: float | None
    message: str


@dataclass(frozen=True)
class PipelineVerdict:
    """One partition across the pipeline: its verdict in each layer (None: not validated,
    `blocked`: held back by its upstream), the cross-layer checks, and the verdict of the whole."""

    partition: str
    layers: dict[str, str | None]
    checks: list[CrossCheck] = field(default_factory=list)

    @property
    def verdict(self) -> CheckStatus:
        """Fail when any layer failed, was blocked or was not validated, or a check failed."""
        statuses: list[str] = []
        for v in self.layers.values():
            statuses.append(CheckStatus.FAIL if v is None or v == BLOCKED else v)
        statuses.extend(c.status for c in self.checks)
        worst = max((CheckStatus(s) for s in statuses), key=lambda s: s.rank, default=CheckStatus.FAIL)
        return CheckStatus.PASS if worst == CheckStatus.SKIPPED else worst

    @property
    def failed_in(self) -> list[str]:
        """The layers (and checks) that made the partition fail or warn, for the report."""
        bad = [k for k, v in self.layers.items() if v is None or v in (BLOCKED, CheckStatus.FAIL, CheckStatus.WARN)]
        return bad + [c.name for c in self.checks if c.status in (CheckStatus.FAIL, CheckStatus.WARN)]


def rows_ratio(check: Consistency, upstream_rows: int | None, downstream_rows: int | None) -> CrossCheck:
    """Downstream rows over upstream rows within the check's bounds. A missing count is a fail
    (the layer was not written); zero upstream rows pass only if downstream has none either."""
    name = f"rows_ratio {check.upstream} -> {check.downstream}"
    if upstream_rows is None or downstream_rows is None:
        return CrossCheck(name, CheckStatus.FAIL, None, "a layer has no rows written for this partition")
    if upstream_rows == 0:
        ok = downstream_rows == 0
        status = CheckStatus.PASS if ok else CheckStatus.FAIL
        return CrossCheck(name, status, None, f"upstream has 0 rows, downstream {downstream_rows}")
    ratio = downstream_rows / upstream_rows
    bounds = check.rows_ratio
    low = bounds.min is not None and ratio < bounds.min
    high = bounds.max is not None and ratio > bounds.max
    status = CheckStatus.FAIL if low or high else CheckStatus.PASS
    shown = f"[{bounds.min if bounds.min is not None else '-inf'}, {bounds.max if bounds.max is not None else 'inf'}]"
    return CrossCheck(name, status, ratio, f"{downstream_rows}/{upstream_rows} rows = {ratio:.4g}, allowed {shown}")


def pipeline_verdicts(
    partitions: Sequence[str],
    layers: Mapping[str, Mapping[str, str]],
    rows: Mapping[str, Mapping[str, int]],
    checks: Sequence[Consistency],
) -> list[PipelineVerdict]:
    """Per partition: each layer's verdict (`layers[layer][partition]`, missing: None), and
    every consistency check on the layers' written row counts (`rows[layer][partition]`)."""
    out = []
    for key in partitions:
        cross = [rows_ratio(c, rows[c.upstream].get(key), rows[c.downstream].get(key)) for c in checks]
        out.append(PipelineVerdict(key, {layer: got.get(key) for layer, got in layers.items()}, cross))
    return out
