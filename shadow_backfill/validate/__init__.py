"""The validation gate: every shadow partition against its suites and the same live partition.

The flow, one module or package each:
- `validator.py` drives a validation: reads both tables as of their current versions, has them
  measured and judged, stores the verdicts. Nothing else.
- `measure/` measures (Spark): `fast.py` runs the two jobs of a validation (`profile_job.py`,
  `facts_job.py` with `key_facts.py`, `sample_cut.py` and `facts_spec.py`; `plan.py`: which
  columns get which measurements; `capabilities.py`: what the engine can do); `reference.py`
  measures the same by a plain join, the oracle the fast jobs are tested against.
- `measurements.py`: the typed measurements the measurers hand the judge.
- `judge.py` judges (no Spark): thresholds, sample-size bands, the change contract, the
  missing-live policy and expectation outcomes into checks and a verdict, with
  `distributions.py`, `changes.py` and `stats.py`.
- `suites.py` loads GX suites (`suite_cache.py`: one GX accepted before skips GX's import);
  `expectations.py` compiles them to aggregates that ride in the measuring jobs;
  `gx_reference.py` runs GX itself for the rest (and as the fast path's oracle).

This module imports nothing: the judge and its measurements load without Spark (the unit tier),
so the Spark-facing validator is imported from `validate.validator`.
"""
