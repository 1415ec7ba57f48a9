"""The JVM's own output goes to a log file, ours stays on the terminal (`shadow_backfill.jvm_output`).

A real child process stands in for the JVM: it inherits descriptors 1 and 2 as PySpark's
launcher's `Popen` does, and keeps writing after the parent has its own back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shadow_backfill.jvm_output import LOG_DIR_ENV, announce_first_start, jvm_output_to, missing_jars, new_jvm_log

_CHILD = """
import sys
print(":: loading settings :: file = ivysettings.xml", flush=True)
print(":: resolving dependencies ::", file=sys.stderr, flush=True)
sys.stdin.readline()  # until the parent has its descriptors back
print("12:00:00 WARN NativeCodeLoader: later", file=sys.stderr, flush=True)
"""


def test_the_child_writes_to_the_log_for_its_whole_life(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(LOG_DIR_ENV, str(tmp_path / "logs"))
    log = new_jvm_log()
    assert log is not None and log.parent == tmp_path / "logs" and log.name.startswith("spark-")
    assert oct(log.stat().st_mode & 0o777) == "0o600"
    with jvm_output_to(log):
        child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, text=True)
    print("ours on stdout")
    print("ours on stderr", file=sys.stderr)
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    out, err = capfd.readouterr()
    assert "ours on stdout" in out and "ours on stderr" in err
    assert ":: " not in out + err and "WARN" not in out + err
    text = log.read_text()
    assert ":: loading settings ::" in text and ":: resolving dependencies ::" in text and "WARN" in text


def test_without_a_log_the_child_stdout_goes_to_our_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """Where no log can be made: `--json` stays parseable, the lines are not lost."""
    with jvm_output_to(None):
        subprocess.run([sys.executable, "-c", "print(':: loading settings ::')"], check=True)
    out, err = capfd.readouterr()
    assert out == "" and ":: loading settings ::" in err


def test_the_first_start_is_announced_once(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    coords = "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.1"
    conf = {"spark.jars.packages": coords, "spark.jars.ivy": str(tmp_path / "ivy")}
    log = tmp_path / "spark.log"
    assert missing_jars(conf, "3.5.3") == [coords]
    assert announce_first_start(conf, "3.5.3", log)
    jars = tmp_path / "ivy" / "jars"
    jars.mkdir(parents=True)
    (jars / "org.apache.iceberg_iceberg-spark-runtime-3.5_2.12-1.10.1.jar").write_bytes(b"jar")
    assert missing_jars(conf, "3.5.3") == [] and not announce_first_start(conf, "3.5.3", log)
    _, err = capfd.readouterr()
    assert err.count("\n") == 1 and "first start only" in err and str(log) in err, err


def test_our_output_comes_back_when_the_start_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A JVM that fails to start must not take the terminal with it: the error line is ours."""
    monkeypatch.setenv(LOG_DIR_ENV, str(tmp_path / "logs"))
    log = new_jvm_log()
    with pytest.raises(RuntimeError, match="no JVM"), jvm_output_to(log):
        raise RuntimeError("no JVM")
    print("error: could not start Spark", file=sys.stderr)
    assert "error: could not start Spark" in capfd.readouterr().err


def test_a_log_folder_others_can_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another user could swap our log there for a link to one of our files (`_ours_alone`)."""
    shared = tmp_path / "logs"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv(LOG_DIR_ENV, str(shared))
    assert new_jvm_log() is None
    shared.chmod(0o700)
    assert new_jvm_log() is not None


def test_a_log_swapped_for_a_link_is_not_followed(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    log = tmp_path / "spark-swapped.log"
    log.symlink_to(victim)
    with jvm_output_to(log):
        subprocess.run([sys.executable, "-c", "print(':: loading settings ::')"], check=True)
    assert victim.read_text() == "mine\n"
    assert ":: loading settings ::" in capfd.readouterr().err  # where a log cannot be opened


_ENDS_LATE = """
import sys, time
sys.stdin.read()  # until its parent's end closes our stdin, as Spark's JVM does
time.sleep(0.5)  # the JVM's own shutdown: files written at exit
open(sys.argv[1], "w").write("written at exit")
"""
_COMMAND = """
import subprocess, sys
from shadow_backfill.jvm_output import wait_for_jvm_at_exit
log = open(sys.argv[2], "w")  # the JVM's output goes to its log, not to our caller's pipes
proc = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[3]], stdin=subprocess.PIPE, stdout=log, stderr=log)
wait_for_jvm_at_exit(proc)
"""


def test_a_command_ends_after_its_jvm(tmp_path: Path) -> None:
    """A caller waiting for the command's output to end (a scheduler, `subprocess.run`) finds
    the JVM gone and what it writes at exit written; without the wait, it would still run."""
    marker = tmp_path / "archive"
    run = subprocess.run(
        [sys.executable, "-c", _COMMAND, _ENDS_LATE, str(tmp_path / "jvm.log"), str(marker)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert marker.read_text() == "written at exit"


_STOP_LOGS = """
import logging, sys
from shadow_backfill.jvm_output import quietly

def stop():  # as py4j reports a connection the JVM closed during a command
    try:
        raise ConnectionResetError(104, "Connection reset by peer")
    except ConnectionResetError:
        logging.exception("Exception while sending command.")
        raise

quietly(stop)
logging.getLogger("after").error("logging works again")
"""


def test_the_stop_at_exit_prints_no_traceback(tmp_path: Path) -> None:
    """py4j logs a connection reset during Spark's stop with `logging.exception` on the root
    logger (CI met it after a failed command's last line). The stop at exit runs with logging
    off: nothing of it reaches the terminal, and logging is on again afterwards."""
    run = subprocess.run([sys.executable, "-c", _STOP_LOGS], capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "Exception while sending" not in run.stderr, run.stderr
    assert "logging works again" in run.stderr
