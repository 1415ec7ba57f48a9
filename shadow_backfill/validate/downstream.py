"""Downstream read tests, judged: pure code over what the consumers' queries returned.

The table's own checks cannot see what breaks a consumer: a renamed column, a type that turns
a join into an error, an aggregate the training job reads that moved. So the consumer's own
query is run on each shadow partition and on the same live partition (`measure/downstream.py`),
and judged here: it must run on the shadow, return rows, and give the columns it gives on live;
with `compare: true`, its result must match live's within the tolerance and the change
contract that judge columns (an output column named in `expected_changes` is held to that
entry's `mean_change` and `mean_change_pct` bounds, any other difference is an unexpected
change).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shadow_backfill.config import BackfillConfig, ValidationSpec
from shadow_backfill.config.validation import EXACT, Tolerance
from shadow_backfill.errors import ConfigError
from shadow_backfill.sql_guard import downstream_refusal
from shadow_backfill.validate.judge import grade
from shadow_backfill.vocabulary import Check, CheckStatus, worst

CHECK = "downstream_query"
# `compare: true` collects at most this many result rows per side: a consumer's aggregate, not
# its rows (row-level data never comes to the driver beyond a bounded sample).
MAX_COMPARED_ROWS = 1000
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "long", "integer")


@dataclass(frozen=True)
class QueryRun:
    """One downstream query run on one side (shadow or live) of one partition."""

    error: str | None = None
    """The first line of the error when the query failed (analysis or execution)."""
    columns: tuple[tuple[str, str], ...] = ()
    """The result's columns as (name, Spark type)."""
    has_rows: bool = False
    rows: tuple[tuple[Any, ...], ...] | None = None
    """The result rows, only for `compare: true` (at most `MAX_COMPARED_ROWS`)."""
    truncated: bool = False
    """The result had more than `MAX_COMPARED_ROWS` rows (so it was not compared)."""


@dataclass(frozen=True)
class QueryResult:
    """One query on one partition: its run on the side judged (the shadow; for a canary, live
    after the commit) and on live (None: not run there, or live has no such partition)."""

    query: LoadedQuery
    judged: QueryRun
    live: QueryRun | None


@dataclass(frozen=True)
class Difference:
    """One way a compared result differs: a value of a numeric column on a row, or a row only
    one side returned (`column` None)."""

    column: str | None
    row: tuple[Any, ...]
    shadow: Any
    live: Any


def judge_query(spec: ValidationSpec, query: LoadedQuery, shadow: QueryRun, live: QueryRun | None) -> Check:
    """One check per query and partition: the worst of what it found, the first finding named."""
    name = query.name
    if shadow.error is not None:
        return _check(name, CheckStatus.FAIL, f"fails on the shadow: {shadow.error}")
    if not shadow.has_rows:
        return _check(name, CheckStatus.FAIL, "returns no rows on the shadow")
    if live is None:
        return _check(name, CheckStatus.PASS, "runs on the shadow (no live partition to compare with)")
    if live.error is not None:
        return _check(name, CheckStatus.WARN, f"fails on live ({live.error}); runs on the shadow")
    if undeclared_column_changes(spec, shadow.columns, live.columns):
        return _check(name, CheckStatus.FAIL, f"gives columns {_cols(shadow)} on the shadow, {_cols(live)} on live")
    if not query.compare:
        return _check(name, CheckStatus.PASS, "runs on the shadow with live's columns")
    if shadow.truncated or live.truncated or shadow.rows is None or live.rows is None:
        message = f"returns more than {MAX_COMPARED_ROWS} rows: compare: true needs an aggregate query"
        return _check(name, CheckStatus.FAIL, message)
    if shadow.columns != live.columns:
        return _check(name, CheckStatus.PASS, "runs on the shadow; its columns changed as declared, so not compared")
    diffs = differences(shadow.columns, shadow.rows, live.rows, spec.tolerance, keys=query.keys)
    return _judge_differences(spec, name, diffs)


def undeclared_column_changes(
    spec: ValidationSpec, shadow: tuple[tuple[str, str], ...], live: tuple[tuple[str, str], ...]
) -> list[str]:
    """Result columns that differ between the sides (missing on one, or of another type) and
    that `expected_schema_changes` does not declare (added, removed or retyped)."""
    declared = spec.expected_schema_changes
    s, lv = dict(shadow), dict(live)
    changed = []
    for column in s.keys() | lv.keys():
        if column not in lv:
            ok = column in declared.added
        elif column not in s:
            ok = column in declared.removed
        else:
            ok = s[column] == lv[column] or column in declared.retyped
        if not ok:
            changed.append(column)
    if not changed and [c for c, _ in shadow if c in lv] != [c for c, _ in live if c in s]:
        changed.append("(column order)")
    return sorted(changed)


def _judge_differences(spec: ValidationSpec, name: str, diffs: list[Difference]) -> Check:
    if not diffs:
        return _check(name, CheckStatus.PASS, "gives live's result within the tolerance")
    statuses = [_grade(spec, d) for d in diffs]
    status = worst(statuses)
    first = diffs[statuses.index(status)] if status != CheckStatus.PASS else diffs[0]
    if first.column is None:
        side = "the shadow" if first.live is None else "live"
        what = f"row {list(first.row)} only on {side}"
    else:
        what = f"{first.column} on row {list(first.row)}: shadow {first.shadow}, live {first.live}"
    ignored = status == CheckStatus.PASS and first.column not in spec.expected_changes
    expected = (
        "differs, ignored (unexpected_changes: ignore)"
        if ignored
        else ("expected change" if status == CheckStatus.PASS else "differs from live")
    )
    return _check(name, status, f"{expected}: {what} ({len(diffs)} difference(s))", observed=len(diffs))


def _grade(spec: ValidationSpec, d: Difference) -> CheckStatus:
    """A declared column's difference by its bounds; anything else by `unexpected_changes`."""
    bounds = spec.expected_changes.get(d.column) if d.column is not None else None
    if bounds is None:
        return CheckStatus.PASS if spec.unexpected_changes == "ignore" else CheckStatus(spec.unexpected_changes)
    if not (_number(d.shadow) and _number(d.live)):
        return CheckStatus.FAIL  # a declared change bounds numbers: a value turned null or NaN breaks it
    change = abs(float(d.shadow) - float(d.live))
    pct = 100.0 * change / abs(float(d.live)) if float(d.live) != 0 else (math.inf if change else 0.0)
    statuses = [grade(v, th) for v, th in ((change, bounds.mean_change), (pct, bounds.mean_change_pct)) if th]
    return worst(statuses) if statuses else CheckStatus.PASS


def differences(
    columns: tuple[tuple[str, str], ...],
    shadow: tuple[tuple[Any, ...], ...],
    live: tuple[tuple[Any, ...], ...],
    tolerance: Tolerance = EXACT,
    keys: list[str] | None = None,
) -> list[Difference]:
    """Rows are matched on `keys` (default: the non-numeric columns; the n-th row with the same
    keys matches the n-th), numeric values compared as |shadow - live| <= abs + rel * |live|
    (float noise is not a change)."""
    if keys is not None:
        key_at = [i for i, (name, _) in enumerate(columns) if name in keys]
        numeric = [i for i, (_, kind) in enumerate(columns) if i not in key_at and _is_numeric(kind)]
    else:
        numeric = [i for i, (_, kind) in enumerate(columns) if _is_numeric(kind)]
        key_at = [i for i in range(len(columns)) if i not in numeric]
    by_key_shadow, by_key_live = _index(shadow, key_at), _index(live, key_at)
    out: list[Difference] = []
    for k in sorted(by_key_shadow.keys() | by_key_live.keys(), key=repr):
        s, lv = by_key_shadow.get(k), by_key_live.get(k)
        if s is None or lv is None:
            out.append(Difference(None, k[:-1], s, lv))
            continue
        for i in numeric:
            if not _close(s[i], lv[i], tolerance):
                out.append(Difference(columns[i][0], k[:-1], s[i], lv[i]))
    return out


def _is_numeric(kind: str) -> bool:
    return kind.split("(")[0].lower() in _NUMERIC


def _number(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _hashable(v: Any) -> Any:
    """A result value as part of a row's key (arrays and maps come back as lists and dicts)."""
    if isinstance(v, dict):
        return tuple(sorted((repr(k), _hashable(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    return v


def _index(rows: tuple[tuple[Any, ...], ...], keys: list[int]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    seen: dict[tuple[Any, ...], int] = {}
    out = {}
    for row in sorted(rows, key=repr):
        key = tuple(_hashable(row[i]) for i in keys)
        n = seen[key] = seen.get(key, -1) + 1
        out[(*key, n)] = row
    return out


def _close(s: Any, lv: Any, tolerance: Tolerance) -> bool:
    if s is None or lv is None:
        return s is None and lv is None
    a, b = float(s), float(lv)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return bool(tolerance.close(a, b))


def _cols(run: QueryRun) -> str:
    return ", ".join(f"{n} {t}" for n, t in run.columns) or "none"


def _check(name: str, status: CheckStatus, message: str, observed: Any = None) -> Check:
    return Check(CHECK, name, status, observed, "runs, returns rows, live's columns", f"{name}: {message}")


@dataclass(frozen=True)
class LoadedQuery:
    """A downstream query read from its file: `name` (its path as the config gives it) is what
    checks cite."""

    name: str
    text: str
    compare: bool
    keys: list[str] | None = None


def load_queries(config: BackfillConfig) -> list[LoadedQuery]:
    """Every `validation.downstream_queries` file, read before any Spark job: a missing file, or
    one that is not a read-only SELECT of `{table}` and its `reads`, is named (exit 2) instead of
    failing every partition. The config's load checked the files already; the text read here is
    the one that runs, so it is checked again (a file may change between load and run)."""
    loaded = []
    for q in config.validation.downstream_queries:
        path = config.resolve(q.sql)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"validation.downstream_queries: cannot read {str(path)!r}: {exc.strerror}") from None
        if problem := downstream_refusal(text, q.reads):
            raise ConfigError(f"validation.downstream_queries: downstream query {str(q.sql)!r} {problem}")
        loaded.append(LoadedQuery(str(q.sql), text, q.compare, q.keys))
    return loaded


def judge_on_live(name: str, key: str, run: QueryRun) -> Check:
    """A canary's check after its commit: the consumer's query runs on the live partition and
    returns rows (what readers now see)."""
    if run.error is not None:
        return _check(name, CheckStatus.FAIL, f"fails on live partition {key} after promotion: {run.error}")
    if not run.has_rows:
        return _check(name, CheckStatus.FAIL, f"returns no rows on live partition {key} after promotion")
    return _check(name, CheckStatus.PASS, f"runs on live partition {key} after promotion")
