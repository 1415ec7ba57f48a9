"""`suggest`: bounds for a change contract, derived from the changes a validation observed.

Users do not know before the run by how much a column will move. After one, the evidence is
there: the partitions that pass everything else show what the change does. For each column the
contract declares, and each other column that changed, the metric a bound would judge (a
number's `mean_change_pct`, any other column's `changed_share`) is taken over those partitions;
the range's typical value and robust spread (`consistency.spread_of`) leave out the partitions
whose change is unlike the others'; the bounds are then `warn` = 3.5 and `fail` = 5 spreads
above typical (`consistent`'s default distances, so the bounds grade a change above the range
as it does), rounded up to three significant digits unless a left-out partition would then
pass. A bound only caps: a change below the range stays `consistent`'s to fail, and the block
keeps every entry the config already has (its other bounds, its `consistent`).

Pure code over the stored verdicts; the CLI prints it as the config's own YAML.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import yaml

from shadow_backfill.config import ColumnBounds, ValidationSpec
from shadow_backfill.document import MetricsDoc
from shadow_backfill.documents.suggest import AbstainedDoc, BoundsDoc, LeftOutDoc, SuggestionDoc
from shadow_backfill.validate.consistency import spread_of
from shadow_backfill.vocabulary import Check, CheckStatus

MIN_PARTITIONS = 8  # as `consistent`'s default: fewer say nothing about what is typical
WARN_SPREADS, FAIL_SPREADS = 3.5, 5.0
FLOOR = {"mean_change_pct": 0.1, "changed_share": 0.001}  # 0.1 percentage points either way
# The checks a column's own change makes (so a partition failing only those is still evidence).
OWN = {*ColumnBounds.model_fields, "unexpected_changes"}  # every bound a column may declare


class Judged(Protocol):
    """A partition's stored verdict (`state.VerdictRecord`) or a fresh one (`PartitionVerdict`)."""

    @property
    def partition(self) -> str: ...
    @property
    def checks(self) -> list[Check]: ...
    @property
    def metrics(self) -> MetricsDoc: ...


def suggest(judged: Sequence[Judged], spec: ValidationSpec, shadow_table: str) -> SuggestionDoc:
    """The suggestion from the verdicts `judged` (one per partition) under the config's `spec`."""
    columns = _columns(judged, spec)
    left_out: list[LeftOutDoc] = []
    clean = []
    for v in judged:
        blockers = [c.id for c in v.checks if _blocks(c, columns)]
        if blockers:
            shown = ", ".join(blockers[:3]) + (f" and {len(blockers) - 3} more" if len(blockers) > 3 else "")
            left_out.append(LeftOutDoc(partition=v.partition, column=None, why=f"it fails or warns on {shown}"))
        elif v.metrics.column_changes:
            clean.append(v)
    bounds, abstained = [], []
    for column in columns:
        found = _bounds(clean, column, spec, left_out)
        if isinstance(found, str):
            abstained.append(AbstainedDoc(column=column, why=found))
        else:
            bounds.append(found)
    doc = SuggestionDoc(
        shadow_table=shadow_table, validated=len(judged), bounds=bounds, left_out=left_out, abstained=abstained, yaml=""
    )
    return doc.model_copy(update={"yaml": as_yaml(doc, spec)})


def _columns(judged: Sequence[Judged], spec: ValidationSpec) -> list[str]:
    """The contract's columns, then every other column that changed on a matched key somewhere."""
    out = list(spec.contract)
    for v in judged:
        for c, change in v.metrics.column_changes.items():
            if c not in out and (change.changed or 0) > 0:
                out.append(c)
    return out


def _blocks(check: Check, columns: Sequence[str]) -> bool:
    """A warning or failure that is not about one of the suggested columns' own change."""
    if check.status not in (CheckStatus.WARN, CheckStatus.FAIL):
        return False
    own = check.column in columns and (check.name in OWN or check.name.startswith("consistent_"))
    return not own


def _value(m: MetricsDoc, column: str, metric: str) -> float | None:
    c = m.column_changes.get(column)
    x = None if c is None else getattr(c, metric)
    return float(x) if isinstance(x, float | int) and math.isfinite(x) else None


def _bounds(clean: Sequence[Judged], column: str, spec: ValidationSpec, left_out: list[LeftOutDoc]) -> BoundsDoc | str:
    numeric = any(_value(v.metrics, column, "mean_live") is not None for v in clean)
    metric = "mean_change_pct" if numeric else "changed_share"
    values = {v.partition: x for v in clean if (x := _value(v.metrics, column, metric)) is not None}
    if len(values) < MIN_PARTITIONS:
        return (
            f"{len(values)} partitions that pass everything else have its {metric} measured; "
            f"bounds need at least {MIN_PARTITIONS}"
        )
    found = spread_of(list(values.values()), FLOOR[metric])
    unlike = {p: x for p, x in values.items() if abs(x - found.typical) / found.spread > FAIL_SPREADS}
    for p, x in unlike.items():
        why = f"its {metric} {x:.4g} is unlike the range's ({found.typical:.4g} ± {found.spread:.2g})"
        if x < found.typical:
            why += "; below the range, which no bound fails: keep `consistent`"
        left_out.append(LeftOutDoc(partition=p, column=column, why=why))
    kept = [x for p, x in values.items() if p not in unlike]
    warn = found.typical + WARN_SPREADS * found.spread
    fail = found.typical + FAIL_SPREADS * found.spread
    above = [x for x in unlike.values() if x > fail]
    rounded_warn, rounded_fail = _round_up(warn), _round_up(fail)
    if any(x <= rounded_fail for x in above):  # rounding must not let a left-out partition pass
        rounded_warn, rounded_fail = warn, fail
    change = spec.expected_changes.get(column)
    return BoundsDoc(
        column=column,
        metric=metric,
        warn=rounded_warn,
        fail=max(rounded_fail, rounded_warn),
        typical=found.typical,
        spread=found.spread,
        partitions=len(kept),
        consistent=change is not None and change.consistent is not None,
    )


def _round_up(x: float) -> float:
    """Up to three significant digits: a bound a person reads and edits."""
    if x <= 0 or not math.isfinite(x):
        return x
    step = 10 ** (math.floor(math.log10(x)) - 2)
    up = round(math.ceil(x / step - 1e-9) * step, 12)
    return up if up >= x else round(up + step, 12)


def _comment(text: str) -> str:
    """Data in a YAML comment on one line: no line break can end the comment."""
    return " ".join(repr(text)[1:-1].split())


def as_yaml(doc: SuggestionDoc, spec: ValidationSpec) -> str:
    """The block to paste under the config's top level, the left-out partitions as comments:
    the config's own `expected_changes` entries as written, each suggested bound set in them."""
    changes: dict[str, dict[str, object]] = {
        c: change.model_dump(mode="json", exclude_unset=True) for c, change in spec.expected_changes.items()
    }
    for b in doc.bounds:
        changes.setdefault(b.column, {})[b.metric] = {"warn": b.warn, "fail": b.fail}
    lines = [f"# suggested by shadow-backfill suggest from {doc.validated} validated partitions"]
    lines += [f"# left out: {_comment(x.partition)}: {_comment(x.why)}" for x in doc.left_out]
    lines += [f"# no bounds for {_comment(a.column)}: {_comment(a.why)}" for a in doc.abstained]
    body = yaml.safe_dump({"validation": {"expected_changes": changes}}, sort_keys=False, default_flow_style=None)
    return "\n".join(lines) + "\n" + body
