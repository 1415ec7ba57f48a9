"""The bad-input catalogue: every case gets one clear message naming the culprit, exit code 2
for usage errors and 1 for runtime failures, and no table is written. Runs on Delta via Sail
(fast); the same code paths serve Iceberg."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from conftest import END, START, MakeBackfill
from promote_cases import QUIET
from typer.testing import CliRunner

from shadow_backfill.cli import app

pytestmark = pytest.mark.sail


@dataclass
class Case:
    name: str
    args: list[str]  # "{cfg}" is replaced by the config path
    code: int
    words: str
    stage: str = "fresh"  # fresh | recomputed | validated | promoted | rolled_back
    overrides: dict[str, Any] = field(default_factory=dict)
    edit: dict[str, Any] | None = None  # YAML keys replaced after setup
    raw: str | None = None  # config text written verbatim after setup


RUN = ["run", "{cfg}"]
TR = "sb_test_transforms:"
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
        edit={"live_table": "/nonexistent/table"},
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
    Case("empty partition list", [*RUN, "--partitions", " , "], 2, "--partitions is empty"),
    Case("start without end", [*RUN, "--start", START], 2, "--start and --end go together"),
    Case("range and list", [*RUN, "--start", START, "--end", END, "--partitions", START], 2, "not both"),
    Case("impossible date", [*RUN, "--partitions", "2024-02-30"], 2, "'2024-02-30' is not a valid daily"),
    Case("quote in partition", [*RUN, "--partitions", "2024-01-01' OR '1'='1"], 2, "is not a valid daily"),
    Case("sql in partition", [*RUN, "--partitions", "2024-01-01; DROP TABLE events"], 2, "is not a valid daily"),
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


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(make_delta_backfill: MakeBackfill, case: Case) -> None:
    overrides = {"transform": {"function": TR + "nudged_with_one_bad_day"}, "validation": QUIET, **case.overrides}
    bf = make_delta_backfill(**overrides)
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
    cfg_path = bf.config_path  # type: ignore[attr-defined]
    if case.edit is not None or case.raw is not None:
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
        cfg_path.write_text(case.raw if case.raw is not None else yaml.safe_dump(data))
    before = _tables(bf)
    args = [a.replace("{cfg}", str(cfg_path)).replace("{promotion}", promotion) for a in case.args]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == case.code, result.output
    assert case.words in result.output, result.output
    assert "Traceback" not in result.output
    assert result.output.count("error:") <= 1 or case.code == 1
    assert _tables(bf) == before, "a refused command must not write any table"
