"""`python -m bench SCENARIO [options]`; scenarios: recompute, validate, promote, all."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    scenario, rest = argv[0], argv[1:]
    runners = {
        "recompute": "bench.recompute_bench",
        "validate": "bench.validate_bench",
        "promote": "bench.promote_bench",
    }
    if scenario == "all":
        import subprocess

        # one process per scenario: each needs a fresh Spark session
        codes = [subprocess.call([sys.executable, "-m", "bench", name, *rest]) for name in runners]
        return max(codes)
    if scenario not in runners:
        print(f"unknown scenario {scenario!r}; known: {', '.join(runners)}, all", file=sys.stderr)
        return 2
    import importlib

    return int(importlib.import_module(runners[scenario]).main(rest))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
