"""The few settings of the user's config that the formats read, apart from the config itself
(which imports the formats' registry) and from Spark (the CLI loads this without PySpark)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Hadoop's S3 connector's settings in a Spark conf (`spark.hadoop.fs.s3a.<key>`): the one set of
# credentials the tool reads, for the session's s3a and for its own S3 client alike.
S3A_SETTINGS = "spark.hadoop.fs.s3a."


@dataclass(frozen=True)
class SessionSettings:
    """What a format needs of the user's config to set up a classic Spark session: the folder
    of jars the user brings (resolved; None: Spark fetches the official runtimes), the catalog
    name for Iceberg, the user's own `spark.conf` (a catalog configured there is used as it is)
    and the warehouse. `session.session_settings` makes it from a config."""

    jars_dir: Path | None
    catalog: str
    user_conf: Mapping[str, str]
    warehouse: Path
