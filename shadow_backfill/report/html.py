"""A self-contained HTML report: opens from disk, loads nothing from the network.

Plots are inline SVG drawn here (no charting library, no CDN): the partition grid coloured by
verdict, live vs shadow row counts over time, and per partition live-vs-shadow histograms,
category bars and null-rate bars next to the checks that failed. A small inline script adds a
"problems only" filter and marks the page as rendered (the headless-browser test looks for it).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from typing import Any

from shadow_backfill.report.model import ReportData
from shadow_backfill.state import VerdictRecord

COLOURS = {"pass": "#2e9e5b", "warn": "#e0a400", "fail": "#d64545"}
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
.fail{color:#d64545} .warn{color:#b58400} .pass{color:#2e9e5b}
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
  document.querySelectorAll('.cell').forEach(function(c){
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
    pts = [
        (v.partition, v.metrics.get("rows", {}).get("live") or 0, v.metrics.get("rows", {}).get("shadow") or 0)
        for v in verdicts
    ]
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


def _partition_detail(v: VerdictRecord) -> str:
    rows = v.metrics.get("rows", {})
    cols: dict[str, Any] = v.metrics.get("columns", {})
    plots = []
    nulls = [
        (c, m.get("live_null_rate", 0.0), m.get("shadow_null_rate", 0.0))
        for c, m in cols.items()
        if "shadow_null_rate" in m
    ]
    if nulls:
        plots.append(_null_bars(nulls))
    for c, m in cols.items():
        hist = m.get("hist")
        if hist:
            edges = hist["edges"]
            labels = [f"≤{edges[0]:.3g}"] + [f">{x:.3g}" for x in edges]
            plots.append(
                _bars(
                    f"{c}: distribution on live deciles (PSI {m.get('psi', 0):.3f})",
                    labels,
                    hist["live"],
                    hist["shadow"],
                )
            )
        cats = m.get("categories")
        if cats:
            labels = sorted(set(cats["live"]) | set(cats["shadow"]))
            plots.append(
                _bars(
                    f"{c}: categories",
                    labels,
                    [cats["live"].get(x, 0) for x in labels],
                    [cats["shadow"].get(x, 0) for x in labels],
                )
            )
    reasons = v.reasons
    table = ""
    if reasons:
        body = "".join(
            f'<tr><td class="{e(r.status)}">{e(r.status)}</td><td>{e(r.name)}</td>'
            f"<td>{e(r.column or '')}</td><td>{e(r.message)}</td></tr>"
            for r in reasons
        )
        table = (
            f"<table><tr><th>status</th><th>check</th><th>column</th><th>observed vs threshold</th></tr>{body}</table>"
        )
    keys = v.metrics.get("keys", {})
    key_line = ""
    if "added" in keys:
        key_line = (
            f"<p>keys: {e(keys.get('added'))} added, {e(keys.get('removed'))} removed, "
            f"{e(keys.get('changed'))} changed of {e(keys.get('matched'))} matched; "
            f"duplicates {e(keys.get('duplicates', 0))}</p>"
        )
    return (
        f'<details class="partition" id="p-{e(v.partition)}" data-verdict="{e(v.verdict)}"'
        f"{' open' if v.verdict == 'fail' else ''}>"
        f'<summary><span class="{e(v.verdict)}">■</span> {e(v.partition)} — {e(v.verdict)} '
        f'<span class="muted">rows {e(rows.get("live"))} → {e(rows.get("shadow"))}, {len(reasons)} reason(s)</span>'
        f'</summary>{table}{key_line}<div class="plots">{"".join(plots)}</div>'
        f'<p class="muted">shadow version {e(v.shadow_version)}, written by commit {e(v.partition_version)}, '
        f"live version {e(v.live_version)}</p></details>"
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


def render_html(data: ReportData) -> str:
    s = data.summary
    grid = "".join(
        f'<span class="cell" title="{e(v.partition)}: {e(v.verdict)}" data-partition="{e(v.partition)}" '
        f'style="background:{COLOURS.get(v.verdict, "#999")}"></span>'
        for v in data.verdicts
    )
    summary = "".join(
        f'<span style="background:{COLOURS[k]}">{e(s.get(k, 0))} {k}</span>' for k in ("pass", "warn", "fail")
    )
    details = "".join(_partition_detail(v) for v in data.verdicts)
    payload = _json_in_script({"partitions": len(data.verdicts), "summary": s})
    legend = (
        f'<span class="legend"><i style="background:{LIVE}"></i>live<i style="background:{SHADOW}"></i>shadow</span>'
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(data.title)}</title>
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<style>{CSS}</style></head>
<body>
<h1>{e(data.title)}</h1>
<p class="muted">{e(data.table_format)} · generated {e(data.generated_at)} · report {e(data.report_id)}
 · <span id="render-status">not rendered</span></p>
<div class="summary">{summary}</div>
<h2>Partitions by verdict</h2><div class="grid">{grid}</div>
<h2>Row counts: live vs shadow {legend}</h2>{_row_count_chart(data.verdicts)}
<h2>Partitions <label class="muted"><input type="checkbox" id="only-problems"> problems only</label> {legend}</h2>
{details}
<script type="application/json" id="report-data">{payload}</script>
<script>{SCRIPT}</script>
</body></html>
"""
