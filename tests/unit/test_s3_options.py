"""The tool's own S3 client (a Parquet table's log on the bucket) reads the s3a settings the user
gives Spark as s3a reads them: per bucket first. A client set up otherwise would reach another
endpoint, or use other credentials, than the Spark job writing the same table."""

from __future__ import annotations

from shadow_backfill.formats.object_files import bucket_of, s3_options

SETTINGS = {
    "endpoint": "http://127.0.0.1:9000",
    "path.style.access": "true",
    "access.key": "lake-key",
    "secret.key": "lake-secret",
    "bucket.archive.endpoint": "archive.example:443",
    "bucket.archive.access.key": "archive-key",
    "bucket.archive.secret.key": "archive-secret",
    "bucket.archive.endpoint.region": "eu-west-1",
}


def test_a_per_bucket_setting_wins_over_the_general_one_for_that_bucket_only() -> None:
    lake = s3_options(SETTINGS.get, "lake")
    assert lake == {
        "access_key": "lake-key",
        "secret_key": "lake-secret",
        "scheme": "http",
        "endpoint_override": "127.0.0.1:9000",
    }
    archive = s3_options(SETTINGS.get, bucket_of("s3a://archive/wh/events"))
    # the general path-style setting still applies to the bucket (it does not override it)
    assert archive == {
        "access_key": "archive-key",
        "secret_key": "archive-secret",
        "region": "eu-west-1",
        "scheme": "https",  # no scheme given and SSL on: s3a's default
        "endpoint_override": "archive.example:443",
    }


def test_virtual_host_addressing_unless_path_style_and_nothing_set_means_aws_defaults() -> None:
    settings = {"endpoint": "s3.eu-west-1.amazonaws.com", "bucket.lake.path.style.access": "true"}
    assert s3_options(settings.get, "other")["force_virtual_addressing"] is True
    assert "force_virtual_addressing" not in s3_options(settings.get, "lake")
    assert s3_options({}.get, "lake") == {}
