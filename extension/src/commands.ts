/**
 * Commands on Delta table folders of the file browser (offered only there):
 * - "Open in Delta Explorer": the explorer in a main-area tab (panel.ts), one kernel per table
 *   (opening the same table again shows its tab); a folder that cannot be read shows a short
 *   message;
 * - "Copy Path": the table's location on the server;
 * - "Copy PySpark Read Snippet": reading the table with deltaexplore's Spark reader.
 */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { Clipboard, Notification, WidgetTracker } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { copyIcon } from '@jupyterlab/ui-components';
import { TabPanel, Widget } from '@lumino/widgets';

import { deltaTableIcon, ExplorerPanel } from './panel';
import { DeltaTables, IDeltaTable } from './tables';
import { CommandIDs } from './tokens';

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

/**
 * Notebook 7's tree page has one main widget, its tab panel (Files, Running, ...): explorer tabs
 * open there, beside them. None in JupyterLab, where they open in the main dock area.
 */
function notebookTree(app: JupyterFrontEnd): TabPanel | null {
  for (const widget of app.shell.widgets('main')) {
    if (widget instanceof TabPanel && widget.hasClass('jp-TreePanel')) {
      return widget;
    }
  }
  return null;
}

/** Show `panel` (added to the main area first when it is new). */
function showInMain(app: JupyterFrontEnd, panel: Widget): void {
  const tree = notebookTree(app);
  if (tree) {
    if (!tree.widgets.includes(panel)) {
      // closed, the tab gives way to the one it was opened from (Files, most likely)
      const from = tree.currentWidget;
      panel.disposed.connect(() => {
        if (from && !from.isDisposed && tree.widgets.includes(from)) {
          tree.currentWidget = from;
        }
      });
      tree.addWidget(panel);
    }
    tree.currentWidget = panel;
    return;
  }
  if (!panel.isAttached) {
    app.shell.add(panel, 'main', { mode: 'tab-after' });
  }
  app.shell.activateById(panel.id);
}

export function activateCommands(
  app: JupyterFrontEnd,
  browsers: IFileBrowserFactory,
  rendermime: IRenderMimeRegistry,
  tables: DeltaTables,
  restorer: ILayoutRestorer | null
): void {
  const open = new Map<string, ExplorerPanel>();
  // explorer tabs come back after a page reload (and find their table's kernel again)
  const tracker = new WidgetTracker<ExplorerPanel>({ namespace: 'deltaexplore-explorer' });
  if (restorer) {
    void restorer.restore(tracker, {
      command: CommandIDs.exploreTable,
      args: panel => ({ path: panel.table.path }),
      name: panel => panel.table.path
    });
  }

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
    icon: deltaTableIcon,
    caption: 'Open the deltaexplore explorer of this Delta table in a tab (one kernel per table)',
    isVisible: args => !!target(args),
    execute: async args => {
      let table = target(args);
      if (!table && typeof args.path === 'string') {
        // a restored tab: its folder's parent has not been listed yet
        await tables.list(args.path.replace(/\/?[^/]*\/?$/, ''));
        table = target(args);
      }
      if (!table) {
        Notification.warning('Not a Delta table folder (no _delta_log/ found).', { autoClose: 5000 });
        return;
      }
      const existing = open.get(table.path);
      if (existing && !existing.isDisposed) {
        showInMain(app, existing);
        return;
      }
      await app.serviceManager.kernelspecs.ready;
      const specs = app.serviceManager.kernelspecs.specs;
      const python = Object.values(specs?.kernelspecs ?? {}).find(k => k?.language === 'python');
      const panel = new ExplorerPanel({
        table,
        serviceManager: app.serviceManager,
        rendermime,
        kernelName: python?.name ?? specs?.default
      });
      const key = table.path;
      open.set(key, panel);
      panel.disposed.connect(() => open.delete(key));
      showInMain(app, panel);
      void tracker.add(panel);
      await panel.start(); // errors show in the tab, as a short message
    }
  });

  app.commands.addCommand(CommandIDs.copyPath, {
    label: 'Copy Delta Table Path',
    icon: copyIcon,
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
    icon: copyIcon,
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
