"""The JVM flags that keep the suite fast really take effect: a JVM that cannot map the class
archive of the classic CLI JVMs (`support.class_archive`) falls back to loading every class from
the jars without a word, and every kill trial would pay seconds again with no behaviour test
noticing; a replaced `spark.driver.extraJavaOptions` would bring G1 back to the test session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import START, MakeBackfill, killable_cli_env
from support.settings import CLI_JVM, TEST_CONF, TEST_JVM_OPTIONS

pytestmark = pytest.mark.classic


def test_cli_jvm_loads_most_classes_from_the_archive(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    options = CLI_JVM["spark.driver.extraJavaOptions"]
    assert "-XX:SharedArchiveFile=" in options, f"the CLI JVMs run without the class archive: {options}"
    loaded = tmp_path / "classes.log"
    conf = {**TEST_CONF, "spark.driver.extraJavaOptions": f"{options} -Xlog:class+load=info:file={loaded}"}
    bf = make_backfill(spark={"conf": conf})  # merged into the backend's spark settings
    cli = [sys.executable, "-m", "shadow_backfill.cli", "run", str(bf.config_path), "--start", START, "--end", START]
    run = subprocess.run(cli, env=killable_cli_env(bf, 0), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    sources = [line.partition("source: ")[2] for line in loaded.read_text().splitlines()]
    archived = sum(s == "shared objects file (top)" for s in sources)
    from_jars = sum(s.startswith(("file:", "jar:")) for s in sources)
    # measured: 15,217 classes from the archive, 1,202 read from jars (PySpark 4.1)
    assert archived > 5000, f"only {archived} classes came from the archive ({from_jars} from jars)"
    assert archived > 5 * from_jars, f"{archived} classes came from the archive, {from_jars} from jars"


def test_the_test_session_runs_the_parallel_collector(spark: Any) -> None:
    """`TEST_JVM_OPTIONS` reaches the long-lived classic session's JVM (a later setting of
    `spark.driver.extraJavaOptions` would replace it without a word, and G1 would be back)."""
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = sorted(str(b.getName()) for b in beans)
    assert names == ["PS MarkSweep", "PS Scavenge"], f"{TEST_JVM_OPTIONS} did not reach the session's JVM: {names}"
