// Overview: the version's key numbers as cards (from `inspect.overview`), the table's identity
// and protocol, its features, schema and properties.
import { decode, type Row } from '../arrow';
import type { Ctx, Tab } from '../context';
import { card, copyButton, fill, h, kv, note, section } from '../dom';
import { countNoun, formatValue, humanBytes, metricUnit, statusLevel } from '../format';
import { createGrid } from '../grid';

interface Metric {
  value: string | null;
  number: number | null;
  unit: string | null;
  status: string | null;
  detail: string | null;
}

function metrics(rows: Row[]): Map<string, Metric> {
  const out = new Map<string, Metric>();
  for (const r of rows) out.set(`${r.section}.${r.metric}`, r as unknown as Metric);
  return out;
}

function shown(m: Metric | undefined): string {
  if (!m) return '–';
  if ((m.number === null || m.number === undefined) && (m.value === null || m.value === undefined) && /not counted/.test(m.detail || '')) {
    return 'counting…';
  }
  if (m.number !== null && m.number !== undefined) return formatValue(metricUnit(m.unit), m.number);
  return m.value ?? '–';
}

export function overviewTab(ctx: Ctx): Tab {
  const cards = h('div', { class: 'dxe-cards', role: 'list', 'aria-label': 'key numbers' });
  const facts = section('Table');
  const features = section('Protocol features');
  const schemaGrid = createGrid({
    label: 'schema',
    rootClass: ctx.rootClass,
    noun: 'field',
    height: 320,
    filterPlaceholder: 'filter columns',
    columns: ['column', 'type', 'nullable', 'is_partition', 'collation', 'metadata', 'physical_path', 'field_id'],
    options: { column: { flex: 1.5 }, is_partition: { header: 'partition' }, physical_path: { header: 'physical name' }, field_id: { header: 'field id', unit: 'number' } },
  });
  const schema = section('Schema');
  schema.body.appendChild(schemaGrid.el);
  const propsGrid = createGrid({ label: 'properties', rootClass: ctx.rootClass, noun: 'property', height: 260, emptyText: 'No table properties' });
  const props = section('Properties');
  props.body.appendChild(propsGrid.el);
  const problems = h('div');
  const el = h(
    'div',
    { class: 'dxe-tab-overview' },
    problems,
    cards,
    h('div', { class: 'dxe-columns' }, facts.el, features.el),
    schema.el,
    props.el,
  );

  let gridsVersion: number | null = null;

  function draw(): void {
    const data = ctx.model.get('overview_data') || {};
    if (data.version === undefined) {
      fill(cards, note('Loading…', 'loading'));
      return;
    }
    const decoded = decode(data.metrics);
    const m = metrics(decoded ? decoded.rows : []);
    const files = m.get('size.files');
    const bytes = m.get('size.bytes');
    const rows = m.get('size.rows');
    const live = m.get('size.live_rows');
    const deleted = m.get('size.deleted_rows');
    const small = m.get('layout.small_files');
    const noStats = m.get('size.files_without_stats');
    const ratio = m.get('layout.deleted_ratio');
    const dvFiles = m.get('layout.dv_files');
    const parts = m.get('layout.partitions');
    const mean = m.get('layout.mean_file_bytes');
    const threshold = Number(data.small_file_bytes || 0);
    fill(
      cards,
      card(
        'Files',
        shown(files),
        !data.complete ? null : noStats && noStats.number ? `${shown(noStats)} without stats` : 'all with stats',
        statusLevel(noStats?.status) === 'warn' ? 'warn' : null,
      ),
      card('Size', shown(bytes), mean && mean.number !== null && mean.number !== undefined ? `${humanBytes(mean.number)} per file on average` : null),
      card(
        'Rows',
        shown(live),
        data.complete ? (deleted && deleted.number ? `${shown(rows)} written, ${shown(deleted)} deleted by DVs` : 'live rows') : 'reading every file’s statistics',
        statusLevel(rows?.status) === 'warn' ? 'warn' : null,
        data.complete ? rows?.detail || undefined : undefined,
      ),
      card('Partitions', shown(parts), m.get('layout.partition_columns')?.value || 'not partitioned'),
      card(
        'Small files',
        shown(small),
        threshold ? `under ${humanBytes(threshold)}${small?.detail && small.number !== null ? ` · ${small.detail}` : ''}` : null,
        statusLevel(small?.status) === 'warn' ? 'warn' : null,
      ),
      card(
        'Deletion vectors',
        shown(dvFiles),
        ratio && ratio.number ? `${formatValue('ratio', ratio.number)} of rows deleted` : deleted && deleted.number !== null ? `${shown(deleted)} rows deleted` : null,
        statusLevel(ratio?.status) === 'warn' ? 'warn' : null,
        ratio?.detail || undefined,
      ),
    );
    for (const c of Array.from(cards.children)) c.setAttribute('role', 'listitem');

    const uri = String(ctx.model.get('uri') || '');
    const cp = data.checkpoint_version;
    fill(
      facts.body,
      kv([
        ['name', m.get('table.name')?.value || '(no name)'],
        ['description', m.get('table.description')?.value || null],
        ['location', h('span', { class: 'dxe-path-cell' }, h('code', { class: 'dxe-path dxe-location', title: uri }, uri), copyButton(uri, 'copy location'))],
        ['table id', m.get('table.table_id')?.value || null],
        ['version', `${data.version}${cp !== null && cp !== undefined ? ` · last checkpoint at ${cp}` : ' · no checkpoint yet'}`],
        ['protocol', `reader v${shown(m.get('protocol.reader_version'))}, writer v${shown(m.get('protocol.writer_version'))}`],
        ['column mapping', m.get('protocol.column_mapping')?.value || 'none'],
        ['partitioned by', m.get('layout.partition_columns')?.value || 'none'],
      ]),
    );
    const feats = decode(data.features);
    fill(
      features.body,
      feats && feats.rows.length
        ? h(
            'ul',
            { class: 'dxe-feature-list' },
            feats.rows.map((f) =>
              h(
                'li',
                { class: `dxe-feature${f.active ? ' dxe-feature-active' : ''}`, title: `${f.description || ''}${f.activation ? `\n${f.activation}` : ''}` },
                h('span', { class: 'dxe-feature-name' }, String(f.feature)),
                h('span', { class: 'dxe-feature-kind' }, String(f.kind || '')),
                h('span', { class: 'dxe-feature-state' }, f.active ? 'active' : 'supported, not in use'),
              ),
            ),
          )
        : note('Legacy protocol: no table features listed.', 'empty'),
    );
    const problem = data.problem
      ? note(
          `${data.problem.kind === 'unsupported' ? 'Not readable by deltaexplore' : 'Damaged table'}: ${data.problem.message} — its history, files and log are shown; its rows cannot be read.`,
          'error',
        )
      : null;
    fill(problems, problem, data.schema_error ? note(`schema unreadable: ${data.schema_error}`, 'warn') : null);
    if (data.version !== gridsVersion) {
      // the second overview of a version only adds row counts: the grids stay as they are
      gridsVersion = data.version;
      schemaGrid.setRows(decode(data.schema));
      propsGrid.setRows(decode(data.properties));
    }
    schema.head.querySelector('h3')!.textContent = `Schema`;
    const n = decode(data.schema)?.rows.filter((r) => r.depth === 0).length ?? 0;
    schema.head.querySelector('h3')!.textContent = `Schema · ${countNoun(n, 'column')}`;
  }

  return {
    el,
    changed: (name) => {
      if (name === 'overview_data') draw();
    },
    destroy: () => {
      schemaGrid.destroy();
      propsGrid.destroy();
    },
  };
}
