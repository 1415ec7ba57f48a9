"""Which column type changes keep every value a live table holds: a declared retype is checked
against this before any work starts, in plain Python (no Spark), so the config check and the
unit tier share one rule.

The rule is the one every supported format can apply to a table in place: a wider integer
(`tinyint` -> `smallint` -> `int` -> `bigint`), `float` -> `double`, and a decimal of more
precision at the same scale (Iceberg's type promotions; Delta's type widening allows these too).
Anything else may lose or change values (`bigint` -> `int`, `double` -> `float`, a number to a
string), so it is refused rather than guessed at.
"""

from __future__ import annotations

import re

_INTEGERS = ("tinyint", "smallint", "int", "bigint")
_ALIASES = {"byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint", "real": "float"}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
# Spark's type names as `simpleString()` spells them (complex types are never retyped here).
SIMPLE_TYPES = frozenset({*_INTEGERS, "float", "double", "string", "boolean", "date", "timestamp", "binary"})


def normalize(spark_type: str) -> str:
    """A type name as Spark's `simpleString()` spells it (`long` -> `bigint`, `DECIMAL(10, 2)`
    -> `decimal(10,2)`), so that what users write compares with what a schema says."""
    name = spark_type.strip().lower()
    if (m := _DECIMAL.match(name)) is not None:
        return f"decimal({int(m.group(1))},{int(m.group(2))})"
    if name == "decimal":
        return "decimal(10,0)"
    return _ALIASES.get(name, name)


def is_type_name(spark_type: str) -> bool:
    """A primitive type this module can reason about."""
    name = normalize(spark_type)
    return name in SIMPLE_TYPES or _DECIMAL.match(name) is not None


def widening_problem(old: str, new: str) -> str | None:
    """Why `old` -> `new` could lose or change a value (None: it widens, or is no change)."""
    a, b = normalize(old), normalize(new)
    if a == b:
        return None
    if a in _INTEGERS and b in _INTEGERS:
        return None if _INTEGERS.index(b) > _INTEGERS.index(a) else f"{b} is narrower than {a}"
    if (a, b) == ("float", "double"):
        return None
    if (da := _DECIMAL.match(a)) is not None and (db := _DECIMAL.match(b)) is not None:
        (p1, s1), (p2, s2) = (int(da.group(1)), int(da.group(2))), (int(db.group(1)), int(db.group(2)))
        if s1 != s2:
            return f"{b} changes the scale of {a}"
        return None if p2 > p1 else f"{b} has less precision than {a}"
    return f"{a} -> {b} is not a widening (int -> bigint, float -> double, decimal precision up)"
