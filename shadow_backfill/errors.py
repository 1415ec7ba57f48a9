"""One exception family, so the CLI can turn any refusal into one clear line and an exit code.

Usage errors (a bad config, a bad argument) exit with 2; runtime failures (a transform that
breaks, a refused write) exit with 1. Nothing is written before a usage error is raised.
"""

from __future__ import annotations


class ShadowBackfillError(Exception):
    """Base class; `exit_code` is what the CLI exits with."""

    exit_code = 1


class ConfigError(ShadowBackfillError):
    """The config file or a command-line argument is wrong."""

    exit_code = 2


class UsageError(ShadowBackfillError):
    """A command was asked for something that cannot mean anything (e.g. a reversed range)."""

    exit_code = 2


class SessionError(ShadowBackfillError):
    """Spark could not be started the way the config asks."""

    exit_code = 1


class TableNotFoundError(ShadowBackfillError):
    exit_code = 2


class RefusedError(ShadowBackfillError):
    """The tool refused to write because doing so could lose or corrupt data."""

    exit_code = 1


class TransformError(RefusedError):
    """The transform's output broke a rule (wrong partitions, wrong schema) or it raised.

    `retryable` is True only when the transform itself raised (maybe a flaky source); a broken
    output rule is deterministic and retrying it would only waste cluster time.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
