"""The pipeline's report: one calendar strip per layer and one for the pipeline's verdict, and
for every partition that did not pass, the layers and checks that held it back. JSON for
scripts, Markdown for a pull request, HTML for people. Every data-derived string is escaped."""

from __future__ import annotations

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
from shadow_backfill.report.templating import render


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


def pipeline_markdown(doc: PipelineDoc) -> str:
    """pipeline.md: a row per partition, a column per layer, short enough for a pull request."""
    head = ["partition", *doc.layers, "pipeline", "held back by"]
    lines = [f"## Pipeline {md(doc.pipeline)}", "", "| " + " | ".join(md(h) for h in head) + " |"]
    lines.append("|" + "---|" * len(head))
    for v in doc.partitions:
        cells = [md(v.partition)]
        cells += [md(_word(v.layers.get(k))) for k in doc.layers]
        cells += [f"{ICON.get(str(v.verdict), '')} {v.verdict}", md(", ".join(v.failed_in))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _word(status: LayerVerdict) -> str:
    return "not validated" if status is None else str(status)


def pipeline_html(doc: PipelineDoc, layer_reports: dict[str, Path], out: Path) -> str:
    """pipeline.html: the cells are computed here as plain text, so pipeline.html.j2 escapes every
    one of them (partitions, layer names and check messages are data)."""
    strips = [(k, [(v.partition, _word(v.layers.get(k))) for v in doc.partitions]) for k in doc.layers]
    strips.append(("pipeline", [(v.partition, str(v.verdict)) for v in doc.partitions]))
    held_back = [
        [
            v.partition,
            str(v.verdict),
            ", ".join(v.failed_in),
            "; ".join(c.message for c in v.checks if c.status != "pass"),
        ]
        for v in doc.partitions
        if v.failed_in
    ]
    links = [(str(path.relative_to(out)), k) for k, path in layer_reports.items()]
    return render("pipeline.html.j2", name=doc.pipeline, strips=strips, held_back=held_back, links=links)


def write_pipeline_report(
    name: str,
    order: Sequence[str],
    verdicts: Sequence[PipelineVerdict],
    layer_reports: dict[str, Path],
    out: Path,
) -> dict[str, Path]:
    """pipeline.html, pipeline.json and pipeline.md in `out`, beside the layers' folders: all
    three rendered from the one document model (pipeline.json's), so they cannot disagree."""
    out.mkdir(parents=True, exist_ok=True)
    doc = pipeline_document(name, order, verdicts)
    paths = {"html": out / "pipeline.html", "json": out / "pipeline.json", "markdown": out / "pipeline.md"}
    paths["html"].write_text(pipeline_html(doc, layer_reports, out))
    paths["json"].write_text(dump(doc))
    paths["markdown"].write_text(pipeline_markdown(doc))
    return paths
