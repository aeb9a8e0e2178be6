/**
 * Commands on Delta table folders of the file browser (offered only there):
 * - "Open in Delta Explorer": the explorer in a main-area tab, one kernel per table (opening
 *   the same table again shows its tab); a folder that cannot be read shows a short message;
 * - "Copy Path": the table's location on the server;
 * - "Copy PySpark Read Snippet": reading the table with deltaexplore's Spark reader.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Clipboard, Notification } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { Widget } from '@lumino/widgets';

import { DeltaTables, IDeltaTable } from './tables';
import { CommandIDs } from './tokens';

/** The Python the table's kernel runs (JSON string literals are valid Python literals). */
export function exploreCode(location: string): string {
  return `from deltaexplore.magics.lab import open_explorer\nopen_explorer(${JSON.stringify(location)})`;
}

/** Reading the table with plain PySpark through deltaexplore (no Delta jars needed). */
export function pysparkSnippet(location: string): string {
  return [
    'import deltaexplore.spark as dxs',
    '',
    'spark = dxs.get_spark()  # the active session, or a local one',
    `df = dxs.read(spark, ${JSON.stringify(location)})  # deletion vectors applied`,
    'df.show()'
  ].join('\n');
}

/** What `console:create` returns that we use (typed here to avoid depending on @jupyterlab/console). */
interface IConsolePanelLike extends Widget {
  sessionContext: { ready: Promise<void>; session: { kernel: unknown } | null };
  console: { inject(code: string): Promise<void> };
}

export const EXPLORER_PANEL_CLASS = 'dx-explorer-panel';

export function activateCommands(app: JupyterFrontEnd, browsers: IFileBrowserFactory, tables: DeltaTables): void {
  const open = new Map<string, IConsolePanelLike>();

  /** The Delta table the command is about: its `path` argument, else the selected folder. */
  const target = (args: { path?: unknown }): IDeltaTable | undefined => {
    if (typeof args.path === 'string') {
      return tables.get(args.path);
    }
    const item = browsers.tracker.currentWidget?.selectedItems().next()?.value;
    return item && item.type === 'directory' ? tables.get(item.path) : undefined;
  };

  app.commands.addCommand(CommandIDs.exploreTable, {
    label: 'Open in Delta Explorer',
    caption: 'Open the deltaexplore explorer of this Delta table in a tab (one kernel per table)',
    isVisible: args => !!target(args),
    execute: async args => {
      const table = target(args);
      if (!table) {
        Notification.warning('Not a Delta table folder (no _delta_log/ found).', { autoClose: 5000 });
        return;
      }
      const existing = open.get(table.path);
      if (existing && !existing.isDisposed) {
        app.shell.activateById(existing.id);
        return;
      }
      try {
        await app.serviceManager.kernelspecs.ready;
        const specs = app.serviceManager.kernelspecs.specs;
        const python = Object.values(specs?.kernelspecs ?? {}).find(k => k?.language === 'python');
        const panel = (await app.commands.execute('console:create', {
          path: '',
          name: `Delta: ${table.name}`,
          activate: true,
          insertMode: 'tab-after',
          kernelPreference: { name: python?.name ?? specs?.default, autoStartDefault: true, shouldStart: true }
        })) as IConsolePanelLike;
        panel.addClass(EXPLORER_PANEL_CLASS);
        panel.title.label = table.name;
        panel.title.caption = `Delta table ${table.location}`;
        open.set(table.path, panel);
        panel.disposed.connect(() => open.delete(table.path));
        await panel.sessionContext.ready;
        await panel.console.inject(exploreCode(table.location));
      } catch (reason) {
        Notification.error(`Cannot open ${table.name} in the Delta explorer: ${String(reason).slice(0, 200)}`, {
          autoClose: 8000
        });
      }
    }
  });

  app.commands.addCommand(CommandIDs.copyPath, {
    label: 'Copy Delta Table Path',
    caption: 'Copy where this Delta table is on the server',
    isVisible: args => !!target(args),
    execute: args => {
      const table = target(args);
      if (table) {
        Clipboard.copyToSystem(table.location);
        Notification.info(`Copied ${table.location}`, { autoClose: 3000 });
      }
    }
  });

  app.commands.addCommand(CommandIDs.copySnippet, {
    label: 'Copy PySpark Read Snippet',
    caption: 'Copy Python that reads this Delta table with PySpark (deltaexplore.spark.read)',
    isVisible: args => !!target(args),
    execute: args => {
      const table = target(args);
      if (table) {
        Clipboard.copyToSystem(pysparkSnippet(table.location));
        Notification.info(`Copied a PySpark snippet reading ${table.name}`, { autoClose: 3000 });
      }
    }
  });
}
