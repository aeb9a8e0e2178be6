// Diff: pick two versions (pickers show each version's time and operation), see what changed
// (`inspect.diff`) as summary cards and every change, and the files that changed
// (`inspect.diff_files`, rows in the kernel). A new pair clears the old result at once.
// The Rows view: the rows that truly differ (`inspect.diff_rows`, keyed or not), computed as a
// kernel job with its progress and a Cancel; the change kind and the changed columns marked,
// filtered by key, exported like every grid; what it read (files, bytes) said above it.
import { decode, type Row } from '../arrow';
import type { Ctx, Tab } from '../context';
import { card, fill, h, note, section } from '../dom';
import { countNoun, formatValue, humanBytes, humanCount, plural, signed } from '../format';
import { createGrid, type ColumnOptions } from '../grid';
import { setState } from '../model';

/** A row diff reading at most this many bytes (data files added and removed) starts by itself
 * when the Rows view shows a pair; a bigger one waits for "Compare rows". */
const AUTO_ROWS_BYTES = 16 * 1024 * 1024;

/** Most versions listed in a picker; beyond, the picker is a number box (with the version's
 * time and operation beside it): a select of 100,000 options is slow to build and to use. */
const MAX_LISTED = 3000;

/** Versions a picker lists at once; a longer list holds the chosen version alone until the
 * picker is first reached (pointer or focus): 1,101 options were half the elements the Diff
 * tab's panel styles when it is shown. */
const EAGER_LISTED = 100;

interface Picker {
  el: HTMLElement;
  value: number;
  /** List versions lo..hi (newest first) labelled by `label`. */
  setVersions(lo: number, hi: number, label: (v: number) => string): void;
}

function versionPicker(name: string, onChange: () => void): Picker {
  const select = h('select', { class: 'dxe-select dxe-version-select', 'aria-label': `compare ${name} version` });
  const box = h('input', { type: 'number', class: 'dxe-input dxe-version-input', 'aria-label': `compare ${name} version (Enter)`, hidden: true });
  const about = h('span', { class: 'dxe-muted dxe-version-about', hidden: true });
  const el = h('span', { class: 'dxe-picker' }, select, box, about);
  let label: (v: number) => string = String;
  let listed = true;
  let range: [number, number] = [0, -1];
  let whole = false; // every version of the range is an option
  let chosen = NaN;
  const listAll = () => {
    if (whole || !listed) return;
    whole = true;
    const out: HTMLOptionElement[] = [];
    for (let v = range[1]; v >= range[0]; v--) out.push(h('option', { value: v }, label(v)));
    fill(select, out);
    if (Number.isFinite(chosen)) select.value = String(chosen);
  };
  // before the list opens (mousedown's default action) or a key moves in it
  for (const type of ['pointerdown', 'mousedown', 'focus']) select.addEventListener(type, listAll);
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
      chosen = v;
      if (listed && !whole && select.value !== String(v)) fill(select, h('option', { value: v }, label(v)));
      select.value = String(v);
      box.value = String(v);
      about.textContent = label(v);
    },
    setVersions(lo, hi, text) {
      label = text;
      range = [lo, hi];
      listed = hi - lo + 1 <= MAX_LISTED;
      select.hidden = !listed;
      box.hidden = about.hidden = listed;
      box.min = String(lo);
      box.max = String(hi);
      whole = false;
      select.replaceChildren();
      if (listed && (hi - lo + 1 <= EAGER_LISTED || document.activeElement === select)) listAll();
      else if (listed && Number.isFinite(chosen)) picker.value = chosen;
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

  // -- the Rows view -------------------------------------------------------------------------
  const viewFiles = h('button', { type: 'button', class: 'dxe-btn dxe-seg', 'aria-pressed': 'true' }, 'Files & metadata');
  const viewRows = h('button', { type: 'button', class: 'dxe-btn dxe-seg', 'aria-pressed': 'false' }, 'Rows');
  const views = h('div', { class: 'dxe-btn-group dxe-segments', role: 'group', 'aria-label': 'diff view' }, viewFiles, viewRows);
  const keyList = h('datalist', { id: `dxe-diff-key-${Math.random().toString(36).slice(2, 8)}` });
  const keyInput = h('input', {
    type: 'text',
    class: 'dxe-input dxe-diff-key',
    placeholder: 'none: whole rows',
    list: keyList.id,
    'aria-label': 'key columns (comma separated; empty compares whole rows)',
    title: 'a column (or columns, comma separated) unique among the changed rows: a changed row then shows its old and new values side by side',
  });
  const compareRows = h('button', { type: 'button', class: 'dxe-btn dxe-btn-primary' }, 'Compare rows');
  const cancelRows = h('button', { type: 'button', class: 'dxe-btn', hidden: true }, 'Cancel');
  const rowsControls = h(
    'div',
    { class: 'dxe-filters', role: 'group', 'aria-label': 'row diff' },
    h('label', { class: 'dxe-field' }, h('span', null, 'Key'), keyInput, keyList),
    compareRows,
    cancelRows,
  );
  const rowsPlan = h('p', { class: 'dxe-note dxe-note-hint dxe-rows-plan' });
  const rowsState = h('div', { class: 'dxe-rows-state', role: 'status', 'aria-live': 'polite' });
  const rowsCards = h('div', { class: 'dxe-cards' });
  /** per-column options of the rows grid: its columns are the table's, known once a result is in */
  const rowOptions: Record<string, ColumnOptions> = {};
  const rowsGrid = createGrid({
    label: 'changed rows',
    rootClass: ctx.rootClass,
    rpc: ctx.rpc,
    noun: 'row',
    height: 420,
    filterPlaceholder: 'filter by key (Enter)',
    emptyText: 'No row changed',
    options: rowOptions,
  });
  const rowsResult = h('div', { class: 'dxe-diff-result' }, rowsCards, rowsGrid.el);
  const rowsView = h('div', { class: 'dxe-diff-rows', hidden: true }, rowsControls, rowsPlan, rowsState, rowsResult);
  const filesView = h('div', { class: 'dxe-diff-files' }, state, result);
  const el = h('div', { class: 'dxe-tab-diff' }, pickers, views, filesView, rowsView);
  let showingRows = false;
  let asked = '';

  function keys(): string[] {
    return keyInput.value
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k);
  }
  function askRows(): void {
    const a = Number(model.get('diff_from'));
    const b = Number(model.get('diff_to'));
    const key = keys();
    asked = JSON.stringify([a, b, key]);
    ctx.rpc.tell('diff_rows', { from: a, to: b, key });
  }
  function showView(rows: boolean): void {
    showingRows = rows;
    viewFiles.setAttribute('aria-pressed', String(!rows));
    viewRows.setAttribute('aria-pressed', String(rows));
    filesView.hidden = rows;
    rowsView.hidden = !rows;
    if (rows) autoRows();
    drawRows();
  }
  /** Ask for the shown pair's rows when the read is small (`AUTO_ROWS_BYTES`) and not asked yet. */
  function autoRows(): void {
    const a = Number(model.get('diff_from'));
    const b = Number(model.get('diff_to'));
    const d = model.get('diff_rows_data') || {};
    const bytes = planBytes();
    if (d.from === a && d.to === b) return;
    if (JSON.stringify([a, b, keys()]) === asked) return;
    if (bytes !== null && bytes <= AUTO_ROWS_BYTES) askRows();
  }
  viewFiles.addEventListener('click', () => showView(false));
  viewRows.addEventListener('click', () => showView(true));
  compareRows.addEventListener('click', askRows);
  keyInput.addEventListener('keydown', (ev: KeyboardEvent) => {
    if (ev.key === 'Enter') {
      ev.preventDefault();
      askRows();
    }
  });
  cancelRows.addEventListener('click', () => ctx.rpc.tell('diff_rows_cancel', {}));

  /** The changed columns of a keyed row (`_changed_columns` arrives as JSON text). */
  function changedOf(row: Row): string[] {
    const raw = row?._changed_columns;
    if (typeof raw !== 'string') return [];
    try {
      const v = JSON.parse(raw);
      return Array.isArray(v) ? v.map(String) : [];
    } catch {
      return [];
    }
  }

  function rowColumns(fields: Array<{ name: string }>): void {
    for (const k of Object.keys(rowOptions)) delete rowOptions[k];
    rowOptions._change = { header: 'change', unit: 'text', width: 96, pinned: 'left', cellClass: (v) => `dxe-change-${String(v)}` };
    rowOptions._count = { header: 'copies' };
    rowOptions._changed_columns = {
      header: 'changed columns',
      unit: 'text',
      cellClass: (v) => (v ? 'dxe-change-update' : null),
      format: (v) => changedOf({ _changed_columns: v } as Row).join(', '),
    };
    for (const f of fields) {
      const m = /^(before|after)\.(.+)$/.exec(f.name);
      if (!m) continue;
      const column = m[2];
      rowOptions[f.name] = {
        header: `${m[1]} · ${column}`,
        cellClass: (_v, row) => (changedOf(row).includes(column) ? `dxe-cell-changed dxe-cell-${m[1]}` : null),
      };
    }
  }

  /** Bytes of the data files added and removed between the pair (null: the metadata diff is not in). */
  function planBytes(): number | null {
    const data = model.get('diff_data') || {};
    if (data.state !== 'ready' || data.from !== Number(model.get('diff_from')) || data.to !== Number(model.get('diff_to'))) return null;
    const rows = decode(data.changes)?.rows || [];
    return Number(count(rows, 'files', 'added')?.bytes ?? 0) + Number(count(rows, 'files', 'removed')?.bytes ?? 0);
  }

  /** What the row diff will read: the data files that differ, from the metadata diff. */
  function planText(): string {
    const data = model.get('diff_data') || {};
    const a = Number(model.get('diff_from'));
    const b = Number(model.get('diff_to'));
    if (data.state !== 'ready' || data.from !== a || data.to !== b) return `Reads the data files that differ between versions ${a} and ${b}, and their deletion vectors.`;
    const rows = decode(data.changes)?.rows || [];
    const added = count(rows, 'files', 'added');
    const removed = count(rows, 'files', 'removed');
    const dv = count(rows, 'files', 'dv_changed');
    const files = Number(added?.files ?? 0) + Number(removed?.files ?? 0) + Number(dv?.files ?? 0);
    const bytes = Number(added?.bytes ?? 0) + Number(removed?.bytes ?? 0);
    return `Reads the ${humanCount(files)} data ${plural('file', files)} that differ between versions ${a} and ${b} (${humanBytes(bytes)} added and removed${dv && Number(dv.files) ? ', plus the files whose deletion vector changed' : ''}); rows rewritten unchanged cancel out.`;
  }

  function drawRows(): void {
    if (!showingRows) return;
    const d = model.get('diff_rows_data') || {};
    const a = Number(model.get('diff_from'));
    const b = Number(model.get('diff_to'));
    rowsPlan.textContent = planText();
    const list = (model.get('diff_data') || {}).columns;
    if (Array.isArray(list)) fill(keyList, list.map((c: string) => h('option', { value: c })));
    const mine = d.from === a && d.to === b;
    const loading = mine && d.state === 'loading';
    cancelRows.hidden = !loading;
    compareRows.disabled = loading;
    rowsResult.hidden = !(mine && d.state === 'ready');
    const keyText = (d.key || []).length ? ` by ${(d.key || []).join(', ')}` : '';
    if (!mine) {
      fill(rowsState, note(`Compare the rows of version ${a} → ${b}.`, 'hint'));
      return;
    }
    if (loading) {
      const pct = Math.round(100 * Number(d.progress || 0));
      fill(
        rowsState,
        h(
          'div',
          { class: 'dxe-progress-wrap' },
          h('progress', { class: 'dxe-progress', max: 1, value: Number(d.progress || 0), 'aria-label': 'row diff progress' }),
          h('span', { class: 'dxe-progress-text' }, `${pct}% · ${d.message || 'starting'}`),
        ),
      );
      return;
    }
    if (d.state === 'error') {
      fill(rowsState, note(`Cannot compare the rows of ${a} → ${b}: ${d.error}`, 'error'));
      return;
    }
    if (d.state === 'cancelled') {
      fill(rowsState, note(`Row diff of ${a} → ${b} cancelled.`, 'warn'));
      return;
    }
    if (d.state !== 'ready') return;
    const counts = d.counts || {};
    fill(
      rowsState,
      h('span', null, `Rows of version ${a} → ${b}${keyText}: read ${countNoun(Number(d.files_read), 'file')}, ${humanBytes(Number(d.bytes_read))} (${d.engine || 'local'})`),
    );
    fill(
      rowsCards,
      card('Inserted', humanCount(Number(counts.insert || 0)), 'rows only in the newer version', null),
      card('Deleted', humanCount(Number(counts.delete || 0)), 'rows only in the older version', null),
      (d.key || []).length ? card('Updated', humanCount(Number(counts.update || 0)), 'same key, other values', counts.update ? 'info' : null) : null,
      card('Read', countNoun(Number(d.files_read), 'file'), humanBytes(Number(d.bytes_read)), null),
    );
    rowColumns(d.rows?.fields || []);
    rowsGrid.setSource(d.rows || null);
  }

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

  /** What the pickers list (the versions and the history labelling them): listed again only
   * when it changes (the tab hears several traits at once when it is built, and once shown). */
  let listedFor: [number, number, unknown] | null = null;
  function versionOptions(): void {
    const lo = Number(model.get('min_version'));
    const hi = Number(model.get('max_version'));
    const history = (model.get('history_data') || {}).commits;
    if (!listedFor || listedFor[0] !== lo || listedFor[1] !== hi || listedFor[2] !== history) {
      listedFor = [lo, hi, history];
      const byVersion = new Map<number, Row>();
      for (const r of decode(history)?.rows || []) byVersion.set(Number(r.version), r);
      const label = (v: number) => {
        const r = byVersion.get(v);
        return r ? `${v} · ${formatValue('timestamp', r.timestamp)} · ${r.operation ?? '?'}` : String(v);
      };
      fromSel.setVersions(lo, hi, label);
      toSel.setVersions(lo, hi, label);
    }
    fromSel.value = Number(model.get('diff_from'));
    toSel.value = Number(model.get('diff_to'));
  }

  function count(rows: Row[], section: string, change?: string): Row | undefined {
    return rows.find((r) => r.section === section && (change === undefined || r.change === change));
  }

  /** What was drawn last (the data and the pair): the tab hears several traits at once when it
   * is built, and a trait that changes nothing drawn draws nothing again. */
  let drawnFor: [unknown, number, number, number] | null = null;
  function draw(): void {
    const data = model.get('diff_data') || {};
    const a = Number(model.get('diff_from'));
    const b = Number(model.get('diff_to'));
    const lo = Number(model.get('min_version'));
    if (drawnFor && drawnFor[0] === data && drawnFor[1] === a && drawnFor[2] === b && drawnFor[3] === lo) return;
    drawnFor = [data, a, b, lo];
    fromSel.value = a;
    toSel.value = b;
    withPrev.disabled = b <= lo;
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
      if (name === 'diff_rows_data') {
        drawRows();
        return;
      }
      draw();
      // the Rows view follows the pair: a small read starts by itself once the metadata diff is in
      if (showingRows && name === 'diff_data') autoRows();
      drawRows();
    },
    shown: () => versionOptions(),
    destroy: () => {
      changes.destroy();
      files.destroy();
      rowsGrid.destroy();
    },
  };
}
