"""Posting a command's ending to the webhooks of `notify:`, within each one's time budget.

A webhook is a courtesy, not part of the job: one that is down, slow or answers 4xx/5xx is
tried `retries` more times with a doubling wait, all within `timeout_s` (each try gets the time
left), then given up with one `warning:` line naming its variable or host, never its URL (the
path holds the token). Webhooks are posted to at once, so several cost the longest budget, not
the sum. The standard library's `urllib` posts: a JSON POST with a timeout is all it takes, and
the CLI's start imports no HTTP library for it (requests would add ~0.1 s to every command).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from shadow_backfill.announce.alerts import message
from shadow_backfill.announce.told import Told
from shadow_backfill.config.notify import NotifySpec
from shadow_backfill.errors import ConfigError, ShadowBackfillWarning, redact

FIRST_WAIT_S = 0.5
USER_AGENT = "shadow-backfill"


@dataclass(frozen=True)
class Delivery:
    """How one webhook's message went: `tries` made, and the last problem (None: delivered)."""

    where: str
    tries: int
    problem: str | None

    @property
    def delivered(self) -> bool:
        return self.problem is None


def _post_once(url: str, body: bytes, timeout: float) -> str | None:
    """One POST; None if a 2xx answered, else what went wrong (with no URL in it)."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", "User-Agent": USER_AGENT}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # http(s) only: check_url
            answer.read(65536)
            return None
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return "timed out" if isinstance(reason, TimeoutError) or "timed out" in str(reason) else type(reason).__name__


def deliver(spec: NotifySpec, payload: dict[str, Any], *, clock: Callable[[], float] = time.monotonic) -> Delivery:
    """Post `payload` to `spec`'s webhook: tries until delivered, out of tries, or out of time."""
    try:
        url = spec.resolved_url()
    except ConfigError as exc:
        return Delivery(spec.where, 0, str(exc).removeprefix("notify: "))
    body = json.dumps(payload).encode()
    deadline = clock() + spec.timeout_s
    wait, tries = FIRST_WAIT_S, 0
    problem: str | None = "no time left"
    while tries <= spec.retries:
        left = deadline - clock()
        if left <= 0:
            break
        tries += 1
        problem = _post_once(url, body, left)
        if problem is None:
            return Delivery(spec.where, tries, None)
        if tries > spec.retries or deadline - clock() <= wait:
            break
        time.sleep(wait)
        wait *= 2
    return Delivery(spec.where, tries, problem)


def notify(specs: Sequence[NotifySpec], told: Told) -> list[Delivery]:
    """Post `told` to every webhook that asked for its outcome, at once; warn for each that
    did not take it. The deliveries, in `specs`' order (none for a webhook not asked)."""
    wanted = [s for s in specs if told.outcome in s.on or told.sample]
    if not wanted:
        return []
    with ThreadPoolExecutor(max_workers=min(len(wanted), 8), thread_name_prefix="notify") as pool:
        done = list(pool.map(lambda s: deliver(s, message(told, s.format)), wanted))
    for d in done:
        if not d.delivered:
            tries = f" after {d.tries} tries" if d.tries > 1 else ""
            line = f"notify: the webhook at {d.where} did not take the message{tries} ({d.problem})"
            warnings.warn(ShadowBackfillWarning(redact(line)), stacklevel=1)
    return done
