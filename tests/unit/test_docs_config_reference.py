"""The config reference lists every key of the config by its YAML path, and nothing else.

The page (docs/config_reference.py) is generated at every docs build and never committed, so it
cannot fall behind a model by being old; what can go wrong is the generator: a key it skips (a
new shape of field it does not know), or a path it makes up (a section under the wrong parent).
This walks the pydantic models on its own, every key down to the leaves, and compares that with
the paths the page's sections and rows spell out. The page's headings are paths, never the
classes that hold them (`PartitionSpec`, `RowsRatio`): readers know the file, not the code.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from shadow_backfill.config import BackfillConfig
from shadow_backfill.pipeline.spec import PipelineSpec

ROOT = Path(__file__).parents[2]
HEADING = re.compile(r"^### (?:`(?P<path>[^`]+)`|Top level) \{#[a-z0-9-]+\}$")


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_reference", ROOT / "docs" / "config_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("config_reference", module)
    spec.loader.exec_module(module)
    return module


def _model_in(annotation: Any) -> tuple[type[BaseModel], str] | None:
    """The model a field holds and the path step to it: `""`, `.<*>` (a mapping's values) or `[]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is dict:
        found = _model_in(args[1])
        return (found[0], ".<*>") if found else None
    if origin is list:
        found = _model_in(args[0])
        return (found[0], "[]") if found else None
    return next((f for a in args if (f := _model_in(a)) is not None), None)


def leaf_paths(model: type[BaseModel], path: str = "") -> set[str]:
    """Every key a YAML file can set that holds a value, not more keys (mapping keys as `<*>`)."""
    out: set[str] = set()
    for name, info in model.model_fields.items():
        if info.exclude:
            continue
        here = f"{path}.{name}" if path else name
        found = _model_in(info.annotation)
        out |= leaf_paths(found[0], here + found[1]) if found else {here}
    return out


def page_paths(markdown: str) -> set[str]:
    """The full paths the page spells: each row's keys under its section's path, mapping keys
    written as `<*>`; a row that only leads to a section of its own is not a leaf."""
    paths: set[str] = set()
    section = None
    for line in markdown.splitlines():
        if line.startswith("### "):
            found = HEADING.match(line)
            assert found is not None, f"a section not named by its YAML path: {line!r}"
            section = found["path"] or ""
        elif section is not None and line.startswith("| `"):
            for key in re.findall(r"`([^`]+)`", line.split(" | ")[0]):
                paths.add(f"{section}.{key}" if section else key)
    paths = {re.sub(r"<[^>]+>", "<*>", p) for p in paths}
    return {p for p in paths if not any(q.startswith((f"{p}.", f"{p}[")) for q in paths)}


def halves(page: str) -> tuple[str, str]:
    config, pipeline = page.split("\n## The pipeline file", 1)
    return config, pipeline


def test_every_config_key_is_on_the_page_by_its_yaml_path_and_no_other() -> None:
    config, pipeline = halves(generator().config_page())
    for part, root in ((config, BackfillConfig), (pipeline, PipelineSpec)):
        expected, shown = leaf_paths(root), page_paths(part)
        assert expected - shown == set(), f"keys missing from the config reference: {sorted(expected - shown)}"
        assert shown - expected == set(), f"paths on the page that the models do not have: {sorted(shown - expected)}"
    for path in ("validation.columns.<*>.psi.warn", "validation.tolerance.abs", "partition.column"):
        assert path in leaf_paths(BackfillConfig)
    assert "consistency[].rows_ratio.min" in leaf_paths(PipelineSpec)


def test_a_key_left_out_of_the_page_is_caught() -> None:
    config, _ = halves(generator().config_page())
    without = "\n".join(line for line in config.splitlines() if not line.startswith("| `max_chunk_size` |"))
    assert leaf_paths(BackfillConfig) - page_paths(without) == {"run.max_chunk_size"}


def test_sections_are_named_by_yaml_path_not_by_class() -> None:
    page = generator().config_page()
    headings = [line for line in page.splitlines() if line.startswith("### ")]
    classes = {"PartitionSpec", "ValidationSpec", "ColumnThresholds", "RowsRatio", "Consistency", "TableEntry"}
    assert not [h for h in headings if any(c in h for c in classes)], headings
    paths = ("`partition`", "`validation.columns.<column>`", "`validation.downstream_queries[]`", "`consistency[]`")
    for path in paths:
        assert any(path in h for h in headings), f"no section {path} in {headings}"
