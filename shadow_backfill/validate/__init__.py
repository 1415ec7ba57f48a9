"""The validation gate: every shadow partition against its suites and the same live partition.

The pieces: `validator.py` runs the gate; `suites.py` loads and checks GX suites;
`expectations.py` compiles them to aggregates (`reference.py`: GX itself for the rest);
`drift.py` runs the two Spark jobs (`profile_job.py`, `facts_job.py` with `key_facts.py` and
`facts_spec.py`, with `plan.py`; `capabilities.py`: what the engine can do); they fill the
measurements of `measurements.py`, which `verdict.py` (the judge, with `distributions.py`,
`changes.py` and `stats.py`) turns into checks and a verdict.

This module imports nothing: the judge and its measurements load without Spark (the unit tier),
so the Spark-facing validator is imported from `validate.validator`.
"""
