"""`python -m bench SCENARIO [options]`.

Scenarios: recompute, validate, promote, memory, budget, gate, scale, quickstart, wide, sizing,
all.

`all` runs every scenario (each in a fresh process: each needs its own Spark session), then
prints every target with its measured ratio from the JSON results in bench/results/."""

from __future__ import annotations

import sys


def print_targets(names: list[str]) -> None:
    import json

    from bench.common import RESULTS

    print(f"\n{'target':48s} {'measured':>9s}  {'goal':>7s}  met")
    for name in names:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            print(f"{name:48s} {'(no result)':>9s}")
            continue
        for c in json.loads(path.read_text()).get("checks", []):
            print(f"{c['name']:48s} {c['value']:>8}x  {c['target']:>7s}  {'yes' if c['ok'] else 'NO'}")


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    scenario, rest = argv[0], argv[1:]
    runners = {
        "recompute": "bench.recompute_bench",
        "validate": "bench.validate_bench",
        "promote": "bench.promote_bench",
        "memory": "bench.memory_bench",
        "budget": "bench.budget_bench",
        "gate": "bench.gate_noise_bench",
        "scale": "bench.scale_bench",
        "quickstart": "bench.quickstart_bench",
        "wide": "bench.wide_bench",
        "sizing": "bench.sizing_bench",
    }
    if scenario == "all":
        import subprocess

        # one process per scenario: each needs a fresh Spark session
        codes = [subprocess.call([sys.executable, "-m", "bench", name, *rest]) for name in runners]
        print_targets(list(runners))
        return max(codes)
    if scenario not in runners:
        print(f"unknown scenario {scenario!r}; known: {', '.join(runners)}, all", file=sys.stderr)
        return 2
    import importlib

    return int(importlib.import_module(runners[scenario]).main(rest))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
