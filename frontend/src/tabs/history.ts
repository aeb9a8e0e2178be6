// History: every commit of the table (from `inspect.commit_infos`: the whole log, cheaply), a
// timeline of operations (the `viz.operations_chart` spec) whose brush picks a time range and
// a pair of versions to compare and whose marks travel to a version on click; filters by
// operation, user and time; the commit list (two rows checked -> compare); and the selected
// commit in full: parameters and metrics as key/value chips, the counts derived from its
// actions (asked of the kernel), and the raw commitInfo. Below the timeline, the table through
// time (`inspect.timeline` as `viz.timeline_chart`: one health metric per version, asked of the
// kernel, at once for a small log, on a click for a big one) whose version brush picks the two
// versions the Diff tab compares.
import { decode, type Row, type Rows } from '../arrow';
import { createChart } from '../chart';
import type { Ctx, Tab } from '../context';
import { badge, copyButton, fill, h, kv, note, section } from '../dom';
import { countNoun, formatValue, humanBytes, humanCount, humanDuration, jsonItems, relativeTime, timestampTitle, toMillis } from '../format';
import { createGrid } from '../grid';
import { operationPanel, type Confirming } from './maintenance';
import { protocolSection } from './protocol';
import type { IRowNode } from 'ag-grid-community';

/** A display unit for an operationMetrics key (writers record numbers as text). */
export function metricKeyUnit(key: string): 'bytes' | 'duration_ms' | 'count' | 'text' {
  if (/bytes|size/i.test(key)) return 'bytes';
  if (/(time|duration)ms$|ms$/i.test(key)) return 'duration_ms';
  if (/^num|rows|files|count/i.test(key)) return 'count';
  return 'text';
}

function metricText(key: string, value: string): string {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) return value;
  const unit = metricKeyUnit(key);
  if (unit === 'bytes') return humanBytes(n);
  if (unit === 'duration_ms') return humanDuration(n);
  if (unit === 'count') return humanCount(n);
  return value;
}

function chipList(value: unknown, render: (k: string, v: string) => string = (_k, v) => v): HTMLElement {
  const items = jsonItems(value);
  if (!items || items.length === 0) return h('span', { class: 'dxe-muted' }, 'none');
  return h(
    'ul',
    { class: 'dxe-chip-list' },
    items.map(([k, v]) => h('li', { class: 'dxe-chip', title: `${k} = ${v}` }, h('span', { class: 'dxe-chip-k' }, k), h('span', { class: 'dxe-chip-v' }, render(k, v)))),
  );
}

function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 16);
}

/** The timeline's height in px (`prewarmChart` prepares the spec for it before the tab opens). */
export const TIMELINE_HEIGHT = 150;

export function historyTab(ctx: Ctx): Tab {
  const { model, rpc } = ctx;
  let commits: Rows | null = null;
  let selectedVersion: number | null = null;
  let brushed: [number, number] | null = null;
  let detailToken = 0;

  // -- filters -----------------------------------------------------------------------------
  const opSelect = h('select', { class: 'dxe-select', 'aria-label': 'filter by operation' });
  const userSelect = h('select', { class: 'dxe-select', 'aria-label': 'filter by user' });
  const fromInput = h('input', { type: 'datetime-local', class: 'dxe-input', 'aria-label': 'from time (local)' });
  const toInput = h('input', { type: 'datetime-local', class: 'dxe-input', 'aria-label': 'to time (local)' });
  const clearFilters = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small' }, 'Clear filters');
  const filters = h(
    'div',
    { class: 'dxe-filters', role: 'group', 'aria-label': 'history filters' },
    h('label', { class: 'dxe-field' }, h('span', null, 'Operation'), opSelect),
    h('label', { class: 'dxe-field' }, h('span', null, 'User'), userSelect),
    h('label', { class: 'dxe-field' }, h('span', null, 'From'), fromInput),
    h('label', { class: 'dxe-field' }, h('span', null, 'To'), toInput),
    clearFilters,
  );

  // -- compare bar -------------------------------------------------------------------------
  const compareBar = h('div', { class: 'dxe-action-bar', role: 'status', 'aria-live': 'polite' });

  // -- timeline ----------------------------------------------------------------------------
  const timeline = createChart(ctx.rootClass, {
    label: 'operations over time; drag to pick a time range, click a commit to show that version',
    height: TIMELINE_HEIGHT,
    onClick: (d) => {
      const v = Number(d.version ?? d.last_version);
      if (Number.isFinite(v)) ctx.travel(v);
    },
    onSignal: {
      time_brush: (value) => {
        const range = (value as Record<string, unknown[]> | null)?.timestamp;
        if (!range || range.length !== 2) {
          brushed = null;
        } else {
          const a = toMillis(range[0]);
          const b = toMillis(range[1]);
          brushed = a !== null && b !== null ? [Math.min(a, b), Math.max(a, b)] : null;
        }
        if (brushed) {
          fromInput.value = localInput(brushed[0]);
          toInput.value = localInput(brushed[1]);
        }
        applyFilters();
      },
    },
  });
  const timelineSection = section('Timeline');
  timelineSection.body.append(
    note('Drag across the timeline to keep a time range (and compare its first and last version); click a commit to show that version.', 'hint'),
    timeline.el,
  );

  // -- the table through time ----------------------------------------------------------------
  let healthBrush: [number, number] | null = null;
  let healthAsked = false;
  const metricSelect = h('select', { class: 'dxe-select', 'aria-label': 'metric through time' });
  const healthStatus = h('div', { class: 'dxe-action-bar', role: 'status', 'aria-live': 'polite' });
  const healthButton = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small' }, 'Replay every version');
  const health = createChart(ctx.rootClass, {
    label: 'a health metric per version; drag across versions to compare the first and the last',
    height: TIMELINE_HEIGHT,
    onClick: (d) => {
      const v = Number(d.version);
      if (Number.isFinite(v)) ctx.travel(v);
    },
    onSignal: {
      version_brush: (value) => {
        const range = (value as Record<string, unknown[]> | null)?.version;
        healthBrush = range && range.length === 2 ? [Math.ceil(Math.min(Number(range[0]), Number(range[1]))), Math.floor(Math.max(Number(range[0]), Number(range[1])))] : null;
        drawHealthStatus();
      },
    },
  });
  const healthSection = section('Through time');
  healthSection.body.append(
    h('div', { class: 'dxe-filters' }, h('label', { class: 'dxe-field' }, h('span', null, 'Metric'), metricSelect), healthButton),
    health.el,
    healthStatus,
  );

  function drawHealthStatus(message?: string): void {
    if (message !== undefined) {
      fill(healthStatus, h('span', { class: 'dxe-muted' }, message));
      return;
    }
    if (healthBrush && healthBrush[1] > healthBrush[0]) {
      const [lo, hi] = healthBrush;
      const go = h('button', { type: 'button', class: 'dxe-btn dxe-btn-primary' }, `Compare ${lo} → ${hi}`);
      go.addEventListener('click', () => ctx.compare(lo, hi));
      fill(healthStatus, h('span', null, `Versions ${lo} to ${hi} brushed.`), go);
    } else {
      fill(healthStatus, h('span', { class: 'dxe-muted' }, 'Drag across versions to compare the first and the last; click a version to show it.'));
    }
  }

  function askHealth(): void {
    healthAsked = true;
    healthButton.disabled = true;
    drawHealthStatus('Replaying every version of the log…');
    const metric = metricSelect.value || 'files';
    rpc
      .request('timeline', { metric })
      .then((reply) => {
        const c = reply.content;
        if (!metricSelect.options.length) {
          const of = (m: string) => (c.column && m.startsWith('overlap_depth') ? ` of ${c.column}` : '');
          fill(metricSelect, (c.metrics as Array<[string, string]>).map(([m, title]) => h('option', { value: m }, title + of(m))));
        }
        metricSelect.value = String(c.metric);
        healthBrush = null;
        health.update(c.chart);
        healthButton.hidden = true;
        drawHealthStatus();
      })
      .catch((err: Error) => {
        healthButton.disabled = false;
        drawHealthStatus(`The table through time is unavailable: ${err.message}`);
      });
  }
  healthButton.addEventListener('click', askHealth);
  metricSelect.addEventListener('change', askHealth);

  // -- commits grid ------------------------------------------------------------------------
  const grid = createGrid({
    label: 'history',
    rootClass: ctx.rootClass,
    noun: 'commit',
    height: 380,
    selection: 'multiple',
    hideEmpty: true,
    filterPlaceholder: 'search operation, user, engine, metadata',
    columns: ['version', 'timestamp', 'operation', 'user_name', 'metrics', 'parameters', 'user_metadata', 'engine', 'is_blind_append', 'isolation_level', 'commit_bytes', 'user_id'],
    options: {
      version: { pinned: 'left' },
      user_name: { header: 'user' },
      metrics: { header: 'operation metrics' },
      user_metadata: { header: 'user metadata' },
      is_blind_append: { header: 'blind append' },
      commit_bytes: { header: 'commit size' },
      user_id: { header: 'user id' },
    },
    onRowClick: (row) => selectCommit(Number(row.version)),
    onSelection: () => drawCompareBar(),
    rowClass: (row) => (Number(row.version) === Number(model.get('version')) ? 'dxe-row-current' : null),
  });
  const gridSection = section('Commits');
  gridSection.body.appendChild(grid.el);

  // -- detail ------------------------------------------------------------------------------
  const detail = h('aside', { class: 'dxe-detail', 'aria-label': 'selected commit' });
  const protocol = protocolSection(ctx);

  const el = h(
    'div',
    { class: 'dxe-tab-history' },
    timelineSection.el,
    healthSection.el,
    filters,
    compareBar,
    h('div', { class: 'dxe-split' }, h('div', { class: 'dxe-split-main' }, gridSection.el), detail),
    protocol.el,
  );

  function options(select: HTMLSelectElement, values: Map<string, number>, all: string): void {
    const keep = select.value;
    fill(
      select,
      h('option', { value: '' }, all),
      [...values.entries()].sort((a, b) => b[1] - a[1]).map(([v, n]) => h('option', { value: v }, `${v} (${humanCount(n)})`)),
    );
    select.value = values.has(keep) ? keep : '';
  }

  function applyFilters(): void {
    if (!commits) return;
    const op = opSelect.value;
    const user = userSelect.value;
    const from = fromInput.value ? new Date(fromInput.value).getTime() : null;
    const to = toInput.value ? new Date(toInput.value).getTime() + 59_999 : null;
    const rows = commits.rows.filter((r) => {
      if (op && r.operation !== op) return false;
      if (user && (r.user_name ?? r.user_id) !== user) return false;
      const t = toMillis(r.timestamp);
      if (from !== null && (t === null || t < from)) return false;
      if (to !== null && (t === null || t > to)) return false;
      return true;
    });
    grid.setRows({ ...commits, rows }, commits.rows.length);
    markedVersion = Number(model.get('version')); // the rows drawn now mark it
    drawCompareBar();
  }

  function drawCompareBar(): void {
    const picked = grid
      .selected()
      .map((r) => Number(r.version))
      .sort((a, b) => a - b);
    const parts: Array<Node | string> = [];
    if (picked.length === 2) {
      const go = h('button', { type: 'button', class: 'dxe-btn dxe-btn-primary' }, `Compare ${picked[0]} → ${picked[1]}`);
      go.addEventListener('click', () => ctx.compare(picked[0], picked[1]));
      parts.push(h('span', null, `Versions ${picked[0]} and ${picked[1]} checked.`), go);
    } else if (picked.length > 2) {
      parts.push(h('span', null, `${countNoun(picked.length, 'commit')} checked: check exactly two to compare them.`));
    } else if (brushed && commits) {
      const inRange = commits.rows
        .filter((r) => {
          const t = toMillis(r.timestamp);
          return t !== null && t >= (brushed as [number, number])[0] && t <= (brushed as [number, number])[1];
        })
        .map((r) => Number(r.version));
      if (inRange.length >= 2) {
        const lo = Math.min(...inRange);
        const hi = Math.max(...inRange);
        const go = h('button', { type: 'button', class: 'dxe-btn dxe-btn-primary' }, `Compare ${lo} → ${hi}`);
        go.addEventListener('click', () => ctx.compare(lo, hi));
        parts.push(h('span', null, `${countNoun(inRange.length, 'commit')} in the brushed range.`), go);
      } else {
        parts.push(h('span', null, inRange.length === 1 ? `One commit (version ${inRange[0]}) in the brushed range.` : 'No commit in the brushed range.'));
      }
    } else {
      parts.push(h('span', { class: 'dxe-muted' }, 'Check two commits (or drag across the timeline) to compare them; click a commit to see it in full.'));
    }
    fill(compareBar, parts);
  }

  clearFilters.addEventListener('click', () => {
    opSelect.value = '';
    userSelect.value = '';
    fromInput.value = '';
    toInput.value = '';
    brushed = null;
    timeline.update((model.get('history_data') || {}).timeline);
    applyFilters();
  });
  opSelect.addEventListener('change', applyFilters);
  userSelect.addEventListener('change', applyFilters);
  for (const input of [fromInput, toInput]) {
    input.addEventListener('change', () => {
      brushed = null;
      applyFilters();
    });
  }

  function selectCommit(v: number): void {
    selectedVersion = v;
    drawDetail();
  }

  /** The detail's "Show version N" button and its version: a version change updates only it. */
  let showBtn: HTMLButtonElement | null = null;
  let detailVersion: number | null = null;

  // -- restore to the selected commit: the Maintenance tab's RESTORE (preview, run, progress) --
  const restoreBox = h('div', { class: 'dxe-detail-restore', role: 'region', 'aria-label': 'restore to this version' });
  const confirm: Confirming = { name: null };
  let restoreKey = '';
  /** The RESTORE preview or run of the detail's version, when it is the operation selected. */
  function drawRestore(): void {
    const m = model.get('maintenance') || {};
    const op = (m.operations || []).find((o: any) => o.name === 'restore');
    const mine = op && m.selected === 'restore' && detailVersion !== null && Number(m.params?.version) === detailVersion;
    const key = mine ? JSON.stringify([detailVersion, m.preview, m.running, m.progress, m.result, m.message]) : '';
    if (key === restoreKey) return;
    restoreKey = key;
    fill(restoreBox, mine ? operationPanel(ctx, op, m, confirm, () => ((restoreKey = ''), drawRestore())) : null);
  }

  function drawShown(): void {
    if (!showBtn || detailVersion === null) return;
    const shown = detailVersion === Number(model.get('version'));
    showBtn.textContent = shown ? 'Shown' : `Show version ${detailVersion}`;
    showBtn.disabled = shown;
  }

  /** Moving to another version re-draws the two rows whose "current" mark changes, not every
   * row (each redraw of the whole grid was a long task on every step of the slider). */
  let markedVersion: number | null = null;
  function markCurrentRow(): void {
    const api = grid.api();
    const now = Number(model.get('version'));
    if (!api || markedVersion === now) return;
    const nodes: IRowNode[] = [];
    api.forEachNode((n) => {
      const v = Number((n.data as Row | undefined)?.version);
      if (v === now || v === markedVersion) nodes.push(n);
    });
    markedVersion = now;
    if (nodes.length) api.redrawRows({ rowNodes: nodes });
  }

  function drawDetail(): void {
    if (!commits || selectedVersion === null) {
      fill(detail, note('Click a commit to see its parameters, metrics, counts and commitInfo.', 'hint'));
      return;
    }
    const row = commits.rows.find((r) => Number(r.version) === selectedVersion) as Row | undefined;
    if (!row) {
      fill(detail, note(`Version ${selectedVersion} is not in the history.`, 'empty'));
      return;
    }
    const v = Number(row.version);
    const lo = Number(model.get('min_version'));
    showBtn = h('button', { type: 'button', class: 'dxe-btn dxe-btn-primary' });
    detailVersion = v;
    drawShown();
    showBtn.addEventListener('click', () => ctx.travel(v));
    const prevBtn = h('button', { type: 'button', class: 'dxe-btn' }, 'Compare with previous');
    prevBtn.disabled = v <= lo;
    prevBtn.addEventListener('click', () => ctx.compare(v - 1, v));
    const latest = v === Number(model.get('max_version'));
    const restoreBtn = h(
      'button',
      { type: 'button', class: 'dxe-btn', disabled: latest || v < lo, title: latest ? 'this is the latest version' : v < lo ? 'this version can no longer be read' : `preview a RESTORE of the table to version ${v}, then run it` },
      'Restore to this version',
    );
    restoreBtn.addEventListener('click', () => {
      confirm.name = null;
      rpc.tell('preview', { op: 'restore', params: { version: v } });
    });
    const counts = h('div', { class: 'dxe-detail-counts' }, note('Counting the commit’s actions…', 'loading'));
    const raw = h('pre', { class: 'dxe-json' }, 'loading…');
    const who = row.user_name ?? row.user_id;
    fill(
      detail,
      h(
        'div',
        { class: 'dxe-detail-head' },
        h('span', { class: 'dxe-detail-version' }, `Version ${v}`),
        badge(row.operation as string | null),
        h('span', { class: 'dxe-detail-time', title: `${timestampTitle(row.timestamp)} UTC` }, `${formatValue('timestamp', row.timestamp)} · ${relativeTime(row.timestamp)}`),
        h('span', { class: 'dxe-spacer' }),
        showBtn,
        prevBtn,
        restoreBtn,
      ),
      restoreBox,
      h(
        'div',
        { class: 'dxe-detail-body' },
        h(
          'div',
          { class: 'dxe-detail-block' },
          h('h4', null, 'Commit'),
          kv([
            ['user', who ? String(who) : null],
            ['user id', row.user_id ? String(row.user_id) : null],
            ['engine', row.engine ? String(row.engine) : null],
            ['user metadata', row.user_metadata ? h('span', { class: 'dxe-user-metadata' }, String(row.user_metadata)) : null],
            ['isolation', row.isolation_level ? String(row.isolation_level) : null],
            ['blind append', row.is_blind_append === null || row.is_blind_append === undefined ? null : row.is_blind_append ? 'yes' : 'no'],
            ['read version', row.read_version === null || row.read_version === undefined ? null : String(row.read_version)],
            ['transaction', row.txn_id ? String(row.txn_id) : null],
            ['cluster', row.cluster_id ? String(row.cluster_id) : null],
            ['commit file', formatValue('bytes', row.commit_bytes)],
          ]),
        ),
        h('div', { class: 'dxe-detail-block' }, h('h4', null, 'Operation parameters'), chipList(row.parameters), h('h4', null, 'Operation metrics'), chipList(row.metrics, metricText)),
        h('div', { class: 'dxe-detail-block' }, h('h4', null, 'Actions in the commit'), counts),
      ),
      h('details', { class: 'dxe-raw' }, h('summary', null, 'Full commitInfo (JSON)'), h('div', { class: 'dxe-raw-tools' }, copyButton(() => raw.textContent || '', 'copy commitInfo JSON')), raw),
    );
    restoreKey = '';
    drawRestore();
    const mine = ++detailToken;
    rpc
      .request('commit', { version: v })
      .then((reply) => {
        if (mine !== detailToken) return;
        const d = reply.content.detail || {};
        const c = d.counts || {};
        fill(
          counts,
          kv([
            ['files added', `${humanCount(c.files_added)} (${humanBytes(c.bytes_added)})`],
            ['files removed', `${humanCount(c.files_removed)} (${c.bytes_removed === null ? 'size unknown' : humanBytes(c.bytes_removed)})`],
            ['rows added', c.rows_added === null ? 'unknown (no stats)' : humanCount(c.rows_added)],
            ['rows removed', c.rows_removed === null ? 'unknown (no stats)' : humanCount(c.rows_removed)],
            ['files with a DV added', humanCount(c.dv_files_added)],
            ['change data files', humanCount(c.cdc_files)],
            ['metadata changed', c.metadata_changed ? 'yes' : 'no'],
            ['protocol changed', c.protocol_changed ? 'yes' : 'no'],
          ]),
        );
        let pretty = String(d.commit_info ?? '(no commitInfo)');
        try {
          pretty = JSON.stringify(JSON.parse(pretty), null, 2);
        } catch {
          // not JSON: shown as it is
        }
        raw.textContent = pretty;
      })
      .catch((err: Error) => {
        if (mine !== detailToken) return;
        fill(counts, note(err.message, 'error'));
        raw.textContent = '';
      });
  }

  function draw(): void {
    const data = model.get('history_data') || {};
    if (!data.commits) {
      fill(detail, note('Loading history…', 'loading'));
      return;
    }
    commits = decode(data.commits);
    timelineSection.head.querySelector('h3')!.textContent = `Timeline · ${countNoun(commits?.rows.length ?? 0, 'commit')}`;
    const ops = new Map<string, number>();
    const users = new Map<string, number>();
    for (const r of commits?.rows ?? []) {
      const op = r.operation === null || r.operation === undefined ? null : String(r.operation);
      if (op) ops.set(op, (ops.get(op) || 0) + 1);
      const u = r.user_name ?? r.user_id;
      if (u !== null && u !== undefined) users.set(String(u), (users.get(String(u)) || 0) + 1);
    }
    options(opSelect, ops, 'all operations');
    options(userSelect, users, 'all users');
    userSelect.disabled = users.size === 0;
    timeline.update(data.timeline);
    if (!healthAsked) {
      if (data.health_auto) askHealth();
      else drawHealthStatus('The log is large: replaying every version reads all of it.');
    }
    protocol.draw(data);
    if (selectedVersion === null && commits && commits.rows.length) selectedVersion = Number(model.get('version'));
    applyFilters();
    drawDetail();
  }

  return {
    el,
    changed: (name) => {
      if (name === 'history_data') draw();
      else if (name === 'maintenance') drawRestore();
      else if (name === 'version') {
        markCurrentRow();
        drawShown();
      }
    },
    destroy: () => {
      timeline.destroy();
      health.destroy();
      grid.destroy();
    },
  };
}
