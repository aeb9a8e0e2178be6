"""The explorer in JupyterLab and Debian chromium on tables this reader cannot fully read: a
damaged table (a checkpoint without its metaData) is marked as such in the overview, a version
needing a reader feature deltaexplore lacks is marked as unreadable, History lists the protocol
of every version that changed it, the schema grid shows collations. Screenshots go to
$DELTAEXPLORE_SCREENSHOTS (default tests/browser/screenshots/)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import Watch, notebook_json, open_tab, settled, wait_kernel_idle

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

TESTS = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def shots() -> Path:
    import os

    out = Path(os.environ.get("DELTAEXPLORE_SCREENSHOTS") or HERE / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_damaged_unsupported_and_collated_tables(page, lab, shots):
    page.set_viewport_size({"width": 1500, "height": 1500})
    watch = Watch(page)
    for name in ("helpers.py", "test_protocol_versions.py", "test_damaged_checkpoints.py", "test_collations.py"):
        shutil.copy(TESTS / name, lab.root / name)
    cells = [
        (
            "code",
            "import pathlib, tempfile, deltaexplore as dx\n"
            "import test_protocol_versions as pv, test_damaged_checkpoints as dc, test_collations as co\n"
            "base = pathlib.Path(tempfile.mkdtemp())\n"
            "ck = dc._table_with_checkpoint(base / 'damaged'); dc._drop_row(ck, 'metaData')\n"
            "pv.build(base / 'protocol')\n"
            "(base / 'collated').mkdir(); _ = co.build(base / 'collated')",
        ),
        ("code", "dx.explore(str(base / 'damaged'))"),
        ("code", "dx.explore(str(base / 'protocol'), version=1)"),
        ("code", "dx.explore(str(base / 'collated'))"),
    ]
    (lab.root / "protocol.ipynb").write_text(notebook_json(cells))
    page.goto(lab.url("/lab/workspaces/protocol/tree/protocol.ipynb?reset"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(page)
    page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    explorers = page.locator(".dxe-explorer")
    explorers.nth(2).wait_for(timeout=120_000)
    damaged, protocol, collated = explorers.nth(0), explorers.nth(1), explorers.nth(2)

    settled(page, damaged)
    damaged.scroll_into_view_if_needed()
    alert = damaged.get_by_role("alert").filter(has_text="Damaged table")
    try:
        alert.wait_for(timeout=30_000)
    except Exception:
        page.screenshot(path=str(shots / "protocol-failure.png"), full_page=True)
        raise
    assert "has no metaData action" in alert.inner_text() and "history, files and log are shown" in alert.inner_text()
    damaged.screenshot(path=str(shots / "protocol-damaged-overview.png"))
    history = open_tab(page, damaged, "History")
    history.locator(".ag-row").first.wait_for(timeout=30_000)  # every commit, though the snapshot fails
    assert history.locator(".ag-row").count() == 4
    files = open_tab(page, damaged, "Files")
    files.get_by_role("region", name="files", exact=True).locator(".ag-row").first.wait_for(timeout=30_000)

    settled(page, protocol)
    protocol.scroll_into_view_if_needed()
    unsupported = protocol.get_by_role("alert").filter(has_text="Not readable by deltaexplore")
    unsupported.wait_for(timeout=30_000)
    assert "adaptiveMetadata" in unsupported.inner_text()
    protocol.screenshot(path=str(shots / "protocol-unsupported-overview.png"))
    panel = open_tab(page, protocol, "History")
    timeline = panel.get_by_role("list", name="protocol changes by version")
    timeline.wait_for(timeout=30_000)
    items = timeline.locator("li")
    assert items.count() == 3
    assert "upgraded" in items.nth(1).inner_text() and "+adaptiveMetadata" in items.nth(1).inner_text()
    assert "not read by deltaexplore: adaptiveMetadata" in items.nth(1).inner_text()
    assert "downgraded" in items.nth(2).inner_text() and "+checkpointProtection" in items.nth(2).inner_text()
    timeline.scroll_into_view_if_needed()
    protocol.screenshot(path=str(shots / "protocol-history-timeline.png"))
    items.nth(2).get_by_role("button", name="v2").click()  # travels to version 2, which it reads
    settled(page, protocol)
    assert (
        protocol.locator(".dxe-version-out").inner_text().strip().startswith("2")
        or "2" in protocol.locator(".dxe-version-out").inner_text()
    )

    settled(page, collated)
    collated.scroll_into_view_if_needed()
    grid = collated.get_by_role("region", name="schema", exact=True)
    grid.locator(".ag-row").first.wait_for(timeout=30_000)
    assert "spark.UTF8_LCASE" in grid.inner_text() and "icu.UNICODE" in grid.inner_text()
    collated.screenshot(path=str(shots / "protocol-collated-schema.png"))

    assert not watch.outside, watch.outside
    assert not [e for e in watch.errors if "favicon" not in e], watch.errors
