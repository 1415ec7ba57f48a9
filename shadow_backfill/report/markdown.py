"""A Markdown summary short enough for a pull-request comment.

Everything in it that comes from data (partition values, check names, messages, table names) is
escaped: GitHub and GitLab render inline HTML and Markdown, so a category value such as
`<img src=x onerror=...>` or a stray `|` must show up as text, not as markup or a broken table.
"""

from __future__ import annotations

import html
import re
from typing import Any

from shadow_backfill.report.model import ReportData

ICON = {"pass": "✅", "warn": "⚠️", "fail": "❌"}

# Characters that start Markdown syntax inside a line (emphasis, links, images, code, tables,
# strikethrough); each is backslash-escaped, which CommonMark defines for any ASCII punctuation.
_MD_SPECIAL = re.compile(r"([\\*_\[\]|~!])")


def md(value: Any) -> str:
    """Data as inert Markdown text on one line, safe inside a table cell."""
    text = html.escape(" ".join(str(value).split()), quote=False)
    # Backticks cannot be backslash-escaped reliably in table cells; the entity renders as one.
    return _MD_SPECIAL.sub(r"\\\1", text).replace("`", "&#96;")


def _code(value: str) -> str:
    """An identifier in a code span when it is plain, else as escaped text."""
    return f"`{value}`" if re.fullmatch(r"[\w.-]+", value) else md(value)


def render_markdown(data: ReportData, max_rows: int = 50) -> str:
    s = data.summary
    lines = [
        f"### {md(data.title)}",
        "",
        f"**{s['pass']} pass · {s['warn']} warn · {s['fail']} fail** of {len(data.verdicts)} partitions "
        f"({md(data.table_format)}; report {_code(data.report_id)})",
        "",
    ]
    bad = [v for v in data.verdicts if v.verdict != "pass"]
    if not bad:
        lines.append("Every partition passed.")
        return "\n".join(lines) + "\n"
    lines += ["| partition | verdict | rows live → shadow | reasons |", "|---|---|---|---|"]
    for v in bad[:max_rows]:
        rows = v.metrics.get("rows", {})
        reasons = "; ".join(md(r.message) for r in v.reasons[:4])
        more = f" (+{len(v.reasons) - 4} more)" if len(v.reasons) > 4 else ""
        lines.append(
            f"| {md(v.partition)} | {ICON.get(v.verdict, '')} {md(v.verdict)} "
            f"| {md(rows.get('live', ''))} → {md(rows.get('shadow', ''))} | {reasons}{more} |"
        )
    if len(bad) > max_rows:
        lines.append(f"\n…and {len(bad) - max_rows} more partitions that did not pass.")
    return "\n".join(lines) + "\n"
