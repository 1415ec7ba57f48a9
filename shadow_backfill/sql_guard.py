"""Reading a user's SQL before anything runs it: one read-only SELECT, and the tables it reads.

A downstream query and a SQL transform (one table's, or a pipeline layer's) go to `spark.sql()`, which runs whatever
statement it is given: a `DROP TABLE`, an `INSERT INTO` a live table, a `CALL` of a procedure.
So their text is parsed first (sqlglot, Spark dialect) and must be exactly one `SELECT`
(`WITH ... SELECT`, a `UNION` of selects, a parenthesised select). Inside it, nothing may run
code or name its source dynamically: no `TRANSFORM ... USING` (a shell program), no `reflect`
or `java_method` (a Java method), no table-valued function but the generators that only
compute (`range`, `explode`, ...; `read_files`, `IDENTIFIER(...)` and the like are refused).
What it reads is returned, less the names a `WITH` clause defines where that clause makes them
visible, so a caller can hold the query to the tables it may read. A CTE name is resolved as
Spark resolves it: it is seen by the `WITH`'s main query (subqueries included) and by the CTEs
after it, not by its own body (unless `WITH RECURSIVE`), earlier CTEs, or anything outside the
`WITH`; `WITH dim AS (SELECT * FROM dim)` reads the table `dim`.

A downstream query's tables are held to its `reads` part by part, case-insensitively, with
quotes dropped (`Local`.db.T is local.db.t), and must spell the same parts: `db.t` is not
`local.db.t`, since a short name resolves in the session's current catalog and database,
which may hold another `t`.

No PySpark here, and no project module but `errors`: this runs at config load, before a
session exists.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from shadow_backfill.errors import ConfigError

DIALECT = "spark"
# Table-valued functions that compute rows from their arguments and read no storage.
GENERATORS = frozenset(
    {
        "range",
        "explode",
        "explode_outer",
        "inline",
        "inline_outer",
        "posexplode",
        "posexplode_outer",
        "stack",
        "json_tuple",
    }
)
# Functions that call a Java method by name: `reflect('java.lang.System', 'exit', 1)`.
_RUNS_CODE = frozenset({"reflect", "java_method", "try_reflect"})
# What the parser returns for a whole statement that is not a query (anything else is an
# expression that parsed on its own, e.g. a misspelt keyword taken for a column).
_STATEMENTS: tuple[type[exp.Expr], ...] = tuple(
    getattr(exp, name)
    for name in (
        "DDL",
        "DML",
        "Command",
        "Set",
        "Cache",
        "Uncache",
        "Use",
        "Alter",
        "Drop",
        "TruncateTable",
        "Refresh",
        "LoadData",
        "MultitableInserts",
        "Describe",
        "Values",
        "Show",
        "Pragma",
        "Analyze",
        "Transaction",
        "Commit",
        "Rollback",
        "Grant",
        "Comment",
    )
    if isinstance(getattr(exp, name, None), type)
)
_MARKER = re.compile(r"(?<![:\w]):partition\b")


@dataclass(frozen=True)
class TableName:
    """A table a query names: its parts lower-cased and unquoted, and how to show it."""

    parts: tuple[str, ...]
    shown: str

    def __str__(self) -> str:
        return self.shown


@dataclass(frozen=True)
class ReadOnlySelect:
    """The query is one read-only SELECT; `tables` is what it reads (no CTE names), in order."""

    tables: tuple[TableName, ...]


@dataclass(frozen=True)
class Refused:
    """Why the text is not one read-only SELECT, phrased to follow the query's name ("is a
    DROP statement, not a SELECT")."""

    reason: str


def bind(text: str, table: str, partition: str) -> str:
    """A downstream query with `{table}` naming the table's view and each `:partition` (a word
    of its own: not `::partition`, not `:partitions`) reading the partition view's one value."""
    return _MARKER.sub(f"(SELECT p FROM `{partition}`)", text.replace("{table}", f"`{table}`"))


def read_only_select(text: str) -> ReadOnlySelect | Refused:
    """The one statement in `text`, if it is a SELECT that runs no code, with what it reads."""
    try:
        with _quiet_parser():
            statements = [s for s in sqlglot.parse(text, dialect=DIALECT) if s is not None]
    except (SqlglotError, RecursionError, ValueError) as exc:
        return Refused(f"does not parse as Spark SQL: {_first_line(exc)}")
    if not statements:
        return Refused("holds no statement (only comments or nothing); one SELECT is expected")
    if len(statements) > 1:
        return Refused(f"holds {len(statements)} statements; one SELECT is allowed")
    statement = statements[0]
    if not isinstance(statement, exp.Query):
        if not isinstance(statement, _STATEMENTS):
            return Refused("is not a SELECT statement (nor any statement Spark SQL knows)")
        kind = _kind(statement)
        return Refused(f"is {_article(kind)} {kind} statement, not a SELECT")
    if problem := _runs_something(statement):
        return Refused(problem)
    return _tables(statement)


def check_sql_transform(text: str, name: str) -> None:
    """A SQL transform is one read-only SELECT (`sql_guard`): the tool runs it with `spark.sql`
    on every chunk, so a DROP or an INSERT in it would run with the tool's rights, once per
    chunk. Checked here before Spark starts, and again on the text that runs (`transform`)."""
    checked = read_only_select(text)
    if isinstance(checked, Refused):
        raise ConfigError(f"transform.sql {name!r} {checked.reason}")


def table_name(text: str) -> TableName | None:
    """A table name as a config spells it (`local.db.t`, ``delta.`/data/t` ``), or None when it
    is not one."""
    try:
        with _quiet_parser():
            table = sqlglot.parse_one(text, dialect=DIALECT, into=exp.Table)
    except (SqlglotError, RecursionError, ValueError):
        return None
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier) or table.alias:
        return None
    return _name(table)


def downstream_refusal(text: str, reads: Iterable[str]) -> str | None:
    """Why a downstream query may not run (None: it may): it must be one read-only SELECT that
    reads the `{table}` view and otherwise only tables in `reads`, named as `reads` names them.
    Placeholders are bound the way they are when it runs, so the parser sees the SQL Spark will
    see, to names drawn afresh for this check: a query cannot spell them itself."""
    token = uuid.uuid4().hex
    table, partition = f"sb_table_{token}", f"sb_partition_{token}"
    checked = read_only_select(bind(text, table, partition))
    if isinstance(checked, Refused):
        return checked.reason
    allowed = {t.parts for t in (table_name(r) for r in reads) if t is not None} | {(table,), (partition,)}
    for found in checked.tables:
        if found.parts not in allowed:
            return f"reads {found}, which is not in its reads"
    if (table,) not in {t.parts for t in checked.tables}:
        return "never reads {table} (the table under test)"
    return None


def _runs_something(query: exp.Expr) -> str | None:
    """What inside a SELECT writes, runs code, or is no SELECT at all."""
    for node in query.walk():
        if isinstance(node, (exp.DDL, exp.DML, exp.Command, exp.Set, exp.Cache)):
            kind = _kind(node)
            return f"holds {_article(kind)} {kind} statement; only a SELECT is allowed"
        if isinstance(node, exp.QueryTransform):
            return "uses TRANSFORM ... USING, which runs a program"
        if isinstance(node, exp.Select) and node.args.get("into") is not None:
            return "is a SELECT ... INTO, which writes a table"
        if isinstance(node, exp.Func) and _func_name(node) in _RUNS_CODE:
            return f"calls {_func_name(node)}, which runs a Java method"
    return None


def _tables(query: exp.Expr) -> ReadOnlySelect | Refused:
    seen: dict[tuple[str, ...], TableName] = {}
    for table in query.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            name = _func_name(table.this) if isinstance(table.this, exp.Func) else type(table.this).__name__
            if name not in GENERATORS:
                return Refused(f"reads the table-valued function {name}(...), not a table")
            continue
        found = _name(table)
        if len(found.parts) == 1 and found.parts[0] in _ctes_visible(table):
            continue  # a name a WITH clause around it defines
        seen.setdefault(found.parts, found)
    return ReadOnlySelect(tuple(seen.values()))


def _ctes_visible(node: exp.Expr) -> set[str]:
    """The CTE names a table reference at `node` can see, found on its way up to the statement:
    all of a WITH's names from its main query, only the earlier ones (and its own, if RECURSIVE)
    from inside one of its CTEs."""
    visible: set[str] = set()
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            ctes = list(parent.expressions)
            upto = next((i for i, cte in enumerate(ctes) if cte is child), 0) + bool(parent.args.get("recursive"))
            visible.update(cte.alias_or_name.lower() for cte in ctes[:upto])
        elif not isinstance(child, exp.With):
            for value in parent.args.values():
                if isinstance(value, exp.With):
                    visible.update(cte.alias_or_name.lower() for cte in value.expressions)
        child, parent = parent, parent.parent
    return visible


def _name(table: exp.Table) -> TableName:
    parts = tuple(p.name.lower() for p in table.parts)
    return TableName(parts, exp.table_name(table, dialect=DIALECT))


def _func_name(func: exp.Expr) -> str:
    if isinstance(func, exp.Anonymous):
        return str(func.name).lower()
    return func.sql_name().lower() if isinstance(func, exp.Func) else func.key


def _kind(statement: exp.Expr) -> str:
    """The statement's keyword as a user wrote it: DROP, INSERT, CALL, SET, ..."""
    if isinstance(statement, exp.Command):
        return str(statement.this).upper()
    names = {"MultitableInserts": "INSERT", "TruncateTable": "TRUNCATE", "LoadData": "LOAD DATA"}
    return names.get(type(statement).__name__, statement.key.upper())


def _article(word: str) -> str:
    return "an" if word[:1] in "AEIO" or word in ("UPDATE", "UNCACHE") else "a"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[0].split())[:200] if text else type(exc).__name__


@contextmanager
def _quiet_parser() -> Iterator[None]:
    """sqlglot logs a warning when it falls back to an opaque command (`CALL ...`): the refusal
    says it in one line instead, so nothing else reaches stderr."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
