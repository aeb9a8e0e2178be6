/**
 * Which folders of the file browser are Delta tables: asked once per shown folder from the
 * server extension (`GET /deltaexplore/tables?path=DIR`, `deltaexplore/labserver.py`), kept
 * per folder, and shown in every file browser as a `data-delta-table` attribute on the item
 * (CSS draws the badge; context-menu selectors and commands test it).
 *
 * The server extension says it is there in the page config (`deltaexploreTables`, the route);
 * without it the feature is off: no request, no badge, nothing in the console.
 */
import { FileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { Contents, ServerConnection } from '@jupyterlab/services';

/** One Delta table folder as the server extension describes it. */
export interface IDeltaTable {
  name: string;
  /** contents path (relative to the server root) */
  path: string;
  /** where the table is on the server (an absolute path for the file contents managers) */
  location: string;
}

interface IFolderAnswer {
  path: string;
  is_table: boolean;
  location: string | null;
  tables: IDeltaTable[];
}

/** The attribute a Delta table folder's item carries in the file browser. */
export const TABLE_ATTRIBUTE = 'data-delta-table';

/** The page config option the server extension sets: its route, relative to the base URL. */
export const TABLES_OPTION = 'deltaexploreTables';

/** What the server said about each folder shown so far. */
export class DeltaTables {
  private readonly _tables = new Map<string, IDeltaTable>();
  private readonly _asked = new Map<string, Promise<void>>();
  private readonly _inFlight = new Set<string>();
  /** the server extension's route (empty: it is not enabled, the feature is off) */
  private _route = PageConfig.getOption(TABLES_OPTION);

  /** Whether the server extension is there to ask. */
  get available(): boolean {
    return !!this._route;
  }

  /** The table at contents path `path`, if its folder was listed and it is one. */
  get(path: string): IDeltaTable | undefined {
    return this._tables.get(strip(path));
  }

  /** Ask the server about `folder` (once per folder until `refresh`). */
  list(folder: string): Promise<void> {
    const key = strip(folder);
    let pending = this._asked.get(key);
    if (!pending) {
      pending = this._fetch(key);
      this._asked.set(key, pending);
    }
    return pending;
  }

  /** Ask again about `folder` (its contents may have changed), unless a request for it is on its way. */
  refresh(folder: string): Promise<void> {
    const key = strip(folder);
    if (!this._inFlight.has(key)) {
      this._asked.delete(key);
    }
    return this.list(key);
  }

  private async _fetch(folder: string): Promise<void> {
    if (!this._route) {
      return;
    }
    this._inFlight.add(folder);
    try {
      await this._ask(folder);
    } finally {
      this._inFlight.delete(folder);
    }
  }

  private async _ask(folder: string): Promise<void> {
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, this._route) + '?path=' + encodeURIComponent(folder);
    let answer: IFolderAnswer;
    try {
      const response = await ServerConnection.makeRequest(url, {}, settings);
      if (response.status === 404 && !(await response.text()).includes('no folder')) {
        this._route = ''; // the route went away (a server without the extension): feature off
        return;
      }
      if (!response.ok) {
        return;
      }
      answer = (await response.json()) as IFolderAnswer;
    } catch (reason) {
      console.warn('deltaexplore: cannot list Delta tables', reason);
      return;
    }
    for (const path of [...this._tables.keys()]) {
      if (parent(path) === folder) {
        this._tables.delete(path);
      }
    }
    for (const table of answer.tables) {
      this._tables.set(strip(table.path), table);
    }
    if (answer.is_table && answer.location) {
      const name = folder.split('/').pop() || folder;
      this._tables.set(folder, { name, path: folder, location: answer.location });
    }
  }
}

function strip(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}

function parent(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/** The protected `listing` of a file browser (its items' renderer is what we extend). */
interface IListingLike {
  renderer: {
    updateItemNode(node: HTMLElement, model: Contents.IModel, ...rest: unknown[]): void;
  };
  update(): void;
}

const patched = new WeakSet<object>();
const marked = new WeakSet<FileBrowser>();

/** Mark Delta table folders in `browser` now and whenever its items are drawn again. */
export function markTables(browser: FileBrowser, tables: DeltaTables): void {
  if (!tables.available || marked.has(browser)) {
    return;
  }
  marked.add(browser);
  const listing = (browser as unknown as { listing?: IListingLike }).listing;
  if (listing && !patched.has(listing.renderer)) {
    patched.add(listing.renderer);
    const renderer = listing.renderer;
    const original = renderer.updateItemNode.bind(renderer);
    renderer.updateItemNode = (node: HTMLElement, model: Contents.IModel, ...rest: unknown[]) => {
      original(node, model, ...rest);
      // the renderer keeps the node's title between updates: add the note once, drop it when
      // the folder is no longer a table
      const title = node.title.replace(/(\n)?Delta table$/, '');
      if (model.type === 'directory' && tables.get(model.path)) {
        node.setAttribute(TABLE_ATTRIBUTE, 'true');
        node.title = `${title}\nDelta table`.trim();
      } else {
        node.removeAttribute(TABLE_ATTRIBUTE);
        node.title = title;
      }
    };
  }
  const show = () => listing?.update();
  browser.model.pathChanged.connect(() => void tables.list(browser.model.path).then(show));
  // the listing was fetched again (a poll, a change): so is what the server says of its folders
  browser.model.refreshed.connect(() => void tables.refresh(browser.model.path).then(show));
  void tables.list(browser.model.path).then(show);
}

/** Mark tables in every file browser the factory makes. */
export function markAllBrowsers(browsers: IFileBrowserFactory, tables: DeltaTables): void {
  browsers.tracker.forEach(b => markTables(b, tables));
  browsers.tracker.widgetAdded.connect((_, b) => markTables(b, tables));
}
