"""The scale curve: validation, recompute and promotion at growing data sizes, each against its
limit measured in the same process on the same tables; and validation's scenarios
(`bench/scenarios.py`: shadow identical to live, the demo's logic change declared, every column
changed, and many small partitions), each against the fair limit, a plain PySpark join and
datacompy.

- validate: `Backfill.validate` against the **fair limit**, one grouped pass over shadow and
  live that reads every compared column (rows, nulls, min, max and, for numbers, sum per column,
  per partition and side), and against the cheaper scan (rows and one mean) kept as a second
  reference; the naive loop (GX plus drift per partition) on a few partitions, extrapolated.
- recompute: `Backfill.run` against one bulk overwrite of the same range into a table of its own.
- promote: `Backfill.promote` against one plain overwrite of the same partitions into a copy of live.

Validation and recompute run twice, taking turns with their baseline, and the best of each is
kept (this machine's runs of the same query differ by up to 30%); promotion runs once (a second
promotion would have nothing to promote). Each scale runs in a fresh process (its own Spark
session and JVM), so the driver's peak memory (Python ru_maxrss, driver JVM VmHWM) is that
scale's. Results: bench/results/scale.json, and a plot of seconds against rows per side
(bench/results/scale.svg; needs matplotlib, the `bench` extra).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, check, finish, keys_for, seed_live, workspace
from bench.memory_bench import _driver_jvm_peak_mb
from bench.scenarios import SCENARIOS, measure, scenario_workspace
from bench.validate_bench import SUITE, cheap_scan, fair_limit, run_fast, run_naive

ROWS_PER_SCALE = 200  # entities per partition per scale step (the demo's generator)
REPEATS = 2  # runs of the tool and of its baseline, taking turns; the best of each is kept


def _recompute(bf: Any, keys: list[str]) -> dict[str, float]:
    """Best of two runs each, the tool and the bulk write taking turns, so neither is measured
    on a colder JVM than the other (a first full-size run here was up to 25% slower than the
    second, for the tool and its baseline alike)."""
    from shadow_backfill.demo import features

    fmt, spark = bf.table_format, bf.spark
    values = [bf.scheme.value(k) for k in keys]
    bulk = "local.bench.features_bulk"
    fmt.create(bulk, features.features_v2(spark, values[:1]).schema, [bf.scheme.column])
    bf.run(partitions=keys[:2])  # warm-up: JVM code paths for both alike
    tool, plain = [], []
    for _ in range(REPEATS):
        t = time.perf_counter()
        assert bf.run(partitions=keys, force=True).ok
        tool.append(time.perf_counter() - t)
        t = time.perf_counter()
        fmt.overwrite_partitions(bulk, features.features_v2(spark, values), keys)
        plain.append(time.perf_counter() - t)
    return {"recompute_s": min(tool), "bulk_overwrite_s": min(plain)}


def _validate(bf: Any, keys: list[str]) -> dict[str, Any]:
    """Best of two runs each, validation and the fair limit taking turns (as `_recompute`);
    the verdicts of the last run."""
    runs, fair = [], []
    for _ in range(REPEATS):
        seconds, verdicts, _ = run_fast(bf, keys)
        runs.append(seconds)
        fair.append(fair_limit(bf, keys))
    counts = {v: sum(1 for x in verdicts.values() if x == v) for v in ("pass", "warn", "fail")}
    return {"validate_s": min(runs), "fair_limit_s": min(fair), "verdicts": counts}


def _promote(bf: Any, keys: list[str]) -> dict[str, float]:
    fmt = bf.table_format
    plain = "local.bench.features_plain"
    seed_live(bf, keys, table=plain)
    shadow_version = fmt.current_version(bf.shadow_table)

    def plain_overwrite(promoted: list[str]) -> float:
        t = time.perf_counter()
        fmt.overwrite_partitions(plain, fmt.read_partitions(bf.shadow_table, promoted, shadow_version), promoted)
        return time.perf_counter() - t

    # Untimed: the first write of a size warms the JVM's write path (up to 25% faster the second
    # time), and the baseline used to run after the tool, on the path the tool had warmed.
    plain_overwrite(keys)
    t = time.perf_counter()
    _, rec = bf.promote()
    tool = time.perf_counter() - t
    assert rec is not None
    promoted = sorted(rec.partitions)
    return {"promote_s": tool, "plain_overwrite_s": plain_overwrite(promoted), "promoted": len(promoted)}


def _scenarios(workdir: Path, scale: int, keys: list[str], names: list[str], datacompy: bool) -> dict[str, Any]:
    """Each scenario's shadow recomputed into a table of its own beside the same live table,
    then validated against its baselines (`scenarios.measure`)."""
    out = {}
    for name in names:
        bf = scenario_workspace(workdir, scale, keys, name)
        bf.validate(partitions=keys[:5])  # warm-up: this shadow's first reads
        out[name] = measure(bf, keys, datacompy=datacompy)
    return out


def child(
    partitions: int, scale: int, naive_partitions: int, names: list[str], full: bool, datacompy: bool = True
) -> dict[str, Any]:
    """One scale, in this process: seed, then (with `full`) recompute, validate (and its
    references) and promote; then the validation scenarios `names`. The driver's peak memory
    is recorded either way: what reaches it must grow with partitions x columns, not rows."""
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        (Path(tmp) / "suite.json").write_text(json.dumps(SUITE))
        bf = workspace(Path(tmp), scale=scale, transform="features_v2", extra={"expectations": ["suite.json"]})
        keys = keys_for(partitions)
        seed_live(bf, keys)
        out: dict[str, Any] = {"scale": scale, "rows_per_side": partitions * ROWS_PER_SCALE * scale}
        if not full:
            out["scenarios"] = _scenarios(Path(tmp), scale, keys, names, datacompy)
            out["driver_jvm_peak_mb"] = _driver_jvm_peak_mb()
            bf.spark.stop()
            out["driver_python_peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
            return out
        out.update(_recompute(bf, keys))
        run_fast(bf, keys[:5])  # warm-up: JVM code paths and GX import
        run_naive(bf, keys[:1])
        out.update(_validate(bf, keys))
        out["cheap_scan_s"] = cheap_scan(bf, keys)
        naive_s, _ = run_naive(bf, keys[:naive_partitions])
        out["naive_s"] = naive_s * len(keys) / naive_partitions
        out.update(_promote(bf, keys))
        out["scenarios"] = _scenarios(Path(tmp), scale, keys, names, datacompy)
        out["driver_jvm_peak_mb"] = _driver_jvm_peak_mb()
        bf.spark.stop()
    out["driver_python_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ratios = {
        "validate_to_fair_limit": out["validate_s"] / out["fair_limit_s"],
        "validate_to_cheap_scan": out["validate_s"] / out["cheap_scan_s"],
        "recompute_to_bulk": out["recompute_s"] / out["bulk_overwrite_s"],
        "promote_to_plain": out["promote_s"] / out["plain_overwrite_s"],
    }
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in {**out, **ratios}.items()}


Line = tuple[list[float], str, str]  # (seconds per run, matplotlib style, label)


def _loglog(path: Path, rows: list[int], lines: list[Line], xlabel: str, title: str) -> Path | None:
    """Seconds against rows per side, log-log, as an SVG at `path`; None when matplotlib is not
    installed (the `bench` extra)."""
    try:
        import matplotlib

        matplotlib.use("svg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for values, style, label in lines:
        ax.plot(rows, values, style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("seconds")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot(runs: list[dict[str, Any]], path: Path) -> Path | None:
    """The tool, the fair limit and the naive loop for validation, and recompute against its
    bulk limit."""
    series = [
        ("validate_s", "validate (tool)", "-o"),
        ("fair_limit_s", "fair limit: one grouped pass, every column", "--o"),
        ("naive_s", "naive loop (GX + drift per partition)", ":o"),
        ("recompute_s", "recompute (tool)", "-s"),
        ("bulk_overwrite_s", "one bulk overwrite", "--s"),
    ]
    lines = [([r[key] for r in runs], style, label) for key, label, style in series]
    title = "shadow_backfill at scale (2 cores, one process per scale)"
    return _loglog(path, [r["rows_per_side"] for r in runs], lines, "rows per side", title)


TARGETS = {"identical": 1.5, "logic": 2.0, "every": 3.0}  # validate / fair limit, largest scale
SMALL_TARGET = 3.0  # the logic change over many small partitions
# validate / the plain join a user would write instead (issue 63), largest scale and small partitions
JOIN_TARGETS = {"identical": 1.2, "logic": 2.0, "every": 2.5}
SMALL_JOIN_TARGET = 2.5


def _child(args: argparse.Namespace, partitions: int, scale: int, names: list[str], full: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.scale_bench", "--child", str(scale), "--partitions", str(partitions)]
    cmd += ["--naive-partitions", str(args.naive_partitions), "--scenarios", ",".join(names)]
    cmd += [] if full else ["--scenarios-only"]
    cmd += [] if args.datacompy else ["--no-datacompy"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:  # the child's own error, not only its exit status
        tail = [line for line in done.stderr.splitlines() if "WARN" not in line][-20:]
        raise SystemExit(f"scale {scale} x {partitions} partitions failed:\n" + "\n".join(tail))
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _scenario_checks(runs: list[dict[str, Any]], small: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The targets of the scenarios: each ratio to the fair limit at the largest scale, its
    growth from 180,000 rows per side (scale 10) on, and at every scale the tool faster than
    datacompy, its counts the plain join's and its verdicts the reference's."""
    last, checks = runs[-1], []
    first = next((r for r in runs if r["scale"] >= 10), None)
    for name, target in TARGETS.items():
        if name not in last["scenarios"]:
            continue
        ratio = last["scenarios"][name]["to_fair_limit"]
        checks.append(check(f"{name}: validate / fair limit, largest", ratio, "<=", target))
        joined = last["scenarios"][name]["to_plain_join"]
        checks.append(check(f"{name}: validate / plain join, largest", joined, "<=", JOIN_TARGETS[name]))
        if first is not None and first is not last:
            growth = round(ratio / first["scenarios"][name]["to_fair_limit"], 2)
            checks.append(check(f"{name}: ratio growth, scale {first['scale']} -> largest", growth, "<=", 1.1))
            growth = round(joined / first["scenarios"][name]["to_plain_join"], 2)
            checks.append(check(f"{name}: join ratio growth, scale {first['scale']} -> largest", growth, "<=", 1.1))
    if small is not None:
        ratio = small["scenarios"]["logic"]["to_fair_limit"]
        checks.append(
            check(f"small partitions ({small['partitions']}): validate / fair limit", ratio, "<=", SMALL_TARGET)
        )
        joined = small["scenarios"]["logic"]["to_plain_join"]
        checks.append(
            check(f"small partitions ({small['partitions']}): validate / plain join", joined, "<=", SMALL_JOIN_TARGET)
        )
    for r in [*runs, *([small] if small else [])]:
        for name, m in r["scenarios"].items():
            where = f"{name} at {r['rows_per_side']} rows/side"
            if m["to_datacompy"] is not None:
                checks.append(check(f"{where}: validate / datacompy", m["to_datacompy"], "<", 1.0))
            checks.append(check(f"{where}: counts = plain join", int(m["counts_equal_plain_join"]), ">=", 1))
            checks.append(check(f"{where}: verdicts = reference", int(m["verdicts_equal_reference"]), ">=", 1))
    return checks


def _scenario_lines(runs: list[dict[str, Any]]) -> list[str]:
    lines = ["scenarios: seconds, tool (ratio to the fair limit, to the plain join, to datacompy)"]
    for r in runs:
        for name, m in r["scenarios"].items():
            shape = f"{r['partitions']:>4} x {r['rows_per_side'] // r['partitions']:>6}"
            lines.append(
                f"  {shape} {name:>9}: tool {m['validate_s']:>6} ({m['to_fair_limit']:>4}x fair "
                f"{m['fair_limit_s']}, {m['to_plain_join']:>4}x join {m['plain_join_s']}, "
                f"{m['to_datacompy'] or '-':>4}x datacompy {m['datacompy_s'] or '-'}) verdicts {m['verdicts']}"
            )
            if "tool_task_s" in m:
                steps = ", ".join(f"{k} {v}" for k, v in m.get("tool_task_s_by_step", {}).items())
                lines.append(f"  {'':>13} task seconds: tool {m['tool_task_s']} ({steps}), join {m['join_task_s']}")
    return lines


def _full_lines(runs: list[dict[str, Any]], partitions: int) -> list[str]:
    lines = [f"scale: {partitions} partitions; seconds (ratio to its limit)"]
    head = ("rows/side", 10), ("validate", 16), ("fair", 7), ("cheap", 7), ("recompute", 16), ("promote", 16)
    lines.append("  " + " ".join(f"{name:>{width}}" for name, width in head) + f" {'JVM MB':>7}")
    for r in runs:
        lines.append(
            f"  {r['rows_per_side']:>10} {r['validate_s']:>8} ({r['validate_to_fair_limit']:>4}x) "
            f"{r['fair_limit_s']:>7} {r['cheap_scan_s']:>7} {r['recompute_s']:>8} ({r['recompute_to_bulk']:>4}x) "
            f"{r['promote_s']:>8} ({r['promote_to_plain']:>4}x) {r['driver_jvm_peak_mb']:>7}"
        )
    return lines


def _full_checks(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The growth is judged from scale 10 (below it fixed costs dominate) to the largest scale,
    # with a 10% band for run-to-run noise; with no scale above 10 there is nothing to judge.
    last = runs[-1]
    reference = next((r for r in runs if r["scale"] >= 10), None)
    checks = [check("scale: validate / fair limit, largest", last["validate_to_fair_limit"], "<=", 2)]
    if reference is not None and reference is not last:
        growth = round(last["validate_to_fair_limit"] / reference["validate_to_fair_limit"], 2)
        checks.append(check(f"scale: ratio growth, scale {reference['scale']} -> largest", growth, "<=", 1.1))
    checks.append(check("scale: recompute / bulk, largest", last["recompute_to_bulk"], "<=", 1.3))
    checks.append(check("scale: promote / plain overwrite, largest", last["promote_to_plain"], "<=", 1.2))
    return checks


def plot_scenarios(runs: list[dict[str, Any]], path: Path) -> Path | None:
    """Each scenario's validation, and the baselines measured beside the `logic` scenario (the
    fair limit, the plain join, datacompy)."""
    lines: list[Line] = [
        ([r["scenarios"][name]["validate_s"] for r in runs], "-o", f"tool: {name}") for name in runs[-1]["scenarios"]
    ]
    baselines = [("fair_limit_s", "fair limit"), ("plain_join_s", "plain join"), ("datacompy_s", "datacompy")]
    lines += [
        ([r["scenarios"]["logic"][key] for r in runs], "--s", label)
        for key, label in baselines
        if all(r["scenarios"]["logic"][key] is not None for r in runs)
    ]
    title = "validation by kind of change (2 cores, one process per scale)"
    return _loglog(path, [r["rows_per_side"] for r in runs], lines, "rows per side (90 partitions)", title)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench scale", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=90)
    ap.add_argument("--scales", default="1,10,50,225", help="x 200 rows per partition (225: 4.05 M rows per side)")
    ap.add_argument("--naive-partitions", type=int, default=2, help="partitions the naive loop is timed on")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="validation scenarios run at each scale")
    ap.add_argument("--small", default="365x5", help="partitions x scale of the many-small-partitions run, or none")
    ap.add_argument("--scenarios-only", action="store_true", help="skip recompute, promotion and the naive loop")
    ap.add_argument(
        "--no-datacompy", dest="datacompy", action="store_false", help="leave datacompy out (40 M rows: ~10 min a run)"
    )
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = [n for n in args.scenarios.split(",") if n]
    full = not args.scenarios_only
    if args.child is not None:
        print(
            json.dumps(
                {
                    **child(args.partitions, args.child, args.naive_partitions, names, full, args.datacompy),
                    "partitions": args.partitions,
                }
            )
        )
        return 0

    runs = []
    for scale in [int(s) for s in args.scales.split(",")]:
        runs.append(_child(args, args.partitions, scale, names, full))
        print(f"  scale {scale}: {runs[-1]['rows_per_side']} rows/side done", flush=True)
    small = None
    if args.small != "none" and "logic" in SCENARIOS:
        partitions, scale = (int(x) for x in args.small.split("x"))
        small = _child(args, partitions, scale, ["logic"], False)
    res: dict[str, Any] = {"scenario": "scale", "partitions": args.partitions, "runs": runs, "small": small}
    if "logic" in runs[-1]["scenarios"]:
        drawn = plot_scenarios(runs, (args.out.parent if args.out else RESULTS) / "scenarios.svg")
        res["scenarios_plot"] = drawn.name if drawn else None
    checks, lines = _scenario_checks(runs, small), _scenario_lines(runs + ([small] if small else []))
    if full:
        svg = plot(runs, (args.out.parent if args.out else RESULTS) / "scale.svg")
        res["plot"] = svg.name if svg else None
        checks, lines = _full_checks(runs) + checks, _full_lines(runs, args.partitions) + lines
    return finish("scale", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
