"""GX's own evaluation, one partition at a time: the reference the fast path is tested against,
and the fallback for expectations that do not map to an aggregate.

It runs GX's Spark execution engine on a filtered DataFrame, so the data stays in Spark; it is
slow (a GX validation per partition), which is exactly why the fast path exists.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pyspark.sql import DataFrame

from shadow_backfill.validate.measurements import Outcome
from shadow_backfill.validate.suites import ID_META, Expectation, Suite

os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")


@lru_cache(maxsize=1)
def _batch_definition() -> Any:
    import great_expectations as gx

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:
        pass
    source = context.data_sources.add_spark("shadow_backfill")
    return source.add_dataframe_asset("partition").add_batch_definition_whole_dataframe("whole")


def evaluate_with_gx(df: DataFrame, expectations: Sequence[Expectation]) -> list[Outcome]:
    """Evaluate `expectations` on one DataFrame (one partition) with GX itself."""
    if not expectations:
        return []
    suite = Suite("reference", path=None, expectations=list(expectations))  # type: ignore[arg-type]
    batch = _batch_definition().get_batch(batch_parameters={"dataframe": df})
    result = batch.validate(suite.to_gx())
    by_id = {r.expectation_config.meta[ID_META]: r for r in result.results}
    out = []
    for e in expectations:  # GX returns results in its own order: map them back by id
        r = by_id[e.id]
        observed = r.result.get("observed_value", r.result.get("unexpected_count"))
        out.append(Outcome(e.id, bool(r.success), observed, f"GX: {dict(r.result)}"[:300], e.severity))
    return out
