"""The tool's own OpenLineage facet, `shadowBackfill`: what a lineage system cannot learn from
the standard facets of a promotion or a rollback (which code and config made the shadow, which
shadow version was validated, which partitions went live under which promotion id). Published as
docs/lineage-facet.schema.json; `FACET_SCHEMA_URL` is that schema's `$id`, which the facet's
`_schemaURL` names, as OpenLineage asks of a custom facet."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

FACET_KEY = "shadowBackfill"
FACET_SCHEMA_URL = "urn:shadow-backfill:schema:lineage-facet:1"


class ShadowBackfillFacetDoc(BaseModel):
    """The `shadowBackfill` dataset facet of a live table a command promoted into or rolled back."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": FACET_SCHEMA_URL},
    )

    producer: str = Field(alias="_producer", description="OpenLineage's `_producer`: this tool and its version")
    schemaURL: str = Field(alias="_schemaURL", default=FACET_SCHEMA_URL, description="this schema's `$id`")
    command: str = Field(description="promote, backfill or rollback")
    promotionId: str | None = Field(description="the promotion (or rollback) id: `rollback --promotion` takes it")
    partitions: list[str] = Field(description="the partitions this command made live (or restored)")
    shadowTable: str = Field(description="the shadow table the partitions came from")
    shadowVersion: str | None = Field(description="the shadow's version the promoted partitions were validated at")
    codeFingerprint: str | None = Field(description="the transform's code fingerprint the shadow was recomputed with")
    configHash: str = Field(description="the hash of the config file the command ran with")
