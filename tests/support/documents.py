"""The published JSON Schemas (docs/*.schema.json) as a test's check of what a script reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

DOCS = Path(__file__).resolve().parents[2] / "docs"


def published(text: str, schema: str) -> Any:
    """`text` parsed, after validating it against the published `docs/<schema>`: the file a
    script's author reads, not the models it was generated from."""
    document = json.loads(text)
    validator = Draft202012Validator(json.loads((DOCS / schema).read_text()))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, f"not what docs/{schema} publishes: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:5]
    )
    return document
