"""The pipeline's report: one calendar strip per layer and one for the pipeline's verdict, and
for every partition that did not pass, the layers and checks that held it back. JSON for
scripts, Markdown for a pull request, HTML for people. Every data-derived string is escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from shadow_backfill.documents import dump
from shadow_backfill.documents.pipeline import (
    PIPELINE_SCHEMA_VERSION,
    CrossCheckDoc,
    LayerVerdict,
    PipelineDoc,
    PipelinePartitionDoc,
)
from shadow_backfill.pipeline.gate import PipelineVerdict
from shadow_backfill.report.markdown import ICON, md
from shadow_backfill.vocabulary import NO_VERDICT_COLOUR, VERDICT_COLOURS


def pipeline_document(name: str, order: Sequence[str], verdicts: Sequence[PipelineVerdict]) -> PipelineDoc:
    """pipeline.json: per partition, each layer's verdict (null: not validated; `blocked`),
    the cross-layer checks, the pipeline's verdict and what failed it (docs/pipeline.schema.json)."""
    return PipelineDoc(
        schema_version=PIPELINE_SCHEMA_VERSION,
        pipeline=name,
        layers=list(order),
        partitions=[
            PipelinePartitionDoc(
                partition=v.partition,
                verdict=v.verdict,
                layers=cast("dict[str, LayerVerdict]", v.layers),  # each word checked here
                checks=[
                    CrossCheckDoc(name=c.name, status=c.status, observed=c.observed, message=c.message)
                    for c in v.checks
                ],
                failed_in=v.failed_in,
            )
            for v in verdicts
        ],
    )


def _markdown(name: str, order: Sequence[str], verdicts: Sequence[PipelineVerdict]) -> str:
    head = ["partition", *order, "pipeline", "held back by"]
    lines = [f"## Pipeline {md(name)}", "", "| " + " | ".join(md(h) for h in head) + " |"]
    lines.append("|" + "---|" * len(head))
    for v in verdicts:
        cells = [md(v.partition)]
        cells += [md(_word(v.layers.get(k))) for k in order]
        cells += [f"{ICON.get(str(v.verdict), '')} {v.verdict}", md(", ".join(v.failed_in))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _word(status: str | None) -> str:
    return "not validated" if status is None else str(status)


def _strip(title: str, cells: Sequence[tuple[str, str | None]]) -> str:
    boxes = "".join(
        f'<span class="day" style="background:{VERDICT_COLOURS.get(str(status), NO_VERDICT_COLOUR)}" '
        f'title="{html.escape(key)}: {html.escape(_word(status))}"></span>'
        for key, status in cells
    )
    return f'<div class="strip"><span class="name">{html.escape(title)}</span>{boxes}</div>'


def _html(
    name: str, order: Sequence[str], verdicts: Sequence[PipelineVerdict], layer_reports: dict[str, Path], out: Path
) -> str:
    strips = [_strip(k, [(v.partition, v.layers.get(k)) for v in verdicts]) for k in order]
    strips.append(_strip("pipeline", [(v.partition, str(v.verdict)) for v in verdicts]))
    rows = "".join(
        f"<tr><td>{html.escape(v.partition)}</td><td>{html.escape(str(v.verdict))}</td>"
        f"<td>{html.escape(', '.join(v.failed_in))}</td>"
        f"<td>{html.escape('; '.join(c.message for c in v.checks if c.status != 'pass'))}</td></tr>"
        for v in verdicts
        if v.failed_in
    )
    links = "".join(
        f'<li><a href="{html.escape(str(path.relative_to(out)))}">{html.escape(k)}</a></li>'
        for k, path in layer_reports.items()
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>Pipeline {html.escape(name)}</title><style>"
        "body{font-family:sans-serif}.strip{display:flex;align-items:center;margin:2px 0}"
        ".name{width:10em}.day{width:12px;height:12px;margin:1px;display:inline-block}"
        "td,th{padding:2px 8px;text-align:left}</style></head><body>"
        f"<h1>Pipeline {html.escape(name)}</h1>{''.join(strips)}"
        "<h2>Partitions held back</h2><table><tr><th>partition</th><th>verdict</th><th>held back by</th>"
        f"<th>checks</th></tr>{rows}</table><h2>Layer reports</h2><ul>{links}</ul></body></html>\n"
    )


def write_pipeline_report(
    name: str,
    order: Sequence[str],
    verdicts: Sequence[PipelineVerdict],
    layer_reports: dict[str, Path],
    out: Path,
) -> dict[str, Path]:
    """pipeline.html, pipeline.json and pipeline.md in `out`, beside the layers' folders."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / "pipeline.html", "json": out / "pipeline.json", "markdown": out / "pipeline.md"}
    paths["html"].write_text(_html(name, order, verdicts, layer_reports, out))
    paths["json"].write_text(dump(pipeline_document(name, order, verdicts)))
    paths["markdown"].write_text(_markdown(name, order, verdicts))
    return paths
