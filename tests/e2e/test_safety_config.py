"""Config mistakes that used to slip through or end in a traceback: a key given twice in the
YAML, a directory where a file belongs, and `keys` naming a column the tables lack. Each must
be one `error:` line naming the culprit, exit code 2, and nothing written (no table version, no
verdict). The CLI cases run on Delta via Sail, as the bad-input catalogue does."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import END, START, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill import ConfigError
from shadow_backfill.cli import app
from shadow_backfill.config import load_config
from shadow_backfill.validate.suites import load_suite


@dataclass
class Case:
    name: str
    args: list[str]  # "{cfg}" is the config path, "{dir}" the folder it is in
    words: str
    recomputed: bool = False
    edit: dict[str, Any] = field(default_factory=dict)  # top-level config keys replaced after setup
    text: Any = None  # (config text) -> config text, applied last


def _duplicate(key: str, value: str, after: str | None = None) -> Any:
    """Repeat `key` at the top level, or inside the mapping that starts at line `after`."""

    def edit(text: str) -> str:
        if after is None:
            return f"{text}{key}: {value}\n"
        assert f"\n{after}\n" in text, text
        return text.replace(f"\n{after}\n", f"\n{after}\n  {key}: {value}\n", 1)

    return edit


RUN = ["run", "{cfg}", "--start", START, "--end", END]
CASES = [
    Case("duplicate top-level key", RUN, "duplicate key 'live_table' on line", text=_duplicate("live_table", "x")),
    Case("duplicate nested key", RUN, "duplicate key 'retries' on line", text=_duplicate("retries", "5", "run:")),
    Case("config path is a directory", ["run", "{dir}", "--start", START, "--end", END], "is a directory, not a file"),
    Case(
        "suite path is a directory",
        ["validate", "{cfg}"],
        "expectation suite '{dir}' is a directory, not a file",
        recomputed=True,
        edit={"expectations": ["{dir}"]},
    ),
    Case(
        "key column missing",
        ["validate", "{cfg}"],
        "keys: column 'ghost_key' does not exist in table '{shadow}'",
        recomputed=True,
        edit={"keys": ["id", "ghost_key"]},
    ),
]


def _versions(bf: Any) -> tuple[Any, ...]:
    fmt = bf.table_format
    return tuple(fmt.current_version(t) if fmt.exists(t) else None for t in (bf.live_table, bf.shadow_table))


# once per engine (the e2e default): the format cannot change it
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_config_mistake_is_one_clear_line(make: MakeBackfill, case: Case) -> None:
    bf = make()
    if case.recomputed:
        assert bf.run(START, END).ok
    cfg: Path = bf.config_path  # type: ignore[attr-defined]
    fill = {"{cfg}": str(cfg), "{dir}": str(cfg.parent), "{shadow}": bf.shadow_table}

    def subst(s: str) -> str:
        for k, v in fill.items():
            s = s.replace(k, v)
        return s

    data = yaml.safe_load(cfg.read_text())
    for k, v in case.edit.items():
        data[k] = [subst(x) for x in v] if isinstance(v, list) else v
    text = yaml.safe_dump(data)
    cfg.write_text(case.text(text) if case.text else text)
    before = _versions(bf)

    result = CliRunner().invoke(app, [subst(a) for a in case.args])

    assert result.exit_code == 2, result.output
    assert subst(case.words) in result.output, result.output
    assert "Traceback" not in result.output
    assert result.output.count("error:") == 1, result.output
    assert _versions(bf) == before, "a refused command must not write any table"
    assert bf.verdicts() == [], "a refused validation must not store verdicts"


def test_duplicate_keys_name_key_and_lines(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("spark: {master: 'local[1]', conf: {a: '1', a: '2'}}\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'a' on line 1 \(first given on line 1\)"):
        load_config(cfg)
    cfg.write_text("live_table: a\nformat: delta\n\nlive_table: b\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'live_table' on line 4 \(first given on line 1\)"):
        load_config(cfg)


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    """`<<: *anchor` followed by an override is YAML's way to reuse a block, not a mistake."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "live_table: local.db.events\nformat: iceberg\npartition: {column: ds}\ntransform: {function: 'm:f'}\n"
        "validation:\n  columns:\n    amount: &t {ignore: false, psi: {warn: 0.1}}\n"
        "    price:\n      <<: *t\n      ignore: true\n"
    )
    columns = load_config(cfg).validation.columns
    assert columns["price"].ignore and not columns["amount"].ignore
    assert columns["price"].psi is not None and columns["price"].psi.warn == 0.1


def test_unreadable_files_are_one_line(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_bytes(b"live_table: \xff\xfe\n")
    with pytest.raises(ConfigError, match=r"c\.yaml' is not UTF-8 text"):
        load_config(cfg)
    with pytest.raises(ConfigError, match="is a directory, not a file"):
        load_suite(tmp_path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_suite(tmp_path / "absent.json")
    cfg.write_text("live_table: [oops\n")
    with pytest.raises(ConfigError, match=r"not valid YAML: .*\(line 2, column 1\)$") as err:
        load_config(cfg)
    assert "\n" not in str(err.value)
