"""Once, by hand: are the tables in our lineage events named as OpenLineage's own Spark
integration names them? If not, a catalog shows two datasets for one table, and our events do
not join the lineage of the user's own Spark jobs.

`python -m bench.lineage_names [--openlineage-spark 1.53.0]` writes the demo on classic Spark
for each format with the official listener (`io.openlineage:openlineage-spark`, from Maven
Central) writing its events to a file, makes a plain Spark write into each live table (an
append of one of its own rows, as a user's job would), and compares the dataset the listener
names for that write with `TableFormat.lineage_dataset` of the same table. The answer goes to
bench/results/lineage-names.json. Not in CI: it fetches the listener's jar (PySpark 3.5, Scala
2.12, the line the listener's newest release supports here).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

RESULTS = Path(__file__).resolve().parent / "results"


def _with_listener(cfg: Path, events: Path, version: str) -> None:
    data: dict[str, Any] = yaml.safe_load(cfg.read_text())
    conf = data.setdefault("spark", {}).setdefault("conf", {})
    conf.update(
        {
            "spark.jars.packages": f"io.openlineage:openlineage-spark_2.12:{version}",
            "spark.extraListeners": "io.openlineage.spark.agent.OpenLineageSparkListener",
            "spark.openlineage.transport.type": "file",
            "spark.openlineage.transport.location": str(events),
            "spark.openlineage.namespace": "default",
        }
    )
    cfg.write_text(yaml.safe_dump(data))


def _listener_outputs(events: Path) -> list[dict[str, Any]]:
    """The outputs the listener named, each once, with its symlinks."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for line in events.read_text().splitlines():
        for out in json.loads(line).get("outputs", []):
            links = out.get("facets", {}).get("symlinks", {}).get("identifiers", [])
            seen[(out["namespace"], out["name"])] = {
                "namespace": out["namespace"],
                "name": out["name"],
                "symlinks": [(s["namespace"], s["name"]) for s in links],
            }
    return list(seen.values())


def compare(fmt: str, folder: Path, version: str) -> dict[str, Any]:
    from shadow_backfill.demo import seed_live_table, write_demo

    cfg = write_demo(folder, fmt, days=3)
    events = folder / "openlineage-spark.jsonl"
    _with_listener(cfg, events, version)
    bf = seed_live_table(cfg, 3)
    live = bf.live_table
    one_row = bf.read_live().limit(1)
    if fmt == "iceberg":
        one_row.writeTo(live).append()
    elif fmt == "delta":
        one_row.write.format("delta").mode("append").save(bf.table_format.path(live))  # type: ignore[attr-defined]
    else:
        one_row.write.mode("append").partitionBy(bf.config.partition.column).parquet(bf.table_format.path(live))  # type: ignore[attr-defined]
    bf.spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)  # type: ignore[union-attr]
    ours = bf.table_format.lineage_dataset(live)
    theirs = [o for o in _listener_outputs(events) if o["name"].rstrip("/").endswith(ours.name.rsplit("/", 1)[-1])]
    same = any((o["namespace"], o["name"]) == (ours.namespace, ours.name) for o in theirs)
    link = [] if ours.symlink is None else [[ours.symlink_namespace or ours.namespace, ours.symlink]]
    return {
        "format": fmt,
        "ours": {"namespace": ours.namespace, "name": ours.name, "symlinks": link},
        "listener": theirs,
        "same_physical_name": same,
        "same_symlinks": any([list(s) for s in o["symlinks"]] == link for o in theirs),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lineage_names")
    parser.add_argument("--openlineage-spark", default="1.53.0")
    parser.add_argument("--format", choices=["iceberg", "delta", "parquet"])
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if args.format is None:  # one process per format: each needs its own session's settings
        import subprocess

        found = []
        for fmt in ("iceberg", "delta", "parquet"):
            cmd = [
                sys.executable,
                "-m",
                "bench.lineage_names",
                "--format",
                fmt,
                "--openlineage-spark",
                args.openlineage_spark,
            ]
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            found.append(
                json.loads(done.stdout.strip().splitlines()[-1])
                if done.returncode == 0
                else {"format": fmt, "error": done.stderr[-2000:]}
            )
        RESULTS.mkdir(exist_ok=True)
        doc = {"openlineage_spark": args.openlineage_spark, "pyspark": _pyspark(), "tables": found}
        (RESULTS / "lineage-names.json").write_text(json.dumps(doc, indent=2) + "\n")
        print(json.dumps(doc, indent=2))
        return 0 if all(t.get("same_physical_name") and t.get("same_symlinks") for t in found) else 1
    with tempfile.TemporaryDirectory() as folder:
        print(json.dumps(compare(args.format, Path(folder), args.openlineage_spark)))
    return 0


def _pyspark() -> str:
    import pyspark

    return pyspark.__version__


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
