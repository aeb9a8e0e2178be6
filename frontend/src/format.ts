// Display units, the browser half of `deltaexplore/inspect/formatting.py`: the same rules give
// the same text (tests/widgets/test_frontend.py runs both on formatting.SAMPLES).
//
//   bytes 1.5 KiB · count 1,234,567 · version 42 · timestamp 2024-01-01 10:00:00 (local)
//   duration_ms 850 ms / 12.3 s / 4 min 05 s / 2 h 03 min / 3 d 4 h · ratio 12.5% · number 3.14
//   bool yes/no · status, path, operation, text as is · json k=v, k2=v2 · null ''

export const UNITS = [
  'bytes',
  'count',
  'version',
  'timestamp',
  'duration_ms',
  'ratio',
  'number',
  'bool',
  'status',
  'path',
  'json',
  'operation',
  'text',
] as const;
export type Unit = (typeof UNITS)[number];

export interface FormatOptions {
  /** 'UTC' for UTC times; anything else: the browser's local zone */
  tz?: 'UTC' | 'local';
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

function isNumber(v: unknown): v is number {
  return typeof v === 'number';
}

/** `x.toFixed(d)` rounding exact ties to even, as Python's format does. */
export function fixed(x: number, d: number): string {
  // toFixed rounds the exact binary value, as Python does, except at an exact tie (x is
  // k + 0.5 units of the last digit exactly), which it rounds up where Python rounds to even
  let out = x.toFixed(d);
  if (Number.isFinite(x) && Math.abs(x) < 1e15) {
    const exact = Math.abs(x).toFixed(Math.min(100, d + 40));
    const frac = exact.slice(exact.indexOf('.') + 1);
    if (frac[d] === '5' && /^0*$/.test(frac.slice(d + 1))) {
      const kept = exact.slice(0, exact.indexOf('.') + (d ? d + 1 : 0));
      const lastDigit = Number(kept.replace('.', '').slice(-1));
      const down = lastDigit % 2 === 0;
      const magnitude = down ? Number(kept) : Number(kept) + 10 ** -d;
      out = `${x < 0 ? '-' : ''}${magnitude.toFixed(d)}`;
    }
  }
  return /^-0(\.0*)?$/.test(out) ? out.slice(1) : out;
}

function group(intText: string): string {
  const neg = intText.startsWith('-');
  const digits = neg ? intText.slice(1) : intText;
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return neg ? `-${grouped}` : grouped;
}

/** `1234.5` with `d` decimals and thousands separators: `1,234.5`. */
function groupedFixed(x: number, d: number): string {
  const text = fixed(x, d);
  const [i, f] = text.split('.');
  return f === undefined ? group(i) : `${group(i)}.${f}`;
}

function nonFinite(v: number): string {
  return Number.isNaN(v) ? 'NaN' : v > 0 ? '∞' : '-∞';
}

export function humanBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '?';
  let value = Number(n);
  for (const unit of BYTE_UNITS) {
    if (Math.abs(value) < 1024 || unit === 'PiB') return unit === 'B' ? `${fixed(value, 0)} B` : `${fixed(value, 1)} ${unit}`;
    value /= 1024;
  }
  return `${n} B`;
}

export function humanCount(n: number | null | undefined): string {
  if (n === null || n === undefined) return '?';
  if (!Number.isFinite(n)) return nonFinite(n);
  if (!Number.isInteger(n)) return groupedFixed(n, 1);
  return group(String(Math.trunc(n)));
}

export function humanNumber(n: number | null | undefined): string {
  if (n === null || n === undefined) return '?';
  if (!Number.isFinite(n)) return nonFinite(n);
  if (Number.isInteger(n)) return group(String(n));
  return humanFloat(n);
}

/** A floating-point value with the decimals `humanNumber` gives a fraction, also when it
 * happens to be whole (a float column reads 1.00 next to 0.40, not 1). */
export function humanFloat(n: number | null | undefined): string {
  if (n === null || n === undefined) return '?';
  if (!Number.isFinite(n)) return nonFinite(n);
  if (Math.abs(n) >= 1000) return groupedFixed(n, 0);
  if (Math.abs(n) >= 100) return fixed(n, 1);
  return fixed(n, 2);
}

export function humanRatio(r: number | null | undefined): string {
  if (r === null || r === undefined) return '?';
  if (!Number.isFinite(r)) return nonFinite(r);
  return `${fixed(r * 100, 1)}%`;
}

export function humanDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '?';
  if (!Number.isFinite(ms)) return nonFinite(ms);
  const sign = ms < 0 ? '-' : '';
  const value = Math.abs(ms);
  if (value < 1000) return `${sign}${fixed(value, 0)} ms`;
  const seconds = value / 1000;
  if (seconds < 60) return `${sign}${fixed(seconds, 1)} s`;
  const whole = Math.floor(seconds);
  const pad = (x: number) => String(x).padStart(2, '0');
  if (whole < 3600) return `${sign}${Math.floor(whole / 60)} min ${pad(whole % 60)} s`;
  if (whole < 86400) return `${sign}${Math.floor(whole / 3600)} h ${pad(Math.floor((whole % 3600) / 60))} min`;
  return `${sign}${Math.floor(whole / 86400)} d ${Math.floor((whole % 86400) / 3600)} h`;
}

/** Epoch ms from a number, a Date or ISO text (naive text is UTC); null when it is not a time. */
export function toMillis(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'string') {
    const iso = /[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value.replace(' ', 'T')}Z`;
    const t = Date.parse(iso);
    return Number.isNaN(t) ? null : t;
  }
  return null;
}

export function humanTimestamp(value: unknown, opts: FormatOptions = {}): string {
  if (value === null || value === undefined) return '?';
  const ms = toMillis(value);
  if (ms === null) return String(value);
  const d = new Date(ms);
  const utc = opts.tz === 'UTC';
  const p2 = (x: number) => String(x).padStart(2, '0');
  const parts = utc
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds(), d.getMilliseconds()];
  let text = `${String(parts[0]).padStart(4, '0')}-${p2(parts[1])}-${p2(parts[2])} ${p2(parts[3])}:${p2(parts[4])}:${p2(parts[5])}`;
  if (parts[6]) text += `.${String(parts[6]).padStart(3, '0')}`;
  return text;
}

/** The exact UTC time for a title: `2024-01-01T10:00:00.000Z`. */
export function timestampTitle(value: unknown): string {
  const ms = toMillis(value);
  if (ms === null) return value === null || value === undefined ? '' : String(value);
  return new Date(ms).toISOString();
}

/** "3 h ago", "in 2 min", "just now" (relative to `now`). */
export function relativeTime(value: unknown, now: number = Date.now()): string {
  const ms = toMillis(value);
  if (ms === null) return '';
  const diff = now - ms;
  const abs = Math.abs(diff);
  const steps: Array<[number, string]> = [
    [365 * 86400000, 'year'],
    [30 * 86400000, 'month'],
    [7 * 86400000, 'week'],
    [86400000, 'day'],
    [3600000, 'h'],
    [60000, 'min'],
  ];
  for (const [size, name] of steps) {
    if (abs >= size) {
      const n = Math.floor(abs / size);
      const label = name.length > 3 ? `${n} ${name}${n > 1 ? 's' : ''}` : `${n} ${name}`;
      return diff >= 0 ? `${label} ago` : `in ${label}`;
    }
  }
  return 'just now';
}

/** Python's `json.dumps(v, separators=(",", ":"))`: compact, non-ASCII escaped. */
function pyJson(v: unknown): string {
  const text = JSON.stringify(v) ?? 'null';
  return text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Key/value pairs of a JSON object text, an object or a list of pairs; null otherwise. */
export function jsonItems(value: unknown): Array<[string, string]> | null {
  if (value === null || value === undefined) return null;
  let v: unknown = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  let pairs: Array<[unknown, unknown]>;
  if (Array.isArray(v)) {
    if (!v.every((p) => Array.isArray(p) && p.length === 2)) return null;
    pairs = v.map((p) => [p[0], p[1]] as [unknown, unknown]);
  } else if (v !== null && typeof v === 'object') {
    pairs = Object.entries(v as Record<string, unknown>);
  } else {
    return null;
  }
  return pairs.map(([k, x]) => [String(k), typeof x === 'string' ? x : pyJson(x)]);
}

/** `value` as text for `unit` (null -> ''); numbers given to a text unit show as numbers. */
export function formatValue(unit: string | null | undefined, value: unknown, opts: FormatOptions = {}): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'bigint') value = Number(value);
  if (unit === 'bytes' && isNumber(value)) return humanBytes(value);
  if (unit === 'count' && isNumber(value)) return humanCount(value);
  if (unit === 'version' && isNumber(value)) return String(Math.trunc(value));
  if (unit === 'timestamp') return humanTimestamp(value, opts);
  if (unit === 'duration_ms' && isNumber(value)) return humanDuration(value);
  if (unit === 'ratio' && isNumber(value)) return humanRatio(value);
  if (unit === 'bool' || typeof value === 'boolean') return value ? 'yes' : 'no';
  if (unit === 'json' || (typeof value === 'object' && !(value instanceof Date))) {
    const items = jsonItems(value);
    if (items !== null) return items.map(([k, v]) => `${k}=${v}`).join(', ');
    if (Array.isArray(value)) return value.map((v) => formatValue(null, v, opts)).join(', ');
    return String(value);
  }
  if (isNumber(value)) return humanNumber(value);
  if (value instanceof Date) return humanTimestamp(value, opts);
  return String(value);
}

const METRIC_UNITS: Record<string, Unit> = {
  bytes: 'bytes',
  ratio: 'ratio',
  version: 'version',
  timestamp: 'timestamp',
  ms: 'duration_ms',
  duration_ms: 'duration_ms',
};

/** The display unit of a metrics row's `unit` word (files, rows, ... count things). */
export function metricUnit(word: string | null | undefined): Unit {
  if (!word) return 'number';
  return METRIC_UNITS[word] ?? 'count';
}

/** ok | info | warn | error for a status word, else null. */
export function statusLevel(value: unknown): 'ok' | 'info' | 'warn' | 'error' | null {
  if (value === null || value === undefined) return null;
  const levels: Record<string, 'ok' | 'info' | 'warn' | 'error'> = {
    ok: 'ok',
    info: 'info',
    warn: 'warn',
    warning: 'warn',
    error: 'error',
    failed: 'error',
    fail: 'error',
  };
  return levels[String(value).trim().toLowerCase()] ?? null;
}

/** `text` with its middle replaced by … to fit `max` characters (the file name end is kept). */
export function truncateMiddle(text: string, max = 60): string {
  if (text.length <= max) return text;
  const keep = Math.max(max - 1, 2);
  const head = Math.floor(keep / 2);
  const tail = keep - head;
  return `${text.slice(0, head)}…${text.slice(text.length - tail)}`;
}

/** Signed: `+1,234` / `-12` for counts, `+1.5 KiB` for bytes (deltas in diff cards). */
export function signed(unit: 'count' | 'bytes', n: number | null | undefined): string {
  if (n === null || n === undefined) return '?';
  const text = unit === 'bytes' ? humanBytes(Math.abs(n)) : humanCount(Math.abs(n));
  return n > 0 ? `+${text}` : n < 0 ? `−${text}` : text;
}

/** Units of `humanCompact`: thousand, million, billion, trillion, quadrillion. */
const COMPACT_UNITS = ['K', 'M', 'B', 'T', 'Q'];

function fixed3(x: number): string {
  const a = Math.abs(x);
  return a < 10 ? fixed(x, 2) : a < 100 ? fixed(x, 1) : fixed(x, 0);
}

/** A count in three significant digits and a unit when it has five digits or more
 * (`4,775,210` -> `4.78 M`), exact below 10,000: for a column too narrow for the exact value,
 * which then goes in the title and the exports (as `human_compact` in Python). */
export function humanCompact(n: number | null | undefined): string {
  if (n === null || n === undefined) return '?';
  if (!Number.isFinite(n)) return nonFinite(n);
  if (Math.abs(n) < 10_000) return humanCount(n);
  let scaled = n;
  let k = -1;
  while (k < COMPACT_UNITS.length - 1 && (k < 0 || Math.abs(Number(fixed3(scaled))) >= 1000)) {
    scaled /= 1000;
    k += 1;
  }
  return `${fixed3(scaled)} ${COMPACT_UNITS[k]}`;
}

/** `noun` (singular; of a phrase, its first word) for `n` things: `file` for 1, else `files`
 * (-y -> -ies; -s, -x, -ch, -sh -> -es), as `plural` in Python. */
export function plural(noun: string, n: number): string {
  if (n === 1) return noun;
  const space = noun.indexOf(' ');
  let word = space < 0 ? noun : noun.slice(0, space);
  const rest = space < 0 ? '' : noun.slice(space);
  if (/[^aeiou]y$/.test(word)) word = `${word.slice(0, -1)}ies`;
  else if (/(s|x|ch|sh)$/.test(word)) word = `${word}es`;
  else word = `${word}s`;
  return word + rest;
}

/** `1 file`, `1,000,200 files` (as `count_noun` in Python). */
export function countNoun(n: number | null | undefined, noun: string): string {
  return `${humanCount(n)} ${plural(noun, n ?? 0)}`;
}

const UUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/;

/** A data file's path shortened to what tells it apart: its partition directories and its name
 * up to the first 8 characters of the UUID in it (`date=2024-01-01/part-00002-3f2a8c1e…`);
 * other directories become `…/` (as `short_path` in Python). The whole path goes in a title. */
export function shortPath(path: string): string {
  const parts = path.split('/');
  let name = parts[parts.length - 1];
  const dirs = parts.slice(0, -1);
  const kept = dirs.filter((d) => d.includes('='));
  const head = kept.length < dirs.filter((d) => d).length ? '…/' : '';
  const m = UUID.exec(name);
  if (m) name = `${name.slice(0, m.index)}${m[0].slice(0, 8)}…`;
  return head + kept.map((d) => `${d}/`).join('') + name;
}
