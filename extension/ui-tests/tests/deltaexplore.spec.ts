/**
 * The deltaexplore JupyterLab extension in a real JupyterLab: Delta table folders are marked in
 * the file browser and only they get the Delta commands; the explorer opens in a main-area tab
 * (one kernel per table); a folder that cannot be read gives a short message; the copy
 * commands copy; the MIME renderer shows saved table summaries (escaped).
 */
import { expect, test as base } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';

const MIME = 'application/vnd.deltaexplore.table+json';

/** Every request that would leave the machine is aborted and recorded (a failure). */
const test = base.extend<{ external: string[] }>({
  external: async ({}, use) => {
    await use([]);
  },
  context: async ({ context, external }, use) => {
    await context.route(/^(?!https?:\/\/(127\.0\.0\.1|localhost)[:/]|data:|blob:)/, route => {
      external.push(route.request().url());
      return route.abort();
    });
    await use(context);
  }
});

test.use({ autoGoto: true });

test.afterEach(({ external }) => {
  expect(external, 'requests that left the machine').toEqual([]);
});

/** Open `name`'s explorer tab from the file browser's context menu. */
async function openExplorer(page: Page, name: string): Promise<Locator> {
  await page.getByRole('listitem', { name: new RegExp(`^Name: ${name} `) }).click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Open in Delta Explorer' }).click();
  return page.locator('#jp-main-dock-panel .dx-explorer-panel:visible');
}

/** The explorer fills its tab from the top: header in view, nothing drawn over its left edge. */
async function expectDocumentLike(page: Page, tab: Locator): Promise<void> {
  const content = tab.locator('.dx-explorer-content');
  const explorer = content.locator('.dxe-explorer');
  await expect(explorer.locator('.dxe-header')).toBeInViewport();
  await expect(explorer.getByRole('slider', { name: 'version' })).toBeInViewport();
  await expect(explorer.getByRole('tablist')).toBeInViewport();
  await expect(explorer.getByRole('tab', { name: 'Overview' })).toBeInViewport();
  const area = (await content.boundingBox())!;
  const header = (await explorer.locator('.dxe-header').boundingBox())!;
  expect(header.y).toBeGreaterThanOrEqual(area.y); // not scrolled off the top
  expect(header.y - area.y).toBeLessThan(40); // and the explorer starts at the top of the tab
  expect(area.height).toBeGreaterThan(400); // a document-like tab, not a split console
  const box = (await explorer.boundingBox())!;
  // points along the explorer's left edge and across its width belong to the explorer
  const points: [number, number][] = [];
  const bottom = Math.min(box.y + box.height, area.y + area.height) - 4;
  for (const fy of [0.02, 0.25, 0.5, 0.75, 1]) {
    const y = box.y + 4 + fy * (bottom - box.y - 4);
    for (const x of [box.x + 3, box.x + 40, box.x + 70, box.x + box.width / 2]) {
      points.push([x, y]);
    }
  }
  const outside = await page.evaluate(
    ([pts]) =>
      pts
        .map(([x, y]) => {
          const hit = document.elementFromPoint(x, y);
          return hit && hit.closest('.dxe-explorer') ? null : `(${x},${y}): ${hit?.className || hit?.tagName}`;
        })
        .filter(Boolean),
    [points] as const
  );
  expect(outside, 'elements drawn over the explorer').toEqual([]);
  // nothing of a console: no prompt, no input editor, no cursor position in the status bar
  await expect(tab.locator('.jp-CodeConsole, .jp-InputArea, .cm-editor, .jp-OutputPrompt:visible')).toHaveCount(0);
  await expect(page.locator('#jp-main-statusbar').getByText(/Ln \d+, Col \d+/).filter({ visible: true })).toHaveCount(0);
}

test('Delta table folders carry a badge and the Delta commands; other folders do not', async ({ page }) => {
  await page.filebrowser.openDirectory('/');
  const tables = page.locator('.jp-DirListing-item[data-delta-table="true"]');
  await expect(tables).toHaveCount(3); // sales, hostile, broken_table
  await expect(page.getByRole('listitem', { name: /^Name: sales / })).toHaveAttribute('data-delta-table', 'true');
  await expect(page.getByRole('listitem', { name: /^Name: plain_folder / })).not.toHaveAttribute('data-delta-table', 'true');
  // the item's tooltip says so once, however often the listing is drawn again
  await page.filebrowser.refresh();
  const title = await page.getByRole('listitem', { name: /^Name: sales / }).getAttribute('title');
  expect(title!.match(/Delta table/g)).toHaveLength(1);
  await page.screenshot({ path: 'test-results/filebrowser-badges.png' });

  await page.getByRole('listitem', { name: /^Name: plain_folder / }).click({ button: 'right' });
  await expect(page.getByRole('menu').first()).toBeVisible();
  await expect(page.getByRole('menuitem', { name: 'Open in Delta Explorer' })).toHaveCount(0);
  await expect(page.getByRole('menuitem', { name: 'Copy PySpark Read Snippet' })).toHaveCount(0);
  await page.keyboard.press('Escape');

  await page.getByRole('listitem', { name: /^Name: sales / }).click({ button: 'right' });
  await expect(page.getByRole('menuitem', { name: 'Open in Delta Explorer' })).toBeVisible();
  await expect(page.getByRole('menuitem', { name: 'Copy Delta Table Path' })).toBeVisible();
  await expect(page.getByRole('menuitem', { name: 'Copy PySpark Read Snippet' })).toBeVisible();
  await page.screenshot({ path: 'test-results/filebrowser-menu.png' });
  await page.keyboard.press('Escape');
  // close up: a selected table folder keeps a visible icon and badge
  await page.locator('.jp-DirListing-content').screenshot({ path: 'test-results/filebrowser-listing.png' });

  await page.filebrowser.openDirectory('/sales/_delta_log');
  await page.getByRole('listitem', { name: /^Name: 00000000000000000000\.json / }).click({ button: 'right' });
  await expect(page.getByRole('menu').first()).toBeVisible();
  await expect(page.getByRole('menuitem', { name: 'Open in Delta Explorer' })).toHaveCount(0);
});

test.describe('the explorer tab', () => {
  // galata's kernel mock answers a restart with 201 (it assumes every POST creates): the real
  // server's answers, here, so that Reload (a kernel restart) works as in JupyterLab
  test.use({ kernels: null });

  test('the explorer opens in a document-like main-area tab, one kernel per table', async ({ page }) => {
    await page.filebrowser.openDirectory('/');
    const sessions = async () => (await (await page.request.get('/api/sessions')).json()).length;
    const sessionsBefore = await sessions();
    const tab = await openExplorer(page, 'sales');
    const explorer = tab.locator('.dxe-explorer');
    await expect(explorer).toBeVisible({ timeout: 90000 });
    await expect(page.getByRole('tab', { name: 'sales', exact: true })).toBeVisible();
    await expect(explorer.getByRole('tab', { name: 'Overview' })).toHaveAttribute('aria-selected', 'true');
    await expect(explorer).toContainText('deltaexplore tour: sales by region');
    await expectDocumentLike(page, tab);
    // a small toolbar: reload, where the table is, the kernel; none of a console's buttons
    const toolbar = tab.locator('.jp-Toolbar').first();
    await expect(toolbar.getByRole('button', { name: /Reload/ })).toBeVisible();
    await expect(toolbar).toContainText(/Python/); // the table kernel's name
    await expect(toolbar.locator('[data-command^="console:"]')).toHaveCount(0);
    await page.screenshot({ path: 'test-results/explorer-tab.png' });

    // the explorer scrolls inside the tab, and the tab's header stays the tab's
    await explorer.getByRole('tab', { name: 'History' }).click();
    await expect(explorer.getByRole('tab', { name: 'History' })).toHaveAttribute('aria-selected', 'true');
    await expect(explorer.getByText(/Timeline · 8 commits/)).toBeVisible({ timeout: 60000 });
    await expect(explorer.getByRole('region', { name: 'history', exact: true }).locator('.ag-row').first()).toBeVisible();
    await page.screenshot({ path: 'test-results/explorer-tab-history.png' });

    await page.theme.setDarkTheme();
    await explorer.getByRole('tab', { name: 'Overview' }).click();
    await expectDocumentLike(page, tab);
    await page.screenshot({ path: 'test-results/explorer-tab-dark.png' });
    await page.theme.setLightTheme();

    // the same table again: its tab comes forward, no second kernel
    await page.getByRole('tab', { name: 'Launcher' }).click().catch(() => undefined);
    await openExplorer(page, 'sales');
    await expect(explorer).toBeVisible();
    await expect(page.locator('#jp-main-dock-panel .dx-explorer-panel')).toHaveCount(1);
    expect(await sessions()).toBe(sessionsBefore + 1);

    // reload: the same kernel, restarted, shows the explorer again from its top
    await tab.locator('.jp-Toolbar').first().getByRole('button', { name: /Reload/ }).click();
    await expect(explorer.getByRole('slider', { name: 'version' })).toBeVisible({ timeout: 90000 });
    await expectDocumentLike(page, tab);
    expect(await sessions()).toBe(sessionsBefore + 1);

    // a page reload brings the tab back, on the same kernel
    await page.waitForTimeout(1500); // the workspace is saved (debounced)
    await page.reload({ waitForIsReady: false }); // galata waits for a launcher: the explorer is in front
    const restored = page.locator('#jp-main-dock-panel .dx-explorer-panel .dxe-explorer');
    await expect(restored.getByRole('slider', { name: 'version' })).toBeVisible({ timeout: 90000 });
    await expect(page.locator('#jp-main-dock-panel .dx-explorer-panel')).toHaveCount(1);
    expect(await sessions()).toBe(sessionsBefore + 1);

    // closing the tab ends the table's kernel
    await page.getByRole('tab', { name: 'sales', exact: true }).getByTitle(/Close/).click();
    await expect(page.locator('#jp-main-dock-panel .dx-explorer-panel')).toHaveCount(0);
    await expect.poll(sessions, { timeout: 30000 }).toBe(sessionsBefore);
  });
});

test('a folder that cannot be read shows a short message, not a traceback', async ({ page }) => {
  await page.filebrowser.openDirectory('/');
  const tab = await openExplorer(page, 'broken_table');
  const message = tab.locator('.dx-lab-message');
  await expect(message).toBeVisible({ timeout: 90000 });
  await expect(message).toContainText('as a Delta table');
  await expect(tab).not.toContainText('Traceback');
  await expect(tab.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')).toHaveCount(0);
  await expect(tab.locator('.jp-CodeConsole, .jp-InputArea, .cm-editor')).toHaveCount(0);
  await page.screenshot({ path: 'test-results/explorer-tab-error.png' });
  await page.theme.setDarkTheme();
  await expect(message).toBeVisible();
  await page.screenshot({ path: 'test-results/explorer-tab-error-dark.png' });
  await page.theme.setLightTheme();
});

test('"Copy PySpark Read Snippet" copies code that reads the table', async ({ page, context }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.filebrowser.openDirectory('/');
  await page.getByRole('listitem', { name: /^Name: sales / }).click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Copy PySpark Read Snippet' }).click();
  await expect(page.getByText(/Copied a PySpark snippet reading sales/)).toBeVisible();
  const text = await page.evaluate(() => navigator.clipboard.readText());
  expect(text).toContain('import deltaexplore.spark as dxs');
  expect(text).toMatch(/df = dxs\.read\(spark, ".*\/sales"\)/);
  await page.getByRole('listitem', { name: /^Name: sales / }).click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Copy Delta Table Path' }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toMatch(/^\/.*\/sales$/);
});

test('saved table summaries render with the MIME renderer, escaped', async ({ page, tmpPath }) => {
  const summary = {
    uri: '/data/<script>alert(1)</script>',
    version: 7,
    timestamp: '2024-01-01T07:00:00+00:00',
    protocol: { reader: 3, writer: 7 },
    name: '<img src=x onerror=alert(1)>',
    partition_columns: ['region'],
    columns: [
      { name: '<b>bold</b>', type: 'string' },
      { name: 'id', type: 'long' }
    ],
    num_files: 1234,
    size_bytes: 5 * 1024 * 1024
  };
  const notebook = {
    cells: [
      {
        cell_type: 'code',
        execution_count: 1,
        id: 'c1',
        metadata: {},
        source: 'dx.open_table(path)',
        outputs: [
          {
            output_type: 'execute_result',
            execution_count: 1,
            metadata: {},
            data: { [MIME]: summary, 'text/html': '<b>fallback html</b>', 'text/plain': 'Delta table' }
          }
        ]
      }
    ],
    metadata: { kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' } },
    nbformat: 4,
    nbformat_minor: 5
  };
  const dialogs: string[] = [];
  page.on('dialog', d => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.contents.uploadContent(JSON.stringify(notebook), 'text', `${tmpPath}/saved.ipynb`);
  await page.notebook.openByPath(`${tmpPath}/saved.ipynb`);
  const card = page.getByRole('region', { name: 'Delta table summary' });
  await expect(card).toBeVisible();
  await expect(card.getByRole('heading')).toHaveText('Delta table <img src=x onerror=alert(1)>');
  await expect(card).toContainText('/data/<script>alert(1)</script>');
  await expect(card).toContainText('1,234 (5.0 MiB)');
  await expect(card.getByRole('table', { name: 'columns' })).toContainText('<b>bold</b>');
  await expect(page.locator('.dx-summary script, .dx-summary img, .dx-summary b')).toHaveCount(0);
  await expect(page.getByText('fallback html')).toHaveCount(0);
  expect(dialogs).toEqual([]);
});
