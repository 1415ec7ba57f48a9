"""The pipeline file, the layers' order and the verdicts across layers: pure code, no Spark."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from shadow_backfill.documents.pipeline import PipelineDoc
from shadow_backfill.errors import ConfigError
from shadow_backfill.pipeline.gate import BLOCKED, PipelineVerdict, pipeline_verdicts, rows_ratio
from shadow_backfill.pipeline.graph import downstream_of, layer_order
from shadow_backfill.pipeline.report import pipeline_html, pipeline_markdown, write_pipeline_report
from shadow_backfill.pipeline.spec import Consistency, load_pipeline
from shadow_backfill.vocabulary import CheckStatus
from shadow_backfill.workflow import PromotionPolicy


def test_layers_run_upstream_first_in_the_files_order() -> None:
    deps = {"features": ["staging"], "raw": [], "staging": ["raw"], "other": []}
    assert layer_order(deps) == ["raw", "staging", "features", "other"]
    assert downstream_of(deps, "raw") == {"staging", "features"}


@pytest.mark.parametrize(
    ("deps", "message"),
    [
        ({"a": ["b"], "b": ["c"], "c": ["a"]}, "cycle: a -> b -> c -> a"),
        ({"a": ["a"]}, "'a' depends on itself"),
        ({"a": ["nope"]}, "'a' depends on 'nope', which the pipeline does not list"),
    ],
)
def test_cycles_and_unknown_tables_are_refused(deps: dict[str, list[str]], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        layer_order(deps)


def _config(folder: Path, name: str, **overrides: Any) -> str:
    data = {
        "live_table": f"local.db.{name}",
        "version": "v2",
        "format": "iceberg",
        "partition": {"column": "ds"},
        "keys": ["id"],
        "transform": {"function": "m:f"},
        "spark": {"warehouse": str(folder / "wh")},
        **overrides,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path.name


def _pipeline(folder: Path, tables: dict[str, Any], **extra: Any) -> Path:
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump({"tables": tables, **extra}))
    return path


def test_a_pipeline_file_loads_its_layers_in_order(tmp_path: Path) -> None:
    tables = {
        "features": {"config": _config(tmp_path, "features"), "depends_on": ["staging"]},
        "staging": {"config": _config(tmp_path, "staging"), "depends_on": ["raw"]},
        "raw": {"config": _config(tmp_path, "raw")},
    }
    consistency = [{"upstream": "raw", "downstream": "staging", "rows_ratio": {"min": 0.98, "max": 1.0}}]
    loaded = load_pipeline(_pipeline(tmp_path, tables, consistency=consistency))
    assert loaded.order == ["raw", "staging", "features"]
    assert loaded.configs["staging"].live_table == "local.db.staging"
    assert loaded.spec.run.gate == "upstream_passed" and loaded.name == "pipeline"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"staging": {"live_table": "local.db.raw"}}, "'raw' and 'staging' both write local.db.raw"),
        # the same table spelt otherwise: the session catalog's prefix and case, a path's `..`
        ({"raw": {"live_table": "db.raw"}, "staging": {"live_table": "spark_catalog.DB.raw"}}, "both write"),
        (
            {
                "raw": {"format": "delta", "live_table": "/x/raw"},
                "staging": {"format": "delta", "live_table": "/x/staging/../raw/"},
            },
            "'raw' and 'staging' both write /x/staging/../raw/",
        ),
        ({"staging": {"format": "delta", "live_table": "/x/staging"}}, "'staging' has another format than 'raw'"),
        ({"staging": {"state": {"url": "sqlite:////tmp/other.db"}}}, "another state store"),
        ({"staging": {"partition": {"column": "ds", "granularity": "hourly"}}}, "another partition granularity"),
        ({"staging": {"time_zone": "Europe/Berlin"}}, "another time zone"),
    ],
)
def test_layers_that_cannot_share_a_run_are_refused(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    tables = {
        "raw": {"config": _config(tmp_path, "raw", **change.get("raw", {}))},
        "staging": {"config": _config(tmp_path, "staging", **change.get("staging", {})), "depends_on": ["raw"]},
    }
    with pytest.raises(ConfigError, match=message):
        load_pipeline(_pipeline(tmp_path, tables))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"consistency": [{"upstream": "raw", "downstream": "gold", "rows_ratio": {}}]}, "names table 'gold'"),
        ({"consistency": [{"upstream": "raw", "downstream": "raw", "rows_ratio": {"min": 2, "max": 1}}]}, "min 2"),
        ({"run": {"gate": "sometimes"}}, "field 'run.gate'"),
        ({"tables": {}}, "at least one table"),
        ({"tables": {"bad-key": {"config": "raw.yaml"}}}, "must be an identifier"),
    ],
)
def test_bad_pipeline_files_name_the_field(tmp_path: Path, extra: dict[str, Any], message: str) -> None:
    tables = {"raw": {"config": _config(tmp_path, "raw")}}
    with pytest.raises(ConfigError, match=message):
        load_pipeline(_pipeline(tmp_path, extra.pop("tables", tables), **extra))


def test_a_missing_layer_config_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml.* does not exist"):
        load_pipeline(_pipeline(tmp_path, {"raw": {"config": "nope.yaml"}}))


CHECK = Consistency.model_validate(
    {"upstream": "raw", "downstream": "staging", "rows_ratio": {"min": 0.98, "max": 1.0}}
)


@pytest.mark.parametrize(
    ("up", "down", "status"),
    [
        (100, 100, "pass"),
        (100, 98, "pass"),
        (100, 97, "fail"),
        (100, 101, "fail"),
        (0, 0, "pass"),
        (0, 3, "fail"),
        (None, 5, "fail"),
    ],
)
def test_rows_ratio(up: int | None, down: int | None, status: str) -> None:
    assert rows_ratio(CHECK, up, down).status == status


def test_a_partition_is_as_good_as_its_worst_layer() -> None:
    layers = {
        "raw": {"d1": "pass", "d2": "pass", "d3": "pass", "d4": "pass"},
        "staging": {"d1": "pass", "d2": "fail", "d3": "pass", "d4": "warn"},
        "features": {"d1": "pass", "d2": BLOCKED, "d4": "pass"},  # d3 never validated
    }
    rows = {
        "raw": {"d1": 5, "d2": 5, "d3": 5, "d4": 5},
        "staging": {"d1": 5, "d2": 4, "d3": 5, "d4": 5},
        "features": {},
    }
    verdicts = {v.partition: v for v in pipeline_verdicts(["d1", "d2", "d3", "d4"], layers, rows, [CHECK])}
    assert verdicts["d1"].verdict == CheckStatus.PASS
    assert verdicts["d2"].verdict == CheckStatus.FAIL
    assert verdicts["d2"].failed_in == ["staging", "features", "rows_ratio raw -> staging"]
    assert verdicts["d3"].verdict == CheckStatus.FAIL and verdicts["d3"].failed_in == ["features"]
    assert verdicts["d4"].verdict == CheckStatus.WARN
    pairs = [(v.partition, v.verdict) for v in verdicts.values()]
    assert PromotionPolicy(allow_warn=False).passing(pairs) == ["d1"]
    assert PromotionPolicy(allow_warn=True).passing(pairs) == ["d1", "d4"]


def test_the_pipeline_report_escapes_data(tmp_path: Path) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    verdicts = [
        PipelineVerdict(hostile, {"raw": "pass", "staging": "fail"}),
        PipelineVerdict("d2", {"raw": "pass", "staging": "pass"}),
    ]
    paths = write_pipeline_report("p|<b>", ["raw", "staging"], verdicts, {}, tmp_path)
    page = paths["html"].read_text()
    assert hostile not in page and "&lt;img src=x" in page
    assert "<b>" not in paths["markdown"].read_text()
    doc = json.loads(paths["json"].read_text())
    assert doc["partitions"][0] == {
        "partition": hostile,
        "verdict": "fail",
        "layers": {"raw": "pass", "staging": "fail"},
        "checks": [],
        "failed_in": ["staging"],
    }


def test_the_pipeline_reports_render_the_published_document(tmp_path: Path) -> None:
    """pipeline.md and pipeline.html are functions of pipeline.json's model alone: read back
    from the file, the document renders the very bytes written beside it."""
    verdicts = [
        PipelineVerdict("<b>|d1</b>", {"raw": "pass", "staging": BLOCKED}),
        PipelineVerdict("d2", {"raw": None, "staging": "warn"}),
    ]
    paths = write_pipeline_report("p", ["raw", "staging"], verdicts, {}, tmp_path)
    doc = PipelineDoc.model_validate_json(paths["json"].read_text())
    assert pipeline_markdown(doc) == paths["markdown"].read_text()
    assert pipeline_html(doc, {}, tmp_path) == paths["html"].read_text()


def test_the_pipeline_report_shows_a_strip_per_layer_and_who_failed_each_day(tmp_path: Path) -> None:
    verdicts = [
        PipelineVerdict("2024-01-01", {"raw": "pass", "staging": "pass"}),
        PipelineVerdict("2024-01-02", {"raw": "pass", "staging": "fail"}),
    ]
    page = write_pipeline_report("p", ["raw", "staging"], verdicts, {}, tmp_path)["html"].read_text()
    strips = re.findall(r'<div class="strip"><span class="name">([^<]*)</span>(.*?)</div>', page)
    assert [name for name, _ in strips] == ["raw", "staging", "pipeline"]
    days = {name: re.findall(r'title="([^"]*)"', boxes) for name, boxes in strips}
    assert days["staging"] == ["2024-01-01: pass", "2024-01-02: fail"]
    assert days["pipeline"] == ["2024-01-01: pass", "2024-01-02: fail"]
    held = page.split("<h2>Partitions held back</h2>", 1)[1]
    assert "<td>2024-01-02</td><td>fail</td><td>staging</td>" in held and "2024-01-01" not in held


def test_a_bad_pipeline_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from shadow_backfill.cli import app

    tables = {
        "a": {"config": _config(tmp_path, "a"), "depends_on": ["b"]},
        "b": {"config": _config(tmp_path, "b"), "depends_on": ["a"]},
    }
    for command in ("status", "run", "backfill", "history"):
        result = CliRunner().invoke(app, ["pipeline", command, str(_pipeline(tmp_path, tables))])
        assert result.exit_code == 2, result.output
        assert result.output.strip().splitlines() == ["error: pipeline: the dependencies form a cycle: a -> b -> a"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lag", "2d"], "--lag goes with --last"),
        (["--last", "3", "--start", "2024-01-01"], "--last chooses the partitions itself: drop --start"),
        (["--last", "3", "--lag", "soon"], "--lag"),
    ],
)
def test_a_pipeline_window_is_checked_before_anything_opens(tmp_path: Path, args: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from shadow_backfill.cli import app

    tables = {"raw": {"config": _config(tmp_path, "raw")}}
    for command in ("run", "validate", "backfill"):
        result = CliRunner().invoke(app, ["pipeline", command, str(_pipeline(tmp_path, tables)), *args])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output


def test_the_store_keeps_a_pipeline_promotion_as_its_layers_land(tmp_path: Path) -> None:
    from shadow_backfill.state import PipelineRecord, StateStore
    from shadow_backfill.state.pipelines import DONE, PROMOTING

    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    rec = PipelineRecord(id="p1", pipeline="/x/pipeline.yaml", kind="promote", partitions=["d1"], state=PROMOTING)
    store.record_pipeline(rec)
    store.add_pipeline_member("p1", "raw", "promote-1")
    assert [(r.state, r.members) for r in store.pipeline_records("/x/pipeline.yaml")] == [
        (PROMOTING, [("raw", "promote-1")])
    ]
    store.add_pipeline_member("p1", "staging", "promote-2")
    store.set_pipeline_state("p1", DONE)
    got = store.pipeline_record("p1")
    assert got is not None and got.state == DONE and got.members == [("raw", "promote-1"), ("staging", "promote-2")]
    assert got.as_dict()["members"] == [
        {"table": "raw", "promotion": "promote-1"},
        {"table": "staging", "promotion": "promote-2"},
    ]
    undo = PipelineRecord(id="r1", pipeline="/x/pipeline.yaml", kind="rollback", partitions=["d1"], target="p1")
    store.record_pipeline(undo)
    assert store.pipeline_record("p1").undone_by == "r1"  # type: ignore[union-attr]
    store.drop_pipeline("r1")
    assert [r.id for r in store.pipeline_records("/x/pipeline.yaml")] == ["p1"]
    assert store.pipeline_records("/other.yaml") == []


def test_chunks_of_layers_run_side_by_side_within_the_cap() -> None:
    """raw's second chunk is held until staging's first has started: staging's first chunk
    runs beside it (else the hold never ends), never before raw's first chunk ended, and never
    more than two chunks at once."""
    import threading

    from shadow_backfill.pipeline.schedule import run_chunks

    deps = {"raw": [], "staging": ["raw"], "features": ["staging"]}
    log: list[tuple[str, tuple[str, int]]] = []
    lock = threading.Lock()
    staging_started = threading.Event()
    in_flight = peak = 0

    def work(task: tuple[str, int]) -> str:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
            log.append(("start", task))
        if task == ("staging", 0):
            staging_started.set()
        if task == ("raw", 1):
            assert staging_started.wait(60), "staging's first chunk never ran beside raw's second"
        with lock:
            in_flight -= 1
            log.append(("end", task))
        return f"{task[0]}-{task[1]}"

    results = run_chunks(["raw", "staging", "features"], 2, deps, 2, work)
    assert results[("features", 1)] == "features-1" and len(results) == 6
    assert peak == 2
    for (layer, i), _ in results.items():
        for dep in deps[layer]:
            assert log.index(("end", (dep, i))) < log.index(("start", (layer, i))), f"{layer} {i} before {dep} {i}"
    assert log.index(("start", ("staging", 0))) < log.index(("end", ("raw", 1))), "staging 0 ran beside raw 1"


def test_a_failed_chunk_ends_the_run_and_is_raised() -> None:
    from shadow_backfill.pipeline.schedule import run_chunks

    ran: list[tuple[str, int]] = []

    def work(task: tuple[str, int]) -> None:
        ran.append(task)
        if task == ("raw", 0):
            raise RuntimeError("broken chunk")

    with pytest.raises(RuntimeError, match="broken chunk"):
        run_chunks(["raw", "staging"], 1, {"raw": [], "staging": ["raw"]}, 2, work)
    assert ran == [("raw", 0)]


def test_two_pipeline_commands_sharing_a_table_cannot_run_at_once(tmp_path: Path) -> None:
    """Two pipeline files whose layers share `db.staging`: while one command holds its tables,
    the other is refused naming the table and the holder; once it has finished, the other runs."""
    from shadow_backfill.errors import RefusedError
    from shadow_backfill.ownership import holding_tables
    from shadow_backfill.state import StateStore

    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    refused = r"table db\.staging is in another pipeline command, pipeline-[\w-]+ \(pid \d+ on "
    with holding_tables(store, ["db.raw", "db.staging"]):
        with pytest.raises(RefusedError, match=refused), holding_tables(store, ["db.staging", "db.features"]):
            pass
        with holding_tables(store, ["db.other"]):  # a pipeline over other tables runs beside it
            pass
    with holding_tables(store, ["db.staging", "db.features"]):
        pass
