"""`backfill` takes the options `promote` and `run` have: `--canary N` and `--allow-warn`
override the config's `promote` section for this job, `--chunk-size` the run's chunks."""

from __future__ import annotations

from pathlib import Path

from support import START, MakeBackfill
from typer.testing import CliRunner

from shadow_backfill.cli import app

TEN = ["--start", START, "--end", "2024-01-10"]


def test_backfill_canary_option_is_checked_before_anything_is_written(make_backfill: MakeBackfill) -> None:
    bf = make_backfill()
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    done = CliRunner().invoke(app, ["backfill", cfg, *TEN, "--canary", "10"])
    assert done.exit_code == 2, done.output
    assert "error: --canary 10: only 10 partition(s) to promote" in done.stderr
    assert bf.status_rows() == []


def test_backfill_takes_chunk_size_and_no_promote(make_backfill: MakeBackfill, tmp_path: Path) -> None:
    bf = make_backfill()
    cfg = str(bf.config_path)  # type: ignore[attr-defined]
    args = ["backfill", cfg, *TEN, "--chunk-size", "2", "--no-promote", "--report", str(tmp_path / "r")]
    done = CliRunner().invoke(app, args)
    assert done.exit_code in (0, 1, 3), done.output
    rows = bf.status_rows()
    assert len(rows) == 10 and len({r["run_id"] for r in rows}) == 1
    assert len({r["shadow_version"] for r in rows}) == 5, "one commit per chunk of 2"
    assert (tmp_path / "r" / "report.json").is_file()
