"""Benchmarks: seeded data, the tool against naive baselines measured in the same run, JSON
results in bench/results/. Run `python -m bench validate` (see bench/__main__.py)."""
