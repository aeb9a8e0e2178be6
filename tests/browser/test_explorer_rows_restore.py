"""The Diff tab's Rows view and RESTORE from History in a real JupyterLab and Debian chromium.

Rows: on a small keyed table the view computes by itself (a small read), marks each change kind
and the changed columns, filters by key and exports; on a table of millions of rows the read
waits for "Compare rows", shows its progress while the kernel keeps answering other tabs, stops
on Cancel, and lists millions of changed rows once done. Screenshots go to
$DELTAEXPLORE_SCREENSHOTS (default tests/browser/screenshots/, not committed).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from pyarrow import ipc

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lab_helpers import Watch, notebook_json, open_tab, settled, wait_kernel_idle

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

HERE = Path(__file__).resolve().parent
#: rows of the big table: its row diff (every row updated) reads both versions whole
BIG_ROWS = 3_000_000


@pytest.fixture(scope="module")
def shots() -> Path:
    out = Path(os.environ.get("DELTAEXPLORE_SCREENSHOTS") or HERE / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _explore(page, lab, name: str, build: str) -> object:
    """A notebook that builds a table (`build`: Python setting `path`) and explores it."""
    shutil.copy(HERE / "row_tables.py", lab.root / "row_tables.py")
    cells = [f"import deltaexplore as dx, row_tables\n{build}", "dx.explore(path)"]
    (lab.root / name).write_text(notebook_json(cells))
    page.goto(lab.url(f"/lab/workspaces/{name.replace('.', '-')}/tree/{name}?reset"))
    page.locator(".jp-Notebook").wait_for(timeout=60_000)
    wait_kernel_idle(page)
    page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    explorer = page.locator(".dxe-explorer").first
    explorer.wait_for(timeout=180_000)
    settled(page, explorer)
    return explorer


def _count(grid) -> str:
    return grid.locator(".dxe-grid-count").inner_text()


def test_rows_view_on_a_small_table(page, lab, shots, tmp_path):
    page.set_viewport_size({"width": 1500, "height": 1300})
    watch = Watch(page)
    explorer = _explore(page, lab, "rows_small.ipynb", "path = row_tables.build_keyed('keyed')")
    panel = open_tab(page, explorer, "Diff")
    panel.get_by_role("combobox", name="compare from version").select_option("0")
    settled(page, explorer)
    panel.get_by_text("Version 0 → 3").wait_for(timeout=30_000)
    panel.get_by_role("button", name="Rows", exact=True).click()
    # a small read starts by itself: whole rows (no key), 15 updated + 5 deleted + 10 appended
    state = panel.locator(".dxe-rows-state")
    state.get_by_text(re.compile(r"Rows of version 0 → 3: read \d+ files")).wait_for(timeout=60_000)
    grid = panel.get_by_role("region", name="changed rows", exact=True)
    grid.locator(".ag-row").first.wait_for(timeout=30_000)
    assert _count(grid) == "45 rows"  # 20 deleted (15 old values + 5), 25 inserted (15 new + 10)
    assert "Inserted25" in panel.locator(".dxe-diff-rows .dxe-cards").text_content()
    # keyed: one row per key, updates name the changed column, which is marked
    key = panel.get_by_role("combobox", name=re.compile("key columns"))
    key.fill("id")
    key.press("Enter")
    state.get_by_text("Rows of version 0 → 3 by id").wait_for(timeout=60_000)
    page.wait_for_function(
        "el => el.textContent === '30 rows'", arg=grid.locator(".dxe-grid-count").element_handle(), timeout=30_000
    )
    settled(page, explorer)
    cards = panel.locator(".dxe-diff-rows .dxe-cards").text_content()
    assert re.search(r"Inserted10.*Deleted5.*Updated15", cards), cards
    explorer.screenshot(path=str(shots / "light-diff-rows.png"))
    changed = grid.locator('.ag-cell.dxe-cell-changed[col-id="after.name"]')
    changed.first.wait_for(timeout=30_000)
    assert changed.count() >= 1 and changed.first.text_content() == "changed"
    assert grid.locator('.ag-cell.dxe-cell-changed[col-id="after.amount"]').count() == 0  # not changed: not marked
    kinds = set(grid.locator('.ag-cell[col-id="_change"]').all_inner_texts())
    assert kinds == {"update", "delete", "insert"}, kinds
    # filter by key, then export what the filter kept
    box = grid.get_by_role("searchbox")
    box.fill("30")
    box.press("Enter")
    page.wait_for_function(
        "el => el.textContent === '10 of 30 rows'", arg=grid.locator(".dxe-grid-count").element_handle(), timeout=30_000
    )
    with page.expect_download() as dl:
        grid.get_by_role("button", name="CSV").click()
    dl.value.save_as(tmp_path / "rows.csv")
    lines = [ln for ln in (tmp_path / "rows.csv").read_text().splitlines() if ln.strip()]
    assert len(lines) == 11 and '"_change"' in lines[0]
    with page.expect_download() as dl:
        grid.get_by_role("button", name="Arrow").click()
    dl.value.save_as(tmp_path / "rows.arrow")
    exported = ipc.open_file(str(tmp_path / "rows.arrow")).read_all()
    assert sorted(exported.column("id").to_pylist()) == list(range(300, 310))
    assert watch.errors == [] and watch.outside == []


def test_rows_view_on_a_big_table_shows_progress_and_cancels(page, lab, shots):
    page.set_viewport_size({"width": 1500, "height": 1300})
    watch = Watch(page)
    explorer = _explore(page, lab, "rows_big.ipynb", f"path = row_tables.build_wide('wide', {BIG_ROWS})")
    panel = open_tab(page, explorer, "Diff")
    panel.get_by_text("Version 0 → 1").wait_for(timeout=30_000)
    panel.get_by_role("button", name="Rows", exact=True).click()
    # a big read waits to be asked for, and says what it will read
    plan = panel.locator(".dxe-rows-plan")
    assert re.search(r"Reads the \d+ data files that differ between versions 0 and 1 \([\d.]+ MiB", plan.inner_text()), (
        plan.inner_text()
    )
    page.wait_for_timeout(500)
    assert panel.get_by_text("Compare the rows of version 0 → 1.").is_visible()
    key = panel.get_by_role("combobox", name=re.compile("key columns"))
    key.fill("id")
    panel.get_by_role("button", name="Compare rows").click()
    progress = panel.get_by_role("progressbar", name="row diff progress")
    progress.wait_for(timeout=30_000)
    cancel = panel.get_by_role("button", name="Cancel")
    assert cancel.is_visible()
    explorer.screenshot(path=str(shots / "light-diff-rows-big-progress.png"))
    # the kernel keeps answering while the job runs: another tab loads
    history = open_tab(page, explorer, "History")
    history.get_by_role("region", name="history", exact=True).locator(".ag-row").first.wait_for(timeout=30_000)
    panel = open_tab(page, explorer, "Diff")
    panel.get_by_role("button", name="Cancel").click()  # still reading or comparing: seconds of work
    panel.get_by_text("Row diff of 0 → 1 cancelled.").wait_for(timeout=30_000)
    assert not panel.get_by_role("button", name="Cancel").is_visible()
    # asked again: runs to the end, millions of changed rows in a grid whose rows stay in the kernel
    panel.get_by_role("button", name="Compare rows").click()
    state = panel.locator(".dxe-rows-state")
    state.get_by_text(re.compile(r"Rows of version 0 → 1 by id: read \d+ files")).wait_for(timeout=300_000)
    grid = panel.get_by_role("region", name="changed rows", exact=True)
    grid.locator(".ag-row").first.wait_for(timeout=60_000)
    page.wait_for_function(
        "([el, t]) => el.textContent === t",
        arg=[grid.locator(".dxe-grid-count").element_handle(), f"{BIG_ROWS:,} rows"],
        timeout=60_000,
    )
    settled(page, explorer)
    assert grid.locator('.ag-cell.dxe-cell-changed[col-id="after.amount"]').count() >= 5
    explorer.screenshot(path=str(shots / "light-diff-rows-big.png"))
    box = grid.get_by_role("searchbox")
    box.fill("2999999")
    box.press("Enter")
    page.wait_for_function(
        "([el, t]) => el.textContent === t",
        arg=[grid.locator(".dxe-grid-count").element_handle(), f"1 of {BIG_ROWS:,} rows"],
        timeout=60_000,
    )
    assert watch.errors == [] and watch.outside == []


def _restore_panel(page, explorer, version: int):
    """History: the commit of `version` selected, its "Restore to this version" previewed."""
    panel = open_tab(page, explorer, "History")
    grid = panel.get_by_role("region", name="history", exact=True)
    grid.locator('.ag-cell[col-id="version"]').filter(has_text=re.compile(rf"^\s*{version}\s*$")).first.click()
    detail = panel.get_by_role("complementary", name="selected commit")
    detail.get_by_text(f"Version {version}", exact=True).wait_for(timeout=30_000)
    detail.get_by_role("button", name="Restore to this version").click()
    box = detail.get_by_role("region", name="restore to this version")
    box.get_by_text("RESTORE: preview").wait_for(timeout=30_000)
    return panel, detail, box


def test_restore_from_a_history_commit(page, lab, shots):
    page.set_viewport_size({"width": 1500, "height": 1900})  # the whole History tab in the screenshots
    watch = Watch(page)
    explorer = _explore(page, lab, "restore.ipynb", "path = row_tables.build_keyed('restored')")
    panel, _, box = _restore_panel(page, explorer, 1)
    # the latest version offers no restore to itself
    text = box.inner_text()
    assert re.search(r"restore to version\s+1", text) and re.search(r"latest version\s+3", text), text
    assert (
        re.search(r"files back\s+\d+", text) and re.search(r"files away\s+\d+", text) and re.search(r"restorable\s+yes", text)
    ), text
    explorer.screenshot(path=str(shots / "light-history-restore-preview.png"))
    box.get_by_role("button", name="Run RESTORE").click()
    box.get_by_text(re.compile(r"RESTORE done with \w+: version 3 -> 4")).wait_for(timeout=60_000)
    # the preview was of version 3: no second RESTORE from it
    assert box.get_by_role("button", name="Run RESTORE").is_disabled()
    box.get_by_text(re.compile(r"^The preview above was of the version before this run")).wait_for(timeout=10_000)
    page.wait_for_function(
        "el => el.textContent.startsWith('4 of 4')", arg=explorer.locator(".dxe-version-out").element_handle(), timeout=30_000
    )
    settled(page, explorer)
    grid = panel.get_by_role("region", name="history", exact=True)
    page.wait_for_function(
        "el => el.textContent === '5 commits'", arg=grid.locator(".dxe-grid-count").element_handle(), timeout=30_000
    )
    explorer.screenshot(path=str(shots / "light-history-restore-done.png"))
    # the table at version 4 holds version 1's rows
    import deltaexplore as dx

    table = dx.open_table(str(Path(lab.root) / "restored"))
    assert table.inspect.diff_rows(1, 4).num_rows == 0 and table.inspect.diff_rows(3, 4).num_rows > 0
    assert watch.errors == [] and watch.outside == []


def test_restore_preview_says_when_vacuum_deleted_the_files(page, lab, shots):
    page.set_viewport_size({"width": 1500, "height": 1900})
    watch = Watch(page)
    explorer = _explore(page, lab, "restore_vacuumed.ipynb", "path = row_tables.build_vacuumed('vacuumed')")
    _, _, box = _restore_panel(page, explorer, 0)
    box.get_by_text(re.compile(r"^2 data files of version 0 no longer exist \(VACUUM deleted them\)")).wait_for(timeout=30_000)
    assert re.search(r"restorable\s+no", box.inner_text()), box.inner_text()
    assert box.get_by_role("button", name="Run RESTORE").is_disabled()
    explorer.screenshot(path=str(shots / "light-history-restore-vacuumed.png"))
    assert watch.errors == [] and watch.outside == []


def test_an_advice_run_shows_predicted_vs_measured(page, lab, shots):
    page.set_viewport_size({"width": 1500, "height": 1900})
    watch = Watch(page)
    explorer = _explore(page, lab, "advice_check.ipynb", "path = row_tables.build_small_files('small_files')")
    panel = open_tab(page, explorer, "Maintenance")
    panel.get_by_role("button", name="What should I run?").click()
    advice = panel.get_by_role("list", name="advice")
    advice.get_by_role("listitem").first.wait_for(timeout=60_000)
    advice.get_by_role("button", name=re.compile(r"Preview advice 1: compaction")).click()
    panel.get_by_text("OPTIMIZE (compact): preview").wait_for(timeout=30_000)
    panel.get_by_role("button", name="Run OPTIMIZE (compact)").click()
    check = advice.get_by_role("region", name="predicted vs measured")
    check.wait_for(timeout=60_000)
    settled(page, explorer)
    text = check.text_content()  # h4 titles show in capitals
    assert "Predicted vs measured (version 5 → 6)" in text, text
    rows = check.locator("tbody tr")
    assert rows.count() == 2  # files and bytes (a compaction predicts no depths)
    files = rows.nth(0).locator("th, td").all_inner_texts()
    assert files[0] == "files" and files[1] == "1" and files[2] == "1" and files[4].startswith("yes"), files
    import deltaexplore as dx

    expected = dx.open_table(str(Path(lab.root) / "small_files")).inspect.advise(check=True)
    assert expected.column("within").to_pylist() == [True, True]
    # the other cards are advice of version 5: the list says so, and asks again on a click
    stale = advice.get_by_role("status")
    assert stale.inner_text().startswith("This advice is for version 5; the table is now at version 6."), stale.inner_text()
    explorer.screenshot(path=str(shots / "light-maintenance-advice-check.png"))
    stale.get_by_role("button", name="Advise again").click()
    stale.wait_for(state="detached", timeout=60_000)
    settled(page, explorer)
    fresh = dx.open_table(str(Path(lab.root) / "small_files")).inspect.advise()
    if fresh.num_rows == 0:
        assert advice.inner_text().startswith("Nothing to do"), advice.inner_text()
    else:
        now = [c.get_attribute("aria-label") for c in advice.get_by_role("listitem").all()]
        assert now == [f"{k}: {t}" for k, t in zip(fresh.column("kind").to_pylist(), fresh.column("target").to_pylist())], now
    assert watch.errors == [] and watch.outside == []
