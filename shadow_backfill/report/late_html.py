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
        "rows": [_age_row(a) for a in doc.by_age],
        "partition_head": ["partition", *(a.label for a in doc.by_age)],
        "partition_rows": [
            [part.partition, *(_cell({p.age: p for p in part.points}.get(at)) for at in ages)]
            for part in doc.partitions
        ],
        "chart": share_chart(doc.by_age),
    }


def _shown(x: int | None) -> str:
    return "" if x is None else str(x)


def _share(a: ArrivalAgeDoc) -> str:
    if a.present_share is None:
        return ""
    return f"{a.present_share:.1%} of {a.compared}"


def _age_row(a: ArrivalAgeDoc) -> list[str]:
    counts = [str(a.partitions), str(a.shadow_rows), _shown(a.added), _shown(a.removed), _shown(a.changed)]
    return [a.label, *counts, _share(a)]


def _cell(p: ArrivalPointDoc | None) -> str:
    """A partition at one age: its rows, and what live lacked or held otherwise then."""
    if p is None:
        return ""
    keys = "" if p.added is None else f" (+{p.added} −{p.removed} ~{p.changed})"
    return f"{_shown(p.shadow_rows)}{keys}"


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
            items.append(Bar(x, f"{height - h:.1f}", "30", f"{h:.1f}", SHARE, f"{a.label}: {_share(a)}"))
        items.append(Text(x + 4, height + 14, 10, a.label))
    title = "share of rows present, by age"
    return {"title": title, "label": title, "width": width, "height": height + 20, "shapes": items, "axis": height}
