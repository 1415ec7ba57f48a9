"""Which backends a test runs on: the coverage promise as one pure rule (`keeps`).

The promise: every behaviour is tested on every backend where the backend can change its
outcome. A backend is a pair (engine, format) with its files somewhere; the rule keeps a test on
a pair only where that pair can decide something no other kept pair already decides.

- `tests/formats` (the contract clauses) keep every pair: a clause reads and commits through the
  format itself, a few seconds each.
- `tests/e2e` keeps one backend per engine (`ENGINE_BACKENDS`) unless the test is marked
  `every_backend` (the format decides its outcome beyond the clauses: commits, kills, writes).
- An `every_backend` test still skips the *repeats* (`REPEATS`): pairs whose engine and format
  both run, end to end, under another kept pair. Delta over Spark Connect runs the same
  delta-spark on the server as Delta on classic Spark, and the Connect engine's part of every
  path runs under `iceberg-connect`; Sail is kept because Sail implements Delta and Parquet
  itself. `every_pair` marks what the engine and the format decide *together*: a killed Connect
  client whose Delta commit the server still finishes (`test_kill.py`).
- The S3 backends run only `store` tests (where the files lie can change the outcome). Of those,
  an end-to-end test not marked `every_backend` runs on one S3 backend (`STORE_BACKEND`): the
  contract clauses already run each format's reads and commits on the bucket.
- `per_engine` (or the PostgreSQL state store, whose dialect no format sees) narrows any tier to
  `ENGINE_BACKENDS`. `SB_BACKENDS=a,b` (the inner loop) narrows to the named backends.

Kept free of pytest and Spark so `tests/unit/test_selection.py` holds the rule itself.
"""

from __future__ import annotations

from dataclasses import dataclass

# One backend per Spark engine, chosen so that each format also runs end to end (Iceberg classic
# and over Connect, Delta on Sail); Parquet's own paths are `every_backend` where it decides.
ENGINE_BACKENDS = frozenset({"iceberg", "delta-sail", "iceberg-connect"})
# Pairs whose engine and format both run end to end elsewhere (module docstring).
REPEATS = frozenset({"delta-connect"})
# The S3 backend that runs the `store` e2e tests no format decides: Parquet by name keeps the
# tool's own commit log on the bucket, so the most of the tool's code meets the object store.
STORE_BACKEND = "parquet-metastore-s3"


@dataclass(frozen=True)
class Candidate:
    """What the rule needs to know of one collected test."""

    tier: str  # the folder under tests/: unit, formats, e2e (or another)
    backend: str | None  # the table backend's name, None for a test without one
    markers: frozenset[str] = frozenset()
    postgres: bool = False  # run on the PostgreSQL state store

    @property
    def on_store(self) -> bool:
        return self.backend is not None and self.backend.endswith("-s3")


def keeps(c: Candidate, only: frozenset[str] = frozenset()) -> bool:
    """Whether the test runs on its backend (a test without one always runs)."""
    if c.backend is None:
        return True
    if only and c.backend not in only:
        return False
    if c.on_store and "store" not in c.markers:
        return False
    if "per_engine" in c.markers or c.postgres:
        return c.backend in ENGINE_BACKENDS
    if c.tier != "e2e" or "every_pair" in c.markers:
        return True
    if c.on_store:
        return "every_backend" in c.markers or c.backend == STORE_BACKEND
    if "every_backend" in c.markers:
        return c.backend not in REPEATS
    return c.backend in ENGINE_BACKENDS
