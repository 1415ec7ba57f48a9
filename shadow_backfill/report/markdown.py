"""A Markdown summary short enough for a pull-request comment.

Everything in it that comes from data (partition values, check names, messages, table names) is
escaped: GitHub and GitLab render inline HTML and Markdown, so a category value such as
`<img src=x onerror=...>` or a stray `|` must show up as text, not as markup or a broken table.
Below the per-partition table come the per-column changes of the partitions that did not pass
and a few sample rows of the failing ones: what a reviewer needs to judge the change in place.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

from shadow_backfill.document import PartitionDoc, ReportDoc
from shadow_backfill.report.model import reasons, report_title, skipped_count
from shadow_backfill.vocabulary import CheckStatus

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


def _fmt(v: Any, pct: bool = False) -> str:
    """A metric as short escaped text: numbers to 4 significant digits, None as a dash, anything
    else (such as a stored "inf") as it was stored."""
    if v is None:
        return "–"
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return f"{v:.3g}%" if pct else f"{v:.4g}"
    return md(v)


def _column_changes(bad: Sequence[PartitionDoc], max_rows: int) -> list[str]:
    """One row per (partition, column) that changed or gave a reason, for partitions that did
    not pass; empty when the validator recorded no column changes."""
    rows = []
    for v in bad:
        flagged = {r.column for r in reasons(v) if r.column}
        for col, m in v.metrics.column_changes.items():
            changed = m.changed
            if col not in flagged and not (changed is not None and changed > 0):
                continue
            rows.append(
                f"| {md(v.partition)} | {md(col)} | {_fmt(changed)} / {_fmt(m.matched)} "
                f"| {_fmt(m.mean_live)} | {_fmt(m.mean_shadow)} "
                f"| {_fmt(m.mean_change_pct, pct=True)} |"
            )
    if not rows:
        return []
    more = [f"\n…and {len(rows) - max_rows} more changed columns."] if len(rows) > max_rows else []
    return [
        "",
        "#### Column changes",
        "",
        "| partition | column | changed / matched | mean live | mean shadow | mean change % |",
        "|---|---|---|---|---|---|",
        *rows[:max_rows],
        *more,
    ]


def _scalar(v: Any) -> str:
    """A sample value as JSON shows it: null stays "null", not Python's "None"."""
    return "null" if v is None else str(v)


def _worst_samples(bad: Sequence[PartitionDoc], partitions: int = 10, per_partition: int = 3) -> list[str]:
    """The first samples (the validator orders them most important first) of the first failing
    partitions: a few concrete rows say more than a mean."""
    rows = []
    for v in [v for v in bad if v.verdict == CheckStatus.FAIL][:partitions]:
        for s in v.metrics.samples[:per_partition]:
            key_text = ", ".join(f"{k}={x}" for k, x in s.keys.items())
            rows.append(
                f"| {md(v.partition)} | {md(key_text)} | {md(s.column)} "
                f"| {md(_scalar(s.live))} | {md(_scalar(s.shadow))} |"
            )
    if not rows:
        return []
    return [
        "",
        "#### Worst samples",
        "",
        "| partition | keys | column | live | shadow |",
        "|---|---|---|---|---|",
        *rows,
    ]


def _approvals(bad: Sequence[PartitionDoc]) -> list[str]:
    """Who let held partitions into live, and why (`approve`), a line each."""
    approved = [v for v in bad if v.approval is not None]
    lines = ["", "**Approved into live:**", ""] if approved else []
    for v in approved:
        a = v.approval
        assert a is not None
        lines.append(f"- {md(v.partition)}: by {md(a.by)} ({md(a.at or '')}, {_code(a.promotion_id)}): {md(a.reason)}")
    return lines


def _late_arrivals(doc: ReportDoc) -> list[str]:
    """The late-arrival view by age (nightly windows only): what a lag is chosen from."""
    late = doc.late_arrivals
    if late is None:
        return []
    lines = ["", f"**Late arrivals** (by {late.unit}s after the partition's start):", ""]
    lines += [
        f"| age | partitions | rows | keys added | removed | changed | present by then, of those at {late.horizon} |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(a.cells()) + " |" for a in late.by_age]
    return lines


def render_markdown(doc: ReportDoc, max_rows: int = 50) -> str:
    """The summary line, then the partitions that did not pass, their column changes and samples."""
    s = doc.summary
    lines = [
        f"### {md(report_title(doc))}",
        "",
        f"**{s['pass']} pass · {s['warn']} warn · {s['fail']} fail** of {len(doc.partitions)} partitions "
        f"({md(doc.format)}; report {_code(doc.report_id)})",
        "",
    ]
    skipped = skipped_count(doc)
    if skipped:
        lines += [f"{skipped} checks skipped (not enough rows to judge).", ""]
    bad = [p for p in doc.partitions if p.verdict != CheckStatus.PASS]
    if not bad:
        lines.append("Every partition passed.")
        return "\n".join(lines + _late_arrivals(doc)) + "\n"
    lines += ["| partition | verdict | rows live → shadow | reasons |", "|---|---|---|---|"]
    for v in bad[:max_rows]:
        live, shadow = (n if n is not None else "" for n in (v.metrics.live_rows, v.metrics.shadow_rows))
        why = reasons(v)
        shown = "; ".join(md(r.message) for r in why[:4])
        more = f" (+{len(why) - 4} more)" if len(why) > 4 else ""
        lines.append(
            f"| {md(v.partition)} | {ICON.get(v.verdict, '')} {md(v.verdict)} "
            f"| {md(live)} → {md(shadow)} | {shown}{more} |"
        )
    if len(bad) > max_rows:
        lines.append(f"\n…and {len(bad) - max_rows} more partitions that did not pass.")
    lines += _approvals(bad)
    lines += _column_changes(bad, max_rows)
    lines += _worst_samples(bad)
    return "\n".join(lines + _late_arrivals(doc)) + "\n"
