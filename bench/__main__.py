"""`python -m bench SCENARIO [options]`; scenarios: validate."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    scenario, rest = argv[0], argv[1:]
    if scenario == "validate":
        from bench.validate_bench import main as run

        return run(rest)
    print(f"unknown scenario {scenario!r}; known: validate", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
