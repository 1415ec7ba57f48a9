"""A backfill config file the unit tests write and read without an engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def sql_config(folder: Path, name: str = "backfill", **overrides: Any) -> Path:
    """A layer over `local.db.<name>` with a SQL transform (found without importing anything);
    its state store and warehouse would both be made inside `folder`."""
    (folder / f"{name}.sql").write_text("SELECT * FROM src WHERE ds = :partition")
    data = {
        "live_table": f"local.db.{name}",
        "format": "iceberg",
        "partition": {"column": "ds", "granularity": "daily"},
        "transform": {"sql": f"{name}.sql"},
        "spark": {"warehouse": str(folder / "wh")},
        "state": {"url": f"sqlite:///{folder / 'state.db'}"},
        **overrides,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path
