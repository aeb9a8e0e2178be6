// Diff: pick two versions (pickers show each version's time and operation), see what changed
// (`inspect.diff`) as summary cards and every change, and the files that changed
// (`inspect.diff_files`, rows in the kernel). A new pair clears the old result at once.
import { decode, type Row } from '../arrow';
import type { Ctx, Tab } from '../context';
import { card, fill, h, note, section } from '../dom';
import { countNoun, formatValue, humanCount, signed } from '../format';
import { createGrid } from '../grid';
import { setState } from '../model';

/** Most versions listed in a picker; beyond, the picker is a number box (with the version's
 * time and operation beside it): a select of 100,000 options is slow to build and to use. */
const MAX_LISTED = 3000;

interface Picker {
  el: HTMLElement;
  value: number;
  setVersions(lo: number, hi: number, label: (v: number) => string): void;
}

function versionPicker(name: string, onChange: () => void): Picker {
  const select = h('select', { class: 'dxe-select dxe-version-select', 'aria-label': `compare ${name} version` });
  const box = h('input', { type: 'number', class: 'dxe-input dxe-version-input', 'aria-label': `compare ${name} version (Enter)`, hidden: true });
  const about = h('span', { class: 'dxe-muted dxe-version-about', hidden: true });
  const el = h('span', { class: 'dxe-picker' }, select, box, about);
  let label: (v: number) => string = String;
  let listed = true;
  select.addEventListener('change', onChange);
  box.addEventListener('keydown', (ev: KeyboardEvent) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      onChange();
    }
  });
  box.addEventListener('change', onChange);
  const picker: Picker = {
    el,
    get value() {
      return Number(listed ? select.value : box.value);
    },
    set value(v: number) {
      select.value = String(v);
      box.value = String(v);
      about.textContent = label(v);
    },
    setVersions(lo, hi, text) {
      label = text;
      listed = hi - lo + 1 <= MAX_LISTED;
      select.hidden = !listed;
      box.hidden = about.hidden = listed;
      box.min = String(lo);
      box.max = String(hi);
      if (listed) {
        const out: HTMLOptionElement[] = [];
        for (let v = hi; v >= lo; v--) out.push(h('option', { value: v }, text(v)));
        fill(select, out);
      } else {
        select.replaceChildren();
      }
    },
  };
  return picker;
}

export function diffTab(ctx: Ctx): Tab {
  const { model } = ctx;
  const fromSel = versionPicker('from', () => apply(fromSel.value, toSel.value));
  const toSel = versionPicker('to', () => apply(fromSel.value, toSel.value));
  const swap = h('button', { type: 'button', class: 'dxe-btn', title: 'swap the two versions', 'aria-label': 'swap versions' }, '⇄');
  const withPrev = h('button', { type: 'button', class: 'dxe-btn' }, 'Compare with previous');
  const shown = h('button', { type: 'button', class: 'dxe-btn' }, 'Shown version vs latest');
  const pickers = h(
    'div',
    { class: 'dxe-filters', role: 'group', 'aria-label': 'versions to compare' },
    h('label', { class: 'dxe-field' }, h('span', null, 'From'), fromSel.el),
    swap,
    h('label', { class: 'dxe-field' }, h('span', null, 'To'), toSel.el),
    withPrev,
    shown,
  );
  const state = h('div', { class: 'dxe-diff-state', role: 'status', 'aria-live': 'polite' });
  const cards = h('div', { class: 'dxe-cards' });
  const changes = createGrid({
    label: 'changes',
    rootClass: ctx.rootClass,
    noun: 'change',
    height: 300,
    // in order of importance (the last are hidden first when the grid is narrow); columns empty
    // in every row (before/after of a diff of files only) are left out
    columns: ['section', 'change', 'name', 'files', 'bytes', 'rows', 'before', 'after', 'detail'],
    hideEmpty: true,
    options: { detail: { flex: 3 }, before: { unit: 'text' }, after: { unit: 'text' }, change: { unit: 'text', width: 120, cellClass: (v) => `dxe-change-${String(v)}` }, section: { width: 120 } },
    rowClass: (r) => `dxe-row-${String(r.change)}`,
    emptyText: 'Nothing changed',
  });
  const files = createGrid({
    label: 'changed files',
    rootClass: ctx.rootClass,
    rpc: ctx.rpc,
    noun: 'file',
    height: 360,
    filterPlaceholder: 'filter paths (Enter)',
    emptyText: 'No file changed',
    columns: ['change', 'path', 'partition', 'size', 'rows_delta', 'num_records', 'deleted_before', 'deleted_after', 'modification_time'],
    options: {
      change: { unit: 'text', width: 110, pinned: 'left', cellClass: (v) => `dxe-change-${String(v)}` },
      num_records: { header: 'records' },
      rows_delta: { header: 'live rows ±' },
      modification_time: { header: 'modified' },
    },
  });
  const changesSection = section('Every change');
  changesSection.body.appendChild(changes.el);
  const filesSection = section('Files that changed');
  filesSection.body.appendChild(files.el);
  const result = h('div', { class: 'dxe-diff-result' }, cards, changesSection.el, filesSection.el);
  const el = h('div', { class: 'dxe-tab-diff' }, pickers, state, result);

  function apply(a: number, b: number): void {
    if (!Number.isFinite(a) || !Number.isFinite(b)) return;
    setState(model, { diff_from: a, diff_to: b });
  }
  swap.addEventListener('click', () => apply(Number(model.get('diff_to')), Number(model.get('diff_from'))));
  withPrev.addEventListener('click', () => {
    const to = Number(model.get('diff_to'));
    apply(Math.max(Number(model.get('min_version')), to - 1), to);
  });
  shown.addEventListener('click', () => apply(Number(model.get('version')), Number(model.get('max_version'))));

  function versionOptions(): void {
    const lo = Number(model.get('min_version'));
    const hi = Number(model.get('max_version'));
    const commits = decode((model.get('history_data') || {}).commits);
    const byVersion = new Map<number, Row>();
    for (const r of commits?.rows || []) byVersion.set(Number(r.version), r);
    const label = (v: number) => {
      const r = byVersion.get(v);
      return r ? `${v} · ${formatValue('timestamp', r.timestamp)} · ${r.operation ?? '?'}` : String(v);
    };
    fromSel.setVersions(lo, hi, label);
    toSel.setVersions(lo, hi, label);
    fromSel.value = Number(model.get('diff_from'));
    toSel.value = Number(model.get('diff_to'));
  }

  function count(rows: Row[], section: string, change?: string): Row | undefined {
    return rows.find((r) => r.section === section && (change === undefined || r.change === change));
  }

  function draw(): void {
    const data = model.get('diff_data') || {};
    const a = Number(model.get('diff_from'));
    const b = Number(model.get('diff_to'));
    fromSel.value = a;
    toSel.value = b;
    withPrev.disabled = b <= Number(model.get('min_version'));
    if (data.state !== 'ready' || data.from !== a || data.to !== b) {
      result.hidden = true;
      if (data.state === 'error' && data.from === a && data.to === b) fill(state, note(`Cannot compare ${a} → ${b}: ${data.error}`, 'error'));
      else fill(state, note(`Comparing version ${a} → ${b}…`, 'loading'));
      return;
    }
    result.hidden = false;
    const rows = decode(data.changes)?.rows || [];
    const added = count(rows, 'files', 'added');
    const removed = count(rows, 'files', 'removed');
    const dvChanged = count(rows, 'files', 'dv_changed');
    const net = count(rows, 'files', 'net');
    const schema = rows.filter((r) => r.section === 'schema' || r.section === 'partitioning');
    const props = rows.filter((r) => r.section === 'properties');
    const proto = rows.filter((r) => r.section === 'protocol' || r.section === 'features');
    const cdf = count(rows, 'cdf');
    fill(state, h('span', null, `Version ${a} → ${b}`, a > b ? ' (backwards: what undoing those commits changes)' : ''));
    fill(
      cards,
      card('Files added', signed('count', Number(added?.files ?? 0)), `${formatValue('bytes', added?.bytes ?? 0)}`, null),
      card('Files removed', signed('count', -Number(removed?.files ?? 0)), `${formatValue('bytes', removed?.bytes ?? 0)}`, null),
      card('Rows', signed('count', net?.rows as number | null), net?.rows === null ? 'unknown: files without stats' : 'live rows, net', null),
      card('Bytes', signed('bytes', net?.bytes as number | null), dvChanged && Number(dvChanged.files) ? `${countNoun(Number(dvChanged.files), 'file')} got a new deletion vector` : 'net', null),
      card('Schema', humanCount(schema.length), schema.length ? schema.slice(0, 3).map((r) => `${r.change} ${r.name}`).join(', ') : 'unchanged', schema.length ? 'info' : null),
      card('Properties & protocol', humanCount(props.length + proto.length), props.length + proto.length ? [...props, ...proto].slice(0, 3).map((r) => `${r.change} ${r.name}`).join(', ') : 'unchanged', proto.length ? 'warn' : null),
      card('Change data feed', cdf?.change === 'available' ? 'yes' : 'no', String(cdf?.detail ?? ''), null, String(cdf?.detail ?? '')),
    );
    changes.setRows(decode(data.changes));
    files.setSource(data.files || null);
  }

  return {
    el,
    changed: (name) => {
      if (name === 'history_data' || name === 'min_version' || name === 'max_version') versionOptions();
      draw();
    },
    shown: () => versionOptions(),
    destroy: () => {
      changes.destroy();
      files.destroy();
    },
  };
}
