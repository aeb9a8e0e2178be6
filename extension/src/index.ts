/**
 * deltaexplore for JupyterLab: plugin declarations only (behaviour lives in commands.ts and mime.ts).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';

import { activateExplore } from './commands';
import { EXPLORE_PLUGIN_ID } from './tokens';

const explorePlugin: JupyterFrontEndPlugin<void> = {
  id: EXPLORE_PLUGIN_ID,
  description: 'An "Explore Delta Table" command for directories in the file browser.',
  autoStart: true,
  requires: [IFileBrowserFactory],
  activate: (app: JupyterFrontEnd, browsers: IFileBrowserFactory) => activateExplore(app, browsers)
};

export default [explorePlugin];
