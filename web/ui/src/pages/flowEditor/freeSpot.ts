import { NODE_MAX, type CanvasNode } from "../../graph";

// freeSpot is the centre nearest want, in flow coordinates, where a new
// node overlaps none of nodes, looked for in rings of places around want
// that stay inside the visible pane (lo to hi); want itself when the pane
// has no free place. Every node, the new one too, is taken at the largest
// a node can grow to (NODE_MAX: its words are clamped), not at its size
// now: a label typed later must not make it cover its neighbour.
export function freeSpot(want: { x: number; y: number }, nodes: CanvasNode[], lo: { x: number; y: number }, hi: { x: number; y: number }): { x: number; y: number } {
  const W = NODE_MAX.width;
  const H = NODE_MAX.height;
  const gap = 16;
  const boxes = nodes.map((n) => ({ x: n.position.x, y: n.position.y, w: Math.max(n.measured?.width ?? 0, W), h: Math.max(n.measured?.height ?? 0, H) }));
  const free = (c: { x: number; y: number }) => {
    const x = c.x - 80;
    const y = c.y - 30;
    if (x < lo.x || y < lo.y || x + W > hi.x || y + H > hi.y) return false;
    return boxes.every((b) => x + W + gap <= b.x || b.x + b.w + gap <= x || y + H + gap <= b.y || b.y + b.h + gap <= y);
  };
  const dx = W + gap;
  const dy = H + gap;
  for (let ring = 0; ring <= 8; ring++) {
    let best: { x: number; y: number } | null = null;
    let bestD = Infinity;
    for (let i = -ring; i <= ring; i++)
      for (let j = -ring; j <= ring; j++) {
        if (Math.max(Math.abs(i), Math.abs(j)) !== ring) continue;
        const c = { x: want.x + i * dx, y: want.y + j * dy };
        const d = (i * dx) ** 2 + (j * dy) ** 2;
        if (d < bestD && free(c)) {
          best = c;
          bestD = d;
        }
      }
    if (best) return best;
  }
  return want;
}
