"""What the tool prints and writes stays private: no state store password in any output (error
lines, log files, reports) whatever form its URL takes, and every file the tool creates that
holds data (SQLite state store, reports, logs) is readable by its owner only. Real SQLite, real
files, the real CLI; no Spark (these commands fail or finish before one would start)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from shadow_backfill import errors
from shadow_backfill.cli import app
from shadow_backfill.cli.output import handle_errors, write_log
from shadow_backfill.report import ReportData, write_reports
from shadow_backfill.state import StateStore
from shadow_backfill.state.store import shown_url

PASSWORD = "S3cret-Pw9"
# No piece of it either: an unescaped @ or / in a password once showed its tail as the host.
PIECES = (PASSWORD, PASSWORD[:5], PASSWORD[5:])
CONFIG = {
    "live_table": "/nonexistent/events",
    "format": "delta",
    "partition": {"column": "ds"},
    "transform": {"function": "mod:fn"},
}
# Each form a password can take in a state URL, with the exit code and the masked URL the
# error line shows ("{dir}": the test's folder).
URLS = [
    pytest.param(
        f"postgresql+psycopg://bob:{PASSWORD}@127.0.0.1:1/db",
        1,
        "cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        id="userinfo",
    ),
    pytest.param(
        f"postgresql+psycopg://bob@127.0.0.1:1/db?password={PASSWORD}",
        1,
        "cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        id="query",
    ),
    pytest.param(
        f"postgresql+psycopg://bob@127.0.0.1:1/db?sslmode=bogus&sslpassword={PASSWORD}",
        1,
        'cannot reach the state store at 127.0.0.1:1 (postgresql): connection is bad: invalid sslmode value: "bogus"',
        id="query-driver-error",
    ),
    pytest.param(
        f"postgresql://bob:{PASSWORD}@[::1/x",
        2,
        "state.url is a postgresql:// URL that does not parse",
        id="unparseable",
    ),
    pytest.param(
        f"postgresql://[::1/x?password={PASSWORD}",
        2,
        "state.url is a postgresql:// URL that does not parse",
        id="unparseable-no-host",
    ),
    pytest.param(
        f"postgresql://bob:{PASSWORD}@host:port/db",
        2,
        "state.url is a postgresql:// URL that does not parse",
        id="unparseable-port",
    ),
    pytest.param(
        f"mysql://bob:{PASSWORD}@localhost/db",
        2,
        "state.url mysql://***@localhost/db: database 'mysql' is not supported",
        id="unsupported",
    ),
    pytest.param(
        f"postgresql+nosuch://bob:{PASSWORD}@localhost/db",
        2,
        "state.url postgresql+nosuch://***@localhost/db: unknown driver",
        id="unknown-driver",
    ),
    pytest.param(
        f"sqlite://bob:{PASSWORD}@/{{dir}}/state.db",
        2,
        "state.url sqlite://***@/{dir}/state.db: an SQLite URL names a file and takes no user",
        id="sqlite-userinfo",
    ),
    pytest.param(  # an @ of the password's own, unescaped: its tail is no host
        f"postgresql+psycopg://bob:{PASSWORD[:5]}@{PASSWORD[5:]}@127.0.0.1:1/db",
        1,
        "cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        id="unescaped-at",
    ),
    pytest.param(
        f"postgresql+psycopg://bob:{PASSWORD[:5]}:/{PASSWORD[5:]}@127.0.0.1:1/db",
        1,
        "cannot reach the state store at 127.0.0.1:1 (postgresql): connection failed",
        id="unescaped-colon-slash",
    ),
    pytest.param(f"{PASSWORD}garbage", 2, "state.url is a value that is not a database URL", id="garbage"),
    pytest.param(
        f"sqlite:///{{dir}}/afile/state.db?password={PASSWORD}",
        1,
        "state store sqlite:///{dir}/afile/state.db?password=***: cannot create folder",
        id="sqlite-query",
    ),
]


@pytest.fixture(autouse=True)
def no_remembered_secrets() -> None:
    """Each case starts with no secret remembered by an earlier one (the CLI redacts every
    password it has seen in this process): each URL form must be masked on its own."""
    errors._SECRETS.clear()


def _files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@pytest.mark.parametrize("command", ["status", "report"])
@pytest.mark.parametrize(("url", "code", "words"), URLS)
def test_no_password_in_any_output(tmp_path: Path, command: str, url: str, code: int, words: str) -> None:
    """A failing command prints its one error line with the URL masked, and neither that line,
    stdout, a log file nor the report folder holds the password."""
    assert PASSWORD not in shown_url(url.replace("{dir}", str(tmp_path)))
    (tmp_path / "afile").write_text("a regular file")
    cfg = tmp_path / "backfill.yaml"
    cfg.write_text(yaml.safe_dump({**CONFIG, "state": {"url": url.replace("{dir}", str(tmp_path))}}))
    logs, reports = tmp_path / "logs", tmp_path / "report"
    args = [command, str(cfg), *(["--report", str(reports)] if command == "report" else [])]
    result = CliRunner().invoke(app, args, env={"SHADOW_BACKFILL_LOG_DIR": str(logs)})
    assert result.exit_code == code, result.output
    assert words.replace("{dir}", str(tmp_path)) in result.stderr, result.output
    assert [line for line in result.output.splitlines() if line.startswith("error:")] == result.stderr.splitlines()
    assert len(result.stderr.splitlines()) == 1, result.output
    outputs = {"stdout": result.stdout, "stderr": result.stderr}
    outputs |= {str(p): p.read_text(errors="replace") for p in _files_under(logs) + _files_under(reports)}
    leaked = [name for name, text in outputs.items() if any(piece in text for piece in PIECES)]
    assert not leaked, f"the password is in {leaked}"


def test_an_unforeseen_error_quoting_the_password_is_masked_on_the_line_and_in_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The catch-all's line and traceback log mask every secret the config held, even where a
    driver's message quotes one (the URL was read, so its password is known)."""
    assert shown_url(f"postgresql+psycopg://bob@db.example/x?password={PASSWORD}").endswith("password=***")
    monkeypatch.setenv("SHADOW_BACKFILL_LOG_DIR", str(tmp_path / "logs"))

    @handle_errors
    def command() -> None:
        raise RuntimeError(f"connect failed: password={PASSWORD} refused\nsecond line {PASSWORD}")

    with pytest.raises(typer.Exit) as exit_:
        command()
    assert exit_.value.exit_code == 1
    err = capsys.readouterr().err
    assert "RuntimeError: connect failed: password=*** refused (full details:" in err, err
    (log,) = _files_under(tmp_path / "logs")
    assert "Traceback" in log.read_text() and "second line ***" in log.read_text()
    assert PASSWORD not in err + log.read_text()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_sqlite_state_store_is_created_owner_only(tmp_path: Path) -> None:
    """The state file (and its -wal and -shm files) 0600, a folder created for it 0700."""
    db = tmp_path / "new" / "folder" / "state.db"
    store = StateStore(f"sqlite:///{db}")
    try:
        store.start_run(
            "run-1", shadow_table="shadow", live_table="live", config_hash="h", code_fingerprint="fp", args={}
        )
        assert _mode(db.parent) == 0o700
        assert {p.name: _mode(p) for p in db.parent.iterdir()} == {
            "state.db": 0o600,
            "state.db-wal": 0o600,
            "state.db-shm": 0o600,
        }
    finally:
        store.close()


def test_an_existing_state_file_keeps_its_mode(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    db.touch()
    db.chmod(0o640)
    StateStore(f"sqlite:///{db}").close()
    assert _mode(db) == 0o640


def test_reports_are_created_owner_only_and_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    folder = tmp_path / "reports" / "today"
    paths = write_reports(ReportData("live", "shadow", "delta", []), folder)
    assert _mode(folder) == 0o700
    assert {kind: _mode(p) for kind, p in paths.items()} == dict.fromkeys(paths, 0o600)
    paths["html"].chmod(0o644)
    write_reports(ReportData("live", "shadow", "delta", []), folder)
    assert _mode(paths["html"]) == 0o644 and _mode(paths["json"]) == 0o600


def test_logs_are_created_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHADOW_BACKFILL_LOG_DIR", str(tmp_path / "logs"))
    log = write_log("a traceback quoting data values\n")
    assert log is not None
    assert _mode(log.parent) == 0o700 and _mode(log) == 0o600


def test_modes_do_not_depend_on_a_permissive_umask(tmp_path: Path) -> None:
    """Under umask 0 (files 0666 by default) the store and the reports are still owner-only."""
    old = os.umask(0)
    try:
        StateStore(f"sqlite:///{tmp_path / 'state' / 'state.db'}").close()
        paths = write_reports(ReportData("live", "shadow", "delta", []), tmp_path / "report")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "state") == 0o700 and _mode(tmp_path / "state" / "state.db") == 0o600
    assert _mode(tmp_path / "report") == 0o700 and _mode(paths["html"]) == 0o600
