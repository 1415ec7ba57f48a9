"""`python -m shadow_backfill.documents docs`: regenerate the published schema files."""

from __future__ import annotations

import argparse
from pathlib import Path

from shadow_backfill.documents import write_schemas

if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        prog="python -m shadow_backfill.documents", description="Write every published JSON Schema into FOLDER."
    )
    parser.add_argument("folder", nargs="?", default="docs", type=Path, help="where to write them (default: docs)")
    folder = parser.parse_args().folder
    if not folder.is_dir():
        parser.error(f"{folder} is not a folder")
    for path in write_schemas(folder):
        print(path)
