"""One download of Spark's packages at a time on a machine.

Spark resolves `spark.jars.packages` with Ivy into one cache folder per user (`~/.ivy2`,
`~/.ivy2.5.2` on Spark 4), and Ivy takes no lock of its own: two first starts at once download
the same jar into the same part file, and one of them fails ("impossible to move part file to
definitive one"), with a message that blames the network. So a start that resolves packages
holds an exclusive lock on a file beside that cache while its JVM starts; the next one then finds
the jars there. A killed holder's lock goes with its process (flock).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator, Mapping
from pathlib import Path

LOCK_NAME = ".shadow-backfill-ivy.lock"


def lock_path(conf: Mapping[str, str]) -> Path:
    """The lock of the Ivy folder these settings resolve into (`spark.jars.ivy`, else home)."""
    ivy = conf.get("spark.jars.ivy")
    return (Path(ivy) if ivy else Path.home()) / LOCK_NAME


@contextlib.contextmanager
def one_download_at_a_time(conf: Mapping[str, str]) -> Iterator[None]:
    """Hold the machine's Ivy lock while a JVM with these settings starts, if it resolves packages."""
    if not conf.get("spark.jars.packages"):
        yield
        return
    path = lock_path(conf)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a")
    except OSError:  # a home we cannot write: Ivy will say so itself, in its own words
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:  # a file system without locks (NFS without its lock service): as before
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
