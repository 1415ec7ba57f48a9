"""A pipeline's SQL layers, read before any layer runs.

A layer's SQL transform reads its upstream layers by their keys (views of their shadows), and
only the layers its `depends_on` lists are given to it. One that reads another layer, or that
does not parse, used to be found when its first chunk ran, after minutes of upstream work, as
"partitions failed" with no reason. Here, at the pipeline's load (exit 2, before Spark), each
SQL layer must be one read-only SELECT (`sql_guard`) and may read a layer of the pipeline, by
its key or by its live or shadow table's name, only if it declares it. Tables outside the
pipeline stay free to read (a dimension, the layer's own live table).
"""

from __future__ import annotations

from shadow_backfill.config import MAX_CONFIG_BYTES, BackfillConfig, read_text_file
from shadow_backfill.errors import ConfigError
from shadow_backfill.sql_guard import Refused, TableName, read_only_select, table_name


def refuse_unsafe_sql_layers(configs: dict[str, BackfillConfig], depends_on: dict[str, list[str]]) -> None:
    """Each SQL layer parsed and held to the layers it declares; the first problem, one line."""
    layers = {key: _spellings(key, cfg) for key, cfg in configs.items()}
    for key, cfg in configs.items():
        if cfg.transform.sql is None:
            continue
        shown = str(cfg.transform.sql)
        try:
            text = read_text_file(cfg.resolve(cfg.transform.sql), "transform.sql", MAX_CONFIG_BYTES)
        except ConfigError as exc:
            raise ConfigError(f"pipeline: layer {key!r}: {exc}") from None
        checked = read_only_select(text)
        if isinstance(checked, Refused):
            raise ConfigError(f"pipeline: layer {key!r}: transform.sql {shown!r} {checked.reason}")
        for table in checked.tables:
            for other, names in layers.items():
                if other == key or other in depends_on[key]:
                    continue
                if any(_same(table, name) for name in names):
                    raise ConfigError(
                        f"pipeline: layer {key!r} reads {table}, the layer {other!r}, which its depends_on "
                        f"does not list (transform.sql {shown!r})"
                    )


def _spellings(key: str, cfg: BackfillConfig) -> list[TableName]:
    """How a query may name a layer: its key (the view a SQL layer reads it by), its live table
    and its shadow (names only; a table given by path has no SQL name of its own)."""
    names = [TableName((key.lower(),), key)]
    for table in (cfg.live_table, cfg.shadow):
        if (named := table_name(table)) is not None:
            names.append(named)
    return names


def _same(read: TableName, layer: TableName) -> bool:
    """A key is one word and matches only that word; a table's name matches as far as both
    spell it (the shorter is the longer's tail: `db.t` and `t` match `local.db.t`)."""
    if len(layer.parts) == 1:
        return read.parts == layer.parts
    # Tolerant on purpose, unlike a downstream query's `reads` (same parts only): the session
    # may resolve a short name to the layer's table, and a layer wrongly taken for an
    # undeclared upstream is a clear refusal at load, while one missed runs on stale data.
    n = min(len(read.parts), len(layer.parts))
    return read.parts[-n:] == layer.parts[-n:]
