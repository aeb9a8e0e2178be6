// Log health: every check of `inspect.log_health` with its status pill and advice, and the log's
// size per version (`viz.log_health_chart`: the JSON replayed to open each version).
import { decode } from '../arrow';
import { createChart } from '../chart';
import type { Ctx, Tab } from '../context';
import { engineNote, fill, h, note, pill, section } from '../dom';
import { formatValue, metricUnit } from '../format';
import { createGrid } from '../grid';

export function healthTab(ctx: Ctx): Tab {
  const counts = h('div', { class: 'dxe-status-counts', role: 'status' });
  const grid = createGrid({
    label: 'log health',
    rootClass: ctx.rootClass,
    noun: 'check',
    height: 420,
    // in order of importance (the last are hidden first when the grid is narrow)
    columns: ['status', 'metric', 'shown', 'detail', 'section'],
    options: { shown: { header: 'value', unit: 'text' }, detail: { flex: 3 } },
    rowClass: (r) => (r.status === 'warn' ? 'dxe-row-warn' : r.status === 'error' ? 'dxe-row-error' : null),
  });
  const chart = createChart(ctx.rootClass, { label: 'log size per version', height: 220 });
  const checks = section('Checks');
  checks.body.append(counts, grid.el);
  const chartSection = section('Log size per version');
  chartSection.body.appendChild(chart.el);
  const engineLine = h('div', { class: 'dxe-engine-line' });
  const el = h('div', { class: 'dxe-tab-health' }, engineLine, checks.el, chartSection.el);

  function draw(): void {
    const data = ctx.model.get('health_data') || {};
    fill(engineLine, engineNote(data.engine));
    if (data.version === undefined) {
      fill(counts, note('Loading…', 'loading'));
      return;
    }
    const c = data.status_counts || {};
    fill(
      counts,
      ['error', 'warn', 'info', 'ok'].filter((s) => c[s]).map((s) => pill(s, `${c[s]} ${s === 'warn' ? 'warning' : s}${c[s] > 1 && s !== 'info' && s !== 'ok' ? 's' : ''}`)),
    );
    const rows = decode(data.metrics);
    if (rows) {
      const rank: Record<string, number> = { error: 0, warn: 1, info: 2, ok: 3 };
      rows.rows.sort((a, b) => (rank[String(a.status)] ?? 4) - (rank[String(b.status)] ?? 4));
      for (const r of rows.rows) {
        r.shown = r.number !== null && r.number !== undefined ? formatValue(metricUnit(r.unit as string), r.number) : r.value ?? '';
      }
      rows.fields = [...rows.fields, { name: 'shown', unit: 'text', doc: 'the value, formatted by its unit', type: 'Utf8' }];
    }
    grid.setRows(rows);
    chart.update(data.chart);
  }

  return {
    el,
    changed: () => draw(),
    destroy: () => {
      grid.destroy();
      chart.destroy();
    },
  };
}
