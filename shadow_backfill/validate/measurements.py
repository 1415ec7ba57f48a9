"""The typed measurements a validation hands from its Spark jobs to its judge.

The measurers (`measure/`) fill these in; the judge (`judge`) reads only these, and publishes
them in report.json (`as_dict`). Nothing here imports PySpark, so grading is pure code, tested
without a JVM (the unit tier).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass
class ColumnPlan:
    """Which columns get which drift metrics (derived from the two schemas)."""

    numeric: list[str]
    categorical: list[str]
    compared: list[str]  # same name and type on both sides: key-diff comparison
    added: list[str]
    removed: list[str]
    retyped: list[tuple[str, str, str]]
    shadow_types: dict[str, str] = field(default_factory=dict)  # every shadow column's simpleString
    added_numeric: list[str] = field(default_factory=list)  # added columns measured for moments and range


@dataclass(frozen=True)
class ColumnDiff:
    """One compared column over a partition's matched keys: how many changed beyond the
    tolerance and, for a numeric column counted by the key grouping, the largest and the mean
    |shadow - live| (`abs_diffs`; None where nothing was counted)."""

    changed: int
    abs_diffs: tuple[float | None, float | None] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The published form (report.json's `keys.by_column`)."""
        if self.abs_diffs is None:
            return {"changed": self.changed}
        return {"changed": self.changed, "max_abs_diff": self.abs_diffs[0], "mean_abs_diff": self.abs_diffs[1]}


@dataclass(frozen=True)
class KeyDiff:
    """Shadow against live by key over one partition: keys only in shadow (`added`), only in
    live (`removed`), on both sides (`matched`), matched keys with any compared column changed
    beyond tolerance (`changed`), rows beyond the first of a repeated key (`duplicates`), and
    each compared column's changes."""

    added: int = 0
    removed: int = 0
    matched: int = 0
    changed: int = 0
    duplicates: int = 0
    by_column: dict[str, ColumnDiff] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The published form (report.json's `keys`), `changed_by_column` included."""
        return {
            "added": self.added,
            "removed": self.removed,
            "matched": self.matched,
            "changed": self.changed,
            "duplicates": self.duplicates,
            "changed_by_column": {c: d.changed for c, d in self.by_column.items()},
            "by_column": {c: d.as_dict() for c, d in self.by_column.items()},
        }


@dataclass(frozen=True)
class Moments:
    """A numeric column's mean, sample standard deviation and sum on one side (None where the
    side has no non-null value, or one for the deviation)."""

    mean: float | None = None
    std: float | None = None
    sum: float | None = None


@dataclass(frozen=True)
class SideStats:
    """One column on one side of a partition: non-null values (the sample size of the
    distribution tests), the share of null rows, and for a numeric column its moments. An
    added numeric column, which has no live side to compare with, also gets its range."""

    count: int
    null_rate: float
    moments: Moments | None = None
    extremes: tuple[float | None, float | None] | None = None  # (min, max)


@dataclass(frozen=True)
class Histogram:
    """Both sides' values counted into the bins of live's deciles (`edges`, taken from every
    `edges_every`-th live row); `live` and `shadow` are the counts per bin, 10 bins. For a
    column no key changed, live's counts may be read off the profile's percentile
    grid (scaled from that sample: `measure/live_grid.py`) and shadow's are their copy."""

    edges: tuple[float, ...]
    live: tuple[float, ...]
    shadow: tuple[float, ...]
    edges_every: int = 1


@dataclass(frozen=True)
class Categories:
    """Each side's value frequencies of a string or boolean column (absent past
    `max_categories` values)."""

    live: dict[str, int]
    shadow: dict[str, int]

    @property
    def new(self) -> list[str]:
        """Values only in shadow; none when live has no value to compare with."""
        return sorted(set(self.shadow) - set(self.live)) if self.live else []

    @property
    def vanished(self) -> list[str]:
        return sorted(set(self.live) - set(self.shadow))


@dataclass(frozen=True)
class ColumnMeasurement:
    """Everything measured on one column of one partition: each side's stats (None for a side
    without the column or without rows), the histogram of a numeric column and the category
    frequencies of a categorical one."""

    live: SideStats | None = None
    shadow: SideStats | None = None
    histogram: Histogram | None = None
    categories: Categories | None = None

    def side(self, name: str) -> SideStats | None:
        return self.live if name == "live" else self.shadow

    def as_dict(self) -> dict[str, Any]:
        """The published form (report.json's `metrics.columns.<column>`, before the statistics)."""
        out: dict[str, Any] = {}
        for name in ("live", "shadow"):
            if (s := self.side(name)) is not None:
                out[f"{name}_null_rate"], out[f"{name}_count"] = s.null_rate, s.count
        for name in ("live", "shadow"):
            if (s := self.side(name)) is not None and s.moments is not None:
                m = s.moments
                out[f"{name}_mean"], out[f"{name}_std"], out[f"{name}_sum"] = m.mean, m.std, m.sum
            if s is not None and s.extremes is not None:
                out[f"{name}_min"], out[f"{name}_max"] = s.extremes
        if (h := self.histogram) is not None:
            out["hist"] = {"edges": list(h.edges), "live": list(h.live), "shadow": list(h.shadow)}
            out["hist"]["edges_every"] = h.edges_every
        if (c := self.categories) is not None:
            out["categories"] = {"live": c.live, "shadow": c.shadow}
            out["new"], out["vanished"] = c.new, c.vanished
        return out


@dataclass(frozen=True)
class Uniqueness:
    """One column's shadow values for expect_column_values_to_be_unique: non-null values, and
    values that are not unique (GX's domain and 'unexpected')."""

    values: int = 0
    not_unique: int = 0


@dataclass(frozen=True)
class Sample:
    """One changed value on a matched key: the key, the column, both sides' values."""

    keys: dict[str, Any]
    column: str
    live: Any
    shadow: Any

    def as_dict(self) -> dict[str, Any]:
        return {"keys": self.keys, "column": self.column, "live": self.live, "shadow": self.shadow}


@dataclass
class PartitionProfile:
    """Everything measured for one partition, filled in by the measuring jobs and read by the
    judge. Its `columns` are frozen measurements, replaced (`set_column`), never edited."""

    key: str
    live_rows: int = 0
    shadow_rows: int = 0
    shadow_aggs: dict[str, Any] = field(default_factory=dict)  # expectation aggregate name -> value
    columns: dict[str, ColumnMeasurement] = field(default_factory=dict)
    keys: KeyDiff | None = None  # None: no key columns configured, so no key diff
    unique: dict[str, Uniqueness] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)  # changed values, largest first

    @property
    def live_missing(self) -> bool:
        return self.live_rows == 0

    def set_column(self, column: str, **measured: Any) -> None:
        """Add what one job measured on `column` to what the others did."""
        self.columns[column] = replace(self.columns.get(column, ColumnMeasurement()), **measured)


@dataclass(frozen=True)
class Outcome:
    """One expectation on one partition."""

    expectation: str
    success: bool
    observed: Any
    detail: str
    severity: str  # what a failure means for the verdict: "fail" or "warn"
