// The ripple console: lists tables, materialized views and indexes
// (/api/objects) and draws the chosen one's dataflow (/api/dataflows/NAME),
// refreshed every two seconds. Every name is put in the page as text
// (textContent, attribute values), never as markup.
"use strict";

const REFRESH_MS = 2000;
const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 200, NODE_H = 40, GAP_X = 24, GAP_Y = 36, MARGIN = 12;

let selected = new URLSearchParams(location.search).get("dataflow");

function el(tag, attrs, text) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function cell(text, cls) {
  return el("td", cls ? { class: cls } : {}, text);
}

function fmtLag(ms) {
  if (ms === null || ms === undefined) return "—";
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(1)} ${units[i]}`;
}

function fmtNs(ns) {
  if (ns < 1e6) return `${(ns / 1e3).toFixed(0)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(1)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

function qualified(o) {
  return `${o.schema}.${o.name}`;
}

async function getJson(path) {
  const r = await fetch(path, { cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(body && body.error ? body.error : `HTTP ${r.status}`);
  return body;
}

function renderObjects(objects) {
  const body = document.querySelector("#objects tbody");
  const rows = objects.map((o) => {
    const name = qualified(o);
    const tr = el("tr", { "data-object": name, "data-kind": o.kind });
    if (name === selected) tr.classList.add("selected");
    tr.append(
      cell(o.schema),
      cell(o.name, "name"),
      cell(o.kind + (o.on ? ` on ${o.on}` : "")),
      cell(fmtLag(o.freshness_lag_ms), "num lag"),
      cell(o.records, "num records"),
      cell(fmtBytes(o.bytes), "num bytes"),
      cell(o.arranged_records, "num arranged"),
      cell(o.hydration || "", "hydration"),
    );
    tr.addEventListener("click", () => {
      selected = name;
      history.replaceState(null, "", `?dataflow=${encodeURIComponent(name)}`);
      refresh();
    });
    return tr;
  });
  body.replaceChildren(...rows);
}

// Layers by longest path from the sources, after dropping the edges that
// close cycles (found by a depth-first search; drawn dashed).
function layout(ops, channels) {
  const ids = new Set(ops.map((o) => o.id));
  const edges = channels.filter((c) => ids.has(c.from) && ids.has(c.to) && c.from !== c.to);
  const out = new Map(ops.map((o) => [o.id, []]));
  for (const e of edges) out.get(e.from).push(e);
  const state = new Map(), back = new Set();
  for (const o of ops) {
    if (state.has(o.id)) continue;
    const stack = [[o.id, 0]];
    state.set(o.id, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const next = out.get(top[0])[top[1]++];
      if (!next) { state.set(top[0], 2); stack.pop(); continue; }
      const s = state.get(next.to);
      if (s === 1) back.add(next);
      else if (!s) { state.set(next.to, 1); stack.push([next.to, 0]); }
    }
  }
  const forward = edges.filter((e) => !back.has(e));
  const indegree = new Map(ops.map((o) => [o.id, 0]));
  for (const e of forward) indegree.set(e.to, indegree.get(e.to) + 1);
  const layer = new Map(ops.map((o) => [o.id, 0]));
  const queue = ops.filter((o) => indegree.get(o.id) === 0).map((o) => o.id);
  while (queue.length) {
    const id = queue.shift();
    for (const e of forward.filter((f) => f.from === id)) {
      layer.set(e.to, Math.max(layer.get(e.to), layer.get(id) + 1));
      indegree.set(e.to, indegree.get(e.to) - 1);
      if (indegree.get(e.to) === 0) queue.push(e.to);
    }
  }
  const layers = [];
  for (const o of ops) {
    const l = layer.get(o.id);
    (layers[l] = layers[l] || []).push(o);
  }
  const pos = new Map();
  layers.forEach((row, l) => row.forEach((o, i) => {
    pos.set(o.id, { x: MARGIN + i * (NODE_W + GAP_X), y: MARGIN + l * (NODE_H + GAP_Y) });
  }));
  const width = MARGIN * 2 + Math.max(1, ...layers.map((r) => r.length)) * (NODE_W + GAP_X);
  const height = MARGIN * 2 + layers.length * (NODE_H + GAP_Y);
  return { edges, back, pos, width, height };
}

function renderGraph(graph) {
  const svg = document.getElementById("graph");
  // The dataflow's own operator (the outermost scope) is the frame.
  const ops = graph.operators.filter((o) => o.parent !== null);
  const scopes = new Set(ops.map((o) => o.parent));
  const { edges, back, pos, width, height } = layout(ops, graph.channels);
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  const defs = el("svg:defs");
  const marker = el("svg:marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
  marker.append(el("svg:path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a93a6" }));
  defs.append(marker);
  const parts = [defs];
  for (const e of edges) {
    const a = pos.get(e.from), b = pos.get(e.to);
    const line = el("svg:line", {
      class: back.has(e) ? "edge back" : "edge",
      x1: a.x + NODE_W / 2, y1: a.y + NODE_H, x2: b.x + NODE_W / 2, y2: b.y,
      "data-from": e.from, "data-to": e.to,
    });
    line.append(el("svg:title", {}, `${e.records} records`));
    parts.push(line);
  }
  for (const o of ops) {
    const p = pos.get(o.id);
    const g = el("svg:g", {
      class: scopes.has(o.id) ? "op scope" : "op",
      transform: `translate(${p.x},${p.y})`,
      "data-op": o.id,
      "data-name": o.name,
    });
    g.append(el("svg:title", {}, `${o.name} [${o.address.join(", ")}]`));
    g.append(el("svg:rect", { width: NODE_W, height: NODE_H }));
    const label = o.name.length > 30 ? o.name.slice(0, 29) + "…" : o.name;
    g.append(el("svg:text", { x: 6, y: 15, class: "name" }, label));
    const arranged = o.arranged_records === null ? "" : ` · ${o.arranged_records} arr`;
    g.append(el("svg:text", { x: 6, y: 31, class: "stats" },
      `${o.records_in} in · ${o.records_out} out${arranged} · ${fmtNs(o.elapsed_ns)}`));
    parts.push(g);
  }
  svg.replaceChildren(...parts);
}

function renderOperators(graph) {
  const body = document.querySelector("#operators tbody");
  body.replaceChildren(...graph.operators.map((o) => {
    const tr = el("tr", { "data-op": o.id });
    tr.append(
      cell(o.id),
      cell(o.name, "name"),
      cell(o.address.join(", ")),
      cell(o.records_in, "num"),
      cell(o.records_out, "num"),
      cell(o.arranged_records === null ? "" : o.arranged_records, "num"),
      cell(fmtNs(o.elapsed_ns), "num"),
      cell(o.activations, "num"),
    );
    return tr;
  }));
}

async function refreshDataflow() {
  const note = document.getElementById("dataflow-note");
  document.getElementById("dataflow-name").textContent = selected || "";
  if (!selected) {
    note.textContent = "No dataflow chosen.";
    return;
  }
  try {
    const graph = await getJson(`/api/dataflows/${encodeURIComponent(selected)}`);
    note.className = "";
    note.textContent = `${graph.operators.length} operators, ${graph.channels.length} channels, ` +
      `freshness lag ${fmtLag(graph.object.freshness_lag_ms)}`;
    renderGraph(graph);
    renderOperators(graph);
  } catch (e) {
    note.className = "error";
    note.textContent = e.message;
  }
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const objects = await getJson("/api/objects");
    if (!selected) {
      const first = objects.find((o) => o.kind === "materialized view") || objects.find((o) => o.kind === "index");
      if (first) selected = qualified(first);
    }
    renderObjects(objects);
    await refreshDataflow();
    status.className = "";
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    status.className = "error";
    status.textContent = `cannot reach the server: ${e.message}`;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
