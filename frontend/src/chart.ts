// Charts: the `deltaexplore.viz` Vega-Lite specs (sent by the kernel as `chart.to_dict()`),
// compiled to Vega with the bundled Vega-Lite and drawn by a bundled Vega view (no CDN: no
// loader is ever asked for a URL), themed from JupyterLab's variables. In SVG, but a spec of
// more than `CANVAS_ROWS` rows on a canvas: SVG costs an element per mark, and the history of
// 1,101 commits took 250-680 ms to draw and its style and layout on every show of the tab.
// Tooltips, clicks and brushes work alike on both; the chart's element says which was drawn
// once it is (`data-drawn`: svg | canvas).
//
// Three steps, each a task of its own: compiling Vega-Lite to Vega, parsing the Vega spec into
// a dataflow description, and running the view (which draws it). The first two depend only on
// the spec, the theme and the height: they are kept per spec object (`prewarmChart` does them
// in idle time before a tab is opened, and runs the view once headless, so the first drawn
// chart of a page does not also pay for the first run of Vega's code).
//
// Tooltips are ours (`tooltipHandler`): a div whose lines are text nodes, so a path or user
// name holding markup stays text. Selections flow back through `onSignal` (brushes named by
// viz, e.g. "time_brush") and `onClick` (the datum under the pointer).
import { parse, View } from 'vega';
import { compile } from 'vega-lite';

import { h, idle, later, measure } from './dom';
import { formatValue, humanNumber } from './format';
import { onThemeChange, palette, vegaConfig } from './theme';

export interface ChartOptions {
  /** fixed height in px (the width follows the container) */
  height?: number;
  /** called with the datum of a clicked mark */
  onClick?: (datum: Record<string, unknown>) => void;
  /** called when a named selection (signal) changes */
  onSignal?: Record<string, (value: unknown) => void>;
  /** accessible description of the chart */
  label: string;
}

export interface ChartHandle {
  el: HTMLElement;
  update(spec: Record<string, unknown> | null | undefined): void;
  destroy(): void;
  view(): View | null;
}

/** Vega-Lite compiled (and parsed) for one theme and height: kept per spec object. */
interface Prepared {
  vg: any;
  runtime: any | null;
}
const prepared = new WeakMap<object, Map<string, Prepared>>();

function preparedFor(spec: Record<string, unknown>, key: string): Prepared | undefined {
  return prepared.get(spec)?.get(key);
}

function keep(spec: Record<string, unknown>, key: string, entry: Prepared): void {
  let m = prepared.get(spec);
  if (!m) prepared.set(spec, (m = new Map()));
  m.set(key, entry);
}

function cacheKey(config: Record<string, unknown>, height?: number): string {
  return `${height ?? ''}|${JSON.stringify(config)}`;
}

/** Vega-Lite's warnings, but the one a chart as tall as its bars always gives ("Dropping fit-y":
 * it is as tall as its bars by design, and as wide as its container). */
const vlLogger = {
  level() {
    return this;
  },
  warn(...args: unknown[]) {
    if (!/Dropping "fit-y"/.test(String(args[0]))) console.warn(...args);
  },
  info() {},
  debug() {},
  error(...args: unknown[]) {
    console.error(...args);
  },
};

function compileSpec(spec: Record<string, unknown>, config: Record<string, unknown>, height: number | undefined, label: string): any {
  return measure(`chart-compile:${label}`, () => compile(responsive(spec, height) as any, { config: config as any, logger: vlLogger as any }).spec);
}

// specs carry their data inline: anything asking the loader for a URL is refused
const noLoader = { load: () => Promise.reject(new Error('deltaexplore charts load nothing from the network')) } as any;

/** Compile and parse `spec` for a chart of `height` in idle time (one step per idle task), and
 * run its view once headless: a chart drawn later from the same spec object starts at the run. */
export function prewarmChart(spec: Record<string, unknown> | null | undefined, height: number | undefined, el: Element): void {
  if (!spec || typeof spec !== 'object') return;
  idle(() => {
    try {
      const config = vegaConfig(palette(el.isConnected ? el : document.body));
      const key = cacheKey(config, height);
      if (preparedFor(spec, key)) return;
      const entry: Prepared = { vg: compileSpec(spec, config, height, 'prewarm'), runtime: null };
      keep(spec, key, entry);
      idle(() => {
        try {
          if (!entry.runtime) entry.runtime = measure('chart-parse:prewarm', () => parse(entry.vg));
          idle(() => {
            const view = new View(entry.runtime, { loader: noLoader, renderer: 'none' });
            void measure('chart-run:prewarm', () => view.runAsync())
              .catch(() => undefined)
              .finally(() => view.finalize());
          });
        } catch {
          // a spec that does not parse shows its error when drawn
        }
      });
    } catch {
      // a spec that does not compile shows its error when drawn
    }
  });
}

let tooltipEl: HTMLElement | null = null;

function tooltipNode(rootClass: string): HTMLElement {
  if (!tooltipEl || !tooltipEl.isConnected) {
    tooltipEl = h('div', { class: `${rootClass} dxe-tooltip`, role: 'tooltip' });
    document.body.appendChild(tooltipEl);
  }
  return tooltipEl;
}

function tooltipText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return humanNumber(value);
  if (value instanceof Date) return formatValue('timestamp', value.getTime());
  return String(value);
}

/** A Vega tooltip handler that renders text only (never HTML). */
export function tooltipHandler(rootClass: string) {
  return (_handler: unknown, event: MouseEvent, _item: unknown, value: unknown): void => {
    const tip = tooltipNode(rootClass);
    if (value === null || value === undefined || value === '') {
      tip.classList.remove('dxe-tooltip-visible');
      return;
    }
    tip.replaceChildren();
    if (typeof value === 'object' && !Array.isArray(value)) {
      const table = h('table');
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        table.appendChild(h('tr', null, h('th', null, k), h('td', null, tooltipText(v))));
      }
      tip.appendChild(table);
    } else {
      tip.appendChild(document.createTextNode(tooltipText(value)));
    }
    tip.classList.add('dxe-tooltip-visible');
    const pad = 12;
    const { innerWidth, innerHeight } = window;
    const rect = tip.getBoundingClientRect();
    let x = event.clientX + pad;
    let y = event.clientY + pad;
    if (x + rect.width > innerWidth) x = Math.max(0, event.clientX - rect.width - pad);
    if (y + rect.height > innerHeight) y = Math.max(0, event.clientY - rect.height - pad);
    tip.style.left = `${x}px`;
    tip.style.top = `${y}px`;
  };
}

/** A spec of more rows than this is drawn on a canvas. */
export const CANVAS_ROWS = 600;

/** The rows a spec carries inline (its datasets and inline values, at any depth). */
export function specRows(spec: unknown): number {
  if (!spec || typeof spec !== 'object') return 0;
  if (Array.isArray(spec)) return spec.reduce((n: number, x) => n + specRows(x), 0);
  const o = spec as Record<string, unknown>;
  let n = 0;
  for (const [k, v] of Object.entries(o)) {
    if (k === 'datasets' && v && typeof v === 'object') n += Object.values(v).reduce((m: number, d) => m + (Array.isArray(d) ? d.length : 0), 0);
    else if (k === 'values' && Array.isArray(v)) n += v.length;
    else if (k === 'data' || k === 'layer' || k === 'vconcat' || k === 'hconcat' || k === 'concat' || k === 'spec') n += specRows(v);
  }
  return n;
}

function responsive(spec: Record<string, unknown>, height?: number): Record<string, unknown> {
  const out: Record<string, unknown> = { ...spec };
  const single = 'mark' in out || 'layer' in out;
  if (single) {
    out.width = 'container';
    if (height !== undefined && out.height === undefined) out.height = height;
    out.autosize = { type: 'fit-x', contains: 'padding' };
  }
  // the kernel's spec carries Altair's default view size: ours (the theme) decides
  const config = { ...((out.config as Record<string, unknown>) || {}) };
  delete config.view;
  out.config = config;
  return out;
}

/** A chart in `container`, re-drawn on `update(spec)` and on a JupyterLab theme switch. */
export function createChart(rootClass: string, opts: ChartOptions): ChartHandle {
  const el = h('div', { class: 'dxe-chart', role: 'img', 'aria-label': opts.label });
  if (opts.height) el.style.minHeight = `${opts.height + 40}px`;
  let current: Record<string, unknown> | null = null;
  let result: View | null = null;
  let token = 0;
  const finalize = () => {
    result?.finalize();
    result = null;
  };
  /** A step in a task of its own (after the tasks queued before it); null once superseded. */
  const step = <T>(mine: number, fn: () => T | Promise<T>): Promise<T | null> =>
    new Promise((resolve, reject) =>
      later(async () => {
        if (mine !== token) return resolve(null);
        try {
          resolve(await fn());
        } catch (err) {
          reject(err);
        }
      }, el),
    );
  const draw = async () => {
    const mine = ++token;
    finalize();
    delete el.dataset.drawn;
    if (!current) {
      el.replaceChildren();
      return;
    }
    const config = vegaConfig(palette(el.isConnected ? el : document.body));
    const spec = current;
    const key = cacheKey(config, opts.height);
    try {
      let entry = preparedFor(spec, key);
      if (!entry) {
        const vg = await step(mine, () => compileSpec(spec, config, opts.height, opts.label));
        if (vg === null || mine !== token) return;
        entry = { vg, runtime: null };
        keep(spec, key, entry);
      }
      const ready = entry;
      if (!ready.runtime) {
        const runtime = await step(mine, () => measure(`chart-parse:${opts.label}`, () => parse(ready.vg)));
        if (runtime === null || mine !== token) return;
        ready.runtime = runtime;
      }
      const r = await step(mine, async () => {
        const start = performance.now();
        const target = h('div', { class: 'dxe-chart-canvas' });
        el.replaceChildren(target);
        const renderer = specRows(spec) > CANVAS_ROWS ? 'canvas' : 'svg';
        const view = new View(ready.runtime, { loader: noLoader, renderer });
        view.tooltip(tooltipHandler(rootClass) as any);
        view.hover();
        try {
          await view.initialize(target).runAsync();
          // vega-view's container observer keeps the size it saw at `initialize`, before the
          // first draw (no height): its first notification then re-ran the dataflow and drew
          // the chart again -- for a chart prerendered in a hidden panel, when the tab was
          // shown (20-45 ms of the click's frame at 746-1,101 marks). A container stream asked
          // for now observes it again from the size drawn: later resizes still re-draw it.
          view.events('container', 'resize');
          el.dataset.drawn = renderer;
        } catch (err) {
          view.finalize();
          throw err;
        } finally {
          try {
            performance.measure(`dxe:chart-draw:${opts.label}`, { start, end: performance.now() });
          } catch {
            // diagnostic only
          }
        }
        return view;
      });
      if (r === null) return;
      if (mine !== token) {
        r.finalize();
        return;
      }
      result = r;
      // the room kept while drawing goes: a chart as tall as its bars may be shorter
      el.style.minHeight = '';
      if (opts.onClick) {
        const cb = opts.onClick;
        r.addEventListener('click', (_e: unknown, item: any) => {
          if (item && item.datum && typeof item.datum === 'object') cb(item.datum as Record<string, unknown>);
        });
      }
      for (const [name, cb] of Object.entries(opts.onSignal || {})) {
        try {
          r.addSignalListener(name, (_n: string, value: unknown) => cb(value));
        } catch {
          // the spec has no such selection (e.g. an empty chart)
        }
      }
    } catch (err) {
      if (mine === token) el.replaceChildren(h('p', { class: 'dxe-note dxe-note-error', role: 'alert' }, `could not draw the chart: ${String(err)}`));
    }
  };
  const stopTheme = onThemeChange(() => void draw());
  return {
    el,
    update(spec) {
      current = spec || null;
      void draw();
    },
    destroy() {
      token++;
      finalize();
      stopTheme();
    },
    view: () => result,
  };
}
