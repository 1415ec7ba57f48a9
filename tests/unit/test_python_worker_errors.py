"""The one line kept of an error raised in a UDF: PySpark's messages quote the Python worker's
traceback (alone, or inside pages of Java stack on a write), and the cause is its last line.
The messages in `fixtures/python_worker_errors` were captured once from real runs of a UDF
raising `ValueError("bad value 7")`: Spark 3.5 classic (a collect: PythonException; a write:
Py4JJavaError), Spark 4.1 classic and Spark Connect (a write)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadow_backfill.errors import first_line, python_worker_error

CAPTURED = sorted((Path(__file__).parents[1] / "fixtures" / "python_worker_errors").glob("*.txt"))


def test_the_captured_messages_are_there() -> None:
    assert {p.stem for p in CAPTURED} == {
        "spark-3.5-collect",
        "spark-3.5-write",
        "spark-4.1-write",
        "spark-4.1-connect-write",
    }


@pytest.mark.parametrize("path", CAPTURED, ids=lambda p: p.stem)
def test_a_captured_message_gives_the_python_exception(path: Path) -> None:
    text = path.read_text()
    assert python_worker_error(text) == "ValueError: bad value 7"
    assert first_line(RuntimeError(text)) == "ValueError: bad value 7"


def test_the_last_of_chained_tracebacks_is_the_one_that_escaped() -> None:
    text = (
        "An exception was thrown from the Python worker.\n"
        "Traceback (most recent call last):\n"
        '  File "t.py", line 3, in f\n'
        "    d[k]\n"
        "KeyError: 'k'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "t.py", line 5, in f\n'
        "    raise mod.LookupFailed(k)\n"
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "mod.LookupFailed: no k\n"
        "second line of the message\n"
    )
    assert python_worker_error(text) == "mod.LookupFailed: no k"


def test_an_exception_without_a_message_is_named() -> None:
    text = 'Traceback (most recent call last):\n  File "t.py", line 1, in f\nZeroDivisionError\n'
    assert python_worker_error(text) == "ZeroDivisionError"


@pytest.mark.parametrize(
    "text",
    [
        "[TABLE_OR_VIEW_NOT_FOUND] The table or view `x` cannot be found.",
        'Traceback (most recent call last):\n  File "t.py", line 1, in f\n',  # cut off
        'Traceback (most recent call last):\n  File "t.py", line 1\n\tat org.apache.spark.X(X.java:1)\n',
    ],
)
def test_no_traceback_no_line(text: str) -> None:
    """Other errors keep their own first line: nothing is made up from a partial traceback."""
    assert python_worker_error(text) is None
    assert first_line(RuntimeError(text)) == text.splitlines()[0]
