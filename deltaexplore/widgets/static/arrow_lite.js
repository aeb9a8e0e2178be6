// arrow_lite.js: a small reader for the Arrow IPC *stream* format, enough for the tables the
// explorer sends (int8..64, uint8..64, float32/64, utf8, large_utf8, bool, null; no dictionaries,
// no compression). Kept dependency-free so the widget needs no bundler and works offline.
//
// readArrowIPC(bytes) -> { fields: [{name, type}], numRows, columns: {name: Array} }
// `bytes` may be an ArrayBuffer, a typed array or a DataView (anywidget hands over DataViews).

const MESSAGE_SCHEMA = 1;
const MESSAGE_DICTIONARY_BATCH = 2;
const MESSAGE_RECORD_BATCH = 3;
const TYPE_NULL = 1;
const TYPE_INT = 2;
const TYPE_FLOAT = 3;
const TYPE_UTF8 = 5;
const TYPE_BOOL = 6;
const TYPE_LARGE_UTF8 = 20;

function asDataView(bytes) {
  if (bytes instanceof DataView) return bytes;
  if (bytes instanceof ArrayBuffer) return new DataView(bytes);
  if (ArrayBuffer.isView(bytes)) return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new Error("readArrowIPC: expected bytes, got " + typeof bytes);
}

// -- flatbuffers: just what Message/Schema/RecordBatch need --------------------------------
class FB {
  constructor(view, base) {
    this.v = view;
    this.base = base; // start of this flatbuffer inside the view
  }
  u8(p) { return this.v.getUint8(this.base + p); }
  i16(p) { return this.v.getInt16(this.base + p, true); }
  u16(p) { return this.v.getUint16(this.base + p, true); }
  i32(p) { return this.v.getInt32(this.base + p, true); }
  u32(p) { return this.v.getUint32(this.base + p, true); }
  i64(p) { return Number(this.v.getBigInt64(this.base + p, true)); }
  root() { return this.u32(0); }
  // position of field `i` of the table at `t`, or 0 when absent
  field(t, i) {
    const vt = t - this.i32(t);
    const vtSize = this.u16(vt);
    const at = 4 + 2 * i;
    if (at >= vtSize) return 0;
    const off = this.u16(vt + at);
    return off ? t + off : 0;
  }
  deref(p) { return p + this.u32(p); }
  table(t, i) { const p = this.field(t, i); return p ? this.deref(p) : 0; }
  int(t, i, dflt, size) {
    const p = this.field(t, i);
    if (!p) return dflt;
    if (size === 1) return this.u8(p);
    if (size === 2) return this.i16(p);
    if (size === 4) return this.i32(p);
    return this.i64(p);
  }
  string(t, i) {
    const p = this.field(t, i);
    if (!p) return null;
    const s = this.deref(p);
    const n = this.u32(s);
    return utf8(new Uint8Array(this.v.buffer, this.v.byteOffset + this.base + s + 4, n));
  }
  vector(t, i) { // -> [start, length]
    const p = this.field(t, i);
    if (!p) return [0, 0];
    const s = this.deref(p);
    return [s + 4, this.u32(s)];
  }
}

const decoder = new TextDecoder("utf-8");
function utf8(u8) { return decoder.decode(u8); }

function readField(fb, f) {
  const name = fb.string(f, 0) || "";
  const typeType = fb.int(f, 2, 0, 1);
  const t = fb.table(f, 3);
  let type = { id: typeType };
  if (typeType === TYPE_INT) type = { id: typeType, bitWidth: fb.int(t, 0, 0, 4), signed: !!fb.int(t, 1, 0, 1) };
  else if (typeType === TYPE_FLOAT) type = { id: typeType, precision: fb.int(t, 0, 0, 2) };
  const [cs, cn] = fb.vector(f, 5);
  if (cn) throw new Error(`readArrowIPC: nested column ${JSON.stringify(name)} is not supported`);
  if (fb.table(f, 4)) throw new Error(`readArrowIPC: dictionary column ${JSON.stringify(name)} is not supported`);
  if (![TYPE_NULL, TYPE_INT, TYPE_FLOAT, TYPE_UTF8, TYPE_BOOL, TYPE_LARGE_UTF8].includes(typeType)) {
    throw new Error(`readArrowIPC: column ${JSON.stringify(name)} has unsupported Arrow type id ${typeType}`);
  }
  return { name, type };
}

function readSchema(fb, s) {
  const [start, n] = fb.vector(s, 1);
  const fields = [];
  for (let k = 0; k < n; k++) fields.push(readField(fb, fb.deref(start + 4 * k)));
  return fields;
}

function bit(view, pos, i) {
  return (view.getUint8(pos + (i >> 3)) >> (i & 7)) & 1;
}

function decodeColumn(view, body, field, node, bufs) {
  const n = node.length;
  const out = new Array(n);
  const [validity, ...rest] = bufs;
  const valid = (i) => node.nullCount === 0 || validity.length === 0 || bit(view, body + validity.offset, i);
  const t = field.type;
  if (t.id === TYPE_NULL) return out.fill(null);
  if (t.id === TYPE_INT) {
    const data = body + rest[0].offset;
    const w = t.bitWidth / 8;
    for (let i = 0; i < n; i++) {
      if (!valid(i)) { out[i] = null; continue; }
      const p = data + i * w;
      if (w === 1) out[i] = t.signed ? view.getInt8(p) : view.getUint8(p);
      else if (w === 2) out[i] = t.signed ? view.getInt16(p, true) : view.getUint16(p, true);
      else if (w === 4) out[i] = t.signed ? view.getInt32(p, true) : view.getUint32(p, true);
      else out[i] = Number(t.signed ? view.getBigInt64(p, true) : view.getBigUint64(p, true));
    }
  } else if (t.id === TYPE_FLOAT) {
    const data = body + rest[0].offset;
    const w = t.precision === 2 ? 8 : 4;
    if (t.precision === 0) throw new Error(`readArrowIPC: half floats (${field.name}) are not supported`);
    for (let i = 0; i < n; i++) {
      out[i] = valid(i) ? (w === 8 ? view.getFloat64(data + 8 * i, true) : view.getFloat32(data + 4 * i, true)) : null;
    }
  } else if (t.id === TYPE_BOOL) {
    const data = body + rest[0].offset;
    for (let i = 0; i < n; i++) out[i] = valid(i) ? !!bit(view, data, i) : null;
  } else {
    const large = t.id === TYPE_LARGE_UTF8;
    const offs = body + rest[0].offset;
    const data = body + rest[1].offset;
    const at = (i) => (large ? Number(view.getBigInt64(offs + 8 * i, true)) : view.getInt32(offs + 4 * i, true));
    for (let i = 0; i < n; i++) {
      if (!valid(i)) { out[i] = null; continue; }
      const a = at(i);
      const b = at(i + 1);
      out[i] = utf8(new Uint8Array(view.buffer, view.byteOffset + data + a, b - a));
    }
  }
  return out;
}

function buffersPerField(field) {
  const id = field.type.id;
  if (id === TYPE_NULL) return 0;
  return id === TYPE_UTF8 || id === TYPE_LARGE_UTF8 ? 3 : 2;
}

/**
 * Decode an Arrow IPC stream.
 * @param {ArrayBuffer|ArrayBufferView|DataView} bytes
 * @returns {{fields: {name: string, type: object}[], numRows: number, columns: Object<string, any[]>}}
 */
export function readArrowIPC(bytes) {
  const view = asDataView(bytes);
  let pos = 0;
  let fields = null;
  const columns = {};
  let numRows = 0;
  while (pos + 8 <= view.byteLength) {
    let len = view.getInt32(pos, true);
    pos += 4;
    if (len === -1) { len = view.getInt32(pos, true); pos += 4; } // continuation marker
    if (len === 0) break; // end of stream
    const fb = new FB(view, pos);
    const msg = fb.root();
    const headerType = fb.int(msg, 1, 0, 1);
    const header = fb.table(msg, 2);
    const bodyLength = fb.int(msg, 3, 0, 8);
    const body = pos + len;
    if (headerType === MESSAGE_SCHEMA) {
      fields = readSchema(fb, header);
      for (const f of fields) columns[f.name] = [];
    } else if (headerType === MESSAGE_RECORD_BATCH) {
      if (!fields) throw new Error("readArrowIPC: record batch before schema");
      if (fb.table(header, 3)) throw new Error("readArrowIPC: compressed batches are not supported");
      const length = fb.int(header, 0, 0, 8);
      const [ns] = fb.vector(header, 1);
      const [bs] = fb.vector(header, 2);
      let b = 0;
      fields.forEach((f, k) => {
        const node = { length: fb.i64(ns + 16 * k), nullCount: fb.i64(ns + 16 * k + 8) };
        const nb = buffersPerField(f);
        const bufs = [];
        for (let j = 0; j < nb; j++, b++) bufs.push({ offset: fb.i64(bs + 16 * b), length: fb.i64(bs + 16 * b + 8) });
        const values = decodeColumn(view, body, f, node, bufs);
        const col = columns[f.name];
        for (let i = 0; i < values.length; i++) col.push(values[i]);
      });
      numRows += length;
    } else if (headerType === MESSAGE_DICTIONARY_BATCH) {
      throw new Error("readArrowIPC: dictionary batches are not supported");
    }
    pos = body + bodyLength;
  }
  return { fields: fields || [], numRows, columns };
}

/** Rows of a decoded table as plain objects (for small pages). */
export function toRows(table) {
  const rows = [];
  for (let i = 0; i < table.numRows; i++) {
    const r = {};
    for (const f of table.fields) r[f.name] = table.columns[f.name][i];
    rows.push(r);
  }
  return rows;
}
