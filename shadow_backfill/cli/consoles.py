"""The CLI's two consoles, in a module of their own so every part of the CLI can write to them
without importing the rest (`telling` points `out` at stderr for a `--json` result).

`console` (stderr) carries the one error line, warnings and progress; `out` (stdout) carries
what a command says it did, or, with `--json`, one JSON document and nothing else.
"""

from __future__ import annotations

from rich.console import Console

console = Console(stderr=True, soft_wrap=True, markup=False, highlight=False)
out = Console(soft_wrap=True, markup=False, highlight=False)

__all__ = ["console", "out"]
