"""The CLI's one output interface (`cli.views`): text and JSON implement every method of `View`,
so a command shown in one form is shown in the other."""

from __future__ import annotations

import inspect

from shadow_backfill.cli.views import JsonView, TextView, View, view


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_text_and_json_show_exactly_what_the_interface_names() -> None:
    wanted = _methods(View)
    assert wanted, "the interface names no method"
    assert _methods(TextView) == wanted
    assert _methods(JsonView) == wanted


def test_json_is_chosen_by_the_option() -> None:
    assert isinstance(view(True), JsonView) and isinstance(view(False), TextView)
