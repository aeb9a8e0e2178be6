"""Shared fixtures: the conformance corpus and hand-written tables in tmp_path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("DELTAEXPLORE_CORPUS", ROOT.parent / "shared" / "corpus"))
SHARED_TOOLS = CORPUS.parent / "tools"


def corpus_catalog() -> list[dict]:
    """Rows of the corpus catalog, or [] when the corpus is absent."""
    path = CORPUS / "catalog.json"
    if not path.exists():
        return []
    return json.loads(path.read_text())["tables"]


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "catalog.json").exists():
        pytest.skip(f"conformance corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture
def corpus_table(corpus: Path):
    """Path of a corpus table root by id."""
    rows = {t["id"]: t for t in corpus_catalog()}

    def get(table_id: str) -> str:
        return str(corpus / rows[table_id]["table_root"])

    return get
