"""Usage errors found while parsing the command line (a value out of range, an unknown or
missing option, a `--canary` a pipeline does not take, an empty `SHADOW_BACKFILL_NOW`) print the
tool's one `error:` line naming the culprit and exit 2, where Typer printed a usage line, a hint
and a box. They are raised before the config is read: no Spark (this tier imports no PySpark),
and nothing is written, not even the state store the config's command would have created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from shadow_backfill.cli.app import app
from shadow_backfill.errors import UsageError
from shadow_backfill.windows import NOW_VARIABLE, check_now

CONFIG = {
    "live_table": "local.db.features",
    "format": "iceberg",
    "partition": {"column": "ds"},
    "transform": {"function": "m:f"},
}
SELECTING = ["run", "validate", "backfill", "pipeline run", "pipeline validate", "pipeline backfill"]
RANGE = ["--start", "2024-01-01", "--end", "2024-01-02"]


def _cases() -> list[pytest.param]:
    cases = []
    for command in SELECTING:
        for value in ("0", "-1"):
            cases.append(
                pytest.param(
                    command, ["--last", value], {}, "invalid value for '--last'", id=f"{command} --last {value}"
                )
            )
        for now in ("", "  "):
            args = ["--last", "1"] if "validate" in command else RANGE
            cases.append(
                pytest.param(
                    command, args, {NOW_VARIABLE: now}, f"{NOW_VARIABLE} is set but empty", id=f"{command} NOW={now!r}"
                )
            )
    for value in ("0", "-1"):
        cases.append(
            pytest.param(
                "promote", ["--canary", value], {}, "invalid value for '--canary'", id=f"promote --canary {value}"
            )
        )
    for command in ("pipeline promote", "pipeline backfill"):
        cases.append(
            pytest.param(command, ["--canary", "1"], {}, "--canary is for one table", id=f"{command} --canary")
        )
    cases += [
        pytest.param(
            "run", ["--max-parallel", "0"], {}, "invalid value for '--max-parallel'", id="run --max-parallel 0"
        ),
        pytest.param("run", ["--lst", "3"], {}, "no such option: --lst", id="unknown option"),
        pytest.param("report", [], {}, "give --report DIR", id="missing option"),
        pytest.param("backfill", ["--last", "many"], {}, "invalid value for '--last'", id="not a number"),
    ]
    return cases


@pytest.mark.parametrize(("command", "args", "env", "words"), _cases())
def test_a_usage_error_is_one_line_exit_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, args: list[str], env: dict[str, str], words: str
) -> None:
    cfg = tmp_path / "backfill.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(NOW_VARIABLE, raising=False)
    result = CliRunner().invoke(
        app, [*command.split(), str(cfg), *args], env={**env, "SHADOW_BACKFILL_LOG_DIR": str(tmp_path / "logs")}
    )
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [result.output.strip()], "exactly one line"
    assert result.output.startswith(f"error: {words}"), result.output
    assert "╭" not in result.output and "Usage:" not in result.output
    assert sorted(os.listdir(tmp_path)) == ["backfill.yaml"], "a usage error writes nothing"


def test_no_args_still_print_the_help() -> None:
    """The one-line form is for errors: `shadow-backfill` alone still prints its help."""
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 2 and "Usage:" in result.output and "error:" not in result.output, result.output


def test_an_empty_now_is_refused_and_an_unset_one_is_the_clock() -> None:
    check_now({})
    check_now({NOW_VARIABLE: "2024-02-10T12:00Z"})
    for blank in ("", " ", "\t"):
        with pytest.raises(UsageError, match=f"{NOW_VARIABLE} is set but empty") as refused:
            check_now({NOW_VARIABLE: blank})
        assert refused.value.exit_code == 2
