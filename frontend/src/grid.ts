// Grids: AG Grid Community (MIT) for every table of rows. Why AG Grid, and not a lighter grid,
// is in docs/architecture.md (virtualised rows and columns, sticky header, sortable and
// resizable columns, an ARIA grid with full keyboard navigation, an infinite row model for
// rows that stay in the kernel, CSV export, theming through CSS variables).
//
// A grid shows either rows decoded in the browser (`setRows`) or a kernel-side row source
// (`setSource`): then AG Grid's infinite row model asks the kernel for the window it is about
// to draw, with the grid's sort and our filter. Cells are formatted by display unit
// (format.ts). Every cell renderer builds DOM with text nodes: AG Grid treats a string returned
// by a renderer as HTML, so ours never return strings.
import {
  CellStyleModule,
  ColumnApiModule,
  RenderApiModule,
  RowApiModule,
  ScrollApiModule,
  ClientSideRowModelModule,
  ColumnAutoSizeModule,
  CsvExportModule,
  InfiniteRowModelModule,
  LocaleModule,
  ModuleRegistry,
  RowSelectionModule,
  RowStyleModule,
  TooltipModule,
  createGrid,
  themeQuartz,
  type ColDef,
  type GridApi,
  type GridOptions,
  type IDatasource,
  type IGetRowsParams,
  type ValueFormatterParams,
  type ICellRendererParams,
} from 'ag-grid-community';

import { decode, toArrowFile, type FieldInfo, type Row, type Rows } from './arrow';
import { badge, copyButton, h, later, measure, pill } from './dom';
import { formatValue, humanCount, humanFloat, jsonItems, plural, relativeTime, statusLevel, timestampTitle, truncateMiddle } from './format';
import type { Rpc } from './model';

ModuleRegistry.registerModules([
  ClientSideRowModelModule,
  InfiniteRowModelModule,
  CsvExportModule,
  RowSelectionModule,
  RowStyleModule,
  CellStyleModule,
  TooltipModule,
  ColumnAutoSizeModule,
  LocaleModule,
  RowApiModule,
  RenderApiModule,
  ScrollApiModule,
  ColumnApiModule,
]);

/** The grid theme: AG Grid's Quartz, coloured by JupyterLab's variables (light and dark follow). */
const gridTheme = themeQuartz.withParams({
  backgroundColor: 'var(--jp-layout-color1, #fff)',
  foregroundColor: 'var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87))',
  textColor: 'var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87))',
  subtleTextColor: 'var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54))',
  headerBackgroundColor: 'var(--jp-layout-color2, #f3f3f3)',
  headerTextColor: 'var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87))',
  chromeBackgroundColor: 'var(--jp-layout-color2, #f3f3f3)',
  borderColor: 'var(--jp-border-color2, #e0e0e0)',
  rowHoverColor: 'var(--jp-layout-color2, #f0f0f0)',
  accentColor: 'var(--jp-brand-color1, #1976d2)',
  iconColor: 'var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54))',
  tooltipBackgroundColor: 'var(--jp-layout-color0, #fff)',
  tooltipTextColor: 'var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87))',
  fontFamily: 'var(--jp-ui-font-family, system-ui, sans-serif)',
  fontSize: 12,
  headerFontSize: 12,
  headerFontWeight: 600,
  spacing: 5,
  rowHeight: 30, // ROW_PX
  headerHeight: 32, // HEADER_PX
  wrapperBorderRadius: 4,
  borderRadius: 3,
  browserColorScheme: 'inherit',
});

export interface ColumnOptions {
  header?: string;
  unit?: string;
  width?: number;
  flex?: number;
  minWidth?: number;
  hide?: boolean;
  pinned?: 'left' | 'right';
  /** extra class per cell value (e.g. added/removed in a diff) */
  cellClass?: (value: unknown, row: Row) => string | null;
}

export interface GridOptionsLite {
  label: string;
  rootClass: string;
  /** columns shown, in order (default: every column of the rows) */
  columns?: string[];
  options?: Record<string, ColumnOptions>;
  height?: number;
  rpc?: Rpc;
  /** multi-row selection with checkboxes (history: pick two versions) */
  selection?: 'single' | 'multiple';
  onSelection?: (rows: Row[]) => void;
  onRowClick?: (row: Row) => void;
  rowClass?: (row: Row) => string | null;
  /** a filter box over the source's search columns; Enter applies it */
  filterPlaceholder?: string;
  emptyText?: string;
  /** what a row is called in the count, in the singular: "file" */
  noun?: string;
  /** extra controls in the toolbar */
  tools?: HTMLElement[];
  /** hide columns whose every value is null or empty (rows in the browser only) */
  hideEmpty?: boolean;
}

export interface SourceInfo {
  id: string;
  total: number;
  code?: string;
  name?: string;
  fields?: FieldInfo[];
}

export interface Filter {
  text?: string;
  ranges?: Record<string, [number, number]>;
}

export interface GridHandle {
  el: HTMLElement;
  /** rows decoded in the browser; `outOf`: how many there are before the caller's own filter
   * (the count then reads "4 of 8 commits") */
  setRows(rows: Rows | null, outOf?: number): void;
  setSource(source: SourceInfo | null): void;
  setFilter(filter: Filter, label?: string): void;
  api(): GridApi | null;
  selected(): Row[];
  destroy(): void;
}

function download(bytes: Uint8Array | ArrayBuffer | DataView, filename: string, mime: string): void {
  const part = bytes instanceof DataView ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes;
  const url = URL.createObjectURL(new Blob([part as BlobPart], { type: mime }));
  const a = h('a', { href: url, download: filename, class: 'dxe-offscreen' });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const ROW_PX = 30;
const HEADER_PX = 32;
const NUMERIC = new Set(['bytes', 'count', 'version', 'number', 'ratio', 'duration_ms']);

/** A header's width in px (12 px, weight 600) with the cell's padding and room for a sort arrow. */
function headerPx(name: string): number {
  return Math.round(40 + name.length * 7.2);
}

/**
 * A column's width by display unit. Values of a known width (numbers, times, versions, flags,
 * badges) get a fixed width, as wide as their header; text, paths and JSON share the rest of the
 * grid (`flex`) down to a floor that keeps them readable, so a grid as wide as a notebook
 * (~1300 px) shows every column without a horizontal scrollbar and a wider one gives the room
 * to the paths. Only a grid narrower than the floors scrolls sideways.
 */
function widthFor(unit: string, name: string): Partial<ColDef> {
  if (unit === 'path') return { flex: 3, minWidth: 200 };
  if (unit === 'json') return { flex: 2, minWidth: 180 };
  if (unit === 'timestamp') return { width: 166, minWidth: 140 };
  if (unit === 'operation') return { width: 140, minWidth: 110 };
  if (unit === 'status') return { width: Math.max(88, headerPx(name)), minWidth: 80 };
  if (unit === 'bool') return { width: Math.max(72, headerPx(name)), minWidth: 64 };
  if (unit === 'version') return { width: Math.max(80, headerPx(name)), minWidth: 64 };
  // wide enough for the header (600 weight) and its sort arrow: "overlap depth" is not cut
  if (NUMERIC.has(unit)) return { width: Math.max(88, Math.min(180, headerPx(name))), minWidth: 72 };
  return { flex: 1, minWidth: Math.max(96, Math.min(150, headerPx(name) - 20)) };
}

function renderer(unit: string): ((p: ICellRendererParams) => HTMLElement) | undefined {
  switch (unit) {
    case 'status':
      return (p) => (p.value === null || p.value === undefined ? h('span') : pill(statusLevel(p.value) ?? 'info', String(p.value)));
    case 'operation':
      return (p) => (p.value === null || p.value === undefined ? h('span') : badge(String(p.value)));
    case 'timestamp':
      return (p) => {
        if (p.value === null || p.value === undefined) return h('span');
        return h(
          'span',
          { class: 'dxe-time', title: `${timestampTitle(p.value)} UTC · ${relativeTime(p.value)}` },
          formatValue('timestamp', p.value),
        );
      };
    case 'path':
      return (p) => {
        if (p.value === null || p.value === undefined || p.value === '') return h('span');
        const text = String(p.value);
        // the end of a path (the file name) is what people look for: the box is right-to-left so
        // an overflow is cut (with an ellipsis) at the start; <bdi> keeps the text itself in order
        return h('span', { class: 'dxe-path-cell' }, h('span', { class: 'dxe-path', title: text }, h('bdi', null, text)), copyButton(text, 'copy path'));
      };
    case 'json':
      return (p) => {
        const items = jsonItems(p.value);
        if (!items) return h('span', { class: 'dxe-json-text' }, formatValue('json', p.value));
        const title = items.map(([k, v]) => `${k}=${v}`).join('\n');
        return h(
          'span',
          { class: 'dxe-chips', title },
          items.slice(0, 8).map(([k, v]) => h('span', { class: 'dxe-chip' }, h('span', { class: 'dxe-chip-k' }, k), h('span', { class: 'dxe-chip-v' }, truncateMiddle(v, 48)))),
          items.length > 8 ? h('span', { class: 'dxe-chip dxe-chip-more' }, `+${items.length - 8}`) : null,
        );
      };
    case 'bool':
      return (p) =>
        p.value === null || p.value === undefined
          ? h('span')
          : h('span', { class: p.value ? 'dxe-bool dxe-bool-yes' : 'dxe-bool dxe-bool-no' }, p.value ? 'yes' : 'no');
    default:
      return undefined;
  }
}

function columnDef(f: FieldInfo, opt: ColumnOptions = {}): ColDef {
  const unit = opt.unit ?? f.unit;
  const def: ColDef = {
    field: f.name,
    colId: f.name,
    headerName: opt.header ?? f.name.replace(/_/g, ' '),
    headerTooltip: f.doc ? `${f.name}: ${f.doc}` : f.name,
    sortable: true,
    resizable: true,
    hide: opt.hide,
    pinned: opt.pinned,
    ...widthFor(unit, opt.header ?? f.name),
  };
  if (opt.width) {
    def.width = opt.width;
    delete def.flex;
  }
  if (opt.flex) def.flex = opt.flex;
  if (opt.minWidth) def.minWidth = opt.minWidth;
  const render = renderer(unit);
  if (render) def.cellRenderer = render;
  else if (unit === 'number' && /^(double|float|halffloat)/i.test(f.type))
    def.valueFormatter = (p: ValueFormatterParams) => (typeof p.value === 'number' ? humanFloat(p.value) : formatValue(unit, p.value));
  else def.valueFormatter = (p: ValueFormatterParams) => formatValue(unit, p.value);
  const classes: string[] = [];
  if (NUMERIC.has(unit)) {
    classes.push('dxe-num');
    def.headerClass = 'dxe-num-header';
  }
  def.cellClass = (p) => {
    const extra = opt.cellClass ? opt.cellClass(p.value, p.data as Row) : null;
    return [...classes, ...(extra ? [extra] : [])];
  };
  // sorting by the raw value, never the shown text
  def.comparator = (a: unknown, b: unknown) => {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    return (a as number) < (b as number) ? -1 : 1;
  };
  return def;
}

function sameFields(a: FieldInfo[], b: FieldInfo[]): boolean {
  return a.length === b.length && a.every((f, i) => f.name === b[i].name && f.unit === b[i].unit);
}

function csvValue(value: unknown, unit: string): string {
  if (value === null || value === undefined) return '';
  if (unit === 'timestamp') return timestampTitle(value);
  return String(value);
}

export function createGrid_(opts: GridOptionsLite): GridHandle {
  const gridEl = h('div', { class: 'dxe-grid' });
  const count = h('span', { class: 'dxe-grid-count', 'aria-live': 'polite' });
  const status = h('span', { class: 'dxe-grid-status', role: 'status' });
  const filterBox = opts.filterPlaceholder
    ? h('input', {
        type: 'search',
        class: 'dxe-input dxe-filter',
        placeholder: opts.filterPlaceholder,
        'aria-label': `${opts.label}: ${opts.filterPlaceholder} (Enter applies)`,
        title: 'Enter applies the filter, Escape clears it',
      })
    : null;
  const filterTag = h('span', { class: 'dxe-filter-tag', hidden: true });
  const exportCsv = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small', title: `Download ${opts.label} as CSV` }, 'CSV');
  const exportArrow = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small', title: `Download ${opts.label} as an Arrow IPC file` }, 'Arrow');
  const codeBtn = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small', title: 'Copy the Python that returns this table', hidden: true }, 'Copy code');
  const toolbar = h(
    'div',
    { class: 'dxe-grid-toolbar', role: 'toolbar', 'aria-label': `${opts.label} tools` },
    filterBox,
    filterTag,
    count,
    status,
    h('span', { class: 'dxe-spacer' }),
    opts.tools || [],
    h('span', { class: 'dxe-btn-group', role: 'group', 'aria-label': 'export' }, h('span', { class: 'dxe-btn-group-label' }, 'Export'), exportCsv, exportArrow),
    codeBtn,
  );
  const el = h('div', { class: 'dxe-grid-wrap', role: 'region', 'aria-label': opts.label }, toolbar, gridEl);

  let api: GridApi | null = null;
  let mode: 'rows' | 'source' | null = null;
  let rows: Rows | null = null;
  let outOf: number | undefined;
  let source: SourceInfo | null = null;
  let filter: Filter = {};
  let fields: FieldInfo[] = [];
  let sortModel: Array<[string, string]> = [];
  let generation = 0;

  const noun = opts.noun ?? 'row';
  const setCount = (n: number | null, total?: number) => {
    if (n === null) count.textContent = '';
    else if (total !== undefined && total !== n) count.textContent = `${humanCount(n)} of ${humanCount(total)} ${plural(noun, total)}`;
    else count.textContent = `${humanCount(n)} ${plural(noun, n)}`;
  };

  const colDefs = (): ColDef[] => {
    const byName = new Map(fields.map((f) => [f.name, f]));
    let names = opts.columns ? opts.columns.filter((c) => byName.has(c)) : fields.map((f) => f.name);
    if (opts.hideEmpty && mode === 'rows' && rows && rows.rows.length) {
      const all = rows.rows;
      names = names.filter((n) => all.some((r) => r[n] !== null && r[n] !== undefined && r[n] !== '' && r[n] !== '{}'));
    }
    return names.map((n) => columnDef(byName.get(n) as FieldInfo, opts.options?.[n]));
  };

  const baseOptions = (): GridOptions => ({
    theme: gridTheme,
    columnDefs: colDefs(),
    defaultColDef: { sortable: true, resizable: true, suppressMovable: false },
    ensureDomOrder: true,
    enableCellTextSelection: true,
    suppressDragLeaveHidesColumns: true,
    tooltipShowDelay: 400,
    animateRows: false,
    localeText: { noRowsToShow: opts.emptyText ?? 'Nothing to show' },
    rowSelection:
      opts.selection === 'multiple'
        ? { mode: 'multiRow', checkboxes: true, headerCheckbox: false, enableClickSelection: false }
        : opts.selection === 'single'
          ? { mode: 'singleRow', checkboxes: false, enableClickSelection: true }
          : undefined,
    onSelectionChanged: () => opts.onSelection?.(selectedRows()),
    onRowClicked: (e) => {
      if (e.data && opts.onRowClick) opts.onRowClick(e.data as Row);
    },
    onCellKeyDown: (e) => {
      const ev = e.event as KeyboardEvent | null;
      if (ev && ev.key === 'Enter' && e.data && opts.onRowClick) opts.onRowClick(e.data as Row);
    },
    getRowClass: opts.rowClass ? (p) => (p.data ? opts.rowClass?.(p.data as Row) ?? undefined : undefined) : undefined,
    onSortChanged: () => {
      if (!api) return;
      sortModel = api
        .getColumnState()
        .filter((c) => c.sort)
        .sort((a, b) => (a.sortIndex ?? 0) - (b.sortIndex ?? 0))
        .map((c) => [c.colId, c.sort as string]);
    },
  });

  /** The grid's height: its rows when few (no empty space), else the configured height. */
  const fitHeight = (n: number): number => Math.min(opts.height ?? 360, HEADER_PX + Math.max(n, 2) * ROW_PX + 18);

  const selectedRows = (): Row[] => (api ? (api.getSelectedRows() as Row[]) : []);

  const applyClientFilter = (all: Row[]): Row[] => {
    const text = (filter.text || '').trim().toLowerCase();
    let out = all;
    if (text) {
      const cols = fields.filter((f) => f.unit === 'path' || f.unit === 'text' || f.unit === 'operation' || f.unit === 'json').map((f) => f.name);
      out = out.filter((r) => cols.some((c) => String(r[c] ?? '').toLowerCase().includes(text)));
    }
    for (const [col, [lo, hi]] of Object.entries(filter.ranges || {})) {
      out = out.filter((r) => typeof r[col] === 'number' && (r[col] as number) >= lo && (r[col] as number) <= hi);
    }
    return out;
  };

  const datasource = (info: SourceInfo, gen: number): IDatasource => ({
    getRows: (p: IGetRowsParams) => {
      if (!opts.rpc) {
        p.failCallback();
        return;
      }
      const sort = p.sortModel.map((s) => [s.colId, s.sort]);
      status.textContent = 'loading…';
      const asked = performance.now();
      opts.rpc
        .request('rows', { source: info.id, start: p.startRow, end: p.endRow, sort, filter })
        .then((reply) => {
          try {
            performance.measure(`dxe:rows-wait:${opts.label}`, { start: asked, end: performance.now() });
          } catch {
            // a diagnostic only
          }
          // a reply to a replaced datasource (the filter changed meanwhile) is dropped, but AG
          // Grid still counts its block as loading (2 at most: maxConcurrentDatasourceRequests)
          // until a callback says it finished; unreleased, two stale replies stopped every later
          // load (a brush over the layout density: "loading…" for ever)
          if (gen !== generation) return p.failCallback();
          const decoded = measure(`rows-decode:${opts.label}`, () => decode(reply.buffers[0]));
          const total = Number(reply.content.total);
          measure(`rows-draw:${opts.label}`, () => p.successCallback(decoded ? decoded.rows : [], total));
          setCount(total, filter.text || filter.ranges ? info.total : undefined);
          status.textContent = '';
        })
        .catch((err: Error) => {
          p.failCallback();
          if (gen !== generation) return;
          status.textContent = err.message;
          status.classList.add('dxe-grid-error');
        });
    },
  });

  const build = () => {
    generation += 1;
    const mine = generation;
    later(() => {
      if (mine === generation) measure(`grid:${opts.label}`, buildNow);
    });
  };

  const buildNow = () => {
    api?.destroy();
    api = null;
    gridEl.replaceChildren();
    status.textContent = '';
    status.classList.remove('dxe-grid-error');
    if (mode === 'rows' && rows) {
      const shown = applyClientFilter(rows.rows);
      gridEl.style.height = `${fitHeight(shown.length)}px`;
      api = createGrid(gridEl, { ...baseOptions(), rowModelType: 'clientSide', rowData: shown });
      const all = outOf ?? rows.rows.length;
      setCount(shown.length, shown.length !== all ? all : undefined);
    } else if (mode === 'source' && source) {
      gridEl.style.height = `${fitHeight(source.total)}px`;
      const o: GridOptions = {
        ...baseOptions(),
        rowModelType: 'infinite',
        cacheBlockSize: Number(opts.rpc?.model.get('page_size')) || 200,
        maxBlocksInCache: 20,
        infiniteInitialRowCount: Math.min(source.total, 200),
        blockLoadDebounceMillis: 60,
        // a fast scroll over a long source draws where it stops, not every row on the way
        // (each intermediate draw was a 60-100 ms task at 1M files)
        debounceVerticalScrollbar: true,
        datasource: datasource(source, generation),
      };
      api = createGrid(gridEl, o);
      setCount(source.total);
    } else {
      gridEl.style.height = '';
      setCount(null);
    }
    codeBtn.hidden = !(mode === 'source' && source?.code);
  };

  const applyFilterBox = () => {
    if (!filterBox) return;
    const text = filterBox.value.trim();
    if ((filter.text || '') === text) return;
    filter = { ...filter, text };
    refreshData();
  };

  const refreshData = () => {
    if (mode === 'rows') build();
    else if (mode === 'source' && api && source) {
      generation += 1;
      api.setGridOption('datasource', datasource(source, generation));
    }
  };

  filterBox?.addEventListener('keydown', (ev: KeyboardEvent) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      applyFilterBox();
    } else if (ev.key === 'Escape') {
      filterBox.value = '';
      applyFilterBox();
    }
  });
  // the search box's own clear button (×) fires 'search' with an empty value
  filterBox?.addEventListener('search', () => {
    if (filterBox.value === '') applyFilterBox();
  });

  exportCsv.addEventListener('click', () => void doExport('csv'));
  exportArrow.addEventListener('click', () => void doExport('arrow'));
  codeBtn.addEventListener('click', async () => {
    if (!source?.code) return;
    const { copyText } = await import('./dom');
    const ok = await copyText(`import deltaexplore as dx\n${source.code}`);
    codeBtn.textContent = ok ? 'Copied ✓' : 'Copy failed';
    setTimeout(() => (codeBtn.textContent = 'Copy code'), 1500);
  });

  const doExport = async (fmt: 'csv' | 'arrow') => {
    const stem = (source?.name || opts.label).replace(/[^A-Za-z0-9_.-]+/g, '_');
    try {
      if (mode === 'source' && source && opts.rpc) {
        status.textContent = 'exporting…';
        const reply = await opts.rpc.request('export', { source: source.id, format: fmt, sort: sortModel, filter });
        download(reply.buffers[0], String(reply.content.filename || `${stem}.${fmt}`), String(reply.content.mime || 'application/octet-stream'));
        status.textContent = '';
      } else if (mode === 'rows' && rows && api) {
        if (fmt === 'csv') {
          const units = new Map(fields.map((f) => [f.name, f.unit]));
          api.exportDataAsCsv({
            fileName: `${stem}.csv`,
            processCellCallback: (p) => csvValue(p.value, units.get(p.column.getColId()) || 'text'),
          });
        } else {
          download(toArrowFile(rows.table), `${stem}.arrow`, 'application/vnd.apache.arrow.file');
        }
      }
    } catch (err) {
      status.textContent = `export failed: ${(err as Error).message}`;
    }
  };

  return {
    el,
    setRows(r, of) {
      outOf = of;
      const same = api && mode === 'rows' && r && sameFields(fields, r.fields) && !opts.hideEmpty;
      mode = 'rows';
      rows = r;
      fields = r ? r.fields : [];
      source = null;
      if (same && api && r) {
        // in place: column widths, sort and scroll position stay
        const shown = applyClientFilter(r.rows);
        gridEl.style.height = `${fitHeight(shown.length)}px`;
        api.setGridOption('rowData', shown);
        const all = of ?? r.rows.length;
        setCount(shown.length, shown.length !== all ? all : undefined);
        return;
      }
      build();
    },
    setSource(s) {
      if (s && source && s.id === source.id && api) return;
      const same = api && mode === 'source' && s && sameFields(fields, s.fields || []);
      mode = 'source';
      source = s;
      fields = s?.fields || [];
      rows = null;
      if (same && api && s) {
        // another version of the same table: the grid stays (column widths, sort), its rows change
        generation += 1;
        gridEl.style.height = `${fitHeight(s.total)}px`;
        api.setGridOption('datasource', datasource(s, generation));
        setCount(s.total);
        codeBtn.hidden = !s.code;
        return;
      }
      build();
    },
    setFilter(f, label) {
      filter = { ...f };
      if (filterBox) filterBox.value = f.text || '';
      filterTag.hidden = !label;
      filterTag.replaceChildren();
      if (label) {
        const clear = h('button', { type: 'button', class: 'dxe-icon-btn', 'aria-label': `clear filter ${label}`, title: 'clear this filter' }, '×');
        clear.addEventListener('click', () => this.setFilter({ text: filter.text }));
        filterTag.append(h('span', null, label), clear);
      }
      refreshData();
    },
    api: () => api,
    selected: selectedRows,
    destroy() {
      generation += 1;
      api?.destroy();
      api = null;
    },
  };
}

export { createGrid_ as createGrid, download };
