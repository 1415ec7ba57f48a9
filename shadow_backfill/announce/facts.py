"""The facts of one table a command worked on, read once as the command ends: where live and
the shadow lie and at which version (`formats.base.LineageDataset`, as each format knows it),
the code and config that made the shadow, and the stored verdicts of the partitions judged.

Read from the table's own format and the state store through the facade, after the command's
last write; a table that cannot be read (its session never started, a store that is down)
gives what could be read and leaves the rest empty: telling must never fail a command."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shadow_backfill.errors import ShadowBackfillWarning, first_line

if TYPE_CHECKING:
    from shadow_backfill.api import Backfill
    from shadow_backfill.formats.locations import LineageDataset
    from shadow_backfill.state.verdicts import VerdictRecord


@dataclass(frozen=True)
class TableFacts:
    """One table of the command: `key` names it (a pipeline's layer key, else the live table)."""

    key: str
    live_table: str
    shadow_table: str
    config_hash: str
    live: LineageDataset | None = None
    shadow: LineageDataset | None = None
    code_fingerprint: str | None = None
    verdicts: Sequence[VerdictRecord] = field(default_factory=tuple)

    def reason(self, partition: str) -> str | None:
        """The first check that held `partition` back, as its message."""
        for v in self.verdicts:
            if v.partition == partition and v.reasons:
                return v.reasons[0].message
        return None


def gather(key: str, bf: Backfill, judged: Sequence[str], *, datasets: bool) -> TableFacts:
    """`bf`'s facts; `datasets`: also where its tables lie, their versions and the code (a
    command that started Spark; one that never did, such as a refusal, is not made to start it
    or to import the transform). Verdicts are read only for partitions a command judged or
    promoted: a command refused before any work opens no state store (it must write nothing)."""
    cfg = bf.config
    live = shadow = fingerprint = None
    verdicts: list[VerdictRecord] = []
    try:
        if datasets:
            reader = bf.for_dry_run().table_format  # read-only: telling writes nothing, not even a log
            live = reader.lineage_dataset(bf.live_table)
            shadow = reader.lineage_dataset(bf.shadow_table)
            fingerprint = bf.code_fingerprint()
        if wanted := set(judged):
            verdicts = [v for v in bf.verdicts() if v.partition in wanted]
    except Exception as exc:  # telling must not fail the command it tells of
        warnings.warn(
            ShadowBackfillWarning(f"could not read the facts of {bf.live_table}: {first_line(exc, 200)}"),
            stacklevel=1,
        )
    return TableFacts(
        key=key,
        live_table=bf.live_table,
        shadow_table=bf.shadow_table,
        config_hash=cfg.config_hash,
        live=live,
        shadow=shadow,
        code_fingerprint=fingerprint,
        verdicts=tuple(verdicts),
    )
