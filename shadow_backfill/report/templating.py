"""The one Jinja environment every HTML page is rendered with (the validation report and the
pipeline's): templates ship in the package, so a report needs no network and no template path.

Autoescape is on, so every value a template prints is escaped unless it is already markup (a
macro's output, `tojson`); the templates hold markup only, the Python around them the numbers.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from shadow_backfill.vocabulary import NO_VERDICT_COLOUR, VERDICT_COLOURS


def _colour(verdict: Any) -> str:
    """A verdict's colour; a word without one (not validated, unknown) is the light grey."""
    return VERDICT_COLOURS.get(str(verdict), NO_VERDICT_COLOUR)


# trim_blocks and lstrip_blocks let a template put a block tag on its own line without that line
# reaching the page; a line that starts with `{{- "" }}` continues the one before it, for pages
# whose markup has no newline there. StrictUndefined turns a misspelt name into an error, not an
# empty string. Views passed in are dicts: Jinja's `.` finds a dict's methods before its keys, so
# a key must not be named like one (`items`, `keys`, `values`).
ENV = Environment(
    loader=PackageLoader("shadow_backfill.report", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=StrictUndefined,
)
ENV.filters["colour"] = _colour
# tojson keeps the keys in the order they were built (verdicts by severity), as json.dumps does.
ENV.policies["json.dumps_kwargs"] = {}


def render(template: str, /, **context: Any) -> str:
    """One template rendered with `context`."""
    return ENV.get_template(template).render(**context)
