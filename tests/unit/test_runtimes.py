"""The one version table: every supported Spark line names official runtimes, and any other
PySpark is refused in one sentence naming the supported ones (no Spark needed)."""

from __future__ import annotations

import pytest

from shadow_backfill.errors import SessionError
from shadow_backfill.formats.runtimes import SPARK_LINES, spark_line


def test_each_line_names_official_runtimes_for_its_scala() -> None:
    for line in SPARK_LINES.values():
        assert line.iceberg.startswith(f"org.apache.iceberg:iceberg-spark-runtime-{line.spark}_{line.scala}:")
        assert line.delta.startswith("io.delta:delta-spark_") and f"_{line.scala}:" in line.delta
    assert spark_line("3.5.9").scala == "2.12" and spark_line("4.1.4").scala == "2.13"


@pytest.mark.parametrize("version", ["4.3.0", "4.2.1", "3.4.4"])
def test_unsupported_spark_is_one_sentence(version: str) -> None:
    with pytest.raises(SessionError) as err:
        spark_line(version)
    msg = str(err.value)
    assert f"PySpark {version} is not supported" in msg and "3.5, 4.0, 4.1" in msg and "\n" not in msg
