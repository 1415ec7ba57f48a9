"""The docs site as a reader gets it with no network: built by `mkdocs build --strict`, served by
a real HTTP server on loopback, opened in Debian's headless Chromium with every name but
127.0.0.1 unresolvable and every connection elsewhere sent to a proxy that is not there. A
diagram that needs mermaid from a CDN, or a font from Google, cannot load here.

What the browser reports comes from a small check page the server adds beside the site
(`/__check__.html`, the file tests/docs/check_page.html): it opens a page of the site in a
same-origin frame, waits until the frame has loaded and Material has drawn its diagrams, and
writes what it measured into its own DOM as JSON, which `--dump-dom` prints. Material draws a
diagram into a closed shadow root, so the SVG itself is out of a script's reach: a drawn
diagram is the `<div class="mermaid">` Material puts in place of the `<pre class="mermaid">`
source only once `mermaid.render` returned the SVG, with the SVG's height. The screenshots
are kept under the test's temporary folder.

The docs group of CI (`nox -s tests`, group `docs`; `nox -s docs`) runs this file; .ci/run
installs Chromium where it is missing. Locally, without Chromium, the browser tests skip.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CHECK_PAGE = "/__check__.html"
# The frame's width: narrower than a wide screen, so a table that would squeeze its first
# column does (the keys of the config reference must stay whole, scrolling the table instead).
FRAME = (1000, 900)
# Virtual time the browser may spend before it prints the DOM: the check page gives up waiting
# for diagrams after 10 s of it, so an undrawn diagram is reported, never waited on for ever.
BUDGET_MS = 30_000

CHECK_HTML = (Path(__file__).parent / "check_page.html").read_bytes()


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium")
        pytest.skip("chromium not installed (apt-get install chromium): the offline rendering is not checked")
    return found


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as CI builds it: `--strict`, so a broken link or anchor fails here."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true", "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)]
    built = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stdout}\n{built.stderr}"
    return out


class _Handler(http.server.SimpleHTTPRequestHandler):
    """The site's files as they are, the check page beside them, and no log on stderr."""

    def do_GET(self) -> None:
        if self.path.split("?")[0] != CHECK_PAGE:
            super().do_GET()
            return
        body = CHECK_HTML
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def offline_browser(url: str, user_data: Path, *action: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium with no way out of loopback: names other than 127.0.0.1 do not
    resolve, and any connection elsewhere goes to a proxy on a closed port."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--proxy-server=http://127.0.0.1:9",
        f"--user-data-dir={user_data}",
        f"--virtual-time-budget={BUDGET_MS}",
    ]
    cmd = [chromium(), *flags, *action, url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"chromium failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return done


def measure(server: str, page: str, shot: Path, diagrams: int = 0) -> dict[str, object]:
    """What the check page measured in `page` (see the module's docstring), once it shows
    `diagrams` drawn diagrams or gave up waiting for them; the frame's screenshot into `shot`
    (the window is the frame's size, so the screenshot is the page as a reader sees it)."""
    url = f"{server}{CHECK_PAGE}?page={page}&diagrams={diagrams}&width={FRAME[0]}&height={FRAME[1]}"
    size = f"--window-size={FRAME[0]},{FRAME[1]}"
    done = offline_browser(url, shot.parent / "profile", size, f"--screenshot={shot}", "--dump-dom")
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    assert found is not None and found[1] != "pending", f"the check page did not finish:\n{done.stdout[-2000:]}"
    assert shot.stat().st_size > 10_000, f"an empty screenshot: {shot}"
    print("screenshot:", shot)
    result: dict[str, object] = json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&"))
    return result


def test_the_home_page_draws_its_diagram_with_no_network(site: Path, server: str, tmp_path: Path) -> None:
    sources = (site / "index.html").read_text().count('<pre class="mermaid">')
    assert sources >= 1, "the home page has no diagram to check"
    result = measure(server, "/", tmp_path / "home.png", sources)
    diagrams = result["diagrams"]
    assert isinstance(diagrams, list) and len(diagrams) == sources, f"diagrams not drawn: {result}"
    assert all(h > 50 for h in diagrams), f"a diagram is empty: {result}"
    assert result["external"] == [], f"the page loads from outside the site: {result['external']}"


def test_the_config_reference_has_yaml_path_sections_and_whole_keys(server: str, tmp_path: Path) -> None:
    result = measure(server, "/reference/config/", tmp_path / "config-reference.png")
    headings = result["headings"]
    assert isinstance(headings, list)
    for path in ("top-level", "partition", "validation", "validation-columns-column", "pipeline-consistency"):
        assert path in headings, f"no section {path!r} in {headings}"
    assert not any(h in headings for h in ("partitionspec", "validationspec", "rowsratio")), headings
    assert isinstance(result["keys"], int) and result["keys"] > 100, result["keys"]
    assert result["wrapped_keys"] == [], f"keys broken across lines: {result['wrapped_keys']}"
    assert result["external"] == [], f"the page loads from outside the site: {result['external']}"
