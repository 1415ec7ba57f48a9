"""Schema comparison, in one place: a transform's output against the shadow, a shadow against
live before promotion, and the validation gate's schema diff all ask the same question."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from shadow_backfill.errors import ConfigError
from shadow_backfill.widening import widening_problem

if TYPE_CHECKING:
    from shadow_backfill.config import BackfillConfig


@dataclass(frozen=True)
class SchemaDiff:
    """How schema `have` differs from schema `want`, column by column (by name)."""

    missing: list[str]  # in `want`, not in `have`
    extra: list[str]  # in `have`, not in `want`
    retyped: list[tuple[str, str, str]]  # (column, type in `want`, type in `have`)

    @property
    def same(self) -> bool:
        return not (self.missing or self.extra or self.retyped)

    def problems(self, extra_word: str = "unexpected columns") -> list[str]:
        """One phrase per kind of difference, for an error line."""
        out = []
        if self.missing:
            out.append(f"missing columns {self.missing}")
        if self.extra:
            out.append(f"{extra_word} {self.extra}")
        if self.retyped:
            out.append(
                "columns of the wrong type "
                + str([f"{c} ({have} instead of {want})" for c, want, have in self.retyped])
            )
        return out


def diff_schemas(have: StructType, want: StructType, ignore: set[str] | frozenset[str] = frozenset()) -> SchemaDiff:
    """Compare by column name; column order does not matter, types must be equal."""
    h = {f.name: f.dataType for f in have.fields if f.name not in ignore}
    w = {f.name: f.dataType for f in want.fields if f.name not in ignore}
    return SchemaDiff(
        missing=[c for c in w if c not in h],
        extra=[c for c in h if c not in w],
        retyped=[(c, w[c].simpleString(), h[c].simpleString()) for c in w if c in h and h[c] != w[c]],
    )


def check_declared_changes(config: BackfillConfig, live: StructType, carried: Collection[str] = ()) -> None:
    """Refuse, before any work, declared schema changes that cannot apply to live: a retype must
    widen live's type, a removed or retyped column must be one of live's, a removed one must be
    nullable there (the promoted rows hold null in it). An added column live already has must
    be one a promotion of the tool added (`carried`): else it has values there, and declaring it
    added would take it out of every comparison with them."""
    declared = config.validation.expected_schema_changes
    types = {f.name: f.dataType.simpleString() for f in live.fields}
    where = "validation.expected_schema_changes"
    if had := [c for c in declared.added if c in types and c not in carried]:
        raise ConfigError(
            f"{where}.added: {had} is already a column of live table {config.live_table}, not one a promotion "
            "added: declare how it changes in validation.expected_changes instead"
        )
    if required := [f.name for f in live.fields if f.name in declared.removed and not f.nullable]:
        raise ConfigError(
            f"{where}.removed: {required} is NOT NULL in live table {config.live_table}, "
            "so the promoted rows could not hold null in it"
        )
    for kind, columns in (("removed", declared.removed), ("retyped", list(declared.retyped))):
        unknown = [c for c in columns if c not in types]
        if unknown:
            raise ConfigError(
                f"{where}.{kind}: {unknown} is not a column of live table {config.live_table} "
                f"(its columns: {', '.join(types)})"
            )
    for column, new in declared.retyped.items():
        if (why := widening_problem(types[column], new)) is not None:
            raise ConfigError(
                f"{where}.retyped: {column} {types[column]} -> {new} would lose or change values ({why}); "
                "only widening retypes can be promoted"
            )


def conform(df: DataFrame, schema: StructType) -> DataFrame:
    """`df` as rows of `schema`: its columns in that order, a column `df` lacks as typed nulls
    (a declared removed column, or a column added to live after `df`'s version was written), a
    column of a narrower type widened (a version from before live's type was widened).
    `df` itself when it has exactly those columns and types: a format may have marked the
    frame it returned (to restore a version by pointing at its files, not copying them)."""
    have = {f.name: f.dataType for f in df.schema.fields}
    if list(have) == schema.fieldNames() and all(have[f.name] == f.dataType for f in schema.fields):
        return df

    def column(f: StructField) -> Column:
        if f.name not in have:
            return F.lit(None).cast(f.dataType).alias(f.name)
        return F.col(f.name) if have[f.name] == f.dataType else F.col(f.name).cast(f.dataType).alias(f.name)

    return df.select(*[column(f) for f in schema.fields])
