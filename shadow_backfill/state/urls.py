"""State store URLs: where their user info ends, how they may be printed, and how they parse.

A password is typed into a URL as it is, often with an `@`, `:` or `/` of its own that nobody
percent-encodes. SQLAlchemy ends the user info at the first `@`, so the password's tail became
the host, was sent to DNS and came back in the driver's error ("failed to resolve host
'RET5@127.0.0.1'"). Here the user info ends at the last `@` before the host, as browsers and
libpq read it, for the URL we connect with and for the URL we print alike; SQLAlchemy only ever
parses the part after it. A value that does not parse is never printed: its scheme at most.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, unquote_plus

from sqlalchemy.engine import URL, make_url

from shadow_backfill.errors import ConfigError, is_secret_name, keep_secret

# The upserts exist in these dialects only (SQLite's and PostgreSQL's ON CONFLICT).
SUPPORTED_DIALECTS = ("sqlite", "postgresql")
NOT_A_URL = "a value that is not a database URL"
EXAMPLES = "e.g. sqlite:///path/state.db or postgresql+psycopg://user@host:5432/db"
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")


@dataclass(frozen=True)
class UrlParts:
    """A URL cut where a reader of passwords must cut it, as typed (nothing decoded yet)."""

    scheme: str  # postgresql+psycopg
    userinfo: str | None  # user[:password], before the @ that ends it; None: no user info
    rest: str  # host[:port][/database][?query]

    @property
    def user(self) -> str | None:
        return None if self.userinfo is None else unquote(self.userinfo.partition(":")[0])

    @property
    def password(self) -> str | None:
        """The password, decoded as SQLAlchemy decodes it (None: the user info has no `:`)."""
        if self.userinfo is None or ":" not in self.userinfo:
            return None
        return unquote(self.userinfo.partition(":")[2])

    @property
    def plain_user(self) -> bool:
        """A user name alone, which may be printed: no `:` (no password) and no `@` (which would
        make the user info ambiguous, as a password typed without its user could be)."""
        return self.userinfo is not None and not any(c in self.userinfo for c in ":@")


def split_url(url: str) -> UrlParts | None:
    """`url` cut into scheme, user info and the rest (None: no `scheme://`). A path right after
    `//` (`sqlite:////abs/x@y.db`) has no user info. Otherwise the user info ends at the last `@`
    before the query; a query-less URL whose password holds a `?` ends it at the last `@`."""
    match = _SCHEME.match(url)
    if match is None:
        return None
    scheme, rest = match["scheme"], url[match.end() :]
    if rest.startswith("/"):
        return UrlParts(scheme, None, rest)
    at = rest.partition("?")[0].rfind("@")
    if at < 0:
        at = rest.rfind("@")
    if at < 0:
        return UrlParts(scheme, None, rest)
    return UrlParts(scheme, rest[:at], rest[at + 1 :])


def shown_url(url: str) -> str:
    """The state URL as it may be printed: the user's own spelling with its user info as `***`
    (a user name alone is shown) and every secret-looking query value as `***`. Each secret
    found is remembered (`keep_secret`), so no other message can print it either. Which URLs
    parse is `parse_state_url`'s to say: this only hides."""
    parts = split_url(url)
    if parts is None:
        keep_secret(url)
        return NOT_A_URL
    userinfo = ""
    if parts.userinfo is not None:
        keep_secret(parts.userinfo, parts.password, parts.userinfo.partition(":")[2])
        userinfo = f"{parts.userinfo}@" if parts.plain_user else "***@"
    return f"{parts.scheme}://{userinfo}{_masked_query(parts.rest)}"


def _masked_query(rest: str) -> str:
    """`host/db?query` with the value of every secret-looking query parameter as `***`; pairs
    are split on `&` as SQLAlchemy splits them, so a value is masked whole."""
    head, mark, query = rest.partition("?")
    if not mark:
        return rest
    pairs = []
    for pair in query.split("&"):
        key, eq, value = pair.partition("=")
        if eq and is_secret_name(unquote_plus(key)):
            keep_secret(value, unquote_plus(value))
            pair = f"{key}=***"
        pairs.append(pair)
    return f"{head}?{'&'.join(pairs)}"


def not_parsed(url: str) -> str:
    """What a value that does not parse may show of itself: its scheme, or nothing."""
    parts = split_url(url)
    keep_secret(url, *(() if parts is None else (parts.rest, parts.userinfo, parts.password)))
    return NOT_A_URL if parts is None else f"a {parts.scheme}:// URL that does not parse"


def parse_state_url(url: str) -> URL:
    """The URL, refused (ConfigError, exit 2) before anything connects or is created unless it
    parses and names a dialect we can upsert in. SQLAlchemy parses the URL without its user
    info, which is set apart, decoded: its `@`, `:` and `/` cannot move the host."""
    shown = shown_url(url)
    parts = split_url(url)
    try:
        if parts is None:
            raise ValueError(url)
        parsed = make_url(f"{parts.scheme}://{parts.rest}")
        if parts.userinfo is not None:
            parsed = parsed.set(username=parts.user, password=parts.password)
    except Exception:  # ArgumentError, ValueError (a port that is no number): not a URL at all
        raise ConfigError(f"state.url is {not_parsed(url)} ({EXAMPLES})") from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_DIALECTS:
        raise ConfigError(
            f"state.url {shown}: database {backend!r} is not supported "
            f"as a state store; supported: {', '.join(SUPPORTED_DIALECTS)}"
        )
    if backend == "sqlite" and (parsed.username is not None or parsed.host or parsed.port is not None):
        raise ConfigError(
            f"state.url {shown}: an SQLite URL names a file and takes no user, password or host "
            "(sqlite:///relative/state.db, sqlite:////absolute/state.db)"
        )
    try:
        parsed.get_dialect()
    except Exception:  # NoSuchModuleError: an unknown driver name such as postgresql+nosuch
        raise ConfigError(f"state.url {shown}: unknown driver {parsed.drivername!r} for {backend}") from None
    return parsed


def server_name(parsed: URL) -> str:
    """The server as parsed, for an error that must name it and nothing else: `host:port
    (dialect)`; a URL without a host reaches libpq's local socket (or its `?host=`)."""
    host = parsed.host or str(parsed.query.get("host") or "") or "the local socket"
    if ":" in host:
        host = f"[{host}]"
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{host}{port} ({parsed.get_backend_name()})"
