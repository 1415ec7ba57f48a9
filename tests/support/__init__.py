"""What the tests share beyond fixtures: the backends (`backends`), the data range and the config
factory (`settings`), and helpers for other processes (`processes`). Tests import from here;
fixtures live in `tests/conftest.py`."""

from support.backends import Backend
from support.documents import published
from support.processes import chromium_dump_dom, killable_cli_env, metastore_conf, state_count
from support.settings import (
    DRIFT,
    END,
    QUIET,
    START,
    TEST_CONF,
    TESTS,
    MakeBackfill,
    base_config,
    factory,
    seed,
    validated,
)

__all__ = [
    "DRIFT",
    "END",
    "QUIET",
    "START",
    "TESTS",
    "TEST_CONF",
    "Backend",
    "MakeBackfill",
    "base_config",
    "chromium_dump_dom",
    "factory",
    "killable_cli_env",
    "metastore_conf",
    "published",
    "seed",
    "state_count",
    "validated",
]
