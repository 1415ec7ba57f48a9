"""Kill trials of the Parquet format's folder switch itself, without Spark.

A promotion on Hive-style Parquet moves many partition folders one by one (the replaced one out
to its generation folder, the new one in). Its CLI kill trials (test_kill.py) rarely land inside
those few milliseconds, so here a process runs only the switch, each rename slowed to 20 ms, and
is killed with SIGKILL at a seeded random point; the next process to open the table must leave
every partition all-old (the version was never journaled) or all-new (it was), the log agreeing
with the folders, and every replaced folder kept intact as the rollback target.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shadow_backfill.formats import folder_log
from shadow_backfill.formats.folder_files import count_rows, fingerprint
from shadow_backfill.formats.folder_log import FolderLog
from shadow_backfill.formats.folder_versions import Folder, Version

TRIALS = 24
SEED = 20261124
OLD = [f"2024-01-{d:02d}" for d in range(1, 21)]  # 20 partitions in live
SWITCHED = [*OLD[4:16], "2024-01-21", "2024-01-22"]  # 12 replaced, 2 added...
CLEARED = OLD[16:18]  # ...and 2 cleared (the new logic returned no rows for them)
RENAME_S = 0.02
LOG_FILE = Path(folder_log.__file__).resolve()
PACKAGE_ROOT = str(LOG_FILE.parents[2])  # the folder holding shadow_backfill/

CHILD = """
import os, sys, time
sys.path.insert(0, sys.argv[3])  # the package the parent runs, not another installed copy
from shadow_backfill.formats import folder_log
from shadow_backfill.formats.folder_log import FolderLog
from shadow_backfill.formats.folder_versions import Version
real = os.rename
def slow(a, b):
    time.sleep({delay})
    real(a, b)
os.rename = slow
log = FolderLog(sys.argv[1], "ds", lambda text: text)
version = Version.from_json(open(sys.argv[2]).read())
print("ready", os.path.realpath(folder_log.__file__), flush=True)
time.sleep({delay} * 5)
with log.locked():
    log.commit(version)
"""


def _write(folder: Path, marker: str) -> Folder:
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"id": [1, 2, 3], "v": [marker] * 3}), folder / "part-0.parquet")
    return Folder(folder.name.split("=", 1)[1], "g", fingerprint(folder), 3)


def _markers(folder: Path) -> set[str]:
    return set(pq.read_table(folder / "part-0.parquet").column("v").to_pylist())


def _table(root: Path) -> tuple[FolderLog, Version]:
    """A live table at version 0 (generation `old`) and version 1 staged (generation `new`)."""
    log = FolderLog(str(root), "ds", lambda text: text)
    old = {f"ds={k}": _write(root / f"ds={k}", "old") for k in OLD}
    v0 = Version(
        0, 0, "CREATE", {}, OLD, "{}", ["ds"], "id", {n: Folder(f.key, "old", f.fingerprint, 3) for n, f in old.items()}
    )
    with log.locked():
        log._write_exclusive(v0)
        (Path(log.log_dir) / f"{0:020d}.applied").touch()
    staged = {f"ds={k}": _write(Path(log.gen_dir("new")) / f"ds={k}", "new") for k in SWITCHED}
    staged = {n: Folder(f.key, "new", f.fingerprint, 3) for n, f in staged.items()}
    return log, log.next_version(v0, "OVERWRITE", {}, SWITCHED + CLEARED, staged)


def _checks(log: FolderLog, journaled: bool) -> dict[str, bool]:
    root = Path(log.root)
    latest = log.sync()
    assert latest is not None
    want_new = journaled
    live = {p.name: _markers(p) for p in root.glob("ds=*")}
    expect = (
        {f"ds={k}": {"new" if k in SWITCHED else "old"} for k in OLD + SWITCHED if k not in CLEARED}
        if want_new
        else {f"ds={k}": {"old"} for k in OLD}
    )
    kept = {p.name: _markers(p) for p in Path(log.gen_dir("old")).glob("ds=*")}
    return {
        "log's newest version is the journaled one": latest.version == (1 if journaled else 0),
        "every partition all-old or all-new, as the log says": live == expect,
        "the log's fingerprints match the folders": all(
            fingerprint(root / n) == f.fingerprint and count_rows(root / n) == f.rows for n, f in latest.folders.items()
        ),
        "replaced folders kept intact": (not journaled) or kept == {f"ds={k}": {"old"} for k in OLD[4:18]},
    }


@pytest.mark.slow
def test_killed_switch_ends_all_old_or_all_new(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    # From the child's "ready": 5 renames' worth of waiting, then the journal and the switch.
    span = RENAME_S * (5 + 2 * len(SWITCHED) + len(CLEARED)) * 1.2
    outcomes = []
    for trial in range(TRIALS):
        root = tmp_path / f"t{trial}" / "events"
        log, version = _table(root)
        spec = tmp_path / f"t{trial}" / "v1.json"
        spec.write_text(version.to_json())
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD.format(delay=RENAME_S), str(root), str(spec), PACKAGE_ROOT],
            start_new_session=True,
            stdout=subprocess.PIPE,
        )
        # the child switches with the very log code this process checks, loaded by its package
        assert proc.stdout is not None and proc.stdout.readline().decode().strip() == f"ready {LOG_FILE}"
        time.sleep(rng.uniform(0.0, span))
        how = "finished before the kill" if proc.poll() is not None else "killed"
        if how == "killed":
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        journaled = (Path(log.log_dir) / f"{1:020d}.json").exists()
        mid = journaled and not log.applied(1)
        fresh = FolderLog(str(root), "ds", lambda text: text)
        results = _checks(fresh, journaled)
        outcomes.append(
            {
                "trial": trial,
                "outcome": how,
                "journaled": journaled,
                "mid_switch": mid,
                "failed": [k for k, ok in results.items() if not ok],
            }
        )
    print(json.dumps(outcomes))
    assert not [o for o in outcomes if o["failed"]], outcomes
    assert sum(o["mid_switch"] for o in outcomes) >= TRIALS // 3, "kills must land inside the switch"
    assert any(not o["journaled"] for o in outcomes), "some kills must land before the journal"
