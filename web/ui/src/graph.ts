// Conversions between the stored visual graph (API.md, React Flow shape)
// and the canvas, plus a layered layout for graphs saved without positions.
import type { Edge, Node } from "@xyflow/react";
import type { FlowGraph, GraphEdge, GraphNode } from "./api";

export const NODE_TYPES = ["Worker", "UX", "Splitter", "Collector"] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export function canonicalType(t: string): NodeType | string {
  const hit = NODE_TYPES.find((n) => n.toLowerCase() === (t ?? "").toLowerCase());
  return hit ?? t;
}

export const TYPE_HELP: Record<NodeType, string> = {
  Worker: "Calls your service over HTTP and waits for its callback.",
  UX: "Waits for a person to approve or answer.",
  Splitter: "Fans an array out into parallel paths, one per item.",
  Collector: "Waits for every parallel path and gathers results in order.",
};

export type CanvasNode = Node<Record<string, any>>;

// layout places nodes that have no position in columns by depth.
export function layout(g: FlowGraph): Record<string, { x: number; y: number }> {
  const depth: Record<string, number> = {};
  const preds: Record<string, string[]> = {};
  for (const n of g.nodes) preds[n.id] = [];
  for (const e of g.edges) if (preds[e.target]) preds[e.target].push(e.source);
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
    out[n.id] = { x: col * 240, y: row * 120 };
  }
  return out;
}

export function toCanvas(g: FlowGraph): { nodes: CanvasNode[]; edges: Edge[] } {
  const auto = layout(g);
  const nodes: CanvasNode[] = g.nodes.map((n) => {
    const pos = n.position && typeof n.position.x === "number" ? n.position : auto[n.id];
    return { id: n.id, type: canonicalType(n.type), position: pos, data: { ...(n.data ?? {}) } };
  });
  const edges: Edge[] = g.edges.map((e) => ({
    id: e.id,
    source: e.source,
    target: e.target,
    data: e.data ? { ...e.data } : {},
    label: mappingLabel(e.data),
  }));
  return { nodes, edges };
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
      data[k] = v;
    }
    return { id: n.id, type: String(n.type), position: { x: Math.round(n.position.x), y: Math.round(n.position.y) }, data };
  });
  const ge: GraphEdge[] = edges.map((e) => {
    const out: GraphEdge = { id: e.id, source: e.source, target: e.target };
    const m = (e.data as any)?.mapping;
    if (m && Object.keys(m).length) out.data = { mapping: m };
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

export const ID_PREFIX: Record<NodeType, string> = { Worker: "worker", UX: "approval", Splitter: "split", Collector: "collect" };
