"""Measuring shadow against live: two measurers, one output (`validate.measurements`).

- `fast.FastMeasurer`, what a validation runs: two Spark jobs over the union of both tables
  however many partitions (`profile_job`, `facts_job`), tuned to read each row once or twice.
- `reference.ReferenceMeasurer`, the oracle: a null-safe full outer join and plain groupings,
  slow and obvious. `tests/formats/test_measure_reference.py` holds the fast one to it on every
  backend.
"""
