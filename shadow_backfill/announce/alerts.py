"""The message a webhook is sent when a command ends, in the three formats `notify.format`
names. Pure code from `Told` to a JSON-ready value, tested without a network or an engine.

One line says it all ("local.demo.features 2024-01-01..2024-02-29: 57 promoted, 3 failed,
0 held — exit 1"): a chat's notification shows only that. Below it, the first failing and held
partitions with their reasons (at most `LISTED` each: a message stays readable on a phone,
and Slack refuses a block over 3,000 characters), then the ids a person needs next: the
promotion (to roll back), the report, the run. Every data-derived string is escaped for the
format's markup (partition values and check messages are user data).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shadow_backfill.announce.told import Told
from shadow_backfill.command_result import WARN_HELD, CommandResult
from shadow_backfill.documents.alert import AlertDoc
from shadow_backfill.vocabulary import CheckStatus

LISTED = 5
_REASON_CHARS = 200


# Why a partition was held, as `command_result` words it: a failed verdict (a promotion's
# refusal says "verdict fail: ..."), a rolled-back canary, or a `warn` waiting for a person.
_FAILED_HELD = ("verdict fail", "canary rolled back")
_WAITING_HELD = ("verdict warn",)


def failing(result: CommandResult) -> dict[str, str]:
    """Each partition that failed, with why: its recompute, its verdict (judged now, or the
    stored one a promotion refused it for), a rolled-back canary, or a promotion refused."""
    why = dict(result.failed)
    why |= {k: "verdict fail" for k, v in result.judged.items() if v == CheckStatus.FAIL and k not in why}
    why |= {k: reason for k, reason in result.held.items() if reason.startswith(_FAILED_HELD) and k not in why}
    why |= {k: reason for k, reason in result.refused.items() if k not in why}
    return {k: why[k] for k in _in_order(result, why)}


def waiting(result: CommandResult) -> dict[str, str]:
    """The partitions held for approval (a `warn` not promoted), with why."""
    held = result.held.items()
    return {
        k: why
        for k, why in held
        if why == WARN_HELD or why.startswith(_WAITING_HELD) or result.judged.get(k) == CheckStatus.WARN
    }


def _in_order(result: CommandResult, keys: Mapping[str, str]) -> list[str]:
    """`keys` in the command's selection order, any others after them."""
    return [k for k in result.selected if k in keys] + [k for k in keys if k not in result.selected]


def _span(result: CommandResult) -> str:
    """The range the command selected: its first and last partition by name (a promotion's
    selection is its plan's order, not the calendar's)."""
    if not result.selected:
        return ""
    first, last = min(result.selected), max(result.selected)
    return f" {first}" if first == last else f" {first}..{last}"


def _counts(result: CommandResult) -> str:
    c = result.counts
    if result.command == "run":
        return f"{c['written']} written, {c['skipped']} skipped, {c['failed']} failed"
    if result.command == "validate":
        return f"{c['pass']} pass, {c['warn']} warn, {c['fail']} fail"
    if result.command == "rollback":
        return f"{c['promoted']} partition(s) restored"
    return f"{c['promoted']} promoted, {len(failing(result))} failed, {len(waiting(result))} held"


def summary_line(told: Told) -> str:
    """The one line of a message (what a notification shows)."""
    name = f"{told.target} {told.command}" if told.kind == "table" else f"pipeline {told.target} {told.command}"
    if told.result is None:
        return f"{name}: {told.error or 'ended before any work'} — exit {told.code}"
    return f"{name}{_span(told.result)}: {_counts(told.result)} — exit {told.code}"


def _with_reasons(told: Told, partitions: Mapping[str, str]) -> list[tuple[str, str]]:
    """(partition, why) for the first `LISTED`, a failed verdict's why its first failed check."""
    out = []
    for k, why in list(partitions.items())[:LISTED]:
        if why.startswith(("verdict fail", "verdict warn")):
            found = [f"{t.key}: {r}" if told.kind == "pipeline" else r for t in told.tables if (r := t.reason(k))]
            why = found[0] if found else why
        out.append((k, why[:_REASON_CHARS]))
    return out


def sections(told: Told) -> list[tuple[str, list[tuple[str, str]]]]:
    """The listed partitions, by heading: failed first, then held, then a note of how many more."""
    if told.result is None:
        return []
    out = []
    for head, found in (("failed", failing(told.result)), ("held for approval", waiting(told.result))):
        if found:
            more = f" (first {LISTED} of {len(found)})" if len(found) > LISTED else ""
            out.append((f"{head}{more}", _with_reasons(told, found)))
    return out


def links(told: Told) -> list[tuple[str, str]]:
    """(label, value) of the ids and paths a person acts on next."""
    result = told.result
    found = []
    if result is not None and result.promotion_id:
        found.append(("promotion", result.promotion_id))
    if result is not None and "html" in result.reports:
        found.append(("report", result.reports["html"]))
    found.append(("run", told.run_id))
    return found


def json_document(told: Told) -> AlertDoc:
    """What a `json` webhook receives (docs/alert.schema.json)."""
    return AlertDoc(
        text=summary_line(told),
        outcome=told.outcome,
        error=told.error,
        run=told.run_id,
        sample=told.sample,
        result=told.result.document() if told.result is not None else None,
    )


def slack_escape(text: str) -> str:
    """Slack's three control characters: anything else in mrkdwn is text, but `<...>` is a link
    or a mention (`<!channel>`), so data must never form one."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack(told: Told) -> dict[str, Any]:
    """An incoming webhook's message: `text` (the notification) and Block Kit `blocks`."""
    line = slack_escape(summary_line(told))
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{line}*"}}]
    for head, rows in sections(told):
        listed = "\n".join(f"• {slack_escape(k)}: {slack_escape(why)}" for k, why in rows)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"*{head}*\n{listed}"}})
    context = [{"type": "mrkdwn", "text": f"{label}: {slack_escape(value)}"} for label, value in links(told)]
    blocks.append({"type": "context", "elements": context})
    return {"text": line, "blocks": blocks}


_TEAMS_MARKUP = str.maketrans({c: f"\\{c}" for c in "\\*_`[]()<>#~|!-+."})


def teams_escape(text: str) -> str:
    """Adaptive Cards render a subset of Markdown in `TextBlock`s: every markup character is
    backslash-escaped, so data is shown as typed."""
    return text.translate(_TEAMS_MARKUP)


def teams(told: Told) -> dict[str, Any]:
    """A Teams workflow webhook's message: one Adaptive Card (`FactSet`s for the partitions)."""
    body: list[dict[str, Any]] = [
        {"type": "TextBlock", "text": teams_escape(summary_line(told)), "weight": "Bolder", "wrap": True}
    ]
    for head, rows in sections(told):
        body.append({"type": "TextBlock", "text": teams_escape(head), "weight": "Bolder", "wrap": True})
        facts = [{"title": teams_escape(k), "value": teams_escape(why)} for k, why in rows]
        body.append({"type": "FactSet", "facts": facts})
    body.append({"type": "FactSet", "facts": [{"title": t, "value": teams_escape(v)} for t, v in links(told)]})
    card = {"type": "AdaptiveCard", "$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "version": "1.4"}
    content = {**card, "body": body}
    return {
        "type": "message",
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": content}],
    }


def message(told: Told, format: str) -> dict[str, Any]:
    """The body posted to a webhook of `format` (slack, teams or json)."""
    if format == "json":
        return json_document(told).model_dump(mode="json")
    return teams(told) if format == "teams" else slack(told)
