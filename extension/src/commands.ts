/**
 * "Explore Delta table": open a Python console next to the file browser and show the explorer
 * of the selected directory there (`dx.explore(path)` runs in the console's kernel).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';

import { CommandIDs } from './tokens';

/** The Python a console runs to explore `path` (a JSON string literal is a valid Python literal). */
export function exploreCode(path: string): string {
  return `import deltaexplore as dx\ndx.explore(${JSON.stringify(path)})`;
}

/** What `console:create` returns that we use (typed here to avoid depending on @jupyterlab/console). */
interface IConsolePanelLike {
  sessionContext: { ready: Promise<void> };
  console: { inject(code: string): Promise<void> };
}

export function activateExplore(app: JupyterFrontEnd, browsers: IFileBrowserFactory): void {
  app.commands.addCommand(CommandIDs.exploreTable, {
    label: 'Explore Delta Table',
    caption: 'Open the deltaexplore explorer for this directory in a Python console',
    isVisible: () => {
      const item = browsers.tracker.currentWidget?.selectedItems().next()?.value;
      return !!item && item.type === 'directory';
    },
    execute: async args => {
      const browser = browsers.tracker.currentWidget;
      const item = browser?.selectedItems().next()?.value;
      const path = (args.path as string | undefined) ?? item?.path;
      if (!path) {
        return;
      }
      await app.serviceManager.kernelspecs.ready;
      const specs = app.serviceManager.kernelspecs.specs;
      const python = Object.values(specs?.kernelspecs ?? {}).find(k => k?.language === 'python');
      const panel = (await app.commands.execute('console:create', {
        path: browser?.model.path ?? '',
        activate: true,
        insertMode: 'split-bottom',
        kernelPreference: { name: python?.name ?? specs?.default, autoStartDefault: true }
      })) as IConsolePanelLike;
      await panel.sessionContext.ready;
      await panel.console.inject(exploreCode(path));
    }
  });
}
