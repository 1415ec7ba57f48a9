"""State store URLs a hostile or careless user types: a password with its own `@`, `:` or `/`,
percent-encoded, no user, no password, garbage, nothing. Where the user info ends decides both
the host we connect to and what we print, so both are tested here: the shown URL never holds a
piece of the password, a value that does not parse shows its scheme at most, and an unreachable
server is named as parsed. Real SQLAlchemy, real SQLite, a real refused TCP connection."""

from __future__ import annotations

from pathlib import Path

import pytest

from shadow_backfill import errors
from shadow_backfill.errors import ConfigError, StateStoreError
from shadow_backfill.state import StateStore
from shadow_backfill.state.urls import parse_state_url, server_name, shown_url, split_url

# Pieces of passwords below, each of which must never be printed (4+ characters: the length
# `redact` hunts for in free text).
PIECES = ("SEC@RET5", "RET5", "PA55", "W0RD", "pa:ss/wd", "ss/wd", "S3CR", "P@55", "SECRET7garbage", "SECRET7")


@pytest.fixture(autouse=True)
def no_remembered_secrets() -> None:
    """Each case masks on its own, not because an earlier case remembered its secret."""
    errors._SECRETS.clear()


@pytest.mark.parametrize(
    ("url", "shown", "host", "port", "user", "password"),
    [
        # the reproduction: an unescaped @ in the password once made RET5@127.0.0.1 the host
        ("postgresql://u:SEC@RET5@127.0.0.1:1/db", "postgresql://***@127.0.0.1:1/db", "127.0.0.1", 1, "u", "SEC@RET5"),
        (
            "postgresql://u:pa:ss/wd@db.example:5432/x",
            "postgresql://***@db.example:5432/x",
            "db.example",
            5432,
            "u",
            "pa:ss/wd",
        ),
        (
            "postgresql://u:PA55@W0RD@h/db?sslmode=require",
            "postgresql://***@h/db?sslmode=require",
            "h",
            None,
            "u",
            "PA55@W0RD",
        ),
        ("postgresql://u:P%4055@h/db", "postgresql://***@h/db", "h", None, "u", "P@55"),
        ("postgresql+psycopg://u:S3CR?x@h/db", "postgresql+psycopg://***@h/db", "h", None, "u", "S3CR?x"),
        ("postgresql://bob@h:5/db", "postgresql://bob@h:5/db", "h", 5, "bob", None),
        (
            "postgresql://h/db?password=S3CR&sslpassword=PA55",
            "postgresql://h/db?password=***&sslpassword=***",
            "h",
            None,
            None,
            None,
        ),
        ("postgresql://[::1]:7/db", "postgresql://[::1]:7/db", "::1", 7, None, None),
        ("postgresql:///db", "postgresql:///db", None, None, None, None),
        ("sqlite:////tmp/a@b/state.db", "sqlite:////tmp/a@b/state.db", None, None, None, None),
        ("sqlite://", "sqlite://", None, None, None, None),
    ],
)
def test_the_user_info_ends_at_the_last_at_before_the_host(
    url: str, shown: str, host: str | None, port: int | None, user: str | None, password: str | None
) -> None:
    assert shown_url(url) == shown
    parsed = parse_state_url(url)
    assert (parsed.host, parsed.port, parsed.username, parsed.password) == (host, port, user, password)
    assert not [p for p in PIECES if p in shown], shown
    if password is not None and len(password) >= errors.MIN_SECRET_CHARS:
        assert errors.redact(f"driver says {password}") == "driver says ***", "the password is remembered"


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("SECRET7garbage", "state.url is a value that is not a database URL"),
        ("", "state.url is a value that is not a database URL"),
        ("   ", "state.url is a value that is not a database URL"),
        ("SECRET7:garbage", "state.url is a value that is not a database URL"),
        ("postgresql://u:SEC@RET5@[::1/x", "state.url is a postgresql:// URL that does not parse"),
        ("postgresql://u:PA55@W0RD@h:port/db", "state.url is a postgresql:// URL that does not parse"),
        ("postgresql://[::1/x?password=SECRET7", "state.url is a postgresql:// URL that does not parse"),
    ],
)
def test_a_value_that_does_not_parse_shows_its_scheme_at_most(url: str, words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_state_url(url)
    message = str(refused.value)
    assert refused.value.exit_code == 2
    assert message.startswith(words), message
    assert not [p for p in PIECES if p in message], message
    assert url.strip() == "" or url not in errors.redact(f"quoted: {url}"), "the whole value is remembered"


def test_an_sqlite_url_with_user_info_is_refused_before_its_file_is_created(tmp_path: Path) -> None:
    """`sqlite://u:SECRET@/x.db` was refused only after `x.db` existed: exit 2 writes nothing."""
    target = tmp_path / "x.db"
    with pytest.raises(ConfigError, match=r"^state.url sqlite://\*\*\*@/.*takes no user, password or host") as refused:
        StateStore(f"sqlite://u:SECRET7@/{target}")
    assert "SECRET7" not in str(refused.value)
    assert not target.exists() and not list(tmp_path.iterdir())


def test_an_unreachable_server_is_named_as_parsed_and_is_a_runtime_failure() -> None:
    """A well-formed URL whose server does not answer exits 1 (retrying may help), naming the
    host and port as parsed, never the user info."""
    pytest.importorskip("psycopg")  # the `postgres` extra (a dev dependency)
    with pytest.raises(StateStoreError) as failed:
        StateStore("postgresql+psycopg://u:SEC@RET5@127.0.0.1:1/db")
    message = str(failed.value)
    assert failed.value.exit_code == 1
    assert message.startswith("cannot reach the state store at 127.0.0.1:1 (postgresql): "), message
    assert "RET5" not in message and "SEC" not in message and "u:" not in message, message


def test_the_server_name_holds_no_user_info() -> None:
    assert server_name(parse_state_url("postgresql://u:p@w@[::1]:5432/db")) == "[::1]:5432 (postgresql)"
    assert server_name(parse_state_url("postgresql://u:p@w@/db")) == "the local socket (postgresql)"
    assert server_name(parse_state_url("postgresql:///db?host=/run/pg")) == "/run/pg (postgresql)"


def test_split_url_reads_no_user_info_in_a_path_or_without_a_scheme() -> None:
    assert split_url("not a url") is None
    parts = split_url("sqlite:///x@y.db")
    assert parts is not None and parts.userinfo is None and parts.rest == "/x@y.db"
    parts = split_url("postgresql://u:a@b@h/db?application_name=me@prod")
    assert parts is not None and parts.password == "a@b" and parts.rest == "h/db?application_name=me@prod"
