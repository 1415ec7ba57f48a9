"""Reports from stored verdicts: HTML (with plots) to read, Markdown to paste, JSON and JUnit
for machines. They read only the state store, so reporting needs no Spark session."""

from __future__ import annotations

import os
from pathlib import Path

from shadow_backfill.report.html import render_html
from shadow_backfill.report.junit import render_junit
from shadow_backfill.report.markdown import render_markdown
from shadow_backfill.report.model import ReportData, approvals_in_force, report_document, report_text

__all__ = ["ReportData", "approvals_in_force", "write_reports"]


def write_reports(data: ReportData, out_dir: Path) -> dict[str, Path]:
    """Write all four outputs, each rendered from the one document model (report.json's), so
    they cannot disagree; returns their paths by kind. They quote data values (samples,
    categories), so a folder or file created here is readable by its owner only (0700, 0600);
    an existing one keeps its mode."""
    doc = report_document(data)
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths = {
        "html": out_dir / "report.html",
        "json": out_dir / "report.json",
        "markdown": out_dir / "report.md",
        "junit": out_dir / "junit.xml",
    }
    _write_private(paths["json"], report_text(doc))
    _write_private(paths["markdown"], render_markdown(doc))
    _write_private(paths["junit"], render_junit(doc))
    _write_private(paths["html"], render_html(doc))
    return paths


def _write_private(path: Path, text: str) -> None:
    """Replace `path`'s content with `text`; a new file is created 0600 (the mode is only applied
    on creation, so a file the user opened up keeps their choice)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
