"""The last stage of a command: telling the world how it ended.

After the report, a command's ending leaves the machine two ways: as a message to the webhooks
the config's `notify:` lists (`alerts`, posted by `webhooks`), and as OpenLineage run events
(`lineage`) when the OpenLineage client is configured. Both read one value, `Told`: the
command's typed account (`command_result.CommandResult`), its exit code and error line, and the
facts of its tables (`facts.TableFacts`: where they lie, their versions, the stored verdicts).
So a table and a pipeline, and every command, announce the same way; nothing here can change an
exit code, and a receiver that is down costs one `warning:` line.
"""

from __future__ import annotations

from shadow_backfill.announce.told import Outcome, Told, outcome_of

__all__ = ["Outcome", "Told", "outcome_of"]
