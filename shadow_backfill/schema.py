"""Schema comparison, in one place: a transform's output against the shadow, a shadow against
live before promotion, and the validation gate's schema diff all ask the same question."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import StructType


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
