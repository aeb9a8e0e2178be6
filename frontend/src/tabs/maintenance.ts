// Maintenance: each operation as a card (what it does, which backend runs it), a preview from
// the planning code that runs it, a confirmation for destructive ones, a progress bar that
// only moves forward, and the operation's metrics when it is done.
import type { Ctx, Tab } from '../context';
import { fill, h, kv, note, pill } from '../dom';
import { countNoun, formatValue, humanBytes, jsonItems } from '../format';

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

export function maintenanceTab(ctx: Ctx): Tab {
  const list = h('div', { class: 'dxe-op-cards', role: 'list' });
  const panel = h('div', { class: 'dxe-op-panel', 'aria-live': 'polite' });
  const el = h('div', { class: 'dxe-tab-maintenance' }, note('Preview an operation to see what it would do at the latest version, before running it.', 'hint'), list, panel);
  let confirming: string | null = null;
  let cardsKey = '';

  function drawCards(ops: any[], m: any): void {
    const key = JSON.stringify(ops.map((o) => [o.name, o.available, o.backend])) + String(m.selected) + String(!!m.running);
    if (key === cardsKey) return;
    cardsKey = key;
    fill(
      list,
      ops.map((o) => {
        const preview = h('button', { type: 'button', class: 'dxe-btn', disabled: !!m.running }, `Preview ${o.label}`);
        preview.addEventListener('click', () => {
          confirming = null;
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

  function draw(): void {
    const m = ctx.model.get('maintenance') || {};
    const ops: any[] = m.operations || [];
    drawCards(ops, m);
    const op = ops.find((o) => o.name === m.selected);
    if (!op) {
      fill(panel);
      return;
    }
    const parts: Array<Node | null> = [h('h3', { class: 'dxe-section-title' }, `${op.label}: preview`)];
    if (m.preview) {
      parts.push(kv(pairs(m.preview)));
      if (m.preview.bytes_to_free !== undefined || m.preview.bytes_to_rewrite !== undefined) {
        const b = m.preview.bytes_to_free ?? m.preview.bytes_to_rewrite;
        const f = m.preview.files_to_delete ?? m.preview.files_to_rewrite;
        parts.push(note(`${countNoun(f, 'file')}, ${humanBytes(b)}.`, 'hint'));
      }
    }
    const run = h('button', { type: 'button', class: `dxe-btn ${op.destructive ? 'dxe-btn-danger' : 'dxe-btn-primary'}`, disabled: !op.available || !!m.running }, `Run ${op.label}`);
    run.addEventListener('click', () => {
      if (op.destructive && confirming !== op.name) {
        confirming = op.name;
        draw();
        return;
      }
      confirming = null;
      ctx.rpc.tell('run', { op: op.name });
    });
    if (confirming === op.name && !m.running) {
      const cancel = h('button', { type: 'button', class: 'dxe-btn' }, 'Cancel');
      cancel.addEventListener('click', () => {
        confirming = null;
        draw();
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
      if (m.metrics && typeof m.metrics === 'object') parts.push(h('h4', null, 'Metrics'), kv(pairs(m.metrics)));
    }
    fill(panel, parts);
  }

  return { el, changed: () => draw() };
}
