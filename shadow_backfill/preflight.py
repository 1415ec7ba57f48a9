"""The checks a command makes before it writes anything: exit code 2 means nothing was written.

Two stages. `check_before_engine` needs no engine: the state URL, the transform's module or SQL
file, the partitions asked for, the names the tool gives files and folders. It runs before
Spark starts and before the state store is opened or created, and imports no PySpark (the CLI
calls it before the API is imported). `check_live_table` needs the engine but writes nothing:
the live table exists, its partition column can hold the partitions, the declared schema
changes apply to it. A command runs it before its first write, the state store's included.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import threading
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from shadow_backfill.config import BackfillConfig
from shadow_backfill.errors import ConfigError, TableNotFoundError, UsageError
from shadow_backfill.partitions import PartitionScheme
from shadow_backfill.selection import Selection
from shadow_backfill.sql_guard import check_sql_transform

if TYPE_CHECKING:
    from shadow_backfill.formats.base import TableFormat
    from shadow_backfill.promote import PromotionPlan
    from shadow_backfill.state import StateStore
    from shadow_backfill.table import TableContext
    from shadow_backfill.transform import Transform


class CommandTarget(Protocol):
    """What a command's checks read of the object that runs it (`api.Backfill`): named here so
    the checks do not import the facade that calls them."""

    config: BackfillConfig
    live_checked: bool
    """The live table's checks passed once for this object (a pipeline runs chunk after chunk)."""

    @property
    def table(self) -> TableContext: ...
    @property
    def transform(self) -> Transform: ...
    @property
    def store(self) -> StateStore: ...
    def named_keys(self, partitions: Sequence[str] | None) -> list[str] | None: ...
    def plan_promotion(
        self, partitions: list[str] | None = None, *, allow_warn: bool | None = None
    ) -> PromotionPlan: ...
    def require_live(self) -> None: ...


# The longest name of one file or folder most file systems take (ext4, XFS, APFS, NTFS: 255
# bytes); a longer one fails only when it is written, which may be after live changed.
NAME_MAX = 255
_GRANULARITIES = ("daily", "hourly", "monthly")


def check_before_engine(
    config: BackfillConfig,
    chosen: Selection = Selection(),
    *,
    required: bool = True,
    live: bool = True,
    report_dir: Path | None = None,
    layers: Iterable[str] = (),
) -> None:
    """Every check of a command that needs no engine. `required`: the command needs partitions
    (a range, a list or `partition.values`); else only those given are checked. `live`: it
    recomputes (its transform is checked). `report_dir`: the folder a command writes its report
    to at its end, and `layers` the folders in it."""
    from shadow_backfill.state.store import parse_state_url  # SQLAlchemy: not for every import

    parse_state_url(config.state_url)
    check_shadow_not_under_live(config.live_table, config.shadow)
    if live:
        check_transform_findable(config)
    if required or chosen.given:
        check_keys(config, chosen.start, chosen.end, chosen.partitions)
    if report_dir is not None:
        check_report_folder(report_dir, layers)


def check_shadow_not_under_live(live: str, shadow: str) -> None:
    """A shadow named under the live table (`db.events.v2` for `db.events`) lies inside it in a
    catalog whose namespaces are folders, and where the storage places a table not yet created
    is known only once it is: so the name alone refuses it, before anything is written."""
    if "/" not in live and shadow.lower().replace("`", "").startswith(live.lower().replace("`", "") + "."):
        raise ConfigError(
            f"shadow table {shadow!r} lies inside the live table {live!r}: it is named under it "
            "(choose a shadow apart from live)"
        )


def check_keys(
    config: BackfillConfig, start: str | None, end: str | None, partitions: Sequence[str] | None
) -> list[str]:
    """The partitions asked for, as the config's scheme reads them; refused (impossible, reversed,
    too many, hostile text) only if no scheme the live table could settle on reads them: a
    granularity the config leaves out may be read from a hidden transform of live's column,
    so each is tried then, and the live table's settles it once the engine has read it."""
    spec = config.partition
    explicit = "granularity" in spec.model_fields_set
    candidates = [spec.granularity] + ([] if explicit else [g for g in _GRANULARITIES if g != spec.granularity])
    first: UsageError | None = None
    for granularity in candidates:
        try:
            scheme = PartitionScheme.from_spec(spec.model_copy(update={"granularity": granularity}))
            return scheme.select(start=start, end=end, partitions=partitions, default=spec.values)
        except UsageError as exc:
            first = first or exc
    assert first is not None
    raise first


def check_transform_findable(config: BackfillConfig) -> None:
    """The transform's module can be found, or its SQL file exists and takes `:partition`. The
    module is found, not imported: a module that opens a Spark session when imported must not
    open one before the tool's own (its import, and a missing attribute, come with the engine)."""
    spec = config.transform
    if spec.sql is not None:
        path = config.resolve(spec.sql)
        if not path.is_file():
            raise ConfigError(f"transform.sql: file {str(path)!r} does not exist")
        check_sql_transform(path.read_text(errors="replace"), path.name)
        return
    assert spec.function is not None
    module = spec.function.partition(":")[0]
    for p in reversed(spec.python_path):
        folder = str(config.resolve(p))
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        found = module in sys.modules or importlib.util.find_spec(module) is not None
    except Exception as exc:  # a parent package that fails to import, or an empty name
        raise ConfigError(f"transform.function: cannot import module {module!r}: {exc}") from None
    if not found:
        raise ConfigError(f"transform.function: cannot import module {module!r}: No module named {module!r}")
    spec_of = sys.modules[module].__spec__ if module in sys.modules else importlib.util.find_spec(module)
    origin = getattr(spec_of, "origin", None)
    if origin and origin.endswith(".py") and Path(origin).is_file():
        check_function_source(Path(origin), spec.function)


_AST_LOCK = threading.Lock()


def parse_alone(path: Path) -> ast.Module:
    """`ast.parse`, one thread at a time. CPython 3.11 keeps the depth counter of the AST it
    builds in per-interpreter state: when a garbage collection during the build runs a finaliser
    that lets another thread parse too, both builds fail with `SystemError: AST constructor
    recursion depth mismatch` (CPython gh-106905). A pipeline checks its layers' transforms from
    its worker threads, so every parse of ours takes this lock."""
    source = path.read_bytes()
    with _AST_LOCK:
        return ast.parse(source, filename=str(path))


def check_function_source(path: Path, target: str) -> None:
    """The transform's function read from its module's source, not imported (see above): a
    syntax error, a name the module does not define, a function that cannot take `(spark,
    partitions)`. It refuses only what the import would refuse too: a source that may bind names
    in a way not read here (a star import, a module `__getattr__`, `global`, `globals()`,
    `setattr`, `exec`, `sys.modules`), a nested attribute, or a decorated function (the
    decorator may change the signature) is left to the import, with the engine."""
    module, _, attr = target.partition(":")
    try:
        tree = parse_alone(path)
    except (SyntaxError, ValueError) as exc:
        raise ConfigError(f"transform.function: cannot import module {module!r}: {type(exc).__name__}: {exc}") from None
    if "." in attr or _binds_dynamically(tree):
        return
    binders = [node for node in tree.body if attr in _names_bound(node)]
    if not binders:
        raise ConfigError(f"transform.function: module {module!r} has no attribute {attr!r}")
    node = binders[0]
    if len(binders) == 1 and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.decorator_list:
        args = node.args
        positional = len(args.posonlyargs) + len(args.args)
        if positional < 2 and args.vararg is None:
            raise ConfigError(
                f"transform.function: {target!r} takes {positional} positional parameter(s): a transform "
                "is called as fn(spark, partitions)"
            )


def _names_bound(node: ast.stmt) -> set[str]:
    """The module-level names one top-level statement may bind: a def, a class, an import, and
    any name stored anywhere under it (assignments, `for`/`with` targets, `except ... as`,
    `match` captures, walrus, defs under `if`/`try`). A name bound only inside a function's body
    counts too: reading too many names lets the import judge, reading too few would refuse a
    module that imports."""
    names: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(n.name)
        elif isinstance(n, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
    return names


# Ways a module binds names that reading its statements does not see.
_DYNAMIC_CALLS = frozenset({"globals", "setattr", "exec", "eval", "vars", "__import__"})


def _binds_dynamically(tree: ast.Module) -> bool:
    """Whether the module may bind a name its statements do not show: a star import, a module
    `__getattr__`, `global` in a function, `globals()`/`setattr`/`exec`/`vars`, or `sys.modules`."""
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
            return True
        if isinstance(n, ast.Global) or (isinstance(n, ast.FunctionDef) and n.name == "__getattr__"):
            return True
        if isinstance(n, ast.Name) and n.id in _DYNAMIC_CALLS:
            return True
        if isinstance(n, ast.Attribute) and n.attr == "modules":
            return True
    return False


def check_name(name: str, what: str) -> None:
    """A name the tool makes a file or folder of fits one: not empty, no `/` or NUL, not `.` or
    `..`, at most NAME_MAX bytes."""
    size = len(os.fsencode(name))
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ConfigError(f"{what} {name!r} cannot be a file name")
    if size > NAME_MAX:
        raise ConfigError(f"{what} {name[:40]!r}... is {size} bytes long: a file name holds at most {NAME_MAX}")


def check_report_folder(folder: Path, layers: Iterable[str] = ()) -> None:
    """The report folder (and a pipeline's layer folders in it) can be made where it is asked
    for: every part of its path a name that fits, and none of them an existing file."""
    for part in folder.parts:
        if part not in (folder.anchor, "..", "."):
            check_name(part, "report folder name")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"report folder {str(folder)!r} is a file, not a folder")
    for key in layers:
        inner = folder / key
        if inner.exists() and not inner.is_dir():
            raise UsageError(f"report folder {str(inner)!r} is a file, not a folder")


def check_live_table(
    config: BackfillConfig, fmt: TableFormat, scheme: PartitionScheme, carried: Collection[str]
) -> None:
    """What the engine tells before any write: live exists, its partition column holds the
    configured partitions, and the declared schema changes apply to it (`carried`: the
    columns the tool's promotions added, from the state store)."""
    from shadow_backfill.schema import check_declared_changes  # PySpark: with the engine only

    if not fmt.exists(config.live_table):
        raise TableNotFoundError(f"live table {config.live_table!r} does not exist ({config.format})")
    live_schema = fmt.schema(config.live_table)
    types = {f.name: f.dataType.simpleString() for f in live_schema.fields}
    if scheme.column not in types:
        raise ConfigError(
            f"partition.column {scheme.column!r} is not a column of live table {config.live_table} "
            f"(its columns: {', '.join(types)})"
        )
    scheme.check_column_type(types[scheme.column], config.live_table)
    check_declared_changes(config, live_schema, carried)


def check_before_writing(
    bf: CommandTarget,
    chosen: Selection = Selection(),
    *,
    required: bool = True,
    live: bool = True,
) -> None:
    """A command's every check, before its first write (the state store's included): those that
    need no engine, then the partitions as live's scheme reads them and (`live`: a command that
    recomputes) the live table and the transform. The live table's checks run once per object: a pipeline runs a layer's
    recompute chunk after chunk."""
    from shadow_backfill.state.store import reading  # SQLAlchemy: not for every import

    check_before_engine(bf.config, chosen, required=required, live=live)
    table = bf.table  # the scheme read from the live table (reads only)
    if required or chosen.given:
        table.scheme.select(
            start=chosen.start, end=chosen.end, partitions=chosen.partitions, default=bf.config.partition.values
        )
    elif not live:  # every partition recomputed: none is a usage error, told before the store exists
        store = reading(bf.config.state_url)
        try:
            if not store.records(bf.config.shadow):
                raise UsageError(f"nothing to validate: no partition of {bf.config.shadow} has been recomputed")
        finally:
            store.close()
    if not live or bf.live_checked:
        return
    store = reading(bf.config.state_url)  # never created here: a new store has nothing carried
    try:
        carried = store.carried_columns(table.live_table)
    finally:
        store.close()
    check_live_table(bf.config, table.fmt, table.scheme, carried)
    table.fmt.check_distinct(table.live_table, table.shadow_table)
    bf.transform  # noqa: B018 - imported and checked (a missing attribute, a SQL file without :partition)
    bf.live_checked = True


def check_version(fmt: TableFormat, table: str, version: int) -> None:
    """A version to restore is one of the table's (before a rollback opens the state store)."""
    if version not in {c.version for c in fmt.history(table)}:
        raise UsageError(f"version {version} is not in the history of {table}")


# ---- each writing command's checks, run before it takes its table's hold (`writes_table`) ----
# They take the command's own arguments; what they do not need they ignore.


def run_checks(
    bf: CommandTarget, start: str | None = None, end: str | None = None, partitions: Any = None, **_: Any
) -> None:
    check_before_writing(bf, Selection(start, end, partitions))


def backfill_checks(
    bf: CommandTarget,
    start: str | None = None,
    end: str | None = None,
    partitions: Any = None,
    *,
    report_dir: str | Path | None = None,
    **_: Any,
) -> None:
    """The report folder is written last, after live changed: its name is checked first."""
    check_report_folder(Path(report_dir or bf.config.base_dir / "report"))
    check_before_writing(bf, Selection(start, end, partitions))


def promote_checks(bf: CommandTarget, partitions: Sequence[str] | None = None, **_: Any) -> None:
    bf.named_keys(partitions)  # named partitions as live's scheme reads them


def approve_checks(
    bf: CommandTarget, partitions: Sequence[str], *, reason: str, by: str | None = None, **_: Any
) -> None:
    """`approve` refuses (exit 2, nothing written) a blank reason and any named partition not
    held for approval, read from the store as it is (a missing store is not created)."""
    from shadow_backfill.state import reading  # SQLAlchemy: not for every import
    from shadow_backfill.workflow import check_approval

    keys = bf.named_keys(partitions) or []
    store = reading(bf.config.state_url)
    try:
        verdicts = {k: v.verdict for k, v in store.verdicts(bf.config.shadow).items()}
    finally:
        store.close()
    check_approval(keys, verdicts, reason, by)


def canary_checks(
    bf: CommandTarget, n: int, partitions: Sequence[str] | None = None, *, allow_warn: bool | None = None, **_: Any
) -> None:
    """A canary of every partition would be an unchecked promotion of them all: refused before
    anything is written. Named partitions are the whole promotion; without names the count
    comes from the promotion's plan (read only), unless a canary a kill left unchecked is
    pending: its rest follows it, and no new canary is taken."""
    from shadow_backfill.state.canaries import too_few  # SQLAlchemy: not for every import

    keys = bf.named_keys(partitions)
    if keys is not None and n >= len(keys):
        raise too_few(n, len(keys))
    if keys is None and not bf.store.unchecked_canaries(bf.config.live_table):
        plan = bf.plan_promotion(None, allow_warn=allow_warn)
        if plan.partitions and n >= len(plan.partitions):
            raise too_few(n, len(plan.partitions))


def rollback_checks(
    bf: CommandTarget, promotion_id: str | None = None, *, to_version: int | None = None, **_: Any
) -> None:
    check_rollback_asked(promotion_id, to_version)
    bf.require_live()
    if to_version is not None:
        check_version(bf.table.fmt, bf.table.live_table, to_version)
    if promotion_id is not None:
        check_promotion_known(bf, promotion_id)


def check_rollback_asked(promotion_id: str | None, to_version: int | None) -> None:
    """A rollback names one thing to undo: told before the engine starts (the CLI) and again by
    the API's own checks."""
    if (promotion_id is None) == (to_version is None):
        raise UsageError("give exactly one of --promotion ID or --to-version V")


def check_promotion_known(bf: CommandTarget, promotion_id: str) -> None:
    """An id in neither the state store (read as it is) nor live's own audit trail is a usage
    error told before the store is opened: the rollback records the commits a crash kept from
    the store before it looks the id up, and the id may be one of those, so both are read."""
    from shadow_backfill.ledger import record_from_commit  # PySpark: the engine has started
    from shadow_backfill.state.store import reading  # SQLAlchemy: not for every import

    store = reading(bf.config.state_url)
    try:
        known = store.promotion(promotion_id) is not None
    finally:
        store.close()
    if known:
        return
    for commit in bf.table.fmt.history(bf.table.live_table):
        rec = record_from_commit(commit, bf.table.live_table)
        if rec is not None and rec.id == promotion_id:
            return
    raise UsageError(f"unknown promotion id {promotion_id!r} for {bf.table.live_table} (see `shadow-backfill history`)")
