/**
 * The explorer's output in a notebook: its static summary first, the live widget when the kernel
 * has it.
 *
 * An explorer output carries `application/vnd.jupyter.widget-view+json` (the live widget) and
 * `application/vnd.deltaexplore.explorer+json` (a summary of what it showed, with the view's
 * model id). JupyterLab renders one MIME type per output, the one of lowest rank: the widget
 * manager's renderer (rank -10) says "Error displaying widget: model not found" when a saved
 * notebook is reopened, and waits forever without a kernel. This renderer has a lower rank, so
 * JupyterLab picks it: it draws the summary (text only), then asks the notebook's own widget
 * renderer (found through the output area it sits in) to render the view out of sight, and
 * shows the live explorer in place of the summary once that renderer attached a widget. When
 * the model is gone, the hidden attempt (and its error text) is dropped and the summary stays.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import { EXPLORER_MIME_TYPE, EXPLORER_PLUGIN_ID } from './tokens';

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';

interface IFact {
  label: string;
  value: string;
  status?: string;
}

interface IExplorerSummary {
  uri: string;
  title: string;
  version: number;
  latest_version: number;
  operation?: string | null;
  user?: string | null;
  timestamp?: string | null;
  timestamp_utc?: string | null;
  description?: string | null;
  partition_columns?: string | null;
  facts: IFact[];
  columns: { name: string; type: string }[];
  more_columns?: number;
  view?: { model_id: string; version_major: number; version_minor: number } | null;
}

function el(tag: string, className: string | null, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** The static summary card (every string from the table set as text). */
export function renderExplorerSummary(host: HTMLElement, s: IExplorerSummary): void {
  const card = el('section', 'dx-summary dx-explorer-static');
  card.setAttribute('aria-label', 'Delta table explorer (saved summary)');
  card.appendChild(el('h3', 'dx-summary-title', `Delta table ${s.title || s.uri}`));
  card.appendChild(el('div', 'dx-summary-uri', s.uri));
  if (s.description) {
    card.appendChild(el('div', null, s.description));
  }
  const when = [
    `version ${s.version}${s.version !== s.latest_version ? ` (latest: ${s.latest_version})` : ''}`,
    s.operation || null,
    s.timestamp || null,
    s.user ? `by ${s.user}` : null
  ]
    .filter(Boolean)
    .join(' · ');
  const line = el('div', 'dx-summary-version', when);
  if (s.timestamp_utc) {
    line.title = `${s.timestamp_utc} UTC`;
  }
  card.appendChild(line);
  const facts = el('table', 'dx-summary-fact-table');
  facts.setAttribute('aria-label', 'key numbers');
  const rows: [string, string, string | undefined][] = (s.facts || []).map(f => [f.label, f.value, f.status]);
  if (s.partition_columns && s.partition_columns !== 'none') {
    rows.push(['partitioned by', s.partition_columns, undefined]);
  }
  for (const [label, value, status] of rows) {
    const tr = el('tr', null);
    tr.appendChild(el('th', null, label));
    tr.appendChild(el('td', status === 'warn' ? 'dx-summary-warn' : null, value));
    facts.appendChild(tr);
  }
  card.appendChild(facts);
  const cols = el('div', 'dx-summary-cols');
  cols.appendChild(el('span', 'dx-summary-label', 'columns '));
  (s.columns || []).forEach((c, i) => {
    if (i) {
      cols.appendChild(document.createTextNode(', '));
    }
    cols.appendChild(document.createTextNode(c.name));
    cols.appendChild(el('span', 'dx-summary-type', ` ${c.type}`));
  });
  if (s.more_columns) {
    cols.appendChild(document.createTextNode(`, … (${s.more_columns} more)`));
  }
  card.appendChild(cols);
  card.appendChild(el('p', 'dx-summary-hint', 'A static summary saved with the notebook: run the cell for the interactive explorer.'));
  host.replaceChildren(card);
}

/** What this renderer needs of a rendermime registry (`@jupyterlab/rendermime`'s). */
interface IRendermimeLike {
  readonly mimeTypes: ReadonlyArray<string>;
  createRenderer(mimeType: string): IRenderMime.IRenderer;
}

/** The notebook's rendermime registry: the output area this renderer sits in has it. */
function findRendermime(widget: Widget): IRendermimeLike | null {
  let w: Widget | null = widget.parent;
  while (w) {
    const candidate = (w as unknown as { rendermime?: IRendermimeLike }).rendermime;
    if (candidate && typeof candidate.createRenderer === 'function') {
      return candidate;
    }
    w = w.parent;
  }
  return null;
}

export class ExplorerOutputRenderer extends Panel implements IRenderMime.IRenderer {
  private _static = new Widget();
  private _model: IRenderMime.IMimeModel | null = null;
  private _live: (Widget & IRenderMime.IRenderer) | null = null;
  private _observer: MutationObserver | null = null;

  constructor() {
    super();
    this.addClass('dx-explorer-output');
    this.addWidget(this._static);
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this._model = model;
    renderExplorerSummary(this._static.node, model.data[EXPLORER_MIME_TYPE] as unknown as IExplorerSummary);
    if (this.isAttached) {
      this._tryLive();
    }
    return Promise.resolve();
  }

  protected onAfterAttach(): void {
    this._tryLive();
  }

  dispose(): void {
    this._observer?.disconnect();
    super.dispose();
  }

  /** Render the widget view out of sight; show it in place of the summary once it has a widget. */
  private _tryLive(): void {
    const model = this._model;
    if (!model || this._live || !model.trusted || !model.data[WIDGET_VIEW]) {
      return;
    }
    const rendermime = findRendermime(this);
    if (!rendermime || rendermime.mimeTypes.indexOf(WIDGET_VIEW) < 0) {
      return;
    }
    const live = rendermime.createRenderer(WIDGET_VIEW) as Widget & IRenderMime.IRenderer;
    this._live = live;
    live.hide();
    this.addWidget(live);
    const swap = () => {
      if (live.isDisposed) {
        return;
      }
      if (live.node.querySelector('.lm-Widget, .jupyter-widgets, .dxe-explorer')) {
        this._observer?.disconnect();
        this._static.hide();
        live.show();
      } else if ((live.node.textContent || '').startsWith('Error displaying widget')) {
        // the model is gone for good (the manager says so): the summary is the output
        this._observer?.disconnect();
        live.dispose();
      }
    };
    this._observer = new MutationObserver(swap);
    this._observer.observe(live.node, { childList: true, subtree: true });
    const view: IRenderMime.IMimeModel = {
      trusted: true,
      data: { [WIDGET_VIEW]: model.data[WIDGET_VIEW] },
      metadata: {},
      setData: () => undefined
    };
    void live.renderModel(view).then(swap, () => undefined);
  }
}

export const explorerOutputFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [EXPLORER_MIME_TYPE],
  createRenderer: () => new ExplorerOutputRenderer()
};

export const explorerOutputExtension: IRenderMime.IExtension = {
  id: EXPLORER_PLUGIN_ID,
  rendererFactory: explorerOutputFactory,
  // ahead of the widget manager's view renderer (-10): see the module docstring
  rank: -20,
  dataType: 'json'
};
