"""Where the conformance corpus is (../shared/corpus, or $DELTAEXPLORE_CORPUS) and its catalog."""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DELTAEXPLORE_CORPUS", ROOT.parent / "shared" / "corpus"))
SHARED_TOOLS = CORPUS.parent / "tools"


def corpus_catalog() -> list[dict]:
    """Rows of the corpus catalog, or [] when the corpus is absent."""
    path = CORPUS / "catalog.json"
    if not path.exists():
        return []
    return json.loads(path.read_text())["tables"]


def tables_with_stats() -> list[dict]:
    """Catalog rows of the readable corpus tables that have files and statistics."""
    return [t for t in corpus_catalog() if t["status"] == "ok" and t["active_files"] and "stats:none" not in t["tags"]]
