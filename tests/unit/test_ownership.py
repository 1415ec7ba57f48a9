"""One owner per live table (`ownership`): a pipeline command holds its tables alone, single-table
commands share theirs, and neither gets in beside the other; on a real SQLite and PostgreSQL
store, each race forced at the named point between writing one's row and looking at the
other kind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from shadow_backfill.errors import RefusedError
from shadow_backfill.ownership import TableHold, commands_on, holding_table, holding_tables, pipeline_resource
from shadow_backfill.state import StateStore

HOST = socket.gethostname()
IN_PIPELINE = rf"^table db\.staging is in pipeline command pipeline-[\w-]+ \(pid {os.getpid()} on {HOST}\); "
IN_COMMAND = rf"^table db\.staging is in command promote-[\w-]+ \(pid {os.getpid()} on {HOST}\); "
AFTER = "nothing was done, try again when it has finished$"


@pytest.fixture
def store(state_url: str) -> StateStore:
    return StateStore(state_url)


def _nothing_held(store: StateStore) -> None:
    assert store.holders("pipeline:") == {} and store.holders("command:") == {}, "every lease was released"


def test_a_pipeline_holding_the_table_refuses_a_single_table_command_naming_it(store: StateStore) -> None:
    with holding_tables(store, ["db.raw", "db.staging"]):
        with pytest.raises(RefusedError, match=IN_PIPELINE + AFTER), holding_table(store, "db.staging", "promote"):
            pytest.fail("the single-table command got in beside the pipeline")
        assert commands_on(store, "db.staging") == {}, "the refused command let its row go"
        with holding_table(store, "db.features", "promote"):  # a table the pipeline does not hold
            pass
    with holding_table(store, "db.staging", "promote"):
        pass
    _nothing_held(store)


def test_a_single_table_command_holding_the_table_refuses_a_pipeline_naming_it(store: StateStore) -> None:
    with holding_table(store, "db.staging", "promote"):
        with pytest.raises(RefusedError, match=IN_COMMAND + AFTER), holding_tables(store, ["db.raw", "db.staging"]):
            pytest.fail("the pipeline got in beside the single-table command")
        assert store.holders("pipeline:") == {}, "the refused pipeline let every table go, raw too"
    with holding_tables(store, ["db.raw", "db.staging"]):
        pass
    _nothing_held(store)


def test_single_table_commands_share_their_table(store: StateStore) -> None:
    with holding_table(store, "db.staging", "run"), holding_table(store, "db.staging", "promote"):
        assert len(commands_on(store, "db.staging")) == 2
    _nothing_held(store)


def test_of_a_race_at_its_named_point_exactly_one_side_gets_in(store: StateStore) -> None:
    """Each side has written its row when the other comes in; whichever looks second finds the
    first's row and is refused, and the first, looking after that, goes on."""

    def pipeline_comes_in() -> None:
        with pytest.raises(RefusedError, match=IN_COMMAND), holding_tables(store, ["db.staging"]):
            pytest.fail("both sides got in")

    with holding_table(store, "db.staging", "promote", between=pipeline_comes_in):
        assert store.holders(pipeline_resource("db.staging"), exact=True) == {}

    def command_comes_in() -> None:
        with pytest.raises(RefusedError, match=IN_PIPELINE), holding_table(store, "db.staging", "promote"):
            pytest.fail("both sides got in")

    with holding_tables(store, ["db.staging"], between=command_comes_in):
        assert commands_on(store, "db.staging") == {}
    _nothing_held(store)


def test_each_side_looks_only_after_its_row_is_written(store: StateStore) -> None:
    """The other side's row, written at the named point (its command has written it and not
    looked yet), is seen: a look made before one's own write would miss it, and both would go on."""

    def pipeline_writes() -> None:
        store.acquire([pipeline_resource("db.staging")], "elsewhere:1:pipeline-y", 3600)

    def command_writes() -> None:
        store.acquire(["command:db.staging#promote-y"], "elsewhere:1:promote-y", 3600)

    try:
        with (
            pytest.raises(RefusedError, match="pipeline-y"),
            holding_table(store, "db.staging", "promote", between=pipeline_writes),
        ):
            pytest.fail("the command went on beside a pipeline that had written its row")
        store.release("elsewhere:1:pipeline-y")
        with (
            pytest.raises(RefusedError, match="promote-y"),
            holding_tables(store, ["db.staging"], between=command_writes),
        ):
            pytest.fail("the pipeline went on beside a command that had written its row")
    finally:  # the PostgreSQL store is the session's
        store.release("elsewhere:1:pipeline-y")
        store.release("elsewhere:1:promote-y")
    _nothing_held(store)


def test_a_dead_holder_on_this_host_is_let_go_at_once(store: StateStore) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = dead.stdout.strip()
    store.acquire([pipeline_resource("db.staging")], f"{HOST}:{pid}:pipeline-killed", 3600)
    with holding_table(store, "db.staging", "promote"):
        pass
    store.acquire(["command:db.staging#promote-killed"], f"{HOST}:{pid}:promote-killed", 3600)
    with holding_tables(store, ["db.staging"]):
        pass
    # a holder on another host is not known to be dead: it is waited out (its TTL)
    store.acquire([pipeline_resource("db.staging")], "elsewhere:1:pipeline-x", 3600)
    busy = r"pipeline command pipeline-x \(pid 1 on elsewhere\)"
    with pytest.raises(RefusedError, match=busy), holding_table(store, "db.staging", "promote"):
        pass
    store.release("elsewhere:1:pipeline-x")  # the PostgreSQL store is the session's
    _nothing_held(store)


def test_a_pipelines_layers_pass_through_and_commands_that_nest_hold_once(store: StateStore) -> None:
    hold = TableHold()
    with holding_tables(store, ["db.staging"]) as owner:
        hold.owner = owner
        with hold.held(lambda: store, "db.staging", "promote"):
            assert commands_on(store, "db.staging") == {}, "the pipeline's own layer took no row"
    hold.owner = None
    with hold.held(lambda: store, "db.staging", "backfill"), hold.held(lambda: store, "db.staging", "run"):
        assert len(commands_on(store, "db.staging")) == 1, "a command inside another holds the table once"
        with pytest.raises(RefusedError, match=r"is in command backfill-"), holding_tables(store, ["db.staging"]):
            pass
    _nothing_held(store)


def test_a_table_named_like_anothers_prefix_is_another_table(store: StateStore) -> None:
    with holding_table(store, "db.a#b", "promote"):
        assert commands_on(store, "db.a") == {}
        with holding_tables(store, ["db.a"]):
            pass
