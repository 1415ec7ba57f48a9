"""Check OpenLineage RunEvents against the spec's own JSON Schemas, vendored in
`tests/fixtures/openlineage/`.

Why: the client's Python classes accept what the spec rejects (a facet missing a required field
serialises fine), and the core schema types every facet as an open `BaseFacet`, so a facet's own
fields are checked only here, against the schema file its `_schemaURL` names. Every vendored file
is registered under its `$id` in a `referencing` registry with no retrieval: the facet schemas'
`$ref`s to `https://openlineage.io/spec/2-0-2/OpenLineage.json` resolve to the local copy, and an
unknown reference fails instead of reaching the network.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource

SPEC_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "openlineage"
CORE = SPEC_DIR / "OpenLineage.json"

# jsonschema checks "date-time" only with an optional package absent here; eventTime and
# nominal times are what a consumer sorts by, so they are checked by this RFC 3339 pattern.
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", re.IGNORECASE)
_FORMATS = FormatChecker()  # an instance of its own: the class-wide checker stays unchanged


def _is_datetime(value: object) -> bool:
    return not isinstance(value, str) or _RFC3339.fullmatch(value) is not None


_FORMATS.checks("date-time")(_is_datetime)


# A facet's `_schemaURL`: `.../facets/<Name>.json#/$defs/<Def>`, any spec version.
_FACET_URL = re.compile(r"/(?P<file>[A-Za-z0-9_]+\.json)#/\$defs/(?P<defn>[A-Za-z0-9_]+)$")

# Where facets sit in a RunEvent: (event field, an object or a list of datasets; its facets key).
_FACET_PLACES = (
    ("run", "facets"),
    ("job", "facets"),
    ("inputs", "facets"),
    ("inputs", "inputFacets"),
    ("outputs", "facets"),
    ("outputs", "outputFacets"),
)


def _load(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


@functools.lru_cache(maxsize=1)
def _vendored() -> tuple[Registry[Any], dict[str, str], str]:
    """The registry of every vendored file under its `$id`, the facet files by file name -> `$id`,
    and the core `$id`. Each file is checked as a 2020-12 schema once, so a bad refresh fails
    here rather than as a puzzling event failure."""
    resources: list[tuple[str, Resource[Any]]] = []
    facets: dict[str, str] = {}
    for path in [CORE, *sorted((SPEC_DIR / "facets").glob("*.json"))]:
        doc = _load(path)
        Draft202012Validator.check_schema(doc)
        resources.append((doc["$id"], Resource.from_contents(doc)))
        if path != CORE:
            facets[path.name] = doc["$id"]
    core_id = resources[0][0]
    return Registry().with_resources(resources), facets, core_id


def _problems(schema_ref: str, instance: object, registry: Registry[Any], where: str) -> list[str]:
    """Every violation of the schema at `schema_ref`, one line each, with the JSON path in the
    event. For `anyOf`/`oneOf` failures the nearest inner error is shown: the spec wraps every
    facets map in an `anyOf`, whose own message says nothing about the field at fault."""
    validator = Draft202012Validator({"$ref": schema_ref}, registry=registry, format_checker=_FORMATS)
    lines = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        inner: ValidationError = best_match(error.context) if error.context else error
        path = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in inner.absolute_path)
        lines.append(f"  {path}: {inner.message} (schema {schema_ref})")
    return lines


def _facets(event: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(where in the event, facet key, facet) for every facet the RunEvent carries."""
    for part, key in _FACET_PLACES:
        holder = event.get(part)
        holders = list(enumerate(holder)) if isinstance(holder, list) else [(None, holder)]
        for i, item in holders:
            facets = item.get(key) if isinstance(item, Mapping) else None
            if not isinstance(facets, Mapping):
                continue
            where = f"event.{part}" if i is None else f"event.{part}[{i}]"
            for name, facet in facets.items():
                yield f"{where}.{key}.{name}", name, facet


def _custom(paths: Mapping[str, Path], registry: Registry[Any]) -> tuple[Registry[Any], dict[str, str]]:
    """Add our own facet schemas to the registry (under their `$id`, else their file URI), so they
    may `$ref` the core schema, and map facet key -> that id."""
    ids: dict[str, str] = {}
    for name, path in paths.items():
        doc = _load(path)
        Draft202012Validator.check_schema(doc)
        ids[name] = doc.get("$id") or path.resolve().as_uri()
        registry = registry.with_resource(ids[name], Resource.from_contents(doc))
    return registry, ids


def validate_event(event: dict[str, Any], custom: dict[str, Path] | None = None) -> None:
    """Raise `AssertionError` listing every way `event`, a RunEvent as the HTTP transport posts it,
    breaks the vendored OpenLineage spec.

    The event is checked against `#/$defs/RunEvent` rather than the core file's root: the root is
    a `oneOf` of RunEvent, DatasetEvent and JobEvent, which would accept a JobEvent (one without
    `run`) and reports any fault as "not valid under any of the given schemas", naming no field.

    Each facet is then checked against the vendored file named by its `_schemaURL`, at the `$defs`
    entry the URL names, whatever spec version the URL carries (the file kept is the one
    vendored). `custom` maps a facet key (e.g. `shadowBackfill`) to a JSON Schema file of ours;
    such a facet is checked against that file's `$defs` entry named by its `_schemaURL` if the
    file has one, else against the file's root. Any other facet the spec does not know is skipped.
    """
    registry, vendored, core_id = _vendored()
    ids: dict[str, str] = {}
    if custom:
        registry, ids = _custom(custom, registry)
    problems = _problems(f"{core_id}#/$defs/RunEvent", event, registry, "event")
    for where, name, facet in _facets(event):
        url = facet.get("_schemaURL") if isinstance(facet, Mapping) else None
        found = _FACET_URL.search(url) if isinstance(url, str) else None
        if name in ids:
            defs = registry.contents(ids[name]).get("$defs", {})
            ref = f"{ids[name]}#/$defs/{found['defn']}" if found and found["defn"] in defs else ids[name]
        elif found and found["file"] in vendored:
            ref = f"{vendored[found['file']]}#/$defs/{found['defn']}"
            if found["defn"] not in registry.contents(vendored[found["file"]]).get("$defs", {}):
                problems.append(f"  {where}: _schemaURL {url} names a $defs entry {found['file']} lacks")
                continue
        else:
            continue
        problems += _problems(ref, facet, registry, where)
    if problems:
        raise AssertionError(f"OpenLineage RunEvent breaks the spec ({len(problems)}):\n" + "\n".join(problems))
