"""`python -m shadow_backfill.documents docs`: regenerate the published schema files."""

from __future__ import annotations

import sys
from pathlib import Path

from shadow_backfill.documents import write_schemas

if __name__ == "__main__":
    for path in write_schemas(Path(sys.argv[1] if len(sys.argv) > 1 else "docs")):
        print(path)
