"""One exception family, so the CLI can turn any refusal into one clear line and an exit code.

Usage errors (a bad config, a bad argument) exit with 2; runtime failures (a transform that
breaks, a refused write) exit with 1. Nothing is written before a usage error is raised.
"""

from __future__ import annotations

import re
from pathlib import Path

# Shorter secrets are not hunted for in free text: replacing every "ab" would shred the line
# that names the real problem (the URL itself is masked whatever the password's length).
MIN_SECRET_CHARS = 4
_SECRETS: set[str] = set()
# The one rule for "this setting's value is a secret", for Spark settings and a state URL's query
# alike: the name's last dotted part names a password, a secret, a key, a token, an auth value
# or a credential (libpq's `password` and `sslpassword`, `fs.s3a.secret.key`,
# `spark.ssl.keyPassword`, a catalog's `token` or `credential`) ...
SECRET_NAME = re.compile(r"pass|pwd|secret|token|key|auth|cred", re.IGNORECASE)
# ... or the name holds its secret further in: ADLS's account key is
# `fs.azure.account.key.<account>.dfs.core.windows.net`.
_SECRET_INSIDE = re.compile(r"\.account\.key\.", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a setting called `name` holds a secret (the rule above)."""
    return bool(SECRET_NAME.search(name.rsplit(".", 1)[-1]) or _SECRET_INSIDE.search(name))


def secret_settings(conf: dict[str, str]) -> list[str]:
    """Values of Spark settings that hold secrets, to be masked wherever an engine's message or
    a traceback would quote them. Flags and numbers (`spark.authenticate: true`,
    `...token.enabled`'s neighbours) are not secrets, and masking "true" would shred every
    message."""
    return [v for k, v in conf.items() if is_secret_name(k) and v.lower() not in ("true", "false") and not v.isdigit()]


class ShadowBackfillError(Exception):
    """Base class; `exit_code` is what the CLI exits with: 1, a runtime failure, unless a
    subclass says 2, a usage error."""

    exit_code = 1


class ConfigError(ShadowBackfillError):
    """The config file or a command-line argument is wrong."""

    exit_code = 2


class UsageError(ShadowBackfillError):
    """A command was asked for something that cannot mean anything (e.g. a reversed range)."""

    exit_code = 2


class SessionError(ShadowBackfillError):
    """Spark could not be started the way the config asks."""


class TableNotFoundError(ShadowBackfillError):
    exit_code = 2


class StateStoreError(ShadowBackfillError):
    """The state store's database refused (corrupt, read-only, unreachable, missing driver).

    A runtime failure, not a usage error: the URL may be right and the database the problem.
    """


class WriteError(ShadowBackfillError):
    """A file or folder the tool must write (warehouse, state file, report) cannot be written."""


class RefusedError(ShadowBackfillError):
    """The tool refused to write because doing so could lose or corrupt data."""


class TransformError(RefusedError):
    """The transform's output broke a rule (wrong partitions, wrong schema) or it raised.

    `retryable` is True only when the transform itself raised (maybe a flaky source); a broken
    output rule is deterministic and retrying it would only waste cluster time.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ShadowBackfillWarning(UserWarning):
    """Base class of the tool's warnings: the CLI prints each as one `warning:` line on stderr."""


class LocalLocksWarning(ShadowBackfillWarning):
    """A table whose storage has no locks of its own (Parquet on an object store) takes them
    from the state store, and the default store is a file on this machine: a command on another
    machine would not wait for them. A warning, not a refusal: one machine is a valid set-up."""


def os_reason(path: Path, exc: OSError) -> str:
    """Why `path` could not be made or written, in words: naming the regular file that stands
    where a folder must be says more than errno's 'File exists' or 'Not a directory'."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            if not candidate.is_dir():
                return f"{str(candidate)!r} is a file, not a folder"
            break
    return exc.strerror or str(exc)


def keep_secret(*values: str | None) -> None:
    """Remember secrets found in the config (a state store password), so that no text the CLI
    prints or logs can carry them, even when a driver's message quotes one we did not foresee."""
    _SECRETS.update(v for v in values if v and len(v) >= MIN_SECRET_CHARS)


def redact(text: str) -> str:
    """`text` with every remembered secret replaced by `***` (longest first: a secret that holds
    another is masked whole)."""
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


# The header of a Python traceback, and a frame line of it (indented: `  File ...`, the source
# line, 3.11's `^^^^` markers); the first unindented line after the frames names the exception.
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")


def python_worker_error(text: str) -> str | None:
    """The `SomeError: message` line of the Python traceback an engine's message carries, or None.

    PySpark reports an exception raised in a UDF (on a Python worker) as "An exception was thrown
    from the Python worker. Please see the stack trace below." followed by the worker's
    traceback, and on a write as a JVM error quoting it among pages of Java stack: the line the
    user needs is the traceback's last one. Chained exceptions print one traceback each; the
    last is the one that escaped."""
    head = text.rfind(_TRACEBACK)
    if head < 0:
        return None
    for line in text[head + len(_TRACEBACK) :].splitlines():
        if line and not line[0].isspace():
            return line.strip() if _EXCEPTION_LINE.match(line.strip()) else None
    return None


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """What the state store, the reports and the CLI keep of an error: engines put pages of
    stack after the first line (`limit`: at most this many characters of it), and a UDF's error
    hides its cause in the Python traceback it quotes (`python_worker_error`)."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    return (python_worker_error(text) or text.splitlines()[0])[:limit]
