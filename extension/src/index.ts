/**
 * deltaexplore for JupyterLab: plugin declarations only (behaviour lives in tables.ts,
 * commands.ts, panel.ts and mime.ts).
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import { activateCommands } from './commands';
import { DeltaTables, markAllBrowsers } from './tables';
import { EXPLORE_PLUGIN_ID } from './tokens';

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
    const tables = new DeltaTables();
    markAllBrowsers(browsers, tables);
    activateCommands(app, browsers, rendermime, tables, restorer);
  }
};

export default [explorePlugin];
