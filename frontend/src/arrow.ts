// Arrow IPC buffers from the kernel, decoded with Apache Arrow's JS library into rows the
// grids and cards use. Columns keep their field metadata: `unit` (the display contract) and
// `doc` (shown as the column header's tooltip).
import { tableFromIPC, tableToIPC, type Table } from 'apache-arrow';

export interface FieldInfo {
  name: string;
  unit: string;
  doc: string;
  type: string;
  /** a column of partition values: the partition column's name (rows from the kernel) */
  partition_column?: string;
}

export type Row = Record<string, unknown>;

export interface Rows {
  fields: FieldInfo[];
  rows: Row[];
  table: Table;
}

function bytesOf(data: unknown): Uint8Array | null {
  if (!data) return null;
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return null;
}

function unitOf(typeName: string, declared: string | undefined): string {
  if (declared) return declared;
  if (/^Timestamp/.test(typeName)) return 'timestamp';
  if (typeName === 'Bool') return 'bool';
  if (/^U?Int/.test(typeName)) return 'count';
  if (/^Float|^Decimal/.test(typeName)) return 'number';
  return 'text';
}

/** A JS value for a cell: 64-bit integers as numbers, times as epoch ms. */
export function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return v.getTime();
  return v;
}

/** Decode one Arrow IPC stream (null for an empty or missing buffer). */
export function decode(data: unknown): Rows | null {
  const bytes = bytesOf(data);
  if (!bytes || bytes.byteLength === 0) return null;
  const table = tableFromIPC(bytes);
  const fields = table.schema.fields.map((f) => {
    const typeName = String(f.type);
    return {
      name: f.name,
      unit: unitOf(typeName, f.metadata.get('unit')),
      doc: f.metadata.get('doc') || '',
      type: typeName,
    };
  });
  const columns = fields.map((f) => table.getChild(f.name));
  const rows: Row[] = new Array(table.numRows);
  for (let i = 0; i < table.numRows; i++) {
    const row: Row = {};
    for (let j = 0; j < fields.length; j++) row[fields[j].name] = plain(columns[j]?.get(i) ?? null);
    rows[i] = row;
  }
  return { fields, rows, table };
}

/** The rows as an Arrow IPC file (the "Arrow" export of a grid whose rows are in the browser). */
export function toArrowFile(table: Table): Uint8Array {
  return tableToIPC(table, 'file');
}
