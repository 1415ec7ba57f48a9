"""A Markdown summary short enough for a pull-request comment."""

from __future__ import annotations

from shadow_backfill.report.model import ReportData

ICON = {"pass": "✅", "warn": "⚠️", "fail": "❌"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(data: ReportData, max_rows: int = 50) -> str:
    s = data.summary
    lines = [
        f"### {data.title}",
        "",
        f"**{s['pass']} pass · {s['warn']} warn · {s['fail']} fail** of {len(data.verdicts)} partitions "
        f"({data.table_format}; report `{data.report_id}`)",
        "",
    ]
    bad = [v for v in data.verdicts if v.verdict != "pass"]
    if not bad:
        lines.append("Every partition passed.")
        return "\n".join(lines) + "\n"
    lines += ["| partition | verdict | rows live → shadow | reasons |", "|---|---|---|---|"]
    for v in bad[:max_rows]:
        rows = v.metrics.get("rows", {})
        reasons = "; ".join(_cell(r["message"]) for r in v.reasons[:4])
        more = f" (+{len(v.reasons) - 4} more)" if len(v.reasons) > 4 else ""
        lines.append(
            f"| {v.partition} | {ICON[v.verdict]} {v.verdict} | {rows.get('live', '')} → {rows.get('shadow', '')} "
            f"| {reasons}{more} |"
        )
    if len(bad) > max_rows:
        lines.append(f"\n…and {len(bad) - max_rows} more partitions that did not pass.")
    return "\n".join(lines) + "\n"
