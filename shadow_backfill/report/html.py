"""A self-contained HTML report: opens from disk, loads nothing from the network.

Plots are inline SVG (no charting library, no CDN): daily partitions as a calendar (other
granularities as a grid) coloured by verdict, live vs shadow row counts over time, the
per-partition mean of each failing or expected-change column (live against shadow), and per
partition the column-change table, sample rows that differ, live-vs-shadow histograms, category
bars and null-rate bars next to the checks that failed. Hover text is SVG `<title>`, so it needs
no script. A small inline script adds a "problems only" filter, opens a partition's drill-down
from the grid or calendar, and marks the page as rendered (the headless-browser test looks for it).

The markup is in templates/ (report.html.j2 and its partials); this module computes what they
place: scales, coordinates and the formatted numbers, so a template never does arithmetic.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from shadow_backfill.document import KeyDiffDoc, MeasuredPointDoc, PartitionDoc, ReportDoc
from shadow_backfill.report.late_html import late_view
from shadow_backfill.report.model import reasons, report_title, skipped, skipped_count
from shadow_backfill.report.shapes import Bar, Text
from shadow_backfill.report.templating import render
from shadow_backfill.vocabulary import CHANGE_METRICS, VERDICTS

# Checks that measure how much a column changed: a column with one is meant to change, so its
# means are plotted next to those of the columns that failed or warned.
CHANGE_CHECKS = (*CHANGE_METRICS, "consistent_mean_change_pct", "consistent_changed_share")
MAX_MEAN_CHARTS = 6
_DAILY = re.compile(r"\d{4}-\d{2}-\d{2}")
LIVE, SHADOW = "#5b7bd6", "#e07b39"
_Scale = Callable[[int, float], tuple[float, float]]  # (partition index, value) -> (x, y) in a chart

# Only the page's script may run: it is allowed by its hash, not by 'unsafe-inline', so a script
# or an on* handler that ever slipped past escaping would still be blocked by the browser.
SCRIPT = render("report.js")
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()


def _bars(title: str, labels: Sequence[str], live: Sequence[float], shadow: Sequence[float]) -> dict[str, Any]:
    """Grouped bars, live vs shadow, as shares of each side's total."""
    width, height = 320, 140
    lt, st = sum(live) or 1.0, sum(shadow) or 1.0
    lp, sp = [x / lt for x in live], [x / st for x in shadow]
    top = max([*lp, *sp, 1e-9])
    n = len(labels)
    slot = (width - 30) / n
    bw = max(slot / 2 - 1, 1)
    items: list[Text | Bar] = []
    for i in range(n):
        x = 25 + i * slot
        for j, (val, colour) in enumerate(((lp[i], LIVE), (sp[i], SHADOW))):
            h = val / top * height
            items.append(
                Bar(
                    f"{x + j * bw:.1f}", f"{height - h:.1f}", f"{bw:.1f}", f"{h:.1f}", colour, f"{labels[i]}: {val:.1%}"
                )
            )
        if n <= 12:
            items.append(Text(f"{x:.1f}", height + 12, 9, str(labels[i])[:8]))
    return {"title": title, "label": title, "width": width, "height": height + 30, "shapes": items, "axis": height}


def _null_bars(nulls: Sequence[tuple[str, float, float]]) -> dict[str, Any]:
    """Each column's null rate, live over shadow, as two thin bars."""
    width = 320
    items: list[Text | Bar] = []
    for i, (c, lv, sv) in enumerate(nulls):
        y = 5 + i * 16
        items.append(Text(0, y + 10, 10, c[:14]))
        for j, (val, colour, side) in enumerate(((lv, LIVE, "live"), (sv, SHADOW, "shadow"))):
            items.append(Bar(95, y + j * 6, f"{max(val, 0) * (width - 100):.1f}", 5, colour, f"{c} {side}: {val:.2%}"))
    h = 16 * len(nulls) + 10
    return {"title": "null rates", "label": "null rates", "width": width, "height": h, "shapes": items, "axis": None}


def _series(colour: str, points: Sequence[tuple[int, float, str]], xy: _Scale) -> dict[str, Any]:
    """One side of a line chart from (index, value, hover) points: a polyline per run of
    consecutive indexes (a partition without a value breaks the line) and a dot per point."""
    runs: list[list[str]] = []
    for n, (i, val, _) in enumerate(points):
        if n == 0 or i != points[n - 1][0] + 1:
            runs.append([])
        runs[-1].append("{:.1f},{:.1f}".format(*xy(i, val)))
    dots = []
    for i, val, title in points:
        cx, cy = xy(i, val)
        dots.append({"cx": f"{cx:.1f}", "cy": f"{cy:.1f}", "title": title})
    return {"colour": colour, "runs": [" ".join(r) for r in runs], "dots": dots}


def _row_count_chart(verdicts: Sequence[PartitionDoc]) -> dict[str, Any] | None:
    """Live and shadow row counts per partition, on one scale from 0."""
    width, height = 900, 180
    if not verdicts:
        return None
    rows = [(v.partition, (v.metrics.live_rows or 0, v.metrics.shadow_rows or 0)) for v in verdicts]
    top = max(max(counts) for _, counts in rows) or 1
    step = (width - 60) / max(len(rows) - 1, 1)

    def xy(i: int, val: float) -> tuple[float, float]:
        return 50 + i * step, height - float(val) / top * (height - 20)

    series = [
        _series(colour, [(i, counts[side], f"{part}: {counts[side]}") for i, (part, counts) in enumerate(rows)], xy)
        for side, colour in ((0, LIVE), (1, SHADOW))
    ]
    return {
        "width": width,
        "height": height + 24,
        "label": "row counts",
        "top": Text(0, 12, 10, str(top)),
        "bottom": Text(0, height, 10, "0"),
        "series": series,
        "first": Text(50, height + 18, 10, rows[0][0]),
        "last": Text(width - 80, height + 18, 10, rows[-1][0]),
    }


def _num(v: Any) -> float | None:
    """A finite number, or None: metrics store None for "no value" and non-finite floats as
    strings ("inf"), and neither can be placed on an axis."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _fmt(v: Any, pct: bool = False, share: bool = False) -> str:
    """A metric as short text: numbers to 4 significant digits, shares as percentages, None as a
    dash, anything else (such as "inf") as it was stored."""
    if v is None:
        return "–"
    n = _num(v)
    if n is None:
        return str(v)
    if share:
        return f"{n:.2%}"
    return f"{n:.3g}%" if pct else f"{n:.4g}"


def _change_rows(v: PartitionDoc) -> list[list[str]]:
    """How much each compared column changed in this partition, in the author's units."""
    return [
        [
            col,
            _fmt(m.matched),
            _fmt(m.changed),
            _fmt(m.changed_share, share=True),
            _fmt(m.mean_live),
            _fmt(m.mean_shadow),
            _fmt(m.mean_change),
            _fmt(m.mean_change_pct, pct=True),
            _fmt(m.max_abs_diff),
            f"{_fmt(m.null_rate_live, share=True)} → {_fmt(m.null_rate_shadow, share=True)}",
        ]
        for col, m in v.metrics.column_changes.items()
    ]


def _scalar(v: Any) -> str:
    """A sample value as JSON shows it: null stays "null", not Python's "None"."""
    return "null" if v is None else str(v)


def _keys_text(keys: Any) -> str:
    """A sample's key as `k=v, ...`."""
    if isinstance(keys, dict):
        return ", ".join(f"{k}={val}" for k, val in keys.items())
    return str(keys)


def _added_rows(v: PartitionDoc) -> list[list[str]]:
    """Columns only shadow has (a logic change that adds them): no live side to compare with, so
    what they hold is shown, for the author to check against what they meant."""
    names = set(v.metrics.schema_.added) if v.metrics.schema_ is not None else set()
    return [
        [
            c,
            _fmt(m.shadow_count),
            _fmt(m.shadow_null_rate, share=True),
            *map(_fmt, (m.shadow_min, m.shadow_mean, m.shadow_max)),
        ]
        for c, m in v.metrics.columns.items()
        if c in names and m.shadow_count is not None
    ]


def _distribution_plots(v: PartitionDoc) -> list[dict[str, Any]]:
    """Null-rate bars, histograms on live deciles and category bars, live vs shadow."""
    cols = v.metrics.columns
    plots = []
    added = set(v.metrics.schema_.added) if v.metrics.schema_ is not None else set()
    nulls = [
        (c, m.live_null_rate or 0.0, m.shadow_null_rate)
        for c, m in cols.items()
        if m.shadow_null_rate is not None and c not in added  # an added column has its own table
    ]
    if nulls:
        plots.append(_null_bars(nulls))
    for c, m in cols.items():
        if (hist := m.hist) is not None and hist.edges:
            labels = [f"≤{_edge(hist.edges[0])}"] + [f">{_edge(x)}" for x in hist.edges]
            psi = _num(m.psi if m.psi is not None else 0)
            shown = f"{psi:.3f}" if psi is not None else str(m.psi)
            plots.append(_bars(f"{c}: distribution on live deciles (PSI {shown})", labels, hist.live, hist.shadow))
        if (cats := m.categories) is not None and (labels := sorted(set(cats.live) | set(cats.shadow))):
            live, shadow = [cats.live.get(x, 0) for x in labels], [cats.shadow.get(x, 0) for x in labels]
            plots.append(_bars(f"{c}: categories", labels, live, shadow))
    return plots


def _edge(x: Any) -> str:
    """A bin edge as a short label; a non-finite one ("inf") as it was stored."""
    n = _num(x)
    return f"{n:.3g}" if n is not None else str(x)


def _partition_view(v: PartitionDoc) -> dict[str, Any]:
    """What partition.html.j2 needs beyond the record: the checks shown (those that made the
    verdict, then the skipped ones, so a skipped check never reads as passed) and the tables'
    cells as text."""
    not_judged = skipped(v.checks)
    why = reasons(v)
    samples = [[_keys_text(s.keys), s.column, _scalar(s.live), _scalar(s.shadow)] for s in v.metrics.samples]
    return {
        "record": v,
        "skipped": len(not_judged),
        "reasons": len(why),
        "checks": [*why, *not_judged],
        "key_diff": v.metrics.keys if isinstance(v.metrics.keys, KeyDiffDoc) else None,
        "changes": _change_rows(v),
        "added": _added_rows(v),
        "samples": samples,
        "plots": _distribution_plots(v),
        "history": _history_rows(v),
    }


def _shown(x: int | None) -> str:
    return "" if x is None else str(x)


def _history_rows(v: PartitionDoc) -> list[list[str]]:
    """The partition's validations kept, as cells, when there is more than the one shown."""
    if not v.history or len(v.history) < 2:
        return []

    def keys(h: MeasuredPointDoc) -> str:
        return "" if h.keys_added is None else f"+{h.keys_added} −{h.keys_removed} ~{h.keys_changed}"

    return [
        [
            (h.validated_at or "")[:19].replace("T", " "),
            str(h.verdict),
            f"{_shown(h.shadow_version)} / {_shown(h.live_version)}",
            f"{_shown(h.live_rows)} → {_shown(h.shadow_rows)}" if h.live_rows is not None or h.shadow_rows else "",
            keys(h),
        ]
        for h in v.history
    ]


def _daily_dates(verdicts: Sequence[PartitionDoc]) -> dict[dt.date, str] | None:
    """The verdict of each day, when every partition is a day (YYYY-MM-DD); else None."""
    out: dict[dt.date, str] = {}
    for v in verdicts:
        if not _DAILY.fullmatch(v.partition):
            return None
        try:
            out[dt.date.fromisoformat(v.partition)] = v.verdict
        except ValueError:
            return None
    return out or None


def _calendar(days: dict[dt.date, str], cell: int = 13) -> dict[str, Any]:
    """Daily partitions as a calendar: one column per week, Monday..Sunday down, a month label
    above the week a month starts in. Days in the range without a verdict are light grey."""
    first, last = min(days), max(days)
    monday = first - dt.timedelta(days=first.weekday())
    left, top = 30, 16
    weeks = (last - monday).days // 7 + 1
    weekdays = [
        Text(0, top + i * cell + 10, 9, name)
        for i, name in enumerate(("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"))
    ]
    labels: list[tuple[int, str]] = [(0, first.strftime("%b"))]
    cells = []
    day = first
    while day <= last:
        if day.day == 1 and day != first:
            col = (day - monday).days // 7
            if labels and col - labels[-1][0] < 2 and labels[-1][0] == 0:
                labels.pop()  # the first, partial month is too short to hold its label
            labels.append((col, day.strftime("%b")))
        x, y = left + (day - monday).days // 7 * cell, top + day.weekday() * cell
        cells.append({"x": x, "y": y, "iso": day.isoformat(), "verdict": days.get(day)})
        day += dt.timedelta(days=1)
    return {
        "width": left + weeks * cell + 4,
        "height": top + 7 * cell + 4,
        "first": first.isoformat(),
        "last": last.isoformat(),
        "size": cell - 2,
        "weekdays": weekdays,
        "days": cells,
        "months": [Text(left + c * cell, 11, 10, m) for c, m in labels],
    }


def _means(v: PartitionDoc, col: str) -> tuple[float | None, float | None]:
    """A column's live and shadow mean in one partition, where both are finite numbers."""
    m = v.metrics.column_changes.get(col)
    if m is None:
        return None, None
    return _num(m.mean_live), _num(m.mean_shadow)


def _plot_columns(verdicts: Sequence[PartitionDoc]) -> list[str]:
    """Columns whose means are worth a chart: those that failed or warned anywhere, then those
    with a change check (the expected-change columns); at most MAX_MEAN_CHARTS with a mean."""
    failing = [c.column for v in verdicts for c in reasons(v) if c.column]
    changing = [c.column for v in verdicts for c in v.checks if c.column and c.name in CHANGE_CHECKS]
    with_means = [
        col
        for col in dict.fromkeys([*failing, *changing])
        if any(x is not None for v in verdicts for x in _means(v, col))
    ]
    return with_means[:MAX_MEAN_CHARTS]


def _mean_chart(col: str, verdicts: Sequence[PartitionDoc]) -> dict[str, Any] | None:
    """A column's per-partition mean, live against shadow, over time; a partition without a
    numeric mean (None, a string, "inf") is a gap in the line, not a zero."""
    width, height = 900, 150
    pts = [(i, v.partition, *_means(v, col)) for i, v in enumerate(verdicts)]
    values = [x for p in pts for x in (p[2], p[3]) if x is not None]
    if not values:
        return None
    lo, hi = min(values), max(values)
    span = (hi - lo) or (abs(hi) or 1.0)
    step = (width - 70) / max(len(pts) - 1, 1)

    def xy(i: int, val: float) -> tuple[float, float]:
        return 60 + i * step, height - 8 - (val - lo) / span * (height - 24)

    series = []
    for idx, colour, side in ((0, LIVE, "live"), (1, SHADOW, "shadow")):
        have = [
            (i, val, f"{part} {side} mean: {val:.6g}") for i, part, *means in pts if (val := means[idx]) is not None
        ]
        series.append(_series(colour, have, xy))
    return {
        "column": col,
        "width": width,
        "height": height + 18,
        "label": f"{col} mean, live vs shadow",
        "top": Text(0, 14, 10, f"{hi:.4g}"),
        "bottom": Text(0, height - 8, 10, f"{lo:.4g}"),
        "series": series,
        "first": Text(60, height + 14, 10, pts[0][1]),
        "last": Text(width - 90, height + 14, 10, pts[-1][1]),
    }


def render_html(doc: ReportDoc) -> str:
    """The whole report as one self-contained page (inline CSS, SVG and one hashed script)."""
    verdicts = doc.partitions
    ordered = sorted(verdicts, key=lambda v: v.partition)
    means = [_mean_chart(c, ordered) for c in _plot_columns(ordered)]
    days = _daily_dates(verdicts)
    return render(
        "report.html.j2",
        title=report_title(doc),
        table_format=doc.format,
        generated_at=doc.generated_at,
        report_id=doc.report_id,
        script_hash=_SCRIPT_HASH,
        live=LIVE,
        shadow=SHADOW,
        skipped=skipped_count(doc),
        summary=[(str(k), doc.summary.get(k, 0)) for k in VERDICTS],
        verdicts=verdicts,
        calendar=_calendar(days) if days is not None else None,
        row_counts=_row_count_chart(verdicts),
        late=late_view(doc.late_arrivals),
        mean_charts=[m for m in means if m is not None],
        partitions=[_partition_view(v) for v in verdicts],
        payload={"partitions": len(verdicts), "summary": doc.summary},
    )
