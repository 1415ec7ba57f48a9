"""How the CLI speaks: two consoles with markup off, one error line per failure, log files.

Every command turns a :class:`ShadowBackfillError` into one red line naming the culprit and
its exit code (the table below). Anything else (an engine error we did not foresee) is one
line too, with the full traceback written to a log file whose path the line gives; Ctrl-C is
"interrupted" and exit 130. Both consoles have markup off: partition
values, table names, messages and data are user text and must print as typed, so styling is
only ever applied through `Text` objects.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.text import Text
from typer.core import TyperGroup

from shadow_backfill.cli import telling
from shadow_backfill.cli.consoles import console
from shadow_backfill.errors import ShadowBackfillError, ShadowBackfillWarning, UsageError, redact
from shadow_backfill.jvm_output import log_dir
from shadow_backfill.outcome import (
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    Ending,
)

F = TypeVar("F", bound=Callable[..., Any])

# Click's base exception, wherever Typer takes Click from (its own copy since 0.2x, the click
# package before): every usage error Typer raises while parsing derives from it.
ClickException: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def write_log(text: str) -> Path | None:
    """Write `text` to a new log file; None if even that fails (the one line is printed anyway).
    The folder is created 0700 and the file 0600 (mkstemp): a traceback can quote data values;
    every secret the config holds is masked."""
    try:
        folder = log_dir()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, name = tempfile.mkstemp(prefix=time.strftime("error-%Y%m%dT%H%M%S-"), suffix=".log", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(redact(f"shadow-backfill {' '.join(sys.argv[1:])}\n{text}"))
        return Path(name)
    except OSError:
        return None


def fail(message: str, code: int = EXIT_FAILED, details: str | None = None) -> NoReturn:
    """Print the one error line and exit. A multi-line message keeps its first line; the rest,
    with `details`, goes to a log file named on that line. No secret of the config is printed,
    whatever the message quotes (a driver's error may quote its connection string)."""
    message = redact(message)
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()] or ["unknown error"]
    line = lines[0]
    if len(line) > 500:
        line = line[:500] + " …"
    if details is not None or len(lines) > 1:
        log = write_log((details or "") + "\n" + message + "\n")
        line += f" (full details: {log})" if log else " (no log could be written)"
    error_line(line)
    raise typer.Exit(code)


def error_line(line: str) -> None:
    telling.error(line)
    console.print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True)


class OneLineErrors(TyperGroup):
    """The command group whose Click errors (an unknown option, a missing argument or option, a
    value out of range or of the wrong type) print as the tool's one `error:` line naming the
    culprit, exit 2, where Typer prints a usage line, a hint and a box: a scheduler's log keeps
    the last line, and a script tells every refusal by its `error:` prefix. These errors come
    from parsing the command line, before the command runs: nothing has been read or written."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:  # a caller that handles Click's exceptions itself
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except ClickException as exc:
            if type(exc).__name__ != "NoArgsIsHelpError":  # else Typer printed the help as it raised it
                error_line(redact(click_error(exc)))
            sys.exit(getattr(exc, "exit_code", EXIT_USAGE))
        except typer.Abort:
            error_line("aborted")
            sys.exit(EXIT_FAILED)
        sys.exit(code if isinstance(code, int) else EXIT_OK)  # Typer returns an Exit's code here


def click_error(exc: Exception) -> str:
    """Click's message on one line, in the tool's voice (lower case, no full stop), with the
    command whose help lists the options."""
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    text = " ".join(line.strip() for line in message.splitlines() if line.strip()).rstrip(".")
    text = text[:1].lower() + text[1:]
    ctx = getattr(exc, "ctx", None)
    return f"{text} (see {ctx.command_path} --help)" if ctx is not None else text


def show_warnings() -> None:
    """The tool's own warnings (`ShadowBackfillWarning`) as one `warning:` line each on stderr,
    where Python would print two lines naming a source file; other warnings print as Python
    prints them. Python's filters still apply: each message shows once."""
    previous = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, ShadowBackfillWarning):
            console.print(Text.assemble(("warning:", "bold yellow"), " ", redact(str(message))), soft_wrap=True)
        else:
            previous(message, category, *args, **kwargs)

    if getattr(previous, "__qualname__", "") != show.__qualname__:  # once, however many commands run
        warnings.showwarning = show


def hold(message: str) -> NoReturn:
    """Exit 3 with one line saying what waits for approval: nothing failed, but the job did not
    do everything asked, and a scheduler that saw 0 would report a backfill that changed nothing."""
    console.print(Text.assemble(("held:", "bold yellow"), " ", redact(message)), soft_wrap=True)
    raise typer.Exit(EXIT_HELD)


def stopped(message: str) -> NoReturn:
    """Exit 4 with one line saying why the run stopped starting chunks and what remains: the
    run did its share (a time box, a scheduler's SIGTERM) and a rerun resumes it."""
    console.print(Text.assemble(("stopped:", "bold yellow"), " ", redact(message)), soft_wrap=True)
    raise typer.Exit(EXIT_STOPPED)


def end(outcome: Ending) -> None:
    """End the command as its outcome says (`shadow_backfill.outcome`): its line and exit code,
    or nothing at all when everything asked was done."""
    if outcome.code == EXIT_FAILED:
        fail(outcome.line)
    if outcome.code == EXIT_HELD:
        hold(outcome.line)
    if outcome.code == EXIT_STOPPED:
        stopped(outcome.line)


def handle_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ShadowBackfillError as exc:
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted (partitions not written yet are redone by the next run)", EXIT_INTERRUPTED)
        except (typer.Exit, typer.Abort, typer.TyperException):  # Typer's own exits and usage errors
            raise
        except Exception as exc:
            fail(f"{type(exc).__name__}: {engine_message(exc)}", 1, details="".join(traceback.format_exception(exc)))

    return wrapper  # type: ignore[return-value]


# The commands whose ending is told to webhooks and OpenLineage (`cli.telling`).
TOLD = frozenset({"run", "validate", "promote", "approve", "rollback", "backfill"})


def commands(app: typer.Typer, kind: str = "table") -> Callable[[F], F]:
    """The decorator that registers a command of `app` with its failures as one line
    (`handle_errors`) and, for the commands in `TOLD`, its ending told (`telling.announced`,
    of a `table` or a `pipeline`): written once, so no command can be registered without it."""

    def command(fn: F) -> F:
        handled = handle_errors(fn)
        app.command()(telling.announced(kind)(handled) if fn.__name__ in TOLD else handled)
        return fn

    return command


def engine_message(exc: BaseException) -> str:
    """The part of an engine error that names the cause: py4j's first line only says which JVM
    call failed ("An error occurred while calling o123.collectToPython."); the Java exception
    follows on the next line."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling") and lines[1].startswith(": "):
        return lines[1][2:] + "\n" + "\n".join(lines[2:])
    return str(exc)


def split_partitions(partitions: str | None) -> list[str] | None:
    if partitions is None:
        return None
    items = [p.strip() for p in partitions.split(",") if p.strip()]
    if not items:
        raise UsageError("--partitions is empty")
    return items
