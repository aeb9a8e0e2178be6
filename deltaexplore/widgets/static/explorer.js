// explorer.js: the browser half of the deltaexplore explorer (anywidget ES module).
//
// Every string from the table (paths, names, users, columns, properties) is put on the page with
// textContent / createTextNode, never as HTML. Rows arrive as Arrow IPC buffers (readArrowIPC,
// defined by arrow_lite.js, which the Python side prepends to this module).

const TABS = [
  ["overview", "Overview"],
  ["history", "History"],
  ["files", "Files"],
  ["layout", "Layout"],
  ["dv", "Deletion vectors"],
  ["diff", "Diff"],
  ["health", "Log health"],
  ["maintenance", "Maintenance"],
];

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  let v = Number(n);
  for (const u of ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]) {
    if (Math.abs(v) < 1024 || u === "PiB") return u === "B" ? `${v.toFixed(0)} B` : `${v.toFixed(1)} ${u}`;
    v /= 1024;
  }
  return String(n);
}

function num(n) {
  if (n === null || n === undefined) return "–";
  if (typeof n === "number" && !Number.isInteger(n)) return n.toFixed(3);
  return Number(n).toLocaleString("en-US");
}

function decode(model, name) {
  const v = model.get(name);
  if (!v || (v.byteLength !== undefined && v.byteLength === 0)) return null;
  return readArrowIPC(v);
}

function kv(pairs) {
  return h("dl", { class: "dx-kv" }, pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v === null || v === undefined ? "–" : v)]));
}

const FORMATS = {
  size: bytes, bytes: bytes, bytes_added: bytes, bytes_removed: bytes, dv_bytes: bytes,
  deleted_ratio: (x) => (x === null ? "–" : `${(100 * x).toFixed(1)}%`),
};

function table(decoded, columns, opts = {}) {
  if (!decoded || decoded.numRows === 0) return h("p", { class: "dx-empty" }, opts.empty || "Nothing to show.");
  const cols = columns || decoded.fields.map((f) => f.name);
  const head = h("tr", {}, cols.map((c) => h("th", { scope: "col" }, c)));
  const rows = [];
  const n = Math.min(decoded.numRows, opts.max || decoded.numRows);
  for (let i = 0; i < n; i++) {
    const tr = h("tr", {}, cols.map((c) => {
      const v = decoded.columns[c][i];
      const f = FORMATS[c];
      const cls = typeof v === "number" ? "dx-num" : c === "path" || c.endsWith("_path") ? "dx-path" : null;
      return h("td", { class: cls }, f ? f(v) : v === null ? "–" : typeof v === "number" ? num(v) : v);
    }));
    if (opts.onRow) {
      tr.classList.add("dx-clickable");
      tr.setAttribute("tabindex", "0");
      tr.addEventListener("click", () => opts.onRow(i));
    }
    if (opts.rowClass) { const k = opts.rowClass(i); if (k) tr.classList.add(k); }
    rows.push(tr);
  }
  return h("div", { class: "dx-table-wrap" }, h("table", { class: "dx-table", "aria-label": opts.label || null }, h("thead", {}, head), h("tbody", {}, rows)));
}

function bars(values, labels, opts = {}) {
  const W = opts.width || 560, H = opts.height || 120, pad = 24;
  const max = Math.max(1, ...values.map((v) => v || 0));
  const bw = (W - pad) / Math.max(values.length, 1);
  const g = svg("svg", { width: W, height: H + 18, class: "dx-chart", role: "img", "aria-label": opts.label || "chart" });
  values.forEach((v, i) => {
    const bh = ((v || 0) / max) * H;
    const r = svg("rect", { x: pad + i * bw + 1, y: H - bh, width: Math.max(bw - 2, 1), height: bh, class: "dx-bar" });
    r.appendChild(svg("title", {}, `${labels[i]}: ${num(v)}`));
    g.appendChild(r);
  });
  if (labels.length) {
    g.appendChild(svg("text", { x: pad, y: H + 14, class: "dx-axis" }, labels[0]));
    g.appendChild(svg("text", { x: W, y: H + 14, "text-anchor": "end", class: "dx-axis" }, labels[labels.length - 1]));
  }
  g.appendChild(svg("text", { x: 0, y: 10, class: "dx-axis" }, num(max)));
  return g;
}

// -- tabs ---------------------------------------------------------------------------------

function overview(model) {
  const o = model.get("overview") || {};
  if (!o.version && o.version !== 0) return h("p", {}, "Loading…");
  const schema = (o.schema || []).map((f) => h("tr", {}, h("td", {}, f.name), h("td", {}, f.type), h("td", {}, f.nullable ? "yes" : "no")));
  const props = Object.entries(o.properties || {}).map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", {}, v)));
  return h("div", {},
    kv([
      ["table", o.name || o.uri], ["location", o.uri], ["version", `${o.version} (${o.timestamp})`],
      ["description", o.description], ["table id", o.table_id],
      ["protocol", `reader v${o.reader_version}, writer v${o.writer_version}`],
      ["features", [...new Set([...(o.reader_features || []), ...(o.writer_features || [])])].join(", ") || "–"],
      ["partitioned by", (o.partition_columns || []).join(", ") || "not partitioned"],
      ["files", `${num(o.num_files)} (${num(o.small_files)} small, ${num(o.files_without_stats)} without stats)`],
      ["size", bytes(o.size_bytes)],
      ["rows", `${num(o.live_rows)} live (${num(o.num_records)} written, ${num(o.deleted_rows)} deleted by DVs in ${num(o.files_with_dv)} files)`],
      ["last checkpoint", o.checkpoint_version],
    ]),
    o.published_only ? h("p", { class: "dx-warn" }, "Catalog-managed table read by path: published commits only.") : null,
    (o.problems || []).map((p) => h("p", { class: "dx-warn" }, p)),
    h("h4", {}, "Schema"),
    h("table", { class: "dx-table", "aria-label": "schema" }, h("thead", {}, h("tr", {}, h("th", {}, "column"), h("th", {}, "type"), h("th", {}, "nullable"))), h("tbody", {}, schema)),
    props.length ? [h("h4", {}, "Properties"), h("table", { class: "dx-table", "aria-label": "properties" }, h("tbody", {}, props))] : null,
  );
}

function history(model) {
  const t = decode(model, "history_ipc");
  if (!t) return h("p", {}, "Loading history…");
  const versions = t.columns.version.slice().reverse();
  const added = t.columns.files_added.slice().reverse();
  return h("div", {},
    h("h4", {}, "Files added per version"),
    bars(added, versions.map(String), { label: "files added per version" }),
    h("p", { class: "dx-hint" }, "Click a commit to travel to that version."),
    table(t, ["version", "timestamp", "operation", "user_name", "files_added", "files_removed", "bytes_added", "rows_added", "rows_removed", "parameters"], {
      label: "history",
      onRow: (i) => { model.set("version", t.columns.version[i]); model.save_changes(); },
      rowClass: (i) => (t.columns.version[i] === model.get("version") ? "dx-current" : null),
    }),
    model.get("history_more") ? h("button", { type: "button", onclick: () => model.send({ type: "more_history" }) }, "Load older commits") : null,
  );
}

function files(model) {
  const q = model.get("files_query") || {};
  const ps = model.get("partitions_summary") || {};
  const parts = decode(model, "partitions_ipc");
  const sizes = decode(model, "sizes_ipc");
  const page = decode(model, "files_ipc");
  const total = model.get("files_total");
  const setQuery = (patch) => { model.set("files_query", { ...q, ...patch }); model.save_changes(); };
  const search = h("input", { type: "search", placeholder: "filter paths", "aria-label": "filter paths", value: q.search || "" });
  search.addEventListener("change", () => setQuery({ search: search.value, offset: 0 }));
  const sort = h("select", { "aria-label": "sort files by" },
    ["size", "num_records", "path", "modification_time", "partition", "deleted_rows"].map((s) => h("option", { value: s, selected: s === q.sort }, s)));
  sort.addEventListener("change", () => setQuery({ sort: sort.value, offset: 0 }));
  const dir = h("button", { type: "button", onclick: () => setQuery({ descending: !q.descending, offset: 0 }) }, q.descending ? "descending" : "ascending");
  const from = total ? (q.offset || 0) + 1 : 0;
  const to = Math.min((q.offset || 0) + (q.limit || 200), total || 0);
  return h("div", {},
    h("h4", {}, "File sizes"),
    sizes ? bars(sizes.columns.files, sizes.columns.lower.map((l) => `≥ ${bytes(l)}`), { label: "file size histogram" }) : null,
    h("h4", {}, `Partitions (${num(ps.partitions)}${ps.skew ? `, largest/median = ${ps.skew.toFixed(1)}x` : ""})`),
    table(parts, ["partition", "files", "bytes", "rows", "small_files", "deleted_rows"], { label: "partitions", max: 50 }),
    h("h4", {}, "Files"),
    h("div", { class: "dx-controls" }, search, sort, dir,
      h("button", { type: "button", disabled: (q.offset || 0) <= 0, onclick: () => setQuery({ offset: Math.max(0, (q.offset || 0) - (q.limit || 200)) }) }, "previous page"),
      h("span", { class: "dx-pos" }, `${num(from)}–${num(to)} of ${num(total)}`),
      h("button", { type: "button", disabled: to >= (total || 0), onclick: () => setQuery({ offset: (q.offset || 0) + (q.limit || 200) }) }, "next page")),
    table(page, null, { label: "files" }),
  );
}

function layout(model) {
  const cols = model.get("layout_columns") || [];
  const s = model.get("layout_summary") || {};
  const t = decode(model, "layout_ipc");
  const pick = h("select", { "aria-label": "layout column" }, h("option", { value: "" }, "choose a column"), cols.map((c) => h("option", { value: c, selected: c === model.get("layout_column") }, c)));
  pick.addEventListener("change", () => { model.set("layout_column", pick.value); model.save_changes(); });
  let chart = null;
  if (t && t.numRows) {
    const W = 560, rowH = Math.max(1, Math.min(6, 300 / t.numRows)), H = rowH * t.numRows;
    const maxDepth = Math.max(...t.columns.depth);
    chart = svg("svg", { width: W, height: H, class: "dx-chart", role: "img", "aria-label": `min/max ranges of ${s.column}` });
    for (let i = 0; i < t.numRows; i++) {
      const x = t.columns.lo[i] * (W - 2), w = Math.max(2, (t.columns.hi[i] - t.columns.lo[i]) * (W - 2));
      const r = svg("rect", { x, y: i * rowH, width: w, height: Math.max(rowH - 0.5, 0.5), class: "dx-range", opacity: 0.35 + 0.65 * (t.columns.depth[i] / maxDepth) });
      r.appendChild(svg("title", {}, `${t.columns.path[i]}: ${t.columns.min[i]} … ${t.columns.max[i]} (overlap ${t.columns.depth[i]})`));
      chart.appendChild(r);
    }
  }
  return h("div", {},
    h("div", { class: "dx-controls" }, h("label", {}, "Column ", pick)),
    s.column ? kv([
      ["files with stats", `${num(s.files_with_stats)} of ${num(s.files)}`],
      ["max overlap depth", `${num(s.max_overlap)} files (a point query reads up to this many)`],
      ["mean overlap depth", num(s.mean_overlap)],
      ["clustering quality", s.clustering_quality == null ? "–" : `${s.clustering_quality} (1: disjoint ranges, 0: every file overlaps every other)`],
      ...(s.truncated ? [["truncated bounds", `${num(s.truncated)} files (string bounds cut short: their ranges are wider than the data)`]] : []),
      ...(s.shown < s.files_with_stats ? [["shown", `${num(s.shown)} of ${num(s.files_with_stats)} files, evenly spread by min`]] : []),
    ]) : h("p", { class: "dx-hint" }, cols.length ? "Pick a column to see how its values are spread over files." : "No column of this version can have min/max statistics."),
    chart,
    t ? table(t, ["path", "min", "max", "depth"], { label: "file ranges", max: 200 }) : null,
  );
}

function dv(model) {
  const s = model.get("dv_summary") || {};
  const t = decode(model, "dv_ipc");
  return h("div", {},
    kv([
      ["files with deletion vectors", `${num(s.files_with_dv)} of ${num(s.files)}`],
      ["deleted rows", `${num(s.deleted_rows)} of ${num(s.rows_in_files_with_dv)} rows in those files`],
      ["inline DVs", num(s.inline)], ["DV files", num(s.dv_files)], ["DV bytes", bytes(s.dv_bytes)],
      ["past the purge threshold", `${num(s.past_purge_threshold)} files (worth rewriting: Maintenance → DV purge)`],
    ]),
    table(t, ["path", "partition", "num_records", "cardinality", "deleted_ratio", "storage", "dv_bytes", "shared_by"], {
      label: "deletion vectors", empty: "No deletion vectors at this version.",
      rowClass: (i) => (t.columns.past_threshold[i] ? "dx-warn" : null),
    }),
  );
}

function diff(model) {
  const s = model.get("diff_summary") || {};
  const changes = decode(model, "diff_changes_ipc");
  const files = decode(model, "diff_ipc");
  const a = h("input", { type: "number", "aria-label": "from version", min: model.get("min_version"), max: model.get("max_version"), value: model.get("diff_from") });
  const b = h("input", { type: "number", "aria-label": "to version", min: model.get("min_version"), max: model.get("max_version"), value: model.get("diff_to") });
  const go = h("button", { type: "button", onclick: () => { model.set("diff_from", Number(a.value)); model.set("diff_to", Number(b.value)); model.save_changes(); } }, "Compare");
  return h("div", {},
    h("div", { class: "dx-controls" }, h("label", {}, "from ", a), h("label", {}, "to ", b), go),
    s.from_version === undefined ? h("p", { class: "dx-hint" }, "Pick two versions.") : h("div", {},
      h("h4", {}, `Changes from version ${s.from_version} to ${s.to_version}`),
      table(changes, ["section", "change", "name", "before", "after", "files", "bytes", "rows", "detail"], { label: "changes" }),
      h("h4", {}, "Files"),
      table(files, ["change", "path", "partition", "size", "num_records", "rows_delta"], { label: "changed files", rowClass: (i) => `dx-${files.columns.change[i]}`, empty: "No file changed." }),
    ),
  );
}

function health(model) {
  const t = decode(model, "health_ipc");
  if (!t) return h("p", {}, "Loading…");
  return table(t, ["section", "metric", "value", "unit", "status", "detail"], {
    label: "log health",
    rowClass: (i) => ({ warn: "dx-warn", error: "dx-error" })[t.columns.status[i]] || null,
  });
}

function maintenance(model) {
  const m = model.get("maintenance") || {};
  const ops = m.operations || [];
  const selected = m.selected;
  const op = ops.find((o) => o.name === selected);
  const send = (msg) => model.send(msg);
  return h("div", {},
    h("div", { class: "dx-controls", role: "group", "aria-label": "operations" },
      ops.map((o) => h("button", { type: "button", "aria-pressed": o.name === selected ? "true" : "false", onclick: () => send({ type: "preview", op: o.name }) }, `Preview ${o.label}`))),
    op ? h("div", {},
      h("h4", {}, `${op.label}: preview`),
      m.preview ? kv(Object.entries(m.preview).map(([k, v]) => [k.replace(/_/g, " "), typeof v === "number" ? (k.endsWith("bytes") ? bytes(v) : num(v)) : typeof v === "object" && v !== null ? JSON.stringify(v) : v])) : null,
      h("p", { class: "dx-hint" }, op.available ? `Runs with ${op.backend}.` : op.reason),
      h("button", { type: "button", class: op.destructive ? "dx-danger" : null, disabled: !op.available || m.running, onclick: () => send({ type: "run", op: op.name }) }, `Run ${op.label}`),
    ) : h("p", { class: "dx-hint" }, "Preview an operation to see what it would do before running it."),
    m.running || m.progress ? h("div", {},
      h("progress", { max: 1, value: m.progress || 0, "aria-label": "operation progress" }),
      h("span", { class: "dx-pos" }, m.message || "")) : null,
    m.result ? h("p", { class: "dx-ok", role: "status" }, m.result) : null,
  );
}

const RENDER = { overview, history, files, layout, dv, diff, health, maintenance };

function render({ model, el }) {
  const root = h("div", { class: "dx-explorer" });
  el.appendChild(root);
  function draw() {
    const tab = model.get("tab");
    const o = model.get("overview") || {};
    const slider = h("input", { type: "range", min: model.get("min_version"), max: model.get("max_version"), value: model.get("version"), step: 1, "aria-label": "version" });
    slider.addEventListener("change", () => { model.set("version", Number(slider.value)); model.save_changes(); });
    const header = h("div", { class: "dx-header" },
      h("strong", { class: "dx-title" }, o.name || model.get("uri")),
      h("label", { class: "dx-version" }, "version ", slider, h("output", {}, `${model.get("version")} / ${model.get("max_version")}`)),
      h("span", { class: "dx-time" }, o.timestamp || ""),
      h("button", { type: "button", title: "re-read the log (new versions appear)", onclick: () => model.send({ type: "refresh" }) }, "Refresh"),
    );
    const tabs = h("div", { class: "dx-tabs", role: "tablist", "aria-label": "explorer tabs" },
      TABS.map(([id, label]) => h("button", {
        type: "button", role: "tab", id: `dx-tab-${id}`, "aria-selected": id === tab ? "true" : "false",
        onclick: () => { model.set("tab", id); model.save_changes(); },
      }, label)));
    let body;
    try {
      body = (RENDER[tab] || overview)(model);
    } catch (e) {
      body = h("p", { class: "dx-error" }, `could not draw this tab: ${e.message}`);
    }
    const err = model.get("error");
    const busy = model.get("busy");
    const parts = [header, tabs,
      busy ? h("p", { class: "dx-busy", role: "status" }, busy) : null,
      err ? h("p", { class: "dx-error", role: "alert" }, err) : null,
      h("div", { class: "dx-panel", role: "tabpanel", "aria-label": (TABS.find((t) => t[0] === tab) || TABS[0])[1] }, body)];
    root.replaceChildren(...parts.filter((p) => p !== null));
  }
  const names = ["tab", "version", "min_version", "max_version", "overview", "history_ipc", "history_more", "partitions_ipc", "sizes_ipc", "files_ipc",
    "files_total", "files_query", "layout_columns", "layout_summary", "layout_ipc", "dv_summary", "dv_ipc", "diff_summary",
    "diff_changes_ipc", "diff_ipc", "diff_from", "diff_to", "health_ipc", "maintenance", "error", "busy"];
  let pending = false;
  const schedule = () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => { pending = false; draw(); });
  };
  for (const n of names) model.on(`change:${n}`, schedule);
  draw();
  return () => { for (const n of names) model.off(`change:${n}`, schedule); };
}

export default { render };
