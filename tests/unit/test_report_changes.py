"""The reports show change where a reader looks for it: daily partitions as a calendar, each
failing or expected-change column's mean over time (live against shadow), and per partition the
column-change table and sample rows; the Markdown summary has the per-column table and the worst
samples. Column names and sample values are data, so hostile ones must stay text.

No Spark needed (like test_safety_report.py, unmarked, so it runs in the `-m "not sail and not
cluster"` group): hand-made verdicts go through the real write_reports; the HTML is rendered by
headless Chromium and the Markdown by markdown-it-py, as GitHub would show it.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from support import chromium_dump_dom

from shadow_backfill.document import MetricsDoc
from shadow_backfill.report import ReportData, write_reports
from shadow_backfill.state import VerdictRecord
from shadow_backfill.vocabulary import Check, CheckStatus

HOSTILE = "<img src=x onerror=alert(1)> [/] | `x`"
EVIL_COL = "c|<img src=x onerror=alert(1)>[/]"
FAIL_DAY, WARN_DAY, GAP_DAY = "2024-01-15", "2024-02-10", "2024-01-10"
START = dt.date(2024, 1, 1)
DAYS = 60  # 2024-01-01 .. 2024-02-29


def _changes(amount_shadow: float, evil_changed: int) -> dict[str, Any]:
    return {
        "amount": {
            "matched": 100,
            "changed": 0 if amount_shadow == 10.0 else 40,
            "changed_share": 0.0 if amount_shadow == 10.0 else 0.4,
            "mean_live": 10.0,
            "mean_shadow": amount_shadow,
            "mean_change": abs(amount_shadow - 10.0),
            "mean_change_pct": abs(amount_shadow - 10.0) * 10,
            "sum_change_pct": None,
            "max_abs_diff": "inf",
            "mean_abs_diff": None,
            "null_rate_live": 0.0,
            "null_rate_shadow": 0.05,
            "null_rate_change": 0.05,
        },
        "score": {"matched": 100, "changed": 100, "mean_live": 1.0, "mean_shadow": 1.1, "mean_change_pct": 10.0},
        # numeric means only where it changed, and the shadow one not finite (stored as a string)
        EVIL_COL: {
            "matched": 100,
            "changed": evil_changed,
            "mean_live": 5 if evil_changed else None,
            "mean_shadow": "inf" if evil_changed else None,
        },
    }


def _record(day: str, word: str) -> VerdictRecord:
    verdict = CheckStatus(word)
    checks = [
        Check("mean_change_pct", "score", CheckStatus.PASS, 10.0, "expected 5..15", "score changed 10%"),
        Check("mean_shift", "amount", CheckStatus.SKIPPED, None, "", "not enough rows (4 < 100)"),
    ]
    samples: list[dict[str, Any]] = []
    amount_shadow, evil_changed = 10.0, 0
    if verdict != CheckStatus.PASS:
        amount_shadow, evil_changed = 12.0, 3
        checks += [
            Check("mean_change_pct", "amount", verdict, 20.0, "fail > 5", "amount mean changed 20%"),
            Check("changed_share", EVIL_COL, CheckStatus.WARN, 0.03, "warn > 0", f"{EVIL_COL} changed"),
        ]
        samples = [
            {"keys": {"id": 3, "region": "eu"}, "column": EVIL_COL, "live": "a", "shadow": HOSTILE},
            {"keys": {"id": 4}, "column": "amount", "live": 10, "shadow": 12.5},
            {"keys": {"id": 5}, "column": "amount", "live": None, "shadow": 1},
            {"keys": {"id": 6}, "column": "amount", "live": 1, "shadow": 2},  # beyond the 3 in Markdown
        ]
    metrics = {
        "rows": {"live": 100, "shadow": 100},
        "column_changes": _changes(amount_shadow, evil_changed),
        "samples": samples,
    }
    return VerdictRecord(day, verdict, checks, MetricsDoc.model_validate(metrics), 3, 2, 7, "vid", None)


def _daily() -> list[VerdictRecord]:
    days = [(START + dt.timedelta(days=i)).isoformat() for i in range(DAYS)]
    verdict = {FAIL_DAY: "fail", WARN_DAY: "warn"}
    return [_record(d, verdict.get(d, "pass")) for d in days if d != GAP_DAY]


@pytest.fixture
def reports(tmp_path: Path) -> dict[str, Path]:
    data = ReportData(live_table="lake.events", shadow_table="events_v2", table_format="delta", verdicts=_daily())
    return write_reports(data, tmp_path / "report")


def _calendar(page: str) -> str:
    assert '<svg class="calendar"' in page
    return page.split('<svg class="calendar"', 1)[1].split("</svg>", 1)[0]


def _detail(page: str, partition: str) -> str:
    return page.split(f'id="p-{partition}"', 1)[1].split("</details>", 1)[0]


def test_daily_partitions_render_as_a_calendar(reports: dict[str, Path]) -> None:
    page = reports["html"].read_text()
    cal = _calendar(page)
    assert cal.count("<rect") == DAYS, "one square per day of the range, the day without a verdict included"
    titles = re.findall(r"<title>([^<]*)</title>", cal)
    assert len(titles) == DAYS
    assert f"{FAIL_DAY}: fail" in titles and f"{WARN_DAY}: warn" in titles and "2024-01-01: pass" in titles
    assert f"{GAP_DAY}: no verdict" in titles
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", cal)
    assert {"Jan", "Feb"} <= set(labels) and {"Mon", "Sun"} <= set(labels)
    # Monday 2024-01-01 is the first row of the first week; Thursday 2024-02-29 the fourth of the ninth
    first = re.search(r'<rect x="(\d+)" y="(\d+)"[^>]*><title>2024-01-01: pass', cal)
    last = re.search(r'<rect x="(\d+)" y="(\d+)"[^>]*><title>2024-02-29: pass', cal)
    assert first and last
    assert (int(last[1]) - int(first[1]), int(last[2]) - int(first[2])) == (8 * 13, 3 * 13)
    # each day with a verdict links to its drill-down, which exists
    assert f'href="#p-{FAIL_DAY}"' in cal and f'id="p-{FAIL_DAY}"' in page
    assert f'href="#p-{GAP_DAY}"' not in cal
    assert 'class="grid"' not in page


def test_non_daily_partitions_keep_the_grid(tmp_path: Path) -> None:
    hours = [_record(f"2024-01-05T{h:02d}", "fail" if h == 3 else "pass") for h in range(6)]
    paths = write_reports(ReportData("live", "shadow", "delta", hours), tmp_path / "report")
    page = paths["html"].read_text()
    assert '<svg class="calendar"' not in page and page.count('class="cell"') == 6


def test_mean_charts_for_failing_and_expected_change_columns(reports: dict[str, Path]) -> None:
    page = reports["html"].read_text()
    charts = page.split('<div class="plot mean-chart"><div>')[1:]
    headings = [c.split("</div>", 1)[0] for c in charts]
    # amount failed, the hostile column warned (failures first), score has a change check
    evil = "c|&lt;img src=x onerror=alert(1)&gt;[/]"
    assert headings == [f"{h}: mean per partition" for h in ("amount", evil, "score")]
    # the hostile column's live mean is plotted where it has one; "inf" is not
    assert charts[1].count("<circle") == 2 and f"<title>{FAIL_DAY} live mean: 5</title>" in charts[1]
    assert charts[1].split("</svg>", 1)[0].count("<polyline") == 2  # live in two pieces (a gap), shadow none
    amount = charts[0]
    assert amount.count("<polyline") == 2  # live and shadow
    assert f"<title>{FAIL_DAY} shadow mean: 12</title>" in amount
    assert f"<title>{FAIL_DAY} live mean: 10</title>" in amount
    assert amount.count("<circle") == 2 * (DAYS - 1)
    assert "Column means: live vs shadow" in page


def test_drill_down_shows_column_changes_samples_and_skipped(reports: dict[str, Path]) -> None:
    page = reports["html"].read_text()
    detail = _detail(page, FAIL_DAY)
    changes = detail.split('<table class="changes">', 1)[1].split("</table>", 1)[0]
    assert "<th>mean change %</th>" in changes and "<th>null rate live → shadow</th>" in changes
    amount_row = changes.split("<td>amount</td>", 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r"<td>([^<]*)</td>", amount_row)
    assert cells == ["100", "40", "40.00%", "10", "12", "2", "20%", "inf", "0.00% → 5.00%"]
    samples = detail.split('<table class="samples">', 1)[1].split("</table>", 1)[0]
    assert "<td>id=3, region=eu</td>" in samples and samples.count("<tr>") == 5  # header + 4 samples
    assert "<td>id=5</td><td>amount</td><td>null</td><td>1</td>" in samples
    assert '<td class="skipped">skipped</td><td>mean_shift</td>' in detail
    assert "1 skipped" in detail
    assert "checks skipped (not enough rows)" in page


def test_hostile_column_and_sample_stay_text_in_chromium(reports: dict[str, Path], tmp_path: Path) -> None:
    page = reports["html"].read_text()
    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt; [/] | `x`" in page
    try:
        result = chromium_dump_dom(reports["html"], tmp_path / "ud", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the page never finished loading: a dialog opened by data (alert) blocks it")
    dom = result.stdout
    assert 'data-rendered="ok"' in dom, result.stderr[-2000:]
    assert f"rendered {DAYS - 1} partitions" in dom
    assert "<img" not in dom, "an <img> from data became an element"
    assert "c|&lt;img src=x onerror=alert(1)&gt;[/]" in dom
    assert f"<title>{FAIL_DAY}: fail</title>" in dom  # the hover survives rendering


def _tables(rendered: str) -> list[list[list[str]]]:
    """Each rendered table as rows of cell texts (header row included)."""
    out = []
    for table in rendered.split("<table>")[1:]:
        body = table.split("</table>", 1)[0]
        rows = [re.findall(r"<t[hd]>(.*?)</t[hd]>", r, re.S) for r in body.split("<tr>")[1:]]
        out.append(rows)
    return out


def test_markdown_has_column_changes_and_worst_samples(reports: dict[str, Path]) -> None:
    md = reports["markdown"].read_text()
    assert "#### Column changes" in md and "#### Worst samples" in md
    assert "59 checks skipped (not enough rows to judge)." in md
    assert "<img" not in md.lower()
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    assert "<img" not in rendered and "<a " not in rendered
    partitions, changes, samples = _tables(rendered)
    assert len(partitions) == 3  # header + the fail and the warn day
    assert changes[0] == ["partition", "column", "changed / matched", "mean live", "mean shadow", "mean change %"]
    assert all(len(r) == 6 for r in changes), "a | from data split a cell"
    assert {(r[0], r[1]) for r in changes[1:]} == {
        (d, c) for d in (FAIL_DAY, WARN_DAY) for c in ("amount", "score", "c|&lt;img src=x onerror=alert(1)&gt;[/]")
    }
    amount = next(r for r in changes[1:] if r[0] == FAIL_DAY and r[1] == "amount")
    assert amount[2:] == ["40 / 100", "10", "12", "20%"]
    evil = next(r for r in changes[1:] if r[0] == FAIL_DAY and r[1] != "amount" and r[1] != "score")
    assert evil[2:] == ["3 / 100", "5", "inf", "–"]
    # only the failing day's samples, its first three
    assert samples[0] == ["partition", "keys", "column", "live", "shadow"]
    assert all(len(r) == 5 for r in samples)
    assert [r[1] for r in samples[1:]] == ["id=3, region=eu", "id=4", "id=5"]
    assert samples[1][4] == "&lt;img src=x onerror=alert(1)&gt; [/] | `x`"
    assert samples[3][3] == "null"


def test_markdown_without_changes_has_no_new_sections(tmp_path: Path) -> None:
    rec = _record(FAIL_DAY, "fail")
    bare = VerdictRecord(
        rec.partition,
        CheckStatus.FAIL,
        rec.checks,
        MetricsDoc.model_validate({"rows": {"live": 1, "shadow": 1}}),
        1,
        1,
        1,
    )
    paths = write_reports(ReportData("live", "shadow", "delta", [bare]), tmp_path / "report")
    md = paths["markdown"].read_text()
    assert "Column changes" not in md and "Worst samples" not in md
    assert 'class="changes"' not in paths["html"].read_text()


def test_an_added_column_shows_what_shadow_holds(tmp_path: Path) -> None:
    """A column only shadow has (a declared new feature) gets its own table in the drill-down,
    its name escaped: values, null rate, min, mean and max; the null-rate plot leaves it out."""
    metrics = {
        "rows": {"live": 100, "shadow": 100},
        "schema": {"added": [EVIL_COL], "removed": [], "retyped": []},
        "columns": {
            EVIL_COL: {"shadow_count": 80, "shadow_null_rate": 0.2, "shadow_min": 1990.0, "shadow_mean": 2004.5},
            "amount": {"live_count": 100, "live_null_rate": 0.0, "shadow_count": 100, "shadow_null_rate": 0.0},
        },
    }
    metrics["columns"][EVIL_COL]["shadow_max"] = 2019.0
    record = VerdictRecord("2024-01-01", CheckStatus.PASS, [], MetricsDoc.model_validate(metrics), 3, 2, 7, "v", None)
    data = ReportData(live_table="lake.events", shadow_table="events_v2", table_format="delta", verdicts=[record])
    page = write_reports(data, tmp_path / "report")["html"].read_text()
    detail = _detail(page, "2024-01-01")
    table = detail.split('<table class="added">', 1)[1].split("</table>", 1)[0]
    assert "<img" not in table and "c|&lt;img src=x onerror=alert(1)&gt;[/]" in table
    assert [c for c in re.findall(r"<td>(.*?)</td>", table)][1:] == ["80", "20.00%", "1990", "2004", "2019"]
    assert "columns only shadow has" in detail
