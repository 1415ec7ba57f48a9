"""Backfills of several tables as one pipeline: a file of layers and their dependencies
(`spec`), the order they run in (`graph`), the verdicts across layers (`gate`), the commands
(`runner.Pipeline`) and the pipeline's report (`report`).

`spec`, `graph` and `gate` import no PySpark; import `Pipeline` from `shadow_backfill`."""
