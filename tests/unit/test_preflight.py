"""Exit 2 means nothing was written: the checks that need no engine refuse a command before
PySpark is imported, before Spark starts and before the state store exists. Each case runs the
real CLI on a config whose state store and warehouse would be created in the test's folder, and
asserts one `error:` line naming the culprit and a folder that holds exactly what it held."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.configs import sql_config
from typer.testing import CliRunner

from shadow_backfill.cli import app
from shadow_backfill.errors import ConfigError
from shadow_backfill.preflight import check_function_source

SECRET = "Pre-Fl1ght-Pw"
LONG = "k" * 256


def _pipeline(folder: Path, **layers: dict[str, Any]) -> Path:
    """A pipeline of `raw` then the given layers, each depending on the one before."""
    tables: dict[str, Any] = {"raw": {"config": sql_config(folder, "raw").name}}
    before = "raw"
    for key, overrides in layers.items():
        tables[key] = {"config": sql_config(folder, f"layer{len(tables)}", **overrides).name, "depends_on": [before]}
        before = key
    path = folder / "pipeline.yaml"
    path.write_text(yaml.safe_dump({"tables": tables}))
    return path


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*"))


def _refused(folder: Path, args: list[str], words: str) -> None:
    """The command exits 2 with one line holding `words`, creates no file or folder under
    `folder` (no state store, warehouse, report) and never imports PySpark."""
    before = _files(folder)
    result = CliRunner().invoke(app, args, env={"SHADOW_BACKFILL_LOG_DIR": str(folder / "logs")})
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [result.stderr.strip()] and result.stderr.startswith("error:"), result.output
    assert words in result.stderr, result.output
    assert "Traceback" not in result.output and SECRET not in result.output
    assert _files(folder) == before, "a refused command created something"
    assert "pyspark" not in sys.modules, "a check that needs no engine imported PySpark"


RANGE = ["--start", "2024-01-01", "--end", "2024-01-03"]
SELECTIONS = [
    pytest.param(["--partitions", "2024-02-30"], "'2024-02-30' is not a valid daily partition", id="impossible-date"),
    pytest.param(["--start", "2024-01-03", "--end", "2024-01-01"], "range is reversed", id="reversed-range"),
    pytest.param(["--partitions", "'; DROP TABLE x; --"], '"\'; DROP TABLE x; --" is not a valid', id="sql"),
    pytest.param(["--partitions", ""], "--partitions is empty", id="empty"),
    pytest.param(["--partitions", "\x00garbage"], "is not a valid daily partition", id="garbage"),
    pytest.param(["--partitions", "99999-01-01"], "'99999-01-01' is not a valid daily", id="year-99999"),
    pytest.param(["--start", "2024-01-01", "--end", "9999-12-31"], "more than the 100,000", id="over-100000"),
]


@pytest.mark.parametrize("command", ["run", "backfill"])
@pytest.mark.parametrize(("options", "words"), SELECTIONS)
def test_a_bad_selection_is_refused_before_anything_exists(
    tmp_path: Path, command: str, options: list[str], words: str
) -> None:
    _refused(tmp_path, [command, str(sql_config(tmp_path)), *options], words)


def test_a_granularity_the_live_table_may_settle_does_not_refuse_early(tmp_path: Path) -> None:
    """Without partition.granularity the live table's hidden transform may make it hourly: an
    hourly key is left for the engine to judge, a key no granularity reads is refused now."""
    from shadow_backfill.config import load_config
    from shadow_backfill.preflight import check_keys

    cfg = load_config(sql_config(tmp_path, partition={"column": "ds"}))
    assert check_keys(cfg, None, None, ["2024-01-01T05"]) == ["2024-01-01T05"]
    _refused(
        tmp_path,
        ["run", str(sql_config(tmp_path, partition={"column": "ds"})), "--partitions", "2024-13-01"],
        "'2024-13-01'",
    )


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"transform": {"function": "sb_no_such_module:fn"}}, "cannot import module 'sb_no_such_module'"),
        ({"transform": {"sql": "missing.sql"}}, "transform.sql: file"),
        ({"state": {"url": f"sqlite://u:{SECRET}@/x.db"}}, "an SQLite URL names a file and takes no user"),
        ({"shadow_table": "local.db.Backfill.v2"}, "lies inside the live table 'local.db.backfill'"),
    ],
    ids=["module-missing", "sql-file-missing", "sqlite-userinfo", "shadow-named-under-live"],
)
def test_a_transform_or_state_store_that_cannot_work_is_refused_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overrides: dict[str, Any], words: str
) -> None:
    monkeypatch.chdir(tmp_path)  # `sqlite://u:pw@/x.db` would create x.db here
    _refused(tmp_path, ["run", str(sql_config(tmp_path, **overrides)), *RANGE], words)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("INSERT INTO local.db.events SELECT * FROM local.db.raw WHERE ds = :partition", "INSERT statement"),
        ("SELECT * FROM local.db.raw WHERE ds = :partition; DROP TABLE local.db.events", "2 statements"),
        ("SELECT * FROM local.db.raw WHERE ds = :partition -- \nDROP TABLE local.db.events", "does not parse"),
    ],
    ids=["insert", "two-statements", "after-a-comment"],
)
def test_a_sql_transform_that_is_no_read_only_select_is_refused_first(tmp_path: Path, text: str, words: str) -> None:
    """One table's SQL transform runs on every chunk with `spark.sql`, as a pipeline layer's does."""
    (tmp_path / "t.sql").write_text(text)
    _refused(tmp_path, ["run", str(sql_config(tmp_path, transform={"sql": "t.sql"})), *RANGE], words)


def test_a_report_folder_that_cannot_be_made_is_refused_before_the_backfill(tmp_path: Path) -> None:
    cfg = str(sql_config(tmp_path))
    _refused(tmp_path, ["backfill", cfg, *RANGE, "--report", str(tmp_path / LONG)], "is 256 bytes long")
    (tmp_path / "afile").write_text("a file")
    _refused(tmp_path, ["backfill", cfg, *RANGE, "--report", str(tmp_path / "afile")], "is a file, not a folder")


def test_a_layer_key_over_255_characters_is_refused_at_load(tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["tables"][LONG] = {"config": "raw.yaml"}
    path.write_text(yaml.safe_dump(data))
    _refused(tmp_path, ["pipeline", "backfill", str(path), *RANGE], f"table key '{LONG[:40]}'... is 256 characters")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--partitions", "2024-02-30"], "'2024-02-30' is not a valid daily partition"),
        (["--start", "2024-01-03", "--end", "2024-01-01"], "range is reversed"),
        ([], "give --start and --end, or --partitions"),
    ],
    ids=["impossible-date", "reversed-range", "no-selection"],
)
def test_a_pipeline_refuses_a_bad_selection_before_anything_exists(tmp_path: Path, args: list[str], words: str) -> None:
    _refused(tmp_path, ["pipeline", "run", str(_pipeline(tmp_path, staging={})), *args], words)


def test_a_later_layers_missing_transform_is_found_before_the_first_layer_runs(tmp_path: Path) -> None:
    path = _pipeline(tmp_path, staging={}, features={"transform": {"function": "sb_no_such_module:fn"}})
    _refused(tmp_path, ["pipeline", "backfill", str(path), *RANGE], "cannot import module 'sb_no_such_module'")


@pytest.mark.parametrize(
    ("source", "target", "words"),
    [
        ("def f(spark, keys):\n    pass\n", "m:f", None),
        ("try:\n    from x import f\nexcept ImportError:\n    f = None\n", "m:f", None),
        ("from helpers import *\n", "m:anything", None),
        ("def __getattr__(name):\n    return name\n", "m:lazy", None),
        ("def g(*args):\n    pass\n", "m:g", None),
        ("class C:\n    pass\n", "m:C.f", None),
        # what the import accepts and a reading of the statements might not (a review's cases)
        ("def adapt(g):\n    return lambda spark, keys: g(keys)\n@adapt\ndef f(keys):\n    pass\n", "m:f", None),
        ("for _n in ['f']:\n    globals()[_n] = lambda spark, keys: None\n", "m:f", None),
        ("def _setup():\n    global f\n    f = lambda spark, keys: None\n_setup()\n", "m:f", None),
        ("import contextlib\nwith contextlib.nullcontext(print) as f:\n    pass\n", "m:f", None),
        ("for f in [print]:\n    pass\n", "m:f", None),
        ("try:\n    pass\nexcept* ValueError:\n    pass\nelse:\n    def f(spark, keys):\n        pass\n", "m:f", None),
        ("match 1:\n    case _:\n        def f(spark, keys):\n            pass\n", "m:f", None),
        ("match 1:\n    case f:\n        pass\n", "m:f", None),
        (
            "import sys, types\nclass _M(types.ModuleType):\n    f = print\nsys.modules[__name__].__class__ = _M\n",
            "m:f",
            None,
        ),
        ("def f(spark):\n    pass\nf = lambda spark, keys: None\n", "m:f", None),
        ("def f(spark, keys):\n    pass\n", "m:nope", "has no attribute 'nope'"),
        ("def f(spark):\n    pass\n", "m:f", "takes 1 positional parameter(s)"),
        ("def f(:\n", "m:f", "SyntaxError"),
    ],
)
def test_the_transform_function_is_read_from_its_source(
    tmp_path: Path, source: str, target: str, words: str | None
) -> None:
    """Read, not imported: what the source surely lacks is refused; what it may bind another
    way (a star import, a module `__getattr__`, a nested name) is left to the import."""
    path = tmp_path / "m.py"
    path.write_text(source)
    if words is None:
        check_function_source(path, target)
        return
    with pytest.raises(ConfigError, match=re.escape(words)):
        check_function_source(path, target)
