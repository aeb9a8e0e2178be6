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
  RowAutoHeightModule,
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
import { ColumnWidths, decide, exactCount, fontsOf, nameOnly, textWidth, type ColumnSpec, type Decision, type Fonts } from './columns';
import { badge, copyButton, fill, h, later, measure, pill } from './dom';
import { formatValue, humanBytes, humanCompact, humanCount, humanFloat, jsonItems, plural, relativeTime, shortPath, statusLevel, timestampTitle, truncateMiddle } from './format';
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
  RowAutoHeightModule,
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
  /** the text a value shows as (in place of its unit's format; sorting and exports keep the value) */
  format?: (value: unknown) => string;
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

/** A source's first window of rows, fetched before its grid is created. */
interface FirstWindow {
  rows: Row[];
  total: number;
  /** the window's end (the grid's block size) */
  end: number;
}

/** A diagnostic measure from `start` to now (the benchmark reads them). */
function mark(name: string, start: number): void {
  try {
    performance.measure(`dxe:${name}`, { start, end: performance.now() });
  } catch {
    // a diagnostic only
  }
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
/** AG Grid's selection column (checkboxes), by default */
const SELECTION_PX = 50;

/** The fonts and paddings of the last grid measured on the page: a grid about to be created
 * decides its columns with them (every grid has the same theme). */
let pageFonts: Fonts | null = null;
const NUMERIC = new Set(['bytes', 'count', 'version', 'number', 'ratio', 'duration_ms']);

/** Chips of a JSON value that fit `width` px (the rest counted in a "+N" chip; all of them in
 * the title): a chip is never cut at the cell's edge. */
function chipsFitting(items: Array<[string, string]>, width: number, fonts: Fonts | null): Array<[string, string]> {
  if (!fonts) return items.slice(0, 8).map(([k, v]) => [k, truncateMiddle(v, 48)]);
  const keyFont = fonts.pill.replace('600 ', '');
  const valueFont = fonts.mono.replace('11.5px', '11px');
  const out: Array<[string, string]> = [];
  let used = 0;
  for (let i = 0; i < items.length && i < 8; i++) {
    const [k, v] = items[i];
    let value = truncateMiddle(v, 48);
    const key = textWidth(k, keyFont) + 12;
    const more = i + 1 < items.length ? 36 : 0; // room for the "+N" chip after it
    let w = key + textWidth(value, valueFont) + 16;
    if (used + w + more > width) {
      if (i > 0) break;
      // the first chip alone is too wide: its value shortened in the middle to fit, or no chip
      const chars = Math.floor(((width - more - key - 16) / Math.max(textWidth(value, valueFont), 1)) * value.length);
      if (chars < 4) break;
      value = truncateMiddle(v, chars);
      w = width - more;
    }
    out.push([k, value]);
    used += w;
  }
  return out;
}

function renderer(unit: string, decision: Decision | undefined, fonts: Fonts | null): ((p: ICellRendererParams) => HTMLElement) | undefined {
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
    case 'count':
      // compact (4.78 M) when the column is short of room: the exact count in the title
      return (p) => {
        if (typeof p.value !== 'number') return h('span', null, formatValue('count', p.value));
        if (decision?.compact) return h('span', { class: 'dxe-compact', title: exactCount(p.value) }, humanCompact(p.value));
        return h('span', null, humanCount(p.value));
      };
    case 'bytes':
      return (p) => (typeof p.value === 'number' ? h('span', { title: `${humanCount(p.value)} bytes` }, humanBytes(p.value)) : h('span', null, formatValue('bytes', p.value)));
    case 'path':
      return (p) => {
        if (p.value === null || p.value === undefined || p.value === '') return h('span');
        const text = String(p.value);
        // what tells files apart (partition directories, the file's id); in a narrow column the
        // name alone (the partition has its own column); the whole path in the title and the copy
        let shown = shortPath(text);
        const room = p.column ? p.column.getActualWidth() - (fonts?.cellPad ?? 20) - 28 : Infinity;
        if (decision?.compact || (fonts && textWidth(shown, fonts.mono) > room)) shown = nameOnly(shown);
        return h('span', { class: 'dxe-path-cell' }, h('span', { class: 'dxe-path', title: text }, h('bdi', null, shown)), copyButton(text, 'copy path'));
      };
    case 'json':
      return (p) => {
        const items = jsonItems(p.value);
        if (!items) return h('span', { class: 'dxe-json-text', title: formatValue('json', p.value) }, formatValue('json', p.value));
        const title = items.map(([k, v]) => `${k}=${v}`).join('\n');
        const shown = chipsFitting(items, p.column ? p.column.getActualWidth() - 22 : 400, fonts);
        return h(
          'span',
          { class: 'dxe-chips', title },
          shown.map(([k, v]) => h('span', { class: 'dxe-chip' }, h('span', { class: 'dxe-chip-k' }, k), h('span', { class: 'dxe-chip-v' }, v))),
          items.length > shown.length ? h('span', { class: 'dxe-chip dxe-chip-more' }, `+${items.length - shown.length}`) : null,
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

/** Two decisions for a column that differ in its width alone, both wide enough that its
 * definition (`columnDef`: minWidth) is the same: a resize applies the change. */
function widthOnly(a: Decision | undefined, b: Decision | undefined): boolean {
  if (!a || !b || a.width === undefined || b.width === undefined) return false;
  return a.hide === b.hide && a.compact === b.compact && !!a.wrap === !!b.wrap && a.width >= 60 && b.width >= 60;
}

function columnDef(spec: ColumnSpec, opt: ColumnOptions, decision: Decision | undefined, fonts: Fonts | null): ColDef {
  const { field: f, unit } = spec;
  const compact = decision?.compact ?? false;
  const def: ColDef = {
    field: f.name,
    colId: f.name,
    headerName: spec.header,
    headerTooltip: `${f.doc ? `${f.name}: ${f.doc}` : f.name}${compact ? ' (rounded to 3 digits where the column is narrow: a value’s title holds it exactly)' : ''}`,
    sortable: true,
    resizable: true,
    hide: decision ? decision.hide : opt.hide,
    pinned: opt.pinned,
  };
  if (decision?.width !== undefined) {
    def.width = decision.width;
    def.minWidth = Math.min(decision.width, 60);
    def.flex = null; // null clears a flex set before (undefined would keep it)
  } else {
    // before the first fit (no width known yet): share the grid
    def.flex = opt.flex ?? 1;
    def.minWidth = opt.minWidth ?? 72;
  }
  const render = opt.format ? undefined : renderer(unit, decision, fonts);
  if (opt.format) {
    const format = opt.format;
    def.valueFormatter = (p: ValueFormatterParams) => format(p.value);
  } else if (render) def.cellRenderer = render;
  else if (unit === 'number' && /^(double|float|halffloat)/i.test(f.type))
    def.valueFormatter = (p: ValueFormatterParams) => (typeof p.value === 'number' ? humanFloat(p.value) : formatValue(unit, p.value));
  else def.valueFormatter = (p: ValueFormatterParams) => formatValue(unit, p.value);
  if (unit === 'text') def.tooltipValueGetter = (p) => (p.value === null || p.value === undefined ? null : formatValue(unit, p.value));
  if (decision?.wrap) {
    // long text (a check's advice, an engine with its version) wraps: never cut mid-number
    def.wrapText = true;
    def.autoHeight = true;
  }
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
  // the column chooser: columns hidden to fit the width (or by the user), shown again on demand
  const chooserList = h('div', { class: 'dxe-chooser-list', role: 'group', 'aria-label': `${opts.label}: columns shown` });
  const fitButton = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small', title: 'forget the columns picked: show what fits the width' }, 'Fit to width');
  const chooserLabel = h('span', null, 'Columns');
  const chooser = h(
    'details',
    { class: 'dxe-chooser' },
    h('summary', { class: 'dxe-btn dxe-btn-small', title: 'show or hide columns' }, chooserLabel),
    h('div', { class: 'dxe-chooser-menu' }, chooserList, fitButton),
  );
  const toolbar = h(
    'div',
    { class: 'dxe-grid-toolbar', role: 'toolbar', 'aria-label': `${opts.label} tools` },
    filterBox,
    filterTag,
    count,
    status,
    h('span', { class: 'dxe-spacer' }),
    opts.tools || [],
    chooser,
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

  // -- columns: which, how wide, which hidden (columns.ts decides) ---------------------------
  let specs: ColumnSpec[] = [];
  let decisions = new Map<string, Decision>();
  let fonts: Fonts | null = null;
  const widths = new ColumnWidths();
  const choice = new Map<string, boolean>(); // the user's: shown (true) or hidden (false)
  const resized = new Map<string, number>(); // widths the user dragged

  /** The grid's columns in order of importance: the tab's list (a `partition` entry stands for
   * the partition value columns when the rows carry them), else every field. */
  const columnSpecs = (): ColumnSpec[] => {
    const byName = new Map(fields.map((f) => [f.name, f]));
    const partitions = fields.filter((f) => f.partition_column);
    let names = opts.columns ? opts.columns.flatMap((c) => (c === 'partition' && partitions.length ? partitions.map((f) => f.name) : [c])) : fields.map((f) => f.name);
    names = names.filter((c) => byName.has(c));
    if (!opts.columns && partitions.length) names = names.filter((c) => c !== 'partition');
    if (opts.hideEmpty && mode === 'rows' && rows && rows.rows.length) {
      const all = rows.rows;
      names = names.filter((n) => all.some((r) => r[n] !== null && r[n] !== undefined && r[n] !== '' && r[n] !== '{}'));
    }
    return names.map((n, i) => {
      const f = byName.get(n) as FieldInfo;
      const o = opts.options?.[n] ?? {};
      const unit = o.unit ?? f.unit;
      return {
        name: n,
        field: f,
        unit,
        header: o.header ?? (f.partition_column || f.name.replace(/_/g, ' ')),
        // never hidden: the first column (a partition's values in the partitions grid), the
        // first path (what a row is) and pinned columns
        essential:
          i === 0 ||
          (f.partition_column !== undefined && i < partitions.length) ||
          (unit === 'path' && names.findIndex((m) => (opts.options?.[m]?.unit ?? byName.get(m)?.unit) === 'path') === i) ||
          Boolean(o.pinned),
        width: o.width,
        minWidth: o.minWidth,
        flex: o.flex,
        partition: Boolean(f.partition_column),
      };
    });
  };

  const colDefs = (): ColDef[] => {
    specs = columnSpecs();
    return specs.map((sp) => columnDef(sp, opts.options?.[sp.name] ?? {}, decisions.get(sp.name), fonts));
  };

  const scrollbar = (() => {
    let w: number | null = null;
    return () => {
      if (w === null) {
        const probe = h('div', { style: 'position:absolute;top:-200px;width:100px;height:50px;overflow:scroll' });
        document.body.appendChild(probe);
        w = probe.offsetWidth - probe.clientWidth;
        probe.remove();
      }
      return w;
    };
  })();

  /** The room the columns share: the grid's width less borders, the vertical scrollbar's strip
   * (when the rows overflow) and the selection column; null while the grid has no width (a
   * hidden panel). Before AG Grid is created, the strip and the selection column are AG Grid's
   * defaults (the system scrollbar, 50 px). */
  const roomFor = (total: number): number | null => {
    const width = gridEl.clientWidth;
    if (!width) return null;
    const height = gridEl.clientHeight || fitHeight(total);
    // the vertical scrollbar's strip (AG Grid's own, also when the system's scrollbars overlay):
    // the body is that much narrower than the header
    const strip = gridEl.querySelector('.ag-body-vertical-scroll') as HTMLElement | null;
    const overflows = HEADER_PX + total * ROW_PX > height - 2 || (strip !== null && strip.offsetWidth > 0 && !strip.classList.contains('ag-hidden'));
    const vertical = overflows ? Math.max(strip?.offsetWidth ?? 0, scrollbar(), 16) : 0;
    const selection = api ? api.getColumn('ag-Grid-SelectionColumn')?.getActualWidth() ?? 0 : opts.selection === 'multiple' ? SELECTION_PX : 0;
    return width - 2 - vertical - selection;
  };

  /** The columns' decisions for the room and the rows seen (null: no room known yet). */
  const decideFor = (total: number): Map<string, Decision> | null => {
    const room = roomFor(total);
    if (room === null || !fonts) return null;
    // columns a tab hides by default count as hidden by the user until the chooser shows them
    const chosen = new Map(choice);
    for (const sp of specs) if (opts.options?.[sp.name]?.hide && !chosen.has(sp.name)) chosen.set(sp.name, false);
    return decide(specs, widths, fonts, room, chosen, resized, mode === 'rows');
  };

  /** Decide the columns before AG Grid exists, from the first rows: the grid is created with
   * its final column definitions (a second definition re-drew every cell, forcing style and
   * layout: 150-840 ms at 1M files). */
  const decideFirst = (first: Row[], total: number) => {
    specs = columnSpecs();
    fonts = fonts ?? pageFonts ?? fontsOf(gridEl);
    widths.observe(specs, first, fonts);
    const next = decideFor(total);
    if (next) decisions = next;
  };

  /** Re-decide the columns for the grid's width and the rows seen; apply what changed. */
  const fit = () => {
    if (!api || !specs.length) return;
    if (!gridEl.clientWidth) return;
    fonts = fontsOf(gridEl);
    pageFonts = fonts;
    const total = mode === 'source' ? source?.total ?? 0 : api.getDisplayedRowCount();
    const next = decideFor(total);
    if (!next) return;
    const changed = specs.filter((sp) => JSON.stringify(next.get(sp.name)) !== JSON.stringify(decisions.get(sp.name)));
    const shownKey = specs.map((sp) => `${sp.name}:${next.get(sp.name)?.hide ? 0 : 1}`).join(',');
    if (shownKey !== chooserKey) drawChooser(next, shownKey);
    if (!changed.length) return;
    if (decisions.size) mark(`grid-refit:${opts.label}:${changed.map((sp) => sp.name).join(',')}`, performance.now());
    const before = decisions;
    decisions = next;
    if (changed.every((sp) => widthOnly(before.get(sp.name), next.get(sp.name)))) {
      // only widths moved (the room changed by a scrollbar, a resize): the columns are resized,
      // not defined anew (which re-drew every cell: 50-80 ms of a prerendered tab's show)
      api.setColumnWidths(changed.map((sp) => ({ key: sp.name, newWidth: next.get(sp.name)?.width as number })));
      return;
    }
    api.setGridOption('columnDefs', specs.map((sp) => columnDef(sp, opts.options?.[sp.name] ?? {}, decisions.get(sp.name), fonts)));
    api.refreshCells({ force: true, columns: changed.map((sp) => sp.name) });
  };
  let fitQueued = false;
  const queueFit = () => {
    if (fitQueued) return;
    fitQueued = true;
    requestAnimationFrame(() => {
      fitQueued = false;
      measure(`grid-fit:${opts.label}`, fit);
    });
  };
  /** Rows arrived (a window from the kernel, or rows in the browser): widths follow them. */
  const observeRows = (r: Row[]) => {
    if (!fonts) fonts = fontsOf(gridEl);
    widths.observe(specs, r, fonts);
    queueFit();
  };
  const resizes = new ResizeObserver(() => queueFit());
  resizes.observe(gridEl);
  fitButton.addEventListener('click', () => {
    choice.clear();
    resized.clear();
    fit();
  });

  let chooserKey = '';
  const chooserText = (next: Map<string, Decision>) => {
    const hidden = specs.filter((sp) => next.get(sp.name)?.hide).length;
    return hidden ? `Columns (${humanCount(hidden)} hidden)` : 'Columns';
  };
  function drawChooser(next: Map<string, Decision>, key: string): void {
    chooserKey = key;
    const boxes_ = [...chooserList.querySelectorAll('input')];
    if (boxes_.length === specs.length && boxes_.every((b, i) => b.dataset.col === specs[i].name)) {
      // the same columns: the boxes follow (the list stays, and the focus in it)
      for (const b of boxes_) b.checked = !next.get(b.dataset.col as string)?.hide;
      chooserLabel.textContent = chooserText(next);
      return;
    }
    chooserLabel.textContent = chooserText(next);
    chooser.hidden = specs.length < 2;
    const boxes = specs.map((sp) => {
      const box = h('input', { type: 'checkbox', 'data-col': sp.name });
      box.checked = !next.get(sp.name)?.hide;
      box.disabled = sp.essential;
      box.addEventListener('change', () => {
        choice.set(sp.name, box.checked);
        fit();
      });
      return h('label', { class: 'dxe-chooser-item', title: sp.field.doc || sp.name }, box, sp.header);
    });
    fill(chooserList, boxes);
  }

  const baseOptions = (): GridOptions => ({
    theme: gridTheme,
    columnDefs: colDefs(),
    defaultColDef: { sortable: true, resizable: true, suppressMovable: false },
    ensureDomOrder: true,
    // a column named `after.amount` (the row diff's) is that column, not a path into the row
    suppressFieldDotNotation: true,
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
    onColumnResized: (e) => {
      if (e.finished && e.source === 'uiColumnResized') for (const c of e.columns || []) resized.set(c.getColId(), c.getActualWidth());
    },
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

  /** `first`: the first window, asked for before the grid was created (served once, when the
   * grid asks for it with no sort). */
  const datasource = (info: SourceInfo, gen: number, first: FirstWindow | null = null): IDatasource => ({
    getRows: (p: IGetRowsParams) => {
      if (!opts.rpc) {
        p.failCallback();
        return;
      }
      const sort = p.sortModel.map((s) => [s.colId, s.sort]);
      if (first && p.startRow === 0 && p.endRow === first.end && !sort.length) {
        const { rows: firstRows, total } = first;
        first = null;
        status.textContent = '';
        measure(`rows-draw:${opts.label}`, () => p.successCallback(firstRows, total));
        setCount(total, filter.text || filter.ranges ? info.total : undefined);
        return;
      }
      first = null;
      status.textContent = 'loading…';
      const asked = performance.now();
      opts.rpc
        .request('rows', { source: info.id, start: p.startRow, end: p.endRow, sort, filter })
        .then((reply) => {
          mark(`rows-wait:${opts.label}`, asked);
          // a reply to a replaced datasource (the filter changed meanwhile) is dropped, but AG
          // Grid still counts its block as loading (2 at most: maxConcurrentDatasourceRequests)
          // until a callback says it finished; unreleased, two stale replies stopped every later
          // load (a brush over the layout density: "loading…" for ever)
          if (gen !== generation) return p.failCallback();
          const decoded = measure(`rows-decode:${opts.label}`, () => decode(reply.buffers[0]));
          const total = Number(reply.content.total);
          measure(`rows-draw:${opts.label}`, () => p.successCallback(decoded ? decoded.rows : [], total));
          if (decoded) observeRows(decoded.rows);
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
    }, el);
  };

  const buildNow = () => {
    api?.destroy();
    api = null;
    gridEl.replaceChildren();
    widths.reset();
    decisions = new Map();
    status.textContent = '';
    status.classList.remove('dxe-grid-error');
    if (mode === 'rows' && rows) {
      const shown = applyClientFilter(rows.rows);
      gridEl.style.height = `${fitHeight(shown.length)}px`;
      decideFirst(shown.slice(0, 500), shown.length);
      api = createGrid(gridEl, { ...baseOptions(), rowModelType: 'clientSide', rowData: shown });
      const all = outOf ?? rows.rows.length;
      setCount(shown.length, shown.length !== all ? all : undefined);
      queueFit();
    } else if (mode === 'source' && source) {
      gridEl.style.height = `${fitHeight(source.total)}px`;
      setCount(source.total);
      const info = source;
      const mine = generation;
      const block = Number(opts.rpc?.model.get('page_size')) || 200;
      const create = (first: FirstWindow | null) => {
        if (mine !== generation) return;
        measure(`grid:${opts.label}`, () => {
          if (first) decideFirst(first.rows, info.total);
          const o: GridOptions = {
            ...baseOptions(),
            rowModelType: 'infinite',
            cacheBlockSize: block,
            maxBlocksInCache: 20,
            infiniteInitialRowCount: Math.min(info.total, block),
            blockLoadDebounceMillis: 60,
            // a fast scroll over a long source draws where it stops, not every row on the way
            // (each intermediate draw was a 60-100 ms task at 1M files)
            debounceVerticalScrollbar: true,
            datasource: datasource(info, mine, first),
          };
          api = createGrid(gridEl, o);
        });
        queueFit();
      };
      // the first window is asked for before the grid exists: its columns are decided from it
      if (!opts.rpc || !info.total) create(null);
      else {
        status.textContent = 'loading…';
        const asked = performance.now();
        opts.rpc
          .request('rows', { source: info.id, start: 0, end: block, sort: [], filter })
          .then((reply) => {
            mark(`rows-wait:${opts.label}`, asked);
            const decoded = measure(`rows-decode:${opts.label}`, () => decode(reply.buffers[0]));
            later(() => create(decoded ? { rows: decoded.rows, total: Number(reply.content.total), end: block } : null), el);
          })
          .catch(() => later(() => create(null), el));
      }
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
        observeRows(shown.slice(0, 500));
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
      resizes.disconnect();
      api?.destroy();
      api = null;
    },
  };
}

export { createGrid_ as createGrid, download };
