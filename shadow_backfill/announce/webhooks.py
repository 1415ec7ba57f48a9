"""Posting a command's ending to the webhooks of `notify:`, within each one's time budget.

A webhook is a courtesy, not part of the job: one that is down, slow or answers 4xx/5xx is
tried `retries` more times with a doubling wait, all within `timeout_s` (each try gets the time
left), then given up with one `warning:` line naming its variable or host, never its URL (the
path holds the token). Webhooks are posted to at once, so several cost the longest budget, not
the sum: each is posted from a thread of its own, which the command waits for until that
webhook's budget is spent and no longer (a socket timeout bounds each read, not a receiver that
trickles its answer a byte at a time, nor a slow name lookup). The standard library's `urllib`
posts: a JSON POST with a timeout is all it takes, and the CLI's start imports no HTTP library
for it (requests would add ~0.1 s to every command).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Sequence
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


class Final(str):
    """A problem another try cannot mend (a malformed URL or answer): not retried."""


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
    except Exception as exc:  # a malformed answer or URL: named by its type (its text may quote the URL)
        return Final(type(exc).__name__)


def deliver(spec: NotifySpec, payload: dict[str, Any], *, clock: Callable[[], float] = time.monotonic) -> Delivery:
    """Post `payload` to `spec`'s webhook: tries until delivered, out of tries, or out of time."""
    try:
        url = spec.resolved_url()
    except ConfigError as exc:
        return Delivery(spec.where, 0, str(exc).removeprefix("notify: "))
    body = redact(json.dumps(payload)).encode()  # a reason may quote a secret of the config
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
        if isinstance(problem, Final) or tries > spec.retries or deadline - clock() <= wait:
            break
        time.sleep(wait)
        wait *= 2
    return Delivery(spec.where, tries, problem)


def notify(specs: Sequence[NotifySpec], told: Told) -> list[Delivery]:
    """Post `told` to every webhook that asked for its outcome, at once; warn for each that
    did not take it. The deliveries, in `specs`' order (none for a webhook not asked)."""
    wanted = [s for s in specs if told.outcome in s.on or told.sample]
    done = within_budgets(wanted, lambda s: deliver(s, message(told, s.format)))
    for d in done:
        if not d.delivered:
            tries = f" after {d.tries} tries" if d.tries > 1 else ""
            line = f"notify: the webhook at {d.where} did not take the message{tries} ({d.problem})"
            warnings.warn(ShadowBackfillWarning(redact(line)), stacklevel=1)
    return done


def within_budgets(specs: Sequence[NotifySpec], post: Callable[[NotifySpec], Delivery]) -> list[Delivery]:
    """`post` to each webhook in a daemon thread of its own, waited for until its `timeout_s`
    is spent: a webhook still busy then is given up ("timed out"), and its thread cannot keep
    the command from exiting."""
    found: dict[int, Delivery] = {}

    def run(i: int, spec: NotifySpec) -> None:
        try:
            found[i] = post(spec)
        except Exception as exc:  # building the message, or a bug: one line, never a traceback
            found[i] = Delivery(spec.where, 0, type(exc).__name__)

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(i, s), name="notify", daemon=True) for i, s in enumerate(specs)]
    for t in threads:
        t.start()
    for t, spec in zip(threads, specs, strict=True):
        t.join(max(0.0, started + spec.timeout_s - time.monotonic()))
    return [found.get(i) or Delivery(s.where, 1, "timed out") for i, s in enumerate(specs)]
