"""Config validation and partition arithmetic: no Spark job runs here."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from shadow_backfill.chunking import choose_chunk_size
from shadow_backfill.cli import app
from shadow_backfill.config import (
    MAX_CONFIG_BYTES,
    MAX_CONFIG_DEPTH,
    PartitionSpec,
    load_config,
    nested_deeper_than,
    secret_settings,
)
from shadow_backfill.errors import ConfigError, SessionError, UsageError, is_secret_name
from shadow_backfill.formats.runtimes import spark_line
from shadow_backfill.partitions import MAX_PARTITIONS, PartitionScheme, sql_literal
from shadow_backfill.session import check_master, join_user_conf, object_store_conf, uses_s3a
from shadow_backfill.validate.suites import load_suite

GOOD = {
    "live_table": "local.db.features",
    "format": "iceberg",
    "partition": {"column": "ds"},
    "transform": {"function": "mod:fn"},
}


def write(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_good_config_defaults(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.shadow == "local.db.features_v2"
    assert cfg.warehouse == tmp_path / "warehouse"
    assert cfg.state_url == f"sqlite:///{tmp_path / 'warehouse' / 'shadow_backfill_state.db'}"
    assert cfg.run.max_parallel == 2 and cfg.run.chunk_size == "auto"


def test_a_commands_promote_options_replace_the_files_and_only_those_given(tmp_path: Path) -> None:
    """`--allow-warn`/`--canary` over `promote.*` (`BackfillConfig.promoting`); an option not
    given keeps the file's value, and the file's config is left as it was."""
    cfg = load_config(write(tmp_path, {**GOOD, "promote": {"allow_warn": True, "canary": 3}}))
    assert cfg.promoting(allow_warn=None, canary=None) is cfg
    chosen = cfg.promoting(allow_warn=False, canary=None)
    assert (chosen.promote.allow_warn, chosen.promote.canary) == (False, 3)
    assert (cfg.promote.allow_warn, cfg.promote.canary) == (True, 3)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"live_table": None}, "live_table", "Field required"),
        ({"live_table": 5}, "live_table", "string"),
        ({"format": "orc"}, "format", "expected one of: iceberg, delta, parquet"),
        ({"partition": {"column": "ds", "granularity": "weekly"}}, "partition.granularity", "daily"),
        ({"run": {"max_parallel": 0}}, "run.max_parallel", "greater than 0"),
        ({"run": {"max_parallel": "many"}}, "run.max_parallel", "integer"),
        ({"transform": {}}, "transform", "exactly one"),
        ({"transform": {"function": "no_colon"}}, "transform", "module:function"),
        ({"live_table": "local.db.x; DROP TABLE y"}, "(top level)", "identifier"),
        ({"keys": ["id; drop"]}, "keys", "plain column name"),
        ({"colour": "blue"}, "colour", "Extra inputs"),
    ],
)
def test_config_errors_name_the_field(tmp_path: Path, change: dict, field: str, words: str) -> None:
    data = {**GOOD, **change}
    data = {k: v for k, v in data.items() if v is not None}
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, data))
    assert f"field '{field}'" in str(err.value) and words in str(err.value)
    assert str(tmp_path / "c.yaml") in str(err.value)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("live_table: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_cli_config_error_exits_2_with_one_line(tmp_path: Path) -> None:
    p = write(tmp_path, {**GOOD, "format": "orc"})
    result = CliRunner().invoke(app, ["run", str(p), "--start", "2024-01-01", "--end", "2024-01-02"])
    assert result.exit_code == 2
    assert "field 'format'" in result.output


COMMANDS = [
    "run",
    "status",
    "validate",
    "report",
    "promote",
    "approve",
    "rollback",
    "gc",
    "history",
    "suggest",
    "backfill",
    "notify-test",
    "demo",
]
PIPELINE_COMMANDS = [
    "run",
    "validate",
    "status",
    "promote",
    "approve",
    "rollback",
    "history",
    "report",
    "backfill",
    "notify-test",
]


def test_help_lists_commands() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    panel = result.output.split("Commands", 1)[1]
    listed = re.findall(r"^[│|] ([\w-]+) {2,}\S", panel, flags=re.M)
    assert listed == [*COMMANDS, "pipeline"], result.output
    assert [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands] == COMMANDS  # type: ignore[union-attr]
    for cmd in COMMANDS:
        sub = CliRunner().invoke(app, [cmd, "--help"])
        assert sub.exit_code == 0 and "Usage:" in sub.output, sub.output
    for cmd in PIPELINE_COMMANDS:
        sub = CliRunner().invoke(app, ["pipeline", cmd, "--help"])
        assert sub.exit_code == 0 and "Usage:" in sub.output, sub.output


def test_version_is_the_package_version() -> None:
    from shadow_backfill import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"shadow-backfill {__version__}\n"


def test_spark_masters_are_checked_before_spark_starts() -> None:
    """The CLI's line for a bogus master is in tests/e2e/test_cli_master.py."""
    with pytest.raises(ConfigError, match=r"spark.master 'bogus://x' is not a Spark master URL"):
        check_master("bogus://x")
    for good in ("local", "local[2]", "local[*]", "local[*, 4]", "local-cluster[2,1,1024]", "yarn", "k8s://h:443"):
        check_master(good)
    with pytest.raises(SessionError, match=r"cannot reach the Spark master \(127.0.0.1:1: Connection refused\)"):
        check_master("spark://127.0.0.1:1")


DEEP = 5000
# Configs that must be refused as usage errors naming the file: nesting in each YAML style, nesting
# built by aliases (and a cycle), and a file over the size limit.
OVERSIZED = {
    "flow sequences": "live_table: " + "[" * DEEP + "]" * DEEP + "\n",
    "flow mappings": "live_table: " + "{a: " * DEEP + "1" + "}" * DEEP + "\n",
    "block mappings": "".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "v: 1\n",
    "alias chain": "".join(f"a{i}: &a{i} [{f'*a{i - 1}' if i else 1}]\n" for i in range(DEEP)),
    "alias key": "".join(f"a{i}: &a{i} [{f'*a{i - 1}' if i else 1}]\n" for i in range(DEEP)) + f"? *a{DEEP - 1}\n: 1\n",
    "alias cycle": "live_table: &a [*a]\n",
}


@pytest.mark.parametrize("text", OVERSIZED.values(), ids=OVERSIZED.keys())
def test_a_config_nested_too_deep_is_a_usage_error_naming_the_file(tmp_path: Path, text: str) -> None:
    p = tmp_path / "deep.yaml"
    p.write_text(text)
    result = CliRunner().invoke(app, ["run", str(p), "--start", "2024-01-01", "--end", "2024-01-02"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert line.startswith(f"error: {p}: nested more than {MAX_CONFIG_DEPTH} levels deep"), line


def test_nesting_up_to_the_bound_is_read() -> None:
    assert not nested_deeper_than({"a": [[{"b": 1}]]}, 4)
    assert nested_deeper_than({"a": [[{"b": []}]]}, 4)
    shared: list[object] = [[[]]]
    assert not nested_deeper_than([shared, [shared]], 5) and nested_deeper_than([shared, [[shared]]], 5)


def test_a_config_over_the_size_limit_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD)
    p.write_text(p.read_text() + "# " + "x" * MAX_CONFIG_BYTES + "\n")
    result = CliRunner().invoke(app, ["status", str(p)])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"error: config file '{p}' is larger than 1 MiB, the limit for a config file: is it the right file?"
    ]
    p.write_text(p.read_text()[: MAX_CONFIG_BYTES - 100])
    assert load_config(p).live_table == GOOD["live_table"]


def test_a_suite_nested_too_deep_is_a_usage_error(tmp_path: Path) -> None:
    for depth in (DEEP * 20, MAX_CONFIG_DEPTH + 1):
        suite = tmp_path / "deep.json"
        suite.write_text('{"expectations": ' + "[" * depth + "]" * depth + "}")
        with pytest.raises(ConfigError, match=f"deep.json: nested more than {MAX_CONFIG_DEPTH} levels deep"):
            load_suite(suite)


def scheme(**kw: object) -> PartitionScheme:
    return PartitionScheme.from_spec(PartitionSpec(**{"column": "ds", **kw}))  # type: ignore[arg-type]


def test_daily_range_and_reversed_range() -> None:
    s = scheme()
    assert s.expand("2024-02-27", "2024-03-01") == ["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01"]
    with pytest.raises(UsageError, match="reversed"):
        s.expand("2024-01-02", "2024-01-01")
    with pytest.raises(UsageError, match="'2024-13-01' is not a valid daily partition"):
        s.select(start="2024-13-01", end="2024-12-31")
    with pytest.raises(UsageError, match="either --partitions or"):
        s.select(start="2024-01-01", end="2024-01-02", partitions=["2024-01-01"])
    assert s.select(partitions=["2024-01-03", "2024-01-01", "2024-01-03"]) == ["2024-01-01", "2024-01-03"]


def test_hourly_and_monthly() -> None:
    h = scheme(granularity="hourly")
    assert h.expand("2024-01-01T22", "2024-01-02 01:00") == [
        "2024-01-01T22",
        "2024-01-01T23",
        "2024-01-02T00",
        "2024-01-02T01",
    ]
    assert h.value("2024-01-01T22") == dt.datetime(2024, 1, 1, 22, tzinfo=dt.timezone.utc)
    assert h.column_text("2024-01-01T22") == "2024-01-01T22"  # a timestamp column is ranged: rows group by period
    assert h.key_from_column_text("2024-01-01 22:00:00") == "2024-01-01T22"
    m = scheme(granularity="monthly")
    assert m.expand("2023-11", "2024-02") == ["2023-11", "2023-12", "2024-01", "2024-02"]
    assert m.value("2024-02") == "2024-02"
    i = scheme(granularity="daily", type="int")
    assert i.value("2024-02-03") == 20240203 and i.key_from_column_text("20240203") == "2024-02-03"
    assert i.key_from_column_text("garbage") is None


def test_ranges_end_at_the_last_day_and_are_bounded() -> None:
    assert scheme().expand("9999-12-30", "9999-12-31") == ["9999-12-30", "9999-12-31"]
    assert scheme(granularity="hourly").expand("9999-12-31T22", "9999-12-31T23") == ["9999-12-31T22", "9999-12-31T23"]
    assert scheme(granularity="monthly").expand("9999-11", "9999-12") == ["9999-11", "9999-12"]
    h = scheme(granularity="hourly")
    assert len(h.expand("2000-01-01T00", h.key(dt.datetime(2000, 1, 1) + dt.timedelta(hours=MAX_PARTITIONS - 1)))) == (
        MAX_PARTITIONS
    )
    with pytest.raises(UsageError, match=r"2000-01-01T00..2011-05-29T16 holds 100,001 hourly partitions, more than"):
        h.expand("2000-01-01T00", "2011-05-29T16")
    with pytest.raises(UsageError, match="holds 2,913,174 daily partitions"):
        scheme().select(start="2024-01-01", end="9999-12-31")


def test_repeated_partitions_are_kept_once_in_order() -> None:
    h = scheme(granularity="hourly")
    assert h.normalize_all(["2024-01-01T05", "2024-01-01 05:00", "2024-01-01T04", " ", "2024-01-01T05"]) == [
        "2024-01-01T05",
        "2024-01-01T04",
    ]


@pytest.mark.parametrize(
    ("spec", "column_type", "words"),
    [
        ({}, "date", None),
        ({"granularity": "hourly"}, "timestamp", None),
        ({"granularity": "hourly"}, "timestamp_ntz", None),
        ({"type": "int"}, "bigint", None),
        ({"type": "string"}, "varchar(10)", None),
        ({"granularity": "monthly"}, "string", None),
        ({"granularity": "hourly"}, "date", "'ds' of t is date, which cannot hold hourly partitions"),
        ({"granularity": "monthly"}, "timestamp", "is timestamp, but partition.type is 'string': set partition.type"),
        ({"granularity": "monthly", "type": "timestamp"}, "timestamp", None),
        ({"type": "timestamp"}, "timestamp", None),
        ({"granularity": "hourly"}, "double", "needs a timestamp, string, int column"),
        ({}, "double", "'ds' of t is double, which cannot hold daily partitions"),
        ({}, "string", "is string, but partition.type is 'date': set partition.type to 'string'"),
        ({"type": "string"}, "int", "is int, but partition.type is 'string': set partition.type to 'int'"),
    ],
)
def test_partition_column_type_must_fit(spec: dict, column_type: str, words: str | None) -> None:
    s = scheme(**spec)
    if words is None:
        s.check_column_type(column_type, "t")
    else:
        with pytest.raises(ConfigError, match=re.escape(words)):
            s.check_column_type(column_type, "t")


@pytest.mark.parametrize(
    ("spec", "column_type", "hidden", "settled"),
    [
        ({}, "timestamp", "daily", ("daily", "timestamp", None)),
        ({}, "timestamp", "hourly", ("hourly", "timestamp", None)),
        ({"type": "timestamp"}, "timestamp_ntz", "monthly", ("monthly", "timestamp", None)),
        ({}, "string", None, ("daily", "string", "%Y-%m-%d")),
        ({}, "bigint", None, ("daily", "int", "%Y%m%d")),
        ({"granularity": "monthly"}, "date", None, ("monthly", "date", None)),
        ({"type": "string", "format": "%Y%m%d"}, "date", None, ("daily", "string", "%Y%m%d")),
        ({"granularity": "hourly"}, "date", None, ("hourly", "timestamp", None)),  # check_column_type refuses
        ({}, "double", None, ("daily", "date", None)),  # check_column_type refuses
    ],
)
def test_what_the_config_leaves_out_is_read_from_the_table(
    spec: dict, column_type: str, hidden: str | None, settled: tuple[str, str, str | None]
) -> None:
    partition = PartitionSpec(**{"column": "ds", **spec})  # type: ignore[arg-type]
    s = PartitionScheme.from_spec(partition).resolved(partition, column_type, hidden, "t")
    assert (s.granularity, s.type, s.format) == settled


def test_a_written_granularity_that_contradicts_the_table_names_both() -> None:
    partition = PartitionSpec(column="ds", granularity="daily", type="timestamp")
    words = "partition.granularity is 'daily', but t is partitioned by a hidden hourly transform of 'ds'"
    with pytest.raises(ConfigError, match=re.escape(words)):
        PartitionScheme.from_spec(partition).resolved(partition, "timestamp", "hourly", "t")


def test_keys_of_any_granularity_sort_in_time_order_before_the_scheme_is_settled() -> None:
    assert scheme().sort(["2024-01-02T05", "2024-01-01T23", "2024-01-02T00"]) == [
        "2024-01-01T23",
        "2024-01-02T00",
        "2024-01-02T05",
    ]
    assert scheme(granularity="hourly").sort(["2024-02", "2023-12"]) == ["2023-12", "2024-02"]


def test_a_timestamp_column_maps_each_key_to_its_period() -> None:
    """Hidden partitioning (`days(event_ts)`): a key is a [start, end) range of the timestamp,
    consecutive keys make one range, and any instant maps back to the key of its period."""
    utc = dt.timezone.utc
    d = scheme(column="event_ts", type="timestamp")
    assert d.ranged and not scheme().ranged
    assert d.ranges(["2024-03-02", "2024-03-01", "2024-03-04"]) == [
        (dt.datetime(2024, 3, 1, tzinfo=utc), dt.datetime(2024, 3, 3, tzinfo=utc)),
        (dt.datetime(2024, 3, 4, tzinfo=utc), dt.datetime(2024, 3, 5, tzinfo=utc)),
    ]
    assert d.sql_predicate(["2024-03-01"]) == (
        "(`event_ts` >= TIMESTAMP'2024-03-01 00:00:00' AND `event_ts` < TIMESTAMP'2024-03-02 00:00:00')"
    )
    assert d.key_from_column_text("2024-03-01 00:49:14") == "2024-03-01"
    assert d.key_from_column_text("2024-03-01 23:59:59.999999") == "2024-03-01"
    assert d.column_text("2024-03-01") == "2024-03-01"
    m = scheme(column="event_ts", type="timestamp", granularity="monthly")
    assert m.ranges(["2023-12"]) == [(dt.datetime(2023, 12, 1, tzinfo=utc), dt.datetime(2024, 1, 1, tzinfo=utc))]
    assert m.key_from_column_text("2024-02-29 13:00:00") == "2024-02"
    h = scheme(column="event_ts", type="timestamp", granularity="hourly")
    assert h.key_from_column_text("2024-03-01 05:59:59") == "2024-03-01T05"


def test_sql_literals_cannot_inject() -> None:
    assert sql_literal(dt.date(2024, 1, 2)) == "DATE'2024-01-02'"
    assert sql_literal("x' OR '1'='1") == "'x\\' OR \\'1\\'=\\'1'"
    assert sql_literal(7) == "7"
    s = scheme(type="string", format="%Y-%m-%d'")
    assert s.sql_predicate(["2024-01-02"]) == "`ds` IN ('2024-01-02\\'')"
    with pytest.raises(UsageError):
        scheme().normalize("2024-01-01' OR 1=1 --")


def test_chunk_size_rule() -> None:
    assert choose_chunk_size(2, 4) == 1
    assert choose_chunk_size(180, 2) == 23  # sizes unknown: ceil(180 / 8), four chunks per worker
    assert choose_chunk_size(1000, 2) == 100  # capped
    assert choose_chunk_size(180, 2, rows_per_partition=200) == 90  # small partitions: one chunk per worker
    assert choose_chunk_size(180, 2, rows_per_partition=1_000_000) == 5  # 5M rows per job
    assert choose_chunk_size(180, 2, rows_per_partition=200, max_chunk=31) == 31


def test_secret_spark_settings_are_masked_in_any_message(tmp_path: Path) -> None:
    """An engine's error or a traceback that quotes a secret Spark setting prints it masked."""
    from shadow_backfill import errors

    errors._SECRETS.clear()
    conf = {
        "spark.hadoop.fs.s3a.secret.key": "s3-Secret-9",
        "spark.sql.catalog.rest.token": "tok-Abc-1",
        "spark.app.name": "visible-name",
        "spark.sql.catalog.rest.token.enabled": "true",
    }
    load_config(write(tmp_path, {**GOOD, "spark": {"conf": conf}}))
    line = errors.redact("failed with s3-Secret-9 and tok-Abc-1 for visible-name: true")
    assert line == "failed with *** and *** for visible-name: true"
    errors._SECRETS.clear()


def test_the_users_packages_and_extensions_join_the_tools() -> None:
    """An S3 user lists hadoop-aws in spark.jars.packages: the format runtime must stay."""
    ours = {
        "spark.jars.packages": "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        "spark.ui.enabled": "false",
    }
    user = {
        "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1, org.apache.iceberg:iceberg-aws-bundle:1.11.0",
        "spark.sql.extensions": "org.apache.sedona.sql.SedonaSqlExtensions",
        "spark.ui.enabled": "true",
    }
    joined = join_user_conf(ours, user)
    assert joined["spark.jars.packages"].split(",") == [
        "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0",
        "org.apache.hadoop:hadoop-aws:3.4.1",
        "org.apache.iceberg:iceberg-aws-bundle:1.11.0",
    ]
    assert joined["spark.sql.extensions"].endswith(",org.apache.sedona.sql.SedonaSqlExtensions")
    assert joined["spark.ui.enabled"] == "true", "other settings: the user's value wins"
    assert join_user_conf(ours, {"spark.jars.packages": ours["spark.jars.packages"]}) == ours, "listed twice: once"


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (
            "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0",
            "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.9.2",
        ),
        (
            "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.1",
            "org.apache.iceberg:iceberg-spark-runtime-3.4_2.12:1.10.1",
        ),
        ("io.delta:delta-spark_4.1_2.13:4.3.1", "io.delta:delta-spark_2.13:4.0.0"),
    ],
)
def test_a_users_runtime_of_another_version_is_refused_naming_both(ours: str, theirs: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"lists {theirs}, but this Spark line needs {ours}")):
        join_user_conf(
            {"spark.jars.packages": ours}, {"spark.jars.packages": f"org.apache.hadoop:hadoop-aws:3.4.1,{theirs}"}
        )


def test_a_warehouse_on_object_storage_is_named_not_made_a_local_folder(tmp_path: Path) -> None:
    """`s3a://lake/wh` as a Path is the relative folder `s3a:/lake/wh`: refused before anything
    is created, naming the way (the catalog's own settings)."""
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, {**GOOD, "spark": {"warehouse": "s3a://lake/wh"}}))
    assert "c.yaml: field 'spark.warehouse': 's3a://lake/wh' is not a local folder" in str(err.value)
    assert "Value error" not in str(err.value)
    assert not (tmp_path / "s3a:").exists()


@pytest.mark.parametrize(
    ("overrides", "needs"),
    [
        ({"live_table": "s3a://lake/features", "format": "delta"}, True),
        ({"spark": {"conf": {"spark.sql.catalog.lake.warehouse": "s3a://lake/wh"}}}, True),
        ({"spark": {"conf": {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"}}}, True),
        ({}, False),
        ({"live_table": "gs://lake/features", "format": "delta"}, False),
    ],
)
def test_s3a_brings_the_connector_of_this_spark_line(tmp_path: Path, overrides: dict, needs: bool) -> None:
    """An S3 user gets the one hadoop-aws that fits PySpark's Hadoop beside the format runtime;
    nothing is added when the config names no s3a, or the jars come from a folder."""
    config = load_config(write(tmp_path, {**GOOD, **overrides}))
    ours = {"spark.jars.packages": "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.1"}
    added = object_store_conf(config, ours)
    assert uses_s3a(config) is needs
    if needs:
        packages = added["spark.jars.packages"].split(",")
        assert packages[0] == ours["spark.jars.packages"]
        assert packages[1] == spark_line().hadoop_aws
    else:
        assert added == {}
    assert object_store_conf(config, {"spark.jars": "/opt/jars/a.jar"}) == {}, "offline: the folder holds it"


def test_a_format_without_a_runtime_gets_the_connector_alone(tmp_path: Path) -> None:
    """Parquet fetches no runtime (its settings are empty, or `spark.jars` from a folder): a table
    by name on S3 gets the connector alone, and nothing when the folder's jars hold it."""
    s3 = {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"}
    data = {**GOOD, "live_table": "db.events", "format": "parquet", "spark": {"conf": s3}}
    config = load_config(write(tmp_path, data))
    assert object_store_conf(config, {}) == {"spark.jars.packages": spark_line().hadoop_aws}
    assert object_store_conf(config, {"spark.jars": "/opt/jars/hadoop-aws-3.4.2.jar"}) == {}


def test_each_line_names_the_hadoop_aws_of_its_pyspark_hadoop() -> None:
    """hadoop-aws must be exactly the Hadoop version the installed PySpark ships (read off its
    jars folder, PySpark not imported): another version fails at the first s3a read."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.submodule_search_locations
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    shipped = [p.name for p in jars.glob("hadoop-client-api-*.jar")]
    assert shipped, f"no hadoop-client-api jar in {jars}"
    version = shipped[0].removeprefix("hadoop-client-api-").removesuffix(".jar")
    from importlib.metadata import version as installed

    assert spark_line(installed("pyspark")).hadoop_aws == f"org.apache.hadoop:hadoop-aws:{version}"


def test_a_users_hadoop_aws_of_another_version_is_refused(tmp_path: Path) -> None:
    """As `open_session` joins them: the format runtime, the connector the tool adds, the user's."""
    config = load_config(write(tmp_path, {**GOOD, "live_table": "s3a://lake/features", "format": "delta"}))
    ours = object_store_conf(config, {"spark.jars.packages": "io.delta:delta-spark_4.1_2.13:4.3.1"})
    assert "hadoop-aws:3.2.0" not in ours["spark.jars.packages"], "a version no line uses"
    with pytest.raises(
        ConfigError, match=re.escape("lists org.apache.hadoop:hadoop-aws:3.2.0, but this Spark line needs")
    ):
        join_user_conf(ours, {"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.2.0"})


def test_a_cluster_gets_no_connector_of_pip_pysparks_hadoop(tmp_path: Path) -> None:
    """A YARN or Kubernetes cluster may run another Hadoop: the user lists the connector."""
    data = {**GOOD, "live_table": "s3a://lake/features", "format": "delta", "spark": {"master": "yarn"}}
    config = load_config(write(tmp_path, data))
    assert uses_s3a(config)
    assert object_store_conf(config, {"spark.jars.packages": "io.delta:delta-spark_4.1_2.13:4.3.1"}) == {}


def test_an_adls_account_key_is_a_secret() -> None:
    conf = {"spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": "c2VjcmV0", "spark.ui.enabled": "false"}
    assert secret_settings(conf) == ["c2VjcmV0"]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("spark.hadoop.fs.s3a.secret.key", True),
        ("spark.sql.catalog.lake.s3.access-key-id", True),  # missed by the config's old rule
        ("spark.ssl.keyPassword", True),
        ("spark.sql.catalog.lake.token", True),
        ("sslpassword", True),  # a state URL's query parameter
        ("spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net", True),
        ("spark.sql.shuffle.partitions", False),
        ("spark.sql.catalog.lake.token.enabled", False),  # a flag about a token, not one
    ],
)
def test_one_rule_says_which_settings_hold_secrets(name: str, secret: bool) -> None:
    """The Spark settings and the state URL's query share `errors.is_secret_name` (they once
    disagreed: `access-key-id` was masked in a URL and printed from spark.conf)."""
    assert is_secret_name(name) is secret
    assert secret_settings({name: "c2VjcmV0"}) == (["c2VjcmV0"] if secret else [])
    assert secret_settings({name: "true"}) == []


@pytest.mark.parametrize(
    "validation",
    [
        {"expected_schema_changes": {"added": ["ds"]}},
        {"expected_schema_changes": {"added": ["DS"]}},  # Spark matches names case-blind by default
        {"expected_schema_changes": {"removed": ["Ds"]}},
        {"expected_schema_changes": {"retyped": {"ID": "bigint"}}},
        {"expected_changes": {"DS": {}}},
    ],
)
def test_a_declared_change_of_the_partition_column_or_a_key_is_refused_in_any_case(
    tmp_path: Path, validation: dict
) -> None:
    with pytest.raises(ConfigError, match="is the partition column or a key"):
        load_config(write(tmp_path, {**GOOD, "keys": ["id"], "validation": validation}))
