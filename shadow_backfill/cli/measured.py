"""`history --partition P --metrics` as a table: one row per validation kept, so a person sees
how a partition's numbers moved across re-runs (a nightly job's late rows arriving, a fix
taking effect); and `history --late-arrivals`, the same history by the partitions' age. The
cells are data: printed as text, never as Rich markup."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from shadow_backfill.document import KeyDiffDoc, MetricsDoc
from shadow_backfill.documents.cli import LateArrivalHistoryDoc, MeasuredDoc, MetricHistoryDoc
from shadow_backfill.errors import UsageError

if TYPE_CHECKING:
    from shadow_backfill.api import Backfill


def _number(x: object, spec: str) -> str:
    """A stored number as text; a missing or non-finite one (published as text) as n/a."""
    return format(x, spec) if isinstance(x, float | int) else "n/a"


def _keys(m: MetricsDoc) -> str:
    k = m.keys
    if not isinstance(k, KeyDiffDoc):
        return ""
    return f"+{k.added} −{k.removed} ~{k.changed}"


def _change(m: MetricsDoc, column: str) -> str:
    """One column's cell: its mean's signed change (the history's question is which way it
    moved; report.json's `mean_change_pct` is its size), the share of keys changed, nulls."""
    c = m.column_changes[column]
    parts = []
    if isinstance(c.mean_live, float | int) and isinstance(c.mean_shadow, float | int) and c.mean_live:
        parts.append(f"mean {(c.mean_shadow - c.mean_live) / abs(c.mean_live) * 100:+.2f}%")
    if c.changed_share is not None and c.matched:
        parts.append(f"{_number(c.changed_share * 100, '.1f')}% changed")
    if c.null_rate_shadow is not None:
        parts.append(f"null {_number(c.null_rate_shadow * 100, '.1f')}%")
    return ", ".join(parts)


def measured_table(doc: MetricHistoryDoc) -> Table:
    """One row per validation kept, one column per compared column that was measured."""
    columns = list(dict.fromkeys(c for v in doc.validations for c in v.metrics.column_changes))
    table = Table(title=f"{doc.shadow_table}: partition {doc.partition}, each validation kept")
    for name in ("validated", "validation", "verdict", "versions shadow / live", "rows live → shadow", "keys"):
        table.add_column(name)
    for c in columns:
        table.add_column(Text(c))
    for v in doc.validations:
        m = v.metrics
        rows = f"{m.live_rows} → {m.shadow_rows}" if m.rows is not None else ""
        cells = [(v.validated_at or "")[:19].replace("T", " "), v.validation_id, str(v.verdict)]
        cells += [f"{v.shadow_version} / {v.live_version}", rows, _keys(m)]
        cells += [_change(m, c) if c in m.column_changes else "" for c in columns]
        table.add_row(*[Text(x) for x in cells])
    return table


def arrivals_table(doc: LateArrivalHistoryDoc) -> Table:
    """One row per age: how many partitions were seen at it, their rows, what live lacked, and
    the share of their newest rows that was there by then (what a lag is chosen from)."""
    late = doc.late_arrivals
    assert late is not None
    table = Table(title=Text(f"{doc.shadow_table}: rows against live by the partition's age ({late.unit}s)"))
    for name in ("age", "partitions", "rows", "added", "removed", "changed", f"present by then, of {late.horizon}"):
        table.add_column(name, justify="left" if name == "age" else "right")
    for a in late.by_age:
        table.add_row(*[Text(x) for x in a.cells()])
    return table


def late_doc(bf: Backfill) -> LateArrivalHistoryDoc:
    """The published document of the late-arrival view (no Spark)."""
    return LateArrivalHistoryDoc(shadow_table=bf.shadow_table, late_arrivals=bf.late_arrivals())


def check_late(partition: str | None, *, metrics: bool, reconcile: bool) -> None:
    """`--late-arrivals` is over every partition: not with `--partition`, `--metrics` or
    `--reconcile` (exit 2)."""
    if partition is not None or metrics or reconcile:
        raise UsageError(
            "--late-arrivals is over every partition kept: it goes with none of --partition, --metrics, --reconcile"
        )


def check_measured(partition: str | None, *, metrics: bool, reconcile: bool) -> None:
    """`--metrics` and `--partition` go together, and not with `--reconcile` (exit 2)."""
    if not metrics or partition is None:
        raise UsageError("--metrics and --partition P go together: one partition's measurements at each validation")
    if reconcile:
        raise UsageError("--reconcile records promotions the store misses; it does not go with --metrics")


def measured_doc(bf: Backfill, partition: str) -> MetricHistoryDoc:
    """The published document of a partition's kept validations (`state.metric_history`); a
    partition the store has no verdict of is refused (exit 2), so a typo is not "none kept"."""
    records = bf.metric_history(partition)
    if not records and partition not in bf.store.verdicts(bf.shadow_table):
        raise UsageError(f"partition {partition!r} has no verdict in the state store of {bf.shadow_table}")
    validations = [
        MeasuredDoc(
            validation_id=r.validation_id or "",
            validated_at=r.validated_at.isoformat() if r.validated_at else None,
            verdict=r.verdict,
            shadow_version=r.shadow_version,
            partition_version=r.partition_version,
            live_version=r.live_version,
            metrics=r.metrics,
        )
        for r in records
    ]
    return MetricHistoryDoc(shadow_table=bf.shadow_table, partition=partition, validations=validations)
