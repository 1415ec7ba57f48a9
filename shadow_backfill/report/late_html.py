"""The report's late-arrival section: the view by age as a table, each re-validated partition
by age, and a bar per age of the share of rows present by then, so a team reads its lag off
the page. Cells are text (escaped by the template); the chart's shapes come placed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shadow_backfill.document import ArrivalAgeDoc, ArrivalPointDoc, LateArrivalDoc
from shadow_backfill.report.shapes import Bar, Text

SHARE = "#3a9d5d"
AGE_HEAD = ["age", "partitions", "rows", "keys added", "removed", "changed"]


def late_view(doc: LateArrivalDoc | None) -> dict[str, Any] | None:
    """What report.html.j2 places for the view (None: no partition was validated at two ages)."""
    if doc is None:
        return None
    ages = [a.age for a in doc.by_age]
    return {
        "unit": doc.unit,
        "head": [*AGE_HEAD, f"rows present by then, of those at {doc.horizon}"],
        "rows": [a.cells() for a in doc.by_age],
        "partition_head": ["partition", *(a.label for a in doc.by_age)],
        "partition_rows": [_partition_row(part.partition, part.points, ages) for part in doc.partitions],
        "chart": share_chart(doc.by_age),
    }


def _partition_row(partition: str, points: Sequence[ArrivalPointDoc], ages: Sequence[int]) -> list[str]:
    """A partition across the ages: at each, its rows and what live lacked or held otherwise
    then (empty where it was not read at that age)."""
    at = {p.age: p for p in points}
    return [partition, *(_cell(at[age]) if age in at else "" for age in ages)]


def _cell(p: ArrivalPointDoc) -> str:
    keys = "" if p.added is None else f" (+{p.added} −{p.removed} ~{p.changed})"
    return f"{'' if p.shadow_rows is None else p.shadow_rows}{keys}"


def share_chart(ages: Sequence[ArrivalAgeDoc]) -> dict[str, Any]:
    """A bar per age: the share of rows present by then (none where no partition of that age
    reached the horizon), on a scale from 0 to 100%, or to the largest share where rows went
    away later (a late deduplication makes a share above 1)."""
    top = max([1.0, *(a.present_share for a in ages if a.present_share is not None)])
    width, height, slot = 60 + 46 * len(ages), 120, 46
    items: list[Text | Bar] = [Text(0, 10, 9, f"{top:.0%}"), Text(0, height, 9, "0%")]
    for i, a in enumerate(ages):
        x = 30 + i * slot
        if a.present_share is not None:
            h = a.present_share / top * height
            items.append(Bar(x, f"{height - h:.1f}", "30", f"{h:.1f}", SHARE, f"{a.label}: {a.cells()[-1]}"))
        items.append(Text(x + 4, height + 14, 10, a.label))
    title = "share of rows present, by age"
    return {"title": title, "label": title, "width": width, "height": height + 20, "shapes": items, "axis": height}
