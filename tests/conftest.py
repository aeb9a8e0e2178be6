"""Shared fixtures: the conformance corpus and hand-written tables in tmp_path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_paths import CORPUS, corpus_catalog


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
