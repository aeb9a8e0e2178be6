// Column widths that fit what a grid holds and the room it has (issue 21: no number is ever cut).
//
// Every column is at least as wide as its widest formatted value among the rows seen so far
// (and its header): numbers, times, versions, flags, badges, partition values and short text
// get exactly that; paths get the width of their short form (`shortPath`) and share what is
// left with long text and JSON. When the columns do not fit the grid's width, in this order:
//   1. counts switch to their compact form (`humanCompact`: 4.78 M; the exact value in the
//      cell's title and in exports), all the grid's counts together;
//   2. paths show their name alone while the partition has a column of its own;
//   3. long text that can wrap (rows in the browser grow) narrows to a floor;
//   4. the least important columns (the last of the grid's list) are hidden: the column chooser
//      lists them and shows them again;
//   5. still short of room: everything down to a floor (text cut, its whole in the title).
// What the steps shortened goes back to full length where the room allows it. Only what the
// user asked for (a column shown from the chooser, a column resized by hand) can make a grid
// scroll sideways. Text is measured on a canvas in the fonts the cells use.
import type { FieldInfo, Row } from './arrow';
import { formatValue, humanCompact, humanCount, humanFloat, shortPath } from './format';

/** Display units whose values have a known width: sized to them, never cut. */
const CONTENT = new Set(['bytes', 'count', 'version', 'number', 'ratio', 'duration_ms', 'timestamp', 'bool', 'status', 'operation']);
/** Units holding free text: they take the room left (short text is sized to its values). */
const FLEX = new Set(['path', 'json', 'text']);

export interface ColumnSpec {
  name: string;
  field: FieldInfo;
  unit: string;
  header: string;
  /** never hidden to make room (the first column, the first path, pinned columns) */
  essential: boolean;
  /** width given by the tab (a floor) */
  width?: number;
  minWidth?: number;
  flex?: number;
  /** values of a partition column: sized to them like numbers */
  partition: boolean;
}

export interface Decision {
  hide: boolean;
  compact: boolean;
  /** the column's width */
  width?: number;
  /** long text that wraps (grids of rows in the browser, where rows can grow) */
  wrap?: boolean;
}

export interface Fonts {
  cell: string;
  header: string;
  mono: string;
  badge: string;
  pill: string;
  /** horizontal padding of a cell (both sides) and of a header cell */
  cellPad: number;
  headerPad: number;
}

let canvas: CanvasRenderingContext2D | null = null;
const cache = new Map<string, number>();

/** The width of `text` in px in `font` (a canvas measure, cached). */
export function textWidth(text: string, font: string): number {
  const key = `${font}\u0000${text}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  if (!canvas) canvas = document.createElement('canvas').getContext('2d');
  let w = text.length * 7;
  if (canvas) {
    canvas.font = font;
    w = canvas.measureText(text).width;
  }
  if (cache.size > 20000) cache.clear();
  cache.set(key, w);
  return w;
}

/** The fonts and paddings in effect in a grid (read from the page once it is drawn). */
export function fontsOf(gridEl: HTMLElement): Fonts {
  const probe = (gridEl.querySelector('.ag-root-wrapper') as HTMLElement | null) ?? gridEl;
  const style = getComputedStyle(probe);
  const family = style.fontFamily || 'sans-serif';
  const mono = getComputedStyle(gridEl).getPropertyValue('--jp-code-font-family').trim() || 'monospace';
  const pad = (sel: string, fallback: number) => {
    const el = gridEl.querySelector(sel);
    if (!el) return fallback;
    const s = getComputedStyle(el);
    return parseFloat(s.paddingLeft) + parseFloat(s.paddingRight) || fallback;
  };
  return {
    cell: `12px ${family}`,
    header: `600 12px ${family}`,
    mono: `11.5px ${mono}`,
    badge: `600 11px ${mono}`,
    pill: `600 11px ${family}`,
    cellPad: pad('.ag-cell', 20),
    headerPad: pad('.ag-header-cell', 20),
  };
}

/** The text a cell of `unit` shows for `value` (compact: counts in their compact form). */
export function cellText(unit: string, value: unknown, type: string, compact: boolean): string {
  if (value === null || value === undefined) return '';
  if (unit === 'count' && typeof value === 'number' && compact) return humanCompact(value);
  if (unit === 'path') return compact ? nameOnly(shortPath(String(value))) : shortPath(String(value));
  if (unit === 'number' && typeof value === 'number' && /^(double|float|halffloat)/i.test(type)) return humanFloat(value);
  if (unit === 'status' || unit === 'operation') return String(value);
  return formatValue(unit, value);
}

/** A short path without its directories (a grid short of room: the partition has a column). */
export function nameOnly(short: string): string {
  return short.includes('/') ? `…/${short.slice(short.lastIndexOf('/') + 1)}` : short;
}

/** The width a cell needs for `text` beyond the text itself (badges, pills, copy buttons). */
function extra(unit: string): number {
  if (unit === 'status') return 20;
  if (unit === 'operation') return 16;
  if (unit === 'path') return 26; // the copy button
  return 0;
}

function fontFor(unit: string, fonts: Fonts): string {
  if (unit === 'path') return fonts.mono;
  if (unit === 'operation') return fonts.badge;
  if (unit === 'status') return fonts.pill;
  return fonts.cell;
}

/** The widest text of each column over the rows seen (full and compact forms), kept as rows
 * arrive; `reset` when the rows are replaced. */
export class ColumnWidths {
  private full = new Map<string, number>();
  private compact = new Map<string, number>();

  reset(): void {
    this.full.clear();
    this.compact.clear();
  }

  observe(specs: ColumnSpec[], rows: Row[], fonts: Fonts): void {
    for (const s of specs) {
      if (s.unit === 'json') continue;
      const font = fontFor(s.unit, fonts);
      let full = this.full.get(s.name) ?? 0;
      let small = this.compact.get(s.name) ?? 0;
      for (const r of rows) {
        const v = r[s.name];
        if (v === null || v === undefined || v === '') continue;
        full = Math.max(full, textWidth(cellText(s.unit, v, s.field.type, false), font));
        if (s.unit === 'count' || s.unit === 'path') small = Math.max(small, textWidth(cellText(s.unit, v, s.field.type, true), font));
      }
      this.full.set(s.name, full);
      this.compact.set(s.name, s.unit === 'count' || s.unit === 'path' ? small : full);
    }
  }

  /** The width the values of `s` need (with padding and adornments). */
  need(s: ColumnSpec, compact: boolean, fonts: Fonts): number {
    const text = (compact ? this.compact : this.full).get(s.name) ?? 0;
    return Math.ceil(text + (text ? extra(s.unit) : 0) + fonts.cellPad + 6);
  }
}

/** A header's width: its text, the sort arrow and the padding. */
export function headerNeed(s: ColumnSpec, fonts: Fonts): number {
  return Math.ceil(textWidth(s.header, fonts.header) + fonts.headerPad + 22);
}

/** Text at most this wide is sized to (a text column's values are often short: a version's
 * engine, a storage kind, a bound of the layout; never cut, like numbers). */
const SHORT_TEXT = 260;

function sizedByContent(s: ColumnSpec, widths: ColumnWidths, fonts: Fonts): boolean {
  if (s.partition || CONTENT.has(s.unit) || !FLEX.has(s.unit)) return true;
  return s.unit === 'text' && widths.need(s, false, fonts) <= SHORT_TEXT;
}

/**
 * Widths, compact forms and hidden columns for `specs` in `room` px. `choice`: columns the user
 * showed (true) or hid (false) with the chooser; `resized`: widths the user dragged.
 */
export function decide(
  specs: ColumnSpec[],
  widths: ColumnWidths,
  fonts: Fonts,
  room: number,
  choice: Map<string, boolean>,
  resized: Map<string, number>,
  canWrap: boolean,
): Map<string, Decision> {
  const out = new Map<string, Decision>();
  const content = (s: ColumnSpec) => sizedByContent(s, widths, fonts);
  const compact = new Set<string>(); // counts in compact form; paths as their name alone
  const narrow = new Set<string>(); // text that wraps, down to its floor
  let shrink = false; // everything down to its floor
  const floor = (s: ColumnSpec): number => {
    const head = headerNeed(s, fonts);
    const user = resized.get(s.name);
    if (user !== undefined) return user;
    if (content(s)) return Math.max(head, widths.need(s, compact.has(s.name), fonts), s.width ?? 0, s.minWidth ?? 0);
    if (s.unit === 'path') return Math.max(Math.min(widths.need(s, compact.has(s.name) || shrink, fonts), 420), head);
    // text and JSON: room for their text up to a cap, less when short of room
    const cap = shrink ? 90 : narrow.has(s.name) ? 150 : s.unit === 'json' ? 180 : 260;
    return Math.max(Math.min(widths.need(s, false, fonts) || cap, cap), Math.min(head, 150), s.minWidth ?? 0);
  };
  const total = (list: ColumnSpec[]) => list.reduce((n, s) => n + floor(s), 0);
  let visible = specs.filter((s) => choice.get(s.name) !== false);
  const fits = () => total(visible) <= room;
  // 1. counts in compact form: all of them, so the counts of a grid read alike (43.8 M rows
  // next to 43,807,785 live rows reads as two different numbers)
  const counts = visible.filter((s) => s.unit === 'count' && !resized.has(s.name) && widths.need(s, false, fonts) > widths.need(s, true, fonts));
  if (!fits()) for (const s of counts) compact.add(s.name);
  // 2. paths as their name alone when the partition has a column of its own
  if (!fits() && visible.some((s) => s.partition)) for (const s of visible) if (s.unit === 'path') compact.add(s.name);
  // 3. text that can wrap (rows in the browser grow) down to its floor
  if (!fits() && canWrap) for (const s of visible) if (s.unit === 'text' && !content(s)) narrow.add(s.name);
  // 4. the least important columns hidden (never one the user asked for, nor an essential one)
  const hide = () => {
    for (let i = visible.length - 1; i >= 0 && !fits(); i--) {
      const s = visible[i];
      if (s.essential || choice.get(s.name) === true) continue;
      visible = visible.filter((x) => x !== s);
    }
  };
  hide();
  if (!visible.some((s) => s.partition) && visible.some((s) => s.unit === 'path' && compact.has(s.name))) {
    // the partition's column went: paths keep their partition directories after all
    for (const s of visible) if (s.unit === 'path') compact.delete(s.name);
    hide();
  }
  // 5. short of room still: everything down to its floor (text cut, its whole in the title)
  shrink = !fits();
  // paths, then the counts (together), made short that fit now at full length go back (a column
  // hidden made room)
  for (const group of [...visible.filter((x) => x.unit === 'path').map((x) => [x]), counts.filter((x) => visible.includes(x))]) {
    if (shrink || !group.length || !group.every((x) => compact.has(x.name))) continue;
    for (const x of group) compact.delete(x.name);
    if (!fits()) for (const x of group) compact.add(x.name);
  }
  // the room left goes to paths, text and JSON by their weight, else to every column (widths
  // set here, not by AG Grid's flex: its flex fills the body under an overlay scrollbar's strip)
  let flexible = visible.filter((s) => !content(s) && !resized.has(s.name));
  if (!flexible.length) flexible = visible.filter((s) => !resized.has(s.name));
  const weight = (s: ColumnSpec) => (content(s) ? 1 : s.flex ?? (s.unit === 'path' ? 3 : s.unit === 'json' ? 2 : 1));
  const weights = flexible.reduce((n, s) => n + weight(s), 0);
  const spare = Math.max(0, room - total(visible));
  for (const s of specs) {
    if (!visible.includes(s)) {
      out.set(s.name, { hide: true, compact: false });
      continue;
    }
    const extraRoom = flexible.includes(s) ? Math.floor((spare * weight(s)) / weights) : 0;
    out.set(s.name, { hide: false, compact: compact.has(s.name), width: floor(s) + extraRoom, wrap: canWrap && s.unit === 'text' && !content(s) });
  }
  return out;
}

/** The title of a count shown compact: its exact value. */
export function exactCount(value: number): string {
  return `${humanCount(value)} (exact)`;
}
