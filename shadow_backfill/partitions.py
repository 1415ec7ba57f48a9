"""Partition values: parsing, ranges, and predicates built from typed literals.

A partition is a period (a day, an hour, a month). Its *key* is the canonical text the user
types and the state store keeps ("2024-01-31", "2024-01-31T05", "2024-01"); its *value* is the
typed Python object written to the partition column (date, datetime, str or int). Predicates
are built from typed values, never by pasting user text into SQL, so a partition value cannot
inject anything.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any, Literal

from pydantic import field_validator

from shadow_backfill.errors import ConfigError, UsageError
from shadow_backfill.strict import COLUMN, Strict

if TYPE_CHECKING:
    from pyspark.sql import Column

PartitionValue = dt.date | dt.datetime | str | int


class PartitionSpec(Strict):
    """How partitions are named, typed and enumerated."""

    column: str
    """The partition column the backfill works by (for a hidden Iceberg transform such as
    `days(event_ts)`: the source column, `event_ts`)."""
    granularity: Literal["daily", "hourly", "monthly"] = "daily"
    """One partition per day, hour or month. By default: daily, or the granularity of a hidden
    Iceberg transform (`days`/`hours`/`months` of a timestamp) read from the live table."""
    type: Literal["date", "timestamp", "string", "int"] | None = None
    """The type of the partition column. By default read from the live table (date, timestamp,
    string or int); write it only to override."""
    format: str | None = None
    """strftime pattern for string and int partition columns, e.g. `%Y%m%d`."""
    values: list[str] | None = None
    """An explicit list of partitions, used when no range is given on the command line."""

    @field_validator("column")
    @classmethod
    def _column_name(cls, v: str) -> str:
        if not COLUMN.match(v):
            raise ValueError(f"{v!r} is not a plain column name")
        return v


_KEY_FORMAT = {"daily": "%Y-%m-%d", "hourly": "%Y-%m-%dT%H", "monthly": "%Y-%m"}
_SPARK_KEY_FORMAT = {"daily": "yyyy-MM-dd", "hourly": "yyyy-MM-dd'T'HH", "monthly": "yyyy-MM"}
_DEFAULT_TYPE = {"daily": "date", "hourly": "timestamp", "monthly": "string"}
_DEFAULT_STR_FORMAT = {"daily": "%Y-%m-%d", "hourly": "%Y-%m-%d-%H", "monthly": "%Y-%m"}
_DEFAULT_INT_FORMAT = {"daily": "%Y%m%d", "hourly": "%Y%m%d%H", "monthly": "%Y%m"}
# The column types each granularity can be stored in (what from_spec accepts as partition.type).
_COLUMN_KINDS = {
    "daily": ("date", "timestamp", "string", "int"),
    "hourly": ("timestamp", "string", "int"),
    "monthly": ("date", "timestamp", "string", "int"),
}
_SPARK_KIND = {
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp",
    "string": "string",
    "int": "int",
    "bigint": "int",
    "smallint": "int",
    "tinyint": "int",
}
# One command selects at most this many partitions: a typo like --end 9999-12-31 is refused
# before millions of keys are expanded (100000 is 11 years hourly, 273 years daily).
MAX_PARTITIONS = 100_000


def column_kind(spark_type: str) -> str | None:
    """A Spark type (`timestamp`, `varchar(8)`, `bigint`) as the partition.type that holds it."""
    if spark_type.lower().startswith(("varchar", "char")):
        return "string"
    return _SPARK_KIND.get(spark_type.split("(")[0].lower())


def quote_identifier(name: str) -> str:
    """Back-quote a column name for the rare places an API only takes SQL text."""
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: PartitionValue) -> str:
    """Render a *typed* value as a Spark SQL literal.

    Only used where an API accepts nothing but SQL text (Delta's `replaceWhere`). The value
    was produced by :class:`PartitionScheme` from a parsed period, and strings are escaped, so
    the text can only ever be one literal.
    """
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP'{value.strftime('%Y-%m-%d %H:%M:%S')}'"
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    if isinstance(value, bool):
        raise TypeError("booleans are not partition values")
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        return f"'{escaped}'"
    raise TypeError(f"unsupported partition value type {type(value).__name__}")


@dataclass(frozen=True)
class PartitionScheme:
    """Knows how one table's partition column is typed and how its periods are enumerated."""

    column: str
    granularity: str
    type: str
    format: str | None

    @classmethod
    def from_spec(cls, spec: PartitionSpec) -> PartitionScheme:
        typ = spec.type or _DEFAULT_TYPE[spec.granularity]
        fmt = spec.format
        if typ == "string" and fmt is None:
            fmt = _DEFAULT_STR_FORMAT[spec.granularity]
        if typ == "int" and fmt is None:
            fmt = _DEFAULT_INT_FORMAT[spec.granularity]
        if typ == "date" and spec.granularity == "hourly":
            raise UsageError("partition.type 'date' cannot hold hourly partitions")
        return cls(spec.column, spec.granularity, typ, fmt)

    @property
    def ranged(self) -> bool:
        """A timestamp column holds instants, not period names: a key stands for the [start, end)
        range of its period (hidden partitioning: Iceberg `days(ts)`, `hours(ts)`, `months(ts)`),
        and reads, overwrites, row checks and validation grouping all use that range."""
        return self.type == "timestamp"

    def key_column(self) -> Column:
        """Each row's partition as text, equal to `column_text(k)` for the rows of key k."""
        F = _functions()
        if self.ranged:
            return F.date_format(F.col(self.column), _SPARK_KEY_FORMAT[self.granularity])
        return F.col(self.column).cast("string")

    def key_value(self) -> Column:
        """Each row's partition as a value to group by: the column itself, which casts to
        `key_column`'s text, or that text for a ranged column (a period has no column of its own)."""
        return self.key_column() if self.ranged else _functions().col(self.column)

    # ---- keys <-> periods -------------------------------------------------------------------

    def parse_key(self, text: str) -> dt.datetime:
        """Parse user text into the period it names; the error names the bad value."""
        t = text.strip()
        try:
            if self.granularity == "monthly":
                period = dt.datetime.strptime(t[:7], "%Y-%m")
                if len(t) not in (7, 10) or (len(t) == 10 and not t.endswith("-01")):
                    raise ValueError
            elif self.granularity == "daily":
                if len(t) != 10:
                    raise ValueError
                period = dt.datetime.combine(dt.date.fromisoformat(t), dt.time())
            else:
                normal = t.replace(" ", "T")
                if len(normal) == 13:
                    period = dt.datetime.strptime(normal, "%Y-%m-%dT%H")
                else:
                    period = dt.datetime.fromisoformat(normal)
                    if period.minute or period.second or period.microsecond or period.tzinfo:
                        raise ValueError
        except ValueError:
            example = dt.datetime(2024, 1, 31, 5).strftime(_KEY_FORMAT[self.granularity])
            raise UsageError(
                f"partition {text!r} is not a valid {self.granularity} partition (expected like {example!r})"
            ) from None
        return period

    def key(self, period: dt.datetime) -> str:
        return period.strftime(_KEY_FORMAT[self.granularity])

    def normalize(self, text: str) -> str:
        return self.key(self.parse_key(text))

    def sort(self, keys: Iterable[str]) -> list[str]:
        """Partition keys in time order: the one place keys from the store, a format's listing
        or the user are put in order (by the period each names, not by its text). A canonical
        key's shape names its period, so the order holds before the granularity is read from
        the live table (`status` and `report` read only the state store)."""
        return sorted(keys, key=self._period_of)

    def _period_of(self, key: str) -> dt.datetime:
        """The period a key of any granularity names, by its shape (no strptime: a status of
        100,000 keys sorts in a tenth of a second); other text as `parse_key` reads it."""
        try:
            if len(key) == 10:
                return dt.datetime.combine(dt.date.fromisoformat(key), dt.time())
            if len(key) == 13 and key[10] == "T":
                return dt.datetime.combine(dt.date.fromisoformat(key[:10]), dt.time(int(key[11:])))
            if len(key) == 7 and key[4] == "-":
                return dt.datetime(int(key[:4]), int(key[5:]), 1)
        except ValueError:
            pass
        return self.parse_key(key)

    def resolved(self, spec: PartitionSpec, column_type: str, hidden: str | None, table: str) -> PartitionScheme:
        """This scheme completed by what the live table says and the config left out: the
        column's type, and the granularity of a hidden transform of it (`hidden`). The tool
        read them; asking the user to type them again helps no one. What the config wrote
        wins, and a written granularity that contradicts the table's transform is refused
        here, naming both (a written type that contradicts the column is refused by
        `check_column_type`)."""
        if hidden is not None and "granularity" in spec.model_fields_set and hidden != spec.granularity:
            raise ConfigError(
                f"partition.granularity is {spec.granularity!r}, but {table} is partitioned by a hidden "
                f"{hidden} transform of {spec.column!r}: set partition.granularity to {hidden!r} or leave it out"
            )
        update: dict[str, str] = {}
        if hidden is not None:
            update["granularity"] = hidden
        kind = column_kind(column_type)
        granularity = update.get("granularity", spec.granularity)
        if spec.type is None and kind in _COLUMN_KINDS[granularity]:
            update["type"] = kind
        return PartitionScheme.from_spec(spec.model_copy(update=update)) if update else self

    def value(self, key: str) -> PartitionValue:
        """The typed value stored in the partition column for a key."""
        period = self.parse_key(key)
        if self.type == "date":
            return period.date()
        if self.type == "timestamp":
            # Aware UTC, so PySpark converts it the same way whatever the machine's time zone.
            return period.replace(tzinfo=dt.timezone.utc)
        assert self.format is not None
        rendered = period.strftime(self.format)
        if self.type == "int":
            try:
                return int(rendered)
            except ValueError:
                raise UsageError(f"partition.format {self.format!r} does not render an integer") from None
        return rendered

    def column_text(self, key: str) -> str:
        """What `key_column()` yields for this partition's rows: `CAST(column AS STRING)` (session
        time zone UTC), or the key itself for a ranged column."""
        if self.ranged:
            return self.normalize(key)
        v = self.value(key)
        if isinstance(v, dt.datetime):
            return v.strftime("%Y-%m-%d %H:%M:%S")
        if isinstance(v, dt.date):
            return v.isoformat()
        return str(v)

    def key_from_column_text(self, text: str | None) -> str | None:
        """Map a column value, as Spark casts it to string, back to its key; None if it is no key."""
        if text is None:
            return None
        if self.ranged:
            return self._period_key(text)
        try:
            if self.type == "date":
                period = dt.datetime.combine(dt.date.fromisoformat(text), dt.time())
            elif self.type == "timestamp":
                period = dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
            else:
                assert self.format is not None
                period = dt.datetime.strptime(text, self.format)
        except ValueError:
            return None
        key = self.key(period)
        return key if self.column_text(key) == text else None

    def _period_key(self, text: str) -> str | None:
        """The key of the period holding an instant ("2024-03-01 00:49:14") or named by a key."""
        t = text.strip().replace("T", " ")
        for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H", "%Y-%m-%d", "%Y-%m"):
            try:
                return self.key(dt.datetime.strptime(t, fmt))
            except ValueError:
                continue
        return None

    def _step(self, period: dt.datetime) -> dt.datetime:
        if self.granularity == "daily":
            return period + dt.timedelta(days=1)
        if self.granularity == "hourly":
            return period + dt.timedelta(hours=1)
        y, m = (period.year + 1, 1) if period.month == 12 else (period.year, period.month + 1)
        return period.replace(year=y, month=m)

    def count(self, a: dt.datetime, b: dt.datetime) -> int:
        """How many periods a..b holds (both included), without enumerating them."""
        if self.granularity == "daily":
            return (b - a).days + 1
        if self.granularity == "hourly":
            return (b - a) // dt.timedelta(hours=1) + 1
        return (b.year - a.year) * 12 + b.month - a.month + 1

    def expand(self, start: str, end: str) -> list[str]:
        """Every key from start to end, both included, ascending."""
        a, b = self.parse_key(start), self.parse_key(end)
        if b < a:
            raise UsageError(f"range is reversed: --start {start} is after --end {end}")
        n = self.count(a, b)
        if n > MAX_PARTITIONS:
            raise UsageError(
                f"range {start}..{end} holds {n:,} {self.granularity} partitions, more than the "
                f"{MAX_PARTITIONS:,} one command may select: narrow it"
            )
        out = [self.key(a)]
        p = a
        for _ in range(n - 1):  # never steps past `end`, which may be the last representable day
            p = self._step(p)
            out.append(self.key(p))
        return out

    def check_column_type(self, spark_type: str, table: str) -> None:
        """Refuse a live partition column whose type cannot hold these partitions, before any write
        (an hourly range on a DATE column would otherwise write 24 copies of each day)."""
        kind = column_kind(spark_type)
        allowed = _COLUMN_KINDS[self.granularity]
        if kind not in allowed:
            raise ConfigError(
                f"partition column {self.column!r} of {table} is {spark_type}, which cannot hold "
                f"{self.granularity} partitions (partition.granularity {self.granularity!r} needs a "
                f"{', '.join(allowed)} column)"
            )
        if kind != self.type:
            raise ConfigError(
                f"partition column {self.column!r} of {table} is {spark_type}, but partition.type is "
                f"{self.type!r}: set partition.type to {kind!r} or leave it out (and partition.format if needed)"
            )

    def normalize_all(self, texts: Iterable[str]) -> list[str]:
        """Normalized keys in the user's order, each once (a repeated value means nothing more)."""
        return list(dict.fromkeys(self.normalize(t) for t in texts if t.strip()))

    def select(
        self,
        *,
        start: str | None = None,
        end: str | None = None,
        partitions: Iterable[str] | None = None,
        default: Sequence[str] | None = None,
    ) -> list[str]:
        """Resolve the user's choice (a range, a list, or the config's list) to sorted, unique keys."""
        if partitions is not None and (start or end):
            raise UsageError("give either --partitions or --start/--end, not both")
        if partitions is not None:
            keys = [self.normalize(p) for p in partitions if p.strip()]
        elif start or end:
            if not (start and end):
                raise UsageError("--start and --end go together")
            keys = self.expand(start, end)
        elif default:
            keys = [self.normalize(p) for p in default]
        else:
            raise UsageError("no partitions selected: give --start/--end, --partitions, or partition.values")
        keys = self.sort(set(keys))
        if not keys:
            raise UsageError("the partition selection is empty")
        return keys

    # ---- predicates ---------------------------------------------------------------------------

    def predicate(self, keys: Sequence[str]) -> Column:
        """`column IN (typed literals)` as a Column, for reads and Iceberg overwrites; for a
        ranged column, `start <= column < end` per run of consecutive keys (aligned on the
        periods, so Iceberg replaces whole `days(ts)` partitions)."""
        F = _functions()
        if not self.ranged:
            return F.col(self.column).isin([F.lit(self.value(k)) for k in keys])
        col = F.col(self.column)
        ranges = [(col >= F.lit(a)) & (col < F.lit(b)) for a, b in self.ranges(keys)]
        return reduce(lambda x, y: x | y, ranges) if ranges else F.lit(False)

    def sql_predicate(self, keys: Sequence[str]) -> str:
        """The same predicate as SQL text, for APIs that only take text (Delta replaceWhere)."""
        name = quote_identifier(self.column)
        if self.ranged:
            parts = [f"({name} >= {sql_literal(a)} AND {name} < {sql_literal(b)})" for a, b in self.ranges(keys)]
            return " OR ".join(parts) if parts else "FALSE"
        literals = ", ".join(sql_literal(self.value(k)) for k in keys)
        return f"{name} IN ({literals})"

    def ranges(self, keys: Sequence[str]) -> list[tuple[dt.datetime, dt.datetime]]:
        """The keys' periods as [start, end) instants (aware UTC), consecutive periods merged."""
        out: list[tuple[dt.datetime, dt.datetime]] = []
        for period in sorted({self.parse_key(k) for k in keys}):
            start, end = period.replace(tzinfo=dt.timezone.utc), self._step(period).replace(tzinfo=dt.timezone.utc)
            if out and out[-1][1] == start:
                out[-1] = (out[-1][0], end)
            else:
                out.append((start, end))
        return out


def _functions() -> Any:
    """`pyspark.sql.functions`, imported where a Column is built and not with this module: keys,
    ranges and config checks run without PySpark (the unit tier asserts it is never imported)."""
    from pyspark.sql import functions

    return functions
