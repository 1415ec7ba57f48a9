"""A pipeline of three layers (raw -> staging -> features) whose staging logic changes, on
every backend: features are computed from staging's shadow of the run, a day broken in staging
is promoted in no layer, a day broken only in features keeps staging (and raw) unpromoted for
that day too, and a rollback of the set restores all three."""

from __future__ import annotations

import datetime as dt
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
import yaml
from chispa import assert_df_equality
from pyspark.sql import functions as F
from support import END, START, MakeBackfill, published
from support.backends import BACKENDS
from support.clocks import Ticks
from support.pipelines import TRANSFORMS
from support.pipelines import make_pipeline as _pipeline
from support.processes import killable_cli_env
from typer.testing import CliRunner

from shadow_backfill import Pipeline, RefusedError, testpoints
from shadow_backfill.cli import app
from shadow_backfill.timebox import TimeBox

STAGING_BROKEN = t.STAGING_BROKEN.isoformat()
FEATURES_BROKEN = t.FEATURES_BROKEN.isoformat()
RANGE = ["--start", START, "--end", END]


def _same(a: Any, b: Any) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


@pytest.mark.store
@pytest.mark.every_backend  # a commit per layer, each the format's, and their rollback
def test_three_layers_promoted_and_rolled_back_as_a_set(make: MakeBackfill, tmp_path: Path) -> None:
    probe = make(seed_live=False)
    pipeline, _ = _pipeline(make, tmp_path, probe.spark)
    layers = pipeline.layers
    before = {key: layers[key].read_live() for key in pipeline.order}
    before_rows = {key: sorted(df.collect()) for key, df in before.items()}

    result = pipeline.backfill(START, END, report_dir=tmp_path / "report")

    days = probe.scheme.expand(START, END)
    good = [d for d in days if d not in (STAGING_BROKEN, FEATURES_BROKEN)]
    verdicts = {v.partition: v for v in result.validation.verdicts}
    assert verdicts[STAGING_BROKEN].failed_in == ["staging", "features", "rows_ratio raw -> staging"]
    assert verdicts[STAGING_BROKEN].layers["features"] == "blocked", "features waited for staging to pass"
    assert verdicts[FEATURES_BROKEN].failed_in == ["features"]
    assert result.run.blocked["features"] == {STAGING_BROKEN: "upstream staging did not pass (fail)"}

    # features were computed from staging's shadow of this run, not from staging's live table
    staged = layers["staging"].read_shadow(good).withColumn("amount", F.col("amount") + 1)
    _same(layers["features"].read_shadow(good), staged)

    promotion = result.promotion
    assert promotion is not None and promotion.record is not None
    assert promotion.partitions == good
    assert [layer for layer, _ in promotion.record.members] == ["raw", "staging", "features"]
    for key in pipeline.order:
        _same(layers[key].read_live(good), layers[key].read_shadow(good))
        for day in (STAGING_BROKEN, FEATURES_BROKEN):  # promoted in no layer
            assert sorted(layers[key].read_live([day]).collect()) == sorted(
                before[key].where(F.col("ds") == dt.date.fromisoformat(day)).collect()
            )
    assert (tmp_path / "report" / "pipeline.html").is_file() and (
        tmp_path / "report" / "features" / "report.html"
    ).is_file()

    undo = pipeline.rollback(promotion.record.id)
    assert [layer for layer, _ in undo.members] == ["features", "staging", "raw"]
    for key in pipeline.order:
        assert sorted(layers[key].read_live().collect()) == before_rows[key], f"{key} restored"
    assert [r.kind for r in pipeline.history()] == ["promote", "rollback"]


# once per engine (the e2e default): the set's logic is the engine's, not the format's: one backend per engine
def test_a_refused_layer_rolls_back_the_layers_before_it(make: MakeBackfill, tmp_path: Path) -> None:
    probe = make(seed_live=False)
    pipeline, _ = _pipeline(make, tmp_path, probe.spark)
    layers = pipeline.layers
    pipeline.run(START, END)
    pipeline.validate()
    good = [d for d in probe.scheme.expand(START, END) if d not in (STAGING_BROKEN, FEATURES_BROKEN)]
    before = {key: sorted(layers[key].read_live().collect()) for key in pipeline.order}
    features = layers["features"]
    # another promotion holds one of features' live partitions: features is refused when it
    # commits, after raw and staging have committed, and those two are rolled back
    other = "elsewhere:1:promote-x"
    features.store.acquire([f"promote:{features.live_table}:2024-01-02"], other, 3600)
    with pytest.raises(RefusedError, match=r"stopped at table 'features'.*rolled back \(staging, raw\)"):
        pipeline.promote()
    for key in pipeline.order:
        assert sorted(layers[key].read_live().collect()) == before[key], f"{key} as before"
    assert pipeline.history() == []
    features.store.release(other)

    # another writer changes features' live partition after validation: the plan leaves that
    # partition out in every layer before anything commits, and the rest is promoted
    pipeline.validate()  # the rollbacks moved every live table: the verdicts are bound to versions
    changed = features.read_live(["2024-01-02"]).withColumn("amount", F.col("amount") + 1)
    features.table_format.overwrite_partitions(features.live_table, changed, ["2024-01-02"])
    result = pipeline.promote()
    assert list(result.refused) == ["2024-01-02"] and result.refused["2024-01-02"].startswith("features: ")
    assert result.record is not None and result.partitions == [d for d in good if d != "2024-01-02"]
    assert sorted(layers["raw"].read_live(["2024-01-02"]).collect()) == sorted(
        r for r in before["raw"] if r["ds"] == dt.date(2024, 1, 2)
    )


def test_the_cli_runs_a_pipeline_whose_sql_layer_reads_a_view(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    """Classic Spark only: the commands' output and exit codes, and a SQL transform reading its
    upstream as a temporary view named by its key."""
    sql = tmp_path / "features.sql"
    sql.write_text("SELECT id, amount + 1 AS amount, cat, ds FROM staging WHERE ds = :partition")
    pipeline, layers = _pipeline(make_backfill, tmp_path, None, {**TRANSFORMS, "features": {"sql": str(sql)}})
    path = str(pipeline.file.path)
    cli = CliRunner()

    # outside a pipeline, a transform that takes `inputs` has nothing to read: exit 2, nothing written
    alone = cli.invoke(app, ["run", str(layers["staging"].config_path), "--start", START, "--end", END])  # type: ignore[attr-defined]
    assert alone.exit_code == 2 and "takes a third parameter (inputs)" in alone.output, alone.output

    # another pipeline command (on another host) holds staging: refused before any work
    store = layers["raw"].store
    store.acquire([f"pipeline:{layers['staging'].live_table}"], "elsewhere:1:pipeline-x", 60)
    busy = cli.invoke(app, ["pipeline", "run", path, "--start", START, "--end", END])
    assert busy.exit_code == 1 and "is in another pipeline command, pipeline-x (pid 1 on elsewhere)" in busy.output
    assert layers["raw"].status() == [], "nothing was recomputed"
    store.release("elsewhere:1:pipeline-x")

    # the plan, from the store and metadata only: every layer recomputes every day, nothing written
    plan = cli.invoke(app, ["pipeline", "backfill", path, *RANGE, "--dry-run", "--json"])
    assert plan.exit_code == 0, plan.output
    layer_plans = published(plan.stdout, "pipeline-plan.schema.json")["layers"]
    assert list(layer_plans) == ["raw", "staging", "features"]
    assert all(len(p["recompute"]) == 10 and p["skip"] == [] for p in layer_plans.values())
    assert not layers["raw"].table_format.exists(layers["raw"].shadow_table), "a dry run creates no shadow"

    first_night = {"SHADOW_BACKFILL_NOW": "2024-01-11T03:00Z"}  # when the data is read: its age
    done = cli.invoke(
        app,
        ["pipeline", "backfill", path, "--start", START, "--end", END, "--report", str(tmp_path / "r")],
        env=first_night,
    )
    assert done.exit_code == 1, done.output  # the day broken in staging fails the pipeline
    assert f"features: {STAGING_BROKEN} not recomputed: upstream staging did not pass (fail)" in done.output
    assert "promoted 9 partition(s) in every layer" in done.output
    good = [d for d in layers["raw"].scheme.expand(START, END) if d != STAGING_BROKEN]
    staged = layers["staging"].read_shadow(good).withColumn("amount", F.col("amount") + 1)
    _same(layers["features"].read_live(good), staged)

    status = published(cli.invoke(app, ["pipeline", "status", path, "--json"]).stdout, "pipeline.schema.json")
    by_day = {p["partition"]: p for p in status["partitions"]}
    assert by_day[STAGING_BROKEN]["layers"] == {"raw": "pass", "staging": "fail", "features": "blocked"}
    one = ["--start", STAGING_BROKEN, "--end", STAGING_BROKEN]
    narrowed = published(cli.invoke(app, ["pipeline", "status", path, *one, "--json"]).stdout, "pipeline.schema.json")
    assert [p["partition"] for p in narrowed["partitions"]] == [STAGING_BROKEN]
    written = cli.invoke(app, ["pipeline", "report", path, "--report", str(tmp_path / "one"), *one])
    assert written.exit_code == 0, written.output
    doc = published((tmp_path / "one" / "pipeline.json").read_text(), "pipeline.schema.json")
    assert [p["partition"] for p in doc["partitions"]] == [STAGING_BROKEN]
    # a nightly job's window: the 2 newest days complete a day before the pinned now
    env = {"SHADOW_BACKFILL_NOW": "2024-01-12T00:00:00+00:00", "COLUMNS": "200"}
    nightly = cli.invoke(app, ["pipeline", "validate", path, "--last", "2", "--lag", "1d"], env=env)
    assert nightly.exit_code == 0, nightly.output
    shown = [line.split()[1] for line in nightly.output.splitlines() if line.startswith("│ 2024-")]
    assert shown == ["2024-01-09", "2024-01-10"], nightly.output
    history = published(cli.invoke(app, ["pipeline", "history", path, "--json"]).stdout, "pipeline-history.schema.json")
    assert [h["kind"] for h in history] == ["promote"]
    assert [m["table"] for m in history[0]["members"]] == ["raw", "staging", "features"]
    undo = cli.invoke(app, ["pipeline", "rollback", path, "--promotion", history[0]["id"]])
    assert undo.exit_code == 0 and f"undid {history[0]['id']}" in undo.output, undo.output
    again = cli.invoke(app, ["pipeline", "rollback", path, "--promotion", history[0]["id"]])
    assert again.exit_code == 1 and "already rolled back" in again.output

    # the next night, a forced window: 2024-01-09 and 2024-01-10 read again, a day older, in
    # every layer (the validation above read no new data: no point of its own)
    forced = ["pipeline", "backfill", path, "--last", "2", "--lag", "1d", "--force"]
    ran = cli.invoke(app, forced, env={"SHADOW_BACKFILL_NOW": "2024-01-12T03:00Z"})
    assert ran.exit_code == 0, ran.output
    shown = cli.invoke(app, ["pipeline", "history", path, "--late-arrivals", "--json"])
    assert shown.exit_code == 0, shown.output
    late = published(shown.stdout, "pipeline-late-arrivals.schema.json")["layers"]
    assert list(late) == ["raw", "staging", "features"]
    for layer in late.values():
        points = [(p["partition"], [x["label"] for x in p["points"]]) for p in layer["late_arrivals"]["partitions"]]
        assert points == [("2024-01-09", ["D+2", "D+3"]), ("2024-01-10", ["D+1", "D+2"])]
        assert [a["present_share"] for a in layer["late_arrivals"]["by_age"]] == [None, 1.0, 1.0]
    text = cli.invoke(app, ["pipeline", "history", path, "--late-arrivals"], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "features:" in text.stdout and "100.0% of 1" in text.stdout, text.output
    assert text.stdout.count("present by then, of D+3") == 3, text.stdout


def test_a_later_layers_missing_live_table_is_found_before_any_layer_runs(
    make_backfill: MakeBackfill, tmp_path: Path
) -> None:
    """Classic Spark only (no format decides it): every layer's live table is checked before the
    first layer is recomputed, so the refusal (exit 2) leaves no shadow, state store or report."""
    pipeline, layers = _pipeline(make_backfill, tmp_path, None)
    config = Path(layers["features"].config_path)  # type: ignore[attr-defined]
    data = yaml.safe_load(config.read_text())
    data["live_table"] += "_gone"
    config.write_text(yaml.safe_dump(data))
    state, report = tmp_path / "pipeline-state.db", tmp_path / "report"
    had_state = state.exists()
    result = CliRunner().invoke(app, ["pipeline", "backfill", str(pipeline.file.path), *RANGE])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"error: live table '{data['live_table']}' does not exist (iceberg)", result.output
    assert not [k for k, bf in layers.items() if bf.table_format.exists(bf.shadow_table)], "a layer was recomputed"
    assert state.exists() == had_state and not report.exists(), "a refused command wrote a state store or report"


# Sail, where a CLI process starts in a second (a classic one starts a JVM: 60 s a trial here)
@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id == "delta-sail"], indirect=True)
def test_a_promotion_killed_between_layers_is_finished_by_the_next_command(make: MakeBackfill, tmp_path: Path) -> None:
    """kill -9 of `pipeline promote` once the first layer has committed (paused at the named
    point `pipeline.after_layer`, so the kill falls between the layers' commits on any machine):
    live holds a new raw beside an old staging until the next pipeline command, which finishes
    the set."""
    probe = make(seed_live=False)
    pipeline, layers = _pipeline(make, tmp_path, probe.spark)
    pipeline.run(START, END)
    pipeline.validate()
    good = [d for d in probe.scheme.expand(START, END) if d not in (STAGING_BROKEN, FEATURES_BROKEN)]
    broken_before = {key: sorted(layers[key].read_live([STAGING_BROKEN]).collect()) for key in pipeline.order}
    live_before = {key: sorted(layers[key].read_live().collect()) for key in pipeline.order}
    marker = tmp_path / "paused"
    env = {**killable_cli_env(layers["raw"], 0), testpoints.PAUSE_AT: f"{testpoints.PIPELINE_AFTER_LAYER}={marker}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shadow_backfill.cli", "pipeline", "promote", str(pipeline.file.path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while proc.poll() is None and not marker.exists():  # paused after the first layer's commit
        assert time.monotonic() < deadline, "the promotion neither committed a layer nor ended"
        time.sleep(0.01)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the promotion ended before the kill"

    rerun = Pipeline.from_file(pipeline.file.path, spark=probe.spark)
    assert [(r.state, r.members[0][0]) for r in rerun.history()] == [("promoting", "raw")]
    result = rerun.promote()
    finished = result.finished
    assert finished is not None and finished.state == "done"
    assert [layer for layer, _ in finished.members] == ["raw", "staging", "features"]
    # the set's partitions are in live now: nothing is left to promote, each refused and named
    assert result.record is None and sorted(result.refused) == good
    assert all(why.startswith("raw: ") for why in result.refused.values())
    for key in rerun.order:
        _same(layers[key].read_live(good), layers[key].read_shadow(good))
        assert sorted(layers[key].read_live([STAGING_BROKEN]).collect()) == broken_before[key]
    assert [r.state for r in rerun.history()] == ["done"]
    undo = rerun.rollback(finished.id)  # every member of the finished set is rolled back
    assert [layer for layer, _ in undo.members] == ["features", "staging", "raw"]
    for key in rerun.order:
        assert sorted(layers[key].read_live().collect()) == live_before[key]


def _written_in(db: Path, table: str) -> int:
    """Partitions of `table` written, as the killed process left the store (0: no store yet)."""
    if not db.exists():
        return 0
    with sqlite3.connect(db) as c:
        try:
            (n,) = c.execute(
                "SELECT count(*) FROM partitions WHERE shadow_table = ? AND status = 'written'", (table,)
            ).fetchone()
        except sqlite3.OperationalError:  # the store's tables are being created
            return 0
    return int(n)


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id == "delta-sail"], indirect=True)
def test_a_pipeline_killed_while_recomputing_is_finished_by_the_next_backfill(
    make: MakeBackfill, tmp_path: Path
) -> None:
    """kill -9 of `pipeline backfill` once staging has written a partition (raw's transform is
    slow in the killed process): the next `backfill` recomputes what is missing in each layer,
    from the run's shadows, and promotes the set as an unbroken run would."""
    probe = make(seed_live=False)
    transforms = {**TRANSFORMS, "raw": {"function": "sb_test_transforms:slow"}}
    pipeline, layers = _pipeline(make, tmp_path, probe.spark, transforms, run={"max_parallel": 2})
    db = tmp_path / "pipeline-state.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "shadow_backfill.cli", "pipeline", "backfill", str(pipeline.file.path), *RANGE],
        env=killable_cli_env(layers["raw"], 0.5),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while proc.poll() is None and not _written_in(db, layers["staging"].shadow_table):
        assert time.monotonic() < deadline, "staging wrote nothing and the run did not end"
        time.sleep(0.01)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before the kill"
    assert _written_in(db, layers["features"].shadow_table) < 10, "killed before the last layer finished"

    rerun = Pipeline.from_file(pipeline.file.path, spark=probe.spark)
    result = rerun.backfill(START, END, report_dir=tmp_path / "report")
    good = [d for d in probe.scheme.expand(START, END) if d not in (STAGING_BROKEN, FEATURES_BROKEN)]
    assert result.promotion is not None and result.promotion.partitions == good
    staged = layers["staging"].read_shadow(good).withColumn("amount", F.col("amount") + 1)
    _same(layers["features"].read_live(good), staged)
    for key in rerun.order:
        _same(layers[key].read_live(good), layers[key].read_shadow(good))
        assert not [r for r in layers[key].status() if r.status == "running"], f"{key}: nothing left running"


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id == "delta-sail"], indirect=True)
def test_max_parallel_caps_chunks_of_every_layer_together(make: MakeBackfill, tmp_path: Path) -> None:
    """Three layers whose transforms take two parameters (they read what they read, as outside a
    pipeline) and count the calls in flight: never more than the pipeline's cap, and the cap is
    reached."""
    probe = make(seed_live=False)
    tracked = {"function": "sb_test_transforms:tracked"}
    transforms = {"raw": tracked, "staging": tracked, "features": tracked}
    pipeline, layers = _pipeline(make, tmp_path, probe.spark, transforms, run={"max_parallel": 2})
    t.peak, t.in_flight, t.SLEEP_S = 0, 0, 0.3
    try:
        result = pipeline.run(START, END)
    finally:
        t.SLEEP_S = 0.0
    assert t.peak == 2, f"transform calls in flight peaked at {t.peak} across layers, the cap is 2"
    for key in pipeline.order:
        assert sorted(result.runs[key].written) == probe.scheme.expand(START, END)  # type: ignore[union-attr]
        _same(layers[key].read_shadow(), layers["raw"].read_shadow())


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b.id == "delta-sail"], indirect=True)
def test_a_stopped_pipeline_promotes_only_what_every_layer_finished(make: MakeBackfill, tmp_path: Path) -> None:
    """A stop (as SIGTERM gives) once features has written a chunk: chunks in flight finish, no
    other chunk of any layer starts, `promote_partial` promotes what every layer finished and
    passed, and a rerun finishes the set. Through the CLI, `--max-duration 0` starts nothing."""
    probe = make(seed_live=False)
    pipeline, layers = _pipeline(make, tmp_path, probe.spark, run={"max_parallel": 2})
    days = probe.scheme.expand(START, END)
    live_before = {key: sorted(layers[key].read_live().collect()) for key in pipeline.order}
    box = TimeBox(None, Ticks(0))
    written = Counter[str]()
    stopped = threading.Event()
    second_chunk = set(days[len(days) // 2 :])  # the pipeline's second chunk (max_parallel 2)

    def progress(keys: Sequence[str], outcome: str) -> None:
        written.update(keys if outcome == "written" else [])
        if any(n == 3 for n in written.values()):  # a day written in all three layers
            box.stop("SIGTERM")
            stopped.set()
        elif any(written[k] == 2 for k in second_chunk.intersection(keys)):
            # staging's second chunk waits for the stop: otherwise features' second chunk may
            # start (and finish) beside the first one, and the stop would leave nothing unstarted
            stopped.wait(timeout=300)

    result = pipeline.backfill(START, END, timebox=box, promote_partial=True, on_progress=progress)
    run = result.run
    assert run.stopped == "SIGTERM" and run.not_started, "the stop left chunks unstarted"
    finished = run.finished
    assert finished and set(finished).isdisjoint(run.not_started.get("features", []))
    assert result.promotion is not None and result.promotion.record is not None
    assert result.promotion.partitions == [d for d in finished if d not in (STAGING_BROKEN, FEATURES_BROKEN)]
    for key in pipeline.order:
        promoted = result.promotion.partitions
        _same(layers[key].read_live(promoted), layers[key].read_shadow(promoted))
        rest = [d for d in days if d not in promoted]
        assert sorted(layers[key].read_live(rest).collect()) == sorted(
            r for r in live_before[key] if r["ds"].isoformat() in rest
        ), f"{key}: nothing else promoted"

    path = str(pipeline.file.path)
    cli = CliRunner().invoke(app, ["pipeline", "run", path, *RANGE, "--max-duration", "0"])
    assert cli.exit_code == 4, cli.output
    assert "stopped by --max-duration 0" in cli.output and "rerun the same command to resume" in cli.output

    again = pipeline.backfill(START, END)
    good = [d for d in days if d not in (STAGING_BROKEN, FEATURES_BROKEN)]
    assert again.run.stopped is None and again.promotion is not None
    assert sorted(again.promotion.partitions + result.promotion.partitions) == good
    # the same night's job run once more: every passing day is live from these shadows already
    history = pipeline.history()
    rerun = pipeline.backfill(START, END)
    assert rerun.promotion is None and pipeline.history() == history, "a rerun promotes nothing again"


def test_gate_written_and_a_layer_computed_from_replaced_upstream_data(
    make_backfill: MakeBackfill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Classic Spark only (the rules are the runner's, the same on every engine). raw cannot
    write 2024-01-09 (its transform raises for it)."""
    monkeypatch.setattr(t, "FAIL_ON", {dt.date(2024, 1, 9)})
    transforms = {**TRANSFORMS, "raw": {"function": "sb_test_transforms:flaky"}}
    spark = make_backfill(seed_live=False).spark
    pipeline, _ = _pipeline(make_backfill, tmp_path, spark, transforms, run={"gate": "written"})
    first = pipeline.run(START, END)
    assert first.blocked["staging"]["2024-01-09"] == "upstream raw has no partition 2024-01-09 written"
    assert first.blocked["features"]["2024-01-09"] == "upstream staging is blocked"
    assert STAGING_BROKEN not in first.blocked["features"], "gate `written`: features go on past staging's failure"
    assert STAGING_BROKEN in first.runs["features"].written  # type: ignore[union-attr]
    verdict = {v.partition: v for v in pipeline.validate().verdicts}[STAGING_BROKEN]
    assert verdict.layers["staging"] == "fail" and verdict.verdict == "fail"

    # staging's partition is rewritten after features read it: features' copy is stale, judged
    # blocked, and the next run recomputes it (and nothing else) without --force
    day = "2024-01-02"
    pipeline.layers["staging"].run(partitions=[day], force=True)
    assert {v.partition: v for v in pipeline.verdicts()}[day].layers["features"] == "blocked"
    again = pipeline.run(START, END)
    assert list(again.runs["features"].written) == [day]  # type: ignore[union-attr]
    assert again.runs["staging"].written == {} and again.runs["raw"].written == {}  # type: ignore[union-attr]
