// The explorer's shell: the header (table, location, version slider), the tab list and the
// panels. Built once per view; after that every change of the model updates only the part
// that shows it (no whole rebuild: focus, scroll positions and open details stay).
//
// Keyboard: JupyterLab (Lumino) runs its shortcuts from a keydown listener on the document. It
// matches a binding's selector from the event's target up the DOM and stops at an element
// marked `data-lm-suppress-shortcuts` -- but it tests the target first, and command-mode
// selectors such as `.jp-Notebook.jp-mod-commandMode :focus` match a focused slider or grid
// cell itself (seen in JupyterLab 4.6: ArrowLeft on the slider collapsed the heading above).
// So the root carries the marker (for other hosts' handlers) and stops the propagation of
// key events that happen inside it: the document never sees them, the browser's default
// action (moving the slider, typing, copying) still happens.
import { h, fill, copyButton, pill, badge, note, idle, measure } from './dom';
import { formatValue, relativeTime, timestampTitle } from './format';
import { Rpc, setState, type AnyModel } from './model';
import { TABS, type Ctx, type Tab } from './context';
import { overviewTab } from './tabs/overview';
import { historyTab, TIMELINE_HEIGHT } from './tabs/history';
import { prewarmChart } from './chart';
import { filesTab } from './tabs/files';
import { layoutTab } from './tabs/layout';
import { dvTab } from './tabs/dv';
import { diffTab } from './tabs/diff';
import { healthTab } from './tabs/health';
import { maintenanceTab } from './tabs/maintenance';

declare const __DX_BUILD__: string;
export const BUILD = __DX_BUILD__;
export const ROOT_CLASS = `dx-${BUILD}`;

const FACTORIES: Record<string, (ctx: Ctx) => Tab> = {
  overview: overviewTab,
  history: historyTab,
  files: filesTab,
  layout: layoutTab,
  dv: dvTab,
  diff: diffTab,
  health: healthTab,
  maintenance: maintenanceTab,
};

/** Which tab draws from which trait. */
const TRAITS: Record<string, string[]> = {
  overview: ['overview_data'],
  history: ['history_data', 'version', 'maintenance'],
  files: ['files_data'],
  layout: ['layout_data', 'layout_column'],
  dv: ['dv_data'],
  diff: ['diff_data', 'diff_from', 'diff_to', 'history_data', 'min_version', 'max_version', 'diff_rows_data'],
  health: ['health_data'],
  maintenance: ['maintenance', 'max_version'],
};

export function render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
  const rpc = new Rpc(model);
  const root = h('div', { class: `dxe-explorer ${ROOT_CLASS}`, 'data-lm-suppress-shortcuts': 'true', 'data-dx-build': BUILD });
  el.appendChild(root);
  const keep = (ev: Event) => ev.stopPropagation();
  for (const type of ['keydown', 'keyup', 'keypress']) root.addEventListener(type, keep);

  // -- header ------------------------------------------------------------------------------
  const title = h('h2', { class: 'dxe-title' });
  const uri = h('code', { class: 'dxe-uri' });
  const uriCopy = copyButton(() => String(model.get('uri')), 'copy table location');
  const refresh = h('button', { type: 'button', class: 'dxe-btn', title: 'Re-read the log: new versions appear' }, '⟳ Refresh');
  refresh.addEventListener('click', () => rpc.tell('refresh'));
  // Follow: the kernel polls the log (backing off while nothing lands) and adds new versions
  const followBtn = h('button', { type: 'button', class: 'dxe-btn dxe-follow', 'aria-pressed': 'false', title: 'Follow the table: new versions appear as they land' }, '◉ Follow');
  followBtn.addEventListener('click', () => setState(model, { follow: !model.get('follow') }));
  const followLine = h('div', { class: 'dxe-follow-line', 'aria-live': 'polite' });

  const sliderId = `dxe-slider-${Math.random().toString(36).slice(2, 8)}`;
  const slider = h('input', { type: 'range', id: sliderId, class: 'dxe-slider', step: 1, 'aria-label': 'version' });
  const prev = h('button', { type: 'button', class: 'dxe-icon-btn dxe-step', 'aria-label': 'previous version', title: 'previous version' }, '◀');
  const next = h('button', { type: 'button', class: 'dxe-icon-btn dxe-step', 'aria-label': 'next version', title: 'next version' }, '▶');
  const versionBox = h('input', { type: 'number', class: 'dxe-input dxe-version-input', 'aria-label': 'go to version (Enter)', title: 'type a version and press Enter' });
  const versionOut = h('output', { class: 'dxe-version-out', for: sliderId, 'aria-live': 'polite' });
  const commitLine = h('div', { class: 'dxe-commit-line' });
  const status = h('div', { class: 'dxe-status' });

  const header = h(
    'header',
    { class: 'dxe-header' },
    h('div', { class: 'dxe-title-row' }, h('span', { class: 'dxe-logo', 'aria-hidden': 'true' }, 'Δ'), title, h('span', { class: 'dxe-uri-wrap' }, uri, uriCopy), h('span', { class: 'dxe-spacer' }), followBtn, refresh),
    h(
      'div',
      { class: 'dxe-version-row' },
      h('label', { class: 'dxe-version-label', for: sliderId }, 'Version'),
      prev,
      slider,
      next,
      versionOut,
      versionBox,
    ),
    commitLine,
    followLine,
    status,
  );

  // -- tabs --------------------------------------------------------------------------------
  const uid = Math.random().toString(36).slice(2, 8);
  const tabButtons = new Map<string, HTMLButtonElement>();
  const panels = new Map<string, HTMLElement>();
  const tabs = new Map<string, Tab>();
  const tablist = h('div', { class: 'dxe-tabs', role: 'tablist', 'aria-label': 'explorer tabs' });
  const panelWrap = h('div', { class: 'dxe-panels' });
  for (const [id, label] of TABS) {
    const btn = h(
      'button',
      { type: 'button', role: 'tab', class: 'dxe-tab', id: `dxe-tab-${uid}-${id}`, 'aria-controls': `dxe-panel-${uid}-${id}`, 'data-tab': id, tabindex: -1 },
      label,
    );
    btn.addEventListener('click', () => show(id));
    tabButtons.set(id, btn);
    tablist.appendChild(btn);
    const panel = h('div', { class: 'dxe-panel', role: 'tabpanel', id: `dxe-panel-${uid}-${id}`, 'aria-labelledby': `dxe-tab-${uid}-${id}`, hidden: true, 'data-tab': id });
    panels.set(id, panel);
    panelWrap.appendChild(panel);
  }
  // arrow keys move between tabs (the ARIA tabs pattern)
  tablist.addEventListener('keydown', (ev: KeyboardEvent) => {
    const ids = TABS.map((t) => t[0]);
    const current = ids.indexOf(String((ev.target as HTMLElement).dataset.tab));
    if (current < 0) return;
    let nextIdx = -1;
    if (ev.key === 'ArrowRight') nextIdx = (current + 1) % ids.length;
    else if (ev.key === 'ArrowLeft') nextIdx = (current - 1 + ids.length) % ids.length;
    else if (ev.key === 'Home') nextIdx = 0;
    else if (ev.key === 'End') nextIdx = ids.length - 1;
    if (nextIdx >= 0) {
      ev.preventDefault();
      show(ids[nextIdx]);
      tabButtons.get(ids[nextIdx])?.focus();
    }
  });

  root.append(header, tablist, panelWrap);

  const ctx: Ctx = {
    model,
    rpc,
    rootClass: ROOT_CLASS,
    travel: (v: number) => {
      if (v === model.get('version')) return;
      setState(model, { version: v });
    },
    compare: (a: number, b: number) => {
      setState(model, { diff_from: a, diff_to: b, tab: 'diff' });
    },
    show: (t: string) => show(t),
  };

  function ensureTab(id: string): Tab {
    let tab = tabs.get(id);
    if (!tab) {
      tab = FACTORIES[id](ctx);
      tabs.set(id, tab);
      fill(panels.get(id) as HTMLElement, tab.el);
      for (const trait of TRAITS[id]) tab.changed(trait);
    }
    return tab;
  }

  /** Tabs whose data can arrive before they are opened (the kernel prepares it in the
   * background and sends it, `prefetch`): once it is here, for the version shown, the tab is
   * built in idle time in its panel, laid out but not shown (`dxe-prerender`: invisible, no
   * height; inert and aria-hidden: no focus, out of the accessibility tree), so that its grids
   * and charts are drawn when the tab is clicked and the click only shows them. Data of a
   * version left (a late reply), or a diff of another pair than the one asked, is not built:
   * the tab waits for its own. */
  const PRERENDER = ['history', 'layout', 'files', 'dv', 'health', 'diff'];
  const current = (id: string): boolean => {
    const data = model.get(TRAITS[id][0]) || {};
    if (Object.keys(data).length === 0 || data.state === 'loading') return false;
    // the diff's data is of a pair of versions: the pair the tab shows
    if (id === 'diff') return data.state === 'ready' && data.from === model.get('diff_from') && data.to === model.get('diff_to');
    return id === 'history' || data.version === model.get('version');
  };
  function prerender(id: string): void {
    if (!PRERENDER.includes(id) || tabs.has(id) || !current(id)) return;
    idle(() => {
      if (tabs.has(id) || !current(id)) return;
      const panel = panels.get(id) as HTMLElement;
      if (panel.hidden) {
        panel.classList.add('dxe-prerender');
        panel.inert = true;
        panel.setAttribute('aria-hidden', 'true');
      }
      measure(`tab-prerender:${id}`, () => ensureTab(id));
    });
  }

  function showPanel(id: string): void {
    for (const [tid, btn] of tabButtons) {
      const on = tid === id;
      btn.setAttribute('aria-selected', on ? 'true' : 'false');
      btn.tabIndex = on ? 0 : -1;
      const panel = panels.get(tid) as HTMLElement;
      panel.hidden = !on;
      // a prerendered panel, once shown, is an ordinary one (hidden again: not laid out)
      if (on && panel.classList.contains('dxe-prerender')) {
        panel.classList.remove('dxe-prerender');
        panel.inert = false;
        panel.removeAttribute('aria-hidden');
      }
    }
    ensureTab(id).shown?.();
  }

  /** When the user last asked for a tab: the time its data took to arrive is measured from it
   * (`dxe:data:<trait>`, a diagnostic the benchmark reads). */
  let askedAt = 0;
  function show(id: string): void {
    askedAt = performance.now();
    showPanel(id);
    if (model.get('tab') !== id) setState(model, { tab: id });
  }

  // -- header updates ----------------------------------------------------------------------
  let sliderTimer: number | undefined;
  const commitVersion = (v: number) => {
    const lo = Number(model.get('min_version'));
    const hi = Number(model.get('max_version'));
    const clamped = Math.max(lo, Math.min(hi, v));
    if (clamped !== model.get('version')) setState(model, { version: clamped });
  };
  slider.addEventListener('input', () => {
    versionOut.textContent = `${slider.value} of ${model.get('max_version')}`;
    window.clearTimeout(sliderTimer);
    // the kernel hears the version once the slider rests (dragging does not queue every step)
    sliderTimer = window.setTimeout(() => commitVersion(Number(slider.value)), 250);
  });
  slider.addEventListener('change', () => {
    window.clearTimeout(sliderTimer);
    commitVersion(Number(slider.value));
  });
  prev.addEventListener('click', () => commitVersion(Number(model.get('version')) - 1));
  next.addEventListener('click', () => commitVersion(Number(model.get('version')) + 1));
  versionBox.addEventListener('keydown', (ev: KeyboardEvent) => {
    if (ev.key === 'Enter' && versionBox.value !== '') {
      ev.preventDefault();
      commitVersion(Math.trunc(Number(versionBox.value)));
    }
  });

  function drawVersion(): void {
    const v = Number(model.get('version'));
    const lo = Number(model.get('min_version'));
    const hi = Number(model.get('max_version'));
    slider.min = String(lo);
    slider.max = String(hi);
    slider.value = String(v);
    slider.disabled = lo === hi;
    slider.setAttribute('aria-valuetext', `version ${v} of ${lo} to ${hi}`);
    versionBox.min = String(lo);
    versionBox.max = String(hi);
    versionBox.placeholder = String(v);
    versionOut.textContent = `${v} of ${hi}`;
    prev.disabled = v <= lo;
    next.disabled = v >= hi;
    root.classList.toggle('dxe-travelling', v !== hi);
  }

  function drawHeader(): void {
    title.textContent = String(model.get('title') || model.get('uri') || 'Delta table');
    title.title = title.textContent;
    uri.textContent = String(model.get('uri') || '');
    uri.title = String(model.get('uri') || '');
    const data = model.get('overview_data') || {};
    const c = data.commit || {};
    const v = Number(model.get('version'));
    const hi = Number(model.get('max_version'));
    const parts: Array<Node | string> = [];
    if (data.version === v) {
      parts.push(badge(c.operation ?? null));
      if (c.timestamp !== undefined) {
        parts.push(h('span', { class: 'dxe-time', title: `${timestampTitle(c.timestamp)} UTC` }, `${formatValue('timestamp', c.timestamp)} (${relativeTime(c.timestamp)})`));
      }
      const who = c.user_name || c.user_id;
      if (who) parts.push(h('span', { class: 'dxe-who' }, `by ${who}`));
      if (c.engine) parts.push(h('span', { class: 'dxe-engine', title: 'engine' }, String(c.engine)));
    }
    parts.push(v === hi ? pill('ok', 'latest') : pill('warn', `time travel: ${hi - v} version${hi - v === 1 ? '' : 's'} behind the latest`));
    if (data.published_only) parts.push(pill('warn', 'catalog-managed: published commits only'));
    fill(commitLine, parts);
  }

  /** The first overview is the log's metadata alone (no file action replayed, no statistics
   * read): once it is drawn, ask the kernel for the file counts and then the row counts. */
  let askedFor: number | null = null;
  function askForRowCounts(): void {
    const data = model.get('overview_data') || {};
    if (data.version === undefined || data.complete || askedFor === data.version) return;
    const v = data.version;
    askedFor = v;
    requestAnimationFrame(() => setTimeout(() => rpc.tell('complete_overview', { version: v }), 0));
  }

  /** Once the overview is drawn, the kernel prepares the history in the background, and once
   * it is complete the next tabs (`TableView.prepare`): ask for them (the kernel sends each once
   * its job is done, never computing it on its main thread for this) so that they are
   * prerendered in idle time and a click only shows them. One round per version, widened to
   * the other tabs when the overview is complete: a round for a version left stops (the kernel
   * answers "stale" to a request for another version than its own). */
  const EARLY = ['history', 'files', 'health', 'layout', 'diff'];
  let prefetchedFor: number | null = null;
  let settled = new Set<string>();
  let asking = false;
  let tries = 0;
  let started = 0;
  function prefetch(): void {
    const data = model.get('overview_data') || {};
    const v = Number(model.get('version'));
    if (data.version !== v) return;
    if (prefetchedFor !== v) {
      prefetchedFor = v;
      settled = new Set();
      tries = 0;
      started = performance.now();
    }
    if (asking) return;
    const wanted = () => {
      const now = model.get('overview_data') || {};
      return (now.complete ? EARLY : ['history']).filter((id) => !settled.has(id));
    };
    if (!wanted().length) return;
    asking = true;
    const mine = settled;
    const ask = () => {
      const tabsWanted = wanted();
      if (Number(model.get('version')) !== v || mine !== settled || tries++ > 120 || !tabsWanted.length) {
        asking = false;
        if (Number(model.get('version')) !== v) prefetch(); // the version shown now gets its round
        return;
      }
      rpc
        .request('prefetch', { version: v, tabs: tabsWanted })
        .then((reply) => {
          const states: Record<string, string> = reply.content.states || {};
          for (const [id, state] of Object.entries(states)) {
            if (state === 'pending') continue;
            mine.add(id);
            try {
              // a diagnostic (the benchmark reads it): how long after the round began a tab was settled
              performance.measure(`dxe:prefetch-${state}:${id}`, { start: started, end: performance.now() });
            } catch {
              // diagnostic only
            }
          }
          // pending tabs are asked again; a round widened meanwhile (the overview completed) too
          if (wanted().length) setTimeout(ask, Object.values(states).includes('pending') ? 500 : 0);
          else asking = false;
        })
        .catch(() => {
          asking = false;
        });
    };
    setTimeout(ask, 0);
  }
  function prewarmHistory(): void {
    const data = model.get('history_data') || {};
    if (!tabs.has('history') && data.timeline) prewarmChart(data.timeline, TIMELINE_HEIGHT, root);
  }

  /** The Follow toggle, and the newest commits seen while following (text only). */
  function drawFollow(): void {
    const on = !!model.get('follow');
    followBtn.setAttribute('aria-pressed', on ? 'true' : 'false');
    followBtn.classList.toggle('dxe-btn-primary', on);
    const state = model.get('follow_state') || {};
    const commits: Array<Record<string, unknown>> = Array.isArray(state.commits) ? state.commits : [];
    const items: Array<Node | string> = [];
    // what the kernel confirmed: the toggle says what was asked, this line what runs
    if (on && state.running) items.push(h('span', { class: 'dxe-follow-on' }, 'following'));
    else if (on || state.running) items.push(h('span', { class: 'dxe-follow-pending' }, on ? 'starting to follow…' : 'stopping…'));
    for (const c of commits.slice(-3).reverse()) {
      const v = Number(c.version);
      const bits = [`v${v}`, String(c.operation ?? 'commit')];
      if (c.user) bits.push(`by ${String(c.user)}`);
      const files = Number(c.files_added ?? 0) - Number(c.files_removed ?? 0);
      const rows = Number(c.rows_added ?? 0) - Number(c.rows_removed ?? 0);
      bits.push(`${files >= 0 ? '+' : '−'}${formatValue('count', Math.abs(files))} files`);
      bits.push(`${rows >= 0 ? '+' : '−'}${formatValue('count', Math.abs(rows))} rows`);
      bits.push(`+${formatValue('bytes', Number(c.bytes_added ?? 0))}`);
      const link = h('button', { type: 'button', class: 'dxe-follow-commit', 'data-version': v, title: `go to version ${v}` }, bits.join(' · '));
      link.addEventListener('click', () => ctx.travel(v));
      items.push(link);
    }
    if (state.error) items.push(note(String(state.error), 'warn'));
    fill(followLine, ...items);
    followLine.hidden = items.length === 0;
  }

  function drawStatus(): void {
    const busy = String(model.get('busy') || '');
    const err = String(model.get('error') || '');
    root.classList.toggle('dxe-busy', !!busy);
    fill(
      status,
      busy ? h('span', { class: 'dxe-busy-line', role: 'status' }, h('span', { class: 'dxe-spinner', 'aria-hidden': 'true' }), busy) : null,
      err ? note(err, 'error') : null,
    );
  }

  // -- wiring ------------------------------------------------------------------------------
  const handlers: Array<[string, () => void]> = [];
  const on = (trait: string, fn: () => void) => {
    const cb = () => fn();
    model.on(`change:${trait}`, cb);
    handlers.push([`change:${trait}`, cb]);
  };
  for (const trait of ['version', 'min_version', 'max_version']) {
    on(trait, () => {
      drawVersion();
      drawHeader();
    });
  }
  on('title', drawHeader);
  on('uri', drawHeader);
  on('overview_data', () => {
    drawHeader();
    askForRowCounts();
    prefetch();
  });
  on('history_data', prewarmHistory);
  on('follow', drawFollow);
  on('follow_state', drawFollow);
  on('busy', drawStatus);
  on('error', drawStatus);
  on('tab', () => showPanel(String(model.get('tab'))));
  const traits = new Set(Object.values(TRAITS).flat());
  for (const trait of traits) {
    on(trait, () => {
      if (askedAt && TRAITS[String(model.get('tab'))]?.[0] === trait) {
        try {
          performance.measure(`dxe:data:${trait}`, { start: askedAt, end: performance.now() });
        } catch {
          // a diagnostic only
        }
        askedAt = 0;
      }
      for (const [id, names] of Object.entries(TRAITS)) {
        if (!names.includes(trait)) continue;
        const tab = tabs.get(id);
        if (tab) tab.changed(trait);
        else if (names[0] === trait) prerender(id);
      }
    });
  }

  drawVersion();
  drawHeader();
  drawStatus();
  drawFollow();
  askForRowCounts();
  prefetch();
  prewarmHistory();
  for (const id of PRERENDER) prerender(id);
  showPanel(String(model.get('tab') || 'overview'));

  return () => {
    for (const [ev, cb] of handlers) model.off(ev, cb);
    for (const t of tabs.values()) t.destroy?.();
    rpc.dispose();
  };
}
