"""Option groups: several options declared once, reaching a command as one typed value.

Typer reads a command's options from its signature, so a group is a decorator that rewrites
the signature: the command's parameter for the group is replaced by the group's options, and
the wrapper builds the value from them. Why: the commands declared the same options dozens of
times, with help texts that drifted apart (`selection.selection_options`, `job.job_options`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
Option = tuple[str, Any, Any]
"""One option of a group: its parameter name, its annotation, and its `typer.Option`."""


def option_group(
    param: str, make: Callable[..., Any], options: Sequence[Option], *, after_argument: bool
) -> Callable[[F], F]:
    """Replace the command's parameter `param` by `options`, and pass it `make(**options)`.
    `after_argument`: list the options in `--help` right after the command's first parameter
    (its config or pipeline argument), else after all its own options."""
    names = [name for name, _, _ in options]

    def decorate(command: F) -> F:
        own = inspect.signature(command, eval_str=True)
        kept = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own.parameters.values() if p.name != param]
        added = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=t) for n, t, d in options]
        params = [*kept[:1], *added, *kept[1:]] if after_argument else [*kept, *added]

        @functools.wraps(command)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = make(**{n: kwargs.pop(n) for n in names if n in kwargs})
            return command(*args, **{param: value}, **kwargs)

        wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params} | {"return": own.return_annotation}
        return wrapper  # type: ignore[return-value]

    return decorate
