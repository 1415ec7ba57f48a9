"""The tool's warnings reach a CLI user as one `warning:` line on stderr (stdout may be a JSON
document a script parses), with secrets masked; other libraries' warnings keep Python's form."""

from __future__ import annotations

import warnings

import pytest

from shadow_backfill.cli.output import show_warnings
from shadow_backfill.errors import LocalLocksWarning, keep_secret


def test_the_tools_warning_is_one_line_on_stderr_and_others_keep_pythons_form(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keep_secret("hunter2")
    others: list[str] = []
    with warnings.catch_warnings():  # restores Python's showwarning afterwards
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *args, **kwargs: others.append(str(message))
        show_warnings()
        show_warnings()  # idempotent: a second command in one process does not wrap it again
        warnings.warn(LocalLocksWarning("the locks of db.events are leases in sqlite:///x?pw=hunter2"), stacklevel=1)
        warnings.warn(UserWarning("from another library"), stacklevel=1)
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == "warning: the locks of db.events are leases in sqlite:///x?pw=***"
    assert err.count("warning:") == 1
    assert others == ["from another library"], "another library's warning goes where it went before"
