"""Two JVM starts that resolve packages never download at once (`shadow_backfill.jar_lock`):
the second waits for the first. Forced with two real processes and files as events, no timing."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from shadow_backfill.jar_lock import lock_path, one_download_at_a_time

_HOLDER = """
import sys
import time
from pathlib import Path
from shadow_backfill.jar_lock import one_download_at_a_time
conf = {"spark.jars.packages": "g:a:1", "spark.jars.ivy": sys.argv[1]}
with one_download_at_a_time(conf):
    Path(sys.argv[2]).write_text("holding")
    sys.stdin.readline()  # until the test says go
"""


def test_a_second_start_waits_for_the_first(tmp_path: Path) -> None:
    conf = {"spark.jars.packages": "g:a:1", "spark.jars.ivy": str(tmp_path)}
    holding = tmp_path / "holding"
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path), str(holding)], stdin=subprocess.PIPE, text=True
    )
    try:
        while not holding.exists():
            assert proc.poll() is None, "the holder died before it took the lock"
            time.sleep(0.01)  # polling for the holder's file, not making a race
        import fcntl

        with lock_path(conf).open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                taken = True
            except BlockingIOError:
                taken = False
        assert not taken, "the lock was free while another start held it"
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
        with one_download_at_a_time(conf):  # free again once the holder is gone
            pass
    finally:
        proc.kill()


def test_a_start_without_packages_takes_no_lock(tmp_path: Path) -> None:
    with one_download_at_a_time({"spark.jars.ivy": str(tmp_path)}):
        pass
    assert not lock_path({"spark.jars.ivy": str(tmp_path)}).exists()
