"""The class archive of the classic CLI JVMs (`support.class_archive`) is really mapped: a JVM that
cannot map it falls back to loading every class from the jars without a word, and every kill
trial would pay seconds again with no behaviour test noticing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import START, MakeBackfill, killable_cli_env
from support.settings import CLI_JVM, TEST_CONF

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
