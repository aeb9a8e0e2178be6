/**
 * The deltaexplore JupyterLab extension in a real JupyterLab: Delta table folders are marked in
 * the file browser and only they get the Delta commands; the explorer opens in a main-area tab
 * (one kernel per table); a folder that cannot be read gives a short message; the copy
 * commands copy; the MIME renderer shows saved table summaries (escaped).
 */
import { expect, test } from '@jupyterlab/galata';

const MIME = 'application/vnd.deltaexplore.table+json';

test.use({ autoGoto: true });

test('Delta table folders carry a badge and the Delta commands; other folders do not', async ({ page }) => {
  await page.filebrowser.openDirectory('/');
  const tables = page.locator('.jp-DirListing-item[data-delta-table="true"]');
  await expect(tables).toHaveCount(3); // sales, hostile, broken_table
  await expect(page.getByRole('listitem', { name: /^Name: sales / })).toHaveAttribute('data-delta-table', 'true');
  await expect(page.getByRole('listitem', { name: /^Name: plain_folder / })).not.toHaveAttribute('data-delta-table', 'true');
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

  await page.filebrowser.openDirectory('/sales/_delta_log');
  await page.getByRole('listitem', { name: /^Name: 00000000000000000000\.json / }).click({ button: 'right' });
  await expect(page.getByRole('menu').first()).toBeVisible();
  await expect(page.getByRole('menuitem', { name: 'Open in Delta Explorer' })).toHaveCount(0);
});

test('the explorer opens in a main-area tab, one kernel per table', async ({ page }) => {
  await page.filebrowser.openDirectory('/');
  const sessionsBefore = (await (await page.request.get('/api/sessions')).json()).length;
  await page.getByRole('listitem', { name: /^Name: sales / }).click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Open in Delta Explorer' }).click();

  const tab = page.locator('#jp-main-dock-panel .dx-explorer-panel');
  const explorer = tab.locator('.dxe-explorer');
  await expect(explorer).toBeVisible({ timeout: 90000 });
  await expect(page.getByRole('tab', { name: /Delta: sales/ })).toBeVisible();
  const box = await tab.boundingBox();
  expect(box!.height).toBeGreaterThan(400); // a document-like tab, not a 100 px split console
  await expect(explorer.getByRole('tab', { name: 'Overview' })).toHaveAttribute('aria-selected', 'true');
  await expect(explorer).toContainText('deltaexplore tour: sales by region');
  await expect(tab.locator('.jp-CodeConsole-promptCell')).toBeHidden();
  await page.screenshot({ path: 'test-results/explorer-tab.png' });

  // the same table again: its tab comes forward, no second kernel
  await page.getByRole('tab', { name: 'Launcher' }).click().catch(() => undefined);
  await page.getByRole('listitem', { name: /^Name: sales / }).click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Open in Delta Explorer' }).click();
  await expect(explorer).toBeVisible();
  await expect(page.locator('#jp-main-dock-panel .dx-explorer-panel')).toHaveCount(1);
  const sessionsAfter = (await (await page.request.get('/api/sessions')).json()).length;
  expect(sessionsAfter).toBe(sessionsBefore + 1);
});

test('a folder that cannot be read shows a short message, not a traceback', async ({ page }) => {
  await page.filebrowser.openDirectory('/');
  await page.getByRole('listitem', { name: /^Name: broken_table / }).click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Open in Delta Explorer' }).click();
  const message = page.locator('.dx-explorer-panel .dx-lab-message');
  await expect(message).toBeVisible({ timeout: 90000 });
  await expect(message).toContainText('as a Delta table');
  await expect(page.locator('.dx-explorer-panel')).not.toContainText('Traceback');
  await expect(page.locator('.dx-explorer-panel .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')).toHaveCount(0);
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
