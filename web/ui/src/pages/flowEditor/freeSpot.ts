import { NODE_MAX, type CanvasNode } from "../../graph";

// freeSpot is the centre nearest want, in flow coordinates, where a new
// node overlaps none of nodes: looked for in rings of places around want,
// first inside the visible pane (lo to hi), then, the pane full, beyond it
// (inPane false: the editor brings it into view). Every node, the new one
// too, is taken at the largest a node can grow to (NODE_MAX: its words are
// clamped), not at its size now: a label typed later must not make it
// cover its neighbour.
export function freeSpot(
  want: { x: number; y: number },
  nodes: CanvasNode[],
  lo: { x: number; y: number },
  hi: { x: number; y: number },
): { x: number; y: number; inPane: boolean } {
  const W = NODE_MAX.width;
  const H = NODE_MAX.height;
  const gap = 16;
  const boxes = nodes.map((n) => ({ x: n.position.x, y: n.position.y, w: Math.max(n.measured?.width ?? 0, W), h: Math.max(n.measured?.height ?? 0, H) }));
  const inPane = (x: number, y: number) => x >= lo.x && y >= lo.y && x + W <= hi.x && y + H <= hi.y;
  const free = (c: { x: number; y: number }, pane: boolean) => {
    const x = c.x - 80;
    const y = c.y - 30;
    if (pane && !inPane(x, y)) return false;
    return boxes.every((b) => x + W + gap <= b.x || b.x + b.w + gap <= x || y + H + gap <= b.y || b.y + b.h + gap <= y);
  };
  const dx = W + gap;
  const dy = H + gap;
  // Beyond the pane, as far as the nodes reach and one place more.
  const far = Math.ceil(Math.sqrt(nodes.length)) + 2;
  for (const [pane, rings] of [
    [true, 8],
    [false, far],
  ] as const) {
    for (let ring = 0; ring <= rings; ring++) {
      let best: { x: number; y: number } | null = null;
      let bestD = Infinity;
      for (let i = -ring; i <= ring; i++)
        for (let j = -ring; j <= ring; j++) {
          if (Math.max(Math.abs(i), Math.abs(j)) !== ring) continue;
          const c = { x: want.x + i * dx, y: want.y + j * dy };
          const d = (i * dx) ** 2 + (j * dy) ** 2;
          if (d < bestD && free(c, pane)) {
            best = c;
            bestD = d;
          }
        }
      if (best) return { ...best, inPane: inPane(best.x - 80, best.y - 30) };
    }
  }
  return { ...want, inPane: inPane(want.x - 80, want.y - 30) };
}
