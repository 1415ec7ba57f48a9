"""Reports show hostile data as text: a partition value, column name, category or message that
holds HTML or Markdown must not become markup in report.html, report.md or junit.xml.

No Spark needed: verdicts go through the real state store and the real write_reports, and the
Markdown is rendered by a real CommonMark + tables renderer (markdown-it-py, which Rich ships
with) the way GitHub would show it in a pull-request comment.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from support import chromium_dump_dom

from shadow_backfill.document import MetricsDoc, ReportDoc
from shadow_backfill.report import ReportData, write_reports
from shadow_backfill.report.html import render_html
from shadow_backfill.report.junit import render_junit
from shadow_backfill.report.markdown import render_markdown
from shadow_backfill.state import StateStore, VerdictRecord
from shadow_backfill.vocabulary import Check, CheckStatus

SCRIPT = "<script>document.body.dataset.pwned='script'</script>"
IMG = "<img src=x onerror=\"document.body.dataset.pwned='img'\">"
ALERT = "<script>alert(1)</script>"
ALERT_IMG = "<img src=x onerror=alert(1)>"
QUOTES = "\"quotes\" & 'apostrophes'"
PIPES = "|pipes| and `ticks` and [link](javascript:alert(1)) and **bold**"
EVIL = [SCRIPT, IMG, ALERT, ALERT_IMG, QUOTES, PIPES]
SHADOW = "events_v2"


def _check(name: str, column: str | None, status: str, message: str) -> Check:
    return Check(name, column, CheckStatus(status), message, message, message)


def _verdict(partition: str, column: str, value: str) -> VerdictRecord:
    return VerdictRecord(
        partition,
        CheckStatus.FAIL,
        [
            _check(f"suite/0:expect_column_values_to_be_in_set({column})", column, "fail", f"bad value {value}"),
            _check("psi", column, "warn", value),
            _check("keys_added", None, "fail", f"multi\nline {value}"),
        ],
        MetricsDoc.model_validate(
            {
                "rows": {"live": 10, "shadow": 9},
                "keys": {"added": 1, "removed": 0, "changed": 0, "matched": 9, "duplicates": 0},
                "columns": {
                    column: {
                        "live_null_rate": 0.1,
                        "shadow_null_rate": 0.3,
                        "categories": {"live": {value: 3, "ok": 5}, "shadow": {value: 1, "ok": 8}},
                    },
                    "amount": {"hist": {"edges": [1.0, 2.0], "live": [1, 2, 3], "shadow": [3, 2, 1]}, "psi": 0.4},
                },
            }
        ),
    )


@pytest.fixture
def reports(tmp_path: Path) -> dict[str, Path]:
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    # Every payload appears as a partition value, a column name, a category and in messages.
    rotated = zip(EVIL, EVIL[1:] + EVIL[:1], EVIL[2:] + EVIL[:2], strict=True)
    store.save_verdicts(SHADOW, [_verdict(p, c, v) for p, c, v in rotated])
    records = store.verdicts(SHADOW)
    store.close()
    assert len(records) == len(EVIL)
    data = ReportData(
        live_table=f"lake.{ALERT}", shadow_table=SHADOW, table_format="delta", verdicts=list(records.values())
    )
    return write_reports(data, tmp_path / "report")


class _Tags(HTMLParser):
    """Every element and attribute the browser would build, and all text it would show."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(markup: str) -> _Tags:
    parser = _Tags()
    parser.feed(markup)
    parser.close()
    return parser


def _no_markup_from_data(parsed: _Tags, allowed_scripts: int) -> None:
    names = [t for t, _ in parsed.tags]
    assert "img" not in names, "an <img> from data became an element"
    assert names.count("script") == allowed_scripts, "a <script> from data became an element"
    handlers = [(t, a) for t, attrs in parsed.tags for a in attrs if a.startswith("on")]
    assert not handlers, f"event handler attributes from data: {handlers}"
    hrefs = [attrs.get("href") for t, attrs in parsed.tags if t == "a"]
    assert not hrefs, f"links from data: {hrefs}"


def test_html_report_shows_hostile_data_as_text(reports: dict[str, Path]) -> None:
    page = reports["html"].read_text()
    parsed = _parse(page)
    _no_markup_from_data(parsed, allowed_scripts=2)  # the JSON data block and the report's own script
    text = "".join(parsed.text)
    for payload in EVIL:
        assert payload in text, f"{payload!r} is not shown as text"
    # column names reach SVG <title> elements too (the null-rate bars)
    titles = page.split("<title>")[2:]
    assert any(f"{IMG} live" in _parse(t.split("</title>")[0]).text[0] for t in titles)
    # attribute values keep their quotes escaped: no attribute was cut short by data
    cells = [attrs for t, attrs in parsed.tags if t == "span" and "data-partition" in attrs]
    assert sorted(str(a["data-partition"]) for a in cells) == sorted(EVIL)
    data_block = page.split('id="report-data">')[1].split("</script>")[0]
    assert "<" not in data_block and json.loads(data_block)["partitions"] == len(EVIL)


def test_the_content_security_policy_allows_the_page_script(reports: dict[str, Path]) -> None:
    """The script runs only by its hash: the page must hold report.js exactly as html.py hashed it
    (a whitespace control added to the template's include would otherwise block the script)."""
    page = reports["html"].read_text()
    assert page.count("<script>") == 1
    script = page.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page


def test_markdown_report_renders_hostile_data_as_text(reports: dict[str, Path]) -> None:
    md = reports["markdown"].read_text()
    assert "<script" not in md.lower() and "<img" not in md.lower()
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    parsed = _parse(rendered)
    _no_markup_from_data(parsed, allowed_scripts=0)
    names = [t for t, _ in parsed.tags]
    assert "strong" in names  # the summary line's own bold survives
    assert names.count("strong") == 1, "** from data became bold text"
    assert "code" in names and names.count("code") == 1, "backticks from data became code spans"
    # one header row and one row per partition, each with exactly four cells
    assert names.count("tr") == 1 + len(EVIL)
    assert names.count("td") == 4 * len(EVIL), "a | from data split a table cell"
    text = "".join(parsed.text)
    for payload in EVIL:
        assert payload in text, f"{payload!r} is not shown as text"


def test_junit_and_json_keep_hostile_data_exact(reports: dict[str, Path]) -> None:
    root = ET.parse(reports["junit"]).getroot()
    messages = {f.get("message") for f in root.iter("failure")}
    assert {f"bad value {p}" for p in EVIL} <= messages
    assert not list(root.iter("script")) and not list(root.iter("img"))
    doc = json.loads(reports["json"].read_text())
    ReportDoc.model_validate(doc)  # hostile text still makes a document of the published schema
    assert sorted(p["partition"] for p in doc["partitions"]) == sorted(EVIL)


def test_every_report_renders_the_published_document(reports: dict[str, Path]) -> None:
    """The Markdown, JUnit and HTML reports are functions of report.json's model alone: read back
    from the file, hostile text and all, the document renders the very bytes written beside it."""
    doc = ReportDoc.model_validate(json.loads(reports["json"].read_text()))
    assert render_markdown(doc) == reports["markdown"].read_text()
    assert render_junit(doc) == reports["junit"].read_text()
    assert render_html(doc) == reports["html"].read_text()


def test_control_characters_do_not_break_junit(tmp_path: Path) -> None:
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    store.save_verdicts(SHADOW, [_verdict("2024-01-01", "col\x1b[31m", "bell\x07 nul\x00")])
    data = ReportData("live", SHADOW, "delta", list(store.verdicts(SHADOW).values()))
    store.close()
    paths = write_reports(data, tmp_path / "report")
    root = ET.parse(paths["junit"]).getroot()  # raises on characters XML 1.0 cannot hold
    assert any("bell\ufffd nul\ufffd" in (f.get("message") or "") for f in root.iter("failure"))


def test_hostile_html_report_runs_no_injected_script_in_chromium(reports: dict[str, Path], tmp_path: Path) -> None:
    try:
        result = chromium_dump_dom(reports["html"], tmp_path / "ud", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the page never finished loading: a dialog opened by data (alert) blocks it")
    dom = result.stdout
    assert 'data-rendered="ok"' in dom, result.stderr[-2000:]  # the report's own script still runs
    assert f"rendered {len(EVIL)} partitions" in dom
    assert "data-pwned" not in dom, "a script from data ran"
    assert "<img" not in dom, "an <img> from data became an element"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
