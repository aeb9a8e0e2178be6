/**
 * Which folders of the file browser are Delta tables: asked once per shown folder from the
 * server extension (`GET /deltaexplore/tables?path=DIR`, `deltaexplore/labserver.py`), kept
 * per folder, and shown in every file browser as a `data-delta-table` attribute on the item
 * (CSS draws the badge; context-menu selectors and commands test it).
 */
import { FileBrowser, IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { URLExt } from '@jupyterlab/coreutils';
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

/** What the server said about each folder shown so far. */
export class DeltaTables {
  private readonly _tables = new Map<string, IDeltaTable>();
  private readonly _asked = new Map<string, Promise<void>>();
  private _unavailable = false;

  /** The table at contents path `path`, if its folder was listed and it is one. */
  get(path: string): IDeltaTable | undefined {
    return this._tables.get(strip(path));
  }

  /** Ask the server about `folder` (once per folder until `forget`). */
  list(folder: string): Promise<void> {
    const key = strip(folder);
    let pending = this._asked.get(key);
    if (!pending) {
      pending = this._fetch(key);
      this._asked.set(key, pending);
    }
    return pending;
  }

  /** Ask again about `folder` next time (its contents changed). */
  forget(folder: string): void {
    this._asked.delete(strip(folder));
  }

  private async _fetch(folder: string): Promise<void> {
    if (this._unavailable) {
      return;
    }
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, 'deltaexplore/tables') + '?path=' + encodeURIComponent(folder);
    let answer: IFolderAnswer;
    try {
      const response = await ServerConnection.makeRequest(url, {}, settings);
      if (response.status === 404 && !(await response.text()).includes('no folder')) {
        this._unavailable = true; // the server extension is not enabled: no badges, no errors
        console.warn('deltaexplore: the server extension is not enabled (deltaexplore.labserver)');
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

/** Mark Delta table folders in `browser` now and whenever its items are drawn again. */
export function markTables(browser: FileBrowser, tables: DeltaTables): void {
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
  const refresh = () => {
    void tables.list(browser.model.path).then(() => listing?.update());
  };
  browser.model.pathChanged.connect(refresh);
  browser.model.refreshed.connect(() => {
    tables.forget(browser.model.path);
    refresh();
  });
  refresh();
}

/** Mark tables in every file browser the factory makes. */
export function markAllBrowsers(browsers: IFileBrowserFactory, tables: DeltaTables): void {
  browsers.tracker.forEach(b => markTables(b, tables));
  browsers.tracker.widgetAdded.connect((_, b) => markTables(b, tables));
}
