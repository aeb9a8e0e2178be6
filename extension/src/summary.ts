/**
 * A DOM card for a Delta table summary. Every string from the table is set with textContent.
 */
import { ITableSummary } from './tokens';

function el(tag: string, className: string | null, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function humanBytes(n: number): string {
  let v = n;
  for (const unit of ['B', 'KiB', 'MiB', 'GiB', 'TiB']) {
    if (Math.abs(v) < 1024 || unit === 'TiB') {
      return unit === 'B' ? `${v.toFixed(0)} B` : `${v.toFixed(1)} ${unit}`;
    }
    v /= 1024;
  }
  return `${n} B`;
}

/** Render `summary` into `host` (replacing its content). */
export function renderSummary(host: HTMLElement, summary: ITableSummary): void {
  const card = el('section', 'dx-summary');
  card.setAttribute('aria-label', 'Delta table summary');
  card.appendChild(el('h3', 'dx-summary-title', `Delta table ${summary.name || summary.uri}`));
  card.appendChild(el('div', 'dx-summary-uri', summary.uri));
  const dl = el('dl', 'dx-summary-facts');
  const facts: [string, string][] = [
    ['version', `${summary.version} (${summary.timestamp})`],
    ['protocol', `reader v${summary.protocol.reader}, writer v${summary.protocol.writer}`],
    ['partitioned by', summary.partition_columns.join(', ') || 'not partitioned'],
    ['files', `${summary.num_files.toLocaleString('en-US')} (${humanBytes(summary.size_bytes)})`]
  ];
  for (const [k, v] of facts) {
    dl.appendChild(el('dt', null, k));
    dl.appendChild(el('dd', null, v));
  }
  card.appendChild(dl);
  const table = el('table', 'dx-summary-columns');
  table.setAttribute('aria-label', 'columns');
  const head = el('tr', null);
  head.appendChild(el('th', null, 'column'));
  head.appendChild(el('th', null, 'type'));
  table.appendChild(head);
  for (const c of summary.columns) {
    const row = el('tr', null);
    row.appendChild(el('td', null, c.name));
    row.appendChild(el('td', null, c.type));
    table.appendChild(row);
  }
  card.appendChild(table);
  card.appendChild(el('p', 'dx-summary-hint', 'Run the cell again for the interactive explorer.'));
  host.replaceChildren(card);
}
