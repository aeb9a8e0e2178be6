// The History tab's "Protocol by version": the versions whose commit changed the protocol
// (`inspect.features(all_versions=True)`, rows with a change), features added and dropped, and
// whether deltaexplore reads that version (with checkpointProtection the protocol can go down).
import { decode } from '../arrow';
import type { Ctx } from '../context';
import { fill, h, note, pill, section } from '../dom';

function list(value: unknown): string[] {
  if (typeof value === 'string') {
    try {
      return list(JSON.parse(value));  // list columns travel as JSON text (arrow_ipc)
    } catch {
      return [value];
    }
  }
  if (Array.isArray(value)) return value.map(String);
  if (value && typeof (value as { toArray?: () => unknown[] }).toArray === 'function') {
    return Array.from((value as { toArray: () => unknown[] }).toArray()).map(String);
  }
  return [];
}

export function protocolSection(ctx: Ctx): { el: HTMLElement; draw(data: Record<string, unknown>): void } {
  const part = section('Protocol by version');
  return {
    el: part.el,
    draw(data) {
      const rows = decode(data.protocol as never)?.rows ?? [];
      if (!rows.length) {
        fill(part.body, note(String(data.protocol_note || 'No protocol change in the retained log.'), 'empty'));
        return;
      }
      fill(
        part.body,
        h(
          'ul',
          { class: 'dxe-feature-list', 'aria-label': 'protocol changes by version' },
          rows.map((r) => {
            const v = Number(r.version);
            const changes = [...list(r.added).map((f) => `+${f}`), ...list(r.removed).map((f) => `−${f}`)];
            const go = h('button', { type: 'button', class: 'dxe-btn dxe-btn-small', title: `show version ${v}` }, `v${v}`);
            go.addEventListener('click', () => ctx.travel(v));
            return h(
              'li',
              { class: 'dxe-feature' },
              h('span', { class: 'dxe-feature-name' }, go, ` ${String(r.change)} · reader ${r.min_reader_version} / writer ${r.min_writer_version}`),
              h('span', { class: 'dxe-feature-kind' }, changes.join(' ') || 'no feature changed'),
              h('span', { class: 'dxe-feature-state' }, r.readable ? pill('ok', 'readable') : pill('error', `not read by deltaexplore: ${list(r.blockers).join(', ')}`)),
            );
          }),
        ),
      );
    },
  };
}
