"""The three-layer pipeline the pipeline tests share (raw -> staging -> features, staging's
logic changed), built from ordinary configs with one state store for all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from shadow_backfill import Backfill, Pipeline
from support.settings import QUIET, MakeBackfill

TRANSFORMS = {
    "raw": {"function": "sb_test_transforms:events"},
    "staging": {"function": "sb_test_transforms:staging_v2"},
    "features": {"function": "sb_test_transforms:features_v2"},
}


def make_pipeline(
    make: MakeBackfill,
    tmp_path: Path,
    spark: Any,
    transforms: dict[str, Any] = TRANSFORMS,
    **extra: Any,
) -> tuple[Pipeline, dict[str, Backfill]]:
    """Three layers, each an ordinary config with its live table seeded by the v1 logic, one
    state store for all."""
    state = {"url": f"sqlite:///{tmp_path / 'pipeline-state.db'}"}
    layers = {key: make(transform=spec, validation=QUIET, state=state) for key, spec in transforms.items()}
    spec = {
        "tables": {
            "raw": {"config": str(layers["raw"].config_path)},  # type: ignore[attr-defined]
            "staging": {"config": str(layers["staging"].config_path), "depends_on": ["raw"]},  # type: ignore[attr-defined]
            "features": {"config": str(layers["features"].config_path), "depends_on": ["staging"]},  # type: ignore[attr-defined]
        },
        "consistency": [{"upstream": "raw", "downstream": "staging", "rows_ratio": {"min": 0.98, "max": 1.0}}],
        **extra,
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(spec))
    return Pipeline.from_file(path, spark=spark), layers
