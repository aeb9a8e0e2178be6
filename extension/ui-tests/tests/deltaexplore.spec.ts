/**
 * The deltaexplore JupyterLab extension in a real JupyterLab: the file-browser command opens the
 * explorer of a Delta table, and the MIME renderer shows saved table summaries (escaped).
 */
import { expect, test } from '@jupyterlab/galata';

const MIME = 'application/vnd.deltaexplore.table+json';

test.use({ autoGoto: true });

test('"Explore Delta Table" opens the explorer of a table directory', async ({ page }) => {
  await page.filebrowser.openDirectory('/');
  const sales = page.getByRole('listitem', { name: /^Name: sales / });
  await sales.click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Explore Delta Table' }).click();

  const explorer = page.locator('.jp-CodeConsole .dxe-explorer');
  await expect(explorer).toBeVisible({ timeout: 90000 });
  await expect(explorer.getByRole('tab')).toHaveCount(8);
  await expect(explorer.getByRole('tab', { name: 'Overview' })).toHaveAttribute('aria-selected', 'true');
  await expect(explorer.getByRole('tabpanel')).toContainText('deltaexplore tour: sales by region');

  await explorer.getByRole('tab', { name: 'Files' }).click();
  await expect(explorer.getByRole('region', { name: 'files', exact: true }).locator('.dxe-grid-count')).toHaveText('9 files', {
    timeout: 60000
  });
});

test('the command is offered for directories only', async ({ page }) => {
  await page.filebrowser.openDirectory('/sales');
  await page.getByRole('listitem', { name: /^Name: _delta_log / }).click({ button: 'right' });
  await expect(page.getByRole('menuitem', { name: 'Explore Delta Table' })).toBeVisible();
  await page.keyboard.press('Escape');
  await page.filebrowser.openDirectory('/sales/_delta_log');
  await page.getByRole('listitem', { name: /^Name: 00000000000000000000\.json / }).click({ button: 'right' });
  await expect(page.getByRole('menu').first()).toBeVisible();
  await expect(page.getByRole('menuitem', { name: 'Explore Delta Table' })).toHaveCount(0);
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
