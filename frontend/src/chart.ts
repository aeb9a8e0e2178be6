// Charts: the `deltaexplore.viz` Vega-Lite specs (sent by the kernel as `chart.to_dict()`),
// drawn with the bundled vega-embed (no CDN: no loader is ever asked for a URL, the actions
// menu that links to the online editor is off), in SVG, themed from JupyterLab's variables.
//
// Tooltips are ours (`tooltipHandler`): a div whose lines are text nodes, so a path or user
// name holding markup stays text. Selections flow back through `onSignal` (brushes named by
// viz, e.g. "time_brush") and `onClick` (the datum under the pointer).
import embed, { type Result } from 'vega-embed';
import { compile } from 'vega-lite';

import { h, later, measure } from './dom';
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
  view(): Result['view'] | null;
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
  let result: Result | null = null;
  let token = 0;
  const finalize = () => {
    result?.finalize();
    result = null;
  };
  const draw = async () => {
    const mine = ++token;
    finalize();
    if (!current) {
      el.replaceChildren();
      return;
    }
    const p = palette(el.isConnected ? el : document.body);
    const spec = current;
    try {
      // two tasks: compiling Vega-Lite to Vega, then parsing, running and drawing the view
      const vgSpec = await new Promise<any>((resolve, reject) =>
        later(() => {
          if (mine !== token) return resolve(null);
          try {
            resolve(measure(`chart-compile:${opts.label}`, () => compile(responsive(spec, opts.height) as any, { config: vegaConfig(p) as any }).spec));
          } catch (err) {
            reject(err);
          }
        }),
      );
      if (vgSpec === null || mine !== token) return;
      const r = await new Promise<Result>((resolve, reject) =>
        later(async () => {
          const start = performance.now();
          const target = h('div', { class: 'dxe-chart-canvas' });
          el.replaceChildren(target);
          try {
            resolve(
              await embed(target, vgSpec, {
                mode: 'vega',
                actions: false,
                renderer: 'svg',
                defaultStyle: false,
                tooltip: tooltipHandler(rootClass) as any,
                // specs carry their data inline: anything asking the loader for a URL is refused
                loader: { load: () => Promise.reject(new Error('deltaexplore charts load nothing from the network')) } as any,
              }),
            );
          } catch (err) {
            reject(err);
          } finally {
            try {
              performance.measure(`dxe:chart-draw:${opts.label}`, { start, end: performance.now() });
            } catch {
              // diagnostic only
            }
          }
        }),
      );
      if (mine !== token) {
        r.finalize();
        return;
      }
      result = r;
      if (opts.onClick) {
        const cb = opts.onClick;
        r.view.addEventListener('click', (_e: unknown, item: any) => {
          if (item && item.datum && typeof item.datum === 'object') cb(item.datum as Record<string, unknown>);
        });
      }
      for (const [name, cb] of Object.entries(opts.onSignal || {})) {
        try {
          r.view.addSignalListener(name, (_n: string, value: unknown) => cb(value));
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
    view: () => result?.view ?? null,
  };
}
