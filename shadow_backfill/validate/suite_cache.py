"""Suites GX has accepted before: a command whose suites have not changed does not import GX.

Why: importing great_expectations costs about 5 s of CPU in every process (7 s on the 2-core
bench machine), and the tool needs GX only to check each suite's expectation types and kwargs
(`suites.load_suite`); the suites are evaluated by the tool's own grouped jobs. On a small table
that import was most of a validation's time (the quick start's 6.4 s, of which 1.5 s is the
validation itself). GX accepts the same suite text the same way every time, so the acceptance
is kept per GX version and suite text: a file named by their hash in a per-user folder,
`$SHADOW_BACKFILL_CACHE_DIR` or `$XDG_CACHE_HOME/shadow-backfill/checked-suites` (else
`~/.cache/...`). A suite GX refuses is never kept, so its error is told every time; a folder that
cannot be written only means GX checks again. `tests/unit/test_suite_cache.py` fails if a
second load imports GX.
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from pathlib import Path

CACHE_DIR_ENV = "SHADOW_BACKFILL_CACHE_DIR"


def cache_dir() -> Path:
    chosen = os.environ.get(CACHE_DIR_ENV)
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "shadow-backfill" / "checked-suites"


def _entry(text: str) -> Path | None:
    """The file that says GX accepted `text`; None where GX's version is unknown (not installed:
    the check itself then says so)."""
    try:
        version = metadata.version("great_expectations")
    except metadata.PackageNotFoundError:
        return None
    digest = hashlib.sha256(f"great_expectations {version}\0{text}".encode()).hexdigest()
    return cache_dir() / digest


def accepted_before(text: str) -> bool:
    """GX accepted this suite text, in this GX version, in an earlier command."""
    entry = _entry(text)
    return entry is not None and entry.is_file()


def remember_accepted(text: str) -> None:
    """Keep GX's acceptance of `text` (best effort: nothing is lost if it cannot be kept)."""
    entry = _entry(text)
    if entry is None:
        return
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        entry.touch()
    except OSError:
        return
