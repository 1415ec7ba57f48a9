"""Which engine jars fit which Spark: the one version table.

Spark loads table formats as JVM jars built per Spark line and Scala version. The tool asks
Spark to fetch exactly the ones below at first start (`spark.jars.packages`, resolved by Spark's
own Ivy from Maven Central into `~/.ivy2`, `~/.ivy2.5.2` on Spark 4), or takes them from
`spark.jars_dir` offline. A Spark line missing here has no official runtime for one of the
formats: it is refused in one sentence naming the supported ones, before the JVM starts, rather
than failing a download.
"""

from __future__ import annotations

from dataclasses import dataclass

from shadow_backfill.errors import SessionError

ICEBERG_VERSION = "1.10.1"


@dataclass(frozen=True)
class SparkLine:
    """The jars that fit one Spark minor version."""

    spark: str  # "3.5"
    scala: str  # the Scala version PyPI's PySpark of this line is built with
    iceberg: str  # Maven coordinates of the official Iceberg runtime
    delta: str  # Maven coordinates of delta-spark
    # Hadoop's S3 connector (s3a://), of exactly the Hadoop version PyPI's PySpark of this line
    # ships (hadoop-client 3.3.4 in 3.5, 3.4.1 in 4.0, 3.4.2 in 4.1): another version fails at the
    # first read with a missing method. It brings its AWS SDK bundle (v1 for Hadoop 3.3, v2 for 3.4).
    hadoop_aws: str


SPARK_LINES = {
    line.spark: line
    for line in (
        SparkLine(
            "3.5",
            "2.12",
            f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:{ICEBERG_VERSION}",
            "io.delta:delta-spark_2.12:3.3.2",
            "org.apache.hadoop:hadoop-aws:3.3.4",
        ),
        SparkLine(
            "4.0",
            "2.13",
            f"org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:{ICEBERG_VERSION}",
            "io.delta:delta-spark_2.13:4.0.1",
            "org.apache.hadoop:hadoop-aws:3.4.1",
        ),
        SparkLine(
            "4.1",
            "2.13",
            "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0",
            "io.delta:delta-spark_4.1_2.13:4.3.1",
            "org.apache.hadoop:hadoop-aws:3.4.2",
        ),
    )
}


def pyspark_version() -> str:
    """The installed PySpark's version, read from its package metadata: importing PySpark takes a
    second and the config checks run without it. A PySpark on PYTHONPATH (a Spark distribution's,
    with no metadata) is imported to ask."""
    from importlib import metadata

    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        import pyspark

        return str(pyspark.__version__)


def spark_line(version: str | None = None) -> SparkLine:
    """The line of the running PySpark (or of `version`); an unsupported one is one sentence."""
    if version is None:
        version = pyspark_version()
    major_minor = ".".join(version.split(".")[:2])
    try:
        return SPARK_LINES[major_minor]
    except KeyError:
        supported = ", ".join(SPARK_LINES)
        raise SessionError(
            f"PySpark {version} is not supported: Iceberg and Delta publish runtimes for Spark {supported} "
            "(pip install 'pyspark>=3.5,<4.2'), or put jars that fit it in spark.jars_dir"
        ) from None
