// tidy lays a flow out left to right with dagre: each step a column after
// the steps it follows, branches side by side, crossings kept few. A loop's
// back edge is left out (it goes back to the loop's head), so a loop is
// laid out as its forward path.
import dagre from "@dagrejs/dagre";
import type { Edge } from "@xyflow/react";
import { isLoop, type CanvasNode } from "./graph";

export function tidy(nodes: CanvasNode[], edges: Edge[]): Record<string, { x: number; y: number }> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 40, ranksep: 90, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  const size = (n: CanvasNode) => ({ width: n.measured?.width ?? 180, height: n.measured?.height ?? 70 });
  for (const n of nodes) g.setNode(n.id, size(n));
  for (const e of edges) if (!isLoop(e.data as Record<string, any>) && g.hasNode(e.source) && g.hasNode(e.target)) g.setEdge(e.source, e.target);
  dagre.layout(g);
  const out: Record<string, { x: number; y: number }> = {};
  for (const n of nodes) {
    const p = g.node(n.id);
    const s = size(n);
    // dagre places centres; the canvas, top-left corners.
    out[n.id] = { x: Math.round(p.x - s.width / 2), y: Math.round(p.y - s.height / 2) };
  }
  return out;
}
