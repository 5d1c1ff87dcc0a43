// Conversions between the stored visual graph (openapi.yaml, React Flow shape)
// and the canvas, plus a layered layout for graphs saved without positions.
import { MarkerType, type Edge, type Node } from "@xyflow/react";
import type { FlowGraph, GraphEdge, GraphNode } from "./api";
import { typeInfo } from "./nodetypes";

// canonicalType is a node type's registered spelling (types match in any
// case), or t when no registered type has it.
export function canonicalType(t: string): string {
  return typeInfo(t)?.type ?? t;
}

export type CanvasNode = Node<Record<string, any>>;

// isCompensation says whether an edge links a step to its undo node
// (data.on "compensate"): never walked, only run when the run is
// compensated.
export function isCompensation(data: Record<string, any> | undefined): boolean {
  return !!data && data.on === "compensate";
}

// NODE_MAX is the largest a step's node grows to on the canvas: at most
// 240 px wide (styles.css, .snode) and, its label, summary and problem
// clamped to two lines each, about 140 px tall in the editor. Places
// chosen for nodes keep this much room.
export const NODE_MAX = { width: 240, height: 140 };

// layout places nodes that have no position in columns by depth.
export function layout(g: FlowGraph): Record<string, { x: number; y: number }> {
  const depth: Record<string, number> = {};
  const preds: Record<string, string[]> = {};
  for (const n of g.nodes) preds[n.id] = [];
  // A loop edge goes back: the layout follows the forward edges only.
  for (const e of g.edges) if (preds[e.target] && !isLoop(e.data)) preds[e.target].push(e.source);
  const visiting = new Set<string>();
  const d = (id: string): number => {
    if (depth[id] !== undefined) return depth[id];
    if (visiting.has(id)) return 0;
    visiting.add(id);
    const v = Math.max(-1, ...(preds[id] ?? []).filter((p) => preds[p]).map(d)) + 1;
    visiting.delete(id);
    depth[id] = v;
    return v;
  };
  const rows: Record<number, number> = {};
  const out: Record<string, { x: number; y: number }> = {};
  for (const n of g.nodes) {
    const col = d(n.id);
    const row = rows[col] ?? 0;
    rows[col] = row + 1;
    out[n.id] = { x: col * (NODE_MAX.width + 50), y: row * (NODE_MAX.height + 20) };
  }
  return out;
}

export function toCanvas(g: FlowGraph): { nodes: CanvasNode[]; edges: Edge[] } {
  const auto = layout(g);
  const nodes: CanvasNode[] = g.nodes.map((n) => {
    const pos = typeof n.position?.x === "number" && typeof n.position.y === "number" ? { x: n.position.x, y: n.position.y } : auto[n.id];
    // A pinned sample rides in the canvas node's data as _pinned (kept out
    // of the saved data, which is the step's config) and is saved beside it.
    const data: Record<string, any> = { ...(n.data ?? {}) };
    if (n.pinned && typeof n.pinned === "object") data._pinned = n.pinned;
    return { id: n.id, type: canonicalType(n.type), position: pos, data };
  });
  const edges: Edge[] = g.edges.map((e) => decorateEdge({ id: e.id, source: e.source, target: e.target, data: e.data ? { ...e.data } : {} }));
  return { nodes, edges };
}

// The outcomes a UX node offers when its data names none.
export const DEFAULT_OUTCOMES = ["approve", "reject"];

export function outcomesOf(data: Record<string, any> | undefined): string[] {
  const o = data?.outcomes;
  if (!Array.isArray(o)) return DEFAULT_OUTCOMES;
  const names = o.filter((x): x is string => typeof x === "string" && x.trim() !== "");
  return names.length ? names : DEFAULT_OUTCOMES;
}

// An edge is taken always, when its condition holds, as the "else" of its
// source's conditions, when its source fails for good, or when a person
// chose its outcome; a compensation edge leads from a step to its undo
// node, run only when the run is compensated. The kinds are exclusive:
// the editor keeps one.
export type EdgeKind = "always" | "condition" | "default" | "failure" | "outcome" | "compensate";

export function edgeKind(data: Record<string, any> | undefined): EdgeKind {
  if (!data) return "always";
  if (data.on === "failure") return "failure";
  if (data.on === "compensate") return "compensate";
  if (typeof data.outcome === "string" && data.outcome !== "") return "outcome";
  if (data.default === true) return "default";
  if (typeof data.condition === "string") return "condition";
  return "always";
}

// problemText drops the "edge "e2": " or "node "x": " a server message
// starts with, where the message is shown on that edge or node.
export function problemText(msg: string, id: string): string {
  const p1 = `edge "${id}": `;
  const p2 = `node "${id}": `;
  if (msg.startsWith(p1)) return msg.slice(p1.length);
  if (msg.startsWith(p2)) return msg.slice(p2.length);
  return msg;
}

export function truncate(s: string, n: number): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > n ? one.slice(0, n - 1) + "…" : one;
}

// MAX_LOOP_ITERATIONS bounds a loop's maxIterations (the server's limit).
export const MAX_LOOP_ITERATIONS = 10000;

// isLoop says whether an edge is marked as a loop's back edge
// (data.loop: {maxIterations}): taking it goes round again.
export function isLoop(data: Record<string, any> | undefined): boolean {
  return !!data && data.loop !== undefined && data.loop !== null;
}

// loopMax is a loop edge's maxIterations as saved (maybe not a number).
export function loopMax(data: Record<string, any> | undefined): unknown {
  return data?.loop && typeof data.loop === "object" ? data.loop.maxIterations : undefined;
}

// checkLoopMax says what is wrong with a maxIterations, or null.
export function checkLoopMax(v: unknown): string | null {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_LOOP_ITERATIONS)
    return `Go round at most a whole number of times from 1 to ${MAX_LOOP_ITERATIONS}.`;
  return null;
}

// edgeLabel is what the canvas writes on an edge: its condition, "else",
// "on failure" or its outcome, else its mapping's keys. A loop edge is
// marked ↺ with its bound.
export function edgeLabel(data: Record<string, any> | undefined): string | undefined {
  const base = branchLabel(data);
  if (!isLoop(data)) return base;
  const m = loopMax(data);
  return `↺ ${base ?? "always"} · max ${typeof m === "number" ? m : "?"}`;
}

function branchLabel(data: Record<string, any> | undefined): string | undefined {
  switch (edgeKind(data)) {
    case "failure":
      return "on failure";
    case "compensate":
      return "undo";
    case "outcome":
      return String(data!.outcome);
    case "default":
      return "else";
    case "condition": {
      const c = String(data!.condition).trim();
      return c ? truncate(c, 32) : "if …";
    }
  }
  return mappingLabel(data);
}

// decorateEdge sets an edge's label, class, data-kind and type from its
// data: a loop edge is drawn by LoopEdge, curving back over the steps.
export function decorateEdge(e: Edge): Edge {
  const kind = edgeKind(e.data);
  const loop = isLoop(e.data);
  return {
    ...e,
    type: loop ? "loop" : "default",
    label: edgeLabel(e.data),
    className: `edge-kind-${kind}${loop ? " edge-loop" : ""}`,
    labelBgPadding: [6, 3],
    labelBgBorderRadius: 4,
    markerEnd: loop
      ? { type: MarkerType.ArrowClosed, width: 16, height: 16, color: "#7c3aed" }
      : kind === "compensate"
        ? { type: MarkerType.ArrowClosed, width: 14, height: 14, color: "#b45309" }
        : undefined,
    domAttributes: { "data-kind": kind, ...(loop ? { "data-loop": String(loopMax(e.data) ?? "") } : {}) } as any,
  };
}

// unmarkedCycles returns the ids of the edges on a cycle that no loop edge
// closes (the server refuses those), and for each the path it closes.
// Loop edges are left out: what they close is a loop, not a cycle.
export function unmarkedCycles(nodeIds: string[], edges: { id: string; source: string; target: string; data?: Record<string, any> }[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const succ: Record<string, string[]> = {};
  for (const id of nodeIds) succ[id] = [];
  const fwd = edges.filter((e) => !isLoop(e.data) && succ[e.source] && succ[e.target]);
  for (const e of fwd) succ[e.source].push(e.target);
  for (const e of fwd) {
    const path = pathBetween(succ, e.target, e.source);
    if (path) out.set(e.id, [e.source, ...path]);
  }
  return out;
}

// pathBetween returns the shortest path from a to b along succ (a and b
// included), or null.
export function pathBetween(succ: Record<string, string[]>, a: string, b: string): string[] | null {
  const prev: Record<string, string | null> = { [a]: null };
  const queue = [a];
  while (queue.length) {
    const v = queue.shift()!;
    if (v === b) {
      const path: string[] = [];
      for (let x: string | null = v; x !== null; x = prev[x]) path.unshift(x);
      return path;
    }
    for (const w of succ[v] ?? []) {
      if (!(w in prev)) {
        prev[w] = v;
        queue.push(w);
      }
    }
  }
  return null;
}

// forwardSucc maps each node to the targets of its edges, loop edges left out.
export function forwardSucc(edges: { source: string; target: string; data?: Record<string, any> }[]): Record<string, string[]> {
  const succ: Record<string, string[]> = {};
  for (const e of edges) if (!isLoop(e.data)) (succ[e.source] ??= []).push(e.target);
  return succ;
}

export interface LoopInfo {
  edge: string;
  source: string;
  head: string;
  max: number;
  // body: the nodes on a path from head to source (both included).
  body: Set<string>;
}

// loopsOf finds the loops of a graph: each loop edge source → head and
// the nodes on the forward paths from head to source.
export function loopsOf(g: FlowGraph): LoopInfo[] {
  const succ = forwardSucc(g.edges);
  const pred: Record<string, string[]> = {};
  for (const e of g.edges) if (!isLoop(e.data)) (pred[e.target] ??= []).push(e.source);
  const reach = (from: string, next: Record<string, string[]>) => {
    const seen = new Set([from]);
    const stack = [from];
    while (stack.length) {
      for (const w of next[stack.pop()!] ?? []) {
        if (!seen.has(w)) {
          seen.add(w);
          stack.push(w);
        }
      }
    }
    return seen;
  };
  return g.edges
    .filter((e) => isLoop(e.data))
    .map((e) => {
      const down = reach(e.target, succ);
      const up = reach(e.source, pred);
      const body = new Set([...down].filter((x) => up.has(x)));
      const m = loopMax(e.data);
      return { edge: e.id, source: e.source, head: e.target, max: typeof m === "number" ? m : 0, body };
    });
}

export function mappingLabel(data: Record<string, any> | undefined): string | undefined {
  const m = data?.mapping;
  if (!m || typeof m !== "object") return undefined;
  const keys = Object.keys(m);
  return keys.length ? `map: ${keys.join(", ")}` : undefined;
}

// fromCanvas builds the graph to save. Transient canvas state (selection,
// measured sizes, our status decorations) is not stored.
export function fromCanvas(nodes: CanvasNode[], edges: Edge[]): FlowGraph {
  const gn: GraphNode[] = nodes.map((n) => {
    const data: Record<string, any> = {};
    for (const [k, v] of Object.entries(n.data ?? {})) {
      if (k.startsWith("_")) continue;
      if (v === "" || v === undefined) continue;
      if (k === "outcomes" && Array.isArray(v)) {
        const names = v.map((o) => String(o ?? "").trim()).filter((o) => o !== "");
        if (names.length) data[k] = [...new Set(names)];
        continue;
      }
      data[k] = v;
    }
    const g: GraphNode = { id: n.id, type: String(n.type), position: { x: Math.round(n.position.x), y: Math.round(n.position.y) }, data };
    // The pinned sample is layout, not config: the compiler ignores a
    // node's "pinned", so it never reaches the execution graph.
    if (n.data?._pinned) g.pinned = n.data._pinned;
    return g;
  });
  const ge: GraphEdge[] = edges.map((e) => {
    const out: GraphEdge = { id: e.id, source: e.source, target: e.target };
    const data: Record<string, any> = {};
    for (const [k, v] of Object.entries((e.data ?? {}) as Record<string, any>)) {
      if (k.startsWith("_") || v === undefined || v === null) continue;
      if (k === "mapping" && (typeof v !== "object" || !Object.keys(v).length)) continue;
      if (k === "default" && v !== true) continue;
      data[k] = v; // a condition is kept even when empty: the server says why it is wrong
    }
    if (Object.keys(data).length) out.data = data;
    return out;
  });
  return { nodes: gn, edges: ge };
}

export function nextId(prefix: string, taken: Set<string>): string {
  for (let i = 1; ; i++) {
    const id = `${prefix}${i}`;
    if (!taken.has(id)) return id;
  }
}


// waitSummary says in a few words what a Wait node waits for.
export function waitSummary(d: Record<string, any> | undefined): string | null {
  if (typeof d?.until === "string" && d.until.trim()) return `until ${d.until.trim()}${d.timezone ? ` (${d.timezone})` : ""}`;
  if (typeof d?.duration === "string" && d.duration.trim()) return `for ${d.duration.trim()}`;
  return null;
}

// parseDuration reads a Go (48h, 1h30m, 90s) or ISO-8601 (P2D, PT1H30M)
// duration into seconds, or null. The server's parser is the truth; this
// one says what a duration means while it is typed.
export function parseDuration(src: string): number | null {
  const s = src.trim();
  if (!s) return null;
  const go = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  if (go.test(s)) {
    const unit: Record<string, number> = { ns: 1e-9, us: 1e-6, "µs": 1e-6, "μs": 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
    let rest = s;
    let total = 0;
    while (rest) {
      const m = go.exec(rest);
      if (!m) return null;
      total += parseFloat(m[1]) * unit[m[2]];
      rest = rest.slice(m[0].length);
    }
    return total;
  }
  if (s === "0") return 0;
  const iso = /^P(?:(\d+(?:[.,]\d+)?)Y)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/.exec(s);
  if (!iso || s === "P" || s.endsWith("T")) return null;
  const n = (i: number) => (iso[i] ? parseFloat(iso[i].replace(",", ".")) : 0);
  return n(1) * 365 * 86400 + n(2) * 30 * 86400 + n(3) * 7 * 86400 + n(4) * 86400 + n(5) * 3600 + n(6) * 60 + n(7);
}

// parseTime reads an until value that is a time rather than an
// expression: RFC 3339, or a date (and time) without an offset, which the
// server reads in the node's timezone. It returns whether it has an offset.
export function parseTime(src: string): { offset: boolean; date: Date } | null {
  const s = src.trim();
  const withOffset = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
  if (withOffset.test(s)) {
    const d = new Date(s.replace(" ", "T"));
    return isNaN(d.getTime()) ? null : { offset: true, date: d };
  }
  const local = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?)?$/;
  if (local.test(s)) {
    const d = new Date(s.length === 10 ? `${s}T00:00:00` : s.replace(" ", "T"));
    return isNaN(d.getTime()) ? null : { offset: false, date: d };
  }
  return null;
}

// HTTP_METHODS are the methods an HTTP node may use (GET by default).
export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

// httpSummary says what an HTTP node calls: "POST api.example.com/…".
export function httpSummary(d: Record<string, any> | undefined): string | null {
  const url = typeof d?.url === "string" ? d.url.trim() : "";
  if (!url) return null;
  const method = typeof d?.method === "string" && d.method.trim() ? d.method.trim().toUpperCase() : "GET";
  return `${method} ${truncate(url.replace(/^https?:\/\//, ""), 40)}`;
}

// eventSummary says what an Event node waits for: "payment.received · key input.order_id".
export function eventWaitSummary(d: Record<string, any> | undefined): string | null {
  const name = typeof d?.event === "string" ? d.event.trim() : "";
  if (!name) return null;
  const key = typeof d?.key === "string" && d.key.trim() ? ` · key ${truncate(d.key, 28)}` : "";
  return `${name}${key}`;
}

// parseSuccessCodes reads "200, 201, 2xx" into [200, 201, "2xx"], or says
// what is wrong.
export function parseSuccessCodes(src: string): { ok: true; value: (number | string)[] } | { ok: false; message: string } {
  const out: (number | string)[] = [];
  for (const raw of src.split(/[\s,]+/)) {
    const t = raw.trim();
    if (!t) continue;
    if (/^\d{3}$/.test(t) && Number(t) >= 100 && Number(t) <= 599) out.push(Number(t));
    else if (/^[1-5]xx$/i.test(t)) out.push(t.toLowerCase());
    else return { ok: false, message: `“${t}” is not a status code (100–599) or a class such as 2xx.` };
  }
  return { ok: true, value: out };
}

// subflowVersion reads a SubFlow node's version: a number, or "latest"
// (the default, pinned when the flow is saved).
export function subflowVersion(d: Record<string, any> | undefined): number | "latest" {
  const v = d?.version;
  return typeof v === "number" && Number.isInteger(v) && v >= 1 ? v : "latest";
}

// subflowSummary says what a SubFlow node runs: "runs KYC · latest";
// d._flowName is the flow's name where it is known (d.flow is its id).
export function subflowSummary(d: Record<string, any> | undefined): string | null {
  const ref = typeof d?.flow === "string" ? d.flow.trim() : "";
  if (!ref) return null;
  const name = typeof d?._flowName === "string" && d._flowName ? d._flowName : ref;
  const v = subflowVersion(d);
  return `runs ${truncate(name, 32)} · ${v === "latest" ? "latest" : `v${v}`}`;
}

// READABLE_ZOOM is the least zoom a canvas fits a flow at on a wide
// screen: node titles (0.85rem, 12.75 px) stay at 11 px or more, and a flow wider
// than the canvas is panned rather than shrunk into small print. On a
// narrow (phone) screen the whole flow is fitted, however small: there is
// no room to pan to the rest.
export const READABLE_ZOOM = 0.9;

export function fitViewOptions() {
  const narrow = typeof window !== "undefined" && window.innerWidth < 700;
  return { padding: 0.2, maxZoom: 1.2, minZoom: narrow ? 0.1 : READABLE_ZOOM };
}

// toleranceProblem says what is wrong with a Collector's toleratedFailures
// as the server reads it (engine.ParseTolerance), or null when it is fine
// or unset: a whole count of items (0 or more) or a percent from 0% to
// 100% ("5%", "2.5 %").
export function toleranceProblem(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "number") return Number.isInteger(v) && v >= 0 && v <= 2 ** 31 ? null : "A count is a whole number of items, 0 or more.";
  if (typeof v === "string") {
    const m = /^\s*(.*?)\s*%\s*$/.exec(v);
    if (!m) return /^\s*-?\d+\s*$/.test(v) ? "A count is a whole number of items, 0 or more." : "Write a count of items (3) or a percent of them (5%).";
    const f = m[1] !== "" && /^[0-9.eE+-]+$/.test(m[1]) ? Number(m[1]) : NaN;
    return !isNaN(f) && f >= 0 && f <= 100 ? null : "A percent is from 0% to 100%.";
  }
  return "Write a count of items (3) or a percent of them (5%).";
}
