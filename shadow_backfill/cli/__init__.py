"""The `shadow-backfill` command line: commands in `app.py`, how they speak in `output.py` and
`render.py`."""

from shadow_backfill.cli.app import app, main

__all__ = ["app", "main"]
