"""The state store's tables, in one place, so every part of the store and `create_all` agree."""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Column, DateTime, Float, Integer, MetaData, String, Table, Text

metadata = MetaData()


def _per_partition(name: str, *columns: Column[Any]) -> Table:
    """A table of one row per partition of a shadow table: the partition records and their
    verdicts share their key, so a partition's verdict is found by its record's key."""
    key = Column("shadow_table", String(512), primary_key=True), Column("partition", String(64), primary_key=True)
    return Table(name, metadata, *key, *columns)


def _written_by() -> tuple[Column[Any], ...]:
    """Who wrote a trail's row, from where, and when (`db.stamped` fills them)."""
    return Column("user", String(128)), Column("host", String(255)), Column("at", DateTime(timezone=True))


runs = Table(
    "runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("shadow_table", String(512), nullable=False, index=True),
    Column("live_table", String(512), nullable=False),
    Column("config_hash", String(64)),
    Column("code_fingerprint", String(64)),
    Column("status", String(16), nullable=False),
    Column("user", String(128)),
    Column("host", String(255)),
    Column("args", Text),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
)

partitions = _per_partition(
    "partitions",
    Column("status", String(16), nullable=False),
    Column("rows", BigInteger),
    Column("shadow_version", BigInteger),
    Column("code_fingerprint", String(64)),
    Column("run_id", String(64)),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", Text),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("duration_s", Float),
    Column("updated_at", DateTime(timezone=True)),
)

verdicts = _per_partition(
    "verdicts",
    Column("verdict", String(8), nullable=False),
    Column("checks", Text, nullable=False),  # JSON list of checks (observed vs threshold)
    Column("metrics", Text, nullable=False),  # JSON: rows, per-column drift, key diff, schema
    Column("shadow_version", BigInteger),  # shadow table version that was read
    Column("partition_version", BigInteger),  # the commit that wrote this partition
    Column("live_version", BigInteger),  # live table version that was read
    Column("validation_id", String(64)),
    Column("validated_at", DateTime(timezone=True)),
)

# Every validation's measurements of each partition, oldest pruned by `state.metric_history_days`:
# how a partition's numbers moved across re-runs (`history --partition P --metrics`). Samples
# (rows of data) are not kept here.
verdict_history = Table(
    "verdict_history",
    metadata,
    Column("shadow_table", String(512), primary_key=True),
    Column("partition", String(64), primary_key=True),
    Column("validation_id", String(64), primary_key=True),
    Column("verdict", String(8), nullable=False),
    Column("metrics", Text, nullable=False),
    Column("shadow_version", BigInteger),
    Column("partition_version", BigInteger),
    Column("live_version", BigInteger),
    Column("validated_at", DateTime(timezone=True), nullable=False, index=True),
    # The instant the validation saw the data (the clock, or SHADOW_BACKFILL_NOW when pinned),
    # and the partition's age then in its own periods (`windows.partition_age`), for the
    # late-arrival view (null: stored before either was kept).
    Column("observed_at", DateTime(timezone=True)),
    Column("age", Integer),
)

promotions = Table(
    "promotions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),  # promote | rollback
    Column("live_table", String(512), nullable=False, index=True),
    Column("shadow_table", String(512)),
    Column("partitions", Text, nullable=False),  # JSON list of keys
    Column("live_version_before", BigInteger),
    Column("live_version_after", BigInteger),
    Column("shadow_versions", Text),  # JSON {partition: validated shadow version}
    Column("validation_ids", Text),  # JSON list
    Column("target", String(64)),  # for a rollback: the promotion (or rollback) it undoes
    Column("to_version", BigInteger),  # for a whole-table rollback
    Column("config_hash", String(64)),
    Column("code_fingerprint", String(64)),
    *_written_by(),
    Column("undone_by", String(64)),
    # JSON list: "+col" a column the promotion added to live, "-col" one it kept, null in its rows
    # (added after the first release: `migrate.add_new_columns` adds it to older stores)
    Column("schema_change", Text),
    # A canary promotion's steps: "canary" or "rest", and the canary's id on both (added later)
    Column("step", String(16)),
    Column("steps_of", String(64)),
    # `approve`: who let held (`warn`) partitions into live, and why (added later)
    Column("approved_by", String(255)),
    Column("approval_reason", Text),
)

locks = Table(
    "locks",
    metadata,
    Column("resource", String(700), primary_key=True),  # e.g. recompute:<shadow>:<partition>
    Column("owner", String(255), nullable=False),  # host:pid:run-id
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("acquired_at", DateTime(timezone=True)),
)

# One row per promotion (or rollback) of a pipeline's layers as a set; each member is an
# ordinary promotion in `promotions`, upstream first.
pipeline_promotions = Table(
    "pipeline_promotions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("pipeline", String(1024), nullable=False, index=True),  # the pipeline file's resolved path
    Column("kind", String(16), nullable=False),  # promote | rollback
    Column("partitions", Text, nullable=False),  # JSON list of keys
    Column("members", Text, nullable=False),  # JSON list of [layer, promotion id], in commit order
    Column("target", String(64)),  # for a rollback: the pipeline promotion it undoes
    Column("state", String(16), nullable=False),  # promoting (members still committing) | done
    *_written_by(),
    Column("undone_by", String(64)),
    # `pipeline approve`: who let the held set into live, and why (added later; also on members)
    Column("approved_by", String(255)),
    Column("approval_reason", Text),
)

# One row per canary step, written BEFORE the canary's commit and `pending` until its checks on
# live have run: a row still `pending` when no command holds the table's canary lock was cut
# off (a kill between the commit and the checks), and the next promotion finishes it first.
canaries = Table(
    "canaries",
    metadata,
    Column("id", String(64), primary_key=True),  # the canary's promotion id (its commit carries it)
    Column("live_table", String(512), nullable=False, index=True),
    Column("shadow_table", String(512)),
    Column("partitions", Text, nullable=False),  # JSON list of keys
    Column("rows", Text),  # JSON {partition: validated shadow row count}: the check on live
    Column("state", String(16), nullable=False),  # pending | checked | rolled back | not committed
    *_written_by(),
    Column("finished_at", DateTime(timezone=True)),
)
