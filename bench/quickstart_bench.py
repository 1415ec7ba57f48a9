"""The README quick start's main job, step by step: `shadow-backfill demo` then `backfill
--start 2024-01-01 --end 2024-02-29` (60 daily partitions x 200 rows): `--engine sail` as the
README runs it (Delta on an embedded Sail server), `--engine spark` on the JVM (Iceberg, the
demo's default).

Each step of the main job (session start, recompute, validate, promote, report, and what
`backfill` does around them: checks, lock, state store) is timed, with the Spark jobs it ran,
their tasks, the seconds Spark was busy with them and the tasks' summed run time (`bench.jobs`).
Wall time well above busy time is driver-side cost (Python, query planning, catalog and state
store calls), which is what a small table feels. Then, warm, validation of 1 partition against
all of them names the step's fixed cost and its cost per partition.

`--cli` also times the two commands as a user runs them (fresh processes, JVM start included).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.common import check, finish, scenario_parser
from bench.jobs import JobLog, NoJobLog, job_log

START = "2024-01-01"
RETAIN = {"spark.ui.retainedJobs": "100000", "spark.ui.retainedStages": "100000"}


# --engine: the demo's format and remote on it
ENGINES = {"sail": ("delta", "sail"), "spark": ("iceberg", None)}


def write_demo(directory: Path, days: int, engine: str) -> Path:
    """The demo's files, with the status store told to keep every job (for the counts)."""
    from shadow_backfill.demo import write_demo as demo_files

    fmt, remote = ENGINES[engine]
    cfg_path = demo_files(directory, fmt, days, remote)
    data = yaml.safe_load(cfg_path.read_text())
    data["spark"]["conf"].update(RETAIN)
    cfg_path.write_text(yaml.safe_dump(data, sort_keys=False))
    return cfg_path


class Steps:
    """Wall time and Spark jobs per named step."""

    def __init__(self, log: JobLog | NoJobLog) -> None:
        self.log = log
        self.rows: dict[str, dict[str, Any]] = {}

    profile: Path | None = None  # where to write a cProfile of the validate step

    def timed(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            mark, t = self.log.mark(), time.perf_counter()
            try:
                if name == "validate" and self.profile is not None:
                    import cProfile

                    with cProfile.Profile() as prof:
                        out = fn(*args, **kwargs)
                    prof.dump_stats(self.profile)
                    return out
                return fn(*args, **kwargs)
            finally:
                wall, stats = time.perf_counter() - t, self.log.since(mark).as_dict()
                row = self.rows.setdefault(name, {"calls": 0, "wall_s": 0.0})
                row["calls"] += 1
                for field, value in {"wall_s": wall, **stats}.items():
                    row[field] = round(row.get(field, 0) + value, 2)

        return wrapper


def main_job(cfg_path: Path, days: int, profile: Path | None = None) -> tuple[dict[str, Any], Any]:
    """Session start, the demo's seed, then `backfill` with each step wrapped."""
    from shadow_backfill import Backfill
    from shadow_backfill.config import load_config
    from shadow_backfill.demo import demo_range, seed_live_table

    t = time.perf_counter()
    bf = Backfill(load_config(cfg_path))
    bf.spark.range(1).count()
    session_s = time.perf_counter() - t
    seed_live_table(cfg_path, days)

    bf = Backfill(load_config(cfg_path), bf.spark)
    steps = Steps(job_log(bf.spark))
    steps.profile = profile
    for step, method in (("recompute", "run"), ("validate", "validate"), ("promote", "promote"), ("report", "report")):
        setattr(bf, method, steps.timed(step, getattr(bf, method)))
    job = steps.timed("backfill", bf.backfill)
    result = job(*demo_range(days), report_dir=str(cfg_path.parent / "report"))
    total = steps.rows.pop("backfill")
    inner = sum(r["wall_s"] for r in steps.rows.values())
    steps.rows["around (checks, lock, state)"] = {"wall_s": round(total["wall_s"] - inner, 2)}
    if "jobs" in total:
        steps.rows["around (checks, lock, state)"]["jobs"] = total["jobs"] - sum(
            r["jobs"] for r in steps.rows.values() if "jobs" in r
        )
    verdicts = [v.verdict for v in result.validation.verdicts]
    return {
        "session_s": round(session_s, 2),
        "backfill": total,
        "steps": steps.rows,
        "verdicts": {v: verdicts.count(v) for v in ("pass", "warn", "fail")},
    }, bf


def fixed_cost(bf: Any, days: int) -> dict[str, Any]:
    """Warm validation of 1 partition and of all: the fixed cost and the cost per partition."""
    from shadow_backfill import Backfill
    from shadow_backfill.demo import demo_range

    bf = Backfill(bf.config, bf.spark)  # not the main job's, whose steps are wrapped
    log, keys = job_log(bf.spark), bf.scheme.expand(*demo_range(days))
    out: dict[str, Any] = {}
    for n in (1, len(keys), 1, len(keys)):  # twice each: the second is the warm figure
        mark, t = log.mark(), time.perf_counter()
        bf.validate(partitions=keys[:n])
        out[f"validate_{n}"] = {"wall_s": round(time.perf_counter() - t, 2), **log.since(mark).as_dict()}
    one, all_ = out["validate_1"]["wall_s"], out[f"validate_{len(keys)}"]["wall_s"]
    out["per_partition_s"] = round((all_ - one) / (len(keys) - 1), 3)
    return out


def cli_times(workdir: Path, end: str, engine: str) -> dict[str, float]:
    """The two quick-start commands as a user runs them, each a fresh process."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    cli = [sys.executable, "-m", "shadow_backfill.cli"]
    out: dict[str, float] = {}
    workdir.mkdir(parents=True, exist_ok=True)
    for name, args in (
        ("demo", ["demo", "demo/", "--no-run", "--format", ENGINES[engine][0], *_remote(engine)]),
        ("backfill", ["backfill", "demo/backfill.yaml", "--start", START, "--end", end]),
    ):
        t = time.perf_counter()
        subprocess.run([*cli, *args], cwd=workdir, env=env, capture_output=True, check=False)
        out[f"{name}_s"] = round(time.perf_counter() - t, 2)
    return out


def _remote(engine: str) -> list[str]:
    remote = ENGINES[engine][1]
    return ["--remote", remote] if remote else []


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str]) -> int:
    from shadow_backfill.demo import demo_range

    ap = scenario_parser("quickstart", __doc__, partitions=60, scale=1)
    ap.add_argument("--cli", action="store_true", help="also time the two commands in fresh processes")
    ap.add_argument("--profile", type=Path, default=None, help="write a cProfile of the validate step here")
    ap.add_argument("--no-warm", action="store_true", help="skip the warm 1-vs-all validation runs")
    ap.add_argument("--engine", choices=sorted(ENGINES), default="sail", help="sail: as the README runs it")
    args = ap.parse_args(argv)
    before = load()
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        cfg_path = write_demo(Path(tmp) / "demo", args.partitions, args.engine)
        old = Path.cwd()
        os.chdir(cfg_path.parent)  # the demo's transform module is found relative to the config
        try:
            res, bf = main_job(cfg_path, args.partitions, args.profile)
            res["warm"] = {} if args.no_warm else fixed_cost(bf, args.partitions)
            bf.spark.stop()
        finally:
            os.chdir(old)
        if args.cli:
            res["cli"] = cli_times(Path(tmp) / "cli", demo_range(args.partitions)[1], args.engine)
    res = {
        "scenario": "quickstart",
        "engine": args.engine,
        "partitions": args.partitions,
        "rows_per_partition": 200,
        **res,
    }
    res["load"] = {"before": before, "after": load()}
    validate_s = res["steps"]["validate"]["wall_s"]
    job_s = res["session_s"] + res["backfill"]["wall_s"]
    checks = [
        check("quickstart: main job (session + backfill) s", round(job_s, 1), "<=", 30),
        check("quickstart: validate 60 partitions s", validate_s, "<=", 10),
    ]
    lines = [f"quick start main job, {args.partitions} partitions x 200 rows   load: {res['load']['after']}"]
    lines.append(f"  {'step':30s} {'wall s':>7s} {'jobs':>6s} {'tasks':>6s} {'busy s':>7s} {'task s':>7s}")
    lines.append(f"  {'session start':30s} {res['session_s']:7.2f}")
    for name, r in res["steps"].items():
        lines.append(
            f"  {name:30s} {r['wall_s']:7.2f} {r.get('jobs', '-'):>6} {r.get('tasks', '-'):>6} "
            f"{r.get('busy_s', '-'):>7} {r.get('task_s', '-'):>7}"
        )
    for name, r in res["warm"].items():
        lines.append(f"  warm {name:25s} {r}")
    if "cli" in res:
        lines.append(f"  cli: {res['cli']}")
    return finish("quickstart" if args.engine == "spark" else f"quickstart-{args.engine}", res, checks, lines, args.out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
