"""Great Expectations 1.x suites stored as JSON in `expectations/`.

Suites are checked completely before any Spark work: a malformed file, an expectation type GX
does not know, or a column the shadow table does not have is one clear ConfigError, so a typo
never turns into a run that silently checks less than the user thinks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shadow_backfill.config import MAX_CONFIG_DEPTH, BackfillConfig, nested_deeper_than, read_text_file
from shadow_backfill.errors import ConfigError, first_line
from shadow_backfill.validate.suite_cache import accepted_before, remember_accepted

# Keyword arguments that name columns, per GX convention.
# Carried in each GX expectation's meta: GX reorders results, this maps them back.
ID_META = "shadow_backfill_id"
_COLUMN_KWARGS = ("column", "column_A", "column_B")
_COLUMN_LIST_KWARGS = ("column_list",)


@dataclass(frozen=True)
class Expectation:
    """One expectation as stored: its GX type, kwargs and meta, plus where it came from."""

    suite: str
    index: int
    type: str
    kwargs: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """A stable, readable name for reports and JUnit: suite/index:type(column)."""
        col = self.kwargs.get("column")
        return f"{self.suite}/{self.index}:{self.type}" + (f"({col})" if col else "")

    @property
    def severity(self) -> str:
        """Failing expectations fail the partition unless meta marks them as warnings."""
        sev = str(self.meta.get("severity", "critical")).lower()
        return "warn" if sev in ("warning", "warn", "info") else "fail"

    def columns(self) -> list[str]:
        cols = [self.kwargs[k] for k in _COLUMN_KWARGS if isinstance(self.kwargs.get(k), str)]
        for k in _COLUMN_LIST_KWARGS:
            if isinstance(self.kwargs.get(k), list):
                cols.extend(str(c) for c in self.kwargs[k])
        return cols


@dataclass(frozen=True)
class Suite:
    """A GX suite file as loaded: its expectations in file order, each with a stable id."""

    name: str
    path: Path
    expectations: list[Expectation]

    def to_gx(self) -> Any:
        """The GX ExpectationSuite object (used by the reference evaluation)."""
        import great_expectations as gx
        from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

        objs = [
            ExpectationConfiguration(type=e.type, kwargs=dict(e.kwargs), meta={**e.meta, ID_META: e.id}).to_domain_obj()
            for e in self.expectations
        ]
        return gx.ExpectationSuite(name=self.name, expectations=objs)


def _known_type(kind: str) -> bool:
    from great_expectations.expectations.registry import get_expectation_impl

    try:
        get_expectation_impl(kind)
    except Exception:
        return False
    return True


def load_suite(path: Path) -> Suite:
    """A suite file read and checked whole. GX checks each expectation's type and kwargs unless
    it accepted this very text before (`suite_cache`: importing GX costs seconds per process)."""
    text = read_text_file(path, "expectation suite")
    try:
        data = json.loads(text)
        too_deep = nested_deeper_than(data, MAX_CONFIG_DEPTH)
    except ValueError as exc:
        raise ConfigError(f"expectation suite {path.name}: not valid JSON: {exc}") from None
    except RecursionError:  # the decoder recurses per level: bounded as the config is
        too_deep = True
    if too_deep:
        raise ConfigError(f"expectation suite {path.name}: nested more than {MAX_CONFIG_DEPTH} levels deep")
    if not isinstance(data, dict) or not isinstance(data.get("expectations"), list):
        raise ConfigError(f"expectation suite {path.name}: expected an object with an 'expectations' list")
    name = str(data.get("name") or path.stem)
    by_gx = not accepted_before(text)
    where = f"expectation suite {path.name}, expectation #"
    out = [_expectation(name, i, item, f"{where}{i}", by_gx) for i, item in enumerate(data["expectations"])]
    if by_gx:
        remember_accepted(text)
    return Suite(name, path, out)


def _expectation(suite: str, index: int, item: object, where: str, by_gx: bool) -> Expectation:
    """One expectation of a suite file, checked (by GX too, when `by_gx`)."""
    if not isinstance(item, dict):
        raise ConfigError(f"{where}: must be an object with 'type' and 'kwargs'")
    kind = item.get("type") or item.get("expectation_type")
    if not isinstance(kind, str):
        raise ConfigError(f"{where}: missing 'type'")
    if by_gx and not _known_type(kind):
        raise ConfigError(f"{where}: unknown expectation type {kind!r}")
    kwargs = item.get("kwargs", {})
    if not isinstance(kwargs, dict):
        raise ConfigError(f"{where} ({kind}): 'kwargs' must be an object")
    if by_gx:
        try:  # let GX check the kwargs themselves (types, required ones)
            from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

            ExpectationConfiguration(type=kind, kwargs=dict(kwargs)).to_domain_obj()
        except Exception as exc:
            raise ConfigError(f"{where} ({kind}): invalid kwargs: {first_line(exc)}") from None
    return Expectation(suite, index, kind, dict(kwargs), dict(item.get("meta") or {}))


def load_suites(config: BackfillConfig) -> list[Suite]:
    return [load_suite(config.resolve(p)) for p in config.expectations]


def check_columns(suites: Iterable[Suite], columns: Iterable[str]) -> None:
    """Refuse expectations on columns the table does not have (before any work starts)."""
    have = set(columns)
    for suite in suites:
        for e in suite.expectations:
            if e.type == "expect_column_to_exist":
                continue  # its whole point is to check for a column
            missing = [c for c in e.columns() if c not in have]
            if missing:
                raise ConfigError(
                    f"expectation suite {suite.path.name}, expectation #{e.index} ({e.type}): "
                    f"column {missing[0]!r} does not exist in the shadow table (columns: {sorted(have)})"
                )
