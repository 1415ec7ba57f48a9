"""What the config leaves out of `partition` is read from the live table, on every backend: each
format reads it its own way (a catalog, the Delta log, Parquet's folder log or folders), and
none may settle or move anything while the scheme is not settled yet."""

from __future__ import annotations

import sb_test_transforms as t
from support import END, START, MakeBackfill


def test_partition_type_is_read_from_the_live_table(make: MakeBackfill) -> None:
    seeded = make(partition={"type": "int"})  # live partitioned by an int column, ds=20240101...
    bare = make(seed_live=False, live_table=seeded.live_table)  # partition: {column: ds, granularity: daily}
    assert bare.config.partition.type is None
    assert (bare.table_format.scheme.type, bare.scheme.type, bare.scheme.format) == ("int", "int", "%Y%m%d")
    # the live table was read through the settled scheme only: every partition is still there
    assert bare.table_format.partition_row_counts(bare.live_table) == dict.fromkeys(
        bare.scheme.expand(START, END), t.ROWS_PER_DAY
    )
    assert bare.run(START, END).ok
    assert bare.read_shadow().count() == bare.read_live().count() == 10 * t.ROWS_PER_DAY
