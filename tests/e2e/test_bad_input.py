"""The bad-input catalogue: every case gets exactly one clear error line naming the culprit, exit
code 2 for usage errors, 1 for runtime failures and 130 for an interrupt, no traceback, and no
table (nor any file the case names) is written. A case that fails before any table is read
(`ANYWHERE`) runs once; a case runs once per Spark engine (the e2e default) when the format
cannot change its outcome, or when what the format decides in it is a contract clause of
tests/formats run on every backend (`BY_CLAUSE`: a schema read, a missing or dropped table, a
read at a version, live's identity by another name); only a case the format decides and no
clause holds (`EVERY_BACKEND`) runs on every backend. What differs between backends (a missing
table's name, another spelling of live, dropping a table, deleting its data files) comes from
the `backend` fixture."""

from __future__ import annotations

import json
import random
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import END, QUIET, START, Backend, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill.cli import app


@dataclass
class Case:
    name: str
    args: list[str]  # "{cfg}" is replaced by the config path
    code: int
    words: str
    stage: str = "fresh"  # fresh | recomputed | validated | promoted | rolled_back
    overrides: dict[str, Any] = field(default_factory=dict)
    edit: dict[str, Any] | None = None  # YAML keys replaced after setup ("{dir}", "{state}" expanded)
    raw: str | None = None  # config text written verbatim after setup
    files: dict[str, bytes] = field(default_factory=dict)  # written beside the config; must stay intact
    gap: str | None = None  # a Backend.gaps key: a strict xfail on the backends that have it
    damage: Callable[[Backend, Any], None] | None = None  # breaks something real after setup
    statuses: dict[str, str | None] = field(default_factory=dict)  # partition -> status after (None: unknown)
    logged: bool = False  # an unforeseen engine error: the line names a log file holding the traceback
    env: dict[str, str] = field(default_factory=dict)  # the command's environment variables


def drop_shadow(backend: Backend, bf: Any) -> None:
    backend.drop(bf, bf.shadow_table)


def delete_live_data_files(backend: Backend, bf: Any) -> None:
    """The live table's log still lists files that are gone (someone cleaned the bucket)."""
    backend.delete_data_files(bf, bf.live_table)


def make_view(backend: Backend, bf: Any) -> None:
    """A temporary view over the live table, in the session the CLI's commands run in."""
    bf.read_live().createOrReplaceTempView(VIEW)


RUN = ["run", "{cfg}"]
VIEW = "sb_bad_input_view"
# A state store password: no case may print it or write it to a log (checked for every case).
SECRET = "S3cret-Pw7"
# Nor a piece of it: a password with an unescaped @ once showed its tail as the host.
SECRET_PIECES = (SECRET, SECRET[:5], SECRET[5:])
DEEP = 5000
TR = "sb_test_transforms:"
NOT_SQLITE = random.Random(7).randbytes(8192)  # a "state file" that is no database
CASES = [
    # config errors
    Case(
        "missing field",
        [*RUN, "--start", START, "--end", END],
        2,
        "field 'live_table': Field required",
        edit={"live_table": None},
    ),
    Case(
        "wrong type",
        [*RUN, "--start", START, "--end", END],
        2,
        "field 'run.max_parallel'",
        edit={"run": {"max_parallel": "many"}},
    ),
    Case("unknown format", [*RUN, "--start", START, "--end", END], 2, "field 'format'", edit={"format": "orc"}),
    Case("unknown config key", [*RUN, "--start", START, "--end", END], 2, "field 'colour'", edit={"colour": 1}),
    Case("malformed yaml", [*RUN, "--start", START, "--end", END], 2, "not valid YAML", raw="live_table: [oops"),
    Case(
        "config file missing",
        ["run", "/nonexistent/backfill.yaml", "--start", START, "--end", END],
        2,
        "does not exist",
    ),
    Case(
        "unknown live table",
        [*RUN, "--start", START, "--end", END],
        2,
        "live table",
        edit={"live_table": "{missing}"},
    ),
    Case(
        "transform module missing",
        [*RUN, "--start", START, "--end", END],
        2,
        "cannot import module 'nope'",
        edit={"transform": {"function": "nope:fn"}},
    ),
    Case(
        "transform attribute missing",
        [*RUN, "--start", START, "--end", END],
        2,
        "has no attribute 'nope'",
        edit={"transform": {"function": "sb_test_transforms:nope"}},
    ),
    Case(
        "sql file missing",
        [*RUN, "--start", START, "--end", END],
        2,
        "transform.sql",
        edit={"transform": {"sql": "/nonexistent/v2.sql"}},
    ),
    # bad ranges and partition values
    Case("reversed range", [*RUN, "--start", END, "--end", START], 2, "range is reversed"),
    # values Typer checks while parsing: one line, as every other refusal
    Case("--last 0", [*RUN, "--last", "0"], 2, "error: invalid value for '--last'"),
    Case("--last -1", ["validate", "{cfg}", "--last", "-1"], 2, "error: invalid value for '--last'"),
    Case("--canary 0", ["promote", "{cfg}", "--canary", "0"], 2, "error: invalid value for '--canary'"),
    Case("--canary -1", ["promote", "{cfg}", "--canary", "-1"], 2, "error: invalid value for '--canary'"),
    Case(
        "pipeline promote --canary", ["pipeline", "promote", "{cfg}", "--canary", "1"], 2, "error: --canary is for one"
    ),
    Case(
        "empty SHADOW_BACKFILL_NOW",
        [*RUN, "--last", "3"],
        2,
        "error: SHADOW_BACKFILL_NOW is set but empty",
        env={"SHADOW_BACKFILL_NOW": ""},
    ),
    Case("empty partition list", [*RUN, "--partitions", " , "], 2, "--partitions is empty"),
    Case("start without end", [*RUN, "--start", START], 2, "--start and --end go together"),
    Case("range and list", [*RUN, "--start", START, "--end", END, "--partitions", START], 2, "not both"),
    Case("impossible date", [*RUN, "--partitions", "2024-02-30"], 2, "'2024-02-30' is not a valid daily"),
    Case("quote in partition", [*RUN, "--partitions", "2024-01-01' OR '1'='1"], 2, "is not a valid daily"),
    Case("sql in partition", [*RUN, "--partitions", "2024-01-01; DROP TABLE events"], 2, "is not a valid daily"),
    Case("range past the last day", [*RUN, "--start", START, "--end", "9999-12-31"], 2, "more than the 100,000"),
    Case("year 99999", [*RUN, "--partitions", "99999-01-01"], 2, "'99999-01-01' is not a valid daily"),
    Case("statement as partitions", [*RUN, "--partitions", "'; DROP TABLE x; --"], 2, "is not a valid daily"),
    Case("empty partitions option", [*RUN, "--partitions", ""], 2, "--partitions is empty"),
    Case("backfill of an impossible date", ["backfill", "{cfg}", "--partitions", "2024-02-30"], 2, "'2024-02-30'"),
    Case("backfill of a reversed range", ["backfill", "{cfg}", "--start", END, "--end", START], 2, "is reversed"),
    # user text that Rich would read as markup is printed as typed
    Case("markup as partition", [*RUN, "--partitions", "[/bold]"], 2, "partition '[/bold]' is not a valid daily"),
    Case("markup inside partition", [*RUN, "--partitions", "2024-01-0[red]1"], 2, "'2024-01-0[red]1' is not a valid"),
    Case(
        "markup in a transform error",
        [*RUN, "--partitions", START],
        1,
        "ValueError: [/] unbalanced [red]markup[/bold] in a message",
        overrides={"transform": {"function": TR + "boom_markup"}},
        statuses={START: "failed"},
    ),
    Case(
        "markup in a data value",
        ["validate", "{cfg}"],
        1,
        "['[/]']",
        stage="recomputed",
        overrides={"transform": {"function": TR + "markup_category"}},
    ),
    # partition settings that do not fit the live table
    Case(
        "hourly on a date column",
        [*RUN, "--start", "2024-01-01T00", "--end", "2024-01-03T00"],
        2,
        "partition column 'ds' of {live} is date, which cannot hold hourly partitions",
        edit={"partition": {"granularity": "hourly"}},
    ),
    Case(
        "partition type differs from the column",
        [*RUN, "--start", START, "--end", END],
        2,
        "is date, but partition.type is 'string': set partition.type to 'date'",
        edit={"partition": {"type": "string"}},
    ),
    Case(
        "partition column missing",
        [*RUN, "--start", START, "--end", END],
        2,
        "partition.column 'day' is not a column of live table {live} (its columns: id, amount, cat, ds)",
        edit={"partition": {"column": "day"}},
    ),
    # declared schema changes that cannot apply to live
    Case(
        "narrowing retype declared",
        [*RUN, "--start", START, "--end", END],
        2,
        "validation.expected_schema_changes.retyped: amount double -> float would lose or change values",
        edit={"validation": {"expected_schema_changes": {"retyped": {"amount": "float"}}}},
    ),
    Case(
        "removed column live does not have",
        ["validate", "{cfg}"],
        2,
        "validation.expected_schema_changes.removed: ['ghost'] is not a column of live table {live}",
        stage="recomputed",
        edit={"validation": {"expected_schema_changes": {"removed": ["ghost"]}}},
    ),
    # transforms that misbehave
    Case(
        "transform raises",
        [*RUN, "--partitions", START],
        1,
        "transform sb_test_transforms:boom raised",
        overrides={"transform": {"function": TR + "boom"}},
    ),
    Case(
        "wrong schema",
        [*RUN, "--partitions", START],
        1,
        "missing columns ['cat']",
        overrides={"transform": {"function": TR + "wrong_schema"}},
        stage="shadow_like_live",
    ),
    Case(
        "rows outside partitions",
        [*RUN, "--partitions", START],
        1,
        "rows for ['2024-01-02']",
        overrides={"transform": {"function": TR + "one_day_too_many"}},
    ),
    Case(
        "null partition values",
        [*RUN, "--partitions", START],
        1,
        "null partition value",
        overrides={"transform": {"function": TR + "null_partition"}},
    ),
    Case(
        "transform calls sys.exit(0)",
        [*RUN, "--partitions", START],
        1,
        "transform sb_test_transforms:exits_zero called sys.exit(0)",
        overrides={"transform": {"function": TR + "exits_zero"}},
        statuses={START: "failed"},
    ),
    Case(
        "transform calls sys.exit(3) in a chunk",
        [*RUN, "--partitions", START],
        1,
        "failed 2024-01-01: transform sb_test_transforms:exits_three called sys.exit(3)",
        overrides={"transform": {"function": TR + "exits_three"}},
        stage="shadow_like_live",
        statuses={START: "failed"},
    ),
    Case(
        "transform interrupted",
        [*RUN, "--partitions", START],
        130,
        "error: interrupted",
        overrides={"transform": {"function": TR + "interrupted"}},
        stage="shadow_like_live",
        statuses={START: "failed"},
    ),
    Case(
        "not a dataframe",
        [*RUN, "--partitions", START],
        1,
        "returned list, not a Spark DataFrame",
        overrides={"transform": {"function": TR + "not_a_dataframe"}},
    ),
    Case(
        "code changed",
        [*RUN, "--start", START, "--end", END],
        1,
        "transform changed since 10 partition",
        stage="recomputed",
        edit={"transform": {"function": TR + "events"}},
    ),
    # suites
    Case(
        "suite missing",
        ["validate", "{cfg}"],
        2,
        "does not exist",
        stage="recomputed",
        edit={"expectations": ["/nonexistent/suite.json"]},
    ),
    Case(
        "suite malformed",
        ["validate", "{cfg}"],
        2,
        "not valid JSON",
        stage="recomputed",
        edit={"expectations": ["@bad.json"]},
    ),
    Case(
        "unknown expectation type",
        ["validate", "{cfg}"],
        2,
        "unknown expectation type 'expect_magic'",
        stage="recomputed",
        edit={"expectations": ["@magic.json"]},
    ),
    Case(
        "suite on missing column",
        ["validate", "{cfg}"],
        2,
        "column 'ghost' does not exist",
        stage="recomputed",
        edit={"expectations": ["@ghost.json"]},
    ),
    Case("validate before recompute", ["validate", "{cfg}"], 2, "nothing to validate"),
    Case(
        "live data files deleted",
        ["validate", "{cfg}"],
        1,
        "error: {engine_error}: ",
        stage="recomputed",
        damage=delete_live_data_files,
        gap="listed_files_gone",
        logged=True,
    ),
    # the state store, the warehouse and the report folder
    Case(
        "state url of an unknown database",
        ["status", "{cfg}"],
        2,
        "state.url foo://x: database 'foo' is not supported as a state store; supported: sqlite, postgresql",
        edit={"state": {"url": "foo://x"}},
    ),
    Case(
        "state url of an unsupported database",
        [*RUN, "--start", START, "--end", END],
        2,
        "state.url mysql://***@localhost/db: database 'mysql' is not supported as a state store; "
        "supported: sqlite, postgresql",
        edit={"state": {"url": "mysql://u:secret@localhost/db"}},
    ),
    Case(
        "state url with a password, unreachable",
        [*RUN, "--start", START, "--end", END],
        1,
        "cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        edit={"state": {"url": f"postgresql+psycopg://u:{SECRET}@127.0.0.1:1/db"}},
    ),
    Case(
        "state url with a password in the query",
        ["status", "{cfg}"],
        1,
        "cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        edit={"state": {"url": f"postgresql+psycopg://u@127.0.0.1:1/db?password={SECRET}"}},
    ),
    Case(
        "state url with a password that does not parse",
        ["history", "{cfg}"],
        2,
        "state.url is a postgresql:// URL that does not parse",
        edit={"state": {"url": f"postgresql://bob:{SECRET}@[::1/x"}},
    ),
    Case(
        "state url with an unescaped @ in its password",
        ["status", "{cfg}"],
        1,
        "error: cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        edit={"state": {"url": f"postgresql+psycopg://u:{SECRET[:5]}@{SECRET[5:]}@127.0.0.1:1/db"}},
    ),
    Case(
        "state url that is garbage holding a secret",
        ["history", "{cfg}"],
        2,
        "error: state.url is a value that is not a database URL (e.g.",
        edit={"state": {"url": f"{SECRET}garbage"}},
    ),
    Case(
        "state url with a driver not installed",
        ["status", "{cfg}"],
        2,
        "state.url postgresql+pg8000://u@localhost/db: its database driver is not installed",
        edit={"state": {"url": "postgresql+pg8000://u@localhost/db"}},
    ),
    Case(
        "state url with an unknown driver",
        ["status", "{cfg}"],
        2,
        "unknown driver 'postgresql+nosuch' for postgresql",
        edit={"state": {"url": "postgresql+nosuch://u@localhost/db"}},
    ),
    Case(
        "state url that is no url",
        ["history", "{cfg}"],
        2,
        "state.url is a value that is not a database URL",
        edit={"state": {"url": "not a url"}},
    ),
    Case(
        "downstream query that drops a table",
        ["validate", "{cfg}", "--start", START, "--end", END],
        2,
        "downstream query 'q.sql' is a DROP statement, not a SELECT",
        edit={"validation": {"downstream_queries": ["q.sql"]}},
        files={"q.sql": b"DROP TABLE local.db.features -- {table}"},
    ),
    Case(
        "downstream query that inserts",
        ["validate", "{cfg}", "--start", START, "--end", END],
        2,
        "downstream query 'q.sql' is an INSERT statement, not a SELECT",
        edit={"validation": {"downstream_queries": ["q.sql"]}},
        files={"q.sql": b"INSERT INTO local.db.features SELECT * FROM {table}"},
    ),
    Case(
        "sql transform that inserts",
        [*RUN, "--start", START, "--end", END],
        2,
        "transform.sql 't.sql' is an INSERT statement, not a SELECT",
        edit={"transform": {"sql": "t.sql"}},
        files={"t.sql": b"INSERT INTO local.db.features SELECT 1 AS id, :partition AS ds"},
    ),
    Case(
        "--canary over the partitions",
        ["promote", "{cfg}", "--canary", "100"],
        2,
        "--canary 100: only ",
        stage="validated",
    ),
    Case(
        "sqlite url with user info",
        [*RUN, "--start", START, "--end", END],
        2,
        "state.url sqlite://***@/{dir}/x.db: an SQLite URL names a file and takes no user",
        edit={"state": {"url": f"sqlite://u:{SECRET}@/{{dir}}/x.db"}},
    ),
    Case(
        "report folder name too long",
        ["backfill", "{cfg}", "--start", START, "--end", END, "--report", "{dir}/" + "r" * 256],
        2,
        "report folder name 'rrrr",
    ),
    Case(
        "state file under a regular file",
        [*RUN, "--start", START, "--end", END],
        1,
        "state store sqlite:///{dir}/afile/state.db: cannot create folder '{dir}/afile': "
        "'{dir}/afile' is a file, not a folder",
        edit={"state": {"url": "sqlite:///{dir}/afile/state.db"}},
        files={"afile": b"a regular file"},
    ),
    Case(
        "state file on a read-only filesystem",
        ["status", "{cfg}"],
        1,
        "state store sqlite:////proc/sb-state/state.db: cannot create folder '/proc/sb-state'",
        edit={"state": {"url": "sqlite:////proc/sb-state/state.db"}},
    ),
    Case(
        "state file that is no database",
        [*RUN, "--start", START, "--end", END],
        1,
        "cannot open the state store sqlite:///{dir}/corrupt.db: file is not a database",
        edit={"state": {"url": "sqlite:///{dir}/corrupt.db"}},
        files={"corrupt.db": NOT_SQLITE},
    ),
    Case(
        "read-only state store",
        [*RUN, "--partitions", START, "--force"],
        1,
        "attempt to write a readonly database",
        stage="recomputed",
        edit={"state": {"url": "sqlite:///file:{state}?mode=ro&uri=true"}},
        statuses={START: "written"},
    ),
    Case(
        "state store server unreachable",
        ["status", "{cfg}"],
        1,
        "cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        edit={"state": {"url": "postgresql+psycopg://u@127.0.0.1:1/db"}},
    ),
    Case(
        "warehouse under a regular file",
        [*RUN, "--start", START, "--end", END],
        1,
        "spark.warehouse '{dir}/afile/wh' cannot be created: '{dir}/afile' is a file, not a folder",
        edit={"state": None, "spark": {"warehouse": "{dir}/afile/wh"}},
        files={"afile": b"a regular file"},
    ),
    Case(
        "report folder is a file",
        ["report", "{cfg}", "--report", "{dir}/afile"],
        2,
        "report folder '{dir}/afile' is a file, not a folder",
        stage="validated",
        files={"afile": b"a regular file"},
    ),
    Case(
        "report folder cannot be created",
        ["report", "{cfg}", "--report", "{dir}/afile/report"],
        1,
        "cannot write the report to '{dir}/afile/report': '{dir}/afile' is a file, not a folder",
        stage="validated",
        files={"afile": b"a regular file"},
    ),
    Case(
        "report folder on a read-only filesystem",
        ["report", "{cfg}", "--report", "/proc/sb-report"],
        1,
        "cannot write the report to '/proc/sb-report'",
        stage="validated",
    ),
    # Spark
    Case(
        "bogus spark master",
        [*RUN, "--start", START, "--end", END],
        2,
        "spark.master 'bogus://x' is not a Spark master URL",
        edit={"spark": {"master": "bogus://x", "remote": None}},
    ),
    Case(
        "unreachable spark master",
        [*RUN, "--start", START, "--end", END],
        1,
        "spark.master 'spark://127.0.0.1:1': cannot reach the Spark master (127.0.0.1:1: Connection refused)",
        edit={"spark": {"master": "spark://127.0.0.1:1", "remote": None}},
    ),
    # promotion and rollback
    Case("promote before validate", ["promote", "{cfg}"], 2, "nothing to promote", stage="recomputed"),
    Case(
        "promote unknown partition",
        ["promote", "{cfg}", "--partitions", "2023-12-31"],
        2,
        "never recomputed",
        stage="validated",
    ),
    Case(
        "promote a failed partition",
        ["promote", "{cfg}", "--partitions", "2024-01-05"],
        1,
        "verdict fail",
        stage="validated",
    ),
    Case(
        "schema drift into live",
        ["promote", "{cfg}", "--allow-warn"],
        1,
        "its schema differs",
        overrides={"transform": {"function": TR + "with_extra_column"}},
        stage="validated",
    ),
    Case("rollback unknown id", ["rollback", "{cfg}", "--promotion", "promote-nope"], 2, "unknown promotion id"),
    Case(
        "rollback on a missing live table",
        ["rollback", "{cfg}", "--to-version", "1"],
        2,
        "live table '{missing}' does not exist ({format})",
        edit={"live_table": "{missing}"},
    ),
    Case(
        "history of a missing live table",
        ["history", "{cfg}", "--reconcile"],
        2,
        "live table '{missing}' does not exist ({format})",
        edit={"live_table": "{missing}"},
    ),
    Case(
        "rollback of a rolled-back promotion",
        ["rollback", "{cfg}", "--promotion", "{promotion}"],
        1,
        "already rolled back",
        stage="rolled_back",
    ),
    Case("rollback to unknown version", ["rollback", "{cfg}", "--to-version", "999"], 2, "not in the history"),
    Case(
        "rollback with both targets",
        ["rollback", "{cfg}", "--promotion", "x", "--to-version", "1"],
        2,
        "exactly one of",
    ),
    # config mistakes caught at load or before validation runs
    Case(
        "duplicate config key",
        [*RUN, "--start", START, "--end", END],
        2,
        "duplicate key 'live_table' on line 2",
        raw="live_table: a\nlive_table: b\n",
    ),
    Case(
        "duplicate nested config key",
        [*RUN, "--start", START, "--end", END],
        2,
        "duplicate key 'retries' on line 3",
        raw="run:\n  retries: 1\n  retries: 2\n",
    ),
    Case(
        "config path is a directory",
        ["run", "{dir}", "--start", START, "--end", END],
        2,
        "config file '{dir}' is a directory, not a file",
    ),
    Case(
        "suite path is a directory",
        ["validate", "{cfg}"],
        2,
        "expectation suite '{dir}' is a directory, not a file",
        stage="recomputed",
        edit={"expectations": ["{dir}"]},
    ),
    Case(
        "key column missing",
        ["validate", "{cfg}"],
        2,
        "keys: column 'ghost_key' does not exist in table",
        stage="recomputed",
        edit={"keys": ["id", "ghost_key"]},
    ),
    Case(
        "config nested 5,000 levels deep",
        [*RUN, "--start", START, "--end", END],
        2,
        "error: {cfg}: nested more than 32 levels deep (line 1)",
        raw="live_table: " + "[" * DEEP + "]" * DEEP + "\n",
    ),
    Case(
        "config over 1 MiB",
        [*RUN, "--start", START, "--end", END],
        2,
        "error: config file '{cfg}' is larger than 1 MiB",
        raw="# " + "x" * 2**20 + "\n",
    ),
    # live and shadow must be plain tables: not a view, not a table's metadata
    Case(
        "metadata table as live",
        [*RUN, "--start", START, "--end", END],
        2,
        "error: live table '{metadata}'",
        edit={"live_table": "{metadata}"},
    ),
    Case(
        "metadata table as shadow",
        [*RUN, "--start", START, "--end", END],
        2,
        "error: shadow table '{metadata}'",
        edit={"shadow_table": "{metadata}"},
    ),
    Case(
        "view as live",
        [*RUN, "--start", START, "--end", END],
        2,
        f"error: live table '{VIEW}' is a temporary view, not a table",
        edit={"live_table": VIEW},
        damage=make_view,
    ),
    Case(
        "view as shadow",
        [*RUN, "--start", START, "--end", END],
        2,
        f"error: shadow table '{VIEW}' is a temporary view, not a table",
        edit={"shadow_table": VIEW},
        damage=make_view,
    ),
    # the shadow table must be a table of its own
    Case(
        "shadow is live by another path",
        [*RUN, "--start", START, "--end", END],
        2,
        "is the live table",
        edit={"shadow_table": "{alias}"},
    ),
    Case(
        "shadow inside live",
        [*RUN, "--start", START, "--end", END],
        2,
        "lies inside the live table",
        edit={"shadow_table": "{inside}"},
        gap="shadow-inside-live",
    ),
    Case(
        "shadow dropped before promote",
        ["promote", "{cfg}"],
        1,
        "does not exist (dropped after validation?)",
        stage="validated",
        damage=drop_shadow,
    ),
]

SUITES = {
    "bad.json": "{not json",
    "magic.json": '{"expectations": [{"type": "expect_magic", "kwargs": {}}]}',
    "ghost.json": '{"expectations": [{"type": "expect_column_values_to_not_be_null", "kwargs": {"column": "ghost"}}]}',
}


def _tables(bf: Any) -> tuple[Any, ...]:
    fmt = bf.table_format
    shadow = fmt.current_version(bf.shadow_table) if fmt.exists(bf.shadow_table) else None
    return fmt.current_version(bf.live_table), shadow


def _files(folder: Path) -> set[Path]:
    """What a folder holds, but SQLite's transient files beside a store it opened to read."""
    return {p for p in folder.rglob("*") if not p.name.endswith(("-wal", "-shm", "-journal"))}


def _set_up(backend: Backend, bf: Any, case: Case) -> str:
    """Bring the tables to the case's stage; returns the promotion id when there is one."""
    promotion = ""
    if case.stage == "shadow_like_live":
        bf.table_format.create_like(bf.live_table, bf.shadow_table)
    if case.stage in ("recomputed", "validated", "promoted", "rolled_back"):
        bf.run(START, END)
    if case.stage in ("validated", "promoted", "rolled_back"):
        bf.validate()
    if case.stage in ("promoted", "rolled_back"):
        _, rec = bf.promote()
        assert rec is not None
        promotion = rec.id
    if case.stage == "rolled_back":
        bf.rollback(promotion)
    if case.damage is not None:
        case.damage(backend, bf)
    return promotion


def _edit_config(cfg_path: Path, case: Case, expand: Callable[[str], str]) -> None:
    if case.edit is None and case.raw is None:
        return
    data = yaml.safe_load(cfg_path.read_text())
    for k, v in (case.edit or {}).items():
        if v is None:
            data.pop(k, None)
        elif k == "expectations":
            paths = []
            for p in v:
                if p.startswith("@"):
                    (cfg_path.parent / p[1:]).write_text(SUITES[p[1:]])
                    p = str(cfg_path.parent / p[1:])
                paths.append(p)
            data[k] = paths
        elif isinstance(v, dict) and k in data and k != "transform":
            data[k] = {**data[k], **v}
        else:
            data[k] = {**v, "python_path": data["transform"]["python_path"]} if k == "transform" else v
    cfg_path.write_text(case.raw if case.raw is not None else expand(yaml.safe_dump(data)))


@dataclass(frozen=True)
class Staged:
    """A stage that read-only cases share: the live table it seeded, a copy of the state store as
    the stage left it (None for `fresh`: each case starts with an empty one) and its promotion id."""

    live_table: str
    state_db: Path | None
    promotion: str


SHAREABLE = ("fresh", "recomputed", "validated")
StageCache = dict[tuple[str, str, str], Staged]


@pytest.fixture(scope="module")
def stages() -> StageCache:
    """The stages read-only cases share, for this module's run (see `_share_key`)."""
    return {}


def _share_key(backend: Backend, case: Case, overrides: dict[str, Any]) -> tuple[str, str, str] | None:
    """Cases of one backend, stage and transform share their tables: every case asserts that it
    writes no table, and each gets its own config and its own copy of the state store. Seeding,
    recomputing and validating anew for every case was most of the catalogue's time."""
    if case.damage is not None or case.stage not in SHAREABLE:
        return None
    return backend.name, case.stage, json.dumps(overrides, sort_keys=True)


def _copy_sqlite(src: Path, dst: Path) -> Path:
    """A consistent copy of a SQLite state store (the backup API, not a file copy)."""
    a, b = sqlite3.connect(src), sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()
    return dst


def _backfill(
    make: MakeBackfill, backend: Backend, case: Case, overrides: dict[str, Any], tmp_path: Path, stages: StageCache
) -> tuple[Any, str]:
    """The case's Backfill brought to its stage, and the stage's promotion id."""
    key = _share_key(backend, case, overrides)
    staged = stages.get(key) if key is not None else None
    if staged is None:
        bf = make(**overrides)
        promotion = _set_up(backend, bf, case)
        if key is not None:
            db = None
            if case.stage != "fresh":
                db = _copy_sqlite(Path(bf.config.state_url.removeprefix("sqlite:///")), tmp_path / "staged.db")
            stages[key] = Staged(bf.live_table, db, promotion)
        return bf, promotion
    state = {}
    if staged.state_db is not None:
        state = {"state": {"url": f"sqlite:///{_copy_sqlite(staged.state_db, tmp_path / 'state.db')}"}}
    return make(seed_live=False, live_table=staged.live_table, **state, **overrides), staged.promotion


# Cases whose outcome cannot depend on the table backend: they fail on the config file, the
# arguments, the state store, the Spark master, loading the transform or the suite, or a report
# folder, before any table is read or written. Each runs once, on one backend; the others
# (table names, data, schemas, commits, engines' errors) run on every backend.
ANYWHERE_ON = "iceberg"
ANYWHERE = frozenset(
    {
        "missing field",
        "wrong type",
        "unknown format",
        "unknown config key",
        "malformed yaml",
        "config file missing",
        "transform module missing",
        "transform attribute missing",
        "sql file missing",
        "reversed range",
        "--last 0",
        "--last -1",
        "--canary 0",
        "--canary -1",
        "pipeline promote --canary",
        "empty SHADOW_BACKFILL_NOW",
        "empty partition list",
        "start without end",
        "range and list",
        "impossible date",
        "quote in partition",
        "sql in partition",
        "range past the last day",
        "year 99999",
        "statement as partitions",
        "empty partitions option",
        "backfill of an impossible date",
        "backfill of a reversed range",
        "sqlite url with user info",
        "report folder name too long",
        "downstream query that drops a table",
        "downstream query that inserts",
        "sql transform that inserts",
        "markup as partition",
        "markup inside partition",
        "suite missing",
        "suite malformed",
        "unknown expectation type",
        "suite path is a directory",
        "state url of an unknown database",
        "state url of an unsupported database",
        "state url with a password, unreachable",
        "state url with a password in the query",
        "state url with a password that does not parse",
        "state url with an unescaped @ in its password",
        "state url that is garbage holding a secret",
        "state url with a driver not installed",
        "state url with an unknown driver",
        "state url that is no url",
        "state file under a regular file",
        "state file on a read-only filesystem",
        "state file that is no database",
        "state store server unreachable",
        "warehouse under a regular file",
        "report folder is a file",
        "report folder cannot be created",
        "report folder on a read-only filesystem",
        "bogus spark master",
        "unreachable spark master",
        "rollback unknown id",
        "rollback with both targets",
        "duplicate config key",
        "duplicate nested config key",
        "config path is a directory",
        "config nested 5,000 levels deep",
        "config over 1 MiB",
    }
)
# Cases whose outcome the format cannot change: the transform's own failures, the checks on its
# output before any write, and the state store's refusals. The engine can change these (how a
# transform's error or an interrupt reaches the driver), so they run on one backend per engine
# (the e2e default; a case whose check reads through the format is in BY_CLAUSE below).
PER_ENGINE = frozenset(
    {
        "markup in a transform error",
        "transform raises",
        "rows outside partitions",
        "null partition values",
        "transform calls sys.exit(0)",
        "transform calls sys.exit(3) in a chunk",
        "transform interrupted",
        "not a dataframe",
        "code changed",
        "validate before recompute",
        "read-only state store",
        "promote before validate",
        "promote unknown partition",
        "promote a failed partition",
        "--canary over the partitions",
    }
)
# Cases whose check reads through the format, where what the format decides is a contract
# clause of tests/formats on every backend: the case itself (the command's one line, its exit
# code, nothing written) is the tool's and runs once per engine. Case -> the clause.
BY_CLAUSE = {
    "unknown live table": "test_contract_reads.py::test_a_missing_or_dropped_table_is_not_there",
    "rollback on a missing live table": "test_contract_reads.py::test_a_missing_or_dropped_table_is_not_there",
    "history of a missing live table": "test_contract_reads.py::test_a_missing_or_dropped_table_is_not_there",
    "shadow dropped before promote": "test_contract_reads.py::test_a_missing_or_dropped_table_is_not_there",
    "hourly on a date column": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "partition type differs from the column": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "partition column missing": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "narrowing retype declared": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "removed column live does not have": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "suite on missing column": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "key column missing": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "wrong schema": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "schema drift into live": "test_contract_reads.py::test_schema_and_partition_facts_are_exact",
    "markup in a data value": "test_contract.py::test_read_as_of_a_version_returns_exactly_its_rows",
    "rollback to unknown version": "test_contract.py::test_history_is_oldest_first_and_finds_our_commits",
    "rollback of a rolled-back promotion": "the state store's; test_promote.py rolls back on every backend",
    "shadow is live by another path": "test_contract.py::test_identity_knows_a_table_by_any_name",
    "shadow inside live": "test_contract.py::test_identity_knows_a_table_by_any_name",
    "view as live": "no format's: Spark's catalog names a temporary view (base.check_plain_table)",
    "view as shadow": "no format's: Spark's catalog names a temporary view (base.check_plain_table)",
}
# Cases the format itself decides and no clause holds: each format's own metadata names
# (Iceberg's metadata tables, Delta's log, Parquet's folder log) and how a read of files its log
# still lists fails. They run on every backend.
EVERY_BACKEND = frozenset({"metadata table as live", "metadata table as shadow", "live data files deleted"})
SCOPES = (ANYWHERE, PER_ENGINE, frozenset(BY_CLAUSE), EVERY_BACKEND)
assert {c.name for c in CASES} == frozenset().union(*SCOPES), "every case is in exactly one scope"
assert sum(len(s) for s in SCOPES) == len(CASES), "every case is in exactly one scope"


# Exit-2 cases allowed to leave a file behind (none: an unknown rollback id is looked up in the
# store read as it is and in live's audit trail before anything opens the store).
RECONCILED_FIRST: frozenset[str] = frozenset()


def _param(case: Case) -> Any:
    return pytest.param(case, id=case.name, marks=[pytest.mark.every_backend] if case.name in EVERY_BACKEND else [])


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input(
    make: MakeBackfill,
    backend: Backend,
    case: Case,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    stages: StageCache,
) -> None:
    if case.name in ANYWHERE and backend.name != ANYWHERE_ON:
        pytest.skip(f"the outcome cannot depend on the table backend: tested on {ANYWHERE_ON}")
    if case.gap is not None:
        backend.known_gap(request, case.gap)
    overrides = {"transform": {"function": TR + "nudged_with_one_bad_day"}, "validation": QUIET, **case.overrides}
    bf, promotion = _backfill(make, backend, case, overrides, tmp_path, stages)
    cfg_path = bf.config_path  # type: ignore[attr-defined]
    places = {
        "{cfg}": str(cfg_path),
        "{dir}": str(cfg_path.parent),
        "{state}": bf.config.state_url.removeprefix("sqlite:///"),
        "{live}": bf.live_table,
        "{alias}": backend.alias(bf),
        "{inside}": backend.inside(bf),
        "{missing}": backend.missing_table,
        "{format}": backend.format,
        "{engine_error}": backend.engine_error,
        "{promotion}": promotion,
        "{metadata}": backend.metadata_table(bf),
    }

    def expand(text: str) -> str:
        for k, v in places.items():
            text = text.replace(k, v)
        return text

    for name, content in case.files.items():
        (cfg_path.parent / name).write_bytes(content)
    _edit_config(cfg_path, case, expand)
    before = _tables(bf)
    files_before = _files(cfg_path.parent)
    logs = tmp_path / "logs"
    env = {**case.env, "SHADOW_BACKFILL_LOG_DIR": str(logs)}
    result = CliRunner().invoke(app, [expand(a) for a in case.args], env=env)
    output = result.output
    assert result.exit_code == case.code, output
    assert expand(case.words) in output, output
    assert "Traceback" not in output, output
    written_logs = sorted(logs.glob("*.log")) if logs.is_dir() else []
    printed = output + "".join(p.read_text() for p in written_logs)
    assert not [p for p in SECRET_PIECES if p in printed], "a password or a piece of it was printed or logged"
    error_lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(error_lines) == (1 if case.code else 0), output
    error_line = error_lines[0] if error_lines else ""
    assert _tables(bf) == before, "a refused command must not write any table"
    if case.code == 2 and case.name not in RECONCILED_FIRST:  # nothing written: no store, report or other file
        assert _files(cfg_path.parent) - files_before <= {logs}, sorted(_files(cfg_path.parent) - files_before)
    for name, content in case.files.items():
        assert (cfg_path.parent / name).read_bytes() == content, f"{name} was changed"
    if case.statuses:
        records = bf.store.records(bf.shadow_table)
        assert {k: records[k].status if k in records else None for k in case.statuses} == case.statuses
    if case.logged:
        match = re.search(r"\(full details: (\S+)\)$", error_line)
        assert match and written_logs == [Path(match.group(1))], output
        assert "Traceback (most recent call last)" in written_logs[0].read_text()
    else:
        assert not written_logs, f"an unforeseen error reached the catch-all: {output}"
