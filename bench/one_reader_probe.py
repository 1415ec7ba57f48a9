"""A design probe, not a bench with targets: the key grouping's three readers (counts, bins,
samples) as one reader, the per-key rows sent once through Arrow to numpy (`mapInArrow`),
against the tool's facts job and the plain join, in turns in one process on the `logic`
scenario. `docs/design/validation.md` ("One reader of the per-key rows through Arrow") reads
its figures.

The reader approximates the tool's rules (no NaN, -0.0 or repeated-key subtleties; bins on the
deciles without tolerance); its changed counts must equal the tool's, or the run says so. The
Python workers need numpy: run with `PYSPARK_PYTHON` set to this interpreter.

    PYSPARK_PYTHON=$(which python) python -m bench.one_reader_probe --partitions 90 --scale 225
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import finish, scenario_parser
from bench.jobs import job_log
from bench.scenarios import plain_join
from bench.sizing_bench import build, tool_measurer

TOP = 10  # largest changes kept per partition and column
SCHEMA = (
    "p string, j long, changed long, abs_sum double, abs_n long, abs_max double, "
    "bins_shadow array<long>, bins_live array<long>, top array<double>"
)


def _column(acc: dict[str, Any], s: Any, lv: Any, both: Any, numeric: bool, edges: list[float] | None) -> None:
    """One partition's batch of one column, added to its accumulator."""
    import numpy as np

    if not numeric:
        acc["changed"] += int((both & (s != lv)).sum())
        return
    d = np.abs(s - lv)
    changed = both & ~((d <= 1e-9) | (np.isnan(s) & np.isnan(lv)))
    valued = d[both & ~np.isnan(d)]
    acc["changed"] += int(changed.sum())
    acc["abs_sum"] += float(valued.sum())
    acc["abs_n"] += len(valued)
    acc["abs_max"] = max(acc["abs_max"], float(valued.max()) if len(valued) else 0.0)
    if edges is not None:
        for side, name in ((s, "bins_shadow"), (lv, "bins_live")):
            found = np.searchsorted(np.asarray(edges), side[~np.isnan(side)], side="left")
            acc[name] = (np.asarray(acc[name]) + np.bincount(found, minlength=11)[:11]).tolist()
    top = d[changed]
    if len(top):
        k = min(TOP, len(top))
        acc["top"] = sorted([*acc["top"], *np.partition(top, -k)[-k:].tolist()])[-TOP:]


def reader(numeric: list[bool], edges: dict[str, dict[int, list[float]]]) -> Any:
    """The one reader: per task, every partition's per-key rows counted, binned and ranked."""

    def read(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        accs: dict[tuple[str, int], dict[str, Any]] = {}
        for b in batches:
            p = b.column("p").to_numpy(zero_copy_only=False)
            ns, nl = (b.column(n).to_numpy(zero_copy_only=False) for n in ("__ns", "__nl"))
            for part in np.unique(p):
                here = p == part
                both = (ns[here] > 0) & (nl[here] > 0)
                for j, is_number in enumerate(numeric):
                    s, lv = (b.column(f"__{x}x_{j}").to_numpy(zero_copy_only=False)[here] for x in "sl")
                    empty = {"changed": 0, "abs_sum": 0.0, "abs_n": 0, "abs_max": 0.0, "top": []}
                    acc = accs.setdefault((str(part), j), {**empty, "bins_shadow": [0] * 11, "bins_live": [0] * 11})
                    values = (s.astype("float64"), lv.astype("float64")) if is_number else (s, lv)
                    _column(acc, *values, both, is_number, edges.get(str(part), {}).get(j))
        counts, floats = pa.int64(), pa.float64()
        fields = {"p": pa.string(), "j": counts, "changed": counts, "abs_sum": floats, "abs_n": counts}
        fields |= {"abs_max": floats, "bins_shadow": pa.list_(counts), "bins_live": pa.list_(counts)}
        schema = pa.schema([*fields.items(), ("top", pa.list_(floats))])
        yield pa.RecordBatch.from_pylist([{"p": p, "j": j, **acc} for (p, j), acc in accs.items()], schema=schema)

    return read


def one_reader(measurer: Any, profiles: dict[str, Any], texts: list[str]) -> tuple[float, dict[str, Any], dict]:
    """The grouping and the one reader, after the tool's profile (its deciles and grouped columns)."""
    from pyspark.sql import functions as F

    from shadow_backfill.validate.measure.key_facts import by_key
    from shadow_backfill.validate.measure.plan import PARTITION_COLUMN

    spec = replace(measurer.facts, compared=measurer.grouped)
    numeric = [c in spec.numeric for c in spec.compared]
    edges = {
        t: {j: list(h.edges) for j, c in enumerate(spec.compared) if (h := profiles[t].columns[c].histogram)}
        for t in texts
    }
    values = [f"__{s}x_{j}" for j in range(len(spec.compared)) for s in "sl"]
    per_key = by_key(measurer.union, spec).select(
        F.col(PARTITION_COLUMN).cast("string").alias("p"), "__ns", "__nl", *values
    )
    log = job_log(measurer.union.sparkSession)
    mark, t = log.mark(), time.perf_counter()
    rows = per_key.mapInArrow(reader(numeric, edges), SCHEMA).collect()
    seconds = time.perf_counter() - t
    changed: dict[tuple[str, int], int] = {}
    for r in rows:
        changed[(r.p, r.j)] = changed.get((r.p, r.j), 0) + r.changed
    return seconds, log.since(mark).as_dict(), changed


def run(partitions: int, scale: int, rounds: int) -> dict[str, Any]:
    out: dict[str, list[Any]] = {"tool": [], "one_reader": [], "join": []}
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        bf, keys = build(Path(tmp), partitions, scale)
        texts = [bf.scheme.column_text(k) for k in keys]
        equal = True
        for rep in range(rounds + 1):  # the first round warms up
            measurer = tool_measurer(bf, keys)
            log = job_log(bf.spark)
            mark, t = log.mark(), time.perf_counter()
            profiles = measurer.run(texts)
            tool = {"seconds": round(time.perf_counter() - t, 2), **log.by_site(mark)}
            seconds, stats, changed = one_reader(measurer, profiles, texts)
            want = {
                (t, j): profiles[t].keys.by_column[c].changed for t in texts for j, c in enumerate(measurer.grouped)
            }
            equal = equal and all(changed.get(k, 0) == v for k, v in want.items())
            if rep:
                out["tool"].append(tool)
                out["one_reader"].append({"seconds": round(seconds, 2), **stats})
                out["join"].append(round(plain_join(bf, keys)[0], 2))
    return {"rows_per_side": partitions * scale * 200, "runs": out, "changed_counts_equal": equal}


def main(argv: list[str]) -> int:
    ap = scenario_parser("one-reader-probe", __doc__, partitions=90, scale=225)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    res = {
        "scenario": "one-reader-probe",
        "partitions": args.partitions,
        **run(args.partitions, args.scale, args.rounds),
    }
    lines = [f"one reader through Arrow, logic at {res['rows_per_side']:,} rows per side"]
    for name, runs in res["runs"].items():
        lines.append(f"  {name:10s} {runs}")
    checks = [
        {"name": "one reader: changed counts = the tool's", "value": int(res["changed_counts_equal"]), "target": ">= 1"}
    ]
    checks[0]["ok"] = bool(res["changed_counts_equal"])
    return finish("one-reader-probe", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
