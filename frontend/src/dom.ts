// DOM helpers. Everything from a table reaches the page as text: `h` sets attributes with
// setAttribute and children with text nodes; nothing here (or anywhere in the explorer) assigns
// HTML markup from a string.

export type Child = Node | string | number | null | undefined | false | Child[];
type Listener = (event: any) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Listener>;

export function append(el: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, ...c);
    else el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** An element with attributes (`on*` become listeners, `class` the class list) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
    else if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, ...children);
  return el;
}

/** Replace the children of `el` (in place: `el` itself, and its focus position, stay). */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, ...children);
}

let uid = 0;
/** A document-unique id for label/control pairs. */
export function nextId(prefix: string): string {
  uid += 1;
  return `dxe-${prefix}-${uid}`;
}

/** A status pill: ok | info | warn | error (anything else shows as info). */
export function pill(status: string | null | undefined, text?: string): HTMLElement {
  const s = ['ok', 'info', 'warn', 'error'].includes(String(status)) ? String(status) : 'info';
  const label = text ?? (s === 'ok' ? 'ok' : s === 'warn' ? 'warning' : s);
  return h('span', { class: `dxe-pill dxe-pill-${s}` }, label);
}

const OP_KINDS: Array<[RegExp, string]> = [
  [/^(WRITE|CREATE|CREATE TABLE|CREATE OR REPLACE TABLE|REPLACE TABLE|STREAMING UPDATE|COPY INTO|APPEND|CONVERT)/i, 'write'],
  [/^(MERGE|UPDATE|DELETE|TRUNCATE|RESTORE)/i, 'change'],
  [/^(OPTIMIZE|VACUUM|REORG|ZORDER|CLUSTER|CHECKPOINT|COMPUTE STATS|PURGE)/i, 'maintain'],
  [/^(SET TBLPROPERTIES|UNSET TBLPROPERTIES|ADD COLUMNS|CHANGE COLUMN|RENAME COLUMN|DROP COLUMNS|ALTER|UPGRADE PROTOCOL|ADD CONSTRAINT|DROP CONSTRAINT|ADD FEATURE|DROP FEATURE)/i, 'schema'],
];

/** The family of an operation name (write, change, maintain, schema, other): the badge colour. */
export function operationKind(op: string | null | undefined): string {
  const s = String(op || '');
  for (const [re, kind] of OP_KINDS) if (re.test(s)) return kind;
  return 'other';
}

/** An operation badge (WRITE, MERGE, OPTIMIZE, ...). */
export function badge(op: string | null | undefined): HTMLElement {
  const text = op ? String(op) : '(no commitInfo)';
  return h('span', { class: `dxe-badge dxe-op-${operationKind(op)}`, title: text }, text);
}

/** Copy `text` to the clipboard; resolves false when the page may not (no secure context). */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection-based copy
  }
  const area = h('textarea', { class: 'dxe-offscreen', 'aria-hidden': 'true', readonly: true });
  area.value = text;
  document.body.appendChild(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}

const SVG = 'http://www.w3.org/2000/svg';

/** A small inline SVG icon (copy, check, cross) drawn with strokes in the current colour. */
export function icon(name: 'copy' | 'check' | 'cross'): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('width', '13');
  svg.setAttribute('height', '13');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'dxe-icon');
  const paths: Record<string, string[]> = {
    copy: ['M5.5 5.5h7v8h-7z', 'M3.5 10.5v-8h7'],
    check: ['M3 8.5l3 3 7-7'],
    cross: ['M4 4l8 8', 'M12 4l-8 8'],
  };
  for (const d of paths[name]) {
    const p = document.createElementNS(SVG, 'path');
    p.setAttribute('d', d);
    p.setAttribute('fill', 'none');
    p.setAttribute('stroke', 'currentColor');
    p.setAttribute('stroke-width', '1.4');
    p.setAttribute('stroke-linejoin', 'round');
    svg.appendChild(p);
  }
  return svg;
}

/** A small "copy" button for `text`; `label` names it for screen readers. */
export function copyButton(text: string | (() => string), label: string): HTMLButtonElement {
  const btn = h('button', { type: 'button', class: 'dxe-icon-btn dxe-copy', title: label, 'aria-label': label }, icon('copy'));
  btn.addEventListener('click', async (ev: Event) => {
    ev.stopPropagation();
    const ok = await copyText(typeof text === 'function' ? text() : text);
    btn.classList.add(ok ? 'dxe-copied' : 'dxe-copy-failed');
    btn.replaceChildren(icon(ok ? 'check' : 'cross'));
    setTimeout(() => {
      btn.classList.remove('dxe-copied', 'dxe-copy-failed');
      btn.replaceChildren(icon('copy'));
    }, 1200);
  });
  return btn;
}

/** A metric card: a label, a big value, an optional line under it and a status. */
export function card(label: string, value: Child, sub?: Child, status?: string | null, title?: string): HTMLElement {
  const line = sub !== undefined && sub !== null && sub !== '' ? h('div', { class: 'dxe-card-sub' }, sub) : null;
  if (line) {
    // past three lines the text is cut: then it opens (and closes) on a click or Enter
    const toggle = () => {
      if (!line.hasAttribute('aria-expanded')) return;
      line.setAttribute('aria-expanded', line.getAttribute('aria-expanded') === 'true' ? 'false' : 'true');
    };
    line.addEventListener('click', toggle);
    line.addEventListener('keydown', (ev: KeyboardEvent) => {
      if (ev.key === 'Enter' || ev.key === ' ') {
        ev.preventDefault();
        toggle();
      }
    });
    clamped.observe(line);
  }
  return h(
    'div',
    { class: `dxe-card${status ? ` dxe-card-${status}` : ''}`, role: 'group', 'aria-label': label, title: title ?? null },
    h('div', { class: 'dxe-card-label' }, label),
    h('div', { class: 'dxe-card-value' }, value),
    line,
  );
}

/** Card lines cut at three lines become buttons that open them (and lines that fit stop being). */
const clamped = new ResizeObserver((entries) => {
  for (const { target } of entries) {
    const el = target as HTMLElement;
    if (!el.isConnected) {
      clamped.unobserve(el); // a card replaced: observed no more
      continue;
    }
    if (el.getAttribute('aria-expanded') === 'true') continue;
    if (el.scrollHeight > el.clientHeight + 1) {
      el.setAttribute('aria-expanded', 'false');
      el.setAttribute('role', 'button');
      el.tabIndex = 0;
      el.title = 'show all of it';
    } else if (el.hasAttribute('aria-expanded')) {
      el.removeAttribute('aria-expanded');
      el.removeAttribute('role');
      el.removeAttribute('tabindex');
      el.removeAttribute('title');
    }
  }
});

/** A titled section whose body is filled later (`body`), with optional tools on the right. */
export function section(title: string, ...tools: Child[]): { el: HTMLElement; body: HTMLElement; head: HTMLElement } {
  const body = h('div', { class: 'dxe-section-body' });
  const head = h('div', { class: 'dxe-section-head' }, h('h3', { class: 'dxe-section-title' }, title), h('div', { class: 'dxe-tools' }, tools));
  const el = h('section', { class: 'dxe-section', 'aria-label': title }, head, body);
  return { el, body, head };
}

/** A message line: empty states, hints, errors (role alert for errors). */
export function note(text: Child, kind: 'hint' | 'empty' | 'error' | 'warn' | 'loading' = 'hint'): HTMLElement {
  return h('p', { class: `dxe-note dxe-note-${kind}`, role: kind === 'error' ? 'alert' : null }, text);
}

/** Which engine computed a tab and why (the tab data's `engine`): a line when it is not the
 * replayed state (a streaming pass over the log, or Spark jobs), nothing otherwise. */
export function engineNote(engine: { name?: string; reason?: string } | null | undefined): HTMLElement | null {
  if (!engine || !engine.name || engine.name === 'local') return null;
  const label = engine.name === 'spark' ? 'Computed as Spark jobs' : engine.name === 'streaming' ? 'Computed in one streaming pass' : `Computed by ${engine.name}`;
  const el = note(`${label}: ${engine.reason || ''}`, 'hint');
  el.classList.add('dxe-engine');
  el.setAttribute('data-engine', engine.name);
  return el;
}

/** Key/value pairs as a definition list. */
export function kv(pairs: Array<[string, Child]>): HTMLElement {
  return h(
    'dl',
    { class: 'dxe-kv' },
    pairs.flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v === null || v === undefined || v === '' ? '–' : v)]),
  );
}

/** Keep keyboard events from reaching the notebook's shortcut handling (see app.ts). */
export function isTextInput(el: EventTarget | null): boolean {
  if (!(el instanceof HTMLElement)) return false;
  return el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName);
}

// -- one heavy job per task -------------------------------------------------------------------
// Compiling a chart, drawing it, building a grid: each can take tens of milliseconds. Run
// back to back they make one long task that freezes the page (and the notebook around it);
// queued here, each runs in its own task, so the page stays responsive in between.
// The user first: a job for what is shown (or of no element) runs before the jobs of tabs built
// ahead in hidden panels (`dxe-prerender`): a click on a tab whose grid or chart is still to be
// made no longer waits behind another hidden tab's chart (a 60-150 ms draw) queued before it.
interface Job {
  run: () => void | Promise<void>;
  el?: Element;
}
const jobs: Job[] = [];
let running = false;
const ahead = (job: Job): boolean => !!job.el && job.el.closest('.dxe-prerender') !== null;

function nextTask(): Promise<void> {
  // after a frame: the browser styles and lays out what the last job built in a task of its
  // own, not inside the next job (a chart reading its container's width would force that
  // layout of the whole notebook inside its draw); without frames (a hidden tab) after 50 ms
  return new Promise((resolve) => {
    let done = false;
    const go = () => {
      if (done) return;
      done = true;
      setTimeout(resolve, 0);
    };
    requestAnimationFrame(go);
    setTimeout(go, 50);
  });
}

async function drain(): Promise<void> {
  running = true;
  while (jobs.length) {
    const first = jobs.findIndex((j) => !ahead(j));
    const [job] = jobs.splice(first >= 0 ? first : 0, 1);
    try {
      await job.run();
    } catch (err) {
      console.warn('deltaexplore: a view update failed', err);
    }
    await nextTask();
  }
  running = false;
}

/** Run `job` in a task of its own, after the jobs queued before it; `el`: what it draws (its
 * job waits for what is shown while it is in a tab built ahead). */
export function later(job: () => void | Promise<void>, el?: Element): void {
  jobs.push({ run: job, el });
  if (!running) void nextTask().then(drain);
}

/** Run `job` when the page is idle (requestIdleCallback, at most `timeout` ms later). */
export function idle(job: () => void, timeout = 5000): void {
  const ric = (window as any).requestIdleCallback as ((cb: () => void, o?: { timeout: number }) => void) | undefined;
  if (ric) ric(job, { timeout });
  else setTimeout(job, 50);
}

/** `performance.measure` of a piece of work (the benchmark reads them; cheap otherwise). */
export function measure<T>(name: string, fn: () => T): T {
  const start = performance.now();
  try {
    return fn();
  } finally {
    try {
      performance.measure(`dxe:${name}`, { start, end: performance.now() });
    } catch {
      // measures are a diagnostic: never fail the view for one
    }
  }
}
