"""Every fenced code block of the docs names its language: a block without one is highlighted by
guesswork on the docs site (a log line coloured as code, a shell line as plain text), and
GitHub shows the README's the same way. `text` is the language of output and plain lines."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
# CommonMark's fences: three or more backticks or tildes; a block closes at a fence of the same
# character, at least as long, with nothing after it.
FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def unlabelled_blocks(text: str) -> list[int]:
    """The line numbers of the opening fences that name no language."""
    found: list[int] = []
    opening = ""
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match is None:
            continue
        fence, info = match["fence"], match["info"].strip()
        if not opening:
            opening = fence
            if not info:
                found.append(number)
        elif fence[0] == opening[0] and len(fence) >= len(opening) and not info:
            opening = ""
    return found


def doc_files() -> list[Path]:
    return [*sorted((ROOT / "docs").glob("**/*.md")), ROOT / "README.md", ROOT / "CHANGELOG.md"]


def test_the_check_finds_a_block_without_a_language() -> None:
    text = "```bash\nls\n```\n\n~~~~\n```\nnot a fence here\n~~~~\n\n```\nplain\n```\n"
    assert unlabelled_blocks(text) == [5, 10]


def test_every_fenced_code_block_in_the_docs_names_its_language() -> None:
    files = doc_files()
    assert len(files) > 20, files
    missing = [f"{path.relative_to(ROOT)}:{line}" for path in files for line in unlabelled_blocks(path.read_text())]
    assert not missing, f"fenced code blocks without a language: {missing}"
