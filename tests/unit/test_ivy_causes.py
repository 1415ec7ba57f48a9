"""A failed first start names its real cause, read from what Spark's Ivy printed (the JVM's
log). The fixtures are real Ivy output of Spark 3.5 (tests/fixtures/ivy_failures): two first
starts into one Ivy folder at once (the loser's text depends on the moment; both seen), a
network that refuses, an unknown repository host, a module Maven Central lacks, and a pom in
~/.m2 without its jar. All but the "download failed" one end in the same "unresolved
dependency ... not found" line, which alone would blame the coordinates or the network."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadow_backfill.ivy_causes import ivy_failure_cause

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ivy_failures"
IVY = "/home/u/.ivy2"


@pytest.mark.parametrize(
    ("fixture", "cause"),
    [
        (
            "concurrent-descriptor-part.txt",
            f"another process was downloading the same jars into {IVY} at the same time",
        ),
        (
            "concurrent-dependency-part.txt",
            f"another process was downloading the same jars into {IVY} at the same time",
        ),
        (
            "connection-refused.txt",
            "the Maven repository could not be reached (java.net.ConnectException: Connection refused)",
        ),
        ("unknown-host.txt", "the Maven repository could not be reached (host repo.nowhere.invalid not found)"),
        ("not-in-central.txt", "Maven Central has no org.example.nope:nope-lib:0.0.1"),
        ("pom-without-jar.txt", "the download of org.apache.commons:commons-lang3:3.14.0 failed"),
    ],
)
def test_each_failure_is_named_by_its_cause(fixture: str, cause: str) -> None:
    text = (FIXTURES / fixture).read_text()
    assert "unresolved dependency" in text or "download failed" in text  # what Spark's exception says
    found = ivy_failure_cause(text, IVY)
    assert found is not None and found.startswith(cause), found


def test_only_a_network_failure_suggests_working_offline() -> None:
    offline = [f for f in FIXTURES.iterdir() if "spark.jars_dir" in (ivy_failure_cause(f.read_text(), IVY) or "")]
    assert sorted(f.name for f in offline) == ["connection-refused.txt", "unknown-host.txt"]


def test_a_start_that_resolved_its_jars_has_no_ivy_cause() -> None:
    """Spark failing after a good resolution (a port, a bad setting) is quoted as Spark says it."""
    resolved = (FIXTURES / "not-in-central.txt").read_text().split(":: problems summary ::")[0]
    assert ivy_failure_cause(resolved + "Exception in thread main: java.net.BindException\n", IVY) is None
