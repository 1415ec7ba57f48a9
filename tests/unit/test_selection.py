"""The coverage rule (`support.selection.keeps`) held case by case: which pairs of engine and
format a test runs on, so a change to the rule that drops a pair the promise needs fails here."""

from __future__ import annotations

import pytest
from support.backends import BACKENDS
from support.selection import ENGINE_BACKENDS, REPEATS, STORE_BACKEND, Candidate, keeps

NAMES: list[str] = [str(p.id) for p in BACKENDS]
S3 = [n for n in NAMES if n.endswith("-s3")]


def _on(tier: str, *markers: str, postgres: bool = False) -> list[str]:
    """The backends a test of this tier with these markers runs on."""
    return [n for n in NAMES if keeps(Candidate(tier, n, frozenset(markers), postgres))]


def test_every_name_the_rule_uses_is_a_backend() -> None:
    assert {*ENGINE_BACKENDS, *REPEATS, STORE_BACKEND} <= set(NAMES)


def test_a_contract_clause_runs_on_every_backend_off_the_bucket_and_store_ones_on_it() -> None:
    assert _on("formats") == [n for n in NAMES if n not in S3]
    assert _on("formats", "store") == NAMES


def test_an_e2e_test_runs_once_per_engine() -> None:
    assert _on("e2e") == ["iceberg", "delta-sail", "iceberg-connect"]


def test_an_every_backend_test_skips_only_the_repeated_pairs() -> None:
    kept = ["iceberg", "delta", "parquet", "delta-sail", "parquet-sail", "iceberg-connect"]
    assert _on("e2e", "every_backend") == kept


def test_an_every_pair_test_runs_on_every_pair() -> None:
    assert _on("e2e", "every_pair", "store") == NAMES


def test_the_bucket_runs_each_format_only_where_the_format_decides() -> None:
    assert _on("e2e", "store") == ["iceberg", "delta-sail", "iceberg-connect", STORE_BACKEND]
    assert set(S3) <= set(_on("e2e", "store", "every_backend"))


@pytest.mark.parametrize("tier", ["formats", "e2e"])
def test_per_engine_and_postgres_narrow_every_tier(tier: str) -> None:
    assert _on(tier, "per_engine", "every_backend") == sorted(ENGINE_BACKENDS, key=NAMES.index)
    assert _on(tier, postgres=True) == sorted(ENGINE_BACKENDS, key=NAMES.index)


def test_named_backends_narrow_and_a_test_without_one_always_runs() -> None:
    only = frozenset({"delta", "iceberg-s3"})
    assert [n for n in NAMES if keeps(Candidate("formats", n, frozenset({"store"})), only)] == ["delta", "iceberg-s3"]
    assert keeps(Candidate("e2e", None), only)
