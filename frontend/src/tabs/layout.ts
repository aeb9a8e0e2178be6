// Layout: for one column, how well files are clustered (`inspect.layout_summary`), the density
// of file ranges over the column's values (`viz.layout_density_chart`, readable at a million
// files), the ranges themselves in min order (`viz.layout_chart`), and the files worst first
// (highest overlap depth). Brushing the density or clicking a range shows those files.
import { decode } from '../arrow';
import { createChart } from '../chart';
import type { Ctx, Tab } from '../context';
import { card, engineNote, fill, h, note, pill, section } from '../dom';
import { countNoun, formatValue, humanCount, plural } from '../format';
import { createGrid } from '../grid';
import { setState } from '../model';

interface Bin {
  x: number;
  x2: number;
  position_lo: number;
  position_hi: number;
}

/** A bound of the column as text: whole numbers with separators (exact: digits grouped as
 * written, never through a float), other values as they are. */
function bound(value: unknown): string {
  if (value === null || value === undefined) return '–';
  const text = String(value);
  return /^-?\d{4,}$/.test(text) ? text.replace(/\B(?=(\d{3})+(?!\d))/g, ',') : text;
}

function qualityStatus(q: number | null | undefined): string | null {
  if (q === null || q === undefined) return null;
  if (q >= 0.9) return 'ok';
  if (q >= 0.5) return 'info';
  return 'warn';
}

export function layoutTab(ctx: Ctx): Tab {
  const { model } = ctx;
  const picker = h('select', { class: 'dxe-select', 'aria-label': 'layout column' });
  picker.addEventListener('change', () => {
    if (picker.value) setState(model, { layout_column: picker.value });
  });
  const cards = h('div', { class: 'dxe-cards' });
  let bins: Bin[] = [];
  let integral = true;

  const density = createChart(ctx.rootClass, {
    label: 'files per value range; drag to list the files overlapping a range',
    height: 200,
    onSignal: {
      value_brush: (value) => {
        const entries = Object.values((value as Record<string, unknown[]>) || {});
        const range = entries[0];
        if (!range || range.length !== 2) {
          grid.setFilter({});
          return;
        }
        const a = Number(range[0] instanceof Date ? range[0].getTime() : range[0]);
        const b = Number(range[1] instanceof Date ? range[1].getTime() : range[1]);
        const [lo, hi] = [Math.min(a, b), Math.max(a, b)];
        const hit = bins.filter((bin) => bin.x2 >= lo && bin.x <= hi);
        if (!hit.length) return;
        const start = Math.min(...hit.map((b2) => b2.position_lo));
        const endExcl = Math.max(...hit.map((b2) => b2.position_hi));
        const end = integral ? endExcl - 1 : endExcl;
        grid.setFilter({ ranges: { max_position: [start, 1e300], min_position: [-1e300, end] } }, `overlapping the brushed values (${countNoun(hit.length, 'bin')})`);
      },
    },
  });
  const ranges = createChart(ctx.rootClass, {
    label: 'file ranges ordered by min; click a range to list its files',
    height: 260,
    onClick: (d) => {
      const lo = Number(d.rank_lo);
      const hi = Number(d.rank_hi);
      if (Number.isFinite(lo) && Number.isFinite(hi)) {
        grid.setFilter({ ranges: { rank: [lo, hi] } }, lo === hi ? `file ranked ${lo}` : `files ranked ${humanCount(lo)}–${humanCount(hi)}`);
      }
    },
  });

  const grid = createGrid({
    label: 'files by overlap depth',
    rootClass: ctx.rootClass,
    rpc: ctx.rpc,
    noun: 'file',
    height: 360,
    filterPlaceholder: 'filter paths (Enter)',
    // in order of importance (the last are hidden first when the grid is narrow)
    columns: ['path', 'overlap_depth', 'min', 'max', 'partition', 'overlapping_files', 'rank', 'size', 'num_records', 'truncated'],
    options: {
      overlap_depth: { header: 'overlap depth' },
      overlapping_files: { header: 'overlapping' },
      num_records: { header: 'records' },
      min: { unit: 'text' },
      max: { unit: 'text' },
    },
  });

  const head = section('Column', picker);
  head.body.appendChild(cards);
  const densitySection = section('Where the files are');
  densitySection.body.append(
    note('Files overlapping each range of values; the colour is the overlap depth there (the files a point query in that range must read). Drag to list those files below.', 'hint'),
    density.el,
  );
  const rangesSection = section('File ranges');
  rangesSection.body.append(note('One line per file (or group of neighbouring files) from its min to its max. Click one to list its files.', 'hint'), ranges.el);
  const gridSection = section('Files, worst overlap first');
  gridSection.body.appendChild(grid.el);
  const empty = h('div');
  const engineLine = h('div', { class: 'dxe-engine-line' });
  const el = h('div', { class: 'dxe-tab-layout' }, engineLine, head.el, empty, densitySection.el, rangesSection.el, gridSection.el);

  function draw(): void {
    const data = model.get('layout_data') || {};
    const columns: string[] = data.columns || [];
    const current = String(data.column || model.get('layout_column') || '');
    fill(
      picker,
      columns.length ? null : h('option', { value: '' }, 'no column has statistics'),
      columns.map((c) => h('option', { value: c }, c)),
    );
    picker.value = current;
    picker.disabled = columns.length === 0;
    const loaded = data.version !== undefined;
    fill(engineLine, loaded ? engineNote(data.engine) : null);
    densitySection.el.hidden = rangesSection.el.hidden = gridSection.el.hidden = !loaded || !data.column;
    if (!loaded) {
      fill(cards, note('Loading…', 'loading'));
      return;
    }
    if (!data.column) {
      fill(cards);
      fill(empty, note('No column of this version can have min/max statistics.', 'empty'));
      return;
    }
    fill(empty);
    const summary = decode(data.summary)?.rows[0] || {};
    const q = summary.clustering_quality as number | null;
    fill(
      cards,
      card('Skipping', pill(summary.skipping === 'stats' || summary.skipping === 'partition' ? 'ok' : summary.skipping === 'partial' ? 'warn' : 'error', String(summary.skipping ?? '–')), (summary.reason as string) || `${summary.type}`),
      card('Stats coverage', formatValue('ratio', summary.coverage), `${humanCount(summary.files_with_min_max as number)} of ${countNoun(summary.files as number, 'file')}`, (summary.coverage as number) < 1 ? 'warn' : null),
      card('Clustering quality', q === null || q === undefined ? '–' : formatValue('number', Math.round(q * 1000) / 1000), '1: disjoint ranges · 0: every file overlaps every other', qualityStatus(q)),
      card('Worst point query', countNoun(summary.max_depth as number, 'file'), 'the most files one value lies in (max overlap depth)', (summary.max_depth as number) > 10 ? 'warn' : null),
      card('Typical point query', `${formatValue('number', summary.avg_depth)} ${plural('file', summary.avg_depth as number)}`, 'mean overlap depth'),
      card('Values', [h('span', { class: 'dxe-nowrap' }, bound(summary.min)), ' ', h('span', { class: 'dxe-nowrap' }, 'to ', bound(summary.max))], summary.truncated_files ? `${countNoun(summary.truncated_files as number, 'file')} with truncated bounds` : null, summary.truncated_files ? 'info' : null),
    );
    const spec = data.density_chart;
    bins = [];
    integral = Boolean(data.integral_positions);
    if (spec && spec.datasets) {
      const rows = Object.values(spec.datasets as Record<string, Array<Record<string, unknown>>>)[0] || [];
      const enc = (spec.encoding || {}) as Record<string, { field?: string }>;
      const xf = enc.x?.field || 'position_lo';
      const x2f = enc.x2?.field || 'position_hi';
      const num = (v: unknown) => (typeof v === 'string' && Number.isNaN(Number(v)) ? Date.parse(v) : Number(v));
      bins = rows.map((r) => ({ x: num(r[xf]), x2: num(r[x2f]), position_lo: Number(r.position_lo), position_hi: Number(r.position_hi) }));
    }
    density.update(spec);
    ranges.update(data.ranges_chart);
    grid.setSource(data.files || null);
  }

  return {
    el,
    changed: () => draw(),
    destroy: () => {
      density.destroy();
      ranges.destroy();
      grid.destroy();
    },
  };
}
