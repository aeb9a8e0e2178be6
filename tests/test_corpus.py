"""Conformance: every table of ../shared/corpus, with the same rules as tools/corpus_check.py."""

from __future__ import annotations

import importlib.util
import warnings

import pytest
from corpus_paths import CORPUS, SHARED_TOOLS, corpus_catalog

import deltaexplore as dx

pytestmark = pytest.mark.corpus


def _checker():
    spec = importlib.util.spec_from_file_location("corpus_check", SHARED_TOOLS / "corpus_check.py")
    if spec is None or spec.loader is None:
        pytest.skip("tools/corpus_check.py not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TABLES = corpus_catalog()


@pytest.mark.parametrize("table", TABLES, ids=[t["id"] for t in TABLES])
def test_corpus_table(table: dict) -> None:
    checker = _checker()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dx.CatalogManagedWarning)
        status, message = checker.check_table(dx, str(CORPUS), table)
    if status == "skip":
        pytest.skip(message)
    assert status == "pass", message


def test_corpus_is_wired() -> None:
    if not TABLES:
        pytest.skip(f"corpus absent at {CORPUS}")
    assert len(TABLES) >= 240
