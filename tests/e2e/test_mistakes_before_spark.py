"""A mistake that needs no Spark to find is told before Spark starts: the real CLI, in its own
process, prints one `error:` line and exits 2 (a usage or config error: nothing written).

Why a JVM start would show: the process runs with SPARK_HOME and JAVA_HOME pointing nowhere, so
a command that reached Spark fails differently (exit 1, naming spark-submit) and no Ivy line
prints. The transform module, if imported, would write a marker file: it is read, not imported.
How long each refusal took is printed (`-s`) for the benchmarks page, never asserted here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RANGE = ["--start", "2024-01-01", "--end", "2024-01-02"]
MODULE = """
from pathlib import Path

Path(__file__).with_name("IMPORTED").write_text("imported")


def features(spark, partitions):
    return spark.range(1)


def one(spark):
    return spark
"""
CONFIG = {
    "live_table": "local.db.features",
    "format": "iceberg",
    "partition": {"column": "ds", "granularity": "daily"},
    "keys": ["entity_id"],
    "transform": {"function": "features_mod:features", "python_path": ["."]},
    "spark": {"warehouse": "warehouse"},
}
CASES = [
    ("reversed range", {}, ["backfill", "--start", "2024-02-01", "--end", "2024-01-01"], "range is reversed"),
    ("no selection", {}, ["backfill"], "no partitions selected"),
    (
        "impossible date",
        {},
        ["backfill", "--start", "2024-13-01", "--end", "2024-12-01"],
        "'2024-13-01' is not a valid",
    ),
    ("missing function", {"function": "features_mod:nope"}, ["run", *RANGE], "has no attribute 'nope'"),
    ("no such module", {"function": "nomod:features"}, ["backfill", *RANGE], "cannot import module 'nomod'"),
    ("wrong signature", {"function": "features_mod:one"}, ["run", *RANGE], "takes 1 positional parameter(s)"),
    ("syntax error", {"function": "broken_mod:f"}, ["run", *RANGE], "SyntaxError"),
    ("bad lag", {}, ["backfill", "--last", "3", "--lag", "zz"], "--lag 'zz' is not a duration"),
    ("bad until", {}, ["backfill", *RANGE, "--until", "25:00"], "--until '25:00' is not a wall-clock time"),
    ("unknown key", {"runn": {}}, ["backfill", *RANGE], "field 'runn': Extra inputs are not permitted"),
    ("promote bad date", {}, ["promote", "--partitions", "2024-13-01"], "'2024-13-01' is not a valid"),
    ("rollback of nothing", {}, ["rollback"], "give exactly one of --promotion ID or --to-version V"),
]


def _write(tmp_path: Path, change: dict[str, str | dict[str, str]]) -> Path:
    (tmp_path / "features_mod.py").write_text(MODULE)
    (tmp_path / "broken_mod.py").write_text("def f(:\n")
    config = yaml.safe_load(yaml.safe_dump(CONFIG))
    for key, value in change.items():
        if key == "function":
            config["transform"]["function"] = value
        else:
            config[key] = value
    path = tmp_path / "backfill.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(("change", "args", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_needing_no_spark_is_told_before_spark_starts(
    tmp_path: Path, change: dict[str, str], args: list[str], words: str
) -> None:
    cfg = _write(tmp_path, change)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SPARK_HOME": str(tmp_path / "no-spark"),
        "JAVA_HOME": str(tmp_path / "no-java"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "COLUMNS": "200",
    }
    command = [sys.executable, "-m", "shadow_backfill.cli", args[0], str(cfg), *args[1:]]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    print(f"{args[0]} {words[:30]!r}: {time.perf_counter() - began:.2f} s")
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    assert words in lines[0]
    assert "resolving dependencies" not in done.stderr + done.stdout
    assert not (tmp_path / "IMPORTED").exists(), "the transform module was imported"
    assert not (tmp_path / "warehouse").exists()
