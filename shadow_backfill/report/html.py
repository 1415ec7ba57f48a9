"""A self-contained HTML report: opens from disk, loads nothing from the network.

Plots are inline SVG drawn here (no charting library, no CDN): daily partitions as a calendar
(other granularities as a grid) coloured by verdict, live vs shadow row counts over time, the
per-partition mean of each failing or expected-change column (live against shadow), and per
partition the column-change table, sample rows that differ, live-vs-shadow histograms, category
bars and null-rate bars next to the checks that failed. Hover text is SVG `<title>`, so it needs
no script. A small inline script adds a "problems only" filter, opens a partition's drill-down
from the grid or calendar, and marks the page as rendered (the headless-browser test looks for it).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from shadow_backfill.document import KeyDiffDoc
from shadow_backfill.report.model import ReportData
from shadow_backfill.state import VerdictRecord
from shadow_backfill.vocabulary import NO_VERDICT_COLOUR as NO_VERDICT
from shadow_backfill.vocabulary import VERDICT_COLOURS as COLOURS
from shadow_backfill.vocabulary import VERDICTS, CheckStatus

# Checks that measure how much a column changed: a column with one is meant to change, so its
# means are plotted next to those of the columns that failed or warned.
CHANGE_CHECKS = ("mean_change", "mean_change_pct", "sum_change_pct", "changed_share", "max_abs_diff", "mean_abs_diff")
MAX_MEAN_CHARTS = 6
_DAILY = re.compile(r"\d{4}-\d{2}-\d{2}")
LIVE, SHADOW = "#5b7bd6", "#e07b39"

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px} h2{font-size:16px;margin-top:28px} .muted{color:#777}
.summary span{display:inline-block;padding:4px 10px;border-radius:4px;color:#fff;margin-right:6px}
.grid{display:flex;flex-wrap:wrap;gap:3px;margin:8px 0}
.cell{width:22px;height:22px;border-radius:3px;display:inline-block;cursor:pointer}
details{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:6px 10px}
summary{cursor:pointer;font-weight:600}
table{border-collapse:collapse;font-size:13px;margin:6px 0} td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
.fail{color:#d64545} .warn{color:#b58400} .pass{color:#2e9e5b} .skipped{color:#888}
caption{text-align:left;font-weight:600;padding:4px 0}
.plots{display:flex;flex-wrap:wrap;gap:14px} .plot{font-size:12px}
.legend i{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px}
"""

SCRIPT = """
(function(){
  var box = document.getElementById('only-problems');
  box.addEventListener('change', function(){
    document.querySelectorAll('details.partition').forEach(function(d){
      d.style.display = (box.checked && d.dataset.verdict === 'pass') ? 'none' : '';
    });
  });
  document.querySelectorAll('.cell, .day').forEach(function(c){
    c.addEventListener('click', function(){
      var d = document.getElementById('p-' + c.dataset.partition);
      if (d) { d.open = true; d.scrollIntoView(); }
    });
  });
  var data = JSON.parse(document.getElementById('report-data').textContent);
  document.getElementById('render-status').textContent = 'rendered ' + data.partitions + ' partitions';
  document.body.dataset.rendered = 'ok';
})();
"""

# Only SCRIPT may run: it is allowed by its hash, not by 'unsafe-inline', so a script or an
# on* handler that ever slipped past escaping would still be blocked by the browser.
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
CSP = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; img-src data:"


def e(v: Any) -> str:
    """Every value from data goes through here: text, attribute values and SVG titles alike."""
    return html.escape(str(v), quote=True)


def _json_in_script(value: Any) -> str:
    """JSON inside <script>: with <, > and & as \\u escapes, no data can close the element or
    open a comment that swallows the script after it; JSON.parse reads them back unchanged."""
    text = json.dumps(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _bars(
    title: str,
    labels: Sequence[str],
    live: Sequence[float],
    shadow: Sequence[float],
    width: int = 320,
    height: int = 140,
) -> str:
    """Grouped bars, live vs shadow, as shares of each side's total."""
    if not labels:
        return ""
    lt, st = sum(live) or 1.0, sum(shadow) or 1.0
    lp, sp = [x / lt for x in live], [x / st for x in shadow]
    top = max([*lp, *sp, 1e-9])
    n = len(labels)
    slot = (width - 30) / n
    bw = max(slot / 2 - 1, 1)
    parts = [f'<svg width="{width}" height="{height + 30}" role="img" aria-label="{e(title)}">']
    for i in range(n):
        x = 25 + i * slot
        for j, (val, colour) in enumerate(((lp[i], LIVE), (sp[i], SHADOW))):
            h = val / top * height
            parts.append(
                f'<rect x="{x + j * bw:.1f}" y="{height - h:.1f}" width="{bw:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{e(labels[i])}: {val:.1%}</title></rect>'
            )
        if n <= 12:
            parts.append(f'<text x="{x:.1f}" y="{height + 12}" font-size="9">{e(str(labels[i])[:8])}</text>')
    parts.append(f'<line x1="22" y1="{height}" x2="{width}" y2="{height}" stroke="#999"/></svg>')
    return f'<div class="plot"><div>{e(title)}</div>{"".join(parts)}</div>'


def _row_count_chart(verdicts: Sequence[VerdictRecord], width: int = 900, height: int = 180) -> str:
    pts = [(v.partition, v.metrics.live_rows or 0, v.metrics.shadow_rows or 0) for v in verdicts]
    if not pts:
        return ""
    top = max(max(p[1], p[2]) for p in pts) or 1
    n = len(pts)
    step = (width - 60) / max(n - 1, 1)

    def line(idx: int, colour: str) -> str:
        coords = " ".join(
            f"{50 + i * step:.1f},{height - float(p[idx]) / top * (height - 20):.1f}" for i, p in enumerate(pts)
        )
        dots = "".join(
            f'<circle cx="{50 + i * step:.1f}" cy="{height - float(p[idx]) / top * (height - 20):.1f}" r="2.5" '
            f'fill="{colour}"><title>{e(p[0])}: {e(p[idx])}</title></circle>'
            for i, p in enumerate(pts)
        )
        return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}"/>{dots}'

    return (
        f'<svg width="{width}" height="{height + 24}" role="img" aria-label="row counts">'
        f'<text x="0" y="12" font-size="10">{e(top)}</text><text x="0" y="{height}" font-size="10">0</text>'
        f"{line(1, LIVE)}{line(2, SHADOW)}"
        f'<text x="50" y="{height + 18}" font-size="10">{e(pts[0][0])}</text>'
        f'<text x="{width - 80}" y="{height + 18}" font-size="10">{e(pts[-1][0])}</text></svg>'
    )


def _num(v: Any) -> float | None:
    """A finite number, or None: metrics store None for "no value" and non-finite floats as
    strings ("inf"), and neither can be placed on an axis."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _fmt(v: Any, pct: bool = False, share: bool = False) -> str:
    """A metric as short text (escaped): numbers to 4 significant digits, shares as percentages,
    None as a dash, anything else (such as "inf") as it was stored."""
    if v is None:
        return "–"
    n = _num(v)
    if n is None:
        return e(v)
    if share:
        return f"{n:.2%}"
    return f"{n:.3g}%" if pct else e(f"{n:.4g}")


def _checks_table(v: VerdictRecord) -> str:
    """The checks that made the verdict, then the ones not judged (grey "skipped"), so a check
    that was skipped never reads as passed."""
    shown = [*v.reasons, *(c for c in v.checks if c.status == CheckStatus.SKIPPED)]
    if not shown:
        return ""
    body = "".join(
        f'<tr><td class="{e(r.status)}">{e(r.status)}</td><td>{e(r.name)}</td>'
        f"<td>{e(r.column or '')}</td><td>{e(r.message)}</td></tr>"
        for r in shown
    )
    return f"<table><tr><th>status</th><th>check</th><th>column</th><th>observed vs threshold</th></tr>{body}</table>"


def _change_table(v: VerdictRecord) -> str:
    """How much each compared column changed in this partition, in the author's units."""
    changes = v.metrics.column_changes
    if not changes:
        return ""
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "column",
            "matched",
            "changed",
            "changed share",
            "mean live",
            "mean shadow",
            "mean change",
            "mean change %",
            "max |diff|",
            "null rate live → shadow",
        )
    )
    rows = []
    for col, m in changes.items():
        cells = [
            e(col),
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
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return f'<table class="changes"><caption>column changes</caption><tr>{head}</tr>{"".join(rows)}</table>'


def _scalar(v: Any) -> str:
    """A sample value as JSON shows it: null stays "null", not Python's "None"."""
    return "null" if v is None else str(v)


def _keys_text(keys: Any) -> str:
    """A sample's key as `k=v, ...` (not escaped: the caller escapes)."""
    if isinstance(keys, dict):
        return ", ".join(f"{k}={val}" for k, val in keys.items())
    return str(keys)


def _samples_table(v: VerdictRecord) -> str:
    """Rows whose value differs, most important first, as the validator ordered them."""
    samples = v.metrics.samples
    if not samples:
        return ""
    body = "".join(
        f"<tr><td>{e(_keys_text(s.keys))}</td><td>{e(s.column)}</td>"
        f"<td>{e(_scalar(s.live))}</td><td>{e(_scalar(s.shadow))}</td></tr>"
        for s in samples
    )
    return (
        '<table class="samples"><caption>sample rows that differ</caption>'
        f"<tr><th>keys</th><th>column</th><th>live</th><th>shadow</th></tr>{body}</table>"
    )


def _distribution_plots(v: VerdictRecord) -> list[str]:
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
        if (cats := m.categories) is not None:
            labels = sorted(set(cats.live) | set(cats.shadow))
            plots.append(
                _bars(
                    f"{c}: categories",
                    labels,
                    [cats.live.get(x, 0) for x in labels],
                    [cats.shadow.get(x, 0) for x in labels],
                )
            )
    return plots


def _edge(x: Any) -> str:
    """A bin edge as a short label; a non-finite one ("inf") as it was stored."""
    n = _num(x)
    return f"{n:.3g}" if n is not None else str(x)


def _partition_detail(v: VerdictRecord) -> str:
    """One partition's drill-down: why it got its verdict, what changed, and example rows."""
    skipped = sum(1 for c in v.checks if c.status == CheckStatus.SKIPPED)
    keys = v.metrics.keys
    key_line = ""
    if isinstance(keys, KeyDiffDoc):
        key_line = (
            f"<p>keys: {e(keys.added)} added, {e(keys.removed)} removed, "
            f"{e(keys.changed)} changed of {e(keys.matched)} matched; "
            f"duplicates {e(keys.duplicates)}</p>"
        )
    return (
        f'<details class="partition" id="p-{e(v.partition)}" data-verdict="{e(v.verdict)}"'
        f"{' open' if v.verdict == CheckStatus.FAIL else ''}>"
        f'<summary><span class="{e(v.verdict)}">■</span> {e(v.partition)} — {e(v.verdict)} '
        f'<span class="muted">rows {e(v.metrics.live_rows)} → {e(v.metrics.shadow_rows)}, {len(v.reasons)} reason(s)'
        f"{f', {skipped} skipped' if skipped else ''}</span>"
        f"</summary>{_checks_table(v)}{key_line}{_change_table(v)}{_added_table(v)}{_samples_table(v)}"
        f'<div class="plots">{"".join(_distribution_plots(v))}</div>'
        f'<p class="muted">shadow version {e(v.shadow_version)}, written by commit {e(v.partition_version)}, '
        f"live version {e(v.live_version)}</p></details>"
    )


def _added_table(v: VerdictRecord) -> str:
    """Columns only shadow has (a logic change that adds them): no live side to compare with, so
    what they hold is shown, for the author to check against what they meant."""
    names = set(v.metrics.schema_.added) if v.metrics.schema_ is not None else set()
    added = {c: m for c, m in v.metrics.columns.items() if c in names and m.shadow_count is not None}
    if not added:
        return ""
    body = "".join(
        f"<tr><td>{e(c)}</td><td>{_fmt(m.shadow_count)}</td><td>{_fmt(m.shadow_null_rate, share=True)}</td>"
        f"<td>{_fmt(m.shadow_min)}</td><td>{_fmt(m.shadow_mean)}</td><td>{_fmt(m.shadow_max)}</td></tr>"
        for c, m in added.items()
    )
    head = "".join(f"<th>{h}</th>" for h in ("column", "values", "null rate", "min", "mean", "max"))
    return f'<table class="added"><caption>columns only shadow has</caption><tr>{head}</tr>{body}</table>'


def _daily_dates(verdicts: Sequence[VerdictRecord]) -> dict[dt.date, str] | None:
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


def _calendar(days: dict[dt.date, str], cell: int = 13) -> str:
    """Daily partitions as a calendar: one column per week, Monday..Sunday down, a month label
    above the week a month starts in; each day's <title> is its hover, and it links to the
    partition's drill-down. Days in the range without a verdict are light grey."""
    first, last = min(days), max(days)
    monday = first - dt.timedelta(days=first.weekday())
    left, top = 30, 16
    weeks = (last - monday).days // 7 + 1
    parts = [
        f'<svg class="calendar" width="{left + weeks * cell + 4}" height="{top + 7 * cell + 4}" role="img" '
        f'aria-label="partitions by day, {first.isoformat()} to {last.isoformat()}">'
    ]
    for i, name in enumerate(("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")):
        parts.append(f'<text x="0" y="{top + i * cell + 10}" font-size="9">{name}</text>')
    labels: list[tuple[int, str]] = [(0, first.strftime("%b"))]
    day = first
    while day <= last:
        if day.day == 1 and day != first:
            col = (day - monday).days // 7
            if labels and col - labels[-1][0] < 2 and labels[-1][0] == 0:
                labels.pop()  # the first, partial month is too short to hold its label
            labels.append((col, day.strftime("%b")))
        x, y = left + (day - monday).days // 7 * cell, top + day.weekday() * cell
        iso, verdict = day.isoformat(), days.get(day)
        rect = f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" rx="2" '
        if verdict is None:
            parts.append(f'{rect}fill="{NO_VERDICT}"><title>{iso}: no verdict</title></rect>')
        else:
            parts.append(
                f'<a href="#p-{iso}" class="day" data-partition="{iso}">{rect}'
                f'fill="{COLOURS.get(verdict, NO_VERDICT)}"><title>{iso}: {e(verdict)}</title></rect></a>'
            )
        day += dt.timedelta(days=1)
    parts += [f'<text x="{left + c * cell}" y="11" font-size="10">{m}</text>' for c, m in labels]
    return "".join(parts) + "</svg>"


def _means(v: VerdictRecord, col: str) -> tuple[float | None, float | None]:
    """A column's live and shadow mean in one partition, where both are finite numbers."""
    m = v.metrics.column_changes.get(col)
    if m is None:
        return None, None
    return _num(m.mean_live), _num(m.mean_shadow)


def _plot_columns(verdicts: Sequence[VerdictRecord]) -> list[str]:
    """Columns whose means are worth a chart: those that failed or warned anywhere, then those
    with a change check (the expected-change columns); at most MAX_MEAN_CHARTS with a mean."""
    failing = [c.column for v in verdicts for c in v.reasons if c.column]
    changing = [c.column for v in verdicts for c in v.checks if c.column and c.name in CHANGE_CHECKS]
    with_means = [
        col
        for col in dict.fromkeys([*failing, *changing])
        if any(x is not None for v in verdicts for x in _means(v, col))
    ]
    return with_means[:MAX_MEAN_CHARTS]


def _mean_chart(col: str, verdicts: Sequence[VerdictRecord], width: int = 900, height: int = 150) -> str:
    """A column's per-partition mean, live against shadow, over time; a partition without a
    numeric mean (None, a string, "inf") is a gap in the line, not a zero."""
    pts = [(i, v.partition, *_means(v, col)) for i, v in enumerate(verdicts)]
    values = [x for p in pts for x in (p[2], p[3]) if x is not None]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = (hi - lo) or (abs(hi) or 1.0)
    step = (width - 70) / max(len(pts) - 1, 1)

    def xy(i: int, val: float) -> str:
        return f"{60 + i * step:.1f},{height - 8 - (val - lo) / span * (height - 24):.1f}"

    lines = []
    for idx, colour, side in ((0, LIVE, "live"), (1, SHADOW, "shadow")):
        have = [(i, part, val) for i, part, *means in pts if (val := means[idx]) is not None]
        runs: list[list[str]] = []  # a partition without a mean breaks the line
        for n, (i, _, val) in enumerate(have):
            if n == 0 or i != have[n - 1][0] + 1:
                runs.append([])
            runs[-1].append(xy(i, val))
        lines += [f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{" ".join(r)}"/>' for r in runs]
        for i, part, val in have:
            cx, cy = xy(i, val).split(",")
            lines.append(
                f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{colour}">'
                f"<title>{e(part)} {side} mean: {e(f'{val:.6g}')}</title></circle>"
            )
    return (
        f'<div class="plot mean-chart"><div>{e(col)}: mean per partition</div>'
        f'<svg width="{width}" height="{height + 18}" role="img" aria-label="{e(col)} mean, live vs shadow">'
        f'<text x="0" y="14" font-size="10">{e(f"{hi:.4g}")}</text>'
        f'<text x="0" y="{height - 8}" font-size="10">{e(f"{lo:.4g}")}</text>{"".join(lines)}'
        f'<text x="60" y="{height + 14}" font-size="10">{e(pts[0][1])}</text>'
        f'<text x="{width - 90}" y="{height + 14}" font-size="10">{e(pts[-1][1])}</text></svg></div>'
    )


def _null_bars(nulls: Sequence[tuple[str, float, float]], width: int = 320) -> str:
    h = 16 * len(nulls) + 10
    parts = [f'<svg width="{width}" height="{h}" role="img" aria-label="null rates">']
    for i, (c, lv, sv) in enumerate(nulls):
        y = 5 + i * 16
        parts.append(f'<text x="0" y="{y + 10}" font-size="10">{e(c[:14])}</text>')
        for j, (val, colour) in enumerate(((lv, LIVE), (sv, SHADOW))):
            parts.append(
                f'<rect x="95" y="{y + j * 6}" width="{max(val, 0) * (width - 100):.1f}" height="5" '
                f'fill="{colour}"><title>{e(c)} {"live" if j == 0 else "shadow"}: {val:.2%}</title></rect>'
            )
    parts.append("</svg>")
    return f'<div class="plot"><div>null rates</div>{"".join(parts)}</div>'


def _verdict_overview(verdicts: Sequence[VerdictRecord]) -> str:
    """Daily partitions as a calendar; any other granularity as a grid of squares."""
    days = _daily_dates(verdicts)
    if days is not None:
        return _calendar(days)
    grid = "".join(
        f'<span class="cell" title="{e(v.partition)}: {e(v.verdict)}" data-partition="{e(v.partition)}" '
        f'style="background:{COLOURS.get(v.verdict, NO_VERDICT)}"></span>'
        for v in verdicts
    )
    return f'<div class="grid">{grid}</div>'


def _mean_charts(verdicts: Sequence[VerdictRecord], legend: str) -> str:
    """One mean-over-time chart per failing or expected-change column, or nothing."""
    ordered = sorted(verdicts, key=lambda v: v.partition)
    charts = "".join(_mean_chart(c, ordered) for c in _plot_columns(ordered))
    return f"<h2>Column means: live vs shadow {legend}</h2>{charts}" if charts else ""


def render_html(data: ReportData) -> str:
    """The whole report as one self-contained page (inline CSS, SVG and one hashed script)."""
    s = data.summary
    skipped = sum(1 for v in data.verdicts for c in v.checks if c.status == CheckStatus.SKIPPED)
    skipped_note = f" · {skipped} checks skipped (not enough rows)" if skipped else ""
    summary = "".join(f'<span style="background:{COLOURS[k]}">{e(s.get(k, 0))} {k}</span>' for k in VERDICTS)
    details = "".join(_partition_detail(v) for v in data.verdicts)
    payload = _json_in_script({"partitions": len(data.verdicts), "summary": s})
    legend = (
        f'<span class="legend"><i style="background:{LIVE}"></i>live<i style="background:{SHADOW}"></i>shadow</span>'
    )
    overview = _verdict_overview(data.verdicts)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(data.title)}</title>
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<style>{CSS}</style></head>
<body>
<h1>{e(data.title)}</h1>
<p class="muted">{e(data.table_format)} · generated {e(data.generated_at)} · report {e(data.report_id)}
 · <span id="render-status">not rendered</span>{skipped_note}</p>
<div class="summary">{summary}</div>
<h2>Partitions by verdict</h2>{overview}
<h2>Row counts: live vs shadow {legend}</h2>{_row_count_chart(data.verdicts)}
{_mean_charts(data.verdicts, legend)}
<h2>Partitions <label class="muted"><input type="checkbox" id="only-problems"> problems only</label> {legend}</h2>
{details}
<script type="application/json" id="report-data">{payload}</script>
<script>{SCRIPT}</script>
</body></html>
"""
