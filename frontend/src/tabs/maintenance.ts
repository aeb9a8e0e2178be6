// Maintenance: each operation as a card (what it does, which backend runs it), a preview from
// the planning code that runs it, a confirmation for destructive ones, a progress bar that
// only moves forward, and the operation's metrics when it is done.
import type { Ctx, Tab } from '../context';
import { fill, h, kv, note, pill } from '../dom';
import { countNoun, formatValue, humanBytes, humanCount, jsonItems, plural } from '../format';

/** A display unit for a preview/result key (`bytes_to_free` -> bytes, `files_after` -> count). */
export function keyUnit(key: string): string {
  if (/bytes|size/.test(key)) return 'bytes';
  if (/ratio|share/.test(key)) return 'ratio';
  if (/(^|_)ms$|time_ms|duration/.test(key)) return 'duration_ms';
  if (/version/.test(key)) return 'version';
  if (/^(num|files|bins|partitions|rows|commits|deleted|removed|added)|_(files|rows|count|partitions|bins)$/.test(key)) return 'count';
  return 'text';
}

function valueNode(key: string, value: unknown): Node | string {
  if (value === null || value === undefined) return '–';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) {
    if (value.length === 0) return 'none';
    return h('span', { class: 'dxe-chips' }, value.slice(0, 40).map((v) => h('span', { class: 'dxe-chip' }, String(v))), value.length > 40 ? h('span', { class: 'dxe-chip dxe-chip-more' }, `+${value.length - 40}`) : null);
  }
  if (typeof value === 'object') {
    const items = jsonItems(value);
    if (!items || !items.length) return 'none';
    return h('span', { class: 'dxe-chips' }, items.map(([k, v]) => h('span', { class: 'dxe-chip' }, h('span', { class: 'dxe-chip-k' }, k), h('span', { class: 'dxe-chip-v' }, formatValue(keyUnit(k) === 'text' ? 'count' : keyUnit(k), Number.isFinite(Number(v)) ? Number(v) : v)))));
  }
  if (typeof value === 'number') {
    const unit = keyUnit(key);
    return unit === 'text' ? formatValue('number', value) : formatValue(unit, value);
  }
  return String(value);
}

function pairs(obj: Record<string, unknown> | null | undefined): Array<[string, Node | string]> {
  return Object.entries(obj || {}).map(([k, v]) => [k.replace(/_/g, ' '), valueNode(k, v)]);
}

/** One advice line: `label a → b` (numbers in their unit), or null when nothing is predicted. */
function change(label: string, unit: string, before: unknown, after: unknown): string | null {
  if (before === null || before === undefined || after === null || after === undefined) return null;
  return `${label} ${formatValue(unit, before as number)} → ${formatValue(unit, after as number)}`;
}

/** Which destructive operation waits for its "Yes, run" (shared by a tab's redraws). */
export interface Confirming {
  name: string | null;
}

/** The selected operation of the `maintenance` trait: its preview, Run (confirmed first when it
 * deletes files), the progress bar, the result and metrics. The one drawing of an operation's
 * preview and run, for the Maintenance tab and History's "Restore to this version". */
export function operationPanel(ctx: Ctx, op: any, m: any, confirm: Confirming, redraw: () => void): Array<Node | null> {
  const parts: Array<Node | null> = [h('h3', { class: 'dxe-section-title' }, `${op.label}: preview`)];
  if (m.preview) {
    parts.push(kv(pairs(m.preview)));
    if (m.preview.bytes_to_free !== undefined || m.preview.bytes_to_rewrite !== undefined) {
      const b = m.preview.bytes_to_free ?? m.preview.bytes_to_rewrite;
      const f = m.preview.files_to_delete ?? m.preview.files_to_rewrite;
      parts.push(note(`${countNoun(f, 'file')}, ${humanBytes(b)}.`, 'hint'));
    }
    if (m.preview.restorable === false) {
      parts.push(note(`${humanCount(m.preview.files_missing)} data ${plural('file', m.preview.files_missing)} of version ${m.preview.restore_to_version} no longer exist (VACUUM deleted them): RESTORE cannot bring them back.`, 'error'));
    }
  }
  const blocked = m.preview?.restorable === false;
  // a preview is of the version before its run: running it again needs a new preview
  const ran = !!m.result && !m.running;
  const run = h(
    'button',
    { type: 'button', class: `dxe-btn ${op.destructive ? 'dxe-btn-danger' : 'dxe-btn-primary'}`, disabled: !op.available || !!m.running || blocked || ran, title: ran ? 'the table changed: preview again to run it on the new version' : null },
    `Run ${op.label}`,
  );
  run.addEventListener('click', () => {
    if (op.destructive && confirm.name !== op.name) {
      confirm.name = op.name;
      redraw();
      return;
    }
    confirm.name = null;
    ctx.rpc.tell('run', { op: op.name, params: m.params || {} });
  });
  if (confirm.name === op.name && !m.running) {
    const cancel = h('button', { type: 'button', class: 'dxe-btn' }, 'Cancel');
    cancel.addEventListener('click', () => {
      confirm.name = null;
      redraw();
    });
    parts.push(h('div', { class: 'dxe-confirm', role: 'alert' }, h('span', null, `${op.label} deletes files for good. Run it?`), run, cancel));
    run.textContent = `Yes, run ${op.label}`;
  } else {
    parts.push(h('div', { class: 'dxe-btn-row' }, run, op.available ? h('span', { class: 'dxe-muted' }, `with ${op.backend}`) : note(op.reason, 'warn')));
  }
  if (m.running || (m.progress && m.progress > 0 && !m.result)) {
    const pct = Math.round(100 * Number(m.progress || 0));
    parts.push(
      h(
        'div',
        { class: 'dxe-progress-wrap' },
        h('progress', { class: 'dxe-progress', max: 1, value: Number(m.progress || 0), 'aria-label': `${op.label} progress` }),
        h('span', { class: 'dxe-progress-text' }, `${pct}% · ${m.message || ''}`),
      ),
    );
  }
  if (m.result) {
    parts.push(h('p', { class: 'dxe-note dxe-note-ok', role: 'status' }, String(m.result)));
    if (ran) parts.push(note('The preview above was of the version before this run: preview again to run it on the new version.', 'hint'));
    if (m.metrics && typeof m.metrics === 'object') parts.push(h('h4', null, 'Metrics'), kv(pairs(m.metrics)));
  }
  return parts;
}

/** The units of a checked metric (`inspect.check_advice`'s rows). */
const CHECK_UNITS: Record<string, string> = { files: 'count', bytes: 'bytes', mean_depth: 'number', max_depth: 'number', point_files: 'number' };
const CHECK_NAMES: Record<string, string> = {
  files: 'files',
  bytes: 'bytes',
  mean_depth: 'mean overlap depth',
  max_depth: 'max overlap depth',
  point_files: 'files a point query reads',
};

/** Predicted vs measured after an advice ran (`advise(check=True)`'s rows): each metric, the
 * prediction, what the new version measures, the difference and whether it is within tolerance. */
function checkTable(check: any): HTMLElement {
  const rows: any[] = check.rows || [];
  if (!rows.length) return note(`Nothing to check: ${check.note || 'no prediction to compare'}`, 'hint');
  const head = h('tr', null, ['metric', 'predicted', `measured at version ${check.version}`, 'difference', 'within tolerance'].map((t) => h('th', { scope: 'col' }, t)));
  const body = rows.map((r) => {
    const unit = CHECK_UNITS[r.metric] || 'number';
    return h(
      'tr',
      { class: r.within ? 'dxe-check-ok' : 'dxe-check-off' },
      h('th', { scope: 'row' }, CHECK_NAMES[r.metric] || r.metric),
      h('td', { class: 'dxe-num' }, formatValue(unit, r.predicted)),
      h('td', { class: 'dxe-num' }, formatValue(unit, r.measured)),
      h('td', { class: 'dxe-num' }, r.error === null || r.error === undefined ? '–' : `${r.error >= 0 ? '+' : ''}${(100 * r.error).toFixed(1)}%`),
      h('td', null, pill(r.within ? 'ok' : 'warn', r.within ? `yes (±${Math.round(100 * r.tolerance)}%)` : `no (±${Math.round(100 * r.tolerance)}%)`)),
    );
  });
  return h(
    'div',
    { class: 'dxe-advice-check', role: 'region', 'aria-label': 'predicted vs measured' },
    h('h4', null, `Predicted vs measured (version ${rows[0].version_before} → ${rows[0].version_after})`),
    h('table', { class: 'dxe-check-table' }, h('thead', null, head), h('tbody', null, body)),
  );
}

export function maintenanceTab(ctx: Ctx): Tab {
  const list = h('div', { class: 'dxe-op-cards', role: 'list' });
  const panel = h('div', { class: 'dxe-op-panel', 'aria-live': 'polite' });
  const adviceList = h('ol', { class: 'dxe-advice', 'aria-label': 'advice' });
  const ask = h('button', { type: 'button', class: 'dxe-btn' }, 'What should I run?');
  ask.addEventListener('click', () => ctx.rpc.tell('advise', {}));
  const el = h(
    'div',
    { class: 'dxe-tab-maintenance' },
    h('div', { class: 'dxe-btn-row' }, ask, note('ranked advice with its predicted effect, from the log', 'hint')),
    adviceList,
    note('Preview an operation to see what it would do at the latest version, before running it.', 'hint'),
    list,
    panel,
  );
  let cardsKey = '';
  let adviceKey = '';

  function drawAdvice(m: any): void {
    const advice: any[] = m.advice || [];
    const latest = Number(ctx.model.get('max_version'));
    // advice is of the version it was asked at: once the table moved on, it says so
    const stale = m.advice && m.advice_version !== undefined && m.advice_version !== null && Number(m.advice_version) !== latest;
    const key = JSON.stringify(advice) + String(!!m.running) + String(stale) + String(latest);
    if (key === adviceKey) return;
    adviceKey = key;
    let staleNote: HTMLElement | null = null;
    if (stale) {
      const again = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small', disabled: !!m.running }, 'Advise again');
      again.addEventListener('click', () => ctx.rpc.tell('advise', {}));
      staleNote = h(
        'li',
        { class: 'dxe-advice-stale', role: 'status' },
        note(`This advice is for version ${Number(m.advice_version)}; the table is now at version ${latest}. `, 'warn'),
        again,
      );
    }
    if (m.advice && !advice.length) {
      fill(adviceList, staleNote, h('li', null, 'Nothing to do: no maintenance would change this table.'));
      return;
    }
    fill(
      adviceList,
      staleNote,
      ...advice.map((a) => {
        const lines = [
          change('files', 'count', a.files_before, a.files_after),
          change('bytes', 'bytes', a.bytes_before, a.bytes_after),
          change('files a point query reads', 'number', a.point_files_before, a.point_files_after),
          change('max overlap depth', 'count', a.max_depth_before, a.max_depth_after),
          a.bytes_rewritten ? `rewrites ${humanBytes(a.bytes_rewritten)}` : null,
          a.retention_hours !== null && a.retention_hours !== undefined ? `needs ${formatValue('number', a.retention_hours)} h of retention` : null,
        ].filter((x): x is string => !!x);
        const preview = a.operation
          ? h('button', { type: 'button', class: 'dxe-btn', disabled: !!m.running, 'aria-label': `Preview advice ${a.rank}: ${a.kind}` }, 'Preview')
          : null;
        preview?.addEventListener('click', () => {
          confirm.name = null;
          ctx.rpc.tell('preview', { op: a.operation, params: a.parameters || {}, advice: a.rank });
        });
        return h(
          'li',
          { class: 'dxe-advice-card', 'aria-label': `${a.kind}: ${a.target}` },
          h('div', { class: 'dxe-op-title' }, h('strong', null, `${a.rank}. ${a.kind.replace(/_/g, ' ')}`), pill('info', `score ${formatValue('ratio', a.score)}`)),
          h('p', { class: 'dxe-op-desc' }, a.target),
          h('p', { class: 'dxe-op-desc' }, a.reason),
          lines.length ? h('p', { class: 'dxe-muted' }, lines.join(' · ')) : null,
          h('div', { class: 'dxe-btn-row' }, h('code', null, a.action), preview),
          a.check ? checkTable(a.check) : null,
        );
      }),
    );
  }

  function drawCards(ops: any[], m: any): void {
    const key = JSON.stringify(ops.map((o) => [o.name, o.available, o.backend])) + String(m.selected) + String(!!m.running);
    if (key === cardsKey) return;
    cardsKey = key;
    fill(
      list,
      ops.map((o) => {
        const preview = h('button', { type: 'button', class: 'dxe-btn', disabled: !!m.running }, `Preview ${o.label}`);
        preview.addEventListener('click', () => {
          confirm.name = null;
          ctx.rpc.tell('preview', { op: o.name });
        });
        return h(
          'div',
          { class: `dxe-op-card${o.name === m.selected ? ' dxe-op-selected' : ''}`, role: 'listitem', 'aria-label': o.label },
          h('div', { class: 'dxe-op-title' }, h('strong', null, o.label), o.destructive ? pill('warn', 'deletes files') : null),
          h('p', { class: 'dxe-op-desc' }, o.description),
          h('div', { class: 'dxe-op-backend' }, o.available ? pill('info', `runs with ${o.backend}`) : pill('error', 'unavailable'), o.available ? null : h('span', { class: 'dxe-muted' }, ` ${o.reason}`)),
          preview,
        );
      }),
    );
  }

  const confirm: Confirming = { name: null };

  function draw(): void {
    const m = ctx.model.get('maintenance') || {};
    const ops: any[] = m.operations || [];
    drawAdvice(m);
    drawCards(ops, m);
    const op = ops.find((o) => o.name === m.selected);
    if (!op) {
      fill(panel);
      return;
    }
    fill(panel, operationPanel(ctx, op, m, confirm, draw));
  }

  return { el, changed: () => draw() };
}
