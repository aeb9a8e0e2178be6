/**
 * The explorer tab: a document-like main-area panel for one Delta table.
 *
 * The panel owns a session (one kernel per table, shut down when the tab closes) and an output
 * area that shows what `open_explorer(location)` returns in that kernel: the explorer widget, or
 * a short message card. Nothing of a console: no prompt, no input, no editor. The widget views
 * are drawn by the widget manager of `@jupyter-widgets/jupyterlab-manager` (the one JupyterLab
 * already runs, shared at run time), bound to this panel's kernel.
 */
import { ISessionContext, MainAreaWidget, SessionContext, Toolbar, ToolbarButton } from '@jupyterlab/apputils';
import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { KernelMessage, ServiceManager } from '@jupyterlab/services';
import { LabIcon, refreshIcon } from '@jupyterlab/ui-components';
import { IDisposable } from '@lumino/disposable';
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import { IDeltaTable } from './tables';

export const EXPLORER_PANEL_CLASS = 'dx-explorer-panel';

/** The tab icon: a folder-free "Δ" badge in the brand colour (shapes only, no text). */
export const deltaTableIcon = new LabIcon({
  name: 'deltaexplore:table',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">' +
    '<path class="jp-icon-brand0 jp-icon-selectable" fill="#1976d2" d="M8 1.5 15 14.5H1Z"/>' +
    '<path class="jp-icon-contrast0 jp-icon-selectable-inverse" fill="#fff" d="M8 6 11.2 12.2H4.8Z"/></svg>'
});

/** The Python the table's kernel runs (JSON string literals are valid Python literals). */
export function exploreCode(location: string): string {
  return `from deltaexplore.magics.lab import open_explorer\nopen_explorer(${JSON.stringify(location)})`;
}

/** Bind a widget manager to `sessionContext`'s kernel and make `rendermime` draw its views. */
async function connectWidgetManager(
  sessionContext: ISessionContext,
  rendermime: IRenderMimeRegistry
): Promise<IDisposable | null> {
  try {
    // shared at run time with JupyterLab's own widget manager extension (not bundled)
    const manager = await import('@jupyter-widgets/jupyterlab-manager');
    // What `registerWidgetManager` reads of a document context: the session, a save signal,
    // metadata of a model (none: the panel saves no widget state), a URL resolver.
    const context = {
      sessionContext,
      saveState: new Signal<unknown, string>({}),
      model: { getMetadata: (): undefined => undefined, dirty: false },
      urlResolver: rendermime.resolver
    };
    return manager.registerWidgetManager(
      context as unknown as Parameters<typeof manager.registerWidgetManager>[0],
      rendermime,
      [][Symbol.iterator]()
    );
  } catch (reason) {
    console.error('deltaexplore: the Jupyter widget manager is not available', reason);
    return null;
  }
}

function strip(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, '');
}

/** The body of the tab: a one-line status (starting, errors) above the output area. */
class ExplorerContent extends Panel {
  readonly status = new Widget({ node: document.createElement('div') });
  readonly area: OutputArea;

  constructor(rendermime: IRenderMimeRegistry) {
    super();
    this.addClass('dx-explorer-content');
    this.status.addClass('dx-explorer-status');
    this.status.node.setAttribute('role', 'status');
    this.area = new OutputArea({ model: new OutputAreaModel({ trusted: true }), rendermime });
    this.area.addClass('dx-explorer-output-area');
    this.addWidget(this.status);
    this.addWidget(this.area);
  }

  /** Show `text` (as text) in the status line; `error` draws it as a message card. */
  say(text: string | null, error?: { title: string; detail: string }): void {
    const node = this.status.node;
    node.replaceChildren();
    node.className = 'lm-Widget dx-explorer-status';
    if (error) {
      const card = document.createElement('div');
      card.className = 'dx-lab-message';
      card.setAttribute('role', 'alert');
      const title = document.createElement('div');
      title.className = 'dx-lab-message-title';
      title.textContent = error.title;
      const detail = document.createElement('div');
      detail.textContent = error.detail;
      card.append(title, detail);
      node.appendChild(card);
    } else if (text) {
      node.classList.add('dx-explorer-loading');
      node.textContent = text;
    }
    this.status.setHidden(!text && !error);
  }
}

export interface IExplorerPanelOptions {
  table: IDeltaTable;
  serviceManager: ServiceManager.IManager;
  rendermime: IRenderMimeRegistry;
  /** the kernel spec to start (a Python one) */
  kernelName?: string;
}

/** One Delta table's explorer in a main-area tab, with its own kernel. */
export class ExplorerPanel extends MainAreaWidget<ExplorerContent> {
  readonly table: IDeltaTable;
  readonly sessionContext: SessionContext;
  private _widgets: IDisposable | null = null;
  private _restarted = false;
  private _running: Promise<void> | null = null;

  constructor(options: IExplorerPanelOptions) {
    const rendermime = options.rendermime.clone();
    const content = new ExplorerContent(rendermime);
    super({ content });
    const { table, serviceManager } = options;
    this.table = table;
    this.addClass(EXPLORER_PANEL_CLASS);
    this.id = `deltaexplore-${Math.random().toString(36).slice(2, 10)}`;
    this.title.label = table.name;
    this.title.caption = `Delta table ${table.location}`;
    this.title.icon = deltaTableIcon;
    this.title.closable = true;
    this.sessionContext = new SessionContext({
      sessionManager: serviceManager.sessions,
      specsManager: serviceManager.kernelspecs,
      // one session per table: reopening the page finds this table's kernel again
      path: table.path,
      name: `Delta: ${table.name}`,
      type: 'deltaexplore',
      kernelPreference: {
        name: options.kernelName,
        language: 'python',
        shouldStart: true,
        autoStartDefault: true,
        shutdownOnDispose: true
      }
    });
    this.sessionContext.statusChanged.connect(this._onStatus, this);
    // the end of a restart through this session (the Reload button, the Kernel menu)
    this.sessionContext.kernelChanged.connect(() => {
      if (this._restarted && this.sessionContext.isReady && this.sessionContext.session?.kernel) {
        this._restarted = false;
        void this.run();
      }
    }, this);

    this.toolbar.addClass('dx-explorer-toolbar');
    this.toolbar.addItem(
      'reload',
      new ToolbarButton({
        icon: refreshIcon,
        label: 'Reload',
        tooltip: 'Restart this table’s kernel and open the explorer again',
        onClick: () => void this.restart()
      })
    );
    this.toolbar.addItem('spacer', Toolbar.createSpacerItem());
    this.toolbar.addItem('kernel', Toolbar.createKernelNameItem(this.sessionContext));
    this.toolbar.addItem('status', Toolbar.createKernelStatusItem(this.sessionContext));
  }

  /** Start (or find) the table's kernel, connect widgets, run the explorer. */
  async start(): Promise<void> {
    const content = this.content;
    content.say(`Opening ${this.table.name}: starting a Python kernel…`);
    try {
      await this.sessionContext.initialize();
      await this.sessionContext.ready;
      if (!this.sessionContext.session?.kernel) {
        content.say(null, {
          title: `Cannot open ${this.table.name} in the Delta explorer`,
          detail: 'No Python kernel could be started for it.'
        });
        return;
      }
      this._widgets = await connectWidgetManager(this.sessionContext, content.area.rendermime);
      await this.run();
    } catch (reason) {
      content.say(null, {
        title: `Cannot open ${this.table.name} in the Delta explorer`,
        detail: String(reason).slice(0, 300)
      });
    }
  }

  /** Run the explorer in the kernel again (after a restart). */
  run(): Promise<void> {
    if (!this._running) {
      this._running = this._run().finally(() => (this._running = null));
    }
    return this._running;
  }

  /** Restart the kernel; the explorer opens again once it is back. */
  async restart(): Promise<void> {
    if (this.sessionContext.session?.kernel) {
      this.content.say(`Restarting the kernel of ${this.table.name}…`);
      await this.sessionContext.restartKernel();
    } else {
      await this.start();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._widgets?.dispose();
    this.sessionContext.dispose(); // shuts the table's kernel down (shutdownOnDispose)
    super.dispose();
  }

  private async _run(): Promise<void> {
    const content = this.content;
    content.area.model.clear();
    content.say(`Reading ${this.table.name}…`);
    let reply: KernelMessage.IExecuteReplyMsg | undefined;
    try {
      reply = await OutputArea.execute(exploreCode(this.table.location), content.area, this.sessionContext);
    } catch (reason) {
      content.say(null, { title: `Cannot open ${this.table.name} in the Delta explorer`, detail: String(reason) });
      return;
    }
    const model = content.area.model;
    // an exception the kernel raised (deltaexplore not importable there, a bug): its name and
    // message in a card, never the traceback
    for (let i = 0; i < model.length; i++) {
      const out = model.get(i);
      if (out.type === 'error') {
        const raw = out.toJSON() as { ename?: string; evalue?: string };
        model.clear();
        content.say(null, {
          title: `Cannot open ${this.table.name} in the Delta explorer`,
          detail: strip(`${raw.ename ?? 'Error'}: ${raw.evalue ?? ''}`)
        });
        return;
      }
    }
    content.say(null);
    if (reply && reply.content.status !== 'ok' && model.length === 0) {
      content.say(null, {
        title: `Cannot open ${this.table.name} in the Delta explorer`,
        detail: `The kernel answered “${reply.content.status}”.`
      });
    }
    content.node.scrollTop = 0;
  }

  private _onStatus(_: ISessionContext, status: ISessionContext.KernelDisplayStatus): void {
    if (status === 'restarting' || status === 'autorestarting') {
      this._restarted = true;
      this.content.area.model.clear();
      this.content.say(`Restarting the kernel of ${this.table.name}…`);
    } else if (status === 'idle' && this._restarted && this.sessionContext.isReady) {
      // a restart from elsewhere (the running-kernels panel): the kernel is back
      this._restarted = false;
      void this.run();
    } else if (status === 'dead') {
      this.content.say(null, {
        title: `The kernel of ${this.table.name} died`,
        detail: 'Reload to start a new one.'
      });
    }
  }
}
