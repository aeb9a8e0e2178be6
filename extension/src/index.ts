/**
 * deltaexplore for JupyterLab and Jupyter Notebook 7: plugin declarations only (behaviour lives
 * in tables.ts, commands.ts, panel.ts and mime.ts).
 *
 * Where the plugins work: in JupyterLab everywhere. Notebook 7 loads the same extensions on each
 * of its pages (one app per page: tree, notebooks, edit, consoles, terminals); the renderers
 * (mime.ts: table summaries, saved explorers) work on every page, the file-browser plugin (Δ
 * badges, context menu, explorer tabs) on the pages of `FILE_BROWSER_PAGES`, the ones that show
 * a file browser.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { activateCommands } from './commands';
import { DeltaTables, markAllBrowsers } from './tables';
import { EXPLORE_PLUGIN_ID } from './tokens';

/** Notebook 7 pages with a file browser (JupyterLab, one page for everything, has no page name). */
export const FILE_BROWSER_PAGES: ReadonlyArray<string> = ['tree'];

const explorePlugin: JupyterFrontEndPlugin<void> = {
  id: EXPLORE_PLUGIN_ID,
  description: 'Delta table folders marked in the file browser, with commands to explore them and copy their path.',
  autoStart: true,
  requires: [IFileBrowserFactory, IRenderMimeRegistry],
  optional: [ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    browsers: IFileBrowserFactory,
    rendermime: IRenderMimeRegistry,
    restorer: ILayoutRestorer | null
  ) => {
    const page = PageConfig.getOption('notebookPage');
    if (page && !FILE_BROWSER_PAGES.includes(page)) {
      return; // a Notebook 7 page without a file browser
    }
    const tables = new DeltaTables();
    markAllBrowsers(browsers, tables);
    activateCommands(app, browsers, rendermime, tables, restorer);
  }
};

export default [explorePlugin];
