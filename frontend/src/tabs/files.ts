// Files: the file-size histogram and partition skew (viz charts), the partitions, and every
// file of the version in a grid whose rows stay in the kernel (sorted and filtered there).
import { createChart } from '../chart';
import type { Ctx, Tab } from '../context';
import { engineNote, fill, h, note, section } from '../dom';
import { createGrid } from '../grid';

export function filesTab(ctx: Ctx): Tab {
  const sizeChart = createChart(ctx.rootClass, { label: 'files per size range', height: 200 });
  const skewChart = createChart(ctx.rootClass, { label: 'largest partitions', height: 200 });
  const charts = h('div', { class: 'dxe-columns' }, h('div', { class: 'dxe-chart-cell' }, sizeChart.el), h('div', { class: 'dxe-chart-cell' }, skewChart.el));
  const chartsSection = section('Sizes');
  chartsSection.body.appendChild(charts);

  const parts = createGrid({
    label: 'partitions',
    rootClass: ctx.rootClass,
    rpc: ctx.rpc,
    noun: 'partition',
    height: 260,
    filterPlaceholder: 'filter partitions',
    columns: ['partition', 'files', 'bytes', 'rows', 'live_rows', 'deleted_rows', 'small_files', 'small_bytes', 'dv_files', 'files_without_stats', 'median_file_bytes', 'bytes_share', 'skew'],
    // short headers (the tooltip names the field and says what it counts): thirteen columns fit
    // a notebook's width, the partition taking what is left (AG Grid does not flex a pinned column)
    options: {
      partition: { flex: 2 },
      live_rows: { header: 'live' },
      deleted_rows: { header: 'deleted' },
      small_bytes: { header: 'small size' },
      dv_files: { header: 'DV files' },
      files_without_stats: { header: 'no stats' },
      median_file_bytes: { header: 'median' },
      bytes_share: { header: 'share' },
    },
  });
  const partsSection = section('Partitions');
  partsSection.body.appendChild(parts.el);

  const files = createGrid({
    label: 'files',
    rootClass: ctx.rootClass,
    rpc: ctx.rpc,
    noun: 'file',
    height: 440,
    filterPlaceholder: 'filter paths (Enter)',
    columns: ['path', 'partition', 'size', 'num_records', 'deleted_rows', 'live_rows', 'modification_time', 'is_small', 'has_stats', 'dv_storage'],
    options: {
      num_records: { header: 'records' },
      modification_time: { header: 'modified' },
      is_small: { header: 'small' },
      has_stats: { header: 'stats' },
      dv_storage: { header: 'DV' },
    },
    rowClass: (r) => (r.is_small ? 'dxe-row-small' : null),
  });
  const filesSection = section('Files');
  filesSection.body.appendChild(files.el);

  const engineLine = h('div', { class: 'dxe-engine-line' });
  const el = h('div', { class: 'dxe-tab-files' }, engineLine, chartsSection.el, partsSection.el, filesSection.el);

  function draw(): void {
    const data = ctx.model.get('files_data') || {};
    fill(engineLine, engineNote(data.engine));
    if (data.version === undefined) {
      fill(chartsSection.body, note('Loading…', 'loading'));
      return;
    }
    if (!charts.isConnected) fill(chartsSection.body, charts);
    sizeChart.update(data.size_chart);
    skewChart.update(data.skew_chart);
    (skewChart.el.parentElement as HTMLElement).hidden = !data.skew_chart;
    partsSection.el.hidden = !data.partitioned;
    parts.setSource(data.partitions || null);
    files.setSource(data.files || null);
  }

  return {
    el,
    changed: (name) => {
      if (name === 'files_data') draw();
    },
    destroy: () => {
      sizeChart.destroy();
      skewChart.destroy();
      parts.destroy();
      files.destroy();
    },
  };
}
