"""One owner per live table (`ownership`), through the CLI: a single-table command on a table a
running pipeline command holds is refused naming the holder, and a pipeline rollback over a
layer something else has moved since the set fails naming the layer instead of leaving the set
mixed. Classic Spark only: the rules are the tool's, the same on every engine and format."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from click.testing import Result
from support import END, START, MakeBackfill
from support.pipelines import make_pipeline
from typer.testing import CliRunner

from shadow_backfill import Backfill
from shadow_backfill.cli import app


def test_a_table_a_pipeline_holds_refuses_single_table_commands_and_its_rollback_checks_the_set(
    make_backfill: MakeBackfill, tmp_path: Path
) -> None:
    spark = make_backfill(seed_live=False).spark
    pipeline, made = make_pipeline(make_backfill, tmp_path, spark)
    layers = pipeline.layers
    staging = layers["staging"]
    configs = {key: str(bf.config_path) for key, bf in made.items()}  # type: ignore[attr-defined]
    cli = CliRunner()
    versions = {key: bf.table_format.current_version(bf.live_table) for key, bf in layers.items()}

    # the named point: features has written a day, so staging's days of that chunk have passed
    # (gate upstream_passed) and a promote of staging alone would take them
    written = Counter[str]()
    once = threading.Lock()
    seen: dict[str, Result] = {}

    def progress(keys: Sequence[str], outcome: str) -> None:
        written.update(keys if outcome == "written" else [])
        if any(n == 3 for n in written.values()) and once.acquire(blocking=False):
            seen["promote"] = cli.invoke(app, ["promote", configs["staging"]])
            seen["run"] = cli.invoke(app, ["run", configs["raw"], "--start", START, "--end", END, "--force"])

    result = pipeline.backfill(START, END, on_progress=progress, report_dir=tmp_path / "report")
    assert set(seen) == {"promote", "run"}, "the named point was reached"
    for command, table in (("promote", staging.live_table), ("run", layers["raw"].live_table)):
        refused = seen[command]
        assert refused.exit_code == 1, refused.output
        line = refused.output.strip()
        assert len(line.splitlines()) == 1 and f"table {table} is in pipeline command pipeline-" in line, line
        assert line.endswith("nothing was done, try again when it has finished"), line
    record = result.promotion.record if result.promotion is not None else None
    assert record is not None, "the pipeline went on and promoted the set"
    members = dict(record.members)
    for key, bf in layers.items():
        assert [p.id for p in bf.store.promotions(bf.live_table)] == [members[key]], f"{key}: only the set's promotion"

    # staging alone is rolled back and promoted again after the set: live staging is no longer
    # the set's (its rollback's) state, so the set's rollback refuses before undoing any layer
    alone = Backfill.from_config(configs["staging"], spark)
    alone.rollback(members["staging"])
    alone.validate(partitions=record.partitions)
    _plan, again = alone.promote(record.partitions)
    assert again is not None
    versions = {key: bf.table_format.current_version(bf.live_table) for key, bf in layers.items()}
    undo = cli.invoke(app, ["pipeline", "rollback", str(pipeline.file.path), "--promotion", record.id])
    assert undo.exit_code == 1, undo.output
    line = undo.output.strip()
    assert f"table 'staging' ({staging.live_table}) moved since rollback-" in line, line
    assert f"(promote {again.id}) changed partitions" in line and line.endswith("nothing was rolled back"), line
    assert {key: bf.table_format.current_version(bf.live_table) for key, bf in layers.items()} == versions
    assert [r.kind for r in pipeline.history()] == ["promote"], "no rollback of the set recorded"

    # an id of no promotion of this pipeline is a usage error told before the lease and before
    # any cut-off set would be finished: exit 2, nothing changed
    typo = cli.invoke(app, ["pipeline", "rollback", str(pipeline.file.path), "--promotion", "pipeline-nosuch"])
    assert typo.exit_code == 2, typo.output
    assert "no pipeline promotion 'pipeline-nosuch' of this pipeline" in typo.output
    assert {key: bf.table_format.current_version(bf.live_table) for key, bf in layers.items()} == versions
