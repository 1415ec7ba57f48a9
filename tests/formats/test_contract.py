"""The contract every `TableFormat` keeps, tested once per backend.

The runner, the validator and the promoter know nothing of Iceberg, Delta or plain Parquet: they
rely only on what `shadow_backfill/formats/base.py` promises. A table is created in one commit;
a version can be read back exactly; `overwrite_partitions` replaces exactly the partitions asked
for, in one commit that names them; a table is known by its identity whatever name reaches it;
history is oldest first and finds our commits by id; a commit bound to an older version is told
when another writer touched its partitions since; writing an old version back restores it; and
`pinned` keeps a read's files in place. Each backend implements these with different machinery
(Iceberg snapshots, Delta's log, a folder log over plain Parquet) on different engines (classic
Spark, Sail, Spark Connect), so each clause is run on every backend, as an engine adapter's
integration tests are: a promise broken on one backend breaks promotion and rollback there.

The tables are tiny (the seed: 10 days of 5 rows), so every clause is one small test.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import sb_test_transforms as t
from chispa import assert_df_equality
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from support import END, START, Backend, MakeBackfill
from support.backends import OnBucket, objects

from shadow_backfill import Backfill, testpoints
from shadow_backfill.errors import ConfigError
from shadow_backfill.formats.base import COMMIT_ID_PROPERTY, PARTITIONS_PROPERTY, LiveChangedError
from shadow_backfill.state.locks import LeaseLocks

# where the table's files lie (a local folder, a bucket) can change every clause of the contract
pytestmark = pytest.mark.store

A, B, C = "2024-01-02", "2024-01-03", "2024-01-04"  # partitions of the seeded live table
OUTSIDE = "2024-01-11"  # a partition the seed does not hold
FOREIGN_ID = 999_999  # the id of the row another writer adds


def _same(actual: DataFrame, expected: DataFrame) -> None:
    """Equal as sets of rows: no format promises an order, and nullability differs by writer."""
    assert_df_equality(actual, expected, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def _events(bf: Backfill, keys: list[str], v2: bool = False) -> DataFrame:
    """The rows the seed (v1) or the backfill transform (v2) makes for `keys`: deterministic, so
    a test knows exactly what a table must hold without reading it first."""
    days = [bf.scheme.value(k) for k in keys]
    return (t.events_v2 if v2 else t.events)(bf.spark, days)


def _all_keys(bf: Backfill) -> list[str]:
    """Every partition the seed wrote: what the live table must hold unless a test changed it."""
    return bf.scheme.expand(START, END)


def _foreign_rows(bf: Backfill, key: str) -> DataFrame:
    """One row for `key`, as another job writing to the table would add it."""
    return _events(bf, [key]).limit(1).withColumn("id", F.lit(FOREIGN_ID).cast("long"))


def test_create_with_data_and_empty_in_one_commit_and_never_twice(make: MakeBackfill) -> None:
    """Seeding a table is one commit holding exactly the data, an empty table is created with
    its schema and partitioning, and creating an existing table is refused: a `create` that
    replaced a table would erase live."""
    bf = make()  # seed: create(live, data=events over START..END)
    fmt, live, keys = bf.table_format, bf.live_table, _all_keys(bf)
    assert fmt.exists(live)
    assert len(fmt.history(live)) == 1, "a table created with data is one commit"
    assert fmt.current_version(live) == fmt.history(live)[0].version
    assert fmt.partition_columns(live) == ["ds"]
    assert fmt.list_partitions(live) == keys
    assert fmt.partition_row_counts(live) == dict.fromkeys(keys, t.ROWS_PER_DAY)
    _same(fmt.read(live), _events(bf, keys))

    shadow, schema = bf.shadow_table, fmt.schema(live)
    assert not fmt.exists(shadow)
    fmt.create(shadow, schema, ["ds"])
    assert fmt.exists(shadow)
    assert len(fmt.history(shadow)) <= 1, "an empty table is at most one commit"
    assert fmt.read(shadow).count() == 0 and fmt.list_partitions(shadow) == []
    assert fmt.schema(shadow).fieldNames() == schema.fieldNames()
    assert fmt.partition_columns(shadow) == ["ds"]

    before = fmt.current_version(live)
    with pytest.raises(Exception):  # noqa: B017 - each format names it its own way
        fmt.create(live, schema, ["ds"], data=_events(bf, [A], v2=True))
    assert fmt.current_version(live) == before and len(fmt.history(live)) == 1
    _same(fmt.read(live), _events(bf, keys))


def test_read_as_of_a_version_returns_exactly_its_rows(make: MakeBackfill) -> None:
    """Time travel is what validation compares against and what rollback restores from: a read
    as of an old version must return that version's rows, not the current ones."""
    bf = make()
    fmt, live, keys = bf.table_format, bf.live_table, _all_keys(bf)
    v0 = fmt.current_version(live)
    assert v0 is not None
    v1 = fmt.overwrite_partitions(live, _events(bf, [A, B], v2=True), [A, B])
    v2 = fmt.overwrite_partitions(live, _events(bf, [B], v2=True).withColumn("cat", F.lit("z")), [B])

    _same(fmt.read(live, v0), _events(bf, keys))
    rest = [k for k in keys if k not in (A, B)]
    _same(fmt.read(live, v1), _events(bf, rest).unionByName(_events(bf, [A, B], v2=True)))
    _same(fmt.read_partitions(live, [A, B], v0), _events(bf, [A, B]))
    _same(fmt.read_partitions(live, [B], v1), _events(bf, [B], v2=True))
    _same(fmt.read_partitions(live, [B], v2), _events(bf, [B], v2=True).withColumn("cat", F.lit("z")))
    _same(fmt.read_partitions(live, [B]), fmt.read_partitions(live, [B], v2))


def test_overwrite_replaces_exactly_the_partitions_in_one_commit(make: MakeBackfill) -> None:
    """A promotion replaces exactly the partitions that passed: others must stay as they were,
    a requested partition the frame holds no rows for is emptied (a rerun is idempotent), and
    the one commit names its partitions so later checks can tell what it touched."""
    bf = make()
    fmt, live, keys = bf.table_format, bf.live_table, _all_keys(bf)
    v0 = fmt.current_version(live)
    commits_before = len(fmt.history(live))

    v = fmt.overwrite_partitions(live, _events(bf, [A, B], v2=True), [A, B, C], {"shadow-backfill.kind": "test"})

    history = fmt.history(live)
    assert len(history) == commits_before + 1, "one commit"
    assert history[-1].version == v == fmt.current_version(live)
    props = history[-1].properties
    assert props[PARTITIONS_PROPERTY] == f"{A},{B},{C}" and props["shadow-backfill.kind"] == "test"
    _same(fmt.read_partitions(live, [A, B]), _events(bf, [A, B], v2=True))
    assert fmt.read_partitions(live, [C]).count() == 0, "a requested partition with no rows is emptied"
    untouched = [k for k in keys if k not in (A, B, C)]
    _same(fmt.read_partitions(live, untouched), _events(bf, untouched))
    assert fmt.list_partitions(live) == [k for k in keys if k != C]
    assert fmt.partitions_touched(live, history[-1]) in (None, [A, B, C]), "if told, exactly the keys"
    assert [(c.version, hit) for c, hit in fmt.commits_touching(live, v0, keys)] == [(v, [A, B, C])]
    assert fmt.commits_touching(live, v, keys) == [], "nothing after the newest commit"


def test_overwrite_refuses_rows_outside_its_partitions(
    make: MakeBackfill, backend: Backend, request: pytest.FixtureRequest
) -> None:
    """Rows for a partition not asked for would land in live unvalidated and unrecorded (the
    commit names only the partitions asked for): the write is refused and nothing is written."""
    backend.known_gap(request, "stray_rows_accepted")
    bf = make()
    fmt, live, keys = bf.table_format, bf.live_table, _all_keys(bf)
    before, commits = fmt.current_version(live), len(fmt.history(live))
    try:
        fmt.overwrite_partitions(live, _events(bf, [A, B], v2=True), [A])
    except Exception:  # each format names the refusal its own way
        refused = True
    else:
        refused = False
    counts = fmt.partition_row_counts(live)
    assert refused, f"rows for {B} accepted by an overwrite of [{A}]: {B} now holds {counts.get(B)} rows"
    assert fmt.current_version(live) == before and len(fmt.history(live)) == commits
    _same(fmt.read(live), _events(bf, keys))


def test_identity_knows_a_table_by_any_name(make: MakeBackfill, backend: Backend) -> None:
    """The live table reached by another spelling (a second catalog, a path through `..`) is the
    same table, and a shadow inside live's storage would overwrite live's files: both are
    refused, while a shadow of its own is accepted."""
    bf = make()
    fmt, live = bf.table_format, bf.live_table
    alias = backend.alias(bf)
    ident = fmt.identity(live)
    assert ident is not None
    assert fmt.identity(alias) == ident, "another name, the same id and location"
    with pytest.raises(ConfigError, match="is the live table"):
        fmt.check_distinct(live, alias)

    fmt.create_like(live, bf.shadow_table)
    shadow = fmt.identity(bf.shadow_table)
    assert shadow is not None and shadow.location != ident.location
    assert shadow.id is None or shadow.id != ident.id
    fmt.check_distinct(live, bf.shadow_table)  # a table of its own passes

    inside = backend.inside(bf)
    before = fmt.current_version(live)
    with pytest.raises(ConfigError, match="lies inside"):
        fmt.create_like(live, inside)
    assert not fmt.exists(inside), "the misplaced table is dropped again"
    assert fmt.current_version(live) == before and len(fmt.history(live)) == 1
    _same(fmt.read(live), _events(bf, _all_keys(bf)))


def test_history_is_oldest_first_and_finds_our_commits(make: MakeBackfill) -> None:
    """Promotion and rollback find the commit they made by its id and walk history forwards from
    a version: our commits carry a unique commit id and their partitions, oldest first."""
    bf = make()
    fmt, live = bf.table_format, bf.live_table
    v1 = fmt.overwrite_partitions(live, _events(bf, [A], v2=True), [A])
    fmt.append(live, _foreign_rows(bf, B))  # another writer: no properties of ours
    v3 = fmt.overwrite_partitions(live, _events(bf, [C], v2=True), [C])

    history = fmt.history(live)
    assert len(history) == 4
    seeded, ours1, foreign, ours3 = history
    assert [ours1.version, ours3.version] == [v1, v3] and history[-1].version == fmt.current_version(live)
    stamps = [c.timestamp_ms for c in history if c.timestamp_ms is not None]
    assert stamps == sorted(stamps), "oldest first"
    parents = [c.parent for c in history[1:]]
    assert all(p is None for p in parents) or parents == [c.version for c in history[:-1]]
    assert ours1.properties[PARTITIONS_PROPERTY] == A and ours3.properties[PARTITIONS_PROPERTY] == C
    ids = [ours1.properties[COMMIT_ID_PROPERTY], ours3.properties[COMMIT_ID_PROPERTY]]
    assert ids[0] != ids[1]
    assert COMMIT_ID_PROPERTY not in seeded.properties and COMMIT_ID_PROPERTY not in foreign.properties
    assert [fmt.version_of_commit(live, i) for i in ids] == [v1, v3]
    with pytest.raises(RuntimeError, match="not found"):
        fmt.version_of_commit(live, "0" * 32)
    touched = fmt.partitions_touched(live, foreign)
    assert touched is None or touched == [B], "another writer's commit is told by its data, if at all"


def test_commit_bound_to_an_old_version_detects_another_writer(make: MakeBackfill) -> None:
    """A promotion validated against version `v` must not erase what another writer committed to
    the same partition after `v`: the commit raises `LiveChangedError` naming that commit, and
    either nothing was written or `written` tells the caller what to put back. A commit to other
    partitions goes through."""
    bf = make()
    fmt, live = bf.table_format, bf.live_table
    since = fmt.current_version(live)
    assert since is not None
    fmt.append(live, _foreign_rows(bf, A))
    foreign = fmt.current_version(live)
    assert foreign is not None and foreign != since
    with_foreign = _events(bf, [A]).unionByName(_foreign_rows(bf, A))

    with pytest.raises(LiveChangedError) as caught:
        fmt.commit_partitions(live, _events(bf, [A], v2=True), [A], {}, since)
    err = caught.value
    assert list(err.hits) == [A] and err.hits[A].version == foreign
    if err.written is None:  # refused: the other writer's rows are there, nothing of ours
        assert fmt.current_version(live) == foreign
        _same(fmt.read_partitions(live, [A]), with_foreign)
    else:  # landed: the caller is told where, and the other writer's rows can be read back
        assert err.written.version == fmt.current_version(live) and err.written.parent == foreign
        _same(fmt.read_partitions(live, [A], err.written.parent), with_foreign)

    now = fmt.current_version(live)
    written = fmt.commit_partitions(live, _events(bf, [B], v2=True), [B], {}, since)
    assert written.version == fmt.current_version(live) and written.parent == now
    _same(fmt.read_partitions(live, [B]), _events(bf, [B], v2=True))


def test_writing_an_old_version_back_restores_exactly_its_rows(make: MakeBackfill) -> None:
    """Rollback is `overwrite_partitions(read_partitions(table, keys, v), keys)`: it must restore
    exactly the rows of `v`, including emptying a partition that did not exist at `v`."""
    bf = make()
    fmt, live, keys = bf.table_format, bf.live_table, _all_keys(bf)
    v0 = fmt.current_version(live)
    counts = fmt.partition_row_counts(live)
    changed = [A, B, OUTSIDE]
    fmt.overwrite_partitions(live, _events(bf, changed, v2=True), changed)
    assert OUTSIDE in fmt.list_partitions(live)

    restored = fmt.overwrite_partitions(live, fmt.read_partitions(live, changed, v0), changed)
    assert restored == fmt.current_version(live)
    _same(fmt.read(live), _events(bf, keys))
    _same(fmt.read(live), fmt.read(live, v0))
    assert fmt.list_partitions(live) == keys and fmt.partition_row_counts(live) == counts


def test_a_read_inside_pinned_works(make: MakeBackfill) -> None:
    """A promotion reads the validated shadow inside `pinned`: every format offers it, and a read
    inside returns the table's current rows."""
    bf = make()
    fmt, live = bf.table_format, bf.live_table
    with fmt.pinned(live):
        _same(fmt.read(live), _events(bf, _all_keys(bf)))
        assert fmt.current_version(live) == fmt.history(live)[-1].version
        # Pins nest (promotions of one Backfill object in two threads both pin the shadow):
        # leaving the inner one keeps the outer one.
        with fmt.pinned(live):
            _same(fmt.read(live), _events(bf, _all_keys(bf)))
        _same(fmt.read(live), _events(bf, _all_keys(bf)))
    _same(fmt.read(live), _events(bf, _all_keys(bf)))
    # Unpinned, the table is written as before.
    fmt.overwrite_partitions(live, _events(bf, [A], v2=True), [A])
    _same(fmt.read_partitions(live, [A]), _events(bf, [A], v2=True))


def _staged(backend: Backend, bf: Backfill, key: str) -> set[Path]:
    """Generation folders of live holding written data files for partition `key`, on the disk
    or on the bucket (read through its own S3 API)."""
    gen = backend.location(bf, bf.live_table) / "_shadow_backfill" / "gen"
    found = objects(gen, lambda name: name.endswith(".parquet")) if isinstance(backend, OnBucket) else gen.glob("*/*/*")
    return {p.parent.parent for p in found if p.parent.name == f"ds={key}" and p.suffix == ".parquet"}


def test_parquet_pin_holds_off_another_writers_commit(
    make: MakeBackfill, backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain Parquet moves folders on every commit, and a Spark job lists and reads them lazily:
    while one format object pins the table, a commit by another (another process's FolderLog,
    here another thread's) must wait, and the pinned read keeps seeing its version's rows."""
    if backend.format != "parquet":
        pytest.skip(f"{backend.name}: a commit never moves nor rewrites files, pinning holds nothing off")
    bf = make()
    fmt, live, keys = bf.table_format, bf.live_table, _all_keys(bf)
    other = type(fmt)(fmt.spark, fmt.scheme, fmt.base_dir)
    # the other writer's hold found the table pinned: a lease on the bucket, a flock on a disk
    blocked = threading.Event()
    monkeypatch.setitem(testpoints.HOOKS, testpoints.FOLDER_LOCK_WAITS, blocked.set)

    def other_locks() -> LeaseLocks:
        locks = LeaseLocks(bf.store)
        locks.waited = lambda _name: blocked.set()
        return locks

    other.use_locks(other_locks)  # another process of the same team's state store
    old = _staged(backend, bf, A)
    commits = backend.commits(bf, live)
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            other.overwrite_partitions(live, _events(bf, [A], v2=True), [A])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=writer, daemon=True)
    with fmt.pinned(live):
        pinned_rows = fmt.read(live)
        thread.start()
        assert blocked.wait(60), f"the other writer's commit never found the pin ({errors})"
        assert not done.is_set(), f"the other writer's commit waits for the pin ({errors})"
        assert _staged(backend, bf, A) - old, "the other writer staged its data before it waited to commit"
        assert backend.commits(bf, live) == commits, "no version journaled while pinned"
        _same(pinned_rows, _events(bf, keys))
    assert done.wait(60), "the commit went through once the pin was released"
    thread.join(timeout=10)
    assert not errors, errors
    assert backend.commits(bf, live) == commits + 1
    _same(fmt.read_partitions(live, [A]), _events(bf, [A], v2=True))
