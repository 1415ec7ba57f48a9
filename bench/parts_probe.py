"""A design probe, not a bench with targets: the measuring work of a validation split into its
parts, each run alone as a Spark job (each paying its own scan, so the parts add up to more
than the tool's jobs), taking turns in one process with the plain join and the fair limit, so
that each part's cost, and so each design's floor, is read off task seconds measured side by
side. `docs/benchmarks.md` ("An unchanged table, part by part") reads its figures.

The parts are built from the tool's own expressions (`profile_job`, `fingerprints`,
`facts_job`), as the validator plans them for the scenario:

- `grouping`: the profile's grouping by (partition, side), fingerprints and all, without the
  deciles beside it;
- `stats`: the same without the fingerprints (`grouping` less `stats`: what the fingerprints
  add to the one scan);
- `prints`: the fingerprints and a row count alone, in the same grouping (scan included);
- `deciles`: live's sampled percentile grid, the profile job's second branch;
- `shadow_keys`: shadow's rows grouped by (partition, key), the duplicate check of a table
  that did not change;
- `categories`: the category counts, from the rows the facts job reads for them.

    python -m bench.parts_probe --scenario identical --partitions 90 --scale 225
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import finish, keys_for, scenario_parser, seed_live, workspace
from bench.jobs import job_log
from bench.scenarios import SCENARIOS, plain_join, scenario_workspace
from bench.sizing_bench import tool_measurer
from bench.validate_bench import fair_limit


def _parts(measurer: Any, texts: list[str]) -> dict[str, Callable[[], Any]]:
    """Each part as a function that runs its one job and returns the collected rows."""
    from pyspark.sql import functions as F

    from shadow_backfill.validate.measure import fingerprints, profile_job
    from shadow_backfill.validate.measure.facts_job import _value_rows, rows_to_count
    from shadow_backfill.validate.measure.facts_spec import fact_list
    from shadow_backfill.validate.measure.plan import PARTITION_COLUMN, SHADOW_FLAG, is_side

    union, plan, spec = measurer.union, measurer.plan, measurer.facts
    keys = list(spec.keys)
    every = {t: measurer.decile_every.get(t, 1) for t in texts}
    grouping = profile_job._aggregations(plan, measurer.extra_aggs, keys)
    stats = profile_job._aggregations(plan, measurer.extra_aggs, [])  # without keys: no fingerprints
    by_side = union.groupBy(PARTITION_COLUMN, SHADOW_FLAG)
    grid = F.expr(profile_job.live_grid.grid_sql())
    accuracy = F.lit(profile_job.live_grid.ACCURACY)
    deciles = [
        F.call_function("percentile_approx", F.col(c).cast("double"), grid, accuracy).alias(f"q{i}")
        for i, c in enumerate(plan.numeric)
    ]
    per_key = union.filter(is_side("shadow")).groupBy(PARTITION_COLUMN, *keys).count()
    facts = fact_list(spec, False)
    categories = [i for i, f in enumerate(facts) if f.kind == "category"]
    agreed = {t: frozenset(plan.compared) for t in texts}  # nothing changed: live's rows alone
    category_rows = rows_to_count(union, list(spec.categories), agreed)
    return {
        "grouping": lambda: by_side.agg(*grouping).collect(),
        "stats": lambda: by_side.agg(*stats).collect(),
        "prints": lambda: by_side.agg(F.count(F.lit(1)), *fingerprints.aggregations(keys, plan.compared)).collect(),
        "deciles": lambda: profile_job._live_rows(union, every, keys).groupBy(PARTITION_COLUMN).agg(*deciles).collect(),
        "shadow_keys": lambda: per_key.groupBy(PARTITION_COLUMN).agg(F.max("count")).collect(),
        "categories": lambda: _value_rows(category_rows, facts, spec, categories).collect() if categories else [],
    }


def run(name: str, partitions: int, scale: int, rounds: int) -> dict[str, Any]:
    out: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        keys = keys_for(partitions)
        seed_live(workspace(Path(tmp), scale=scale, transform="features_v1"), keys)
        bf = scenario_workspace(Path(tmp), scale, keys, name)
        texts = [bf.scheme.column_text(k) for k in keys]
        log = job_log(bf.spark)

        def timed(label: str, work: Callable[[], Any], keep: bool) -> None:
            mark, t = log.mark(), time.perf_counter()
            work()
            seconds = time.perf_counter() - t
            if keep:
                out.setdefault(label, []).append({"seconds": round(seconds, 2), **log.since(mark).as_dict()})

        for rep in range(rounds + 1):  # the first round warms up
            measurer = tool_measurer(bf, keys)
            timed("tool", lambda m=measurer: m.run(texts), bool(rep))
            for label, work in _parts(measurer, texts).items():
                timed(label, work, bool(rep))
            timed("join", lambda: plain_join(bf, keys), bool(rep))
            timed("fair_limit", lambda: fair_limit(bf, keys), bool(rep))
        sizes = _parquet_bytes(Path(tmp))
    best = {label: min(runs, key=lambda r: r["task_s"]) for label, runs in out.items()}
    return {"rows_per_side": partitions * scale * 200, "parquet_bytes": sizes, "runs": out, "best": best}


def _parquet_bytes(root: Path) -> dict[str, int]:
    """Bytes of Parquet data files per table directory (the table's name), for the cost per TB."""
    sizes: dict[str, int] = {}
    for f in root.rglob("*.parquet"):
        table = next((p.name for p in f.parents if (p / "metadata").is_dir()), str(f.parent))
        sizes[table] = sizes.get(table, 0) + f.stat().st_size
    return sizes


def main(argv: list[str]) -> int:
    ap = scenario_parser("parts-probe", __doc__, partitions=90, scale=225)
    ap.add_argument("--scenario", default="identical", choices=sorted(SCENARIOS))
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    res = {"scenario": "parts-probe", "of": args.scenario, "partitions": args.partitions}
    res |= run(args.scenario, args.partitions, args.scale, args.rounds)
    join = res["best"]["join"]["task_s"]
    lines = [f"{args.scenario} at {res['rows_per_side']:,} rows per side, best task seconds of {args.rounds}"]
    for label, r in res["best"].items():
        lines.append(
            f"  {label:12s} {r['task_s']:7.2f} task s ({r['task_s'] / join:4.2f}x join)  {r['seconds']:6.2f} s"
        )
    return finish(f"parts-probe-{args.scenario}", res, [], lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
