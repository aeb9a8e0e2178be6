// Deletion vectors: what they cost (cards from `inspect.deletion_vectors` / `dv_files`), the
// deleted ratio per file (`viz.dv_density_chart`) and every file with a DV, worst first.
import { decode } from '../arrow';
import { createChart } from '../chart';
import type { Ctx, Tab } from '../context';
import { card, engineNote, fill, h, note, section } from '../dom';
import { countNoun, formatValue, humanBytes, humanCount } from '../format';
import { createGrid } from '../grid';

export function dvTab(ctx: Ctx): Tab {
  const cards = h('div', { class: 'dxe-cards' });
  const chart = createChart(ctx.rootClass, { label: 'deleted rows per file', height: 220 });
  const grid = createGrid({
    label: 'deletion vectors',
    rootClass: ctx.rootClass,
    rpc: ctx.rpc,
    noun: 'file with a deletion vector',
    height: 360,
    filterPlaceholder: 'filter paths (Enter)',
    emptyText: 'No deletion vectors at this version',
    // in order of importance (the last are hidden first when the grid is narrow)
    columns: ['path', 'deleted_ratio', 'cardinality', 'num_records', 'partition', 'live_rows', 'past_threshold', 'dv_bytes', 'storage', 'dv_path', 'shared_by', 'size'],
    options: {
      // the partition says where the rows were deleted: wide enough to read; the file's size is
      // on the Files tab (hidden here, still in exports): the path keeps room for its name
      partition: { minWidth: 120 },
      size: { hide: true },
      num_records: { header: 'records' },
      cardinality: { header: 'deleted' },
      live_rows: { header: 'live' },
      deleted_ratio: { header: 'deleted %' },
      // short headers (the tooltips say more): every column fits a notebook's width
      past_threshold: { header: 'to purge' },
      dv_path: { header: 'DV file', unit: 'path', flex: 1, minWidth: 140 },
      dv_bytes: { header: 'DV size' },
      shared_by: { header: 'shared by' },
    },
    rowClass: (r) => (r.past_threshold ? 'dxe-row-warn' : null),
  });
  const summary = section('Deletion vectors');
  summary.body.appendChild(cards);
  const chartSection = section('Deleted rows per file');
  chartSection.body.appendChild(chart.el);
  const gridSection = section('Files with a deletion vector, most deleted first');
  gridSection.body.appendChild(grid.el);
  const engineLine = h('div', { class: 'dxe-engine-line' });
  const el = h('div', { class: 'dxe-tab-dv' }, engineLine, summary.el, chartSection.el, gridSection.el);

  function draw(): void {
    const data = ctx.model.get('dv_data') || {};
    fill(engineLine, engineNote(data.engine));
    if (data.version === undefined) {
      fill(cards, note('Loading…', 'loading'));
      return;
    }
    const dvFiles = decode(data.dv_files)?.rows || [];
    const onDisk = dvFiles.filter((r) => r.storage !== 'inline');
    const inline = dvFiles.filter((r) => r.storage === 'inline').reduce((n, r) => n + Number(r.data_files || 0), 0);
    const s = data.summary || {};
    fill(
      cards,
      card('Files with a DV', humanCount(data.files_with_dv), `of ${countNoun(s.files, 'file')}`),
      card('Deleted rows', humanCount(s.deleted_rows), s.rows_in_dv_files ? `${formatValue('ratio', s.deleted_rows / s.rows_in_dv_files)} of the rows of those files` : null),
      card('Past the purge threshold', humanCount(s.past_threshold), 'files worth rewriting (Maintenance → DV purge)', s.past_threshold ? 'warn' : null),
      card('DV files', humanCount(onDisk.length), `${humanBytes(dvFiles.reduce((n, r) => n + Number(r.dv_bytes || 0), 0))} of bitmaps`),
      card('Inline DVs', humanCount(inline), 'stored in the log itself'),
    );
    chartSection.el.hidden = !data.chart;
    chart.update(data.chart);
    grid.setSource(data.files || null);
  }

  return {
    el,
    changed: () => draw(),
    destroy: () => {
      chart.destroy();
      grid.destroy();
    },
  };
}
