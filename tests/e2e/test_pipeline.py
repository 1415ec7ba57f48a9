"""A pipeline of three layers (raw -> staging -> features) whose staging logic changes, on
every backend: features are computed from staging's shadow of the run, a day broken in staging
is promoted in no layer, a day broken only in features keeps staging (and raw) unpromoted for
that day too, and a rollback of the set restores all three."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import sb_test_transforms as t
import yaml
from chispa import assert_df_equality
from pyspark.sql import functions as F
from support import END, QUIET, START, MakeBackfill

from shadow_backfill import Backfill, Pipeline, RefusedError

STAGING_BROKEN = t.STAGING_BROKEN.isoformat()
FEATURES_BROKEN = t.FEATURES_BROKEN.isoformat()


def _same(a: Any, b: Any) -> None:
    assert_df_equality(a, b, ignore_row_order=True, ignore_nullable=True, ignore_column_order=True)


def _pipeline(make: MakeBackfill, tmp_path: Path, spark: Any) -> tuple[Pipeline, dict[str, Backfill]]:
    """Three layers, each an ordinary config with its live table seeded by the v1 logic, one
    state store for all."""
    state = {"url": f"sqlite:///{tmp_path / 'pipeline-state.db'}"}
    transforms = {
        "raw": "sb_test_transforms:events",
        "staging": "sb_test_transforms:staging_v2",
        "features": "sb_test_transforms:features_v2",
    }
    layers = {key: make(transform={"function": fn}, validation=QUIET, state=state) for key, fn in transforms.items()}
    spec = {
        "tables": {
            "raw": {"config": str(layers["raw"].config_path)},  # type: ignore[attr-defined]
            "staging": {"config": str(layers["staging"].config_path), "depends_on": ["raw"]},  # type: ignore[attr-defined]
            "features": {"config": str(layers["features"].config_path), "depends_on": ["staging"]},  # type: ignore[attr-defined]
        },
        "consistency": [{"upstream": "raw", "downstream": "staging", "rows_ratio": {"min": 0.98, "max": 1.0}}],
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return Pipeline.from_file(path, spark=spark), layers


@pytest.mark.store
def test_three_layers_promoted_and_rolled_back_as_a_set(make: MakeBackfill, tmp_path: Path) -> None:
    probe = make(seed_live=False)
    pipeline, _ = _pipeline(make, tmp_path, probe.spark)
    layers = pipeline.layers
    before = {key: layers[key].read_live() for key in pipeline.order}
    before_rows = {key: sorted(df.collect()) for key, df in before.items()}

    result = pipeline.backfill(START, END, report_dir=tmp_path / "report")

    days = probe.scheme.expand(START, END)
    good = [d for d in days if d not in (STAGING_BROKEN, FEATURES_BROKEN)]
    verdicts = {v.partition: v for v in result.validation.verdicts}
    assert verdicts[STAGING_BROKEN].failed_in == ["staging", "features", "rows_ratio raw -> staging"]
    assert verdicts[STAGING_BROKEN].layers["features"] == "blocked", "features waited for staging to pass"
    assert verdicts[FEATURES_BROKEN].failed_in == ["features"]
    assert result.run.blocked["features"] == {STAGING_BROKEN: "upstream staging did not pass (fail)"}

    # features were computed from staging's shadow of this run, not from staging's live table
    staged = layers["staging"].read_shadow(good).withColumn("amount", F.col("amount") + 1)
    _same(layers["features"].read_shadow(good), staged)

    promotion = result.promotion
    assert promotion is not None and promotion.record is not None
    assert promotion.partitions == good
    assert [layer for layer, _ in promotion.record.members] == ["raw", "staging", "features"]
    for key in pipeline.order:
        _same(layers[key].read_live(good), layers[key].read_shadow(good))
        for day in (STAGING_BROKEN, FEATURES_BROKEN):  # promoted in no layer
            assert sorted(layers[key].read_live([day]).collect()) == sorted(
                before[key].where(F.col("ds") == dt.date.fromisoformat(day)).collect()
            )
    assert (tmp_path / "report" / "pipeline.html").is_file() and (
        tmp_path / "report" / "features" / "report.html"
    ).is_file()

    undo = pipeline.rollback(promotion.record.id)
    assert [layer for layer, _ in undo.members] == ["features", "staging", "raw"]
    for key in pipeline.order:
        assert sorted(layers[key].read_live().collect()) == before_rows[key], f"{key} restored"
    assert [r.kind for r in pipeline.history()] == ["promote", "rollback"]


def test_a_refused_layer_rolls_back_the_layers_before_it(make: MakeBackfill, tmp_path: Path) -> None:
    probe = make(seed_live=False)
    pipeline, _ = _pipeline(make, tmp_path, probe.spark)
    layers = pipeline.layers
    pipeline.run(START, END)
    pipeline.validate()
    raw_before = sorted(layers["raw"].read_live().collect())
    staging_before = sorted(layers["staging"].read_live().collect())
    # another writer changes features' live partition after validation: its promotion is refused
    features = layers["features"]
    changed = features.read_live(["2024-01-02"]).withColumn("amount", F.col("amount") + 1)
    features.table_format.overwrite_partitions(features.live_table, changed, ["2024-01-02"])

    with pytest.raises(RefusedError, match=r"stopped at table 'features'.*rolled back \(staging, raw\)"):
        pipeline.promote()
    assert sorted(layers["raw"].read_live().collect()) == raw_before
    assert sorted(layers["staging"].read_live().collect()) == staging_before
    assert pipeline.history() == []
