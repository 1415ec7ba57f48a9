"""The `notify:` section: webhooks told how a command ended (`announce.alerts`), in the config
of one table and in a pipeline file alike.

A webhook's URL is a credential (anyone holding a Slack or Teams incoming-webhook URL can post
to the channel), so the config names the environment variable that holds it (`url_env`) or,
if the user must, the URL itself; either way the URL is kept as a secret the moment the config
is read (`errors.keep_secret`) and no line, log, report or JSON output the tool writes shows it.
"""

from __future__ import annotations

import os
import re
from typing import Literal
from urllib.parse import urlparse

from pydantic import Field, PositiveFloat, model_validator

from shadow_backfill.errors import ConfigError, keep_secret
from shadow_backfill.strict import Strict

Outcome = Literal["failure", "held", "stopped", "success"]
QUIET_ON_SUCCESS: list[Outcome] = ["failure", "held", "stopped"]
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class NotifySpec(Strict):
    """One webhook, and the command endings it is told of."""

    url_env: str | None = None
    """The environment variable holding the webhook's URL (e.g. `SLACK_WEBHOOK_URL`): the URL
    stays out of the file. Read when a command ends; unset or empty is one `warning:` line."""
    url: str | None = None
    """The webhook's URL written in the file (prefer `url_env`: the URL is a credential)."""
    on: list[Outcome] = Field(default_factory=lambda: list(QUIET_ON_SUCCESS))
    """The endings that post: `failure` (exit 1 or 2), `held` (exit 3, waiting for approval),
    `stopped` (exit 4 or 130: a time box, SIGTERM, Ctrl-C), `success` (exit 0)."""
    format: Literal["slack", "teams", "json"] = "slack"
    """`slack` (an incoming webhook's `text` and `blocks`), `teams` (a workflow webhook's
    Adaptive Card) or `json` (the summary document, docs/alert.schema.json)."""
    timeout_s: PositiveFloat = 10.0
    """The whole budget of this webhook, retries included: the command never waits longer."""
    retries: int = Field(default=2, ge=0, le=10)
    """Tries after the first, with a doubling wait, for an error, a timeout or a 4xx/5xx answer."""

    @model_validator(mode="after")
    def _one_url(self) -> NotifySpec:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("give exactly one of 'url_env' (an environment variable's name) or 'url'")
        if self.url_env is not None and not _ENV_NAME.match(self.url_env):
            raise ValueError(f"url_env {self.url_env!r} is not an environment variable's name")
        if self.url is not None:
            keep_url_secret(self.url)
            check_url(self.url, "url")
        if not self.on:
            raise ValueError("'on' lists at least one of failure, held, stopped, success")
        return self

    def resolved_url(self) -> str:
        """The URL to post to, read now (a scheduler sets the variable for the task). Raises
        `ConfigError` naming the variable, never the URL, when it is unset or not a URL."""
        if self.url is not None:
            return self.url
        value = os.environ.get(self.url_env or "", "").strip()
        if not value:
            raise ConfigError(f"notify: the environment variable {self.url_env} is not set")
        keep_url_secret(value)
        try:
            check_url(value, f"the environment variable {self.url_env}")
        except ValueError as exc:
            raise ConfigError(f"notify: {exc}") from None
        return value

    @property
    def where(self) -> str:
        """How lines name this webhook without its secret: its variable, or its host."""
        if self.url_env is not None:
            return f"${self.url_env}"
        return host_of(self.url or "")


def keep_url_secret(url: str) -> None:
    """The URL, and its path and query apart (an error may quote one without the other), are
    masked wherever the tool prints or writes text."""
    parsed = urlparse(url)
    keep_secret(url, parsed.path if parsed.path.strip("/") else None, parsed.query or None)


def host_of(url: str) -> str:
    """The host a URL posts to (what a warning may name: the path and query hold the token)."""
    return urlparse(url).hostname or "?"


def check_url(url: str, name: str) -> None:
    """An http(s) URL with a host, or a `ValueError` naming where it came from, not the URL."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"{name} is not an http(s) URL")
