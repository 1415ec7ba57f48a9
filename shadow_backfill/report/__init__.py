"""Reports from stored verdicts: HTML (with plots) to read, Markdown to paste, JSON and JUnit
for machines. They read only the state store, so reporting needs no Spark session."""

from __future__ import annotations

from pathlib import Path

from shadow_backfill.report.html import render_html
from shadow_backfill.report.junit import render_junit
from shadow_backfill.report.markdown import render_markdown
from shadow_backfill.report.model import ReportData, report_json

__all__ = ["ReportData", "write_reports"]


def write_reports(data: ReportData, out_dir: Path) -> dict[str, Path]:
    """Write all four outputs; returns their paths by kind."""
    import json

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "html": out_dir / "report.html",
        "json": out_dir / "report.json",
        "markdown": out_dir / "report.md",
        "junit": out_dir / "junit.xml",
    }
    paths["json"].write_text(json.dumps(report_json(data), indent=2, default=str) + "\n")
    paths["markdown"].write_text(render_markdown(data))
    paths["junit"].write_text(render_junit(data))
    paths["html"].write_text(render_html(data))
    return paths
