"""Bringing a store made by an earlier version of the tool up to this version's tables.

Only additions: a column this version's tables have and the store lacks is added, nullable, so
no row moves and an older tool reading the store still finds every column it knows. Anything
else (a renamed or retyped column) would need a real migration tool, and none has been needed.
On PostgreSQL the first open by this version must be by a role that may alter the tables (their
owner); until then, opening the store fails with the database's own one-line reason.
"""

from __future__ import annotations

from sqlalchemy import Engine, inspect, text
from sqlalchemy.exc import DBAPIError

from shadow_backfill.state.schema import metadata


def add_new_columns(engine: Engine) -> list[str]:
    """Add the columns the store's tables lack (`table.column`, for the log). A store opened by
    two processes at once may see the other add a column first: that is no error."""
    found = inspect(engine)
    quote = engine.dialect.identifier_preparer.quote
    added = []
    for table in metadata.sorted_tables:
        have = {c["name"] for c in found.get_columns(table.name)}
        for column in table.columns:
            if column.name in have:
                continue
            if not column.nullable or column.primary_key:
                raise RuntimeError(f"{table.name}.{column.name}: only nullable columns can be added to a store")
            kind = column.type.compile(dialect=engine.dialect)
            postgres = engine.dialect.name == "postgresql"
            add = f"ADD COLUMN {'IF NOT EXISTS ' if postgres else ''}{quote(column.name)} {kind}"
            try:
                with engine.begin() as c:
                    if postgres:  # ALTER waits for every open transaction on the table: not for long
                        c.execute(text("SET LOCAL lock_timeout = '10s'"))
                    c.execute(text(f"ALTER TABLE {quote(table.name)} {add}"))
            except DBAPIError:
                if column.name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                    raise
            added.append(f"{table.name}.{column.name}")
    return added
